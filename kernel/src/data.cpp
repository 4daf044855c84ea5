// Data: run state, save/restore, the step entry point, monitors and force services.
#include "noether/data.hpp"
#include "noether/output_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "noether/sdk/integrator.hpp"

namespace noether {

namespace {
// dst = src for the per-step snapshot's vectors: of the same size after the first step, copied by
// detail::copy_bytes (a small tree's few doubles without a library call; vector's copy-assignment
// and its memmove were ~45 instructions a vector, a third of the snapshot of a double pendulum).
template <class T>
void copy_into(std::vector<T>& dst, const std::vector<T>& src) {
    if constexpr (std::is_trivially_copyable_v<T>) {
        if (dst.size() == src.size()) {
            detail::copy_bytes(dst.data(), src.data(), sizeof(T) * src.size());
            return;
        }
    }
    dst = src;
}
}  // namespace

const char* status_name(StepStatus s) {
    switch (s) {
        case StepStatus::ok: return "ok";
        case StepStatus::not_converged: return "not converged";
        case StepStatus::rotation_limit: return "rotation limit";
        case StepStatus::non_finite: return "non-finite value";
        case StepStatus::singular: return "singular system";
        case StepStatus::diverged: return "diverged";
    }
    return "?";
}

Data::Data(std::shared_ptr<const Model> model) : model_(std::move(model)) {
    if (!model_) throw UsageError("Data: model is null");
    reset();
}

Data::~Data() = default;

bool Data::changed_since_commit() const {
    // Bit for bit against the snapshot, which holds the last commit's poses and twists between
    // steps: memcmp (the structs are doubles without padding).
    return edit_pending_ || snap_.pose.size() != pose.size() || snap_.twist.size() != twist.size() ||
           (!pose.empty() && std::memcmp(pose.data(), snap_.pose.data(), sizeof(Pose) * pose.size()) != 0) ||
           (!twist.empty() && std::memcmp(twist.data(), snap_.twist.data(), sizeof(Twist) * twist.size()) != 0);
}

void Data::mark_committed() {
    // Into vectors of the same size (copy_into): no allocation after the first.
    copy_into(snap_.pose, pose);
    copy_into(snap_.twist, twist);
    edit_pending_ = false;
}

void Data::reset() {
    const Model& m = *model_;
    const int nb = m.nbodies();
    time = 0;
    step = 0;
    pose.resize(nb);
    twist.resize(nb);
    twist_guess.resize(nb);
    for (int i = 0; i < nb; ++i) {
        pose[i] = m.bodies[i].pose0;
        twist[i] = m.bodies[i].twist0;
        twist_guess[i] = m.bodies[i].twist0;
    }
    lambda.assign(m.total_rows, 0.0);
    contact.assign(m.contacts.size(), ContactResult{});
    limit_force.assign(m.total_dofs, 0.0);
    coupling_force.assign(m.couplings.size(), 0.0);
    turn_guard = 0;
    coord.assign(m.total_dofs, 0.0);
    rate.assign(m.total_dofs, 0.0);
    for (const JointInfo& j : m.joints)
        for (int k = 0; k < j.dofs; ++k) coord[j.dof_offset + k] = j.offset[k];
    actuation.assign(m.total_dofs, 0.0);
    servo_kp.assign(m.total_dofs, 0.0);
    servo_kv.assign(m.total_dofs, 0.0);
    target_position.assign(m.total_dofs, 0.0);
    target_velocity.assign(m.total_dofs, 0.0);
    for (const JointInfo& j : m.joints)
        if (j.servo != ServoSpec::Kind::none) {
            servo_kp[j.dof_offset] = j.servo_kp;
            servo_kv[j.dof_offset] = j.servo_kv;
            target_position[j.dof_offset] = j.servo_target;
            target_velocity[j.dof_offset] = j.servo_target_velocity;
        }
    applied_force.assign(nb, Vec3{});
    applied_torque.assign(nb, Vec3{});
    last = StepStats{};
    stats = RunStats{};
    warnings.clear();
    warned_keys_.clear();
    update_joint_coordinates(m, *this, twist.data());
    integrator_state = m.integrator ? m.integrator->create_state(m) : nullptr;
    snap_.integrator_state.reserve(256);
    snapshot_step();  // sizes the snapshot: later snapshots do not allocate
    edit_pending_ = host_changed_ = false;  // the initial state counts as committed
}

void Data::warn(const std::string& message) { warnings.push_back({time, step, message}); }

bool Data::warned(const char* key) const {
    for (const std::string& k : warned_keys_)
        if (k == key) return true;
    return false;
}

bool Data::warn_once(const char* key, const std::string& message) {
    if (warned(key)) return false;
    warned_keys_.emplace_back(key);
    warn(message);
    return true;
}

// ---- save / restore --------------------------------------------------------------------------

namespace {

constexpr char kMagic[8] = {'N', 'O', 'E', 'T', 'H', 'E', 'R', 'D'};
// 2: StepStats::projections, RunStats::projection_total; 3: RunStats::floor_steps; 4: whether the
// state was edited by a host after its commit
constexpr std::uint32_t kFormat = 13;  // 5: servo inputs; 6: turn_guard; 7: the guesses' misses (riqn, vi-galerkin); 8: riqn's secant pairs; 9: riqn's and vi-galerkin's substep hold; 10: RunStats::factor_total; 11: riqn's five misses and their degree; 12: vi-galerkin's and vi-maximal's (vi-midpoint's) misses and their degree; 13: riqn's remembered last resort

struct Writer {
    std::string& out;
    template <class T>
    void pod(const T& v) { out.append(reinterpret_cast<const char*>(&v), sizeof(T)); }
    template <class T>
    void vec(const std::vector<T>& v) {
        pod(static_cast<std::uint64_t>(v.size()));
        if (!v.empty()) out.append(reinterpret_cast<const char*>(v.data()), sizeof(T) * v.size());
    }
    void str(const std::string& s) {
        pod(static_cast<std::uint64_t>(s.size()));
        out.append(s);
    }
};

struct Reader {
    const char* p;
    const char* end;
    template <class T>
    void pod(T& v) {
        if (static_cast<std::size_t>(end - p) < sizeof(T)) throw UsageError("Data::restore: buffer is truncated");
        std::memcpy(&v, p, sizeof(T));
        p += sizeof(T);
    }
    template <class T>
    void vec(std::vector<T>& v, std::size_t expect) {
        std::uint64_t n = 0;
        pod(n);
        if (n != expect)
            throw UsageError("Data::restore: array has " + std::to_string(n) + " entries, the model needs " +
                             std::to_string(expect));
        if (static_cast<std::size_t>(end - p) < sizeof(T) * n) throw UsageError("Data::restore: buffer is truncated");
        v.resize(n);
        if (n) std::memcpy(v.data(), p, sizeof(T) * n);
        p += sizeof(T) * n;
    }
    void str(std::string& s) {
        std::uint64_t n = 0;
        pod(n);
        if (static_cast<std::uint64_t>(end - p) < n) throw UsageError("Data::restore: buffer is truncated");
        s.assign(p, n);
        p += n;
    }
};

}  // namespace

std::string Data::save() const {
    std::string out;
    Writer w{out};
    out.append(kMagic, sizeof kMagic);
    w.pod(kFormat);
    w.pod(model_->fingerprint);
    w.pod(time);
    w.pod(step);
    w.pod(static_cast<std::uint8_t>(changed_since_commit() ? 1 : 0));
    w.vec(pose);
    w.vec(twist);
    w.vec(twist_guess);
    w.vec(lambda);
    w.vec(coord);
    w.vec(rate);
    w.vec(actuation);
    w.vec(servo_kp);
    w.vec(servo_kv);
    w.vec(target_position);
    w.vec(target_velocity);
    w.vec(applied_force);
    w.vec(applied_torque);
    w.pod(turn_guard);
    // Field by field: the structs have padding, and save() must be a function of the values.
    w.pod(last.iterations);
    w.pod(last.residual);
    w.pod(last.halvings);
    w.pod(last.substeps);
    w.pod(last.projections);
#define NOETHER_X(type, name) w.pod(stats.name);
    NOETHER_RUN_STATS(NOETHER_X)
#undef NOETHER_X
    w.pod(static_cast<std::uint64_t>(warnings.size()));
    for (const Warning& x : warnings) {
        w.pod(x.time);
        w.pod(x.step);
        w.str(x.message);
    }
    w.pod(static_cast<std::uint64_t>(warned_keys_.size()));
    for (const std::string& k : warned_keys_) w.str(k);
    std::string istate;
    if (integrator_state) integrator_state->save(istate);
    w.str(istate);
    return out;
}

void Data::restore(const std::string& bytes) {
    const Model& m = *model_;
    Reader r{bytes.data(), bytes.data() + bytes.size()};
    if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        throw UsageError("Data::restore: not a saved noether state (bad magic)");
    r.p += sizeof kMagic;
    std::uint32_t format = 0;
    r.pod(format);
    if (format != kFormat)
        throw UsageError("Data::restore: state format " + std::to_string(format) + ", this build reads format " +
                         std::to_string(kFormat));
    std::uint64_t fp = 0;
    r.pod(fp);
    if (fp != m.fingerprint)
        throw UsageError("Data::restore: the state was saved from a model with a different structure");
    // Read everything into temporaries first: nothing is changed unless all of it is valid.
    double t = 0;
    std::int64_t s = 0;
    std::vector<Pose> p;
    std::vector<Twist> tw, tg;
    std::vector<double> lam, co, ra, act, skp, skv, stp, stv;
    std::vector<Vec3> af, at;
    StepStats ls;
    RunStats rs;
    std::vector<Warning> ws;
    std::vector<std::string> keys;
    r.pod(t);
    r.pod(s);
    std::uint8_t edited = 0;
    r.pod(edited);
    if (edited > 1) throw UsageError("Data::restore: the state is malformed (edit flag " + std::to_string(edited) + ")");
    r.vec(p, m.nbodies());
    r.vec(tw, m.nbodies());
    r.vec(tg, m.nbodies());
    r.vec(lam, m.total_rows);
    r.vec(co, m.total_dofs);
    r.vec(ra, m.total_dofs);
    r.vec(act, m.total_dofs);
    r.vec(skp, m.total_dofs);
    r.vec(skv, m.total_dofs);
    r.vec(stp, m.total_dofs);
    r.vec(stv, m.total_dofs);
    r.vec(af, m.nbodies());
    r.vec(at, m.nbodies());
    double guard = 0;
    r.pod(guard);
    r.pod(ls.iterations);
    r.pod(ls.residual);
    r.pod(ls.halvings);
    r.pod(ls.substeps);
    r.pod(ls.projections);
#define NOETHER_X(type, name) r.pod(rs.name);
    NOETHER_RUN_STATS(NOETHER_X)
#undef NOETHER_X
    std::uint64_t nw = 0;
    r.pod(nw);
    for (std::uint64_t i = 0; i < nw; ++i) {
        Warning x;
        r.pod(x.time);
        r.pod(x.step);
        r.str(x.message);
        ws.push_back(std::move(x));
    }
    std::uint64_t nk = 0;
    r.pod(nk);
    for (std::uint64_t i = 0; i < nk; ++i) {
        std::string k;
        r.str(k);
        keys.push_back(std::move(k));
    }
    std::string istate;
    r.str(istate);
    if (r.p != r.end) throw UsageError("Data::restore: trailing bytes after the state");
    auto finite = [](const auto& v, const char* what) {
        const double* x = reinterpret_cast<const double*>(v.data());
        const std::size_t n = v.size() * sizeof(v[0]) / sizeof(double);
        for (std::size_t i = 0; i < n; ++i)
            if (!std::isfinite(x[i])) throw UsageError(std::string("Data::restore: the state has a non-finite ") + what);
    };
    if (!std::isfinite(t)) throw UsageError("Data::restore: the state has a non-finite time");
    finite(p, "pose");
    finite(tw, "velocity");
    finite(tg, "warm start");
    finite(lam, "multiplier");
    finite(co, "joint coordinate");
    finite(ra, "joint rate");
    finite(act, "actuation");
    finite(skp, "servo kp");
    finite(skv, "servo kv");
    finite(stp, "servo target");
    finite(stv, "servo target velocity");
    finite(af, "applied force");
    finite(at, "applied torque");
    if (!(guard >= 0 && guard <= 3.2)) throw UsageError("Data::restore: the state has a turn guard outside [0, 3.2]");
    std::unique_ptr<IntegratorState> ist = m.integrator ? m.integrator->create_state(m) : nullptr;
    if (ist) {
        const char* ip = istate.data();
        if (!ist->restore(ip, istate.data() + istate.size()) || ip != istate.data() + istate.size())
            throw UsageError("Data::restore: the integrator state is malformed");
    }
    time = t;
    step = s;
    // Copied into the existing storage (same sizes, checked above), not moved: a host's views of
    // these arrays (Python's numpy views, C pointers) stay valid across a restore.
    pose = p;
    twist = tw;
    twist_guess = tg;
    lambda = lam;
    coord = co;
    rate = ra;
    actuation = act;
    servo_kp = skp;
    servo_kv = skv;
    target_position = stp;
    target_velocity = stv;
    applied_force = af;
    applied_torque = at;
    turn_guard = guard;
    last = ls;
    stats = rs;
    warnings = std::move(ws);
    warned_keys_ = std::move(keys);
    integrator_state = std::move(ist);
    // The restored state is the committed one, unless it had been edited after its commit.
    mark_committed();
    edit_pending_ = edited != 0;
}

void Data::save_file(const std::string& path, bool follow_links) const {
    const std::string bytes = save();
    OutputFile f;
    try {
        f.open(path, ".tmp", follow_links);
    } catch (const UsageError& e) {
        throw UsageError(std::string("Data::save_file: ") + e.what());
    }
    std::fwrite(bytes.data(), 1, bytes.size(), f.fp());
    const std::string err = f.commit();
    if (!err.empty()) throw UsageError("Data::save_file: '" + path + "': " + err);
}

void Data::restore_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw UsageError("Data::restore_file: cannot open " + path);
    std::ostringstream ss;
    ss << f.rdbuf();
    restore(ss.str());
}

