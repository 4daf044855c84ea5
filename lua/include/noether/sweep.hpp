// noether/sweep.hpp — parameter sweeps over a Lua scene (library libnoether_lua; the command
// `noether sweep` is one host). Each member runs the scene in its own Lua state with its values
// substituted like --set; members run in parallel on a oneTBB pool and share compiled Models
// where their structure is the same (noether::ModelCache). docs/ensembles.md, "Sweeps".
//
//   noether::lua::SweepPlan plan;
//   plan.grid.push_back(noether::lua::parse_axis("dt=0.001:0.02:8"));
//   plan.grid.push_back(noether::lua::parse_axis("integrator=vi-maximal,rk4"));
//   auto members = noether::lua::sweep_members(plan);          // 16 parameter sets
//   auto rows = noether::lua::run_sweep("scene.lua", members, {});
//   std::string csv = noether::lua::sweep_csv(rows);
#pragma once

#include "noether/export.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "noether/lua.hpp"

namespace noether {
namespace lua {

using SweepParams = std::vector<std::pair<std::string, std::string>>;

// The most members one sweep runs (grid product or samples): every member's row is kept until
// the file is written, so a sweep's memory grows with its members.
constexpr long long kMaxSweepMembers = 1000000;

// "name=lo:hi:n" (n values from lo to hi inclusive; "lo:hi" is a range for random samples
// only) or "name=v1,v2,…" (a list; one value is a list of one). Throws UsageError.
NOETHER_API SweepAxis parse_axis(const std::string& text);

// The members of a plan, in order: an explicit list as given; a grid as its cartesian product
// (the first axis varies slowest); with samples > 0, that many random draws over the grid's
// axes (a range uniformly in [lo, hi], a list uniformly among its values) — member i's draw
// depends only on the seed and i, so any split of the members draws the same values.
// Throws UsageError for an empty plan or a grid axis given as lo:hi without n.
NOETHER_API std::vector<SweepParams> sweep_members(const SweepPlan& plan);

// One cell of a member's row.
struct NOETHER_API SweepCell {
    std::string name;
    std::string text;
    char type = 's';  // 'n' number, 's' string, 'b' boolean, '0' null
};

// What one member did.
struct NOETHER_API SweepRow {
    int member = 0;
    SweepParams params;
    // The summary keys of each world (the 2nd world's as w2.<key>, …; a key that is also a
    // parameter as summary.<key>), then the recorded values.
    std::vector<SweepCell> cells;
    int exit_code = 0;             // 0 ok, 1 simulation failed, 2 the script stopped with an error
    std::string error;
    std::string warnings;          // the runs' warnings, joined with " | "
};

struct NOETHER_API SweepOptions {
    int threads = 0;        // 0: every core
    bool timing = false;    // add wall_s and us_per_step (the rows then depend on the machine's load)
    ScriptOptions script;   // common options (lua_path, sandbox, fixed --set values in params)
    // Run only these member indices (an MPI rank's share); empty: all.
    std::vector<int> only;
    // Called (from worker threads, one call at a time) after each member finishes.
    std::function<void(int done, int total)> progress;
};

// Run the members (each as run_script with its values added to options.script.params).
// Rows come back in member order. Never throws for a member's failure (it is in its row).
NOETHER_API std::vector<SweepRow> run_sweep(const std::string& script, const std::vector<SweepParams>& members,
                                            const SweepOptions& options);

// The rows as CSV (header: member, the parameters, every cell name in order of first
// appearance, exit_code, error, warnings) or as JSON lines (one object per member, same keys).
NOETHER_API std::string sweep_csv(const std::vector<SweepRow>& rows);
NOETHER_API std::string sweep_jsonl(const std::vector<SweepRow>& rows);

// Rows to bytes and back (to gather them from MPI ranks). deserialize throws UsageError on
// malformed input.
NOETHER_API std::string serialize_rows(const std::vector<SweepRow>& rows);
NOETHER_API std::vector<SweepRow> deserialize_rows(const std::string& bytes);

}  // namespace lua
}  // namespace noether
