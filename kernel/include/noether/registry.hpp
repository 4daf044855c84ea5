// noether/registry.hpp — the loaded plugins (joint types, integrators, solvers): what hosts list
// and look up. Plugin libraries define their entry point with noether/sdk/plugin.hpp.
#pragma once

#include "noether/export.h"

#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "noether/error.hpp"
#include "noether/sdk/plugin.hpp"

namespace noether {

class JointType;
class Integrator;
class Solver;

enum class PluginKind { joint = NOETHER_PLUGIN_JOINT, integrator = NOETHER_PLUGIN_INTEGRATOR, solver = NOETHER_PLUGIN_SOLVER };
NOETHER_API const char* kind_name(PluginKind k);  // "joint", "integrator", "solver"

struct NOETHER_API PluginInfo {
    PluginKind kind;
    std::string name;
    std::string description;
    std::string path;  // library path ("" for plugins registered in-process)
    void* object;      // JointType*, Integrator* or Solver*
};

class NOETHER_API Registry {
public:
    // The process-wide registry. The first call loads the built-in plugin directory and the
    // directories of NOETHER_PLUGIN_PATH (':'-separated); problems there are kept in errors().
    static Registry& global();

    // Open one library and register its plugins (returns the first). Throws PluginError (cannot
    // open, not a library, no entry point, ABI mismatch, bad descriptor, duplicate name, an
    // exception thrown by the plugin's entry point or factory). When one descriptor of a list
    // is refused, the others stay registered.
    const PluginInfo& load_file(const std::string& path);
    // Load every shared library (*.so) in a directory, in name order; other files are
    // skipped. Returns the errors instead of throwing (one bad plugin does not stop the rest).
    // Loading a directory twice is a no-op.
    std::vector<PluginError> load_directory(const std::string& dir);
    // Register a descriptor directly (hosts that link a plugin statically; tests).
    const PluginInfo& add(const noether_plugin_descriptor* d, const std::string& path = "");

    const PluginInfo* find(PluginKind kind, const std::string& name) const;
    const JointType* joint(const std::string& name) const;
    const Integrator* integrator(const std::string& name) const;
    const Solver* solver(const std::string& name) const;
    // Names of one kind, sorted (for "known names are: …" messages).
    std::vector<std::string> names(PluginKind kind) const;
    // Names of the integrators for which pred holds, sorted and joined by ", " ("" if none):
    // messages that point at the integrators able to do something name what is loaded, not a
    // plugin the kernel knows of.
    std::string integrators_where(const std::function<bool(const Integrator&)>& pred) const;
    // Everything loaded, sorted by kind then name.
    std::vector<PluginInfo> list() const;
    // Errors met while loading the built-in and NOETHER_PLUGIN_PATH directories.
    const std::vector<PluginError>& errors() const { return errors_; }
    // The built-in plugin directory (<dir of libnoether>/noether/plugins).
    static std::string builtin_dir();

private:
    Registry() = default;
    const PluginInfo& add_locked(const noether_plugin_descriptor* d, const std::string& path);
    mutable std::recursive_mutex mu_;
    std::deque<PluginInfo> plugins_;  // deque: references stay valid
    std::vector<std::string> loaded_dirs_;
    std::vector<PluginError> errors_;
};

}  // namespace noether
