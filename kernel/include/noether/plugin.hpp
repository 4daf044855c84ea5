// noether/plugin.hpp — plugin descriptors, the entry symbol and the registry.
//
// A plugin library exports one of two C symbols:
//
//     extern "C" const noether_plugin_descriptor* noether_plugin(void);              // one plugin
//     extern "C" const noether_plugin_descriptor* noether_plugin_list(int* count);   // several
//
// returning descriptors (ABI version, descriptor size, kind, name, one-line description, and a
// factory function). Several plugins of one library are typically configured instances of one
// class (vi-maximal and vi-midpoint). The registry is the only process-wide table: it holds
// plugin *types* (joint types, integrators, solvers), never per-run instances. Libraries are
// never unloaded.
//
// Plugins are C++ objects behind a C entry point: build them with the same C++ ABI as the
// kernel (g++/libstdc++ of the same major version). The contract is the interface classes
// and the layouts of the structs they read and write (Model, Data, JointInfo, BlockGraph,
// Options, RunStats, StepReport, SolverWorkspace, …). NOETHER_PLUGIN_ABI changes whenever any
// of these changes — tests/kernel/test_abi.cpp records the layouts and fails until it is
// bumped — and the loader refuses a plugin built for another ABI.
#pragma once

#include "noether/export.h"

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "noether/error.hpp"

#define NOETHER_PLUGIN_ABI 7u

extern "C" {

enum noether_plugin_kind { NOETHER_PLUGIN_JOINT = 1, NOETHER_PLUGIN_INTEGRATOR = 2, NOETHER_PLUGIN_SOLVER = 3 };

struct noether_plugin_descriptor {
    std::uint32_t abi_version;  // NOETHER_PLUGIN_ABI at build time
    std::uint32_t size;         // sizeof(noether_plugin_descriptor) at build time
    int kind;                   // noether_plugin_kind
    const char* name;           // e.g. "revolute", "vi-maximal", "sparse-ldu"
    const char* description;    // one line
    // Returns the plugin object: noether::JointType*, noether::Integrator* or noether::Solver*
    // (by kind). Called once; the object lives as long as the process.
    void* (*create)(void);
};

typedef const noether_plugin_descriptor* (*noether_plugin_entry)(void);
typedef const noether_plugin_descriptor* (*noether_plugin_list_entry)(int* count);
}

// Define the entry point of a plugin library in one line:
//   NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "helical", "screw joint", HelicalType)
// CLASS must be default-constructible and derive from the interface of KIND.
#define NOETHER_PLUGIN(KIND, NAME, DESCRIPTION, CLASS)                                                  \
    extern "C" __attribute__((visibility("default"))) const noether_plugin_descriptor* noether_plugin(void) { \
        static const noether_plugin_descriptor d = {                                                    \
            NOETHER_PLUGIN_ABI, sizeof(noether_plugin_descriptor), KIND, NAME, DESCRIPTION,             \
            []() -> void* { static CLASS instance; return &instance; }};                                \
        return &d;                                                                                      \
    }

// One entry of NOETHER_PLUGIN_LIST: an instance of CLASS constructed with the remaining
// arguments, e.g. NOETHER_PLUGIN_ENTRY(NOETHER_PLUGIN_INTEGRATOR, "rk4", "…", Explicit, Method::rk4)
#define NOETHER_PLUGIN_ENTRY(KIND, NAME, DESCRIPTION, CLASS, ...)                                     \
    noether_plugin_descriptor {                                                                       \
        NOETHER_PLUGIN_ABI, sizeof(noether_plugin_descriptor), KIND, NAME, DESCRIPTION,               \
            []() -> void* { static CLASS instance{__VA_ARGS__}; return &instance; }                    \
    }

// Define the entry point of a library exporting several plugins:
//   NOETHER_PLUGIN_LIST(NOETHER_PLUGIN_ENTRY(...), NOETHER_PLUGIN_ENTRY(...))
#define NOETHER_PLUGIN_LIST(...)                                                                       \
    extern "C" __attribute__((visibility("default"))) const noether_plugin_descriptor* noether_plugin_list( \
        int* count) {                                                                                  \
        static const noether_plugin_descriptor list[] = {__VA_ARGS__};                                 \
        *count = static_cast<int>(sizeof list / sizeof list[0]);                                       \
        return list;                                                                                   \
    }

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
