// The C API: thin wrappers that turn exceptions into status codes and messages.
#include "noether.h"
#include "noether/sdk/c_bridge.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <initializer_list>
#include <string>
#include <utility>

#include "noether/noether.hpp"
#include "noether/run.hpp"

#include <cmath>
#include <cstdlib>
#include <vector>

struct noether_spec {
    noether::Spec spec;
};
struct noether_model {
    std::shared_ptr<const noether::Model> model;
};
struct noether_data {
    std::unique_ptr<noether::Data> owned;  // null for the data of a run (owned by the run)
    noether::Data* data = nullptr;
    noether::Linearization lin;  // noether_linearize's matrices, sized on first use
};
struct noether_run {
    std::shared_ptr<noether::Run> run;
    noether::RunHooks* hooks = nullptr;  // a loaded scene's Lua callbacks (c_bridge::wrap_hosted_run), or none
    noether_data data;  // a view of run->data()
    noether_model model;  // the run's model, for noether_run_model
};


namespace {

thread_local std::string g_last_error;

// The kernel suggests options as "option 'NAME' = VALUE" (noether/error.hpp); a C host sets them
// with noether_spec_set_options / noether_spec_set_option.
std::string c_wording(const std::string& msg) {
    return noether::reword_options(msg, [](const std::string& name, const std::string& given) {
        const std::string value = given == "..." ? "<" + name + ">" : given;  // a suggestion without a value
        if (name == "integrator") return "noether_spec_set_options(spec, \"" + value + "\", NULL, dt)";
        if (name == "solver") return "noether_spec_set_options(spec, NULL, \"" + value + "\", dt)";
        if (name == "dt") return "noether_spec_set_options(spec, NULL, NULL, " + value + ")";
        return "noether_spec_set_option(spec, \"" + name + "\", " + value + ")";
    });
}

int fail(int status, const std::string& msg) {
    g_last_error = c_wording(msg);
    return status;
}

// Every C call but noether_last_error starts here: the message of a failure lasts until the next
// call on the thread, and a call that succeeds leaves "" (docs/c_api.md).
void clear_error() { g_last_error.clear(); }

// Run f(); map exceptions to a status and a message (the bridge's guarded(), declared for the
// libraries that extend the C API: one rule for all of them).
template <class F>
int guarded(F&& f) {
    return noether::c_bridge::guarded(std::forward<F>(f));
}

noether::Vec3 v3(const double* p) { return {p[0], p[1], p[2]}; }

}  // namespace

extern "C" {

const char* noether_version(void) { clear_error(); return noether::version(); }
const char* noether_last_error(void) { return g_last_error.c_str(); }

noether_spec* noether_spec_new(void) {
    clear_error();
    noether_spec* out = nullptr;
    guarded([&] {  // out of memory is a NULL and a message, never std::terminate (issue 31 item 4)
        out = new noether_spec();
        return NOETHER_OK;
    });
    return out;
}
void noether_spec_free(noether_spec* s) { clear_error(); delete s; }

int noether_spec_set_gravity(noether_spec* s, double gx, double gy, double gz) {
    clear_error();
    if (!s) return fail(NOETHER_USAGE, "noether_spec_set_gravity: spec is NULL");
    s->spec.gravity = {gx, gy, gz};
    return NOETHER_OK;
}

int noether_spec_set_options(noether_spec* s, const char* integrator, const char* solver, double dt) {
    clear_error();
    if (!s) return fail(NOETHER_USAGE, "noether_spec_set_options: spec is NULL");
    return guarded([&] {
        if (integrator) s->spec.options.integrator = integrator;
        if (solver) s->spec.options.solver = solver;
        s->spec.options.dt = dt;
        return NOETHER_OK;
    });
}

int noether_spec_set_option(noether_spec* s, const char* name, double value) {
    clear_error();
    if (!s || !name || !*name) return fail(NOETHER_USAGE, "noether_spec_set_option: spec and name are required");
    return guarded([&] {
        s->spec.options.extra[name] = value;
        return NOETHER_OK;
    });
}

int noether_spec_add_body(noether_spec* s, const char* name, double mass, const double inertia[9],
                          const double position[3], const double quat[4]) {
    clear_error();
    if (!s || !name) return fail(NOETHER_USAGE, "noether_spec_add_body: spec and name are required");
    noether::BodySpec& b = s->spec.add_body(name);
    b.mass = mass;
    if (inertia)
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) b.inertia.m[i][j] = inertia[3 * i + j];
    if (position) b.position = v3(position);
    if (quat) b.orientation = {quat[0], quat[1], quat[2], quat[3]};
    b.origin.element = "noether_spec_add_body";
    return NOETHER_OK;
}