// ---- stepping and monitors -------------------------------------------------------------------

void Data::begin_step_unsnapshotted() {
    // Poses and twists: the snapshot holds the last commit's; copied only after a host edit.
    host_changed_ = changed_since_commit();
    if (host_changed_) {
        copy_into(snap_.pose, pose);
        copy_into(snap_.twist, twist);
        edit_pending_ = true;  // until a step commits (a failed step returns to the edit)
    }
    snapshot_valid_ = false;
}

void Data::recover_last_commit() {
    copy_into(pose, snap_.pose);
    copy_into(twist, snap_.twist);
    copy_into(twist_guess, snap_.twist);
    update_joint_coordinates(model(), *this, twist.data());
    edit_pending_ = true;
}

void Data::snapshot_step() {
    // Copies into vectors of the same size reuse their storage (copy_into); the integrator
    // state is serialised into a string whose capacity stays from the previous step.
    begin_step_unsnapshotted();
    snapshot_valid_ = true;
    snap_.time = time;
    snap_.step = step;
    copy_into(snap_.twist_guess, twist_guess);
    copy_into(snap_.lambda, lambda);
    copy_into(snap_.coord, coord);
    copy_into(snap_.rate, rate);
    copy_into(snap_.contact, contact);
    copy_into(snap_.limit_force, limit_force);
    copy_into(snap_.coupling_force, coupling_force);
    snap_.last = last;
    snap_.stats = stats;
    snap_.integrator_state.clear();
    if (integrator_state) integrator_state->save(snap_.integrator_state);
}

