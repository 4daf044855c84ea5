// The Lua module: argument checking shared by every binding function. A bad argument raises an
// error naming the script line, the function, the element, the field and what was expected:
//   fourbar.lua:12: joint 'crank': field 'axis' must be a 3-vector, got string
#include <cmath>
#include <cstdio>

#include "world.hpp"

namespace noether {
namespace lua {

// ---- argument checking ----------------------------------------------------------------------

// Raise "file:line: <message>" at the script line that called the current function.
void fail(lua_State* L, const char* fmt, const std::string& a, const std::string& b, const std::string& c,
          const std::string& d) {
    luaL_where(L, 1);
    std::string msg = lua_tostring(L, -1);
    lua_pop(L, 1);
    char buf[4096];
    std::snprintf(buf, sizeof buf, fmt, a.c_str(), b.c_str(), c.c_str(), d.c_str());
    throw LuaFail(msg + buf);
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

std::string g_str(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string exact_str(double v) {
    char buf[40];
    for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}

std::string member_path(const Context& ctx, const std::string& path) {
    if (ctx.options.member < 0) return path;
    const std::size_t at = path.find("{member}");
    if (at == std::string::npos) return "";
    std::string out = path;
    out.replace(at, 8, std::to_string(ctx.options.member));
    return out;
}

bool is_vec3(lua_State* L, int idx, Vec3* out) {
    if (!lua_istable(L, idx) || lua_rawlen(L, idx) != 3) return false;
    for (int i = 0; i < 3; ++i) {
        lua_rawgeti(L, idx, i + 1);
        const bool isnum = lua_type(L, -1) == LUA_TNUMBER;  // strictly a number, not a numeric string
        const double v = lua_tonumber(L, -1);
        lua_pop(L, 1);
        if (!isnum) return false;
        (*out)[i] = v;
    }
    return true;
}

int raw_getfield(lua_State* L, int idx, const char* key) {
    idx = lua_absindex(L, idx);
    lua_pushstring(L, key);
    return lua_rawget(L, idx);
}

double arg_number(lua_State* L, int idx, const char* fn, const char* what) {
    if (lua_type(L, idx) != LUA_TNUMBER) fail(L, "%s: %s must be a number, got %s", fn, what, type_of(L, idx));
    const double v = lua_tonumber(L, idx);
    if (!std::isfinite(v)) fail(L, "%s: %s must be finite", fn, what);
    return v;
}

double opt_number(lua_State* L, int idx, double fallback, const char* fn, const char* what) {
    return lua_isnoneornil(L, idx) ? fallback : arg_number(L, idx, fn, what);
}

std::string arg_string(lua_State* L, int idx, const char* fn, const char* what) {
    if (lua_type(L, idx) != LUA_TSTRING) fail(L, "%s: %s must be a string, got %s", fn, what, type_of(L, idx));
    std::size_t n = 0;
    const char* p = lua_tolstring(L, idx, &n);
    return std::string(p, n);
}

long long opt_integer(lua_State* L, int idx, long long fallback, const char* fn, const char* what) {
    if (lua_isnoneornil(L, idx)) return fallback;
    int ok = 0;
    const lua_Integer v = lua_tointegerx(L, idx, &ok);
    if (lua_type(L, idx) != LUA_TNUMBER || !ok) fail(L, "%s: %s must be an integer, got %s", fn, what, type_of(L, idx));
    return v;
}


bool Fields::has(const char* key) {
    raw_getfield(L, t, key);
    const bool r = !lua_isnil(L, -1);
    lua_pop(L, 1);
    return r;
}
void Fields::bad(const char* key, const char* expected) {
    raw_getfield(L, t, key);
    const std::string got = type_of(L, -1);
    lua_pop(L, 1);
    fail(L, "%s: field '%s' must be %s, got %s", who, key, expected, got);
}
double Fields::number(const char* key, double fallback, bool required) {
    raw_getfield(L, t, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        if (required) fail(L, "%s: field '%s' is required (a number)", who, key);
        return fallback;
    }
    const bool isnum = lua_type(L, -1) == LUA_TNUMBER;  // a numeric string is not a number
    const double v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (!isnum) bad(key, "a number");
    if (!std::isfinite(v)) fail(L, "%s: field '%s' must be finite", who, key);
    return v;
}
long long Fields::integer(const char* key, long long fallback, long long min, long long max) {
    raw_getfield(L, t, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return fallback;
    }
    int ok = 0;
    const lua_Integer v = lua_tointegerx(L, -1, &ok);
    const bool isnum = lua_type(L, -1) == LUA_TNUMBER;
    char given[64];
    std::snprintf(given, sizeof given, "%.17g", lua_tonumber(L, -1));
    lua_pop(L, 1);
    if (!isnum) bad(key, "an integer");
    if (!ok) fail(L, "%s: field '%s' must be an integer, got %s", who, key, given);
    if (v < min) fail(L, "%s: field '%s' must be at least %s, got %s", who, key, std::to_string(min), std::to_string(v));
    if (v > max) fail(L, "%s: field '%s' must be at most %s, got %s", who, key, std::to_string(max), std::to_string(v));
    return v;
}
std::string Fields::string(const char* key, const std::string& fallback, bool required) {
    raw_getfield(L, t, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        if (required) fail(L, "%s: field '%s' is required (a string)", who, key);
        return fallback;
    }
    if (lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 1);
        bad(key, "a string");
    }
    check_length(L, -1, who, key, "field");
    std::string s = lua_tostring(L, -1);
    lua_pop(L, 1);
    return s;
}
bool Fields::boolean(const char* key, bool fallback) {
    raw_getfield(L, t, key);
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
std::optional<Vec3> Fields::vec3(const char* key) {
    raw_getfield(L, t, key);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return std::nullopt;
    }
    Vec3 v;
    const bool ok = is_vec3(L, -1, &v);
    lua_pop(L, 1);
    if (!ok) bad(key, "a 3-vector");
    if (!isfinite(v)) fail(L, "%s: field '%s' must be finite", who, key);
    if (!std::isfinite(dot(v, v))) fail(L, "%s: field '%s' is too large (its length overflows)", who, key);
    return v;
}
// A number or a list of numbers.
std::vector<double> Fields::numbers(const char* key) {
    std::vector<double> out;
    raw_getfield(L, t, key);
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
void Fields::only(const std::vector<std::string>& allowed) {
    only(allowed, [](const std::string&) { return false; });
}

std::vector<std::string> sorted_keys(lua_State* L, int t, const std::string& who) {
    std::vector<std::string> keys;
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            const std::string k = type_of(L, -1);
            lua_pop(L, 1);
            fail(L, "%s: keys are parameter names, got a %s key", who, k);
        }
        keys.push_back(lua_tostring(L, -1));
    }
    std::sort(keys.begin(), keys.end());
    return keys;
}

void check_table(lua_State* L, int idx, const char* fn) {
    if (!lua_istable(L, idx)) fail(L, "%s: expected a table of fields, got %s", fn, type_of(L, idx));
}

World& check_world(lua_State* L, int idx) {
    World** p = static_cast<World**>(luaL_testudata(L, idx, kWorldMeta));
    if (!p) fail(L, "expected a world (call methods as w:name(...)), got %s", type_of(L, idx));
    if (!*p) fail(L, "this world was already collected (its __gc ran); it cannot be used any more");
    return **p;
}

void require_building(lua_State* L, World& w, const char* fn) {
    if (w.model)
        fail(L, "%s: the world is already compiled (it has stepped or been checked); build every element before "
                "the first step",
             fn);
}

// A body or joint named by a handle table {name=...} or a string; "world" for w.world.
void check_length(lua_State* L, int idx, const std::string& who, const char* field, const char* what) {
    const std::size_t len = lua_rawlen(L, idx);
    if (len > kMaxStringField)
        fail(L, "%s: field '%s' is a string of %s bytes; the most a %s", who, field, std::to_string(len),
             std::string(what) + " takes is " + std::to_string(kMaxStringField));
}

void sandbox_check_bodies(lua_State* L, long long more) {
    Context* ctx = context(L);
    if (!ctx->options.sandbox) return;
    const long long have = ctx->bodies_made;  // a running count: no scan of every world per body
    if (have + more > kSandboxBodies)
        fail(L, "sandbox: %s bodies exist and %s more would pass the script's budget of %s bodies over all its worlds",
             std::to_string(have), std::to_string(more), std::to_string(kSandboxBodies));
}

void sandbox_add_contact_points(lua_State* L, const ContactSpec* first, const ContactSpec* last) {
    long long more = 0;
    for (const ContactSpec* c = first; c != last; ++c)
        more += c->type == ContactSpec::Type::box ? 8 : c->type == ContactSpec::Type::capsule ? 2 : 1;
    Context* ctx = context(L);
    if (ctx->options.sandbox && ctx->contact_points_made + more > kSandboxContactPoints)
        fail(L, "sandbox: %s contact points exist and %s more would pass the script's budget of %s over all its worlds",
             std::to_string(ctx->contact_points_made), std::to_string(more), std::to_string(kSandboxContactPoints));
    ctx->contact_points_made += more;
}

std::string element_name(lua_State* L, int idx, const std::string& who, const char* field) {
    if (lua_type(L, idx) == LUA_TSTRING) {
        check_length(L, idx, who, field, "name");
        return lua_tostring(L, idx);
    }
    if (lua_istable(L, idx)) {
        raw_getfield(L, idx, "name");
        if (lua_type(L, -1) == LUA_TSTRING) {
            check_length(L, -1, who, field, "name");
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


void push_strings(lua_State* L, const std::vector<std::string>& v) {
    lua_createtable(L, static_cast<int>(v.size()), 0);
    for (std::size_t i = 0; i < v.size(); ++i) {
        lua_pushstring(L, v[i].c_str());
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
}

Vec3 vec_arg(lua_State* L, int idx, const char* fn, const char* what) {
    Vec3 v;
    if (!is_vec3(L, idx, &v)) fail(L, "%s: %s must be a 3-vector, got %s", fn, what, type_of(L, idx));
    if (!isfinite(v) || !std::isfinite(dot(v, v))) fail(L, "%s: %s must be finite (and its length too)", fn, what);
    return v;
}

std::string lua_wording(const std::string& msg_in) {
    // The URDF importer's settings are fields of w:urdf{}.
    const std::string msg = reword_import_settings(msg_in, [](const std::string& name, const std::string& value) {
        if (name == "positions") return "w:urdf{ positions = { " + value + " = ... } }";
        if (name == "base") return "w:urdf{ base = \"" + value + "\" }";
        return "w:urdf{ " + name + " = " + value + " }";
    });
    return reword_options(msg, [](const std::string& name, const std::string& value) {
        // The world's own fields (noether.world{ ... }); every other name is an integrator option.
        static const char* const world_fields[] = {"integrator", "solver", "dt", "max_steps", "tolerance",
                                                   "max_iterations", "max_halvings", "max_substeps", "gravity"};
        for (const char* f : world_fields)
            if (name == f) return "noether.world{ " + name + " = " + value + " }";
        return "noether.world{ options = { " + name + " = " + value + " } }";
    });
}

}  // namespace lua
}  // namespace noether
