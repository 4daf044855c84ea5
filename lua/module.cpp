// The Lua module: the module table (noether.world, params, inertia, quat, plugins), the world
// methods, the per-state context, and luaopen_noether for a stock lua5.4 (require "noether").
#include <algorithm>
#include <cmath>
#include <cstring>

#include "noether/registry.hpp"
#include "noether/sweep.hpp"

#include "world.hpp"

namespace noether {
namespace lua {

const char* const kWorldMeta = "noether.World";

namespace {

const char kContextKey = 'c';


// noether.params{defaults}: the defaults, overridden by the host's --set values (converted to
// the type of the default).
int l_params(lua_State* L) {
    check_table(L, 1, "noether.params");
    Context* ctx = context(L);
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, -4);
    }
    for (const auto& kv : ctx->options.params) {
        const std::string& key = kv.first;
        const std::string& val = kv.second;
        raw_getfield(L, 1, key.c_str());
        const int t = lua_type(L, -1);
        lua_pop(L, 1);
        if (t == LUA_TNIL) {
            if (key == "duration") continue;  // always allowed: the host uses it for returned worlds
            // Sorted: a Lua table's order changes from run to run, the message must not.
            std::vector<std::string> keys;
            lua_pushnil(L);
            while (lua_next(L, 1) != 0) {
                lua_pop(L, 1);
                if (lua_type(L, -1) == LUA_TSTRING) keys.push_back(lua_tostring(L, -1));
            }
            std::sort(keys.begin(), keys.end());
            std::string names;
            for (const std::string& k : keys) names += (names.empty() ? "" : ", ") + k;
            fail(L, "--set %s=%s: the script has no parameter '%s' (its parameters: %s)", key, val, key, names);
        }
        ctx->used_params.push_back(key);
        if (t == LUA_TNUMBER) {
            char* end = nullptr;
            const double v = std::strtod(val.c_str(), &end);
            if (val.empty() || *end != '\0') fail(L, "--set %s=%s: parameter '%s' must be a number", key, val, key);
            if (v == std::floor(v) && std::fabs(v) < 9e15) lua_pushinteger(L, static_cast<lua_Integer>(v));
            else lua_pushnumber(L, v);
        } else if (t == LUA_TBOOLEAN) {
            if (val != "true" && val != "false") fail(L, "--set %s=%s: parameter '%s' must be true or false", key, val, key);
            lua_pushboolean(L, val == "true");
        } else {
            lua_pushstring(L, val.c_str());
        }
        lua_setfield(L, -2, key.c_str());
    }
    return 1;
}

int l_inertia_box(lua_State* L) {
    const double m = arg_number(L, 1, "noether.inertia/quat", "argument 1"), x = arg_number(L, 2, "noether.inertia/quat", "argument 2"), y = arg_number(L, 3, "noether.inertia/quat", "argument 3"),
                 z = arg_number(L, 4, "noether.inertia/quat", "argument 4");
    push_vec3(L, {m * (y * y + z * z) / 12, m * (x * x + z * z) / 12, m * (x * x + y * y) / 12});
    return 1;
}
int l_inertia_cylinder(lua_State* L) {  // axis along z
    const double m = arg_number(L, 1, "noether.inertia/quat", "argument 1"), r = arg_number(L, 2, "noether.inertia/quat", "argument 2"), h = arg_number(L, 3, "noether.inertia/quat", "argument 3");
    const double t = m * (3 * r * r + h * h) / 12;
    push_vec3(L, {t, t, m * r * r / 2});
    return 1;
}
int l_inertia_sphere(lua_State* L) {
    const double m = arg_number(L, 1, "noether.inertia/quat", "argument 1"), r = arg_number(L, 2, "noether.inertia/quat", "argument 2");
    const double t = 2 * m * r * r / 5;
    push_vec3(L, {t, t, t});
    return 1;
}
int l_inertia_rod(lua_State* L) {  // thin rod along x, with a small radius for the axial moment
    const double m = arg_number(L, 1, "noether.inertia/quat", "argument 1"), l = arg_number(L, 2, "noether.inertia/quat", "argument 2"), r = opt_number(L, 3, 0.01 * l, "noether.inertia.rod", "the radius");
    const double t = m * (3 * r * r + l * l) / 12;
    push_vec3(L, {m * r * r / 2, t, t});
    return 1;
}

int l_quat_rpy(lua_State* L) {
    const Quat q = quat_from_rpy(arg_number(L, 1, "noether.inertia/quat", "argument 1"), arg_number(L, 2, "noether.inertia/quat", "argument 2"), arg_number(L, 3, "noether.inertia/quat", "argument 3"));
    lua_createtable(L, 4, 0);
    const double v[4] = {q.w, q.x, q.y, q.z};
    for (int i = 0; i < 4; ++i) lua_pushnumber(L, v[i]), lua_rawseti(L, -2, i + 1);
    return 1;
}
int l_quat_axis_angle(lua_State* L) {
    const Vec3 a = vec_arg(L, 1, "noether.quat.axis_angle", "the axis");
    if (!(norm(a) > 0)) fail(L, "noether.quat.axis_angle: the axis must be nonzero");
    const Quat q = quat_from_axis_angle(a, arg_number(L, 2, "noether.inertia/quat", "argument 2"));
    lua_createtable(L, 4, 0);
    const double v[4] = {q.w, q.x, q.y, q.z};
    for (int i = 0; i < 4; ++i) lua_pushnumber(L, v[i]), lua_rawseti(L, -2, i + 1);
    return 1;
}

// noether.here(path): a path next to the calling script (relative paths a scene names are
// otherwise relative to the working directory).
int l_here(lua_State* L) {
    const std::string path = arg_string(L, 1, "noether.here", "the path");
    if (!path.empty() && path[0] == '/') {
        lua_pushstring(L, path.c_str());
        return 1;
    }
    const std::string dir = caller_dir(L);
    if (dir.empty()) {
        lua_pushstring(L, path.c_str());
        return 1;
    }
    lua_pushstring(L, (dir + "/" + path).c_str());
    return 1;
}

// A grid or list value as --set would give it.
std::string sweep_value(lua_State* L, int idx, const std::string& who) {
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) return std::to_string(lua_tointeger(L, idx));
        return exact_str(lua_tonumber(L, idx));
    case LUA_TBOOLEAN: return lua_toboolean(L, idx) ? "true" : "false";
    case LUA_TSTRING: return lua_tostring(L, idx);
    default: fail(L, "%s: values are numbers, strings or booleans, got a %s", who, type_of(L, idx));
    }
}