void Data::rollback_step() {
    if (!snapshot_valid_)
        throw UsageError("Data::rollback_step: no snapshot of this step (the Model's integrator rolls back its own "
                         "failed steps, Integrator::rolls_back_itself(): the kernel took none)");
    time = snap_.time;
    step = snap_.step;
    copy_into(pose, snap_.pose);
    copy_into(twist, snap_.twist);
    copy_into(twist_guess, snap_.twist_guess);
    copy_into(lambda, snap_.lambda);
    copy_into(coord, snap_.coord);
    copy_into(rate, snap_.rate);
    copy_into(contact, snap_.contact);
    copy_into(limit_force, snap_.limit_force);
    copy_into(coupling_force, snap_.coupling_force);
    last = snap_.last;
    stats = snap_.stats;
    if (integrator_state) {
        const char* p = snap_.integrator_state.data();
        const char* end = p + snap_.integrator_state.size();
        if (!integrator_state->restore(p, end) || p != end)
            throw UsageError("Data::rollback_step: the integrator state did not restore from its own snapshot");
    }
}

Monitors monitors(const Model& m, const Data& d) {
    if (&d.model() != &m) throw UsageError("monitors: the Data was made for another Model");
    return m.integrator ? m.integrator->monitors(m, d) : Integrator::default_monitors(m, d);
}

