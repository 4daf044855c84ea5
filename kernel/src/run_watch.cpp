// The watch over a fixed-step run (docs/integrators.md, "Never a silent blow-up"): energy growth
// without inputs, bodies turning too far per step, a growing share of subdivided steps.
#include "noether/run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "noether/advice.hpp"
#include "noether/registry.hpp"
#include "noether/sdk/integrator.hpp"

namespace noether {

namespace {

// The watch's thresholds (docs/integrators.md, "Never a silent blow-up").
constexpr double kWatchTurn = 0.4;     // rad per step
constexpr double kWatchEnergy = 0.05;  // growth as a fraction of max(|E0|, largest kinetic energy)
constexpr double kWatchEnergyFloor = 1e-9;  // the scale's floor: of the total mass's weight over 1 m (J)
constexpr long long kWatchWindow = 200;
constexpr double kWatchShare = 0.1;
constexpr double kGuardTurn = 0.1;     // rad per substep, once the energy grew with no input (the whip guard)
// A body's swing about its joints under the forces they carry (joint_force_mode) is named once it
// is faster than any body turns and above this many rad per step: the 512-link chain at dt 0.01
// subdivided 616 steps in 1000 with its root links' swing at 2.5 rad per step, 520 at dt 0.008, 214
// at dt 0.006 and none at dt 0.004 (1.0 rad per step; docs/integrators.md).
constexpr double kWatchSwing = 1.0;

// Down to two significant digits (a step to suggest).
double round_down(double x) {
    if (!(x > 0) || !std::isfinite(x)) return x;
    const double p = std::pow(10.0, std::floor(std::log10(x)) - 1);
    return std::floor(x / p) * p;
}

}  // namespace

void Run::watch(const Monitors& mon) {
    const Model& m = *model_;
    Data& d = *data_;
    if (m.integrator->scheme() == Integrator::Scheme::adaptive) return;  // it controls its own error
    const double dt = m.options.dt;
    Watch& w = watch_;
    if (w.passive && m.servos > 0) w.passive = false;  // servos do work (their targets move)
    if (w.passive) {  // inputs the host sets (constant forces: the constructor)
        for (double u : d.actuation)
            if (u != 0) w.passive = false;
        for (int b = 0; b < m.nbodies() && w.passive; ++b)
            if (norm(d.applied_force[b]) > 0 || norm(d.applied_torque[b]) > 0) w.passive = false;
    }
    w.kinetic_max = std::max(w.kinetic_max, mon.kinetic);
    // Contacts and limits only take energy out (inelastic impacts, friction): the reference of the
    // energy test is the lowest energy seen, so that a gain after they took some out is still caught.
    if (std::isnan(w.e_ref)) w.e_ref = e0_;
    if (m.has_inequalities()) w.e_ref = std::min(w.e_ref, mon.total);
    // The body turning fastest (−1: nothing turns).
    auto fastest_body = [&](double& rate) {
        int body = -1;
        rate = 0;
        for (int b = 0; b < m.nbodies(); ++b) {
            const double r = norm(d.twist[b].w);
            if (r > rate) rate = r, body = b;
        }
        return body;
    };
    // What to name: that body and the joint coordinate moving fastest at it.
    auto fastest = [&](double& rate, int& body, int& joint, double& jrate) {
        body = fastest_body(rate), joint = -1, jrate = 0;
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            if (ji.a != body && ji.b != body) continue;
            for (int k = 0; k < ji.dofs; ++k)
                if (std::fabs(d.rate[ji.dof_offset + k]) > jrate) jrate = std::fabs(d.rate[ji.dof_offset + k]), joint = j;
        }
    };
    // The integrators with adaptive steps, as loaded (the kernel names no plugin of its own).
    auto adaptive = [] {
        const std::string a =
            Registry::global().integrators_where([](const Integrator& i) { return i.scheme() == Integrator::Scheme::adaptive; });
        return a.empty() ? std::string("an integrator with adaptive steps") : "an adaptive integrator (" + a + ")";
    };
    auto warn = [&](const char* key, const std::string& what) {
        double rate;
        int body, joint;
        double jrate;
        fastest(rate, body, joint, jrate);
        char buf[1200];
        int k = std::snprintf(buf, sizeof buf, "step %lld (t = %.6g s): %s", static_cast<long long>(d.step), d.time,
                              what.c_str());
        if (body < 0 && k > 0 && k < static_cast<int>(sizeof buf))  // nothing turns: no rate to go by
            std::snprintf(buf + k, sizeof buf - k, "; try a smaller dt or %s", adaptive().c_str());
        if (body >= 0 && k > 0 && k < static_cast<int>(sizeof buf)) {
            k += std::snprintf(buf + k, sizeof buf - k, "; fastest body '%s' at %.4g rad/s (%.2g rad per step)",
                               m.bodies[body].name.c_str(), rate, rate * dt);
            if (joint >= 0 && k > 0 && k < static_cast<int>(sizeof buf))
                k += std::snprintf(buf + k, sizeof buf - k, ", joint '%s' at %.4g", m.joints[joint].name.c_str(), jrate);
            // The joints' pull: from the accelerations over the last step when the run has them.
            std::vector<Vec3> accel;
            if (w.v_step == d.step - 1 && dt > 0)
                for (int b = 0; b < m.nbodies(); ++b) accel.push_back((1.0 / dt) * (d.twist[b].v - w.v_prev[b]));
            const JointForceMode swing = joint_force_mode(m, d, accel.empty() ? nullptr : accel.data());
            const auto names = m.integrator->option_names();
            const bool turn_option = std::find(names.begin(), names.end(), "max_turn") != names.end();
            if (swing.available && swing.rate > rate && swing.rate * dt > kWatchSwing) {
                // A body that also turns beyond the advice: max_turn's substeps, where the integrator
                // has the option, resolve the whip without shortening every step (the 512-link chain
                // under vi-galerkin, points = 1: failed at t = 6.1 s at dt 0.01, ran 10 s with it).
                const bool whip = turn_option && rate * dt > kWatchTurn;
                if (k > 0 && k < static_cast<int>(sizeof buf))
                    std::snprintf(buf + k, sizeof buf - k,
                                  "; but the joints pull body '%s' with %.3g N, and it swings about them at about %.3g "
                                  "rad/s (%.2g rad per step; Newton may need substeps beyond about %.2g): keep "
                                  "dt <= %.2g s (%.2g rad per step of that swing, %.2g of any body's turn), %sor %s",
                                  swing.body.c_str(), swing.force, swing.rate, swing.rate * dt, kWatchSwing,
                                  round_down(std::min(kWatchSwing / swing.rate, kAdviceTurn / rate)), kWatchSwing,
                                  kAdviceTurn, whip ? "use option 'max_turn' = 0.1 (substeps where needed), " : "",
                                  adaptive().c_str());
            } else {
                if (k > 0 && k < static_cast<int>(sizeof buf))
                    std::snprintf(buf + k, sizeof buf - k,
                                  "; for about 1%% energy keep bodies below %.2g rad per step: %sdt <= %.2g s at the "
                                  "present rates, or %s",
                                  kAdviceTurn, turn_option ? "option 'max_turn' = 0.1 (substeps where needed), " : "",
                                  round_down(kAdviceTurn / rate), adaptive().c_str());
            }
        }
        d.warn_once(key, buf);
    };
    // 1. A body turning more than kWatchTurn per step.
    if (!d.warned("watch/turn")) {
        double rate;
        fastest_body(rate);
        const double h = dt / std::max(1, d.last.substeps);  // the step it took (substeps of max_turn)
        if (rate * h > kWatchTurn) {
            char what[160];
            std::snprintf(what, sizeof what, "a body turns %.2g rad per step (more than %.2g: the energy error grows)",
                          rate * h, kWatchTurn);
            warn("watch/turn", what);
        }
    }
    // 2. Energy growing with no input doing work (springs are in E; dampers only remove). The scale
    // has a floor of the mechanism's own: a scene at rest with zero energy (joints about the vertical)
    // only ever shows round-off, 1e-17 J, which is no growth.
    double mass = 0;
    for (const BodyInfo& b : m.bodies) mass += b.mass;
    const double floor = kWatchEnergyFloor * mass * (norm(m.gravity) * 1.0 + 1.0);  // [kg] × ([m/s²] × 1 m + 1 m²/s²)
    const double scale = std::max({std::fabs(e0_), w.kinetic_max, floor});
    if (w.passive && scale > 0 && !d.warned("watch/energy") && mon.total - w.e_ref > kWatchEnergy * scale) {
        // The whip guard: an integrator with the option max_turn, not given, substeps from here on
        // (docs/integrators.md). A growth this size with no input is the step failing to resolve
        // the motion; a stiff spring or servo integrated implicitly keeps its energy and never
        // engages it (max_turn as a default would pump those).
        const auto names = m.integrator->option_names();
        const bool guard = std::find(names.begin(), names.end(), "max_turn") != names.end() &&
                           !m.options.extra.count("max_turn") && d.turn_guard == 0;
        char what[400];
        std::snprintf(what, sizeof what, "the energy grew from %.6g J to %.6g J with no input doing work%s", w.e_ref,
                      mon.total,
                      guard ? "; from here on the run takes substeps as with option 'max_turn' = 0.1 (the whip guard; "
                              "give max_turn to choose, 0 for plain steps)"
                            : "");
        if (guard) d.turn_guard = kGuardTurn;
        warn("watch/energy", what);
    }
    // 3. A growing share of subdivided steps, window by window.
    const long long in_window = d.stats.steps - w.window_start;
    if (in_window >= kWatchWindow) {
        const double share = double(d.stats.subdivided_steps - w.window_subdivided) / double(in_window);
        if (share >= kWatchShare && share > w.last_share && !d.warned("watch/subdivided")) {
            char what[200];
            std::snprintf(what, sizeof what, "%.0f%% of the last %lld steps needed substeps (%.0f%% before)",
                          100 * share, in_window, 100 * w.last_share);
            warn("watch/subdivided", what);
        }
        w.last_share = share;
        w.window_start = d.stats.steps;
        w.window_subdivided = d.stats.subdivided_steps;
    }
    for (int b = 0; b < m.nbodies(); ++b) w.v_prev[b] = d.twist[b].v;
    w.v_step = d.step;
}

}  // namespace noether
