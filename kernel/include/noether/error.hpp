// noether/error.hpp — where elements come from, and the errors that name them.
#pragma once

#include "noether/export.h"

#include <stdexcept>
#include <functional>
#include <string>
#include <vector>

namespace noether {

// Where an element of a Spec was written: a script file and line, an importer element, or
// the C++ call site that a host chose to record. Empty when unknown.
struct NOETHER_API Origin {
    std::string file;     // "fourbar.lua", "atlas.urdf"
    int line = 0;         // 1-based; 0 = unknown
    std::string element;  // importer element (e.g. "<joint name='back_bkz'>"), optional

    bool empty() const { return file.empty() && element.empty(); }
    // "file:line" or "file" or "" (no trailing colon).
    std::string str() const;
};

enum class Severity { warning, error };

// One problem found while compiling a Spec or loading plugins.
struct NOETHER_API Diagnostic {
    Severity severity = Severity::error;
    Origin origin;
    std::string message;  // names the element, the rule and the value
    // "file:line: message" (or just the message when the origin is unknown)
    std::string str() const;
};

// Base of every exception the library throws. The library never exits the process.
class NOETHER_API Error : public std::runtime_error {
public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// compile() found invalid input. what() lists every error, one per line.
class NOETHER_API ModelError : public Error {
public:
    explicit ModelError(std::vector<Diagnostic> diags);
    const std::vector<Diagnostic>& diagnostics() const { return diags_; }

private:
    std::vector<Diagnostic> diags_;
};

// A plugin could not be loaded or registered.
class NOETHER_API PluginError : public Error {
public:
    enum class Kind { cannot_open, not_a_library, no_entry_point, abi_mismatch, bad_descriptor, duplicate_name };
    PluginError(Kind kind, std::string path, const std::string& what)
        : Error(what), kind_(kind), path_(std::move(path)) {}
    Kind kind() const { return kind_; }
    const std::string& path() const { return path_; }

private:
    Kind kind_;
    std::string path_;
};

// Wrong use of the API (a Data from another Model, a call in the wrong phase, bad state buffer).
class NOETHER_API UsageError : public Error {
public:
    explicit UsageError(const std::string& what) : Error(what) {}
};

// The kernel's messages suggest options as "option 'NAME' = VALUE" or "(option 'NAME')" (a
// statement about an option, "option 'x' must be ...", is left alone). Each front-end says them
// in its own syntax: reword_options replaces every suggestion by word(NAME, VALUE), VALUE "..."
// when the message gives none (Lua: noether.world{ ... }, the CLI: --option NAME=VALUE, Python:
// options={...}).
NOETHER_API std::string reword_options(const std::string& message,
                                       const std::function<std::string(const std::string& name, const std::string& value)>& word);

// The importers suggest their own settings as "import setting 'NAME' = VALUE" (e.g. 'base' =
// fixed, 'limits' = false, 'positions' = JOINT): reword_import_settings replaces each by
// word(NAME, VALUE) (Lua: w:urdf{ base = "fixed" }, the CLI: --base fixed, Python: fixed_base=True).
NOETHER_API std::string reword_import_settings(
    const std::string& message, const std::function<std::string(const std::string& name, const std::string& value)>& word);

}  // namespace noether
