// vi-maximal: the first-order variational integrator in maximal coordinates (paper 000,
// restated in docs/design/maximal-vi.md §2–§7), and vi-midpoint, the second-order midpoint
// variational integrator (paper 004, docs/design/midpoint-vi.md): two configured instances of
// one class, exported by this one library.
//
// The two share their step equations: for gravity and joints the midpoint discrete Lagrangian
// gives the same map as the first-order one (midpoint-vi.md, first finding). vi-midpoint differs
// in (a) scaled rows — body rows as impulse balances, constraint rows g/h, multipliers as
// impulses — which keep cond(F) independent of h; (b) its start, the discrete Legendre transform:
// the first step takes the continuous momenta m v0, J ω0 as incoming and half the impulses;
// (c) midpoint force sampling: a node receives h/2 of the impulse of each adjacent interval,
// i.e. the average of the two intervals' input values, mapped at the node; (d) its monitors
// before the first step are the continuous ones. Unknowns, blocks and solvers are the same.
//
// Unknowns per step: v2, ω2 of every body and λ of every joint. Residual: the translational
// and rotational discrete Euler–Lagrange equations per body (multipliers through the joint
// Jacobians at the current configuration x2, q2) and the joint constraints at the next
// configuration x3 = x2 + dt v2, q3 = q2 ⊗ f(ω2). Newton with a backtracking line search on
// ‖f‖, the rotation guard |ω| < 2/dt, warm starts. The Newton matrix has the sparsity of the
// block graph, so a tree costs O(n) per iteration with the sparse-ldu solver.
//
// Joint springs and dampers are implicit (issue 15): a joint with stiffness or damping gets its
// joint-space force u as unknowns of its own, after its constraint rows in the joint's node (the
// graph of the step is the Model's with those nodes enlarged, system_graph()), with the rows
//   z·lam − u(c3) = 0,   u = −(d/2h)(c3 − c1) − k [ (h1/2h)((c1 + c2)/2 − r) + ½((c2 + c3)/2 − r) ]
// (c1, c2, c3 the joint coordinates at the previous, current and next node, h1 the previous
// interval): the spring is the midpoint rule of its potential on both intervals at the node (a
// linear spring keeps the energy with the spring at the interval midpoint exactly, at any h);
// the damper is the discrete Lagrange–d'Alembert force that gives each node half of each
// adjacent interval's impulse −d (Δc/h) h: the rate update (1 − a)/(1 + a), a = d h/2I, and an
// energy change −(h d/4)(v1 + v2)² ≤ 0 per step for a linear joint, at any h (docs/integrators.md).
// The force acts on the bodies through the coordinate Jacobian at the current configuration,
// like an actuation. Joints without springs or dampers are unchanged.
//
// The kernel snapshots the Data before advance() and commits or restores after it. advance()
// runs [substep × k], where a substep is
//   prepare (forces, config-2 Jacobians) → warm start → Newton (assemble, factor, solve,
//   line search, chord confirmation) → commit.
// A step whose Newton iteration fails is retried from the step's start (noether::subdivide) as
// 2, 4, 8, … substeps (maximal-vi.md §7.1); the interval length of the last substep is
// remembered (dt_prev), because the momentum arriving at the current configuration depends on it.
//
// Source layout (plugins/integrators/vi_maximal/): vi_maximal.hpp the class with the step's Newton
// path inline (compiled as one piece), vi_maximal.cpp the plugin entry, interior_point.cpp the step
// with contacts and limits, contact.hpp/.cpp their units, rows and Schur complement, state.hpp the
// state and constants, setup.cpp the options, their checks, the state's creation and serialisation
// and the monitors.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "noether/data.hpp"
#include "noether/sdk/integrator.hpp"
#include "noether/sdk/misses.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/secant.hpp"
#include "noether/sdk/solver.hpp"

#include "contact.hpp"

