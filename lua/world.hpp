// Internal: the World object behind the Lua module (a Spec while building, then a Run), and the
// pieces the binding's files share (binding split by concern: args.cpp argument checking,
// scene.cpp scene constructors and outputs, urdf.cpp URDF import, state.cpp running and state
// access, module.cpp the module table, host.cpp running whole scripts).
#pragma once

#include <lua.hpp>

#include <algorithm>
#include <climits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "noether/ensemble.hpp"
#include "noether/lua.hpp"
#include "noether/noether.hpp"
#include "noether/run.hpp"

namespace noether {
namespace lua {

// The longest string a field of a noether call takes (names, files, types): a 64 MiB body name
// spent seconds in the C++ copies and indexes of every later call.
constexpr std::size_t kMaxStringField = 4096;
// The sandbox's budget for what lives on the C++ heap, outside its Lua memory limit, summed over
// the whole script: ensemble members, bodies and contact points (a box is 8).
constexpr long long kSandboxMembers = 4096;
constexpr long long kSandboxBodies = 100000;
constexpr long long kSandboxContactPoints = 100000;

// An error raised inside the binding; converted to a Lua error at the C-function boundary.
struct LuaFail : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Name → index of the first element of that name, so that the builder's duplicate and
// known-body checks cost O(1) instead of a scan of every earlier element (O(n²) for a chain).
// Elements are only appended to a Spec (w:body, w:joint, w:urdf); find() first takes in whatever
// was appended since it last looked, and starts over if the list shrank or a hit is stale.
struct NameIndex {
    std::unordered_map<std::string, int> first;
    std::size_t seen = 0;
    template <class Items>
    int find(const Items& items, const std::string& name) {
        for (int pass = 0; pass < 2; ++pass) {
            if (items.size() < seen || pass == 1) first.clear(), seen = 0;
            for (; seen < items.size(); ++seen) first.emplace(items[seen].name, static_cast<int>(seen));
            const auto it = first.find(name);
            if (it == first.end()) return -1;
            if (items[it->second].name == name) return it->second;
        }
        return -1;
    }
};

struct World {
    Spec spec;  // spec.origin: where noether.world{} was called
    NameIndex body_index, joint_index;  // over spec.bodies and spec.joints
    double duration = -1;  // default duration when the host runs a returned world
    long long max_steps = Run::kDefaultMaxSteps;  // guard on the steps of one run call
    std::vector<OutputSpec> outputs;   // declared outputs (added to the run at compile)
    std::vector<int> output_callback;  // per output: Lua registry reference or LUA_NOREF
    int on_step = LUA_NOREF;
    int self_ref = LUA_NOREF;  // a loaded scene's world (Context::live): registry reference to its userdata
    std::vector<std::string> import_warnings;  // from w:urdf, shown in the summary
    std::shared_ptr<const Model> model;        // set by the first compile
    std::unique_ptr<Run> run;
    Data* data = nullptr;  // run->data() once compiled
    std::unique_ptr<Kinematics> kinematics;  // the queries (queries.cpp), made at the first one
};

// The object behind w:ensemble{}: K members of one world's Model stepped in parallel.
struct EnsembleBox {
    std::unique_ptr<Ensemble> ensemble;
    long long max_steps = Run::kDefaultMaxSteps;  // from the world
    int controller = LUA_NOREF;                   // e:controller(function(m, i)): registry reference
    bool stepping = false;                        // inside e:steps (its controller may not re-enter)
    bool collected = false;                       // its __gc ran (a script may call it by hand)
    std::vector<std::vector<OutputSpec>> outputs; // per member (added again when m:vary renews its run; no two files alike)
};

// Per-state context (options of the host, every world made).
struct Context {
    ScriptOptions options;
    double deadline = 0;  // sandbox or time_limit: steady-clock seconds after which the script is stopped
    double limit_seconds = 0;  // the limit that set it (for messages)
    std::vector<std::unique_ptr<World>> worlds;  // every world made, owned here
    bool recorded = false;  // ScriptOptions::record given to a world already
    std::vector<std::unique_ptr<EnsembleBox>> ensembles;  // every ensemble made, owned here
    std::vector<std::string> used_params;
    bool live = false;  // loaded for a host that steps the worlds (load_scene): worlds keep a self reference
    long long members_made = 0;  // ensemble members made so far (the sandbox's budget)
    long long bodies_made = 0;   // bodies added to the script's worlds so far (the same)
    long long contact_points_made = 0;  // contact points declared so far (the same)
    SweepPlan sweep;                // noether.sweep{}
    std::vector<Recorded> records;  // noether.record()
};

extern const char* const kWorldMeta;
extern const char* const kEnsembleMeta;
extern const char* const kMemberMeta;

Context* context(lua_State* L);
Context* try_context(lua_State* L);  // nullptr if the module was not opened
// The object returned by noether.world{} (nullptr if the value at idx is not a world).
World* to_world(lua_State* L, int idx);
// Compile w (errors are raised as LuaFail). No-op when already compiled.
void ensure_compiled(lua_State* L, World& w);
// Step a compiled world for `steps` steps (runs callbacks and outputs). False on a failed step.
bool run_steps(lua_State* L, int world_idx, World& w, long long steps, bool progress);
// The steps of {duration = seconds} or {steps = n} at idx (for run{}).
long long steps_arg(lua_State* L, const Model& m, int idx, const char* fn);
// A run summary as the table w:summary() returns.
void push_summary(lua_State* L, const RunSummary& s);
// An output table {file, every, channels[, callback]} at idx. A file a sweep member may not
// write is left out (dropped names it); callback gets the registry reference of the callback
// (LUA_NOREF if none; refused if callback is null).
OutputSpec read_output(lua_State* L, int idx, int* callback, std::string* dropped);

// ---- sandbox (sandbox.cpp) ------------------------------------------------------------------

// A fresh Lua state for the options: the full standard libraries, or in a sandbox the safe ones
// with a memory-limited allocator and a time-limit hook. Null if no state could be made.
lua_State* new_state(const ScriptOptions& options);
// lua_close, then free what new_state() made for the state.
void close_state(lua_State* L);
// Sandbox: the path a script names for writing (what) must lie below the sandbox directory;
// for reading also below the script's directory. Returns the path to use; raises LuaFail if not.
std::string sandbox_path(lua_State* L, const std::string& path, bool write, const char* what);
// False in the sandbox: files named by the script are written without following links.
bool sandbox_follows_links(lua_State* L);
// Replace find, match, gmatch and gsub in the string table at idx by versions that check the
// script's deadline while they match (pattern.cpp): for states with a time limit.
void bound_patterns(lua_State* L, int string_table);
// Sandbox: the wall-time limit starts now (no-op outside the sandbox).
void sandbox_start_clock(Context& ctx);
// The script's wall-time limit (the sandbox's or --time-limit) has passed; the message that says so.
bool past_deadline(const Context& ctx);
std::string time_limit_message(const Context& ctx);
// Sandbox: raise LuaFail when the wall-time limit has passed (called between steps).
void sandbox_check_time(lua_State* L);

// The kernel names options in its suggestions as "option 'NAME' = VALUE" or "(option 'NAME')";
// a scene's author reads them in Lua: noether.world{ NAME = ... } for the world's own fields,
// noether.world{ options = { NAME = VALUE } } for integrator options (args.cpp).
std::string lua_wording(const std::string& kernel_message);

// ---- argument checking (args.cpp) -----------------------------------------------------------

// The string at idx (field `field` of `who`, a `what`: "field", "name") must be at most
// kMaxStringField bytes; else "<who>: field '<field>' is a string of N bytes; the most a <what> takes is 4096".
void check_length(lua_State* L, int idx, const std::string& who, const char* field, const char* what);
// Sandbox: `more` bodies may be added only within kSandboxBodies over every world of the script.
void sandbox_check_bodies(lua_State* L, long long more);
// The same for contact points (a box is 8 of them, a capsule 2): refused past the budget, else counted.
void sandbox_add_contact_points(lua_State* L, const ContactSpec* first, const ContactSpec* last);

// Raise "file:line: <message>" at the script line that called the current function.
[[noreturn]] void fail(lua_State* L, const char* fmt, const std::string& a = "", const std::string& b = "",
                       const std::string& c = "", const std::string& d = "");
// Call the function on top of the stack with `nargs` arguments; a Lua error becomes LuaFail.
void call(lua_State* L, int nargs);
Origin where(lua_State* L);
std::string type_of(lua_State* L, int idx);
std::string g_str(double v);  // a number as %g, for messages
std::string exact_str(double v);  // the shortest text that reads back as exactly v
// A sweep member's file path: "{member}" replaced by its index; "" if the member may not write it.
std::string member_path(const Context& ctx, const std::string& path);
// Directory of the script file that called the current function ("" for chunks without a file).
std::string caller_dir(lua_State* L);
bool is_vec3(lua_State* L, int idx, Vec3* out);
void check_table(lua_State* L, int idx, const char* fn);
// The string keys of the table at t, sorted (a key of another type is an error naming `who`).
std::vector<std::string> sorted_keys(lua_State* L, int t, const std::string& who);
World& check_world(lua_State* L, int idx = 1);
void require_building(lua_State* L, World& w, const char* fn);
std::string element_name(lua_State* L, int idx, const std::string& who, const char* field);
void push_vec3(lua_State* L, const Vec3& v);
void push_handle(lua_State* L, const char* kind, const std::string& name);
void push_strings(lua_State* L, const std::vector<std::string>& v);
Mat3 read_inertia(lua_State* L, int idx, const std::string& who);
Quat read_orientation(lua_State* L, int idx, const std::string& who);
Vec3 vec_arg(lua_State* L, int idx, const char* fn, const char* what);
// Raw access (no metamethods: a script's __index cannot raise an error across C++ frames).
int raw_getfield(lua_State* L, int idx, const char* key);
// Arguments: wrong types raise LuaFail (never a Lua error across C++ frames).
double arg_number(lua_State* L, int idx, const char* fn, const char* what);
double opt_number(lua_State* L, int idx, double fallback, const char* fn, const char* what);
std::string arg_string(lua_State* L, int idx, const char* fn, const char* what);
long long opt_integer(lua_State* L, int idx, long long fallback, const char* fn, const char* what);

// Field checkers: the table is at `t`; `who` is "joint 'crank'" etc.
struct Fields {
    lua_State* L;
    int t;
    std::string who;

