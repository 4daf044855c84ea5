// The Lua module: w:urdf{} (URDF import through libnoether_urdf) and w:assemble().
#include <unistd.h>

#include <cstring>

#include "noether/urdf.hpp"
#include "world.hpp"

namespace noether {
namespace lua {

// ---- w:urdf{} and w:assemble() ----------------------------------------------------------------

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
                 g_str(a.final_violation), g_str(a.initial_violation));
        return a;
    } catch (const ModelError& e) {
        throw LuaFail(e.what());
    }
}

// The importers' shared steps (w:urdf, w:mjcf): the file readable (outside the sandbox, with the
// working directory named for a relative path) and resolved by the sandbox's rule.
std::string import_file(lua_State* L, const std::string& file, const std::string& who, const char* what) {
    if (!context(L)->options.sandbox && access(file.c_str(), R_OK) != 0) {
        char cwd[4096];
        fail(L, "%s: cannot open the file%s", who,
             !file.empty() && file[0] == '/'
                 ? std::string()
                 : " (relative paths are relative to the working directory '" +
                       std::string(getcwd(cwd, sizeof cwd) ? cwd : "?") +
                       "'; for a file next to the script use noether.here('" + file + "'))");
    }
    return sandbox_path(L, file, false, what);
}

// The imported spec replaces the world's once its new bodies pass the sandbox's budget and no
// name collides; the world's body and contact counts grow by what was added.
void adopt_import(lua_State* L, World& w, Spec& trial, const std::string& who) {
    sandbox_check_bodies(L, static_cast<long long>(trial.bodies.size() - w.spec.bodies.size()));
    for (std::size_t i = w.spec.bodies.size(); i < trial.bodies.size(); ++i)
        if (w.body_index.find(w.spec.bodies, trial.bodies[i].name) >= 0)
            fail(L, "%s: body '%s' already exists (use a different 'prefix')", who, trial.bodies[i].name);
    context(L)->bodies_made += static_cast<long long>(trial.bodies.size() - w.spec.bodies.size());
    sandbox_add_contact_points(L, trial.contacts.data() + w.spec.contacts.size(), trial.contacts.data() + trial.contacts.size());
    w.spec = std::move(trial);
}

// One frame table { body, position, orientation = {w, x, y, z} } on the stack.
void push_frame(lua_State* L, const std::string& body, const Pose& offset) {
    lua_createtable(L, 0, 3);
    lua_pushstring(L, body.c_str());
    lua_setfield(L, -2, "body");
    push_vec3(L, offset.x);
    lua_setfield(L, -2, "position");
    const Quat q = offset.q;
    lua_createtable(L, 4, 0);
    const double qv[4] = {q.w, q.x, q.y, q.z};
    for (int i = 0; i < 4; ++i) lua_pushnumber(L, qv[i]), lua_rawseti(L, -2, i + 1);
    lua_setfield(L, -2, "orientation");
}

// The joints table: a handle per joint name added, keyed without the prefix.
void push_joint_handles(lua_State* L, const std::vector<std::string>& names, const std::string& prefix) {
    lua_newtable(L);
    for (const std::string& jn : names) {
        push_handle(L, "joint", jn);
        lua_setfield(L, -2, jn.substr(prefix.size()).c_str());
    }
}

// w:urdf{ file, base = "floating"|"fixed", position, orientation, prefix, lump_fixed, assemble }