namespace noether {
namespace vi_max {

// Every body's discrete angular velocity stays below kBranch/dt, a quarter turn per step. The
// rotation update q ⊗ f(ω) turns by φ with sin(φ/2) = |ω| dt/2, and the momentum it carries,
// J sin(φ)/dt along the spin, is largest at φ = 90°, |ω| dt = √2: beyond it a faster turn carries
// less momentum, the Newton matrix D_R is singular at √2/dt, and a second solution of the same
// discrete Euler–Lagrange equations exists for every spin (φ and 180° − φ). Up to issue 15 the
// guard was 0.99 · 2/dt (below half a turn) and Newton could settle on that second branch:
// atlas without damping at dt = 0.005 gained 786 J in 5 s against 275 J with this guard
// (docs/integrators.md, "Energy on humanoids at dt = 0.005").
constexpr double kBranch = 0.999 * 1.4142135623730951;
constexpr int kMaxStalls = 5;         // consecutive stalled iterations above tolerance: give up
// Round-off floor of the residual, relative to the size of the terms that make it up. A large or
// fast system (a 256-link chain spinning at 1 rad/s has momentum terms m v/dt ≈ 3e4) cannot get
// ‖f‖ below an absolute 1e-10; once Newton stalls there, the step is converged.
constexpr double kFloor = 64 * 2.220446049250313e-16;
// Newton is stationary when an accepted update moved the unknowns by at most this (relative to
// their size): the iterate no longer changes, so further iterations repeat themselves. A
// stationary iterate within kFloorSlack × the tolerance is Newton's floor and the step is
// accepted, reported to the kernel (StepReport::at_floor: counted, warned once); further off it
// is a failure. Example: a damped rhombus four-bar settling into its folded pose, where the
// loop loses a rank and the last ~1e-10 of the closure is quadratic in the coordinates
// (issue 14, item 13).
constexpr double kStationary = 1e-12;
constexpr double kFloorSlack = 10;
// Option newton = "chord" (VIMaximal::newton): the next iteration keeps the factorisation when
// the last one cut ‖f‖ to at most kChordContraction of what it was and kChordSteps more at that
// rate would reach the tolerance. Instructions per step (callgrind, dt 0.01, against a
// factorisation every iteration; the rate alone, no count, at 0.01 / 0.1 / 0.25 / 0.5, and 0.75
// and 0.9 as 0.5): double pendulum −8 / −11 / −11 / −11 %, 16-link chain −1 / −9 / −14 / −18 %,
// Atlas (fixed base) −1 / −11 / −18 / −22 %. Then the count at 0.5 (2 / 3 / 4 / 6): within 1 %
// there; the UR5 at dt 0.05 (1 s, a swing beyond the step) 5.05 / 5.50 / 7.00 / 7.45 iterations a
// step against the exact Newton's 4.15 (a rate of 0.5 with no count: 9.05, up to 25). The
// interior-point iteration keeps the tree's factorisation on the rate alone (its tree rows, no
// count): its iterations are paced by the complementarity (interior_point.cpp).
constexpr double kChordContraction = 0.5;
// A chord step's iterate is accepted without the confirming step when ‖f‖ is this far below the
// step's first residual and the contraction says the next correction would be within the tolerance
// (newton()): the confirming step of the double pendulum at dt 0.01, 3.93 → 3.04 iterations a step.
// Relative, so that a step keeps its residual at the round-off of its own terms (the armature
// pendulum's angular momentum over 500 steps moves 1.5e-14 either way; an absolute 1e-13 let it
// move 3.6e-13).
constexpr double kChordResidual = 1e-12;
constexpr int kChordSteps = 3;
// Option secants (VIMaximal::newton): secant pairs of the chord steps.
constexpr int kDefaultSecants = 2;
// Option guess = "feedback": the degree of the misses' extrapolation is judged every this many
// misses (best_miss_degree: ~1k instructions on the double pendulum, more than the misses save
// when judged at every step; the degree a smooth motion wants changes slowly).
constexpr int kJudgeMisses = 8;
// ... and the misses are added while the last two agree within this fraction of the last one (as
// vi-galerkin's). Looser gates took more iterations off the smooth examples (double pendulum 1.83
// a step at 0.25, 1.66 at 1; 2.31 without the misses) but not off a whip: the 128-link chain at
// dt 0.01 (chain.lua, substep_hold 4) took 9.49 iterations a step at 1 and 931 J of energy error,
// 7.77 and 78 J at 0.25, as without the misses (7.78, 78 J).
constexpr double kMissAgreement = 0.25;

struct State final : IntegratorState {
    double dt_prev = 0;  // length of the interval that produced Data::twist (v1, ω1)
    double max_turn = 0;  // option max_turn [rad per substep]; 0: off
    SubstepHold hold;  // remembered subdivision (option substep_hold; noether/sdk/integrator.hpp)
    // Predictor: velocities and multipliers of the step before the last (v_prev, lam_prev), the
    // interval that produced the last committed velocities from v_prev (h_pred; 0: no pair yet).
    // The prediction is used only while Data still holds the last commit's velocities: no host
    // changed the state since (Data::host_changed, for the first substep of a step), and before
    // the first commit only from bodies at rest (committed: a substep has been committed).
    std::vector<Twist> v_prev;
    bool committed = false;
    bool first_substep = true;  // within advance(): the next substep is the step's first (not saved)
    std::vector<double> lam_prev;
    double h_pred = 0;
    // Option predictor = 2: the velocities and multipliers of the step before v_prev, lam_prev and
    // the interval that produced v_prev from them (h_pred2; 0: none); whether the quadratic
    // extrapolation predicted the velocities (multipliers) of the last substep it could better
    // than the linear one (VIMaximal::commit).
    std::vector<Twist> v_prev2;
    std::vector<double> lam_prev2;
    double h_pred2 = 0;
    bool quadratic_won = true;
    // Option guess = "feedback" (default; VIMaximal::warm_start, commit): the predicted velocities
    // plus what the last predictions missed by (noether/sdk/misses.hpp), the bodies' 6·nb unknowns.
    // sguess: this substep's prediction (not saved); guess_kind: its kind (the degrees of the
    // velocities' and the multipliers' extrapolations, 3·dv + dλ; −1: none that misses are kept
    // for: no extrapolation, a clipped turn, contacts or limits in the working set; not saved).
    // miss: the misses of the last predictions (the converged velocities less the predicted, newest
    // first), miss_count of them in a row of kind miss_kind and length miss_h; miss_degree the
    // degree of their extrapolation, judged at the fifth miss and then every kJudgeMisses
    // (miss_judged: misses since). Saved.
    bool feedback = true;  // (not saved)
    std::vector<double> sguess, miss[kGuessMisses];
    std::int32_t guess_kind = -1, miss_count = 0, miss_kind = 0, miss_degree = 1, miss_judged = 0;
    bool misses_added = false;  // this substep's guess has them (not saved)
    double miss_h = 0;
    bool quadratic_won_lam = true;
    bool predict = true;     // option predictor >= 1 (not saved)
    bool quadratic = true;   // option predictor = 2 (not saved)
    bool chord = true;  // option newton: "chord" (true) or "exact"
    // Option secants (chord iterations only): pairs of the chord steps since the last factorisation
    // that correct the next chord step (VIMaximal::chord_trial); dropped at every factorisation, so
    // not saved (a step's first iteration always factorises).
    SecantPairs sec;
    // The last substep Newton ended was accepted at the round-off floor above the tolerance
    // (VIMaximal::newton: its chord steps then only confirm). Saved.
    bool floor_hint = false;
    bool started = false;  // vi-midpoint: the Legendre start has been taken
    // vi-midpoint: input values of the previous interval (world force, world torque, actuation).
    std::vector<Vec3> prev_force, prev_torque;
    std::vector<double> prev_u;
    std::vector<Vec3> cur_force, cur_torque;  // scratch: the averaged inputs of a node
    std::vector<double> cur_u;
    // Row scaling of this substep (1 for vi-maximal): body rows ×ρ_T, ×ρ_R; joint rows ×ρ_J;
    // multiplier unknowns μ with λ = μ · lam.
    double rhoT = 1, rhoR = 1, rhoJ = 1, lam = 1;
    bool start = false;  // this substep is the Legendre start