// The integrator SDK's option check (noether/sdk/integrator.hpp), beside its other service.
void check_positive_option(const Model& m, const char* integrator, const char* name, double value,
                           std::vector<Diagnostic>& out) {
    if (value > 0 && std::isfinite(value)) return;
    char buf[200];
    std::snprintf(buf, sizeof buf, "options: %s option '%s' must be positive and finite, got %g", integrator, name, value);
    out.push_back({Severity::error, m.origin, buf});
}

void check_max_turn_option(const Model& m, const char* integrator, double value, double limit,
                           std::vector<Diagnostic>& out) {
    if (value >= 0 && value <= limit) return;
    char buf[200];
    std::snprintf(buf, sizeof buf, "options: %s option 'max_turn' (radians per substep) must be in [0, %g] (0: off), got %g",
                  integrator, limit, value);
    out.push_back({Severity::error, m.origin, buf});
}

double substep_hold_option(const Model& m) {
    const auto it = m.options.extra.find("substep_hold");
    return it == m.options.extra.end() ? SubstepHold::kDefault : it->second;
}

void check_substep_hold_option(const Model& m, const char* integrator, std::vector<Diagnostic>& out) {
    if (m.options.extra_lists.count("substep_hold")) {
        out.push_back({Severity::error, m.origin,
                       std::string("options: ") + integrator + " option 'substep_hold' must be a number"});
        return;
    }
    const double hold = substep_hold_option(m);
    if (hold >= 0 && hold <= SubstepHold::kMax && hold == std::floor(hold)) return;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "options: %s option 'substep_hold' (steps a subdivision is kept) must be a whole number "
                  "in [0, %.0f] (0: off), got %g",
                  integrator, SubstepHold::kMax, hold);
    out.push_back({Severity::error, m.origin, buf});
}

