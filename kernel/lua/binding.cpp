// The Lua module `noether`: scene building, forces, outputs and running (docs/lua.md).
//
// Every argument is checked. A bad one raises an error naming the script line, the function,
// the element, the field and what was expected, e.g.
//   fourbar.lua:12: joint 'crank': field 'axis' must be a 3-vector, got string
#include <lua.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <unistd.h>

#include "noether/urdf.hpp"
#include "world.hpp"

namespace noether {
namespace lua {

namespace {

const char* const kWorldMeta = "noether.World";
const char kContextKey = 'c';

// ---- argument checking ----------------------------------------------------------------------

// Errors inside the binding are C++ exceptions; guard<> turns them into Lua errors once every
// C++ object of the call is destroyed (Lua's own errors longjmp, which would skip destructors).

// Raise "file:line: <message>" at the script line that called the current function.
[[noreturn]] void fail(lua_State* L, const char* fmt, const std::string& a = "", const std::string& b = "",
                       const std::string& c = "", const std::string& d = "") {
    luaL_where(L, 1);
    std::string msg = lua_tostring(L, -1);
    lua_pop(L, 1);
    char buf[4096];
    std::snprintf(buf, sizeof buf, fmt, a.c_str(), b.c_str(), c.c_str(), d.c_str());
    throw LuaFail(msg + buf);
}

template <lua_CFunction F>
int guard(lua_State* L) {
    try {
        return F(L);
    } catch (const std::exception& e) {
        lua_pushstring(L, e.what());
    }
    return lua_error(L);
}

// Call the function on top of the stack with `nargs` arguments; a Lua error becomes LuaFail.
void call(lua_State* L, int nargs) {
    if (lua_pcall(L, nargs, 0, 0) != LUA_OK) {
        std::string msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error in a callback";
        lua_pop(L, 1);
        throw LuaFail(msg);
    }
}

Origin where(lua_State* L) {
    lua_Debug ar;
    Origin o;
    for (int level = 1; lua_getstack(L, level, &ar); ++level) {
        lua_getinfo(L, "Sl", &ar);
        if (ar.currentline > 0) {
            o.file = ar.short_src;
            o.line = ar.currentline;
            break;
        }
    }
    return o;
}

std::string type_of(lua_State* L, int idx) { return luaL_typename(L, idx); }

bool is_vec3(lua_State* L, int idx, Vec3* out) {
    if (!lua_istable(L, idx) || lua_rawlen(L, idx) != 3) return false;
    for (int i = 0; i < 3; ++i) {
        lua_rawgeti(L, idx, i + 1);
        int ok = 0;
        const double v = lua_tonumberx(L, -1, &ok);
        lua_pop(L, 1);
        if (!ok) return false;
        (*out)[i] = v;
    }
    return true;
}

// Field checkers: the table is at `t`; `who` is "joint 'crank'" etc.
struct Fields {
    lua_State* L;
    int t;
    std::string who;

    bool has(const char* key) {
        lua_getfield(L, t, key);
        const bool r = !lua_isnil(L, -1);
        lua_pop(L, 1);
        return r;
    }
    [[noreturn]] void bad(const char* key, const char* expected) {
        lua_getfield(L, t, key);
        const std::string got = type_of(L, -1);
        lua_pop(L, 1);
        fail(L, "%s: field '%s' must be %s, got %s", who, key, expected, got);
    }
    double number(const char* key, double fallback, bool required = false) {
        lua_getfield(L, t, key);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            if (required) fail(L, "%s: field '%s' is required (a number)", who, key);
            return fallback;
        }
        int ok = 0;
        const double v = lua_tonumberx(L, -1, &ok);
        lua_pop(L, 1);
        if (!ok || lua_type(L, -1) == LUA_TSTRING) {
            lua_getfield(L, t, key);
            const bool isnum = lua_type(L, -1) == LUA_TNUMBER;
            lua_pop(L, 1);
            if (!isnum) bad(key, "a number");
        }
        if (!std::isfinite(v)) fail(L, "%s: field '%s' must be finite", who, key);
        return v;
    }
    long long integer(const char* key, long long fallback, long long min) {
        lua_getfield(L, t, key);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            return fallback;
        }
        int ok = 0;
        const lua_Integer v = lua_tointegerx(L, -1, &ok);
        const bool isnum = lua_type(L, -1) == LUA_TNUMBER;
        lua_pop(L, 1);
        if (!ok || !isnum) bad(key, "an integer");
        if (v < min) fail(L, "%s: field '%s' must be at least %s, got %s", who, key, std::to_string(min), std::to_string(v));
        return v;
    }
    std::string string(const char* key, const std::string& fallback, bool required = false) {
        lua_getfield(L, t, key);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            if (required) fail(L, "%s: field '%s' is required (a string)", who, key);
            return fallback;
        }
        if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pop(L, 1);
            bad(key, "a string");
        }
        std::string s = lua_tostring(L, -1);
        lua_pop(L, 1);
        return s;
    }
    bool boolean(const char* key, bool fallback) {
        lua_getfield(L, t, key);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            return fallback;
        }
        if (!lua_isboolean(L, -1)) {
            lua_pop(L, 1);
            bad(key, "a boolean");
        }
        const bool b = lua_toboolean(L, -1);
        lua_pop(L, 1);
        return b;
    }
    std::optional<Vec3> vec3(const char* key) {
        lua_getfield(L, t, key);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            return std::nullopt;
        }
        Vec3 v;
        const bool ok = is_vec3(L, -1, &v);
        lua_pop(L, 1);
        if (!ok) bad(key, "a 3-vector");
        if (!isfinite(v)) fail(L, "%s: field '%s' must be finite", who, key);
        return v;
    }
    // A number or a list of numbers.
    std::vector<double> numbers(const char* key) {
        std::vector<double> out;
        lua_getfield(L, t, key);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            return out;
        }
        if (lua_type(L, -1) == LUA_TNUMBER) {
            out.push_back(lua_tonumber(L, -1));
        } else if (lua_istable(L, -1)) {
            const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, -1));
            for (lua_Integer i = 1; i <= n; ++i) {
                lua_rawgeti(L, -1, i);
                if (lua_type(L, -1) != LUA_TNUMBER) {
                    lua_pop(L, 2);
                    bad(key, "a number or a list of numbers");
                }
                out.push_back(lua_tonumber(L, -1));
                lua_pop(L, 1);
            }
        } else {
            lua_pop(L, 1);
            bad(key, "a number or a list of numbers");
        }
        lua_pop(L, 1);
        return out;
    }
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
    void only(const std::vector<std::string>& allowed) {
        only(allowed, [](const std::string&) { return false; });
    }
};

void check_table(lua_State* L, int idx, const char* fn) {
    if (!lua_istable(L, idx)) fail(L, "%s: expected a table of fields, got %s", fn, type_of(L, idx));
}

World& check_world(lua_State* L, int idx = 1) {
    World** p = static_cast<World**>(luaL_checkudata(L, idx, kWorldMeta));
    return **p;
}

void require_building(lua_State* L, World& w, const char* fn) {
    if (w.model)
        fail(L, "%s: the world is already compiled (it has stepped or been checked); build every element before "
                "the first step",
             fn);
}