    // Implicit springs and dampers. c1, c2: joint coordinates (with offsets) at the previous and
    // the current node; u: the joint forces of the last step (warm start). Sized total_dofs
    // (saved even when no joint has a spring or damper, so a Data restores into a varied Model).
    std::vector<double> c1, c2, u;
    bool coords = false;  // c1, c2 hold the current nodes
    // Per joint: implicit (a spring or damper on a joint with DOFs). Graph of the step's unknowns.
    std::vector<char> implicit;
    bool any_implicit = false;
    BlockGraph graph;              // the Model's, joint nodes enlarged by the implicit joints' DOFs
    const BlockGraph* G = nullptr;  // &graph, or the Model's graph when no joint is implicit
    std::vector<double> alpha, kappa;  // u(c3) = alpha − kappa · c3 (per DOF, this substep)
    std::vector<double> beta;          // armature: u += beta (c2 − c3), beta = a/h² (0: none)
    std::vector<double> zscale;        // force row scale per DOF (1; armature: 1/(1 + a/h))
    std::vector<double> c3, C2a, C2b, C3a, C3b;  // next coordinates; coordinate Jacobians (dofs × 6)
    double rhoZ = 1;  // force rows ×ρ_Z; force unknowns z with u = z · lam

    // Contacts and joint limits (contact.hpp): units, their unknowns and workspaces; the
    // interior-point tolerance (option contact_tolerance).
    Inequalities ineq;
    double contact_tolerance = 1e-9;