int noether_spec_set_body_velocity(noether_spec* s, const char* name, const double v[3], const double w[3]) {
    clear_error();
    if (!s || !name) return fail(NOETHER_USAGE, "noether_spec_set_body_velocity: spec and name are required");
    for (auto& b : s->spec.bodies)
        if (b.name == name) {
            if (v) b.velocity = v3(v);
            if (w) b.angular_velocity = v3(w);
            return NOETHER_OK;
        }
    return fail(NOETHER_BAD_INPUT, std::string("noether_spec_set_body_velocity: body '") + name + "' not found");
}

int noether_spec_add_joint(noether_spec* s, const char* name, const char* type, const char* parent,
                           const char* child, const double anchor[3], const double axis[3]) {
    clear_error();
    if (!s || !name || !type || !child) return fail(NOETHER_USAGE, "noether_spec_add_joint: spec, name, type and child are required");
    noether::JointSpec& j = s->spec.add_joint(name, type, parent ? parent : "world", child);
    if (anchor) j.anchor = v3(anchor);
    if (axis) j.axis = v3(axis);
    j.origin.element = "noether_spec_add_joint";
    return NOETHER_OK;
}

int noether_spec_set_joint_limits(noether_spec* s, const char* joint, double lower, double upper) {
    clear_error();
    if (!s || !joint) return fail(NOETHER_USAGE, "noether_spec_set_joint_limits: spec and joint are required");
    for (noether::JointSpec& j : s->spec.joints)
        if (j.name == joint) {
            j.lower = {lower};
            j.upper = {upper};
            j.limited = true;
            return NOETHER_OK;
        }
    return fail(NOETHER_BAD_INPUT, std::string("noether_spec_set_joint_limits: no joint named '") + joint + "' (add it first)");
}

int noether_spec_set_joint_armature(noether_spec* s, const char* joint, double armature) {
    clear_error();
    if (!s || !joint) return fail(NOETHER_USAGE, "noether_spec_set_joint_armature: spec and joint are required");
    for (noether::JointSpec& j : s->spec.joints)
        if (j.name == joint) {
            j.armature = {armature};
            return NOETHER_OK;
        }
    return fail(NOETHER_BAD_INPUT, std::string("noether_spec_set_joint_armature: no joint named '") + joint + "' (add it first)");
}

int noether_spec_add_coupling(noether_spec* s, const char* name, const char* joint, int dof, const char* leader, int leader_dof,
                              double ratio, double offset) {
    clear_error();
    if (!s || !joint || !leader) return fail(NOETHER_USAGE, "noether_spec_add_coupling: spec, joint and leader are required");
    noether::CouplingSpec c;
    c.name = name ? name : "";
    c.joint = joint;
    c.dof = dof;
    c.leader = leader;
    c.leader_dof = leader_dof;
    c.ratio = ratio;
    c.offset = offset;
    c.origin.element = "noether_spec_add_coupling";
    s->spec.couplings.push_back(c);
    return NOETHER_OK;
}

int noether_spec_set_coupling_range(noether_spec* s, double lower, double upper) {
    clear_error();
    if (!s) return fail(NOETHER_USAGE, "noether_spec_set_coupling_range: spec is NULL");
    if (s->spec.couplings.empty())
        return fail(NOETHER_USAGE, "noether_spec_set_coupling_range: no coupling added yet (noether_spec_add_coupling first)");
    noether::CouplingSpec& c = s->spec.couplings.back();
    c.range = true;
    c.lower = lower;
    c.upper = upper;
    return NOETHER_OK;
}

int noether_spec_add_coupling_leader(noether_spec* s, const char* joint, int dof, double ratio) {
    clear_error();
    if (!s || !joint) return fail(NOETHER_USAGE, "noether_spec_add_coupling_leader: spec and joint are required");
    if (s->spec.couplings.empty())
        return fail(NOETHER_USAGE, "noether_spec_add_coupling_leader: no coupling added yet (noether_spec_add_coupling first)");
    s->spec.couplings.back().more.push_back({joint, dof, ratio});  // counted and checked at compile
    return NOETHER_OK;
}

int noether_spec_add_servo(noether_spec* s, const char* joint, const char* kind, double kp, double kv, double target,
                           double effort_limit) {
    clear_error();
    if (!s || !joint) return fail(NOETHER_USAGE, "noether_spec_add_servo: spec and joint are required");
    const std::string k = kind ? kind : "position";
    noether::ServoSpec sv;
    if (k == "position") sv.kind = noether::ServoSpec::Kind::position;
    else if (k == "velocity") sv.kind = noether::ServoSpec::Kind::velocity;
    else return fail(NOETHER_BAD_INPUT, "noether_spec_add_servo: kind must be \"position\" or \"velocity\", got \"" + k + "\"");
    sv.kp = kp;
    sv.kv = kv;
    if (sv.kind == noether::ServoSpec::Kind::position) {
        if (!std::isnan(target)) sv.target = target;
    } else {
        sv.target_velocity = target;
    }
    sv.effort_limit = effort_limit;
    for (noether::JointSpec& j : s->spec.joints)
        if (j.name == joint) {
            if (j.servo.kind != noether::ServoSpec::Kind::none)
                return fail(NOETHER_BAD_INPUT, std::string("noether_spec_add_servo: joint '") + joint + "' has a servo already");
            j.servo = sv;
            return NOETHER_OK;
        }
    return fail(NOETHER_BAD_INPUT, std::string("noether_spec_add_servo: no joint named '") + joint + "' (add it first)");
}

