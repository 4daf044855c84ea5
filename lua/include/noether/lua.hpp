// noether/lua.hpp — run Lua scene scripts from a host (library libnoether_lua; the `noether`
// command is one such host).
//
// The scene language is the Lua module `noether` (docs/lua.md). A host either runs a whole
// script with run_script(), or opens the module in its own lua_State with open(). A stock
// lua5.4 loads the same module with require "noether" (noether.so, see docs/lua.md).
#pragma once

#include "noether/export.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "noether/error.hpp"
#include "noether/run.hpp"

struct lua_State;

namespace noether {
namespace lua {

struct NOETHER_API ScriptOptions {
    std::map<std::string, std::string> params;  // --set name=value
    // --option name=value: integrator options for every world the script makes, over the script's
    // own `options` table (a number when the value parses as one, else one word).
    std::map<std::string, std::string> integrator_options;
    bool check_only = false;                    // build and compile, never step (hosts that step: load_scene)
    bool progress = false;                      // progress line on stderr for long runs
    // --record FILE: a recording for the viewer (docs/viewer.md) of the first world the script
    // compiles, at record_fps frames per simulated second.
    std::string record;
    double record_fps = 60;
    std::vector<std::string> lua_path;          // extra directories for require()
    bool print_reports = false;                 // print import reports (w:urdf) to stdout
    // Sandbox for untrusted scenes (docs/lua.md, "Sandbox"): only safe standard libraries, files
    // written only below sandbox_dir (read: also below the script's directory), no plugin
    // directories from the script, a memory limit on the Lua heap and a wall-time limit.
    bool sandbox = false;
    std::string sandbox_dir = ".";
    std::size_t sandbox_memory = 256u << 20;  // bytes of Lua heap
    double sandbox_seconds = 60;               // wall time of the whole script, steps included
    // > 0: a wall-time limit on the whole script outside the sandbox too (noether sweep
    // --member-time-limit: one member that loops forever must not hang the sweep). In the
    // sandbox the smaller of the two applies.
    double time_limit = 0;
    // Sweep member (noether sweep, docs/ensembles.md, "Sweeps"): its index (−1: not a member). A member's
    // output files must name it with "{member}" in the path (replaced by the index); files
    // without it are not written (a note says so) and save_file refuses them.
    int member = -1;
    // Worlds compile through this cache when given: members of a sweep that rebuild the same
    // structure with other numbers share its compiled Model (noether::ModelCache).
    std::shared_ptr<ModelCache> model_cache;
};

// A parameter sweep declared by a scene (noether.sweep{}) or given on the command line.
struct NOETHER_API SweepAxis {
    std::string name;
    std::vector<std::string> values;  // the grid values, as --set would give them
    bool range = false;               // given as lo:hi:n (random samples draw from [lo, hi])
    double lo = 0, hi = 0;
};
struct NOETHER_API SweepPlan {
    bool declared = false;
    std::vector<SweepAxis> grid;                                       // cartesian product, first axis slowest
    std::vector<std::vector<std::pair<std::string, std::string>>> list;  // explicit members
    long long samples = 0;                                             // > 0: random draws over the grid's axes
    std::uint64_t seed = 0;
};

// A value a script recorded with noether.record (a sweep writes it as a column).
struct NOETHER_API Recorded {
    std::string name;
    std::string text;     // the value (numbers as the shortest text that reads back exactly)
    bool number = false;
};

// What one world did: the kernel's run summary (noether/run.hpp).
using noether::RunSummary;
using noether::summaries_json;

struct NOETHER_API ScriptResult {
    int exit_code = 0;   // 0 ok, 1 simulation failed, 2 bad input
    std::string error;   // message for exit codes 1 and 2
    std::vector<RunSummary> worlds;  // every world the script compiled, in order
    int uncompiled = 0;              // worlds made but never compiled or run
    SweepPlan sweep;                 // what noether.sweep{} declared
    std::vector<Recorded> records;   // what noether.record() recorded, in order
};

NOETHER_API ScriptResult run_script(const std::string& path, const ScriptOptions& options);

// A Lua callback (w:on_step, an output callback) of a loaded scene raised an error while the host
// stepped the world; what() carries the script's file:line. The step was not taken.
class NOETHER_API ScriptError : public Error {
public:
    using Error::Error;
};

// A scene script kept open for a host that steps its worlds itself (Python's noether.load, the C
// API's noether_script_load). The script runs as `noether check` runs it: its worlds are built and
// compiled with their outputs, never stepped. Its Lua state stays open, so that each world's
// w:on_step function and output callbacks run at the host's steps exactly as under `noether run`:
// pass hooks(i) to Run::steps. The worlds of one scene share its Lua state: their callbacks run one
// at a time (a lock), and in the sandbox each callback gets the script's time limit anew.
class NOETHER_API Scene : public std::enable_shared_from_this<Scene> {
public:
    struct Impl;
    explicit Scene(std::unique_ptr<Impl> impl);
    ~Scene();  // closes the Lua state: a run not finished by then is finished without notes
    Scene(const Scene&) = delete;
    Scene& operator=(const Scene&) = delete;

    int worlds() const;  // the compiled worlds, in the order the script made them
    // World i's run, kept alive with the scene by the returned pointer.
    std::shared_ptr<Run> run(int i);
    // The hooks that run world i's Lua callbacks (nullptr when it has none). Valid while the scene lives.
    RunHooks* hooks(int i);
    double duration(int i) const;  // noether.world{ duration } (−1: none)

private:
    std::unique_ptr<Impl> impl_;
};

// Load a scene script for a host (options.check_only is implied and ignored).
// On an error returns nullptr with result->exit_code != 0 and result->error; `result` also gets
// the summaries of the compiled worlds before any step.
NOETHER_API std::shared_ptr<Scene> load_scene(const std::string& path, const ScriptOptions& options, ScriptResult* result);

// The same for a script held in memory; `chunk_name` is what error messages call it and
// `dir` where require() looks (relative paths a scene names are relative to the working
// directory, or in the sandbox to the sandbox directory).
NOETHER_API ScriptResult run_source(const std::string& code, const std::string& chunk_name, const std::string& dir,
                        const ScriptOptions& options);

// Make require("noether") available in a host's own state. `params` become noether.params'
// overrides.
NOETHER_API void open(lua_State* L, const ScriptOptions& options);

}  // namespace lua
}  // namespace noether