// The names of a table's string keys, sorted (Lua's own order is not reproducible).
// noether.sweep{ grid = { name = {v1, v2, ...} or "lo:hi:n", ... } | list = { {name = v, ...}, ... },
//                samples = N, seed = S }: the members `noether sweep` runs by default (docs/ensembles.md, "Sweeps").
// Grid axes are taken in the order of their names. A plain run ignores the declaration.
int l_sweep(lua_State* L) {
    check_table(L, 1, "noether.sweep");
    Context* ctx = context(L);
    if (ctx->sweep.declared) fail(L, "noether.sweep: declared twice (one sweep per scene)");
    Fields f{L, 1, "noether.sweep"};
    f.only({"grid", "list", "samples", "seed"});
    SweepPlan plan;
    plan.declared = true;
    plan.samples = f.integer("samples", 0, 0, 100000000);
    plan.seed = static_cast<std::uint64_t>(f.integer("seed", 0, 0));
    if (raw_getfield(L, 1, "grid") != LUA_TNIL) {
        if (!lua_istable(L, -1)) f.bad("grid", "a table of parameter = {values} or \"lo:hi:n\"");
        const int g = lua_gettop(L);
        for (const std::string& name : sorted_keys(L, g, "noether.sweep: grid")) {
            const std::string who = "noether.sweep: grid '" + name + "'";
            raw_getfield(L, g, name.c_str());
            SweepAxis axis;
            if (lua_type(L, -1) == LUA_TSTRING) {
                try {
                    axis = parse_axis(name + "=" + lua_tostring(L, -1));
                } catch (const Error& e) {
                    fail(L, "noether.sweep: %s", e.what());
                }
            } else if (lua_istable(L, -1)) {
                axis.name = name;
                const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, -1));
                for (lua_Integer i = 1; i <= n; ++i) {
                    lua_rawgeti(L, -1, i);
                    axis.values.push_back(sweep_value(L, -1, who));
                    lua_pop(L, 1);
                }
                if (axis.values.empty()) fail(L, "%s: needs at least one value", who);
            } else {
                fail(L, "%s: expected a list of values or \"lo:hi:n\", got a %s", who, type_of(L, -1));
            }
            lua_pop(L, 1);
            plan.grid.push_back(axis);
        }
    }
    lua_pop(L, 1);
    if (raw_getfield(L, 1, "list") != LUA_TNIL) {
        if (!lua_istable(L, -1)) f.bad("list", "a list of tables {name = value, ...}");
        if (!plan.grid.empty()) fail(L, "noether.sweep: give either 'grid' or 'list', not both");
        const int l = lua_gettop(L);
        const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, l));
        for (lua_Integer i = 1; i <= n; ++i) {
            lua_rawgeti(L, l, i);
            const std::string who = "noether.sweep: list entry " + std::to_string(i);
            if (!lua_istable(L, -1)) fail(L, "%s: expected a table {name = value, ...}, got a %s", who, type_of(L, -1));
            const int e = lua_gettop(L);
            std::vector<std::pair<std::string, std::string>> member;
            for (const std::string& name : sorted_keys(L, e, who)) {
                raw_getfield(L, e, name.c_str());
                member.emplace_back(name, sweep_value(L, -1, who));
                lua_pop(L, 1);
            }
            plan.list.push_back(std::move(member));
            lua_pop(L, 1);
        }
        if (plan.list.empty()) fail(L, "noether.sweep: field 'list' is empty");
        if (plan.samples > 0) fail(L, "noether.sweep: 'samples' draws from a grid, not from a list");
    }
    lua_pop(L, 1);
    if (plan.samples > 0 && plan.grid.empty()) fail(L, "noether.sweep: 'samples' needs a 'grid' to draw from");
    ctx->sweep = std::move(plan);
    return 0;
}