int noether_spec_add_contact(noether_spec* s, const char* name, const char* body, const char* shape, const double size[3],
                             const double position[3], const double quat[4], double mu, const double normal[3],
                             double offset, const char* other, double other_radius, const double other_position[3]) {
    clear_error();
    if (!s || !body) return fail(NOETHER_USAGE, "noether_spec_add_contact: spec and body are required");
    noether::ContactSpec c;
    const std::string type = shape ? shape : "point";
    if (type == "point") c.type = noether::ContactSpec::Type::point;
    else if (type == "sphere") c.type = noether::ContactSpec::Type::sphere;
    else if (type == "capsule") c.type = noether::ContactSpec::Type::capsule;
    else if (type == "box") c.type = noether::ContactSpec::Type::box;
    else
        return fail(NOETHER_BAD_INPUT, "noether_spec_add_contact: shape must be \"point\", \"sphere\", \"capsule\" or \"box\", got \"" +
                                           type + "\"");
    if (c.type != noether::ContactSpec::Type::point && !size)
        return fail(NOETHER_USAGE, "noether_spec_add_contact: a " + type + " needs its size");
    if (name) c.name = name;
    c.body = body;
    if (size) c.size = v3(size);
    if (position) c.pose.x = v3(position);
    if (quat) c.pose.q = {quat[0], quat[1], quat[2], quat[3]};
    c.mu = mu;
    if (normal) c.normal = v3(normal);
    c.offset = offset;
    if (other) {
        c.other = other;
        c.other_radius = other_radius;
        if (other_position) c.other_position = v3(other_position);
    }
    c.origin.element = "noether_spec_add_contact";
    s->spec.contacts.push_back(c);
    return NOETHER_OK;
}

noether_model* noether_compile(const noether_spec* s) {
    clear_error();
    if (!s) {
        fail(NOETHER_USAGE, "noether_compile: spec is NULL");
        return nullptr;
    }
    noether_model* out = nullptr;
    guarded([&] {
        auto m = noether::compile(s->spec);
        out = new noether_model{m};
        return NOETHER_OK;
    });
    return out;
}

void noether_model_free(noether_model* m) { clear_error(); delete m; }
int noether_nbodies(const noether_model* m) { clear_error(); return m ? m->model->nbodies() : 0; }
int noether_njoints(const noether_model* m) { clear_error(); return m ? m->model->njoints() : 0; }
int noether_body_index(const noether_model* m, const char* name) { clear_error(); return m && name ? m->model->body_index(name) : -1; }
const char* noether_body_name(const noether_model* m, int body) {
    clear_error();
    return m && body >= 0 && body < m->model->nbodies() ? m->model->bodies[body].name.c_str() : nullptr;
}
const char* noether_joint_name(const noether_model* m, int joint) {
    clear_error();
    return m && joint >= 0 && joint < m->model->njoints() ? m->model->joints[joint].name.c_str() : nullptr;
}
int noether_joint_dofs(const noether_model* m, int joint, int* offset) {
    clear_error();
    if (!m || joint < 0 || joint >= m->model->njoints()) {
        fail(NOETHER_BAD_INPUT, "noether_joint_dofs: joint index " + std::to_string(joint) + " out of range");
        return -1;
    }
    if (offset) *offset = m->model->joints[joint].dof_offset;
    return m->model->joints[joint].dofs;
}
double noether_dt(const noether_model* m) { clear_error(); return m ? m->model->options.dt : 0.0; }
int noether_joint_index(const noether_model* m, const char* name) { clear_error(); return m && name ? m->model->joint_index(name) : -1; }

noether_data* noether_data_new(const noether_model* m) {
    clear_error();
    if (!m) {
        fail(NOETHER_USAGE, "noether_data_new: model is NULL");
        return nullptr;
    }
    noether_data* out = nullptr;
    guarded([&] {
        auto d = std::make_unique<noether::Data>(m->model);
        out = new noether_data{std::move(d), nullptr, {}};
        out->data = out->owned.get();
        return NOETHER_OK;
    });
    return out;
}

void noether_data_free(noether_data* d) { clear_error(); delete d; }