// A body or joint named by a handle table {name=...} or a string; "world" for w.world.
std::string element_name(lua_State* L, int idx, const std::string& who, const char* field) {
    if (lua_type(L, idx) == LUA_TSTRING) return lua_tostring(L, idx);
    if (lua_istable(L, idx)) {
        lua_getfield(L, idx, "name");
        if (lua_type(L, -1) == LUA_TSTRING) {
            std::string s = lua_tostring(L, -1);
            lua_pop(L, 1);
            return s;
        }
        lua_pop(L, 1);
    }
    fail(L, "%s: field '%s' must be a body (or its name), got %s", who, field, type_of(L, idx));
}


void push_vec3(lua_State* L, const Vec3& v) {
    lua_createtable(L, 3, 0);
    for (int i = 0; i < 3; ++i) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

void push_handle(lua_State* L, const char* kind, const std::string& name) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, name.c_str());
    lua_setfield(L, -2, "name");
    lua_pushstring(L, kind);
    lua_setfield(L, -2, "kind");
}

// ---- inertia and orientation ----------------------------------------------------------------

Mat3 read_inertia(lua_State* L, int idx, const std::string& who) {
    const char* expected =
        "3 principal moments {Ixx, Iyy, Izz}, 6 components {Ixx, Iyy, Izz, Ixy, Ixz, Iyz}, or a 3x3 table";
    if (!lua_istable(L, idx)) fail(L, "%s: field 'inertia' must be %s, got %s", who, expected, type_of(L, idx));
    const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, idx));
    Mat3 I;
    lua_rawgeti(L, idx, 1);
    const bool nested = lua_istable(L, -1);
    lua_pop(L, 1);
    if (nested) {
        if (n != 3) fail(L, "%s: field 'inertia' must be %s", who, expected);
        for (int r = 0; r < 3; ++r) {
            lua_rawgeti(L, idx, r + 1);
            Vec3 row;
            if (!is_vec3(L, -1, &row)) fail(L, "%s: field 'inertia' row %s must be a 3-vector", who, std::to_string(r + 1));
            lua_pop(L, 1);
            for (int c = 0; c < 3; ++c) I.m[r][c] = row[c];
        }
        return I;
    }
    std::vector<double> v;
    for (lua_Integer i = 1; i <= n; ++i) {
        lua_rawgeti(L, idx, i);
        if (lua_type(L, -1) != LUA_TNUMBER) fail(L, "%s: field 'inertia' must be %s", who, expected);
        v.push_back(lua_tonumber(L, -1));
        lua_pop(L, 1);
    }
    if (v.size() == 3) return Mat3::diag(v[0], v[1], v[2]);
    if (v.size() == 6) {
        I = Mat3::diag(v[0], v[1], v[2]);
        I.m[0][1] = I.m[1][0] = v[3];
        I.m[0][2] = I.m[2][0] = v[4];
        I.m[1][2] = I.m[2][1] = v[5];
        return I;
    }
    fail(L, "%s: field 'inertia' must be %s, got %s numbers", who, expected, std::to_string(v.size()));
}