int l_urdf(lua_State* L, World& w) {
    check_table(L, 2, "urdf");
    require_building(L, w, "urdf");
    Fields f{L, 2, "urdf"};
    f.only({"file", "base", "position", "orientation", "prefix", "lump_fixed", "assemble", "positions", "damping",
            "velocity", "angular_velocity", "limits", "couplings", "contacts", "mu", "on_ground", "servos"});
    std::string file = f.string("file", "", true);
    f.who = "urdf '" + file + "'";
    file = import_file(L, file, f.who, "URDF file");
    urdf::Options opt;
    const std::string base = f.string("base", "floating");
    if (base != "floating" && base != "fixed") fail(L, "%s: field 'base' must be \"floating\" or \"fixed\", got \"%s\"", f.who, base);
    opt.fixed_base = base == "fixed";
    if (auto p = f.vec3("position")) opt.position = *p;
    raw_getfield(L, 2, "orientation");
    if (!lua_isnil(L, -1)) opt.orientation = read_orientation(L, -1, f.who);
    lua_pop(L, 1);
    opt.prefix = f.string("prefix", "");
    opt.lump_fixed = f.boolean("lump_fixed", true);
    opt.damping = f.number("damping", 0);
    if (auto v = f.vec3("velocity")) opt.velocity = *v;
    if (auto v = f.vec3("angular_velocity")) opt.angular_velocity = *v;
    if (opt.damping < 0) fail(L, "%s: field 'damping' must be non-negative", f.who);
    const bool do_assemble = f.boolean("assemble", true);
    // Limits and contacts (docs/contact.md): contacts = true (every link's <collision>) or a list of links.
    opt.limits = f.boolean("limits", true);
    opt.couplings = f.boolean("couplings", true);
    raw_getfield(L, 2, "contacts");
    if (lua_isboolean(L, -1)) {
        opt.contacts_all = lua_toboolean(L, -1);
    } else if (lua_istable(L, -1)) {
        for (lua_Integer i = 1; i <= static_cast<lua_Integer>(lua_rawlen(L, -1)); ++i) {
            lua_rawgeti(L, -1, i);
            if (lua_type(L, -1) != LUA_TSTRING) f.bad("contacts", "true (every link) or a list of link names");
            opt.contact_links.push_back(lua_tostring(L, -1));
            lua_pop(L, 1);
        }
    } else if (!lua_isnil(L, -1)) {
        f.bad("contacts", "true (every link) or a list of link names");
    }
    lua_pop(L, 1);
    opt.mu = f.number("mu", opt.mu);
    // servos = { kp = .., kv = .. }: a position servo on every moving joint, holding the imported pose.
    raw_getfield(L, 2, "servos");
    if (lua_istable(L, -1)) {
        Fields s{L, lua_gettop(L), f.who + ": field 'servos'"};
        s.only({"kp", "kv"});
        opt.servo_kp = s.number("kp", 0, true);
        opt.servo_kv = s.number("kv", 0);
        if (!(opt.servo_kp > 0) || !std::isfinite(opt.servo_kp) || !(opt.servo_kv >= 0) || !std::isfinite(opt.servo_kv))
            fail(L, "%s: field 'servos': kp must be positive and kv non-negative (finite), got kp = %s, kv = %s", f.who,
                 g_str(opt.servo_kp), g_str(opt.servo_kv));
    } else if (!lua_isnil(L, -1)) {
        f.bad("servos", "a table { kp = .., kv = .. }");
    }
    lua_pop(L, 1);
    if (!(opt.mu >= 0) || !std::isfinite(opt.mu)) fail(L, "%s: field 'mu' must be non-negative and finite, got %s", f.who, g_str(opt.mu));
    opt.on_ground = f.boolean("on_ground", false);
    raw_getfield(L, 2, "positions");
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
        fail(L, "urdf: %s", lua_wording(e.what()));  // the script line first, then the file's element and line
    }
    adopt_import(L, w, trial, f.who);
    AssemblyReport asm_rep;
    if (do_assemble) asm_rep = assemble_world(L, w, "urdf");
    if (context(L)->options.print_reports) std::printf("%s", lua_wording(rep.to_text()).c_str());
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
    push_joint_handles(L, rep.joint_names, opt.prefix);
    lua_setfield(L, -2, "joints");
    push_frames(L, rep.frames, opt.prefix);
    lua_setfield(L, -2, "frames");
    for (std::string& x : rep.warnings) x = lua_wording(x);  // the importer's settings as w:urdf fields
    for (std::string& x : rep.ignored) x = lua_wording(x);
    lua_pushstring(L, lua_wording(rep.to_text()).c_str());
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
    lua_pushinteger(L, rep.limits_enforced);
    lua_setfield(L, -2, "limits");
    lua_pushinteger(L, rep.couplings);
    lua_setfield(L, -2, "couplings");
    lua_pushinteger(L, rep.contacts);
    lua_setfield(L, -2, "contacts");
    lua_pushnumber(L, rep.lifted);
    lua_setfield(L, -2, "lifted");
    push_assembly(L, asm_rep);
    lua_setfield(L, -2, "assembly");
    return 1;
}

int l_assemble(lua_State* L, World& w) {
    require_building(L, w, "assemble");
    push_assembly(L, assemble_world(L, w, "assemble"));
    return 1;
}


}  // namespace lua
}  // namespace noether