int noether_step(noether_data* d) {
    clear_error();
    if (!d) return fail(NOETHER_USAGE, "noether_step: data is NULL");
    return guarded([&] {
        const noether::StepStatus st = noether::step(d->data->model(), *d->data);
        if (st == noether::StepStatus::ok) return static_cast<int>(NOETHER_OK);
        const auto& w = d->data->warnings;
        return fail(NOETHER_STEP_FAILED, w.empty() ? std::string(noether::status_name(st)) : w.back().message);
    });
}

double noether_time(const noether_data* d) { clear_error(); return d ? d->data->time : 0.0; }

int noether_body_pose(const noether_data* d, int body, double position[3], double quat[4]) {
    clear_error();
    if (!d) return fail(NOETHER_USAGE, "noether_body_pose: data is NULL");
    if (body < 0 || body >= d->data->model().nbodies())
        return fail(NOETHER_BAD_INPUT, "noether_body_pose: body index " + std::to_string(body) + " out of range");
    const noether::Pose& p = d->data->pose[body];
    if (position) position[0] = p.x.x, position[1] = p.x.y, position[2] = p.x.z;
    if (quat) quat[0] = p.q.w, quat[1] = p.q.x, quat[2] = p.q.y, quat[3] = p.q.z;
    return NOETHER_OK;
}

int noether_body_velocity(const noether_data* d, int body, double v[3], double w[3]) {
    clear_error();
    if (!d) return fail(NOETHER_USAGE, "noether_body_velocity: data is NULL");
    if (body < 0 || body >= d->data->model().nbodies())
        return fail(NOETHER_BAD_INPUT, "noether_body_velocity: body index " + std::to_string(body) + " out of range");
    const noether::Twist& t = d->data->twist[body];
    const noether::Vec3 ww = noether::rotate(d->data->pose[body].q, t.w);  // body frame → world
    if (v) v[0] = t.v.x, v[1] = t.v.y, v[2] = t.v.z;
    if (w) w[0] = ww.x, w[1] = ww.y, w[2] = ww.z;
    return NOETHER_OK;
}

int noether_ncontacts(const noether_model* m) {
    clear_error();
    return m ? static_cast<int>(m->model->contacts.size()) : 0;
}

const char* noether_contact_name(const noether_model* m, int k) {
    clear_error();
    return m && k >= 0 && k < static_cast<int>(m->model->contacts.size()) ? m->model->contacts[k].name.c_str() : nullptr;
}

int noether_contact(const noether_data* d, int k, double point[3], double normal[3], double* gap, double* normal_force,
                    double friction[3], int* active) {
    clear_error();
    if (!d) return fail(NOETHER_USAGE, "noether_contact: data is NULL");
    if (k < 0 || k >= static_cast<int>(d->data->contact.size()))
        return fail(NOETHER_BAD_INPUT, "noether_contact: contact index " + std::to_string(k) + " out of range (" +
                                           std::to_string(d->data->contact.size()) + " contact points)");
    const noether::ContactResult& r = d->data->contact[k];
    if (point) point[0] = r.point.x, point[1] = r.point.y, point[2] = r.point.z;
    if (normal) normal[0] = r.normal.x, normal[1] = r.normal.y, normal[2] = r.normal.z;
    if (gap) *gap = r.gap;
    if (normal_force) *normal_force = r.normal_force;
    if (friction) friction[0] = r.friction.x, friction[1] = r.friction.y, friction[2] = r.friction.z;
    if (active) *active = r.active ? 1 : 0;
    return NOETHER_OK;
}

int noether_ncouplings(const noether_model* m) {
    clear_error();
    return m ? static_cast<int>(m->model->couplings.size()) : 0;
}

const char* noether_coupling_name(const noether_model* m, int k) {
    clear_error();
    return m && k >= 0 && k < static_cast<int>(m->model->couplings.size()) ? m->model->couplings[k].name.c_str() : nullptr;
}

int noether_coupling_force(const noether_data* d, int k, double* force) {
    clear_error();
    if (!d || !force) return fail(NOETHER_USAGE, "noether_coupling_force: data and force are required");
    const int n = static_cast<int>(d->data->model().couplings.size());
    if (k < 0 || k >= n)
        return fail(NOETHER_BAD_INPUT, "noether_coupling_force: coupling index " + std::to_string(k) + " out of range (" +
                                           std::to_string(n) + " couplings)");
    *force = d->data->coupling_force[k];
    return NOETHER_OK;
}

int noether_limit_force(const noether_data* d, int joint, double* force, int n) {
    clear_error();
    if (!d || !force) return fail(NOETHER_USAGE, "noether_limit_force: data and force are required");
    const noether::Model& m = d->data->model();
    if (joint < 0 || joint >= m.njoints())
        return fail(NOETHER_BAD_INPUT, "noether_limit_force: joint index " + std::to_string(joint) + " out of range");
    const noether::JointInfo& j = m.joints[joint];
    if (n != j.dofs)
        return fail(NOETHER_BAD_INPUT, "noether_limit_force: joint '" + j.name + "' has " + std::to_string(j.dofs) +
                                           " degrees of freedom, got room for " + std::to_string(n));
    for (int i = 0; i < n; ++i) force[i] = d->data->limit_force[j.dof_offset + i];
    return NOETHER_OK;
}