const std::string* string_option(const Model& m, const char* name) {
    auto it = m.options.extra_lists.find(name);
    if (it == m.options.extra_lists.end() || it->second.size() != 1) return nullptr;
    return &it->second[0];
}

void check_choice_option(const Model& m, const char* integrator, const char* name,
                         std::initializer_list<const char*> allowed, std::vector<Diagnostic>& out) {
    std::string list;
    for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + "'" + a + "'";
    const std::string who = std::string("options: ") + integrator + " option '" + name + "'";
    if (m.options.extra.count(name)) {
        out.push_back({Severity::error, m.origin, who + " must be a string (one of " + list + "), got a number"});
        return;
    }
    auto it = m.options.extra_lists.find(name);
    if (it == m.options.extra_lists.end()) return;
    bool ok = it->second.size() == 1;
    if (ok) {
        ok = false;
        for (const char* a : allowed) ok |= it->second[0] == a;
    }
    if (!ok)
        out.push_back({Severity::error, m.origin,
                       who + " must be one of " + list + ", got '" + (it->second.empty() ? std::string("") : it->second[0]) +
                           (it->second.size() > 1 ? "', …" : "'")});
}

void refuse_armature(const Model& m, const char* integrator, std::vector<Diagnostic>& out) {
    for (const JointInfo& j : m.joints)
        for (double a : j.armature)
            if (a != 0) {
                char buf[48];
                std::snprintf(buf, sizeof buf, "%g", a);
                out.push_back({Severity::error, j.origin,
                               "joint '" + j.name + "': armature " + buf + ": integrator '" + integrator +
                                   "' does not take joint armature yet (integrators that do: vi-maximal, vi-midpoint)"});
                return;
            }
}

