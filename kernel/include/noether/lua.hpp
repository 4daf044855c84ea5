// noether/lua.hpp — run Lua scene scripts from a host (the `noether` command is one such host).
//
// The scene language is the Lua module `noether` (docs/lua.md). A host either runs a whole
// script with run_script(), or opens the module in its own lua_State with open().
#pragma once

#include <map>
#include <string>
#include <vector>

struct lua_State;

namespace noether {
namespace lua {

struct ScriptOptions {
    std::map<std::string, std::string> params;  // --set name=value
    bool check_only = false;                    // build and compile, never step
    bool progress = false;                      // progress line on stderr for long runs
    std::vector<std::string> lua_path;          // extra directories for require()
    bool print_reports = false;                 // print import reports (w:urdf) to stdout
};

// What one world did (the run summary of `noether run`).
struct RunSummary {
    int bodies = 0, joints = 0, loop_joints = 0, dof = 0;
    std::string integrator, solver;
    double dt = 0, sim_time = 0, wall_s = 0, us_per_step = 0;
    long long steps = 0;
    double energy_initial = 0, energy_final = 0, energy_max_abs_dev = 0;
    bool energy_rel_defined = false;
    double energy_max_rel_dev = 0;
    double max_violation = 0;
    std::string worst_joint;
    double newton_mean = 0;
    int newton_max = 0;
    long long subdivided_steps = 0, failed_steps = 0;
    long long internal_steps = 0, rejected_steps = 0;  // adaptive integrators
    bool failed = false;
    std::vector<std::string> warnings;
    std::string graph;  // the block graph, for `noether check`
    std::string to_json() const;
    std::string to_text() const;
};

struct ScriptResult {
    int exit_code = 0;   // 0 ok, 1 simulation failed, 2 bad input
    std::string error;   // message for exit codes 1 and 2
    std::vector<RunSummary> worlds;  // every world the script compiled, in order
};

ScriptResult run_script(const std::string& path, const ScriptOptions& options);

// The summaries as JSON: one object for one world, else an array.
std::string summaries_json(const std::vector<RunSummary>& worlds);
// The same for a script held in memory; `chunk_name` is what error messages call it and
// `dir` where relative paths and require() look.
ScriptResult run_source(const std::string& code, const std::string& chunk_name, const std::string& dir,
                        const ScriptOptions& options);

// Make require("noether") available in a host's own state. `params` become noether.params'
// overrides; `script_dir` is where relative output paths and require() look.
void open(lua_State* L, const ScriptOptions& options);

}  // namespace lua
}  // namespace noether