struct noether_kinematics {
    std::unique_ptr<noether::Kinematics> k;
};

noether_kinematics* noether_kinematics_new(const noether_model* m) {
    clear_error();
    if (!m) {
        fail(NOETHER_USAGE, "noether_kinematics_new: model is NULL");
        return nullptr;
    }
    noether_kinematics* out = nullptr;
    guarded([&] {
        out = new noether_kinematics{std::make_unique<noether::Kinematics>(m->model)};
        return NOETHER_OK;
    });
    return out;
}

void noether_kinematics_free(noether_kinematics* k) {
    clear_error();
    delete k;
}

int noether_jacobian(noether_kinematics* k, const double* q, int body, const double point[3], double* J) {
    clear_error();
    if (!k || !q || !J) return fail(NOETHER_USAGE, "noether_jacobian: kinematics, q and J are required");
    return guarded([&] {
        if (point) k->k->point_jacobian(q, body, v3(point), J);
        else k->k->body_jacobian(q, body, J);
        return NOETHER_OK;
    });
}

int noether_mass_matrix(noether_kinematics* k, const double* q, double* M) {
    clear_error();
    if (!k || !q || !M) return fail(NOETHER_USAGE, "noether_mass_matrix: kinematics, q and M are required");
    return guarded([&] {
        k->k->mass_matrix(q, M);
        return NOETHER_OK;
    });
}

int noether_inverse_dynamics(noether_kinematics* k, const double* q, const double* qd, const double* qdd, double* tau) {
    clear_error();
    if (!k || !q || !tau) return fail(NOETHER_USAGE, "noether_inverse_dynamics: kinematics, q and tau are required");
    return guarded([&] {
        k->k->inverse_dynamics(q, qd, qdd, tau);
        return NOETHER_OK;
    });
}

int noether_forward_dynamics(noether_kinematics* k, const double* q, const double* qd, const double* tau, double* qdd) {
    clear_error();
    if (!k || !q || !qd || !tau || !qdd)
        return fail(NOETHER_USAGE, "noether_forward_dynamics: kinematics, q, qd, tau and qdd are required");
    return guarded([&] {
        k->k->forward_dynamics(q, qd, tau, qdd);
        return NOETHER_OK;
    });
}

int noether_center_of_mass(noether_kinematics* k, const double* q, double com[3], double* J) {
    clear_error();
    if (!k || !q || !com) return fail(NOETHER_USAGE, "noether_center_of_mass: kinematics, q and com are required");
    return guarded([&] {
        const noether::Vec3 c = k->k->center_of_mass(q);
        com[0] = c.x, com[1] = c.y, com[2] = c.z;
        if (J) k->k->com_jacobian(q, J);
        return NOETHER_OK;
    });
}

int noether_momentum(noether_kinematics* k, const double* q, const double* qd, double linear[3], double angular[3]) {
    clear_error();
    if (!k || !q || !qd) return fail(NOETHER_USAGE, "noether_momentum: kinematics, q and qd are required");
    return guarded([&] {
        noether::Vec3 p, l;
        k->k->momentum(q, qd, &p, &l);
        if (linear) linear[0] = p.x, linear[1] = p.y, linear[2] = p.z;
        if (angular) angular[0] = l.x, angular[1] = l.y, angular[2] = l.z;
        return NOETHER_OK;
    });
}

int noether_set_body_force(noether_data* d, int body, const double force[3], const double torque[3]) {
    clear_error();
    if (!d) return fail(NOETHER_USAGE, "noether_set_body_force: data is NULL");
    if (body < 0 || body >= d->data->model().nbodies())
        return fail(NOETHER_BAD_INPUT, "noether_set_body_force: body index " + std::to_string(body) + " out of range");
    const noether::Vec3 f = force ? v3(force) : d->data->applied_force[body];
    const noether::Vec3 t = torque ? v3(torque) : d->data->applied_torque[body];
    if (!noether::isfinite(f) || !noether::isfinite(t))
        return fail(NOETHER_BAD_INPUT, "noether_set_body_force: body '" + d->data->model().bodies[body].name +
                                           "': force and torque must be finite");
    d->data->applied_force[body] = f;
    d->data->applied_torque[body] = t;
    return NOETHER_OK;
}

