// The step, owned by the kernel: check → snapshot → advance → commit or restore → joint
// coordinates (no snapshot for an integrator that rolls back its own failed steps). Integrator
// plugins only advance the state (noether/sdk/integrator.hpp); time, counters, the last-step
// record and the warnings are written here, in one format.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "noether/data.hpp"
#include "noether/sdk/integrator.hpp"

namespace noether {

namespace {

std::string node_name(const Model& m, int node) {
    if (node < 0 || node >= m.graph.nnodes()) return "";
    if (node < m.nbodies()) return "body '" + m.bodies[node].name + "'";
    return "joint '" + m.joints[node - m.nbodies()].name + "'";
}

void warn_failure(const Model& m, Data& d, const StepReport& r) {
    const double dt = m.options.dt;
    char buf[640];
    int n = std::snprintf(buf, sizeof buf, "step %lld (t = %.6g s): %s at dt = %.6g s",
                          static_cast<long long>(d.step + 1), d.time + dt, status_name(r.status), dt);
    auto add = [&](const char* fmt, auto... args) {
        if (n >= 0 && n < static_cast<int>(sizeof buf)) n += std::snprintf(buf + n, sizeof buf - n, fmt, args...);
    };
    if (r.attempts > 1) add(", also with up to %d substeps", m.options.max_substeps);
    const std::string worst = node_name(m, r.worst_node);
    if (m.integrator->scheme() == Integrator::Scheme::implicit_fixed || !worst.empty()) {
        add("%s", " (");
        if (m.integrator->scheme() == Integrator::Scheme::implicit_fixed) add("last residual %.3g", r.residual);
        if (!worst.empty()) add("%sworst %s", m.integrator->scheme() == Integrator::Scheme::implicit_fixed ? ", " : "",
                                worst.c_str());
        add("%s", ")");
    }
    add("; the state is left at t = %.6g s", d.time);
    std::string text = buf;
    if (r.solver_error && !r.solver_error->empty()) text += "; solver '" + m.solver_name + "': " + *r.solver_error;
    d.warn(text);
}

void warn_subdivided(const Model& m, Data& d, const StepReport& r) {
    if (d.warned("step/subdivided")) return;
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "step %lld (t = %.6g s): Newton did not converge at dt = %.6g s; recovered with %d substeps "
                  "(first time this run; further subdivided steps are only counted)",
                  static_cast<long long>(d.step + 1), d.time + m.options.dt, m.options.dt, r.substeps);
    d.warn_once("step/subdivided", buf);
}

void warn_floor(const Model& m, Data& d, const StepReport& r) {
    if (d.warned("step/floor")) return;
    char buf[640];
    const std::string worst = node_name(m, r.worst_node);
    std::snprintf(buf, sizeof buf,
                  "step %lld (t = %.6g s): Newton stopped at residual %.3g, above the tolerance %.3g: no update "
                  "changed the solution any more (its floor, e.g. a loop at a singular pose)%s%s; the step was "
                  "accepted (first time this run; further ones are counted in the summary)",
                  static_cast<long long>(d.step + 1), d.time + m.options.dt, r.residual, m.options.tolerance,
                  worst.empty() ? "" : "; worst ", worst.c_str());
    d.warn_once("step/floor", buf);
}

void warn_redundant(const Model& m, Data& d, const StepReport& r) {
    if (!r.redundant_joints || r.redundant_joints->empty() || d.warned("step/redundant")) return;
    std::string names;
    for (int j : *r.redundant_joints) names += (names.empty() ? "'" : ", '") + m.joints[j].name + "'";
    d.warn_once("step/redundant", "solver '" + m.solver_name + "': the rows of loop joint(s) " + names +
                                      " are partly redundant; their multipliers are the minimum-norm ones");
}

void commit(const Model& m, Data& d, const StepReport& r) {
    d.last = {r.iterations, r.residual, r.halvings, r.substeps, r.projections};
    // Time is step·dt (a running sum drifts: 10 steps of 0.01 gave 0.09999999999999999), unless a
    // restored state's time does not fit its step (another dt): then it goes on from there.
    const double dt = m.options.dt;
    d.time = d.time == static_cast<double>(d.step) * dt ? static_cast<double>(d.step + 1) * dt : d.time + dt;
    ++d.step;
    RunStats& s = d.stats;
    ++s.steps;
    s.newton_total += r.iterations;
    s.factor_total += r.factorizations;
    s.newton_max = std::max(s.newton_max, r.iterations);
    s.newton_work += r.work;
    if (r.subdivided) ++s.subdivided_steps;
    if (r.at_floor) ++s.floor_steps;
    s.redundant_rows = std::max(s.redundant_rows, r.redundant_rows);
    s.internal_steps += r.internal_steps;
    s.rejected_steps += r.rejected_steps;
    s.projection_total += r.projections;
}

}  // namespace