// noether.record(name, value) or noether.record{ name = value, ... }: values a sweep writes as
// columns of this member's row (numbers, strings, booleans). Recording a name again replaces it.
int l_record(lua_State* L) {
    Context* ctx = context(L);
    auto put = [&](const std::string& name, int idx) {
        if (name.empty()) fail(L, "noether.record: the name must not be empty");
        Recorded r;
        r.name = name;
        if (lua_type(L, idx) == LUA_TNUMBER) {
            const double v = lua_tonumber(L, idx);
            r.number = std::isfinite(v);
            r.text = lua_isinteger(L, idx) ? std::to_string(lua_tointeger(L, idx)) : exact_str(v);
        } else if (lua_type(L, idx) == LUA_TBOOLEAN || lua_type(L, idx) == LUA_TSTRING) {
            r.text = sweep_value(L, idx, "noether.record: '" + name + "'");
        } else {
            fail(L, "noether.record: '%s' must be a number, a string or a boolean, got a %s", name, type_of(L, idx));
        }
        for (Recorded& x : ctx->records)
            if (x.name == name) {
                x = r;
                return;
            }
        ctx->records.push_back(r);
    };
    if (lua_type(L, 1) == LUA_TSTRING) {
        put(lua_tostring(L, 1), 2);
    } else if (lua_istable(L, 1)) {
        for (const std::string& name : sorted_keys(L, 1, "noether.record")) {
            raw_getfield(L, 1, name.c_str());
            put(name, lua_gettop(L));
            lua_pop(L, 1);
        }
    } else {
        fail(L, "noether.record: expected (name, value) or {name = value, ...}");
    }
    return 0;
}