int noether_save(const noether_data* d, char** bytes, size_t* n) {
    clear_error();
    if (bytes) *bytes = nullptr;
    if (n) *n = 0;
    if (!d || !bytes || !n) return fail(NOETHER_USAGE, "noether_save: data, bytes and n are required");
    return guarded([&] {
        const std::string s = d->data->save();
        char* out = static_cast<char*>(std::malloc(s.size() ? s.size() : 1));
        if (!out) return fail(NOETHER_BAD_INPUT, "noether_save: out of memory");
        std::memcpy(out, s.data(), s.size());
        *bytes = out;
        *n = s.size();
        return static_cast<int>(NOETHER_OK);
    });
}

int noether_restore(noether_data* d, const char* bytes, size_t n) {
    clear_error();
    if (!d || (!bytes && n)) return fail(NOETHER_USAGE, "noether_restore: data and bytes are required");
    return guarded([&] {
        try {
            d->data->restore(std::string(bytes ? bytes : "", n));
        } catch (const noether::UsageError& e) {
            return fail(NOETHER_BAD_INPUT, e.what());
        }
        return static_cast<int>(NOETHER_OK);
    });
}

namespace {

// The joint of a servo setter: in range and with a servo; values finite. NOETHER_OK or the failure.
int servo_setter(noether_data* d, int joint, const char* fn, std::initializer_list<std::pair<const char*, double>> values) {
    if (!d) return fail(NOETHER_USAGE, std::string(fn) + ": data is NULL");
    const noether::Model& m = d->data->model();
    if (joint < 0 || joint >= m.njoints())
        return fail(NOETHER_BAD_INPUT, std::string(fn) + ": joint index " + std::to_string(joint) + " out of range");
    const noether::JointInfo& j = m.joints[joint];
    if (j.servo == noether::ServoSpec::Kind::none)
        return fail(NOETHER_BAD_INPUT, std::string(fn) + ": joint '" + j.name + "' has no servo (noether_spec_add_servo)");
    for (const auto& [name, v] : values)
        if (!std::isfinite(v))
            return fail(NOETHER_BAD_INPUT, std::string(fn) + ": joint '" + j.name + "': " + name + " must be finite, got " +
                                               std::to_string(v));
    return NOETHER_OK;
}

}  // namespace

int noether_set_servo_target(noether_data* d, int joint, double position, double velocity) {
    clear_error();
    const char* fn = "noether_set_servo_target";
    if (int rc = servo_setter(d, joint, fn, {{"velocity", velocity}})) return rc;
    const noether::JointInfo& j = d->data->model().joints[joint];
    if (j.servo == noether::ServoSpec::Kind::position) {  // a velocity servo ignores `position`
        if (int rc = servo_setter(d, joint, fn, {{"position", position}})) return rc;
        d->data->target_position[j.dof_offset] = position;
    }
    d->data->target_velocity[j.dof_offset] = velocity;
    return NOETHER_OK;
}

int noether_set_servo_gains(noether_data* d, int joint, double kp, double kv) {
    clear_error();
    if (int rc = servo_setter(d, joint, "noether_set_servo_gains", {{"kp", kp}, {"kv", kv}})) return rc;
    const noether::JointInfo& j = d->data->model().joints[joint];
    if (kp < 0 || kv < 0)
        return fail(NOETHER_BAD_INPUT, "noether_set_servo_gains: joint '" + j.name + "': gains must be non-negative, got kp " +
                                           std::to_string(kp) + ", kv " + std::to_string(kv));
    if (j.servo == noether::ServoSpec::Kind::velocity && kp != 0)
        return fail(NOETHER_BAD_INPUT, "noether_set_servo_gains: joint '" + j.name + "': a velocity servo has no kp, got " +
                                           std::to_string(kp));
    d->data->servo_kp[j.dof_offset] = kp;
    d->data->servo_kv[j.dof_offset] = kv;
    return NOETHER_OK;
}

int noether_set_actuation(noether_data* d, int joint, const double* u, int n) {
    clear_error();
    if (!d) return fail(NOETHER_USAGE, "noether_set_actuation: data is NULL");
    const noether::Model& m = d->data->model();
    if (joint < 0 || joint >= m.njoints())
        return fail(NOETHER_BAD_INPUT, "noether_set_actuation: joint index " + std::to_string(joint) + " out of range");
    const noether::JointInfo& j = m.joints[joint];
    if (n != j.dofs)
        return fail(NOETHER_BAD_INPUT, "noether_set_actuation: joint '" + j.name + "' has " + std::to_string(j.dofs) +
                                           " DOFs, got " + std::to_string(n) + " values");
    if (n > 0 && !u) return fail(NOETHER_USAGE, "noether_set_actuation: u is NULL (joint '" + j.name + "')");
    for (int k = 0; k < n; ++k)
        if (!std::isfinite(u[k]))
            return fail(NOETHER_BAD_INPUT, "noether_set_actuation: joint '" + j.name + "': value " + std::to_string(k) +
                                               " is not finite (" + std::to_string(u[k]) + ")");
    for (int k = 0; k < n; ++k) d->data->actuation[j.dof_offset + k] = u[k];
    return NOETHER_OK;
}