namespace detail {
// The commit renews the poses and twists the next snapshot compares against (Data::host_changed).
struct StepAccess {
    static void committed(Data& d) { d.mark_committed(); }
    static void begin_unsnapshotted(Data& d) { d.begin_step_unsnapshotted(); }
    static void recover(Data& d) { d.recover_last_commit(); }
};
}  // namespace detail

namespace {

// Servo inputs a host or controller set (docs/servos.md): gains >= 0 (a velocity servo's kp 0) and
// finite targets, or the step is refused before anything moves.
void check_servo_inputs(const Model& m, const Data& d) {
    for (const JointInfo& j : m.joints) {
        if (j.servo == ServoSpec::Kind::none) continue;
        const int i = j.dof_offset;
        const char* kind = j.servo == ServoSpec::Kind::position ? "position servo" : "velocity servo";
        auto bad = [&](const char* what, double v, const char* rule) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.17g", v);
            throw UsageError("step: joint '" + j.name + "': " + kind + " " + what + " must be " + rule + ", got " + buf);
        };
        if (!(d.servo_kp[i] >= 0) || !std::isfinite(d.servo_kp[i])) bad("kp", d.servo_kp[i], "non-negative and finite");
        if (!(d.servo_kv[i] >= 0) || !std::isfinite(d.servo_kv[i])) bad("kv", d.servo_kv[i], "non-negative and finite");
        if (j.servo == ServoSpec::Kind::velocity && d.servo_kp[i] != 0) bad("kp", d.servo_kp[i], "0 (a velocity servo)");
        if (!std::isfinite(d.target_position[i])) bad("target", d.target_position[i], "finite");
        if (!std::isfinite(d.target_velocity[i])) bad("target_velocity", d.target_velocity[i], "finite");
    }
}

}  // namespace

StepStatus step(const Model& m, Data& d) {
    // check
    if (&d.model() != &m) throw UsageError("step: the Data was made for another Model");
    if (!m.integrator) throw UsageError("step: the Model was compiled without an integrator");
    if (!d.integrator_state) throw UsageError("step: the Data has no integrator state (made before the integrator?)");
    if (m.servos > 0) check_servo_inputs(m, d);
    // snapshot (and the host-edit test); an integrator that undoes its own failed steps: the
    // host-edit test alone
    const bool own_rollback = m.integrator->rolls_back_itself();
    if (own_rollback) detail::StepAccess::begin_unsnapshotted(d);
    else d.snapshot_step();
    // advance
    StepReport r;
    try {
        r = m.integrator->advance(m, d);
    } catch (...) {
        if (!own_rollback) d.rollback_step();
        throw;
    }
    // Any integrator: a non-finite state is a failed step, never a committed one.
    bool broken = false;  // returned as ok all the same
    if (r.status == StepStatus::ok) {
        for (int b = 0; b < m.nbodies() && r.status == StepStatus::ok; ++b)
            if (!isfinite(d.pose[b].x) || !isfinite(d.pose[b].q) ||
                !isfinite(d.twist[b].v) || !isfinite(d.twist[b].w)) {
                r.status = StepStatus::non_finite;
                r.worst_node = b;
                broken = true;
            }
    }
    if (r.status != StepStatus::ok) {
        // restore: nothing of the failed attempt stays, only the failure is recorded (an
        // integrator that rolls back its own steps has; one that broke that promise: the last
        // commit's poses and twists, which it restarts from)
        if (!own_rollback) d.rollback_step();
        else if (broken) detail::StepAccess::recover(d);
        ++d.stats.failed_steps;
        d.stats.newton_work += r.work;
        warn_failure(m, d, r);
        if (own_rollback && broken)
            d.warn("the integrator rolls back its own failed steps (Integrator::rolls_back_itself()) but returned a "
                   "non-finite state as ok: the poses and twists of the last commit were put back and the integrator "
                   "restarts from them; its own state was not restored");
        return r.status;
    }
    // commit
    if (r.subdivided) warn_subdivided(m, d, r);
    if (r.at_floor) warn_floor(m, d, r);
    warn_redundant(m, d, r);
    commit(m, d, r);
    // joint coordinates (an integrator in joint coordinates wrote its own)
    if (!r.coordinates) update_joint_coordinates(m, d, d.twist.data());
    detail::StepAccess::committed(d);
    return StepStatus::ok;
}

}  // namespace noether
