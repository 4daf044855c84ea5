// The Lua module: compiling and running a world (through the kernel's Run), and reading and
// writing its state.
#include <cmath>
#include <cstring>

#include "world.hpp"

namespace noether {
namespace lua {

namespace {

// The Lua side of a run: on_step before every step, output callbacks when they sample.
struct LuaHooks final : RunHooks {
    lua_State* L;
    int world_idx;
    World& w;
    LuaHooks(lua_State* L_, int idx, World& w_) : L(L_), world_idx(idx), w(w_) {}
    void before_step(Run&) override {
        if (context(L)->deadline > 0) sandbox_check_time(L);
        if (w.on_step == LUA_NOREF) return;
        lua_rawgeti(L, LUA_REGISTRYINDEX, w.on_step);
        lua_pushvalue(L, world_idx);
        call(L, 1);  // protected: a Lua error becomes LuaFail, no longjmp over C++ frames
    }
    void on_sample(Run&, int output) override {
        lua_rawgeti(L, LUA_REGISTRYINDEX, w.output_callback[output]);
        lua_pushvalue(L, world_idx);
        call(L, 1);
    }
};

}  // namespace

void push_summary(lua_State* L, const RunSummary& s) {
    lua_createtable(L, 0, 32);
#define NOETHER_PUSH_I(v) lua_pushinteger(L, static_cast<lua_Integer>(v))
#define NOETHER_PUSH_D(v) lua_pushnumber(L, v)
#define NOETHER_PUSH_DN(v) (std::isfinite(v) ? lua_pushnumber(L, v) : lua_pushnil(L))
#define NOETHER_PUSH_S(v) lua_pushstring(L, (v).c_str())
#define NOETHER_PUSH_B(v) lua_pushboolean(L, v)
#define NOETHER_X(type, name)   \
    NOETHER_PUSH_##type(s.name); \
    lua_setfield(L, -2, #name);
    NOETHER_SUMMARY_FIELDS(NOETHER_X)
#undef NOETHER_X
#undef NOETHER_PUSH_I
#undef NOETHER_PUSH_D
#undef NOETHER_PUSH_DN
#undef NOETHER_PUSH_S
#undef NOETHER_PUSH_B
    push_strings(L, s.warnings);
    lua_setfield(L, -2, "warnings");
}

long long steps_arg(lua_State* L, const Model& m, int idx, const char* fn) {
    if (lua_isnoneornil(L, idx)) fail(L, "%s: expected {duration = seconds} or {steps = n}", fn);
    check_table(L, idx, fn);
    Fields f{L, idx, fn};
    f.only({"duration", "steps"});
    if (f.has("steps") && f.has("duration")) fail(L, "%s: give either 'duration' or 'steps', not both", fn);
    if (f.has("steps")) return f.integer("steps", 0, 0);
    const double T = f.number("duration", 0, true);
    if (T < 0) fail(L, "%s: field 'duration' must be non-negative", fn);
    if (T / m.options.dt > 9e15) fail(L, "%s: field 'duration' = %s s is too long for dt = %s s", fn, g_str(T), g_str(m.options.dt));
    return std::llround(T / m.options.dt);
}

void ensure_compiled(lua_State* L, World& w) {
    if (w.run) return;
    std::shared_ptr<const Model> model;
    try {
        const std::shared_ptr<ModelCache>& cache = context(L)->options.model_cache;
        model = cache ? cache->compile(w.spec) : compile(w.spec);
    } catch (const ModelError& e) {
        throw LuaFail(e.what());
    }
    auto run = std::make_unique<Run>(model);
    Context* ctx = context(L);
    if (!ctx->options.record.empty() && !ctx->recorded && !ctx->options.check_only) {
        ctx->recorded = true;  // the first world compiled
        OutputSpec o;
        o.format = OutputSpec::Format::recording;
        o.file = ctx->options.record;
        o.fps = ctx->options.record_fps;
        o.origin = w.spec.origin;  // where the world was made (the viewer shows it)
        w.outputs.push_back(o);
        w.output_callback.push_back(LUA_NOREF);
    }
    for (const OutputSpec& o : w.outputs) {
        OutputSpec use = o;
        if (ctx->options.check_only && !ctx->live) {
            // `noether check` checks the channels but writes no file (it would replace the results
            // of an earlier run with a header and the initial state); a recording keeps its index.
            if (use.format == OutputSpec::Format::recording) {
                use.format = OutputSpec::Format::csv;
                use.channels = {"time"};
            }
            use.file.clear();
        }
        try {
            run->add_output(use);
        } catch (const Error& e) {
            throw LuaFail(e.what());
        }
    }
    for (const std::string& x : w.import_warnings) run->add_note(x);
    run->set_max_steps(w.max_steps);
    w.model = model;
    w.run = std::move(run);
    w.data = &w.run->data();
}

bool run_steps(lua_State* L, int world_idx, World& w, long long steps, bool progress) {
    ensure_compiled(L, w);
    LuaHooks hooks(L, lua_absindex(L, world_idx), w);
    w.run->set_progress(progress);
    try {
        return w.run->steps(steps, &hooks);
    } catch (const UsageError& e) {
        fail(L, "%s", e.what());
    }
}

int l_compile(lua_State* L, World& w) {
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

int l_run(lua_State* L, World& w) {
    const long long n = steps_arg(L, *w.model, 2, "run");
    Context* ctx = context(L);
    if (!ctx->options.check_only) run_steps(L, 1, w, n, ctx->options.progress);
    push_summary(L, w.run->summary());
    return 1;
}

int l_step(lua_State* L, World& w) {
    const long long n = opt_integer(L, 2, 1, "step", "the number of steps");
    if (n < 0) fail(L, "step: the number of steps must be non-negative, got %s", std::to_string(n));
    if (context(L)->options.check_only) {
        lua_pushboolean(L, 1);
        return 1;
    }
    const bool ok = run_steps(L, 1, w, n, false);
    lua_pushboolean(L, ok);
    if (ok) return 1;
    lua_pushstring(L, w.run->failure().c_str());
    return 2;
}

int l_summary(lua_State* L, World& w) {
    push_summary(L, w.run->summary());
    return 1;
}

int l_finish(lua_State* L, World& w) {
    std::vector<std::string> notes;
    if (w.run) w.run->finish(&notes);
    push_strings(L, notes);
    return 1;
}

// ---- state access ---------------------------------------------------------------------------

namespace {

int body_arg(lua_State* L, const Model& m, int idx, const char* fn) {
    const std::string name = element_name(L, idx, fn, "body");
    const int b = m.body_index(name);
    if (b < 0) fail(L, "%s: no body named '%s'", fn, name);
    return b;
}

int joint_arg(lua_State* L, const Model& m, int idx, const char* fn) {
    std::string name;
    if (lua_type(L, idx) == LUA_TSTRING) name = lua_tostring(L, idx);
    else if (lua_istable(L, idx)) {
        raw_getfield(L, idx, "name");
        if (lua_type(L, -1) == LUA_TSTRING) name = lua_tostring(L, -1);
        lua_pop(L, 1);
    }
    if (name.empty()) fail(L, "%s: expected a joint (or its name), got %s", fn, type_of(L, idx));
    const int j = m.joint_index(name);
    if (j < 0) fail(L, "%s: no joint named '%s'", fn, name);
    return j;
}

int push_dofs(lua_State* L, const Model& m, int j, const std::vector<double>& src) {
    const JointInfo& ji = m.joints[j];
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

}  // namespace

int l_time(lua_State* L, World& w) {
    lua_pushnumber(L, w.data ? w.data->time : 0.0);
    return 1;
}

int l_state_time(lua_State* L, const Model&, Data& d) {
    lua_pushnumber(L, d.time);
    return 1;
}

int l_position(lua_State* L, const Model& m, Data& d) {
    push_vec3(L, d.pose[body_arg(L, m, 2, "position")].x);
    return 1;
}

int l_orientation(lua_State* L, const Model& m, Data& d) {
    const Quat q = d.pose[body_arg(L, m, 2, "orientation")].q;
    lua_createtable(L, 4, 0);
    const double v[4] = {q.w, q.x, q.y, q.z};
    for (int i = 0; i < 4; ++i) {
        lua_pushnumber(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

int l_velocity(lua_State* L, const Model& m, Data& d) {
    push_vec3(L, d.twist[body_arg(L, m, 2, "velocity")].v);
    return 1;
}

int l_angular_velocity(lua_State* L, const Model& m, Data& d) {
    const int b = body_arg(L, m, 2, "angular_velocity");
    const std::string frame_s = lua_isnoneornil(L, 3) ? std::string("world") : arg_string(L, 3, "angular_velocity", "the frame");
    const char* frame = frame_s.c_str();
    const Vec3 wb = d.twist[b].w;
    if (std::strcmp(frame, "body") == 0) push_vec3(L, wb);
    else if (std::strcmp(frame, "world") == 0) push_vec3(L, rotate(d.pose[b].q, wb));
    else fail(L, "angular_velocity: frame must be \"world\" or \"body\", got \"%s\"", frame);
    return 1;
}

int l_coord(lua_State* L, const Model& m, Data& d) {
    return push_dofs(L, m, joint_arg(L, m, 2, "coord"), d.coord);
}

int l_rate(lua_State* L, const Model& m, Data& d) {
    return push_dofs(L, m, joint_arg(L, m, 2, "rate"), d.rate);
}

int l_limit_force(lua_State* L, const Model& m, Data& d) {
    return push_dofs(L, m, joint_arg(L, m, 2, "limit_force"), d.limit_force);
}

// w:coupling_force(name): the generalized force the coupling applied to its follower's coordinate
// in the last step (N m or N; the leader's is −ratio times it).
int l_coupling_force(lua_State* L, const Model& m, Data& d) {
    if (lua_type(L, 2) != LUA_TSTRING)
        fail(L, "coupling_force: expected the coupling's name (a string), got %s", type_of(L, 2));
    const std::string name = lua_tostring(L, 2);
    for (std::size_t k = 0; k < m.couplings.size(); ++k)
        if (m.couplings[k].name == name) {
            lua_pushnumber(L, d.coupling_force[k]);
            return 1;
        }
    std::string list;
    for (const CouplingInfo& c : m.couplings) list += (list.empty() ? "" : ", ") + c.name;
    fail(L, "coupling_force: no coupling named '%s' (couplings: %s)", name, list.empty() ? "none" : list);
}

// w:contacts(): what the last step found at every contact point, in Model order.
int l_contacts(lua_State* L, const Model& m, Data& d) {
    lua_createtable(L, static_cast<int>(m.contacts.size()), 0);
    for (std::size_t k = 0; k < m.contacts.size(); ++k) {
        const ContactInfo& ci = m.contacts[k];
        const ContactResult& r = d.contact[k];
        lua_createtable(L, 0, 9);
        lua_pushstring(L, ci.name.c_str());
        lua_setfield(L, -2, "name");
        lua_pushstring(L, m.bodies[ci.body].name.c_str());
        lua_setfield(L, -2, "body");
        lua_pushstring(L, ci.other >= 0 ? m.bodies[ci.other].name.c_str() : "world");
        lua_setfield(L, -2, "other");
        push_vec3(L, r.point);
        lua_setfield(L, -2, "point");
        push_vec3(L, r.normal);
        lua_setfield(L, -2, "normal");
        lua_pushnumber(L, r.gap);
        lua_setfield(L, -2, "gap");
        lua_pushnumber(L, r.normal_force);
        lua_setfield(L, -2, "normal_force");
        push_vec3(L, r.friction);
        lua_setfield(L, -2, "friction");
        lua_pushboolean(L, r.active);
        lua_setfield(L, -2, "active");
        lua_rawseti(L, -2, static_cast<lua_Integer>(k + 1));
    }
    return 1;
}

int l_set_actuation(lua_State* L, const Model& m, Data& d) {
    const int j = joint_arg(L, m, 2, "set_actuation");
    const JointInfo& ji = m.joints[j];
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
        d.actuation[ji.dof_offset + k] = u[k];
    }
    return 0;
}

namespace {

// The joint of a servo setter (one with a servo), and a finite number argument.
int servo_joint_arg(lua_State* L, const Model& m, const char* fn) {
    const int j = joint_arg(L, m, 2, fn);
    const JointInfo& ji = m.joints[j];
    if (ji.servo == ServoSpec::Kind::none)
        fail(L, "%s: joint '%s' has no servo (declare one: w:servo{ joint = \"%s\", kp = ..., kv = ... })", fn, ji.name,
             ji.name);
    return j;
}

double finite_arg(lua_State* L, int idx, const char* fn, const std::string& joint, const char* what) {
    if (lua_type(L, idx) != LUA_TNUMBER) fail(L, "%s: joint '%s': %s must be a number, got %s", fn, joint, what, type_of(L, idx));
    const double v = lua_tonumber(L, idx);
    if (!std::isfinite(v)) fail(L, "%s: joint '%s': %s must be finite, got %s", fn, joint, what, lua_tostring(L, idx));
    return v;
}

}  // namespace

// w:set_target(joint, position [, velocity]): the servo's targets for the coming steps (a
// velocity servo: w:set_target(joint, nil, velocity) or its velocity alone).
int l_set_target(lua_State* L, const Model& m, Data& d) {
    const int j = servo_joint_arg(L, m, "set_target");
    const JointInfo& ji = m.joints[j];
    const int i = ji.dof_offset;
    const bool velocity_servo = ji.servo == ServoSpec::Kind::velocity;
    if (velocity_servo) {
        // a velocity servo's one target is its velocity: w:set_target(j, v) or w:set_target(j, nil, v)
        const int idx = lua_isnoneornil(L, 3) ? 4 : 3;
        d.target_velocity[i] = finite_arg(L, idx, "set_target", ji.name, "the target velocity");
        return 0;
    }
    const double p = finite_arg(L, 3, "set_target", ji.name, "the target position");
    const double v = lua_isnoneornil(L, 4) ? 0.0 : finite_arg(L, 4, "set_target", ji.name, "the target velocity");
    d.target_position[i] = p;
    d.target_velocity[i] = v;
    return 0;
}

// w:set_servo(joint, { kp, kv, target, target_velocity }): any of the servo's inputs.
int l_set_servo(lua_State* L, const Model& m, Data& d) {
    const int j = servo_joint_arg(L, m, "set_servo");
    const JointInfo& ji = m.joints[j];
    if (!lua_istable(L, 3)) fail(L, "set_servo: joint '%s': expected a table { kp, kv, target, target_velocity }, got %s", ji.name, type_of(L, 3));
    Fields f{L, 3, "set_servo: joint '" + ji.name + "'"};
    f.only({"kp", "kv", "target", "target_velocity"});
    const int i = ji.dof_offset;
    double kp = d.servo_kp[i], kv = d.servo_kv[i], p = d.target_position[i], v = d.target_velocity[i];
    auto read = [&](const char* key, double& out, bool gain) {
        if (!f.has(key)) return;
        raw_getfield(L, 3, key);
        out = finite_arg(L, -1, "set_servo", ji.name, key);
        lua_pop(L, 1);
        if (gain && out < 0) fail(L, "set_servo: joint '%s': %s must be non-negative, got %s", ji.name, key, g_str(out));
    };
    read("kp", kp, true);
    read("kv", kv, true);
    read("target", p, false);
    read("target_velocity", v, false);
    if (ji.servo == ServoSpec::Kind::velocity && kp != 0)
        fail(L, "set_servo: joint '%s': a velocity servo has no kp, got %s", ji.name, g_str(kp));
    d.servo_kp[i] = kp, d.servo_kv[i] = kv, d.target_position[i] = p, d.target_velocity[i] = v;
    return 0;
}

// w:set_force(body, force [, point]): world force for the coming steps, at the CoM or at a
// point given in the body frame (which also sets the matching torque about the CoM).
int l_set_force(lua_State* L, const Model& m, Data& d) {
    const int b = body_arg(L, m, 2, "set_force");
    const Vec3 F = vec_arg(L, 3, "set_force", "the force");
    d.applied_force[b] = F;
    if (!lua_isnoneornil(L, 4)) {
        const Vec3 p = vec_arg(L, 4, "set_force", "the point");
        d.applied_torque[b] = cross(rotate(d.pose[b].q, p), F);
    }
    return 0;
}

int l_set_torque(lua_State* L, const Model& m, Data& d) {
    const int b = body_arg(L, m, 2, "set_torque");
    d.applied_torque[b] = vec_arg(L, 3, "set_torque", "the torque");
    return 0;
}

namespace {

void push_list(lua_State* L, const double* v, int n) {
    lua_createtable(L, n, 0);
    for (int k = 0; k < n; ++k) {
        lua_pushnumber(L, v[k]);
        lua_rawseti(L, -2, k + 1);
    }
}
// rows × cols row-major as a list of rows.
void push_matrix(lua_State* L, const double* M, int rows, int cols) {
    lua_createtable(L, rows, 0);
    for (int r = 0; r < rows; ++r) {
        push_list(L, M + static_cast<std::size_t>(r) * cols, cols);
        lua_rawseti(L, -2, r + 1);
    }
}
// A list of exactly n finite numbers at stack index idx.
std::vector<double> number_list(lua_State* L, int idx, int n, const char* what, const char* name) {
    if (!lua_istable(L, idx)) fail(L, "%s: %s must be a list of %s numbers, got %s", what, name, std::to_string(n), type_of(L, idx));
    const lua_Integer len = static_cast<lua_Integer>(lua_rawlen(L, idx));
    if (len != n)
        fail(L, "%s: %s must have %s values (one per joint DOF, in w:dofs() order), got %s", what, name, std::to_string(n),
             std::to_string(len));
    std::vector<double> v(n);
    for (int k = 0; k < n; ++k) {
        lua_rawgeti(L, idx, k + 1);
        const bool ok = lua_type(L, -1) == LUA_TNUMBER;
        v[k] = lua_tonumber(L, -1);
        lua_pop(L, 1);
        if (!ok || !std::isfinite(v[k]))
            fail(L, "%s: %s[%s] must be a finite number", what, name, std::to_string(k + 1));
    }
    return v;
}

}  // namespace

int l_dofs(lua_State* L, const Model& m, Data&) {
    lua_createtable(L, m.total_dofs, 0);
    int k = 0;
    for (const JointInfo& j : m.joints)
        for (int c = 0; c < j.dofs; ++c) {
            const std::string name = j.dofs == 1 ? j.name : j.name + "[" + std::to_string(c + 1) + "]";
            lua_pushstring(L, name.c_str());
            lua_rawseti(L, -2, ++k);
        }
    return 1;
}

int l_joint_state(lua_State* L, const Model& m, Data& d) {
    push_list(L, d.coord.data(), m.total_dofs);
    push_list(L, d.rate.data(), m.total_dofs);
    return 2;
}

int l_set_joint_state(lua_State* L, const Model& m, Data& d) {
    const std::vector<double> q = number_list(L, 2, m.total_dofs, "set_joint_state", "q");
    const std::vector<double> qd = number_list(L, 3, m.total_dofs, "set_joint_state", "qdot");
    try {
        set_joint_state(m, d, q.data(), qd.data());
    } catch (const UsageError& e) {
        fail(L, "%s", e.what());  // with the script line
    }
    return 0;
}

int l_linearize(lua_State* L, const Model& m, Data& d) {
    Linearization lin;
    StepStatus st = StepStatus::ok;
    try {
        st = linearize(m, d, lin);
    } catch (const UsageError& e) {
        fail(L, "%s", e.what());  // with the script line
    }
    if (st != StepStatus::ok) fail(L, "linearize: the step from this state failed (%s)", status_name(st));
    const int n = lin.n;
    lua_createtable(L, 0, 5);
    push_matrix(L, lin.A.data(), 2 * n, 2 * n);
    lua_setfield(L, -2, "A");
    push_matrix(L, lin.B.data(), 2 * n, n);
    lua_setfield(L, -2, "B");
    push_list(L, lin.x.data(), 2 * n);
    lua_setfield(L, -2, "x");
    push_list(L, lin.x_next.data(), 2 * n);
    lua_setfield(L, -2, "x_next");
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "n");
    return 1;
}

int l_monitors(lua_State* L, const Model& m, Data& d) {
    const Monitors mon = monitors(m, d);
    lua_createtable(L, 0, 8);
    lua_pushnumber(L, d.time);
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
    lua_pushinteger(L, d.last.iterations);
    lua_setfield(L, -2, "newton");
    return 1;
}

int l_save(lua_State* L, const Model&, Data& d) {
    const std::string s = d.save();
    lua_pushlstring(L, s.data(), s.size());
    return 1;
}

int l_restore(lua_State* L, const Model&, Data& d) {
    std::size_t n = 0;
    if (lua_type(L, 2) != LUA_TSTRING) fail(L, "restore: expected a state string from w:save(), got %s", type_of(L, 2));
    const char* s = lua_tolstring(L, 2, &n);
    try {
        d.restore(std::string(s, n));
    } catch (const Error& e) {
        fail(L, "restore: %s", e.what());
    }
    return 0;
}

int l_save_file(lua_State* L, const Model&, Data& d) {
    try {
        const std::string path = arg_string(L, 2, "save_file", "the path");
        const std::string mine = member_path(*context(L), path);
        if (mine.empty())
            fail(L, "save_file: '%s': a sweep member writes only paths naming it (put {member} in the name)", path);
        d.save_file(sandbox_path(L, mine, true, "save_file path"), sandbox_follows_links(L));
    } catch (const Error& e) {
        fail(L, "save_file: %s", e.what());
    }
    return 0;
}

int l_restore_file(lua_State* L, const Model&, Data& d) {
    try {
        d.restore_file(sandbox_path(L, arg_string(L, 2, "restore_file", "the path"), false, "restore_file path"));
    } catch (const Error& e) {
        fail(L, "restore_file: %s", e.what());
    }
    return 0;
}


}  // namespace lua
}  // namespace noether