int noether_monitors(const noether_data* d, double energy[3], double momentum[3], double angular_momentum[3],
                     double* violation) {
    clear_error();
    if (!d) return fail(NOETHER_USAGE, "noether_monitors: data is NULL");
    return guarded([&] {
        const noether::Monitors mon = noether::monitors(d->data->model(), *d->data);
        if (energy) energy[0] = mon.kinetic, energy[1] = mon.potential, energy[2] = mon.total;
        if (momentum) momentum[0] = mon.momentum.x, momentum[1] = mon.momentum.y, momentum[2] = mon.momentum.z;
        if (angular_momentum)
            angular_momentum[0] = mon.angular_momentum.x, angular_momentum[1] = mon.angular_momentum.y,
            angular_momentum[2] = mon.angular_momentum.z;
        if (violation) *violation = mon.max_violation;
        return static_cast<int>(NOETHER_OK);
    });
}

int noether_ndofs(const noether_model* m) { clear_error(); return m ? m->model->total_dofs : -1; }

int noether_joint_state(const noether_data* d, double* q, double* qdot) {
    clear_error();
    if (!d) return fail(NOETHER_USAGE, "noether_joint_state: data is NULL");
    const int n = d->data->model().total_dofs;
    for (int k = 0; k < n; ++k) {
        if (q) q[k] = d->data->coord[k];
        if (qdot) qdot[k] = d->data->rate[k];
    }
    return NOETHER_OK;
}

int noether_set_joint_state(noether_data* d, const double* q, const double* qdot) {
    clear_error();
    if (!d) return fail(NOETHER_USAGE, "noether_set_joint_state: data is NULL");
    if (!q || !qdot) return fail(NOETHER_BAD_INPUT, "noether_set_joint_state: q and qdot must not be NULL");
    return guarded([&] {
        noether::set_joint_state(d->data->model(), *d->data, q, qdot);
        return static_cast<int>(NOETHER_OK);
    });
}

int noether_linearize(noether_data* d, double* A, double* B, double* x, double* x_next) {
    clear_error();
    if (!d) return fail(NOETHER_USAGE, "noether_linearize: data is NULL");
    return guarded([&] {
        noether::Linearization& L = d->lin;
        const noether::StepStatus st = noether::linearize(d->data->model(), *d->data, L);
        if (st != noether::StepStatus::ok)
            return fail(NOETHER_STEP_FAILED, std::string("noether_linearize: the step from this state failed: ") +
                                                 noether::status_name(st));
        if (A) std::copy(L.A.begin(), L.A.end(), A);
        if (B) std::copy(L.B.begin(), L.B.end(), B);
        if (x) std::copy(L.x.begin(), L.x.end(), x);
        if (x_next) std::copy(L.x_next.begin(), L.x_next.end(), x_next);
        return static_cast<int>(NOETHER_OK);
    });
}

void noether_free(void* p) { clear_error(); std::free(p); }

// ---- runs ----------------------------------------------------------------------------------

noether_run* noether_run_new(const noether_model* m) {
    clear_error();
    if (!m) {
        fail(NOETHER_USAGE, "noether_run_new: model is NULL");
        return nullptr;
    }
    noether_run* out = nullptr;
    guarded([&] {
        auto r = std::make_unique<noether_run>();
        r->run = std::make_shared<noether::Run>(m->model);
        r->data.data = &r->run->data();
        r->model.model = m->model;
        out = r.release();
        return NOETHER_OK;
    });
    return out;
}

void noether_run_free(noether_run* r) { clear_error(); delete r; }

noether_data* noether_run_data(noether_run* r) { clear_error(); return r ? &r->data : nullptr; }

int noether_run_add_output(noether_run* r, const char* csv_path, int every, int nchannels,
                           const char* const* channels) {
    clear_error();
    if (!r) return fail(NOETHER_USAGE, "noether_run_add_output: run is NULL");
    if (nchannels < 0 || (nchannels > 0 && !channels))
        return fail(NOETHER_BAD_INPUT, "noether_run_add_output: channels is NULL or nchannels is negative");
    return guarded([&] {
        noether::OutputSpec o;
        o.file = csv_path ? csv_path : "";
        o.every = every;
        for (int i = 0; i < nchannels; ++i) {
            if (!channels[i]) return fail(NOETHER_BAD_INPUT, "noether_run_add_output: channel " + std::to_string(i) + " is NULL");
            o.channels.push_back(channels[i]);
        }
        try {
            r->run->add_output(o);
        } catch (const noether::UsageError& e) {
            return fail(NOETHER_BAD_INPUT, e.what());
        }
        return static_cast<int>(NOETHER_OK);
    });
}

