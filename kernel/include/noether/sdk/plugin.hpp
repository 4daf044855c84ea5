// noether/sdk/plugin.hpp — plugin descriptors, the entry symbol and the registry.
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

#define NOETHER_PLUGIN_ABI 20u

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