int l_plugins(lua_State* L) {
    const auto list = Registry::global().list();
    lua_createtable(L, static_cast<int>(list.size()), 0);
    for (std::size_t i = 0; i < list.size(); ++i) {
        lua_createtable(L, 0, 4);
        lua_pushstring(L, kind_name(list[i].kind));
        lua_setfield(L, -2, "kind");
        lua_pushstring(L, list[i].name.c_str());
        lua_setfield(L, -2, "name");
        lua_pushstring(L, list[i].description.c_str());
        lua_setfield(L, -2, "description");
        lua_pushstring(L, list[i].path.c_str());
        lua_setfield(L, -2, "path");
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    return 1;
}

int open_module(lua_State* L) {
    static const luaL_Reg methods[] = {
        {"body", method<l_body>},           {"joint", method<l_joint>},
        {"force", method<l_force>},         {"contact", method<l_contact>},     {"coupling", method<l_coupling>},     {"on_step", method<l_on_step>},
        {"servo", method<l_servo>},         {"set_target", compiled<world_state<l_set_target>>},
        {"set_servo", compiled<world_state<l_set_servo>>},
        {"output", method<l_output>}, {"record", method<l_world_record>},       {"urdf", method<l_urdf>}, {"mjcf", method<l_mjcf>},
        {"assemble", method<l_assemble>},   {"time", method<l_time>},
        {"finish", method<l_finish>},       {"compile", compiled<l_compile>},
        {"run", compiled<l_run>},           {"step", compiled<l_step>},
        {"summary", compiled<l_summary>},   {"position", compiled<world_state<l_position>>},
        {"orientation", compiled<world_state<l_orientation>>}, {"velocity", compiled<world_state<l_velocity>>},
        {"angular_velocity", compiled<world_state<l_angular_velocity>>}, {"coord", compiled<world_state<l_coord>>},
        {"rate", compiled<world_state<l_rate>>},         {"set_actuation", compiled<world_state<l_set_actuation>>},
        {"set_force", compiled<world_state<l_set_force>>}, {"set_torque", compiled<world_state<l_set_torque>>},
        {"monitors", compiled<world_state<l_monitors>>}, {"save", compiled<world_state<l_save>>},
        {"contacts", compiled<world_state<l_contacts>>}, {"limit_force", compiled<world_state<l_limit_force>>},
        {"coupling_force", compiled<world_state<l_coupling_force>>},
        {"jacobian", compiled<l_jacobian>},         {"mass_matrix", compiled<l_mass_matrix>},
        {"inverse_dynamics", compiled<l_inverse_dynamics>}, {"bias_forces", compiled<l_bias_forces>},
        {"gravity_forces", compiled<l_gravity_forces>}, {"forward_dynamics", compiled<l_forward_dynamics>},
        {"center_of_mass", compiled<l_center_of_mass>}, {"com_jacobian", compiled<l_com_jacobian>}, {"momentum", compiled<l_momentum>},
        {"restore", compiled<world_state<l_restore>>},   {"save_file", compiled<world_state<l_save_file>>},
        {"restore_file", compiled<world_state<l_restore_file>>}, {"ensemble", compiled<l_ensemble>},
        {"dofs", compiled<world_state<l_dofs>>},         {"joint_state", compiled<world_state<l_joint_state>>},
        {"set_joint_state", compiled<world_state<l_set_joint_state>>}, {"linearize", compiled<world_state<l_linearize>>},
        {nullptr, nullptr}};
    new_metatable(L, kWorldMeta, guard<l_world_index>, l_world_gc, methods);
    open_ensemble_metatables(L);
    static const luaL_Reg module[] = {{"world", guard<l_world>}, {"params", guard<l_params>}, {"plugins", guard<l_plugins>}, {"here", guard<l_here>},
                                      {"sweep", guard<l_sweep>}, {"record", guard<l_record>}, {nullptr, nullptr}};
    luaL_newlib(L, module);
    static const luaL_Reg inertia[] = {{"box", guard<l_inertia_box>}, {"cylinder", guard<l_inertia_cylinder>},
                                       {"sphere", guard<l_inertia_sphere>}, {"rod", guard<l_inertia_rod>}, {nullptr, nullptr}};
    luaL_newlib(L, inertia);
    lua_setfield(L, -2, "inertia");
    static const luaL_Reg quat[] = {{"rpy", guard<l_quat_rpy>}, {"axis_angle", guard<l_quat_axis_angle>}, {nullptr, nullptr}};
    luaL_newlib(L, quat);
    lua_setfield(L, -2, "quat");
    lua_pushstring(L, version());
    lua_setfield(L, -2, "version");
    return 1;
}

// The Context dies with the Lua state; so do the worlds it owns. Runs a host did not finish
// (a stock lua5.4 has no host) are finished here: complete outputs get their final names.
int l_context_gc(lua_State* L) {
    Context** p = static_cast<Context**>(lua_touserdata(L, 1));
    if (*p) {
        for (auto& w : (*p)->worlds)
            if (w->run && !w->run->finished()) w->run->finish();
        finish_ensembles(**p, false, nullptr);
    }
    delete *p;
    *p = nullptr;
    return 0;
}

void install_context(lua_State* L, const ScriptOptions& options) {
    Context** p = static_cast<Context**>(lua_newuserdatauv(L, sizeof(Context*), 0));
    *p = nullptr;
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, l_context_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    *p = new Context{};
    (*p)->options = options;
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kContextKey);
}

