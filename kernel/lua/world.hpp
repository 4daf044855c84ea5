// Internal: the World object behind the Lua module (a Spec while building, then Model + Data).
#pragma once

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "noether/lua.hpp"
#include "noether/noether.hpp"

namespace noether {
namespace lua {

// An error raised inside the binding; converted to a Lua error at the C-function boundary.
struct LuaFail : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One CSV column group (or a Lua callback) sampled every `every` steps.
struct Channel {
    enum class Kind {
        time, energy, kinetic, potential, momentum, angular_momentum, violation, newton, residual, substeps,
        position, orientation, velocity, angular_velocity, coord, rate
    };
    Kind kind = Kind::time;
    std::string text;     // as written ("link1.position")
    std::string element;  // body or joint name, for per-element channels
    int index = -1;       // resolved at compile
};

struct Output {
    std::string file, tmp;
    int every = 1;
    std::vector<Channel> channels;
    int callback = -2;  // LUA_NOREF
    FILE* fp = nullptr;
    Origin origin;
};

struct World {
    Spec spec;
    Origin origin;
    double duration = -1;  // default duration when the CLI runs a returned world
    std::shared_ptr<const Model> model;
    std::unique_ptr<Data> data;
    int on_step = -2;  // LUA_NOREF
    std::vector<Output> outputs;
    // Run statistics.
    double e0 = 0, e_final = 0, e_max_dev = 0, v_max = 0, wall = 0;
    std::string worst_joint;
    bool failed = false;
    std::string failure;
    bool finished = false;
    std::vector<std::string> import_warnings;  // from w:urdf, shown in the summary
};

// Per-state context (options of the host, every world made).
struct Context {
    ScriptOptions options;
    std::vector<World*> worlds;
    std::vector<std::string> used_params;
};

Context* context(lua_State* L);
RunSummary summarize(const World& w);
// Rename every output of w to its final name (or leave it as .part, saying so, if the run failed).
void finish_outputs(World& w, std::vector<std::string>* notes);
// The object returned by noether.world{} (nullptr if the value at idx is not a world).
World* to_world(lua_State* L, int idx);
// Step a compiled world for `steps` steps (runs callbacks and outputs). Returns false on a failed step.
bool run_steps(lua_State* L, int world_idx, World& w, long long steps, bool progress);
// Compile w (errors are raised as Lua errors). No-op when already compiled.
void ensure_compiled(lua_State* L, World& w);

}  // namespace lua
}  // namespace noether