    // Workspaces (sized once).
    BlockMatrix A;
    std::unique_ptr<SolverWorkspace> ws;
    std::vector<double> s, s_try, f, f_try, dx;
    std::vector<double> terms;  // per row of f: the size of its terms (VIMaximal::row_terms)
    std::vector<Wrench> wrench;
    std::vector<double> J2a, J2b, J3a, J3b, g;  // per joint, rows × 6 at row_offset · 6
    bool j3_current = false;  // J3a/J3b are the Jacobians at pose3 (the last residual() made them)
    std::vector<Pose> pose3;
    std::vector<Vec3> in_R;  // per body: the incoming angular momentum of the substep (prepare())

    void save(std::string& out) const override;
    std::size_t saved_size() const;  // the bytes save() appends
    bool restore(const char*& p, const char* end) override;

    // The method's own rollback (Integrator::rolls_back_itself(); VIMaximal::advance()). Before its
    // commit a substep changes, of what save() writes, only floor_hint (newton()) and, at the first
    // node of implicit joints (coords false), c1, c2 and coords (prepare()); it writes Data only in
    // commit(). begin_step() at the step's start keeps floor_hint; keep_entry() before an attempt
    // that may change more (the first node of implicit joints; a subdivided attempt, whose
    // substeps commit one by one) keeps what save() writes and the Data fields a commit writes;
    // back_to_entry() returns to the step's start as the kernel's restore of its snapshot did.
    // The buffers are sized by make_state() (no allocation in a step).
    KeptState entry;
    bool entry_floor_hint = false;
    std::vector<Pose> entry_pose;
    std::vector<Twist> entry_twist, entry_twist_guess;
    std::vector<double> entry_lambda, entry_limit_force, entry_coupling_force;
    std::vector<ContactResult> entry_contact;
    void begin_step() {
        entry.begin();
        entry_floor_hint = floor_hint;
    }
    void keep_entry(const Data& d);
    bool back_to_entry(Data& d);
};

inline double s_of(const Vec3& w, double dt) {
    const double v = 4.0 / (dt * dt) - dot(w, w);
    return v > 0 ? std::sqrt(v) : 0.0;
}

// The squares summed in four interleaved partial sums: one running sum makes every addition wait
// for the last; the four chains run side by side (interleaved A/B: double pendulum 2.18 → 2.11 µs
// a step, 512-link chain 2013 → 1972 µs).
inline double vnorm(const std::vector<double>& v) {
    const std::size_t n = v.size();
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += v[i] * v[i];
        s1 += v[i + 1] * v[i + 1];
        s2 += v[i + 2] * v[i + 2];
        s3 += v[i + 3] * v[i + 3];
    }
    for (; i < n; ++i) s0 += v[i] * v[i];
    return std::sqrt((s0 + s1) + (s2 + s3));
}

// Outcome of one Newton solve.
// Every trial twist inside the rotation guard |ω| < limit?
inline bool within_guard(const Model& m, const std::vector<double>& s, double limit) {
    for (int b = 0; b < m.nbodies(); ++b) {
        const double* w = &s[m.graph.node_offset[b] + 3];
        if (!(w[0] * w[0] + w[1] * w[1] + w[2] * w[2] < limit * limit)) return false;
    }
    return true;
}

double max_turn(const Model& m);

// Option substep_hold (SubstepHold, noether/sdk/integrator.hpp): steps a subdivision Newton needed is
// kept before one halving is tried (0: off, every step starts at dt again). 4 measured best of
// 2/4/8/16 on the revolute chains (bench/chain_scaling, 1000 steps: Newton work per step 7.45 → 6.48
// at 128 links, 11.45 → 7.67 at 256, 15.32 → 10.74 at 512; +1.5% at 32, where few steps subdivide).

// Option predictor: 1 (default) starts Newton from a linear extrapolation of the last two
// steps' velocities and multipliers (when both steps and this one have the same length and
// the velocities were not changed from outside); 0 from the last step's (zeroth order).
// Newton iterations per step: double pendulum 3.92 → 3.10, four-bar 4.00 → 3.26, two_robots
// 3.97 → 3.01, revolute chain of 2 / 16 / 64 links 3.91 / 4.36 / 4.47 → 3.08 / 4.02 / 4.16.
double predictor(const Model& m);

// Option contact_tolerance: the interior-point method's tolerance on its scaled rows and
// complementarity (docs/contact.md; CIP §5.4, §10.4).
constexpr double kDefaultContactTolerance = 1e-9;
double contact_tolerance(const Model& m);

// The options checked (name: the integrator, for messages), a new state, the monitors (setup.cpp).
void check_options(const Model& m, const char* name, std::vector<Diagnostic>& out);
std::unique_ptr<IntegratorState> make_state(const Model& m, bool midpoint);
Monitors state_monitors(const Model& m, const Data& d, bool midpoint);

}  // namespace vi_max
}  // namespace noether
