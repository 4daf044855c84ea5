// The Lua module: ensembles (w:ensemble{}), many runs of one world's Model stepped in parallel
// on the kernel's noether::Ensemble, and their members (e:member(i)), which read and write their
// state with the same methods as a world.
//
// Lua is single-threaded, so a controller written in Lua cannot run on the worker threads. With a
// controller, e:steps(n) is n rounds of: the controller for every running member in member order
// (on the script's thread), then one step of every member in parallel. The result is what each
// member would do alone with the same controller, for any thread count.
#include <cinttypes>
#include <cstdio>

#include "world.hpp"

namespace noether {
namespace lua {

const char* const kEnsembleMeta = "noether.Ensemble";
const char* const kMemberMeta = "noether.EnsembleMember";

namespace {

constexpr long long kMaxMembers = Ensemble::kMaxMembers;
constexpr long long kMaxMembersSandbox = 1024;  // members live on the C++ heap, outside the sandbox's Lua limit
constexpr long long kSandboxChunk = 64;         // steps between wall-time checks in the sandbox

struct MemberRef {
    EnsembleBox* box;
    int index;  // 0-based
};

EnsembleBox& check_ensemble(lua_State* L, int idx = 1) {
    EnsembleBox** p = static_cast<EnsembleBox**>(luaL_testudata(L, idx, kEnsembleMeta));
    if (!p) fail(L, "expected an ensemble (call methods as e:name(...)), got %s", type_of(L, idx));
    if (!*p || (*p)->collected) fail(L, "this ensemble was already collected (its __gc ran); it cannot be used any more");
    return **p;
}

MemberRef& check_member(lua_State* L, int idx = 1) {
    MemberRef* r = static_cast<MemberRef*>(luaL_testudata(L, idx, kMemberMeta));
    if (!r) fail(L, "expected an ensemble member (call methods as m:name(...)), got %s", type_of(L, idx));
    if (r->box->collected) fail(L, "this member's ensemble was already collected (its __gc ran); it cannot be used any more");
    return *r;
}

// Member number at idx (1 … size), as a 0-based index.
int member_arg(lua_State* L, EnsembleBox& box, int idx, const char* fn) {
    if (!lua_isinteger(L, idx)) fail(L, "%s: expected a member number (1 … %s), got %s", fn, std::to_string(box.ensemble->size()), type_of(L, idx));
    const lua_Integer i = lua_tointeger(L, idx);
    if (i < 1 || i > box.ensemble->size())
        fail(L, "%s: member %s out of range (1 … %s)", fn, std::to_string(i), std::to_string(box.ensemble->size()));
    return static_cast<int>(i - 1);
}

// The view of member i (one per member, kept in the ensemble's user value so e:member(i) == e:member(i)).
void push_member(lua_State* L, int ens_idx, EnsembleBox& box, int i) {
    ens_idx = lua_absindex(L, ens_idx);
    lua_getiuservalue(L, ens_idx, 1);
    if (lua_rawgeti(L, -1, i + 1) == LUA_TNIL) {
        lua_pop(L, 1);
        MemberRef* r = static_cast<MemberRef*>(lua_newuserdatauv(L, sizeof(MemberRef), 1));
        r->box = &box;
        r->index = i;
        luaL_setmetatable(L, kMemberMeta);
        lua_pushvalue(L, ens_idx);  // the member keeps its ensemble alive
        lua_setiuservalue(L, -2, 1);
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, i + 1);
    }
    lua_remove(L, -2);
}

void refuse_while_stepping(lua_State* L, const EnsembleBox& box, const char* fn) {
    if (box.stepping) fail(L, "%s: not from the ensemble's controller (the ensemble is stepping)", fn);
}

// ---- w:ensemble{} ----------------------------------------------------------------------------

int l_ensemble_gc(lua_State* L) {
    EnsembleBox** p = static_cast<EnsembleBox**>(luaL_testudata(L, 1, kEnsembleMeta));
    if (p && *p) (*p)->collected = true;  // the Context owns it: nothing a script does can free it
    return 0;
}

// ---- ensemble methods ------------------------------------------------------------------------

using EnsembleFunction = int (*)(lua_State*, EnsembleBox&);
template <EnsembleFunction F>
int ensemble_body(lua_State* L) {
    return F(L, check_ensemble(L));
}
template <EnsembleFunction F>
int ens_method(lua_State* L) {
    return guard<ensemble_body<F>>(L);
}

int e_size(lua_State* L, EnsembleBox& box) {
    lua_pushinteger(L, box.ensemble->size());
    return 1;
}

int e_threads(lua_State* L, EnsembleBox& box) {
    if (!lua_isnoneornil(L, 2)) {
        refuse_while_stepping(L, box, "threads");
        const long long n = opt_integer(L, 2, 0, "threads", "the thread count");
        if (n < 0 || n > 1024) fail(L, "threads: the thread count must be 0 (every core) … 1024, got %s", std::to_string(n));
        box.ensemble->set_threads(static_cast<int>(n));
    }
    lua_pushinteger(L, box.ensemble->effective_threads());
    return 1;
}

int e_member(lua_State* L, EnsembleBox& box) {
    push_member(L, 1, box, member_arg(L, box, 2, "member"));
    return 1;
}

int e_controller(lua_State* L, EnsembleBox& box) {
    refuse_while_stepping(L, box, "controller");
    if (!lua_isnil(L, 2) && !lua_isfunction(L, 2))
        fail(L, "controller: expected a function(m, i) or nil, got %s", type_of(L, 2));
    if (box.controller != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, box.controller);
    box.controller = LUA_NOREF;
    if (lua_isfunction(L, 2)) {
        lua_pushvalue(L, 2);
        box.controller = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    return 0;
}

// Step every running member n times; returns the number of members still running.
int advance(lua_State* L, EnsembleBox& box, long long n, const char* fn) {
    refuse_while_stepping(L, box, fn);
    Ensemble& e = *box.ensemble;
    Context& ctx = *context(L);
    if (n > box.max_steps)
        fail(L, "%s: %s steps is more than the limit of %s (noether.world{ max_steps = ... })", fn, std::to_string(n),
             std::to_string(box.max_steps));
    if (ctx.options.check_only) return e.size() - e.failures();
    struct Stepping {
        EnsembleBox& b;
        explicit Stepping(EnsembleBox& b_) : b(b_) { b.stepping = true; }
        ~Stepping() { b.stepping = false; }
    } stepping(box);
    if (box.controller == LUA_NOREF) {
        const long long chunk = ctx.deadline > 0 ? kSandboxChunk : n;
        for (long long done = 0; done < n;) {
            const long long k = std::min(chunk, n - done);
            e.steps(k);
            done += k;
            sandbox_check_time(L);
        }
        return e.size() - e.failures();
    }
    for (long long k = 0; k < n; ++k) {
        for (int i = 0; i < e.size(); ++i) {
            if (e.failed(i)) continue;
            lua_rawgeti(L, LUA_REGISTRYINDEX, box.controller);
            push_member(L, 1, box, i);
            lua_pushinteger(L, i + 1);
            try {
                call(L, 2);
            } catch (const LuaFail& err) {
                e.run(i).abort(std::string("the controller failed: ") + err.what());  // fails this member only
            }
        }
        e.steps(1);
        sandbox_check_time(L);
    }
    return e.size() - e.failures();
}

int e_steps(lua_State* L, EnsembleBox& box) {
    const long long n = opt_integer(L, 2, 1, "steps", "the number of steps");
    if (n < 0) fail(L, "steps: the number of steps must be non-negative, got %s", std::to_string(n));
    lua_pushinteger(L, advance(L, box, n, "steps"));
    return 1;
}

int e_run(lua_State* L, EnsembleBox& box) {
    lua_pushinteger(L, advance(L, box, steps_arg(L, box.ensemble->model(), 2, "run"), "run"));
    return 1;
}

int e_failures(lua_State* L, EnsembleBox& box) {
    lua_pushinteger(L, box.ensemble->failures());
    return 1;
}

int e_hash(lua_State* L, EnsembleBox& box) {
    char text[32];
    std::snprintf(text, sizeof text, "%016" PRIx64, box.ensemble->hash());
    lua_pushstring(L, text);
    return 1;
}

// Close every member's outputs; returns the notes (partial files, write errors).
std::vector<std::string> finish_all(EnsembleBox& box, bool aborted) {
    std::vector<std::string> notes;
    for (int i = 0; i < box.ensemble->size(); ++i) {
        Run& r = box.ensemble->run(i);
        if (aborted) r.abort("the script stopped with an error");
        std::vector<std::string> mine;
        r.finish(&mine);
        for (const std::string& x : mine) notes.push_back("member " + std::to_string(i + 1) + ": " + x);
    }
    return notes;
}

int e_finish(lua_State* L, EnsembleBox& box) {
    refuse_while_stepping(L, box, "finish");
    push_strings(L, finish_all(box, false));
    return 1;
}

// ---- member methods --------------------------------------------------------------------------

template <StateFunction F>
int member_state_body(lua_State* L) {
    MemberRef& r = check_member(L);
    Run& run = r.box->ensemble->run(r.index);
    return F(L, run.model(), run.data());
}
template <StateFunction F>
int mem_state(lua_State* L) {
    return guard<member_state_body<F>>(L);
}

using MemberFunction = int (*)(lua_State*, EnsembleBox&, int);
template <MemberFunction F>
int member_body(lua_State* L) {
    MemberRef& r = check_member(L);
    return F(L, *r.box, r.index);
}
template <MemberFunction F>
int mem_method(lua_State* L) {
    return guard<member_body<F>>(L);
}

int m_index(lua_State* L, EnsembleBox&, int i) {
    lua_pushinteger(L, i + 1);
    return 1;
}

int m_failed(lua_State* L, EnsembleBox& box, int i) {
    lua_pushboolean(L, box.ensemble->failed(i));
    return 1;
}

// nil, or why the member stopped, the time and the step of its last good state.
int m_failure(lua_State* L, EnsembleBox& box, int i) {
    const Ensemble& e = *box.ensemble;
    if (!e.failed(i)) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushstring(L, e.failure(i).c_str());
    lua_pushnumber(L, e.failure_time(i));
    lua_pushinteger(L, static_cast<lua_Integer>(e.failure_step(i)));
    return 3;
}

int m_summary(lua_State* L, EnsembleBox& box, int i) {
    push_summary(L, box.ensemble->run(i).summary());
    return 1;
}

// A fresh run of member i on `model` with the member's outputs added again.
void renew_member(lua_State* L, EnsembleBox& box, int i, std::shared_ptr<const Model> model) {
    Ensemble& e = *box.ensemble;
    try {
        e.set_model(i, std::move(model));
        for (const OutputSpec& o : box.outputs[i]) e.run(i).add_output(o);
    } catch (const Error& err) {
        fail(L, "vary: %s", err.what());
    }
    e.run(i).set_max_steps(box.max_steps);
}

// m:vary{ key = number or {numbers}, ... }: other numbers for this member (ModelVariation keys).
int m_vary(lua_State* L, EnsembleBox& box, int i) {
    refuse_while_stepping(L, box, "vary");
    check_table(L, 2, "vary");
    Ensemble& e = *box.ensemble;
    const std::string who = "vary: member " + std::to_string(i + 1);
    if (e.run(i).data().step != 0 || e.failed(i)) fail(L, "%s has already stepped (vary a member before its first step)", who);
    ModelVariation v(e.run(i).model_ptr());
    for (const std::string& key : sorted_keys(L, 2, "vary")) {
        raw_getfield(L, 2, key.c_str());
        std::vector<double> values;
        if (lua_type(L, -1) == LUA_TNUMBER) {
            values.push_back(lua_tonumber(L, -1));
        } else if (lua_istable(L, -1)) {
            for (lua_Integer k = 1; k <= static_cast<lua_Integer>(lua_rawlen(L, -1)); ++k) {
                lua_rawgeti(L, -1, k);
                if (lua_type(L, -1) != LUA_TNUMBER) fail(L, "%s: '%s': expected a number or a list of numbers", who, key);
                values.push_back(lua_tonumber(L, -1));
                lua_pop(L, 1);
            }
        } else {
            fail(L, "%s: '%s': expected a number or a list of numbers, got %s", who, key, type_of(L, -1));
        }
        lua_pop(L, 1);
        try {
            v.set(key, values);
        } catch (const Error& err) {
            fail(L, "%s: %s", who, err.what());
        }
    }
    std::shared_ptr<const Model> model;
    try {
        model = v.build();
    } catch (const Error& err) {
        fail(L, "%s: %s", who, err.what());
    }
    renew_member(L, box, i, std::move(model));
    return 0;
}

// m:output{ file, every, channels }: a CSV of this member's run (files of members differ).
int m_output(lua_State* L, EnsembleBox& box, int i) {
    refuse_while_stepping(L, box, "output");
    std::string dropped;
    OutputSpec o = read_output(L, 2, nullptr, &dropped);
    if (!dropped.empty())
        fail(L, "output: '%s': a sweep member writes only paths naming it (put {member} in the name)", dropped);
    for (const std::vector<OutputSpec>& member : box.outputs)
        for (const OutputSpec& other : member)
            if (other.file == o.file)
                fail(L, "output: member %s: file '%s' is already written by this ensemble (give each member its own file)",
                     std::to_string(i + 1), o.file);
    try {
        box.ensemble->run(i).add_output(o);
    } catch (const Error& err) {
        fail(L, "output: member %s: %s", std::to_string(i + 1), err.what());
    }
    box.outputs[i].push_back(o);
    return 0;
}

int l_member_index_meta(lua_State* L) {
    check_member(L, 1);
    return push_method(L, kMemberMeta, 2);
}

int l_ensemble_index_meta(lua_State* L) {
    check_ensemble(L, 1);
    return push_method(L, kEnsembleMeta, 2);
}

}  // namespace

// w:ensemble{ members = K, threads = T }: K members of the world's Model, each at the Model's
// initial state (not the world's current state: m:restore(w:save()) copies that).
int l_ensemble(lua_State* L, World& w) {
    if (lua_isnoneornil(L, 2)) fail(L, "ensemble: expected {members = n [, threads = t]}");
    check_table(L, 2, "ensemble");
    Context* ctx = context(L);
    Fields f{L, 2, "ensemble"};
    f.only({"members", "threads"});
    const long long cap = ctx->options.sandbox ? kMaxMembersSandbox : kMaxMembers;
    if (!f.has("members")) fail(L, "ensemble: field 'members' is required (the number of runs)");
    const long long k = f.integer("members", 1, 1, cap);
    const long long threads = f.integer("threads", 0, 0, 1024);
    if (ctx->options.sandbox && ctx->members_made + k > kSandboxMembers)
        fail(L, "ensemble: sandbox: %s members were made already and %s more would pass the script's budget of %s "
                "(members live on the C++ heap, outside the Lua memory limit)",
             std::to_string(ctx->members_made), std::to_string(k), std::to_string(kSandboxMembers));
    ctx->members_made += k;
    auto box = std::make_unique<EnsembleBox>();
    try {
        box->ensemble = std::make_unique<Ensemble>(w.model, static_cast<int>(k));
    } catch (const Error& e) {
        fail(L, "ensemble: %s", e.what());
    }
    box->ensemble->set_threads(static_cast<int>(threads));
    box->max_steps = w.max_steps;
    box->outputs.resize(box->ensemble->size());
    for (int i = 0; i < box->ensemble->size(); ++i) box->ensemble->run(i).set_max_steps(w.max_steps);
    ctx->ensembles.push_back(std::move(box));
    EnsembleBox* b = ctx->ensembles.back().get();
    EnsembleBox** ud = static_cast<EnsembleBox**>(lua_newuserdatauv(L, sizeof(EnsembleBox*), 1));
    *ud = b;
    luaL_setmetatable(L, kEnsembleMeta);
    lua_createtable(L, 0, 0);  // member views, made on demand
    lua_setiuservalue(L, -2, 1);
    return 1;
}

void open_ensemble_metatables(lua_State* L) {
    static const luaL_Reg ensemble_methods[] = {
        {"size", ens_method<e_size>},         {"threads", ens_method<e_threads>},   {"member", ens_method<e_member>},
        {"controller", ens_method<e_controller>}, {"steps", ens_method<e_steps>},   {"run", ens_method<e_run>},
        {"failures", ens_method<e_failures>}, {"hash", ens_method<e_hash>},         {"finish", ens_method<e_finish>},
        {nullptr, nullptr}};
    static const luaL_Reg member_methods[] = {
        {"index", mem_method<m_index>},       {"failed", mem_method<m_failed>},     {"failure", mem_method<m_failure>},
        {"summary", mem_method<m_summary>},   {"vary", mem_method<m_vary>},         {"output", mem_method<m_output>},
        {"time", mem_state<l_state_time>},    {"position", mem_state<l_position>},  {"orientation", mem_state<l_orientation>},
        {"velocity", mem_state<l_velocity>},  {"angular_velocity", mem_state<l_angular_velocity>},
        {"coord", mem_state<l_coord>},        {"rate", mem_state<l_rate>},          {"set_actuation", mem_state<l_set_actuation>},
        {"set_target", mem_state<l_set_target>},  {"set_servo", mem_state<l_set_servo>},
        {"set_force", mem_state<l_set_force>}, {"set_torque", mem_state<l_set_torque>},
        {"monitors", mem_state<l_monitors>},  {"save", mem_state<l_save>},          {"restore", mem_state<l_restore>},
        {"save_file", mem_state<l_save_file>}, {"restore_file", mem_state<l_restore_file>},
        {nullptr, nullptr}};
    new_metatable(L, kEnsembleMeta, guard<l_ensemble_index_meta>, l_ensemble_gc, ensemble_methods);
    new_metatable(L, kMemberMeta, guard<l_member_index_meta>, nullptr, member_methods);
}

// Close the outputs of every member of every ensemble (host.cpp at the end of a script; the
// Context's __gc for a stock lua5.4).
std::vector<std::string> finish_ensembles(Context& ctx, bool aborted, bool* outputs_ok) {
    std::vector<std::string> notes;
    bool ok = true;
    for (auto& box : ctx.ensembles) {
        for (const std::string& x : finish_all(*box, aborted)) notes.push_back(x);
        for (int i = 0; i < box->ensemble->size(); ++i) ok = ok && box->ensemble->run(i).outputs_ok();
    }
    if (outputs_ok) *outputs_ok = ok;
    return notes;
}

}  // namespace lua
}  // namespace noether