Monitors Integrator::default_monitors(const Model& m, const Data& d) {
    Monitors mon = continuous_monitors(m, d.pose.data(), d.twist.data());
    const double se = spring_energy(m, d.coord.data()), ae = armature_energy(m, d.rate.data());
    mon.potential += se;
    mon.kinetic += ae;
    mon.total += se + ae;
    return mon;
}

double max_violation(const Model& m, const Pose* poses, int* worst_joint) {
    double worst = 0;
    int wj = -1;
    double g[kMaxJointRows];
    for (int j = 0; j < m.njoints(); ++j) {
        const JointInfo& ji = m.joints[j];
        const Pose a = ji.a >= 0 ? poses[ji.a] : Pose{};
        ji.impl->constraint(a, poses[ji.b], g, nullptr, nullptr);
        for (int r = 0; r < ji.rows; ++r) {
            const double v = std::fabs(g[r]);
            if (!(v <= worst)) {  // also catches NaN
                worst = v;
                wj = j;
            }
        }
    }
    if (worst_joint) *worst_joint = wj;
    return worst;
}

double spring_energy(const Model& m, const double* coord) {
    double e = 0;
    for (const JointInfo& j : m.joints) {
        if (!j.has_force_element) continue;
        for (int k = 0; k < j.dofs; ++k) {
            const double x = coord[j.dof_offset + k] - j.rest[k];
            e += 0.5 * j.stiffness[k] * x * x;
        }
    }
    return e;
}

double armature_energy(const Model& m, const double* rate) {
    double e = 0;
    for (const JointInfo& j : m.joints) {
        if (!j.has_force_element) continue;
        for (int k = 0; k < j.dofs; ++k) e += 0.5 * j.armature[k] * rate[j.dof_offset + k] * rate[j.dof_offset + k];
    }
    return e;
}

Monitors continuous_monitors(const Model& m, const Pose* poses, const Twist* twists) {
    Monitors mon;
    for (int i = 0; i < m.nbodies(); ++i) {
        const BodyInfo& b = m.bodies[i];
        const Vec3 Jw = b.inertia * twists[i].w;
        mon.kinetic += 0.5 * b.mass * dot(twists[i].v, twists[i].v) + 0.5 * dot(twists[i].w, Jw);
        mon.potential -= b.mass * dot(m.gravity, poses[i].x);
        mon.momentum += b.mass * twists[i].v;
        mon.angular_momentum += cross(poses[i].x, b.mass * twists[i].v) + rotate(poses[i].q, Jw);
    }
    mon.total = mon.kinetic + mon.potential;
    mon.max_violation = max_violation(m, poses, &mon.worst_joint);
    return mon;
}

// ---- services --------------------------------------------------------------------------------