Quat read_orientation(lua_State* L, int idx, const std::string& who) {
    const char* expected = "a quaternion {w, x, y, z}, {rpy = {roll, pitch, yaw}} or {axis = {x, y, z}, angle = a}";
    if (!lua_istable(L, idx)) fail(L, "%s: field 'orientation' must be %s, got %s", who, expected, type_of(L, idx));
    if (lua_rawlen(L, idx) == 4) {
        double q[4];
        for (int i = 0; i < 4; ++i) {
            lua_rawgeti(L, idx, i + 1);
            if (lua_type(L, -1) != LUA_TNUMBER) fail(L, "%s: field 'orientation' must be %s", who, expected);
            q[i] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        return {q[0], q[1], q[2], q[3]};
    }
    Fields f{L, lua_absindex(L, idx), who + ": orientation"};
    f.only({"rpy", "axis", "angle"});
    if (f.has("rpy")) {
        const Vec3 r = *f.vec3("rpy");
        return quat_from_rpy(r.x, r.y, r.z);
    }
    if (f.has("axis")) {
        const Vec3 a = *f.vec3("axis");
        if (!(norm(a) > 0)) fail(L, "%s: orientation axis must be nonzero", who);
        return quat_from_axis_angle(a, f.number("angle", 0, true));
    }
    fail(L, "%s: field 'orientation' must be %s", who, expected);
}

// ---- noether.world{} -------------------------------------------------------------------------

int l_world(lua_State* L) {
    if (lua_isnoneornil(L, 1)) lua_newtable(L);
    check_table(L, 1, "noether.world");
    Context* ctx = context(L);
    auto* w = new World();
    World** ud = static_cast<World**>(lua_newuserdatauv(L, sizeof(World*), 1));
    *ud = w;
    luaL_setmetatable(L, kWorldMeta);
    w->origin = where(L);
    Fields f{L, 1, "noether.world"};
    f.only({"gravity", "dt", "integrator", "solver", "tolerance", "max_iterations", "max_halvings", "max_substeps",
            "plugin_dirs", "options", "duration"});
    Spec& s = w->spec;
    if (auto g = f.vec3("gravity")) s.gravity = *g;
    s.options.dt = f.number("dt", s.options.dt);
    if (!(s.options.dt > 0)) fail(L, "noether.world: field 'dt' must be positive, got %s", std::to_string(s.options.dt));
    s.options.integrator = f.string("integrator", s.options.integrator);
    s.options.solver = f.string("solver", s.options.solver);
    s.options.tolerance = f.number("tolerance", s.options.tolerance);
    s.options.max_iterations = static_cast<int>(f.integer("max_iterations", s.options.max_iterations, 1));
    s.options.max_halvings = static_cast<int>(f.integer("max_halvings", s.options.max_halvings, 0));
    s.options.max_substeps = static_cast<int>(f.integer("max_substeps", s.options.max_substeps, 1));
    w->duration = f.number("duration", -1);
    lua_getfield(L, 1, "plugin_dirs");
    if (!lua_isnil(L, -1)) {
        if (!lua_istable(L, -1)) f.bad("plugin_dirs", "a list of directory names");
        for (lua_Integer i = 1; i <= static_cast<lua_Integer>(lua_rawlen(L, -1)); ++i) {
            lua_rawgeti(L, -1, i);
            if (lua_type(L, -1) != LUA_TSTRING) f.bad("plugin_dirs", "a list of directory names");
            s.plugin_dirs.push_back(lua_tostring(L, -1));
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    lua_getfield(L, 1, "options");
    if (!lua_isnil(L, -1)) {
        if (!lua_istable(L, -1)) f.bad("options", "a table of integrator options");
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {
            if (lua_type(L, -2) != LUA_TSTRING) fail(L, "noether.world: options must be named");
            const std::string key = lua_tostring(L, -2);
            if (lua_type(L, -1) == LUA_TNUMBER) {
                s.options.extra[key] = lua_tonumber(L, -1);
            } else if (lua_istable(L, -1)) {
                std::vector<std::string> items;
                for (lua_Integer i = 1; i <= static_cast<lua_Integer>(lua_rawlen(L, -1)); ++i) {
                    lua_rawgeti(L, -1, i);
                    if (lua_type(L, -1) != LUA_TSTRING) fail(L, "noether.world: option '%s' must be a number or a list of strings", key);
                    items.push_back(lua_tostring(L, -1));
                    lua_pop(L, 1);
                }
                s.options.extra_lists[key] = items;
            } else {
                fail(L, "noether.world: option '%s' must be a number or a list of strings, got %s", key, type_of(L, -1));
            }
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    ctx->worlds.push_back(w);
    // Keep every world alive until the state closes (the host reads their summaries).
    lua_pushvalue(L, -1);
    luaL_ref(L, LUA_REGISTRYINDEX);
    return 1;
}

int l_world_index(lua_State* L) {
    check_world(L, 1);
    const char* key = luaL_checkstring(L, 2);
    if (std::strcmp(key, "world") == 0) {
        push_handle(L, "world", "world");
        return 1;
    }
    luaL_getmetatable(L, kWorldMeta);
    lua_getfield(L, -1, "methods");
    lua_getfield(L, -1, key);
    return 1;
}

int l_world_gc(lua_State* L) {
    World** p = static_cast<World**>(luaL_checkudata(L, 1, kWorldMeta));
    if (*p) {
        for (Output& o : (*p)->outputs)
            if (o.fp) std::fclose(o.fp);
        delete *p;
        *p = nullptr;
    }
    return 0;
}

// ---- w:body{} -------------------------------------------------------------------------------

int l_body(lua_State* L) {
    World& w = check_world(L);
    check_table(L, 2, "body");
    require_building(L, w, "body");
    lua_getfield(L, 2, "name");
    if (lua_type(L, -1) != LUA_TSTRING) fail(L, "body: field 'name' is required (a string), got %s", type_of(L, -1));
    const std::string name = lua_tostring(L, -1);
    lua_pop(L, 1);
    const std::string who = "body '" + name + "'";
    Fields f{L, 2, who};
    f.only({"name", "mass", "inertia", "position", "orientation", "velocity", "angular_velocity", "angular_velocity_frame"});
    BodySpec b;
    b.name = name;
    b.origin = where(L);
    b.mass = f.number("mass", 0, true);
    lua_getfield(L, 2, "inertia");
    if (lua_isnil(L, -1))
        fail(L, "%s: field 'inertia' is required (3 principal moments, 6 components, a 3x3 table, or a helper such "
                "as noether.inertia.box(mass, lx, ly, lz))",
             who);
    b.inertia = read_inertia(L, -1, who);
    lua_pop(L, 1);
    if (auto p = f.vec3("position")) b.position = *p;
    lua_getfield(L, 2, "orientation");
    if (!lua_isnil(L, -1)) b.orientation = read_orientation(L, -1, who);
    lua_pop(L, 1);
    if (auto v = f.vec3("velocity")) b.velocity = *v;
    if (auto v = f.vec3("angular_velocity")) b.angular_velocity = *v;
    const std::string frame = f.string("angular_velocity_frame", "world");
    if (frame != "world" && frame != "body")
        fail(L, "%s: field 'angular_velocity_frame' must be \"world\" or \"body\", got \"%s\"", who, frame);
    b.angular_velocity_in_body = frame == "body";
    for (const BodySpec& o : w.spec.bodies)
        if (o.name == name) fail(L, "%s: duplicate name (first defined at %s)", who, o.origin.str());
    w.spec.bodies.push_back(b);
    push_handle(L, "body", name);
    return 1;
}

// ---- w:joint{} ------------------------------------------------------------------------------

int l_joint(lua_State* L) {
    World& w = check_world(L);
    check_table(L, 2, "joint");
    require_building(L, w, "joint");
    lua_getfield(L, 2, "name");
    if (lua_type(L, -1) != LUA_TSTRING) fail(L, "joint: field 'name' is required (a string), got %s", type_of(L, -1));
    const std::string name = lua_tostring(L, -1);
    lua_pop(L, 1);
    const std::string who = "joint '" + name + "'";
    Fields f{L, 2, who};
    JointSpec j;
    j.name = name;
    j.origin = where(L);
    j.type = f.string("type", "", true);
    // Type parameters: fields the joint type declares (e.g. helical 'pitch').
    std::vector<std::string> type_params;
    if (const JointType* type = Registry::global().joint(j.type)) type_params = type->parameters();
    f.only({"name", "type", "parent", "child", "anchor", "axis", "axis2", "parent_anchor", "child_anchor", "parent_axis",
            "child_axis", "stiffness", "damping", "rest", "offset"},
           [&](const std::string& k) { return std::find(type_params.begin(), type_params.end(), k) != type_params.end(); });
    lua_getfield(L, 2, "parent");
    if (lua_isnil(L, -1)) fail(L, "%s: field 'parent' is required (a body, or w.world)", who);
    j.parent = element_name(L, -1, who, "parent");
    lua_pop(L, 1);
    lua_getfield(L, 2, "child");
    if (lua_isnil(L, -1)) fail(L, "%s: field 'child' is required (a body)", who);
    j.child = element_name(L, -1, who, "child");
    lua_pop(L, 1);
    j.anchor = f.vec3("anchor");
    j.axis = f.vec3("axis");
    j.axis2 = f.vec3("axis2");
    j.parent_anchor = f.vec3("parent_anchor");
    j.child_anchor = f.vec3("child_anchor");
    j.parent_axis = f.vec3("parent_axis");
    j.child_axis = f.vec3("child_axis");
    j.stiffness = f.numbers("stiffness");
    j.damping = f.numbers("damping");
    j.rest = f.numbers("rest");
    j.offset = f.numbers("offset");
    for (const std::string& p : type_params)
        if (f.has(p.c_str())) j.params[p] = f.numbers(p.c_str());
    for (const JointSpec& o : w.spec.joints)
        if (o.name == name) fail(L, "%s: duplicate name (first defined at %s)", who, o.origin.str());
    // Names of bodies are checked now, so the error points at this line.
    auto known = [&](const std::string& n) {
        if (n == "world") return true;
        for (const BodySpec& b : w.spec.bodies)
            if (b.name == n) return true;
        return false;
    };
    if (!known(j.parent)) fail(L, "%s: field 'parent': no body named '%s' (define bodies before their joints)", who, j.parent);
    if (!known(j.child)) fail(L, "%s: field 'child': no body named '%s' (define bodies before their joints)", who, j.child);
    w.spec.joints.push_back(j);
    push_handle(L, "joint", name);
    return 1;
}

// ---- w:force{} ------------------------------------------------------------------------------

int l_force(lua_State* L) {
    World& w = check_world(L);
    check_table(L, 2, "force");
    require_building(L, w, "force");
    Fields f{L, 2, "force"};
    f.only({"body", "force", "torque", "frame", "point"});
    ForceSpec fs;
    fs.origin = where(L);
    lua_getfield(L, 2, "body");
    if (lua_isnil(L, -1)) fail(L, "force: field 'body' is required");
    fs.body = element_name(L, -1, "force", "body");
    lua_pop(L, 1);
    f.who = "force on body '" + fs.body + "'";
    if (auto v = f.vec3("force")) fs.force = *v;
    if (auto v = f.vec3("torque")) fs.torque = *v;
    fs.point = f.vec3("point");
    const std::string frame = f.string("frame", "world");
    if (frame != "world" && frame != "body") fail(L, "%s: field 'frame' must be \"world\" or \"body\", got \"%s\"", f.who, frame);
    fs.body_frame = frame == "body";
    bool found = false;
    for (const BodySpec& b : w.spec.bodies) found |= b.name == fs.body;
    if (!found) fail(L, "%s: no body named '%s'", f.who, fs.body);
    w.spec.forces.push_back(fs);
    return 0;
}

// ---- w:urdf{} and w:assemble() ----------------------------------------------------------------

// Directory of the script that called the current function ("" if unknown).
std::string caller_dir(lua_State* L) {
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); ++level) {
        lua_getinfo(L, "S", &ar);
        if (ar.source && ar.source[0] == '@') {
            std::string p = ar.source + 1;
            const std::size_t slash = p.rfind('/');
            return slash == std::string::npos ? "." : p.substr(0, slash);
        }
    }
    return "";
}

void push_strings(lua_State* L, const std::vector<std::string>& v) {
    lua_createtable(L, static_cast<int>(v.size()), 0);
    for (std::size_t i = 0; i < v.size(); ++i) {
        lua_pushstring(L, v[i].c_str());
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
}

void push_assembly(lua_State* L, const AssemblyReport& a) {
    lua_createtable(L, 0, 6);
    lua_pushnumber(L, a.initial_violation);
    lua_setfield(L, -2, "initial_violation");
    lua_pushnumber(L, a.final_violation);
    lua_setfield(L, -2, "final_violation");
    lua_pushnumber(L, a.largest_move);
    lua_setfield(L, -2, "largest_move");
    lua_pushnumber(L, a.largest_rotation);
    lua_setfield(L, -2, "largest_rotation");
    lua_pushstring(L, a.moved_body.c_str());
    lua_setfield(L, -2, "moved_body");
    lua_pushinteger(L, a.iterations);
    lua_setfield(L, -2, "iterations");
    lua_pushboolean(L, a.converged);
    lua_setfield(L, -2, "converged");
}

AssemblyReport assemble_world(lua_State* L, World& w, const char* fn) {
    try {
        AssemblyReport a = assemble(w.spec);
        if (!a.converged)
            fail(L, "%s: the joints cannot all be satisfied: the assembly stopped at violation %s (from %s)", fn,
                 std::to_string(a.final_violation), std::to_string(a.initial_violation));
        return a;
    } catch (const ModelError& e) {
        throw LuaFail(e.what());
    }
}

// w:urdf{ file, base = "floating"|"fixed", position, orientation, prefix, lump_fixed, assemble }
int l_urdf(lua_State* L) {
    World& w = check_world(L);
    check_table(L, 2, "urdf");
    require_building(L, w, "urdf");
    Fields f{L, 2, "urdf"};
    f.only({"file", "base", "position", "orientation", "prefix", "lump_fixed", "assemble", "positions", "damping",
            "velocity", "angular_velocity"});
    std::string file = f.string("file", "", true);
    f.who = "urdf '" + file + "'";
    if (!file.empty() && file[0] != '/') {
        const std::string dir = caller_dir(L);
        if (!dir.empty() && access((dir + "/" + file).c_str(), R_OK) == 0) file = dir + "/" + file;
    }
    urdf::Options opt;
    const std::string base = f.string("base", "floating");
    if (base != "floating" && base != "fixed") fail(L, "%s: field 'base' must be \"floating\" or \"fixed\", got \"%s\"", f.who, base);
    opt.fixed_base = base == "fixed";
    if (auto p = f.vec3("position")) opt.position = *p;
    lua_getfield(L, 2, "orientation");
    if (!lua_isnil(L, -1)) opt.orientation = read_orientation(L, -1, f.who);
    lua_pop(L, 1);
    opt.prefix = f.string("prefix", "");
    opt.lump_fixed = f.boolean("lump_fixed", true);
    opt.damping = f.number("damping", 0);
    if (auto v = f.vec3("velocity")) opt.velocity = *v;
    if (auto v = f.vec3("angular_velocity")) opt.angular_velocity = *v;
    if (opt.damping < 0) fail(L, "%s: field 'damping' must be non-negative", f.who);
    const bool do_assemble = f.boolean("assemble", true);
    lua_getfield(L, 2, "positions");
    if (!lua_isnil(L, -1)) {
        if (!lua_istable(L, -1)) f.bad("positions", "a table of joint name = position");
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {
            if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TNUMBER)
                fail(L, "%s: field 'positions' must map joint names to numbers", f.who);
            opt.positions[lua_tostring(L, -2)] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    // Import into a copy: a failed import leaves the world unchanged.
    Spec trial = w.spec;
    urdf::Report rep;
    try {
        rep = urdf::import(trial, file, opt);
    } catch (const ModelError& e) {
        throw LuaFail(e.what());
    }
    for (const BodySpec& b : trial.bodies)
        for (const BodySpec& o : w.spec.bodies)
            if (&b - trial.bodies.data() >= static_cast<long>(w.spec.bodies.size()) && o.name == b.name)
                fail(L, "%s: body '%s' already exists (use a different 'prefix')", f.who, b.name);
    w.spec = trial;
    AssemblyReport asm_rep;
    if (do_assemble) asm_rep = assemble_world(L, w, "urdf");
    if (context(L)->options.print_reports) std::printf("%s", rep.to_text().c_str());
    for (const std::string& warn : rep.warnings) w.import_warnings.push_back(rep.file + ": " + warn);
    // The result table: bodies and joints by URDF name, frames of every link, the report.
    lua_createtable(L, 0, 8);
    lua_newtable(L);
    for (const auto& e : rep.links) {
        const auto fr = rep.frames.find(opt.prefix + e.name);
        if (fr == rep.frames.end() || fr->second.body == "world") continue;
        if (std::find(rep.bodies.begin(), rep.bodies.end(), opt.prefix + e.name) == rep.bodies.end()) continue;
        push_handle(L, "body", opt.prefix + e.name);
        lua_setfield(L, -2, e.name.c_str());
    }
    lua_setfield(L, -2, "bodies");
    lua_newtable(L);
    for (const std::string& jn : rep.joint_names) {
        push_handle(L, "joint", jn);
        lua_setfield(L, -2, jn.substr(opt.prefix.size()).c_str());
    }
    lua_setfield(L, -2, "joints");
    lua_newtable(L);
    for (const auto& kv : rep.frames) {
        lua_createtable(L, 0, 3);
        lua_pushstring(L, kv.second.body.c_str());
        lua_setfield(L, -2, "body");
        push_vec3(L, kv.second.offset.x);
        lua_setfield(L, -2, "position");
        const Quat q = kv.second.offset.q;
        lua_createtable(L, 4, 0);
        const double qv[4] = {q.w, q.x, q.y, q.z};
        for (int i = 0; i < 4; ++i) lua_pushnumber(L, qv[i]), lua_rawseti(L, -2, i + 1);
        lua_setfield(L, -2, "orientation");
        lua_setfield(L, -2, kv.first.substr(opt.prefix.size()).c_str());
    }
    lua_setfield(L, -2, "frames");
    lua_pushstring(L, rep.to_text().c_str());
    lua_setfield(L, -2, "report");
    push_strings(L, rep.warnings);
    lua_setfield(L, -2, "warnings");
    push_strings(L, rep.ignored);
    lua_setfield(L, -2, "ignored");
    lua_pushnumber(L, rep.imported_mass);
    lua_setfield(L, -2, "mass");
    lua_pushnumber(L, rep.file_mass);
    lua_setfield(L, -2, "file_mass");
    lua_pushnumber(L, rep.world_mass);
    lua_setfield(L, -2, "world_mass");
    lua_pushnumber(L, rep.regularised_mass);
    lua_setfield(L, -2, "regularised_mass");
    lua_pushinteger(L, static_cast<lua_Integer>(rep.bodies.size()));
    lua_setfield(L, -2, "nbodies");
    lua_pushinteger(L, static_cast<lua_Integer>(rep.joint_names.size()));
    lua_setfield(L, -2, "njoints");
    push_assembly(L, asm_rep);
    lua_setfield(L, -2, "assembly");
    return 1;
}

int l_assemble(lua_State* L) {
    World& w = check_world(L);
    require_building(L, w, "assemble");
    push_assembly(L, assemble_world(L, w, "assemble"));
    return 1;
}

// ---- callbacks and outputs ------------------------------------------------------------------

int l_on_step(lua_State* L) {
    World& w = check_world(L);
    if (!lua_isfunction(L, 2)) fail(L, "on_step: expected a function(w) called before every step, got %s", type_of(L, 2));
    if (w.on_step != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, w.on_step);
    lua_pushvalue(L, 2);
    w.on_step = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

bool parse_channel(const std::string& text, Channel& c) {
    static const std::pair<const char*, Channel::Kind> globals[] = {
        {"time", Channel::Kind::time},         {"energy", Channel::Kind::energy},
        {"kinetic", Channel::Kind::kinetic},   {"potential", Channel::Kind::potential},
        {"momentum", Channel::Kind::momentum}, {"angular_momentum", Channel::Kind::angular_momentum},
        {"violation", Channel::Kind::violation}, {"newton", Channel::Kind::newton},
        {"residual", Channel::Kind::residual}, {"substeps", Channel::Kind::substeps}};
    static const std::pair<const char*, Channel::Kind> per[] = {
        {"position", Channel::Kind::position}, {"orientation", Channel::Kind::orientation},
        {"velocity", Channel::Kind::velocity}, {"angular_velocity", Channel::Kind::angular_velocity},
        {"coord", Channel::Kind::coord},       {"rate", Channel::Kind::rate}};
    c.text = text;
    for (const auto& g : globals)
        if (text == g.first) {
            c.kind = g.second;
            return true;
        }
    const std::size_t dot = text.rfind('.');
    if (dot == std::string::npos || dot == 0) return false;
    const std::string what = text.substr(dot + 1);
    for (const auto& p : per)
        if (what == p.first) {
            c.kind = p.second;
            c.element = text.substr(0, dot);
            return true;
        }
    return false;
}

int l_output(lua_State* L) {
    World& w = check_world(L);
    check_table(L, 2, "output");
    require_building(L, w, "output");
    Fields f{L, 2, "output"};
    f.only({"file", "every", "channels", "callback"});
    Output o;
    o.origin = where(L);
    o.file = f.string("file", "");
    o.every = static_cast<int>(f.integer("every", 1, 1));
    lua_getfield(L, 2, "callback");
    if (!lua_isnil(L, -1)) {
        if (!lua_isfunction(L, -1)) f.bad("callback", "a function(w)");
        o.callback = luaL_ref(L, LUA_REGISTRYINDEX);
    } else {
        lua_pop(L, 1);
    }
    lua_getfield(L, 2, "channels");
    if (!lua_isnil(L, -1)) {
        if (!lua_istable(L, -1)) f.bad("channels", "a list of channel names");
        for (lua_Integer i = 1; i <= static_cast<lua_Integer>(lua_rawlen(L, -1)); ++i) {
            lua_rawgeti(L, -1, i);
            if (lua_type(L, -1) != LUA_TSTRING) f.bad("channels", "a list of channel names");
            Channel c;
            const std::string text = lua_tostring(L, -1);
            if (!parse_channel(text, c))
                fail(L, "output: unknown channel '%s' (channels: time, energy, kinetic, potential, momentum, "
                        "angular_momentum, violation, newton, residual, substeps, and <body>.position, "
                        "<body>.orientation, <body>.velocity, <body>.angular_velocity, <joint>.coord, <joint>.rate)",
                     text);
            o.channels.push_back(c);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    if (o.file.empty() && o.callback == LUA_NOREF) fail(L, "output: give a 'file' (CSV), a 'callback', or both");
    if (!o.file.empty() && o.channels.empty()) fail(L, "output: field 'channels' is required with 'file'");
    w.outputs.push_back(o);
    return 0;
}

// ---- compile, step, run ---------------------------------------------------------------------

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void write_header(Output& o, const Model& m) {
    std::string h;
    auto col = [&](const std::string& s) { h += (h.empty() ? "" : ",") + s; };
    for (const Channel& c : o.channels) {
        switch (c.kind) {
            case Channel::Kind::momentum:
            case Channel::Kind::angular_momentum:
            case Channel::Kind::position:
            case Channel::Kind::velocity:
            case Channel::Kind::angular_velocity:
                for (const char* s : {"x", "y", "z"}) col(c.text + "." + s);
                break;
            case Channel::Kind::orientation:
                for (const char* s : {"w", "x", "y", "z"}) col(c.text + "." + s);
                break;
            case Channel::Kind::coord:
            case Channel::Kind::rate: {
                const JointInfo& j = m.joints[c.index];
                if (j.dofs == 1) col(c.text);
                else
                    for (int k = 0; k < j.dofs; ++k) col(c.text + "." + j.impl->coordinate_name(k));
                break;
            }
            default: col(c.text);
        }
    }
    std::fprintf(o.fp, "%s\n", h.c_str());
}

void write_row(Output& o, const Model& m, const Data& d, const Monitors& mon) {
    bool first = true;
    auto put = [&](double v) {
        std::fprintf(o.fp, first ? "%.17g" : ",%.17g", v);
        first = false;
    };
    auto put3 = [&](const Vec3& v) { put(v.x), put(v.y), put(v.z); };
    for (const Channel& c : o.channels) {
        switch (c.kind) {
            case Channel::Kind::time: put(d.time); break;
            case Channel::Kind::energy: put(mon.total); break;
            case Channel::Kind::kinetic: put(mon.kinetic); break;
            case Channel::Kind::potential: put(mon.potential); break;
            case Channel::Kind::momentum: put3(mon.momentum); break;
            case Channel::Kind::angular_momentum: put3(mon.angular_momentum); break;
            case Channel::Kind::violation: put(mon.max_violation); break;
            case Channel::Kind::newton: put(d.last.iterations); break;
            case Channel::Kind::residual: put(d.last.residual); break;
            case Channel::Kind::substeps: put(d.last.substeps); break;
            case Channel::Kind::position: put3(d.pose[c.index].x); break;
            case Channel::Kind::orientation: {
                const Quat& q = d.pose[c.index].q;
                put(q.w), put(q.x), put(q.y), put(q.z);
                break;
            }
            case Channel::Kind::velocity: put3(d.twist[c.index].v); break;
            case Channel::Kind::angular_velocity: put3(rotate(d.pose[c.index].q, d.twist[c.index].w)); break;
            case Channel::Kind::coord:
            case Channel::Kind::rate: {
                const JointInfo& j = m.joints[c.index];
                const std::vector<double>& src = c.kind == Channel::Kind::coord ? d.coord : d.rate;
                for (int k = 0; k < j.dofs; ++k) put(src[j.dof_offset + k]);
                break;
            }
        }
    }
    std::fputc('\n', o.fp);
}

// `known`: the monitors of the current state if the caller has them (else computed when needed).
void sample_outputs(lua_State* L, int world_idx, World& w, bool force, const Monitors* known) {
    const Model& m = *w.model;
    const Data& d = *w.data;
    bool have_mon = known != nullptr;
    Monitors mon = known ? *known : Monitors{};
    for (Output& o : w.outputs) {
        if (!force && d.step % o.every != 0) continue;
        if (o.fp) {
            if (!have_mon) mon = monitors(m, d), have_mon = true;
            write_row(o, m, d, mon);
        }
        if (o.callback != LUA_NOREF) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, o.callback);
            lua_pushvalue(L, world_idx);
            call(L, 1);
        }
    }
}

}  // namespace

void ensure_compiled(lua_State* L, World& w) {
    (void)L;
    if (w.model) return;
    try {
        w.model = compile(w.spec);
    } catch (const ModelError& e) {
        throw LuaFail(e.what());
    }
    w.data = std::make_unique<Data>(w.model);
    const Model& m = *w.model;
    // Resolve output channels and open the files (written under a temporary name).
    for (Output& o : w.outputs) {
        for (Channel& c : o.channels) {
            if (c.element.empty()) continue;
            const bool joint_channel = c.kind == Channel::Kind::coord || c.kind == Channel::Kind::rate;
            c.index = joint_channel ? m.joint_index(c.element) : m.body_index(c.element);
            if (c.index < 0)
                throw LuaFail(o.origin.str() + ": output: channel '" + c.text + "': no " +
                              (joint_channel ? "joint" : "body") + " named '" + c.element + "'");
        }
        if (!o.file.empty()) {
            o.tmp = o.file + ".part";
            o.fp = std::fopen(o.tmp.c_str(), "w");
            if (!o.fp) throw LuaFail(o.origin.str() + ": output: cannot write '" + o.tmp + "'");
            write_header(o, m);
        }
    }
    const Monitors mon = monitors(m, *w.data);
    w.e0 = w.e_final = mon.total;
    w.v_max = mon.max_violation;
    if (mon.worst_joint >= 0) w.worst_joint = m.joints[mon.worst_joint].name;
}

bool run_steps(lua_State* L, int world_idx, World& w, long long steps, bool progress) {
    ensure_compiled(L, w);
    const Model& m = *w.model;
    Data& d = *w.data;
    if (d.step == 0) sample_outputs(L, world_idx, w, true, nullptr);
    const double t_start = now_s();
    double last_print = t_start;
    bool printed = false;
    const double t_end = d.time + steps * m.options.dt;
    const bool tty = progress && isatty(2);
    for (long long k = 0; k < steps; ++k) {
        if (w.on_step != LUA_NOREF) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, w.on_step);
            lua_pushvalue(L, world_idx);
            call(L, 1);
        }
        const double t0 = now_s();
        const StepStatus st = step(m, d);
        w.wall += now_s() - t0;
        if (st != StepStatus::ok) {
            w.failed = true;
            w.failure = d.warnings.empty() ? status_name(st) : d.warnings.back().message;
            break;
        }
        const Monitors mon = monitors(m, d);
        w.e_final = mon.total;
        w.e_max_dev = std::max(w.e_max_dev, std::fabs(mon.total - w.e0));
        if (mon.max_violation > w.v_max) {
            w.v_max = mon.max_violation;
            if (mon.worst_joint >= 0) w.worst_joint = m.joints[mon.worst_joint].name;
        }
        sample_outputs(L, world_idx, w, false, &mon);
        if (tty) {
            const double t = now_s();
            if (t - t_start > 2.0 && t - last_print > 0.25) {
                std::fprintf(stderr, "\rnoether: t = %.3f / %.3f s (%3.0f%%), %.1f us/step   ", d.time, t_end,
                             100.0 * (k + 1) / steps, 1e6 * w.wall / std::max<std::int64_t>(1, d.stats.steps));
                last_print = t;
                printed = true;
            }
        }
    }
    if (printed) std::fprintf(stderr, "\n");
    return !w.failed;
}

namespace {

int l_compile(lua_State* L) {
    World& w = check_world(L);
    ensure_compiled(L, w);
    const Model& m = *w.model;
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, m.nbodies());
    lua_setfield(L, -2, "bodies");
    lua_pushinteger(L, m.njoints());
    lua_setfield(L, -2, "joints");
    lua_pushinteger(L, static_cast<lua_Integer>(m.graph.loop_joints.size()));
    lua_setfield(L, -2, "loop_joints");
    lua_pushinteger(L, m.dof());
    lua_setfield(L, -2, "dof");
    lua_pushstring(L, m.solver_name.c_str());
    lua_setfield(L, -2, "solver");
    lua_pushstring(L, m.options.integrator.c_str());
    lua_setfield(L, -2, "integrator");
    return 1;
}

long long steps_for(lua_State* L, const Model& m, int idx, const char* fn) {
    if (lua_isnoneornil(L, idx)) fail(L, "%s: expected {duration = seconds} or {steps = n}", fn);
    check_table(L, idx, fn);
    Fields f{L, idx, fn};
    f.only({"duration", "steps"});
    if (f.has("steps") && f.has("duration")) fail(L, "%s: give either 'duration' or 'steps', not both", fn);
    if (f.has("steps")) return f.integer("steps", 0, 0);
    const double T = f.number("duration", 0, true);
    if (T < 0) fail(L, "%s: field 'duration' must be non-negative", fn);
    return std::llround(T / m.options.dt);
}

void push_summary(lua_State* L, const World& w) {
    const RunSummary s = summarize(w);
    lua_createtable(L, 0, 20);
    auto num = [&](const char* k, double v) {
        lua_pushnumber(L, v);
        lua_setfield(L, -2, k);
    };
    num("bodies", s.bodies);
    num("joints", s.joints);
    num("loop_joints", s.loop_joints);
    num("dof", s.dof);
    num("dt", s.dt);
    num("steps", static_cast<double>(s.steps));
    num("sim_time", s.sim_time);
    num("wall_s", s.wall_s);
    num("us_per_step", s.us_per_step);
    num("energy_initial", s.energy_initial);
    num("energy_final", s.energy_final);
    num("energy_max_abs_dev", s.energy_max_abs_dev);
    if (s.energy_rel_defined) num("energy_max_rel_dev", s.energy_max_rel_dev);
    num("max_violation", s.max_violation);
    num("newton_mean", s.newton_mean);
    num("newton_max", s.newton_max);
    num("subdivided_steps", static_cast<double>(s.subdivided_steps));
    num("failed_steps", static_cast<double>(s.failed_steps));
    lua_pushboolean(L, s.failed);
    lua_setfield(L, -2, "failed");
    lua_pushstring(L, s.integrator.c_str());
    lua_setfield(L, -2, "integrator");
    lua_pushstring(L, s.solver.c_str());
    lua_setfield(L, -2, "solver");
    lua_createtable(L, static_cast<int>(s.warnings.size()), 0);
    for (std::size_t i = 0; i < s.warnings.size(); ++i) {
        lua_pushstring(L, s.warnings[i].c_str());
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    lua_setfield(L, -2, "warnings");
}

int l_run(lua_State* L) {
    World& w = check_world(L);
    ensure_compiled(L, w);
    const long long n = steps_for(L, *w.model, 2, "run");
    Context* ctx = context(L);
    if (!ctx->options.check_only) run_steps(L, 1, w, n, ctx->options.progress);
    push_summary(L, w);
    return 1;
}

int l_step(lua_State* L) {
    World& w = check_world(L);
    ensure_compiled(L, w);
    const long long n = luaL_optinteger(L, 2, 1);
    if (n < 0) fail(L, "step: the number of steps must be non-negative, got %s", std::to_string(n));
    if (context(L)->options.check_only) {
        lua_pushboolean(L, 1);
        return 1;
    }
    const bool ok = run_steps(L, 1, w, n, false);
    lua_pushboolean(L, ok);
    if (ok) return 1;
    lua_pushstring(L, w.failure.c_str());
    return 2;
}

int l_summary(lua_State* L) {
    World& w = check_world(L);
    ensure_compiled(L, w);
    push_summary(L, w);
    return 1;
}

int l_finish(lua_State* L) {
    World& w = check_world(L);
    std::vector<std::string> notes;
    finish_outputs(w, &notes);
    lua_createtable(L, static_cast<int>(notes.size()), 0);
    for (std::size_t i = 0; i < notes.size(); ++i) {
        lua_pushstring(L, notes[i].c_str());
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    return 1;
}

// ---- state access ---------------------------------------------------------------------------

int body_arg(lua_State* L, World& w, int idx, const char* fn) {
    ensure_compiled(L, w);
    const std::string name = element_name(L, idx, fn, "body");
    const int b = w.model->body_index(name);
    if (b < 0) fail(L, "%s: no body named '%s'", fn, name);
    return b;
}

int joint_arg(lua_State* L, World& w, int idx, const char* fn) {
    ensure_compiled(L, w);
    std::string name;
    if (lua_type(L, idx) == LUA_TSTRING) name = lua_tostring(L, idx);
    else if (lua_istable(L, idx)) {
        lua_getfield(L, idx, "name");
        if (lua_type(L, -1) == LUA_TSTRING) name = lua_tostring(L, -1);
        lua_pop(L, 1);
    }
    if (name.empty()) fail(L, "%s: expected a joint (or its name), got %s", fn, type_of(L, idx));
    const int j = w.model->joint_index(name);
    if (j < 0) fail(L, "%s: no joint named '%s'", fn, name);
    return j;
}

int l_time(lua_State* L) {
    World& w = check_world(L);
    lua_pushnumber(L, w.data ? w.data->time : 0.0);
    return 1;
}

int l_position(lua_State* L) {
    World& w = check_world(L);
    push_vec3(L, w.data->pose[body_arg(L, w, 2, "position")].x);
    return 1;
}

int l_orientation(lua_State* L) {
    World& w = check_world(L);
    const Quat q = w.data->pose[body_arg(L, w, 2, "orientation")].q;
    lua_createtable(L, 4, 0);
    const double v[4] = {q.w, q.x, q.y, q.z};
    for (int i = 0; i < 4; ++i) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

int l_velocity(lua_State* L) {
    World& w = check_world(L);
    push_vec3(L, w.data->twist[body_arg(L, w, 2, "velocity")].v);
    return 1;
}

int l_angular_velocity(lua_State* L) {
    World& w = check_world(L);
    const int b = body_arg(L, w, 2, "angular_velocity");
    const char* frame = luaL_optstring(L, 3, "world");
    const Vec3 wb = w.data->twist[b].w;
    if (std::strcmp(frame, "body") == 0) push_vec3(L, wb);
    else if (std::strcmp(frame, "world") == 0) push_vec3(L, rotate(w.data->pose[b].q, wb));
    else fail(L, "angular_velocity: frame must be \"world\" or \"body\", got \"%s\"", frame);
    return 1;
}

int push_dofs(lua_State* L, const World& w, int j, const std::vector<double>& src) {
    const JointInfo& ji = w.model->joints[j];
    if (ji.dofs == 1) {
        lua_pushnumber(L, src[ji.dof_offset]);
        return 1;
    }
    lua_createtable(L, ji.dofs, 0);
    for (int k = 0; k < ji.dofs; ++k) {
        lua_pushnumber(L, src[ji.dof_offset + k]);
        lua_rawseti(L, -2, k + 1);
    }
    return 1;
}

int l_coord(lua_State* L) {
    World& w = check_world(L);
    return push_dofs(L, w, joint_arg(L, w, 2, "coord"), w.data->coord);
}

int l_rate(lua_State* L) {
    World& w = check_world(L);
    return push_dofs(L, w, joint_arg(L, w, 2, "rate"), w.data->rate);
}

int l_set_actuation(lua_State* L) {
    World& w = check_world(L);
    const int j = joint_arg(L, w, 2, "set_actuation");
    const JointInfo& ji = w.model->joints[j];
    std::vector<double> u;
    if (lua_type(L, 3) == LUA_TNUMBER) u.push_back(lua_tonumber(L, 3));
    else if (lua_istable(L, 3))
        for (lua_Integer i = 1; i <= static_cast<lua_Integer>(lua_rawlen(L, 3)); ++i) {
            lua_rawgeti(L, 3, i);
            const bool isnum = lua_type(L, -1) == LUA_TNUMBER;
            const double v = lua_tonumber(L, -1);
            lua_pop(L, 1);
            if (!isnum) fail(L, "set_actuation: joint '%s': expected a number or a list of numbers", ji.name);
            u.push_back(v);
        }
    else fail(L, "set_actuation: joint '%s': expected a number or a list of numbers, got %s", ji.name, type_of(L, 3));
    if (static_cast<int>(u.size()) != ji.dofs)
        fail(L, "set_actuation: joint '%s' has %s degrees of freedom, got %s values", ji.name, std::to_string(ji.dofs),
             std::to_string(u.size()));
    for (int k = 0; k < ji.dofs; ++k) {
        if (!std::isfinite(u[k])) fail(L, "set_actuation: joint '%s': values must be finite", ji.name);
        w.data->actuation[ji.dof_offset + k] = u[k];
    }
    return 0;
}

Vec3 vec_arg(lua_State* L, int idx, const char* fn, const char* what) {
    Vec3 v;
    if (!is_vec3(L, idx, &v)) fail(L, "%s: %s must be a 3-vector, got %s", fn, what, type_of(L, idx));
    if (!isfinite(v)) fail(L, "%s: %s must be finite", fn, what);
    return v;
}

// w:set_force(body, force [, point]): world force for the coming steps, at the CoM or at a
// point given in the body frame (which also sets the matching torque about the CoM).
int l_set_force(lua_State* L) {
    World& w = check_world(L);
    const int b = body_arg(L, w, 2, "set_force");
    const Vec3 F = vec_arg(L, 3, "set_force", "the force");
    w.data->applied_force[b] = F;
    if (!lua_isnoneornil(L, 4)) {
        const Vec3 p = vec_arg(L, 4, "set_force", "the point");
        w.data->applied_torque[b] = cross(rotate(w.data->pose[b].q, p), F);
    }
    return 0;
}

int l_set_torque(lua_State* L) {
    World& w = check_world(L);
    const int b = body_arg(L, w, 2, "set_torque");
    w.data->applied_torque[b] = vec_arg(L, 3, "set_torque", "the torque");
    return 0;
}

int l_monitors(lua_State* L) {
    World& w = check_world(L);
    ensure_compiled(L, w);
    const Monitors mon = monitors(*w.model, *w.data);
    lua_createtable(L, 0, 8);
    lua_pushnumber(L, w.data->time);
    lua_setfield(L, -2, "time");
    lua_pushnumber(L, mon.kinetic);
    lua_setfield(L, -2, "kinetic");
    lua_pushnumber(L, mon.potential);
    lua_setfield(L, -2, "potential");
    lua_pushnumber(L, mon.total);
    lua_setfield(L, -2, "energy");
    push_vec3(L, mon.momentum);
    lua_setfield(L, -2, "momentum");
    push_vec3(L, mon.angular_momentum);
    lua_setfield(L, -2, "angular_momentum");
    lua_pushnumber(L, mon.max_violation);
    lua_setfield(L, -2, "violation");
    lua_pushinteger(L, w.data->last.iterations);
    lua_setfield(L, -2, "newton");
    return 1;
}

int l_save(lua_State* L) {
    World& w = check_world(L);
    ensure_compiled(L, w);
    const std::string s = w.data->save();
    lua_pushlstring(L, s.data(), s.size());
    return 1;
}

int l_restore(lua_State* L) {
    World& w = check_world(L);
    ensure_compiled(L, w);
    std::size_t n = 0;
    const char* s = luaL_checklstring(L, 2, &n);
    try {
        w.data->restore(std::string(s, n));
    } catch (const Error& e) {
        fail(L, "restore: %s", e.what());
    }
    return 0;
}

int l_save_file(lua_State* L) {
    World& w = check_world(L);
    ensure_compiled(L, w);
    try {
        w.data->save_file(luaL_checkstring(L, 2));
    } catch (const Error& e) {
        fail(L, "save_file: %s", e.what());
    }
    return 0;
}

int l_restore_file(lua_State* L) {
    World& w = check_world(L);
    ensure_compiled(L, w);
    try {
        w.data->restore_file(luaL_checkstring(L, 2));
    } catch (const Error& e) {
        fail(L, "restore_file: %s", e.what());
    }
    return 0;
}

// ---- module functions -----------------------------------------------------------------------

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
        lua_getfield(L, 1, key.c_str());
        const int t = lua_type(L, -1);
        lua_pop(L, 1);
        if (t == LUA_TNIL) {
            if (key == "duration") continue;  // always allowed: the host uses it for returned worlds
            std::string names;
            lua_pushnil(L);
            while (lua_next(L, 1) != 0) {
                lua_pop(L, 1);
                if (lua_type(L, -1) == LUA_TSTRING) names += (names.empty() ? "" : ", ") + std::string(lua_tostring(L, -1));
            }
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
    const double m = luaL_checknumber(L, 1), x = luaL_checknumber(L, 2), y = luaL_checknumber(L, 3),
                 z = luaL_checknumber(L, 4);
    push_vec3(L, {m * (y * y + z * z) / 12, m * (x * x + z * z) / 12, m * (x * x + y * y) / 12});
    return 1;
}
int l_inertia_cylinder(lua_State* L) {  // axis along z
    const double m = luaL_checknumber(L, 1), r = luaL_checknumber(L, 2), h = luaL_checknumber(L, 3);
    const double t = m * (3 * r * r + h * h) / 12;
    push_vec3(L, {t, t, m * r * r / 2});
    return 1;
}
int l_inertia_sphere(lua_State* L) {
    const double m = luaL_checknumber(L, 1), r = luaL_checknumber(L, 2);
    const double t = 2 * m * r * r / 5;
    push_vec3(L, {t, t, t});
    return 1;
}
int l_inertia_rod(lua_State* L) {  // thin rod along x, with a small radius for the axial moment
    const double m = luaL_checknumber(L, 1), l = luaL_checknumber(L, 2), r = luaL_optnumber(L, 3, 0.01 * l);
    const double t = m * (3 * r * r + l * l) / 12;
    push_vec3(L, {m * r * r / 2, t, t});
    return 1;
}

int l_quat_rpy(lua_State* L) {
    const Quat q = quat_from_rpy(luaL_checknumber(L, 1), luaL_checknumber(L, 2), luaL_checknumber(L, 3));
    lua_createtable(L, 4, 0);
    const double v[4] = {q.w, q.x, q.y, q.z};
    for (int i = 0; i < 4; ++i) lua_pushnumber(L, v[i]), lua_rawseti(L, -2, i + 1);
    return 1;
}
int l_quat_axis_angle(lua_State* L) {
    const Vec3 a = vec_arg(L, 1, "noether.quat.axis_angle", "the axis");
    if (!(norm(a) > 0)) fail(L, "noether.quat.axis_angle: the axis must be nonzero");
    const Quat q = quat_from_axis_angle(a, luaL_checknumber(L, 2));
    lua_createtable(L, 4, 0);
    const double v[4] = {q.w, q.x, q.y, q.z};
    for (int i = 0; i < 4; ++i) lua_pushnumber(L, v[i]), lua_rawseti(L, -2, i + 1);
    return 1;
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

int luaopen_noether(lua_State* L) {
    static const luaL_Reg methods[] = {
        {"body", guard<l_body>},           {"joint", guard<l_joint>},
        {"force", guard<l_force>},         {"on_step", guard<l_on_step>},
        {"output", guard<l_output>},       {"compile", guard<l_compile>},
        {"run", guard<l_run>},             {"step", guard<l_step>},
        {"summary", guard<l_summary>},     {"finish", guard<l_finish>},
        {"time", guard<l_time>},           {"position", guard<l_position>},
        {"orientation", guard<l_orientation>}, {"velocity", guard<l_velocity>},
        {"angular_velocity", guard<l_angular_velocity>}, {"coord", guard<l_coord>},
        {"rate", guard<l_rate>},           {"set_actuation", guard<l_set_actuation>},
        {"set_force", guard<l_set_force>}, {"set_torque", guard<l_set_torque>},
        {"monitors", guard<l_monitors>},   {"save", guard<l_save>},
        {"restore", guard<l_restore>},     {"save_file", guard<l_save_file>},
        {"restore_file", guard<l_restore_file>}, {"urdf", guard<l_urdf>},
        {"assemble", guard<l_assemble>}, {nullptr, nullptr}};
    if (luaL_newmetatable(L, kWorldMeta)) {
        lua_pushcfunction(L, guard<l_world_index>);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, l_world_gc);
        lua_setfield(L, -2, "__gc");
        luaL_newlib(L, methods);
        lua_setfield(L, -2, "methods");
        lua_pushstring(L, "noether.World");
        lua_setfield(L, -2, "__name");
    }
    lua_pop(L, 1);
    static const luaL_Reg module[] = {{"world", guard<l_world>}, {"params", guard<l_params>}, {"plugins", guard<l_plugins>}, {nullptr, nullptr}};
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

int l_context_gc(lua_State* L) {
    Context** p = static_cast<Context**>(lua_touserdata(L, 1));
    delete *p;
    *p = nullptr;
    return 0;
}

}  // namespace

World* to_world(lua_State* L, int idx) {
    World** p = static_cast<World**>(luaL_testudata(L, idx, kWorldMeta));
    return p ? *p : nullptr;
}

Context* context(lua_State* L) {
    lua_rawgetp(L, LUA_REGISTRYINDEX, &kContextKey);
    Context** p = static_cast<Context**>(lua_touserdata(L, -1));
    lua_pop(L, 1);
    if (!p || !*p) luaL_error(L, "the noether module was not opened with noether::lua::open");
    return *p;
}

void open(lua_State* L, const ScriptOptions& options) {
    Context** p = static_cast<Context**>(lua_newuserdatauv(L, sizeof(Context*), 0));
    *p = new Context{options, {}, {}};
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, l_context_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kContextKey);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_noether);
    lua_setfield(L, -2, "noether");
    lua_pop(L, 1);
    // require() also looks in the host's extra directories.
    if (!options.lua_path.empty()) {
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
