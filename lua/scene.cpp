// The Lua module: scene constructors (noether.world{}, w:body{}, w:joint{}, w:force{}) and the
// declarations of callbacks and outputs.
#include <cstdlib>
#include <cmath>
#include <cstring>

#include "world.hpp"

namespace noether {
namespace lua {

// ---- noether.world{} -------------------------------------------------------------------------

int l_world(lua_State* L) {
    if (lua_isnoneornil(L, 1)) lua_newtable(L);
    check_table(L, 1, "noether.world");
    Context* ctx = context(L);
    ctx->worlds.push_back(std::make_unique<World>());
    World* w = ctx->worlds.back().get();
    World** ud = static_cast<World**>(lua_newuserdatauv(L, sizeof(World*), 1));
    *ud = w;
    luaL_setmetatable(L, kWorldMeta);
    if (ctx->live) {  // the host's steps push it to its callbacks after the script has returned
        lua_pushvalue(L, -1);
        w->self_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    w->spec.origin = where(L);
    Fields f{L, 1, "noether.world"};
    f.only({"gravity", "dt", "integrator", "solver", "tolerance", "max_iterations", "max_halvings", "max_substeps",
            "plugin_dirs", "options", "duration", "max_steps"});
    Spec& s = w->spec;
    if (auto g = f.vec3("gravity")) s.gravity = *g;
    s.options.dt = f.number("dt", s.options.dt);
    if (!(s.options.dt > 0)) fail(L, "noether.world: field 'dt' must be positive, got %s", g_str(s.options.dt));
    s.options.integrator = f.string("integrator", s.options.integrator);
    s.options.solver = f.string("solver", s.options.solver);
    s.options.tolerance = f.number("tolerance", s.options.tolerance);
    s.options.max_iterations = static_cast<int>(f.integer("max_iterations", s.options.max_iterations, 1, INT_MAX));
    s.options.max_halvings = static_cast<int>(f.integer("max_halvings", s.options.max_halvings, 0, INT_MAX));
    s.options.max_substeps = static_cast<int>(f.integer("max_substeps", s.options.max_substeps, 1, INT_MAX));
    w->duration = f.number("duration", -1);
    w->max_steps = f.integer("max_steps", Run::kDefaultMaxSteps, 1);
    raw_getfield(L, 1, "plugin_dirs");
    if (!lua_isnil(L, -1)) {
        if (!lua_istable(L, -1)) f.bad("plugin_dirs", "a list of directory names");
        for (lua_Integer i = 1; i <= static_cast<lua_Integer>(lua_rawlen(L, -1)); ++i) {
            lua_rawgeti(L, -1, i);
            if (lua_type(L, -1) != LUA_TSTRING) f.bad("plugin_dirs", "a list of directory names");
            if (ctx->options.sandbox)
                fail(L, "noether.world: sandbox: a scene may not name plugin directories (a plugin is native code), got '%s'",
                     lua_tostring(L, -1));
            s.plugin_dirs.push_back(lua_tostring(L, -1));
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    raw_getfield(L, 1, "options");
    if (!lua_isnil(L, -1)) {
        if (!lua_istable(L, -1)) f.bad("options", "a table of integrator options");
        lua_pushnil(L);
        while (lua_next(L, -2) != 0) {
            if (lua_type(L, -2) != LUA_TSTRING) fail(L, "noether.world: options must be named");
            const std::string key = lua_tostring(L, -2);
            if (lua_type(L, -1) == LUA_TNUMBER) {
                s.options.extra[key] = lua_tonumber(L, -1);
            } else if (lua_type(L, -1) == LUA_TSTRING) {
                s.options.extra_lists[key] = {lua_tostring(L, -1)};  // one word, e.g. newton = "exact"
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
                fail(L, "noether.world: option '%s' must be a number, a string or a list of strings, got %s", key, type_of(L, -1));
            }
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    for (const auto& kv : ctx->options.integrator_options) {
        char* end = nullptr;
        const double v = std::strtod(kv.second.c_str(), &end);
        if (!kv.second.empty() && *end == '\0') {
            s.options.extra[kv.first] = v;
            s.options.extra_lists.erase(kv.first);
        } else {
            s.options.extra_lists[kv.first] = {kv.second};
            s.options.extra.erase(kv.first);
        }
    }
    // Keep every world alive until the state closes (the host reads their summaries).
    lua_pushvalue(L, -1);
    luaL_ref(L, LUA_REGISTRYINDEX);
    return 1;
}

int l_world_index(lua_State* L) {
    check_world(L, 1);
    if (lua_type(L, 2) != LUA_TSTRING) {
        lua_pushnil(L);
        return 1;
    }
    if (std::strcmp(lua_tostring(L, 2), "world") == 0) {
        push_handle(L, "world", "world");
        return 1;
    }
    return push_method(L, kWorldMeta, 2);
}

// The Context owns every World (the host reads their summaries after the script); a world's
// __gc only detaches the userdata, so a script calling it by hand cannot free what the host uses.
int l_world_gc(lua_State* L) {
    World** p = static_cast<World**>(luaL_testudata(L, 1, kWorldMeta));
    if (p) *p = nullptr;
    return 0;
}

// ---- w:body{} -------------------------------------------------------------------------------

// One shape of a body (for the viewer): { type = "box", size = {lx, ly, lz} }, { type = "sphere",
// radius = r }, { type = "cylinder" | "capsule", radius = r, length = l } (along the shape's z),
// with optional position and orientation (body frame) and color ({r, g, b} or {r, g, b, a}).
Shape read_shape(lua_State* L, int idx, const std::string& who) {
    idx = lua_absindex(L, idx);
    if (!lua_istable(L, idx)) fail(L, "%s: a shape is a table such as { type = \"box\", size = {0.1, 0.2, 0.3} }, got %s", who, type_of(L, idx));
    Fields f{L, idx, who + ": shape"};
    const std::string type = f.string("type", "", true);
    Shape sh;
    if (type == "box") {
        f.only({"type", "size", "position", "orientation", "color"});
        const auto size = f.vec3("size");
        if (!size) fail(L, "%s: shape: a box needs 'size' (edge lengths {x, y, z})", who);
        sh.size = *size;
    } else if (type == "sphere" || type == "cylinder" || type == "capsule") {
        const bool sphere = type == "sphere";
        if (sphere) f.only({"type", "radius", "position", "orientation", "color"});
        else f.only({"type", "radius", "length", "position", "orientation", "color"});
        sh.type = sphere ? Shape::Type::sphere : type == "cylinder" ? Shape::Type::cylinder : Shape::Type::capsule;
        sh.size.x = f.number("radius", 0, true);
        if (!sphere) sh.size.y = f.number("length", 0, true);
    } else {
        fail(L, "%s: shape: unknown type '%s' (box, sphere, cylinder, capsule)", who, type);
    }
    if (auto p = f.vec3("position")) sh.pose.x = *p;
    raw_getfield(L, idx, "orientation");
    if (!lua_isnil(L, -1)) sh.pose.q = read_orientation(L, -1, who + ": shape");
    lua_pop(L, 1);
    const std::vector<double> c = f.numbers("color");
    if (!c.empty()) {
        if (c.size() != 3 && c.size() != 4) f.bad("color", "{r, g, b} or {r, g, b, a}, each in [0, 1]");
        for (std::size_t k = 0; k < c.size(); ++k) sh.rgba[k] = c[k];
    }
    return sh;
}

int l_body(lua_State* L, World& w) {
    check_table(L, 2, "body");
    require_building(L, w, "body");
    raw_getfield(L, 2, "name");
    if (lua_type(L, -1) != LUA_TSTRING) fail(L, "body: field 'name' is required (a string), got %s", type_of(L, -1));
    check_length(L, -1, "body", "name", "name");
    sandbox_check_bodies(L, 1);
    const std::string name = lua_tostring(L, -1);
    lua_pop(L, 1);
    const std::string who = "body '" + name + "'";
    Fields f{L, 2, who};
    f.only({"name", "mass", "inertia", "position", "orientation", "velocity", "angular_velocity", "angular_velocity_frame",
            "shape", "shapes"});
    BodySpec b;
    b.name = name;
    b.origin = where(L);
    b.mass = f.number("mass", 0, true);
    raw_getfield(L, 2, "inertia");
    if (lua_isnil(L, -1))
        fail(L, "%s: field 'inertia' is required (3 principal moments, 6 components, a 3x3 table, or a helper such "
                "as noether.inertia.box(mass, lx, ly, lz))",
             who);
    b.inertia = read_inertia(L, -1, who);
    lua_pop(L, 1);
    if (auto p = f.vec3("position")) b.position = *p;
    raw_getfield(L, 2, "orientation");
    if (!lua_isnil(L, -1)) b.orientation = read_orientation(L, -1, who);
    lua_pop(L, 1);
    if (auto v = f.vec3("velocity")) b.velocity = *v;
    if (auto v = f.vec3("angular_velocity")) b.angular_velocity = *v;
    const std::string frame = f.string("angular_velocity_frame", "world");
    if (frame != "world" && frame != "body")
        fail(L, "%s: field 'angular_velocity_frame' must be \"world\" or \"body\", got \"%s\"", who, frame);
    b.angular_velocity_in_body = frame == "body";
    if (f.has("shape") && f.has("shapes")) fail(L, "%s: give 'shape' (one) or 'shapes' (a list), not both", who);
    raw_getfield(L, 2, "shape");
    if (!lua_isnil(L, -1)) b.shapes.push_back(read_shape(L, -1, who));
    lua_pop(L, 1);
    raw_getfield(L, 2, "shapes");
    if (!lua_isnil(L, -1)) {
        if (!lua_istable(L, -1)) f.bad("shapes", "a list of shapes");
        const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, -1));
        for (lua_Integer i = 1; i <= n; ++i) {
            lua_rawgeti(L, -1, i);
            b.shapes.push_back(read_shape(L, -1, who + " (shape " + std::to_string(i) + ")"));
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    if (const int o = w.body_index.find(w.spec.bodies, name); o >= 0)
        fail(L, "%s: duplicate name (first defined at %s)", who, w.spec.bodies[o].origin.str());
    w.spec.bodies.push_back(std::move(b));
    ++context(L)->bodies_made;
    push_handle(L, "body", name);
    return 1;
}

// ---- w:joint{} ------------------------------------------------------------------------------

int l_joint(lua_State* L, World& w) {
    check_table(L, 2, "joint");
    require_building(L, w, "joint");
    raw_getfield(L, 2, "name");
    if (lua_type(L, -1) != LUA_TSTRING) fail(L, "joint: field 'name' is required (a string), got %s", type_of(L, -1));
    check_length(L, -1, "joint", "name", "name");
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
            "child_axis", "stiffness", "damping", "rest", "offset", "lower", "upper", "limited", "armature"},
           [&](const std::string& k) { return std::find(type_params.begin(), type_params.end(), k) != type_params.end(); });
    raw_getfield(L, 2, "parent");
    if (lua_isnil(L, -1)) fail(L, "%s: field 'parent' is required (a body, or w.world)", who);
    j.parent = element_name(L, -1, who, "parent");
    lua_pop(L, 1);
    raw_getfield(L, 2, "child");
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
    j.armature = f.numbers("armature");
    j.rest = f.numbers("rest");
    j.offset = f.numbers("offset");
    // Limits given are enforced (limited = false keeps them for output only).
    j.lower = f.numbers("lower");
    j.upper = f.numbers("upper");
    j.limited = f.boolean("limited", !j.lower.empty() || !j.upper.empty());
    for (const std::string& p : type_params)
        if (f.has(p.c_str())) j.params[p] = f.numbers(p.c_str());
    if (const int o = w.joint_index.find(w.spec.joints, name); o >= 0)
        fail(L, "%s: duplicate name (first defined at %s)", who, w.spec.joints[o].origin.str());
    // Names of bodies are checked now, so the error points at this line.
    auto known = [&](const std::string& n) { return n == "world" || w.body_index.find(w.spec.bodies, n) >= 0; };
    if (!known(j.parent)) fail(L, "%s: field 'parent': no body named '%s' (define bodies before their joints)", who, j.parent);
    if (!known(j.child)) fail(L, "%s: field 'child': no body named '%s' (define bodies before their joints)", who, j.child);
    w.spec.joints.push_back(std::move(j));
    push_handle(L, "joint", name);
    return 1;
}

// ---- w:servo{} ------------------------------------------------------------------------------

// w:servo{ joint = j, type = "position" | "velocity", kp, kv, target, target_velocity,
// effort_limit }: a servo actuator on a 1-DOF joint declared before it (docs/servos.md).
int l_servo(lua_State* L, World& w) {
    check_table(L, 2, "servo");
    require_building(L, w, "servo");
    Fields f{L, 2, "servo"};
    f.only({"joint", "type", "kp", "kv", "target", "target_velocity", "effort_limit"});
    raw_getfield(L, 2, "joint");
    if (lua_isnil(L, -1)) fail(L, "servo: field 'joint' is required (a joint, or its name)");
    const std::string joint = element_name(L, -1, "servo", "joint");
    lua_pop(L, 1);
    f.who = "servo on joint '" + joint + "'";
    const int j = w.joint_index.find(w.spec.joints, joint);
    if (j < 0) fail(L, "%s: no joint named '%s' (declare the joint, or import the URDF, before its servo)", f.who, joint);
    JointSpec& js = w.spec.joints[j];
    if (js.servo.kind != ServoSpec::Kind::none) fail(L, "%s: the joint has a servo already", f.who);
    const std::string type = f.string("type", "position");
    ServoSpec s;
    if (type == "position") s.kind = ServoSpec::Kind::position;
    else if (type == "velocity") s.kind = ServoSpec::Kind::velocity;
    else fail(L, "%s: field 'type' must be \"position\" or \"velocity\", got \"%s\"", f.who, type);
    if (s.kind == ServoSpec::Kind::position && !f.has("kp"))
        fail(L, "%s: field 'kp' is required for a position servo (a stiffness > 0)", f.who);
    if (s.kind == ServoSpec::Kind::velocity && !f.has("kv"))
        fail(L, "%s: field 'kv' is required for a velocity servo (a damping > 0)", f.who);
    s.kp = f.number("kp", 0);
    s.kv = f.number("kv", 0);
    if (f.has("target")) s.target = f.number("target", 0);
    s.target_velocity = f.number("target_velocity", 0);
    s.effort_limit = f.number("effort_limit", INFINITY);
    s.origin = where(L);
    js.servo = s;
    return 0;
}

// ---- w:force{} ------------------------------------------------------------------------------

int l_force(lua_State* L, World& w) {
    check_table(L, 2, "force");
    require_building(L, w, "force");
    Fields f{L, 2, "force"};
    f.only({"body", "force", "torque", "frame", "point"});
    ForceSpec fs;
    fs.origin = where(L);
    raw_getfield(L, 2, "body");
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
    if (w.body_index.find(w.spec.bodies, fs.body) < 0) fail(L, "%s: no body named '%s'", f.who, fs.body);
    w.spec.forces.push_back(fs);
    return 0;
}

// ---- w:contact{} ----------------------------------------------------------------------------

// A contact (docs/contact.md): a point, sphere, capsule or box on a body against the half-space
// normal·y >= offset (default: the ground z >= 0), or a sphere against a sphere on another body.
int l_contact(lua_State* L, World& w) {
    check_table(L, 2, "contact");
    require_building(L, w, "contact");
    Fields f{L, 2, "contact"};
    f.only({"name", "body", "shape", "radius", "length", "size", "position", "orientation", "mu", "normal", "offset",
            "other", "other_radius", "other_position"});
    ContactSpec cs;
    cs.origin = where(L);
    raw_getfield(L, 2, "name");
    if (!lua_isnil(L, -1)) {
        if (lua_type(L, -1) != LUA_TSTRING) fail(L, "contact: field 'name' must be a string, got %s", type_of(L, -1));
        check_length(L, -1, "contact", "name", "name");
        cs.name = lua_tostring(L, -1);
    }
    lua_pop(L, 1);
    raw_getfield(L, 2, "body");
    if (lua_isnil(L, -1)) fail(L, "contact: field 'body' is required (the body carrying the shape)");
    cs.body = element_name(L, -1, "contact", "body");
    lua_pop(L, 1);
    f.who = cs.name.empty() ? "contact on body '" + cs.body + "'" : "contact '" + cs.name + "'";
    if (w.body_index.find(w.spec.bodies, cs.body) < 0) fail(L, "%s: field 'body': no body named '%s'", f.who, cs.body);
    const std::string shape = f.string("shape", "point");
    auto only_for = [&](std::initializer_list<const char*> keys, const char* kinds) {
        for (const char* k : keys)
            if (f.has(k)) fail(L, "%s: field '%s' does not apply to a %s (it is for %s)", f.who, k, shape, kinds);
    };
    if (shape == "point") {
        cs.type = ContactSpec::Type::point;
        only_for({"radius", "length"}, "spheres and capsules");
        only_for({"size"}, "boxes");
    } else if (shape == "sphere") {
        cs.type = ContactSpec::Type::sphere;
        cs.size.x = f.number("radius", 0, true);
        only_for({"length"}, "capsules");
        only_for({"size"}, "boxes");
    } else if (shape == "capsule") {
        cs.type = ContactSpec::Type::capsule;
        cs.size.x = f.number("radius", 0, true);
        cs.size.y = f.number("length", 0, true);
        only_for({"size"}, "boxes");
    } else if (shape == "box") {
        cs.type = ContactSpec::Type::box;
        const auto size = f.vec3("size");
        if (!size) fail(L, "%s: a box needs 'size' (edge lengths {x, y, z})", f.who);
        cs.size = *size;
        only_for({"radius", "length"}, "spheres and capsules");
    } else {
        fail(L, "%s: field 'shape' must be \"point\", \"sphere\", \"capsule\" or \"box\", got \"%s\"", f.who, shape);
    }
    if (auto p = f.vec3("position")) cs.pose.x = *p;
    raw_getfield(L, 2, "orientation");
    if (!lua_isnil(L, -1)) cs.pose.q = read_orientation(L, -1, f.who);
    lua_pop(L, 1);
    cs.mu = f.number("mu", 0);
    raw_getfield(L, 2, "other");
    if (!lua_isnil(L, -1)) {
        cs.other = element_name(L, -1, f.who, "other");
        if (cs.other != "world" && w.body_index.find(w.spec.bodies, cs.other) < 0)
            fail(L, "%s: field 'other': no body named '%s'", f.who, cs.other);
    }
    lua_pop(L, 1);
    const bool body_pair = !cs.other.empty() && cs.other != "world";
    if (body_pair) {
        if (f.has("normal") || f.has("offset"))
            fail(L, "%s: 'normal' and 'offset' describe the half-space; a contact with another body has none", f.who);
        cs.other_radius = f.number("other_radius", 0, true);
        if (auto p = f.vec3("other_position")) cs.other_position = *p;
    } else {
        if (f.has("other_radius") || f.has("other_position"))
            fail(L, "%s: 'other_radius' and 'other_position' need 'other' (a body)", f.who);
        if (auto n = f.vec3("normal")) cs.normal = *n;
        cs.offset = f.number("offset", 0);
    }
    sandbox_add_contact_points(L, &cs, &cs + 1);
    w.spec.contacts.push_back(cs);
    return 0;
}

// ---- w:coupling{} ---------------------------------------------------------------------------

// A coupling between joint coordinates (docs/couplings.md): joint = ratio · leader + offset, with
// `more = { {joint = .., ratio = .., dof = ..}, ... }` further leaders (joint = ... + ratio · more_k).
int l_coupling(lua_State* L, World& w) {
    check_table(L, 2, "coupling");
    require_building(L, w, "coupling");
    Fields f{L, 2, "coupling"};
    f.only({"name", "joint", "leader", "ratio", "offset", "dof", "leader_dof", "lower", "upper", "more"});
    CouplingSpec cs;
    cs.origin = where(L);
    for (const char* key : {"joint", "leader"}) {
        raw_getfield(L, 2, key);
        if (lua_isnil(L, -1))
            fail(L, "coupling: field '%s' is required (%s)", key,
                 std::string(key) == "joint" ? "the joint that follows" : "the joint it follows");
        const std::string name = element_name(L, -1, "coupling", key);
        lua_pop(L, 1);
        if (w.joint_index.find(w.spec.joints, name) < 0) fail(L, "coupling: field '%s': no joint named '%s'", key, name);
        (std::string(key) == "joint" ? cs.joint : cs.leader) = name;
    }
    cs.name = f.string("name", "");
    f.who = "coupling '" + (cs.name.empty() ? cs.joint + "/coupling" : cs.name) + "'";
    cs.ratio = f.number("ratio", 1);
    cs.offset = f.number("offset", 0);
    // Coordinates count from 1 here (a compound joint's k-th motion), from 0 in the Spec.
    cs.dof = static_cast<int>(f.integer("dof", 1, 1, kMaxJointDofs)) - 1;
    cs.leader_dof = static_cast<int>(f.integer("leader_dof", 1, 1, kMaxJointDofs)) - 1;
    raw_getfield(L, 2, "more");
    if (!lua_isnil(L, -1)) {
        if (!lua_istable(L, -1)) f.bad("more", "a list of further leaders {joint = .., ratio = .., dof = ..}");
        const int list = lua_gettop(L);
        const lua_Integer n = static_cast<lua_Integer>(lua_rawlen(L, list));
        if (n > kMaxCouplingTerms - 2)
            fail(L, "%s: field 'more' lists %s further leaders; a coupling relates at most %s coordinates (joint, leader and %s more)",
                 f.who, std::to_string(n), std::to_string(kMaxCouplingTerms), std::to_string(kMaxCouplingTerms - 2));
        for (lua_Integer i = 1; i <= n; ++i) {
            lua_rawgeti(L, list, i);
            const std::string what = "more[" + std::to_string(i) + "]";
            if (!lua_istable(L, -1)) f.bad(what.c_str(), "a table {joint = .., ratio = .., dof = ..}");
            Fields g{L, lua_gettop(L), f.who + " " + what};
            g.only({"joint", "ratio", "dof"});
            CouplingSpec::Leader l;
            raw_getfield(L, g.t, "joint");
            if (lua_isnil(L, -1)) fail(L, "%s: field 'joint' is required (the further leader)", g.who);
            l.joint = element_name(L, -1, "coupling", "joint");
            lua_pop(L, 1);
            if (w.joint_index.find(w.spec.joints, l.joint) < 0) fail(L, "%s: field 'joint': no joint named '%s'", g.who, l.joint);
            l.ratio = g.number("ratio", 0, true);
            l.dof = static_cast<int>(g.integer("dof", 1, 1, kMaxJointDofs)) - 1;
            cs.more.push_back(l);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    // lower/upper: a range on joint − ratio · leader − … − offset instead of the equality.
    if (f.has("lower") || f.has("upper")) {
        cs.range = true;
        cs.lower = f.number("lower", -HUGE_VAL);
        cs.upper = f.number("upper", HUGE_VAL);
    }
    w.spec.couplings.push_back(cs);
    return 0;
}

// ---- callbacks and outputs ------------------------------------------------------------------

int l_on_step(lua_State* L, World& w) {
    if (!lua_isfunction(L, 2)) fail(L, "on_step: expected a function(w) called before every step, got %s", type_of(L, 2));
    if (w.on_step != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, w.on_step);
    lua_pushvalue(L, 2);
    w.on_step = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

OutputSpec read_output(lua_State* L, int idx, int* callback, std::string* dropped) {
    check_table(L, idx, "output");
    Fields f{L, idx, "output"};
    if (callback) f.only({"file", "every", "channels", "callback"});
    else f.only({"file", "every", "channels"});
    OutputSpec o;
    o.origin = where(L);
    o.file = f.string("file", "");
    dropped->clear();  // a sweep member's file without "{member}": not written
    if (!o.file.empty()) {
        const std::string mine = member_path(*context(L), o.file);
        if (mine.empty()) *dropped = o.file;
        o.file = mine.empty() ? mine : sandbox_path(L, mine, true, "output file");
    }
    o.follow_links = sandbox_follows_links(L);
    o.every = static_cast<int>(f.integer("every", 1, 1, INT_MAX));
    if (callback) {
        *callback = LUA_NOREF;
        raw_getfield(L, idx, "callback");
        if (!lua_isnil(L, -1)) {
            if (!lua_isfunction(L, -1)) f.bad("callback", "a function(w)");
            *callback = luaL_ref(L, LUA_REGISTRYINDEX);
            o.hook = true;
        } else {
            lua_pop(L, 1);
        }
    }
    raw_getfield(L, idx, "channels");
    if (!lua_isnil(L, -1)) {
        if (!lua_istable(L, -1)) f.bad("channels", "a list of channel names");
        for (lua_Integer i = 1; i <= static_cast<lua_Integer>(lua_rawlen(L, -1)); ++i) {
            lua_rawgeti(L, -1, i);
            if (lua_type(L, -1) != LUA_TSTRING) f.bad("channels", "a list of channel names");
            Channel c;
            const std::string text = lua_tostring(L, -1);
            if (!parse_channel(text, c)) fail(L, "output: unknown channel '%s' (channels: %s)", text, channel_names());
            o.channels.push_back(text);
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    const bool no_callback = !callback || *callback == LUA_NOREF;
    if (o.file.empty() && dropped->empty() && no_callback)
        fail(L, callback ? "output: give a 'file' (CSV), a 'callback', or both" : "output: field 'file' is required");
    if ((!o.file.empty() || !dropped->empty()) && o.channels.empty())
        fail(L, "output: field 'channels' is required with 'file'");
    return o;
}

// w:record{ file = "run.nrec", fps = 60 }: a recording for the viewer (docs/viewer.md).
int l_world_record(lua_State* L, World& w) {
    check_table(L, 2, "record");
    require_building(L, w, "record");
    Fields f{L, 2, "record"};
    f.only({"file", "fps", "every"});
    if (f.has("fps") && f.has("every")) fail(L, "record: give 'fps' or 'every', not both");
    OutputSpec o;
    o.format = OutputSpec::Format::recording;
    o.origin = where(L);
    const std::string file = f.string("file", "", true);
    const std::string mine = member_path(*context(L), file);
    if (mine.empty()) {
        w.import_warnings.push_back(o.origin.str() + ": recording '" + file + "' not written by sweep member " +
                                    std::to_string(context(L)->options.member) + " (put {member} in the name)");
        return 0;
    }
    o.file = sandbox_path(L, mine, true, "recording file");
    o.follow_links = sandbox_follows_links(L);
    o.every = static_cast<int>(f.integer("every", 1, 1, INT_MAX));
    if (!f.has("every")) {
        o.fps = f.number("fps", 60);
        if (!(o.fps > 0) || !std::isfinite(o.fps)) f.bad("fps", "a positive number of frames per simulated second");
    }
    w.outputs.push_back(o);
    w.output_callback.push_back(LUA_NOREF);
    return 0;
}

int l_output(lua_State* L, World& w) {
    check_table(L, 2, "output");
    require_building(L, w, "output");
    int callback = LUA_NOREF;
    std::string dropped;
    OutputSpec o = read_output(L, 2, &callback, &dropped);
    if (!dropped.empty()) {
        w.import_warnings.push_back(o.origin.str() + ": output file '" + dropped + "' not written by sweep member " +
                                    std::to_string(context(L)->options.member) +
                                    " (every member would write it; put {member} in the name)");
        if (callback == LUA_NOREF) return 0;
    }
    w.outputs.push_back(o);
    w.output_callback.push_back(callback);
    return 0;
}


}  // namespace lua
}  // namespace noether