namespace {

// What the servo on DOF i asks for at a state, kp (θ* − θ) + kv (θ̇* − θ̇), before its limit.
double servo_demand(const Data& d, int i, double coord, double rate) {
    return d.servo_kp[i] * (d.target_position[i] - coord) + d.servo_kv[i] * (d.target_velocity[i] - rate);
}

// The servo force of joint j (1 DOF) at a state, clamped (explicit integrators).
double servo_force(const JointInfo& j, const Data& d, double coord, double rate) {
    return std::max(-j.effort_limit, std::min(j.effort_limit, servo_demand(d, j.dof_offset, coord, rate)));
}

// Rate of coordinate k: row k of Cb (and Ca, unless the parent is the world) times the twists.
double coordinate_rate(const JointInfo& j, const double* Ca, const double* Cb, int k, const Twist* twists) {
    double rate = 0;
    for (int col = 0; col < 3; ++col) {
        rate += Cb[6 * k + col] * twists[j.b].v[col] + Cb[6 * k + 3 + col] * twists[j.b].w[col];
        if (j.a >= 0) rate += Ca[6 * k + col] * twists[j.a].v[col] + Ca[6 * k + 3 + col] * twists[j.a].w[col];
    }
    return rate;
}

// w += Cᵀ u for a dofs×6 coordinate Jacobian C (position columns → world force, rotation
// columns → body-frame torque).
void add_generalized(const double* C, const double* u, int dofs, Wrench& w) {
    for (int k = 0; k < dofs; ++k) {
        const double* r = C + 6 * k;
        w.force += u[k] * Vec3{r[0], r[1], r[2]};
        w.torque += u[k] * Vec3{r[3], r[4], r[5]};
    }
}

// The wrenches of joint j onto its two bodies: actuation and springs, and dampers when twists
// are given (null: no dampers).
void add_joint_wrench(const JointInfo& j, const Data& d, const Inputs& in, const Pose* poses, const Twist* twists,
                      Wrench* out) {
    double Ca[6 * kMaxJointDofs], Cb[6 * kMaxJointDofs], c[kMaxJointDofs], u[kMaxJointDofs];
    const double* act = in.actuation + j.dof_offset;
    const Pose a = j.a >= 0 ? poses[j.a] : Pose{};
    j.impl->coordinate_jacobian(a, poses[j.b], j.a >= 0 ? Ca : nullptr, Cb);
    for (int k = 0; k < j.dofs; ++k) u[k] = act[k];
    if (j.has_force_element) {
        joint_coordinates(j, a, poses[j.b], &d.coord[j.dof_offset], c);  // as reported
        for (int k = 0; k < j.dofs; ++k) {
            if (twists)
                u[k] += -j.stiffness[k] * (c[k] - j.rest[k]) - j.damping[k] * coordinate_rate(j, Ca, Cb, k, twists);
            else
                u[k] += -j.stiffness[k] * (c[k] - j.rest[k]);
        }
        if (j.servo != ServoSpec::Kind::none) {  // explicit: the servo's force at this state
            const double rate = twists ? coordinate_rate(j, Ca, Cb, 0, twists) : d.rate[j.dof_offset];
            u[0] += servo_force(j, d, c[0], rate);
        }
    }
    add_generalized(Cb, u, j.dofs, out[j.b]);
    if (j.a >= 0) add_generalized(Ca, u, j.dofs, out[j.a]);
}

}  // namespace

ServoTerms servo_terms(const Model& m, const Data& d, int joint) {
    const JointInfo& j = m.joints[joint];
    ServoTerms t;
    if (j.servo == ServoSpec::Kind::none) return t;
    const int i = j.dof_offset;
    const double u = servo_demand(d, i, d.coord[i], d.rate[i]);
    if (std::fabs(u) > j.effort_limit) {
        t.force = u > 0 ? j.effort_limit : -j.effort_limit;
        t.saturated = true;
        return t;
    }
    t.kp = d.servo_kp[i];
    t.kv = d.servo_kv[i];
    t.target = d.target_position[i];
    t.force = t.kv * d.target_velocity[i];
    return t;
}

void applied_wrenches(const Model& m, const Data& d, const Pose* poses, const Twist* twists, Wrench* out) {
    applied_wrenches(m, d, d.inputs(), poses, twists, out);
}

void body_wrenches(const Model& m, const Inputs& in, const Pose* poses, Wrench* out) {
    const int nb = m.nbodies();
    for (int i = 0; i < nb; ++i) {
        out[i].force = in.force[i];
        out[i].torque = rotate_inv(poses[i].q, in.torque[i]);
    }
    for (const ForceInfo& f : m.forces) {
        const Quat& q = poses[f.body].q;
        const Vec3 Fw = f.body_frame ? rotate(q, f.force) : f.force;
        const Vec3 Tb = f.body_frame ? f.torque : rotate_inv(q, f.torque);
        out[f.body].force += Fw;
        out[f.body].torque += Tb;
        if (f.has_point) out[f.body].torque += cross(f.point, rotate_inv(q, Fw));
    }
}