    bool has(const char* key);
    [[noreturn]] void bad(const char* key, const char* expected);
    double number(const char* key, double fallback, bool required = false);
    long long integer(const char* key, long long fallback, long long min, long long max = LLONG_MAX);
    std::string string(const char* key, const std::string& fallback, bool required = false);
    bool boolean(const char* key, bool fallback);
    std::optional<Vec3> vec3(const char* key);
    std::vector<double> numbers(const char* key);  // a number or a list of numbers
    // Every key must be one of `allowed` (or accepted by extra()).
    template <class Extra>
    void only(const std::vector<std::string>& allowed, Extra extra) {
        lua_pushnil(L);
        while (lua_next(L, t) != 0) {
            lua_pop(L, 1);
            if (lua_type(L, -1) != LUA_TSTRING) {
                const std::string k = type_of(L, -1);
                lua_pop(L, 1);
                fail(L, "%s: fields are named, got a %s key (write name = value)", who, k);
            }
            const std::string k = lua_tostring(L, -1);
            if (std::find(allowed.begin(), allowed.end(), k) == allowed.end() && !extra(k)) {
                std::string list;
                for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
                lua_pop(L, 1);
                fail(L, "%s: unknown field '%s' (fields: %s)", who, k, list);
            }
        }
    }
    void only(const std::vector<std::string>& allowed);
};

// ---- C functions and their wrappers ----------------------------------------------------------

// Errors inside the binding are C++ exceptions; guard<> turns them into Lua errors once every
// C++ object of the call is destroyed (Lua's own errors longjmp, which would skip destructors).
template <lua_CFunction F>
int guard(lua_State* L) {
    try {
        // The sandbox's time limit, checked in every noether call too: the Lua count hook does
        // not fire while a few Lua instructions call long C++ work (500 ensembles ran 16 s
        // past a 5 s limit).
        if (Context* c = try_context(L); c && c->deadline > 0) sandbox_check_time(L);
        return F(L);
    } catch (const std::bad_alloc&) {
        lua_pushstring(L, "out of memory (std::bad_alloc): the scene asked for more than this machine has");
    } catch (const std::exception& e) {
        lua_pushstring(L, lua_wording(e.what()).c_str());
    }
    return lua_error(L);
}

using WorldFunction = int (*)(lua_State*, World&);
template <WorldFunction F>
int world_body(lua_State* L) {
    return F(L, check_world(L));
}
template <WorldFunction F>
int compiled_body(lua_State* L) {
    World& w = check_world(L);
    ensure_compiled(L, w);
    return F(L, w);
}
// A method of a world (argument 1 checked).
template <WorldFunction F>
int method(lua_State* L) {
    return guard<world_body<F>>(L);
}
// A method of a compiled world: checked, then compiled once (the first call that needs it).
template <WorldFunction F>
int compiled(lua_State* L) {
    return guard<compiled_body<F>>(L);
}

// Methods that read or write one run's state (a world's, or an ensemble member's): the same
// functions serve both objects, argument 1 being the object.
using StateFunction = int (*)(lua_State*, const Model&, Data&);
template <StateFunction F>
int world_state(lua_State* L, World& w) {
    return F(L, *w.model, *w.data);
}

// module.cpp: a protected metatable `name` for a userdata type (getmetatable() gives the name)
// with __index, an optional __gc and the methods in its "methods" table; and the __index
// lookup of method `key_idx` in it (nil for other keys).
void new_metatable(lua_State* L, const char* name, lua_CFunction index, lua_CFunction gc, const luaL_Reg* methods);
int push_method(lua_State* L, const char* meta, int key_idx);

// queries.cpp: kinematics and dynamics at the current state (docs/queries.md)
int l_jacobian(lua_State* L, World& w);
int l_mass_matrix(lua_State* L, World& w);
int l_inverse_dynamics(lua_State* L, World& w);
int l_bias_forces(lua_State* L, World& w);
int l_gravity_forces(lua_State* L, World& w);
int l_forward_dynamics(lua_State* L, World& w);
int l_center_of_mass(lua_State* L, World& w);
int l_com_jacobian(lua_State* L, World& w);
int l_momentum(lua_State* L, World& w);

// scene.cpp
int l_world(lua_State* L);
int l_world_index(lua_State* L);
int l_world_gc(lua_State* L);
int l_body(lua_State* L, World& w);
int l_joint(lua_State* L, World& w);
int l_force(lua_State* L, World& w);
int l_contact(lua_State* L, World& w);
int l_coupling(lua_State* L, World& w);
int l_servo(lua_State* L, World& w);
int l_on_step(lua_State* L, World& w);
int l_output(lua_State* L, World& w);
int l_world_record(lua_State* L, World& w);
// urdf.cpp
int l_urdf(lua_State* L, World& w);
// The importers' shared steps (urdf.cpp): assembly, the file check, adopting the imported spec,
// frame and joint tables of the result.
AssemblyReport assemble_world(lua_State* L, World& w, const char* fn);
void push_assembly(lua_State* L, const AssemblyReport& a);
std::string import_file(lua_State* L, const std::string& file, const std::string& who, const char* what);
void adopt_import(lua_State* L, World& w, Spec& trial, const std::string& who);
void push_frame(lua_State* L, const std::string& body, const Pose& offset);
void push_joint_handles(lua_State* L, const std::vector<std::string>& names, const std::string& prefix);
// The frames table of an import report (name → {body, offset}), keyed without the prefix.
template <class Frames>
void push_frames(lua_State* L, const Frames& frames, const std::string& prefix) {
    lua_newtable(L);
    for (const auto& kv : frames) {
        push_frame(L, kv.second.body, kv.second.offset);
        lua_setfield(L, -2, kv.first.substr(prefix.size()).c_str());
    }
}
// mjcf.cpp
int l_mjcf(lua_State* L, World& w);
int l_assemble(lua_State* L, World& w);
// state.cpp
int l_compile(lua_State* L, World& w);
int l_run(lua_State* L, World& w);
int l_step(lua_State* L, World& w);
int l_summary(lua_State* L, World& w);
int l_finish(lua_State* L, World& w);
int l_time(lua_State* L, World& w);
int l_state_time(lua_State* L, const Model& m, Data& d);
int l_position(lua_State* L, const Model& m, Data& d);
int l_orientation(lua_State* L, const Model& m, Data& d);
int l_velocity(lua_State* L, const Model& m, Data& d);
int l_angular_velocity(lua_State* L, const Model& m, Data& d);
int l_coord(lua_State* L, const Model& m, Data& d);
int l_rate(lua_State* L, const Model& m, Data& d);
int l_set_actuation(lua_State* L, const Model& m, Data& d);
int l_set_target(lua_State* L, const Model& m, Data& d);
int l_set_servo(lua_State* L, const Model& m, Data& d);
int l_set_force(lua_State* L, const Model& m, Data& d);
int l_set_torque(lua_State* L, const Model& m, Data& d);
int l_limit_force(lua_State* L, const Model& m, Data& d);
int l_contacts(lua_State* L, const Model& m, Data& d);
int l_coupling_force(lua_State* L, const Model& m, Data& d);
int l_monitors(lua_State* L, const Model& m, Data& d);
int l_dofs(lua_State* L, const Model& m, Data& d);
int l_joint_state(lua_State* L, const Model& m, Data& d);
int l_set_joint_state(lua_State* L, const Model& m, Data& d);
int l_linearize(lua_State* L, const Model& m, Data& d);
int l_save(lua_State* L, const Model& m, Data& d);
int l_restore(lua_State* L, const Model& m, Data& d);
int l_save_file(lua_State* L, const Model& m, Data& d);
int l_restore_file(lua_State* L, const Model& m, Data& d);
// ensemble.cpp
int l_ensemble(lua_State* L, World& w);
void open_ensemble_metatables(lua_State* L);
// Close every ensemble member's outputs (aborted: the script stopped with an error, so they
// stay partial). Returns the notes; *outputs_ok is false if any could not be written completely.
std::vector<std::string> finish_ensembles(Context& ctx, bool aborted, bool* outputs_ok);

}  // namespace lua
}  // namespace noether