bool has_context(lua_State* L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &kContextKey);
    Context** p = static_cast<Context**>(lua_touserdata(L, -1));
    lua_pop(L, 1);
    return p && *p;
}

}  // namespace

void new_metatable(lua_State* L, const char* name, lua_CFunction index, lua_CFunction gc, const luaL_Reg* methods) {
    if (luaL_newmetatable(L, name)) {
        lua_pushcfunction(L, index);
        lua_setfield(L, -2, "__index");
        if (gc) {
            lua_pushcfunction(L, gc);
            lua_setfield(L, -2, "__gc");
        }
        lua_newtable(L);
        luaL_setfuncs(L, methods, 0);
        lua_setfield(L, -2, "methods");
        lua_pushstring(L, name);
        lua_setfield(L, -2, "__name");
        lua_pushstring(L, name);  // getmetatable() returns this string, not the metatable
        lua_setfield(L, -2, "__metatable");
    }
    lua_pop(L, 1);
}

int push_method(lua_State* L, const char* meta, int key_idx) {
    if (lua_type(L, key_idx) != LUA_TSTRING) {
        lua_pushnil(L);
        return 1;
    }
    luaL_getmetatable(L, meta);
    lua_getfield(L, -1, "methods");
    lua_getfield(L, -1, lua_tostring(L, key_idx));
    return 1;
}

World* to_world(lua_State* L, int idx) {
    World** p = static_cast<World**>(luaL_testudata(L, idx, kWorldMeta));
    return p ? *p : nullptr;
}

Context* try_context(lua_State* L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &kContextKey);
    Context** p = static_cast<Context**>(lua_touserdata(L, -1));
    lua_pop(L, 1);
    return p ? *p : nullptr;
}

Context* context(lua_State* L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &kContextKey);
    Context** p = static_cast<Context**>(lua_touserdata(L, -1));
    lua_pop(L, 1);
    if (!p || !*p) throw LuaFail("the noether module was not opened with noether::lua::open or require");
    return *p;
}

void open(lua_State* L, const ScriptOptions& options) {
    install_context(L, options);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, open_module);
    lua_setfield(L, -2, "noether");
    lua_pop(L, 1);
    // require() also looks in the host's extra directories (the sandbox's require searches them itself).
    if (!options.lua_path.empty() && !options.sandbox) {
        lua_getglobal(L, "package");
        lua_getfield(L, -1, "path");
        std::string path = lua_tostring(L, -1);
        lua_pop(L, 1);
        for (const std::string& d : options.lua_path) path = d + "/?.lua;" + path;
        lua_pushstring(L, path.c_str());
        lua_setfield(L, -2, "path");
        lua_pop(L, 1);
    }
}

}  // namespace lua
}  // namespace noether

// require "noether" from a stock lua5.4 (LUA_CPATH finding noether.so): the module with a
// context of default options (no --set parameters; relative paths from the working directory).
extern "C" __attribute__((visibility("default"))) int noether_lua_luaopen(lua_State* L) {
    try {
        if (!noether::lua::has_context(L)) noether::lua::install_context(L, noether::lua::ScriptOptions{});
    } catch (const std::exception& e) {
        lua_pushstring(L, e.what());
        return lua_error(L);
    }
    return noether::lua::open_module(L);
}

extern "C" __attribute__((visibility("default"))) int luaopen_noether(lua_State* L) { return noether_lua_luaopen(L); }