void applied_wrenches(const Model& m, const Data& d, const Inputs& in, const Pose* poses, const Twist* twists,
                      Wrench* out) {
    body_wrenches(m, in, poses, out);
    for (const JointInfo& j : m.joints) {
        if (j.dofs == 0) continue;
        const double* act = in.actuation + j.dof_offset;
        bool any = j.has_force_element;
        for (int k = 0; k < j.dofs && !any; ++k) any = act[k] != 0;
        if (any) add_joint_wrench(j, d, in, poses, twists, out);
    }
}

void input_wrenches(const Model& m, const Inputs& in, const Pose* poses, Wrench* out) {
    body_wrenches(m, in, poses, out);
    double Ca[6 * kMaxJointDofs], Cb[6 * kMaxJointDofs];
    for (const JointInfo& j : m.joints) {
        const double* act = in.actuation + j.dof_offset;
        bool any = false;
        for (int k = 0; k < j.dofs && !any; ++k) any = act[k] != 0;
        if (!any) continue;
        j.impl->coordinate_jacobian(j.a >= 0 ? poses[j.a] : Pose{}, poses[j.b], j.a >= 0 ? Ca : nullptr, Cb);
        add_generalized(Cb, act, j.dofs, out[j.b]);
        if (j.a >= 0) add_generalized(Ca, act, j.dofs, out[j.a]);
    }
}

void add_joint_wrenches(const Model& m, const Data& d, const Inputs& in, const Pose* poses, int j, Wrench* out) {
    if (m.joints[j].dofs > 0) add_joint_wrench(m.joints[j], d, in, poses, nullptr, out);
}

void update_joint_coordinates(const Model& m, Data& d, const Twist* twists) {
    double Ca[6 * kMaxJointDofs], Cb[6 * kMaxJointDofs], p[kMaxJointDofs], c[kMaxJointDofs];
    for (const JointInfo& j : m.joints) {
        if (j.dofs == 0) continue;
        const Pose a = j.a >= 0 ? d.pose[j.a] : Pose{};
        double* coord = &d.coord[j.dof_offset];
        // joint_coordinates() (raw coordinates against the last ones) and the coordinate Jacobian
        // in one call
        for (int i = 0; i < j.dofs; ++i) p[i] = coord[i] - j.offset[i];
        j.impl->coordinate_state(a, d.pose[j.b], p, c, j.a >= 0 ? Ca : nullptr, Cb);
        for (int i = 0; i < j.dofs; ++i) coord[i] = c[i] + j.offset[i];
        for (int k = 0; k < j.dofs; ++k) d.rate[j.dof_offset + k] = coordinate_rate(j, Ca, Cb, k, twists);
    }
}

Monitors discrete_monitors(const Model& m, const Data& d, double dt) {
    Monitors mon;
    for (int i = 0; i < m.nbodies(); ++i) {
        const BodyInfo& b = m.bodies[i];
        const Vec3& v1 = d.twist[i].v;
        const Vec3& w1 = d.twist[i].w;
        const Vec3 Jw = b.inertia * w1;
        mon.kinetic += 0.5 * b.mass * dot(v1, v1) + 0.5 * dot(w1, Jw);
        mon.potential -= b.mass * dot(m.gravity, d.pose[i].x - (0.5 * dt) * v1);  // interval midpoint
        mon.momentum += b.mass * v1;
        const double sq = 4.0 / (dt * dt) - dot(w1, w1);
        const Vec3 pi = (0.5 * dt) * ((sq > 0 ? std::sqrt(sq) : 0.0) * Jw - cross(w1, Jw));
        mon.angular_momentum += cross(d.pose[i].x, b.mass * v1) + rotate(d.pose[i].q, pi);
    }
    mon.potential += spring_energy(m, d.coord.data());
    mon.kinetic += armature_energy(m, d.rate.data());
    mon.total = mon.kinetic + mon.potential;
    mon.max_violation = max_violation(m, d.pose.data(), &mon.worst_joint);
    return mon;
}

}  // namespace noether