int noether_run_add_recording(noether_run* r, const char* path, double fps) {
    clear_error();
    if (!r || !path) return fail(NOETHER_USAGE, "noether_run_add_recording: run and path are required");
    return guarded([&] {
        noether::OutputSpec o;
        o.format = noether::OutputSpec::Format::recording;
        o.file = path;
        o.fps = fps;
        try {
            r->run->add_output(o);
        } catch (const noether::UsageError& e) {
            return fail(NOETHER_BAD_INPUT, e.what());
        }
        return static_cast<int>(NOETHER_OK);
    });
}

const noether_model* noether_run_model(const noether_run* r) { clear_error(); return r ? &r->model : nullptr; }

int noether_run_steps(noether_run* r, long long n) {
    clear_error();
    if (!r) return fail(NOETHER_USAGE, "noether_run_steps: run is NULL");
    if (n < 0) return fail(NOETHER_BAD_INPUT, "noether_run_steps: the number of steps must be non-negative, got " + std::to_string(n));
    return guarded([&] {
        if (r->run->steps(n, r->hooks)) return static_cast<int>(NOETHER_OK);
        return fail(NOETHER_STEP_FAILED, r->run->failure());
    });
}

int noether_run_duration(noether_run* r, double seconds) {
    clear_error();
    if (!r) return fail(NOETHER_USAGE, "noether_run_duration: run is NULL");
    if (!(seconds >= 0) || seconds > 1e15)
        return fail(NOETHER_BAD_INPUT, "noether_run_duration: seconds must be a non-negative finite number");
    return noether_run_steps(r, r->run->steps_for(seconds));
}

int noether_run_finish(noether_run* r) {
    clear_error();
    if (!r) return fail(NOETHER_USAGE, "noether_run_finish: run is NULL");
    return guarded([&] {
        std::vector<std::string> notes;
        r->run->finish(&notes);
        if (notes.empty()) return static_cast<int>(NOETHER_OK);
        std::string msg;
        for (const std::string& n : notes) msg += (msg.empty() ? "" : "; ") + n;
        return fail(r->run->failed() ? NOETHER_STEP_FAILED : NOETHER_BAD_INPUT, msg);
    });
}

char* noether_run_summary_json(const noether_run* r) {
    clear_error();
    if (!r) {
        fail(NOETHER_USAGE, "noether_run_summary_json: run is NULL");
        return nullptr;
    }
    char* out = nullptr;
    guarded([&] {
        noether::RunSummary summary = r->run->summary();
        for (std::string& w : summary.warnings) w = c_wording(w);  // the kernel's suggestions as C calls
        const std::string json = summary.to_json();
        out = static_cast<char*>(std::malloc(json.size() + 1));
        if (!out) return fail(NOETHER_BAD_INPUT, "noether_run_summary_json: out of memory");
        std::memcpy(out, json.c_str(), json.size() + 1);
        return static_cast<int>(NOETHER_OK);
    });
    return out;
}


noether_model* noether_model_vary(const noether_model* m, const char* key, const double* values, int n) {
    clear_error();
    if (!m || !key || (n > 0 && !values) || n < 0) {
        fail(NOETHER_USAGE, "noether_model_vary: model, key and n >= 0 values are required");
        return nullptr;
    }
    noether_model* out = nullptr;
    guarded([&] {
        noether::ModelVariation v(m->model);
        v.set(key, std::vector<double>(values, values + n));
        auto r = std::make_unique<noether_model>();
        r->model = v.build();
        out = r.release();
        return NOETHER_OK;
    });
    return out;
}

}  // extern "C"

// ---- the bridge for libraries that extend the C API (noether/sdk/c_bridge.hpp) -------------------
#include "noether/sdk/c_bridge.hpp"

namespace noether {
namespace c_bridge {

noether_model* wrap_model(std::shared_ptr<const Model> model) { return new noether_model{std::move(model)}; }

noether_run* wrap_run(std::unique_ptr<Run> run) { return wrap_hosted_run(std::shared_ptr<Run>(std::move(run)), nullptr); }

noether_run* wrap_hosted_run(std::shared_ptr<Run> run, RunHooks* hooks) {
    auto r = std::make_unique<noether_run>();
    r->model.model = run->model_ptr();
    r->run = std::move(run);
    r->hooks = hooks;
    r->data.data = &r->run->data();
    return r.release();
}

Spec* spec_of(noether_spec* spec) { return spec ? &spec->spec : nullptr; }

int set_error(int status, const std::string& message) { return fail(status, message); }

std::shared_ptr<const Model> model_of(const noether_model* m) { return m ? m->model : nullptr; }

noether_data* data_view(Data* d) {
    auto v = std::make_unique<noether_data>();
    v->data = d;
    return v.release();
}

void retarget_data_view(noether_data* view, Data* d) {
    if (view) view->data = d;
}

void release_data_view(noether_data* view) { delete view; }

}  // namespace c_bridge
}  // namespace noether
