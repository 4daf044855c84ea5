// riqn: the linear-time variational integrator in joint coordinates (paper 001, Lee, Liu, Park &
// Srinivasa, WAFR 2016), restated with its verified formulas in docs/design/riqn.md.
//
// The mechanism is seen through the kernel's tree view (noether/sdk/tree.hpp): links in parents-first
// order, fixed joints merged, each 1-DOF joint a screw. Per step (riqn.md §3–§7):
//   setup at q_k   link transforms T_i^k, link poses, forcing h·F_i (gravity, body forces),
//                  the impulse articulated-body inertias of M(q_k) + (h/2)·D            O(n)
//   guess          "momentum": the node velocity, then one forward-dynamics pass (ABA)  O(n)
//   iterate        r = DRNEA(q⁺) (forward: f_i, μ_i; backward: Γ_i, r_i)                 O(n)
//                  Δq = −h (M + (h/2)D)⁻¹ r by the impulse ABA pass (RIQN)               O(n)
//                  or the exact Newton step (§5.4) by a two-sided articulated elimination O(n)
//                  (the fallback of a slow RIQN contraction; option newton = "exact"), or
//                  densely (option newton = "dense", the reference)                     O(n³)
//                  until ‖r‖ ≤ tolerance or max|Δq| ≤ step_tolerance (§5.5)
//   commit         π_i ← Ad_{f_i}ᵀ μ_i, Qminus, q_{k−1} ← q_k, q_k ← q⁺
// The first step starts from the continuous state by the discrete Legendre transform (§7.2).
// Beyond paper 001 (docs/integrators.md, "riqn: free roots and ball joints"): the root of a
// floating component is a free link whose unknown is its pose on SE(3) and whose residual is its
// whole 6-vector Γ; a ball joint's unknown is its relative rotation on SO(3) and its residual Sᵀ Γ
// with S = [I; c×]. Both are updated by the retraction q ⊕ Δ of the tree view.
// A failed step is retaken from the kernel's snapshot as 2, 4, … substeps in momentum form
// (§5.5). After each step the body poses of the Model and the discrete twists of the interval
// are written back in the maximal layout (§7.3), so monitors and outputs are shared with the
// maximal-coordinate integrators, and on a tree of screw joints the joint coordinates it stepped
// and their rates over the interval (StepReport::coordinates); if a host moves the bodies between steps,
// the integrator restarts from the Data as from a continuous state.
//
// Source layout (plugins/integrators/riqn/): riqn.hpp the state and the class, plugin.cpp the
// plugin class and its entry point, state.cpp kinematics, the start from Data and the write-back,
// newton.cpp the substep (residual, guess, quasi-Newton and exact Newton).
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "noether/data.hpp"
#include "noether/sdk/dense.hpp"
#include "noether/sdk/misses.hpp"
#include "noether/sdk/integrator.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/secant.hpp"
#include "noether/sdk/tree.hpp"

namespace noether {
namespace riqn {

using V6 = double[6];

// ---- SE(3) helpers on [ω; v] twists and [n; f] wrenches (the shared ones, top/bot/set6, the
// adjoints and the logarithms, come with noether/sdk/spatial.hpp) --------------------------------------

// a(θ), b(θ) of the exact dexp⁻¹ = I − ½ad + a·ad² + b·ad⁴ (riqn.md §1.4). T is double or complex.
template <class T>
void dexpinv_coeffs(const T& th, T& a, T& b) {
    using std::cos;
    using std::sin;
    if (std::real(th) >= 0.5) {
        const T h = th / 2.0, cot = cos(h) / sin(h), sh = sin(h);
        const T k = h * cot, d = th / (4.0 * sh * sh) - 0.5 * cot;
        const T t2 = th * th;
        a = (2.0 * (1.0 - k) - th * d / 2.0) / t2;
        b = (1.0 - k - th * d / 2.0) / (t2 * t2);
        return;
    }
    static const double c[8] = {0, 1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                                -691.0 / 1307674368000.0, 1.0 / 74724249600.0};
    const T u = -th * th;
    // a = c1 − Σ_{n=3..7} (n−2) c_n u^{n−1};  b = Σ_{n=2..7} (n−1) c_n u^{n−2}
    T pa = T(0), pb = T(0);
    for (int n = 7; n >= 3; --n) pa = pa * u + double(n - 2) * c[n];
    for (int n = 7; n >= 2; --n) pb = pb * u + double(n - 1) * c[n];
    a = c[1] - pa * u * u;
    b = pb;
}

// ad_xᵀ w for x = [φ; ρ], w = [n; f]: [−φ×n − ρ×f; −φ×f].
template <class T>
inline __attribute__((always_inline)) void adT(const T* x, const T* w, T* o) {
    o[0] = -(x[1] * w[2] - x[2] * w[1]) - (x[4] * w[5] - x[5] * w[4]);
    o[1] = -(x[2] * w[0] - x[0] * w[2]) - (x[5] * w[3] - x[3] * w[5]);
    o[2] = -(x[0] * w[1] - x[1] * w[0]) - (x[3] * w[4] - x[4] * w[3]);
    o[3] = -(x[1] * w[5] - x[2] * w[4]);
    o[4] = -(x[2] * w[3] - x[0] * w[5]);
    o[5] = -(x[0] * w[4] - x[1] * w[3]);
}

// μ = dexp⁻¹(x)ᵀ G x / h with G = diag(J, m I) (riqn.md §3.1).
template <class T>
void momentum(const T* x, const Mat3& J, double mass, double h, T* mu) {
    T w[6], t1[6], t2[6], t3[6], t4[6];
    for (int i = 0; i < 3; ++i) {
        w[i] = J(i, 0) * x[0] + J(i, 1) * x[1] + J(i, 2) * x[2];
        w[i + 3] = mass * x[i + 3];
    }
    adT(x, w, t1);
    adT(x, t1, t2);
    adT(x, t2, t3);
    adT(x, t3, t4);
    using std::sqrt;
    const T th = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    T a, b;
    dexpinv_coeffs(th, a, b);
    for (int i = 0; i < 6; ++i) mu[i] = (w[i] - 0.5 * t1[i] + a * t2[i] + b * t4[i]) / h;
}

// ---- options --------------------------------------------------------------------------------

// guess: "feedback" (default) the momentum guess plus the extrapolated misses of the last
// kGuessMisses guesses (guess(), commit(); noether/sdk/misses.hpp: a line, a parabola or a cubic
// through the newest, whichever predicted the newest miss from the four before it best);
// "momentum", "acceleration" (riqn.md's IG3), "velocity", "position".
enum class Guess { position, velocity, acceleration, momentum, feedback };
// newton: "riqn" (default) the RIQN update, and the exact step where it contracts slowly;
// "exact" the exact Newton step every iteration (O(n), tree_newton_setup/solve); "dense" the same
// step by the dense matrix and an LU factorisation (O(n³), exact_step(): the reference).
enum class Newton { riqn, exact, dense };
struct RiqnOptions {
    Newton newton = Newton::riqn;
    Guess guess = Guess::feedback;
    double step_tolerance = 1e-12;
    double max_turn = 0;  // radians per substep (0: off), as vi-maximal's option
    int secants = 2;      // secant pairs that correct the RIQN update (0: the plain update); noether/sdk/secant.hpp
};
// A corrected update (option secants) that leaves the residual more than this many times larger
// is taken back (the plain update instead; the pairs are dropped). Not 1: a corrected update may
// raise the residual on its way (ball joints: double_spherical_pendulum.lua 2.97 updates a step
// at 1e3, 3.41 at 10, 4.61 at 1, against 3.99 without the pairs).
constexpr double kSecantGrowth = 1e3;

// The secant pairs' pivot (SecantPairs::resize): a pair whose δf lies within this squared sine
// of the span of the others is left out of the fit. riqn carries its pairs from step to step, and
// the updates of consecutive steps line up with the iteration's slowest direction: two nearly
// parallel pairs fitted exactly (the double pendulum: two unknowns, two pairs) multiply the
// round-off and the steps' change of the matrix into the update, and the second update of a step
// stalled (8.5 % of the steps, each then taking the exact fallback). At 1e-4 (the pairs at least
// 0.01 rad apart) against SecantPairs::kPivot = 1e-10: instructions a step on the double pendulum
// of the peers harness −8.4 %; chains of 4–64 links −0.1 to −0.6 % over 10 s;
// double_spherical_pendulum.lua +0.2 %; the UR5, Atlas and the ball chain the same.
constexpr double kSecantPivot = 1e-4;

RiqnOptions riqn_options(const Model& m);
constexpr double kMaxTurn = 3.1;  // a link turning this far in one step is a rotation-limit failure (drnea)
// The exact Newton fallback of a slowly contracting RIQN iteration (substep()): from the third
// update on, when an update shrank the residual by less than kSlowContraction, or when
// kPredictedUpdates more at that rate would not reach the tolerance; at the second when the first
// update made the residual worse; and when an update turns a link by π (a rotation-limit failure
// before). It starts from the RIQN iterate with the smallest residual. The fallback is the O(n)
// exact step with the matrix of its first iterate (a chord: setting the matrix up costs ~3 RIQN
// updates on a revolute chain), set up again when kChordUpdates more iterations at the last rate
// would not reach the tolerance. On trees of at most kExactFallbackLinks links: a long chain
// whipping at a coarse step (chain.lua, 128–512 links at dt 0.01) takes as many exact iterations
// as the step is under-resolved, each worth several updates, and ran 1.4–4× slower with it.
// On larger trees it is the last resort: a step that failed at the most substeps is retaken there
// once more with the fallback on (advance(); substep()'s last_resort), before the step is reported
// failed — a 256-link chain of ball joints spinning at 1 rad/s (its tension a stiffness M(q_k)
// misses) failed its first step without it.
constexpr int kExactFallbackLinks = 64;
constexpr double kSlowContraction = 0.8;
constexpr int kPredictedUpdates = 5;
constexpr int kChordUpdates = 3;

// ---- state ----------------------------------------------------------------------------------

struct State final : IntegratorState {
    // Carried between steps (saved).
    bool started = false;
    bool fresh = false;  // T, Ti, g, bp are those of the current q (not saved: recomputed after a restore)
    bool tq_at_q = false;  // Tq holds the link transforms at q (commit(); kinematics() takes them; not saved)
    double dt_prev = 0;                 // length of the interval q_{k−1} → q_k
    std::vector<double> q, qm, Qminus;  // q_k, q_{k−1} (nq), carried joint impulse (nv)
    std::vector<double> pi;             // carried momentum, 6 per link (link frame at q_k)

    // Setup and workspaces (sized once).
    TreeView tree;  // moved to origin.c when far from the world's (tree_rebase_far); link poses g are relative to it
    TreeOrigin origin;
    RiqnOptions opt;
    std::vector<Frame> T, Ti, g, f;             // T_i^k, its inverse, link poses at q_k, f_i of the last DRNEA
    std::vector<double> F, mu, Gam, r, qp, dq, tau;  // F: link wrenches at q_k (unscaled); qp: nq, r, dq, tau: nv
    TreeABI abi;                                     // impulse ABI of M(q_k) + (h/2)·D
    std::vector<double> kd, u, dV;
    // Servos of the step per velocity index (screw links; docs/servos.md), target in raw
    // coordinates: the interval's force S = force − kp((q + q⁺)/2 − target) − kv (q⁺ − q)/h, half
    // of its impulse at each end node (the damper's and the actuation's sampling).
    std::vector<ServoTerms> servo;
    bool any_servo = false;
    std::vector<double> V, c, pA, fdu;  // forward dynamics (IG3)
    std::vector<Pose> bp, prev_pose;
    std::vector<Wrench> bw;
    // Dense exact Newton (option newton = "dense"): link poses at q⁺, the matrix, Jacobian columns,
    // the factorisation.
    std::vector<Frame> gp;
    Eigen::MatrixXd K, Jk, Jp;
    Eigen::VectorXd kr;
    Eigen::PartialPivLU<Eigen::MatrixXd> lu;
    // The same Newton step in O(n) (tree_newton_step): link transforms at q⁺, per link the
    // two-sided articulated block (6×6, from B_i), per velocity the columns IA S and rows Sᵀ IA,
    // per link the inverse of Sᵀ IA S + k (nv×nv at TreeLink::id), the solve's passes. Tq: the
    // link transforms at the q⁺ of the last DRNEA (Tp: at the setup's).
    std::vector<Frame> Tp, Tq;
    // log f_i of the last DRNEA, 6 per link (written by drnea()).
    std::vector<double> xl, qbest, nIA, nU, nV, nD, nP, ndV, nu;
    // Guess "feedback": this substep's momentum guess (nq), and the misses of the last kGuessMisses (nv,
    // the converged q⁺ less the guess, in the links' tangent coordinates: link_difference; the
    // newest first), valid for miss_count (0–kGuessMisses) substeps of length miss_h in a row. Saved:
    // they shape the next guess.
    std::vector<double> qguess;
    std::vector<double> miss[kGuessMisses];
    std::int32_t miss_count = 0, miss_degree = 1;
    double miss_h = 0;
    // Secant pairs (option secants, noether/sdk/secant.hpp) in the links' tangent coordinates,
    // measured in substeps of length sec_h. Saved: they shape the next substep's updates. sec_q:
    // the iterate a corrected update left (within a substep).
    SecantPairs sec;
    double sec_h = 0;
    std::vector<double> sec_q;
    // Remembered subdivision (option substep_hold, noether/sdk/integrator.hpp). Saved.
    SubstepHold hold;
    // Remembered last resort (a large tree, advance()): steps left that start with the exact fallback
    // at the most substeps, and the length of the hold (substep_hold's, doubled after each step that
    // tried without it and needed it, up to SubstepHold::kHoldMax times). Saved.
    std::int32_t resort_left = 0, resort_len = 0;
    // riqn undoes its own failed steps (Integrator::rolls_back_itself(); advance()): what save()
    // writes, kept at the first attempt that may change more than the secant pairs (a restart
    // from Data, a subdivided attempt), and sec_h at the step's start (the pairs: SecantPairs::mark()).
    KeptState entry;
    double entry_sec_h = 0;

    std::size_t saved_size() const {
        return 1 + sizeof dt_prev + sizeof miss_count + sizeof miss_degree + sizeof miss_h + sizeof sec_h +
               sizeof(double) * (q.size() + qm.size() + Qminus.size() + pi.size() + kGuessMisses * miss[0].size()) +
               sec.saved_size() + SubstepHold::kSavedSize + sizeof resort_left + sizeof resort_len;
    }
    void save(std::string& out) const override {
        StateWriter w(out, saved_size());
        w.value(static_cast<char>(started ? 1 : 0));
        w.value(dt_prev);
        w.value(miss_count);
        w.value(miss_degree);
        w.value(miss_h);
        w.value(sec_h);
        for (const std::vector<double>* v : {&q, &qm, &Qminus, &pi}) w.values(*v);
        for (const std::vector<double>& v : miss) w.values(v);
        sec.save(w);
        hold.save(w);
        w.value(resort_left);
        w.value(resort_len);
    }
    bool restore(const char*& p, const char* end) override {
        if (static_cast<std::size_t>(end - p) < saved_size()) return false;
        started = *p++ != 0;
        drop_caches();
        restore_value(p, dt_prev);
        restore_value(p, miss_count);
        restore_value(p, miss_degree);
        restore_value(p, miss_h);
        restore_value(p, sec_h);
        if (!misses_restorable(miss_count, miss_degree)) return false;
        for (std::vector<double>* v : {&q, &qm, &Qminus, &pi}) restore_values(p, *v);
        for (std::vector<double>& v : miss) restore_values(p, v);
        if (!sec.restore(p) || !hold.restore(p)) return false;
        std::int32_t left, len;
        restore_value(p, left);
        restore_value(p, len);
        if (left < 0 || len < 0 || left > len) return false;
        resort_left = left, resort_len = len;
        return true;
    }
    // riqn's own rollback (advance()): begin_step() at the step's start; keep_entry() before an
    // attempt that may change more than the secant pairs; back_to_entry() returns to the step's
    // start as restore() of what save() wrote then would.
    void begin_step() {
        sec.mark();
        entry.begin();
        entry_sec_h = sec_h;
    }
    void keep_entry() { entry.keep(*this); }
    bool back_to_entry() {
        if (entry.kept()) return entry.put_back(*this);
        sec.undo();
        sec_h = entry_sec_h;
        drop_caches();
        return true;
    }
    // The caches of the current q (fresh, tq_at_q: not saved) no longer hold.
    void drop_caches() { fresh = false, tq_at_q = false; }
};

class Riqn final : public Integrator {
public:
    Scheme scheme() const override { return Scheme::implicit_fixed; }
    std::vector<std::string> option_names() const override { return {"newton", "guess", "step_tolerance", "max_turn", "secants", "substep_hold"}; }

    void check(const Model& m, std::vector<Diagnostic>& out) const override;

    std::unique_ptr<IntegratorState> create_state(const Model& m) const override;

    StepReport advance(const Model& m, Data& d) const override;
    // A failed step (or a throw) leaves Data and the state as they were: Data is written only
    // after a successful attempt (write_back()), and the state returns to what advance() kept of it.
    // The kernel takes no step snapshot (its cost was ~0.8k instructions a step on the double pendulum).
    bool rolls_back_itself() const override { return true; }

    // Introspection: the DRNEA residual r(q⁺) of the next step (riqn.md §4). Here the unknowns s
    // are q⁺ (TreeView::nq positions in TreeView order; a free root's pose relative to State::origin.c
    // when the view is rebased, tree_rebase_far) and f = r (TreeView::nv values); no Newton matrix (A
    // must be null). The integrator state is left as it was.
    bool step_system(const Model& m, Data& d, const double* s, double* f, BlockMatrix* A) const override;

    Monitors monitors(const Model& m, const Data& d) const override;

private:
    // advance() within its rollback: keep_entry() before an attempt that may change more than the
    // secant pairs, rollback() to return to the step's start.
    template <class Keep, class Rollback>
    StepReport advance_kept(const Model& m, Data& d, State& st, Keep& keep_entry, Rollback& rollback) const;

    // ---- configuration-k setup -----------------------------------------------------------

    // T_i^k, link poses g, body poses bp (quaternion signs continuous with Data::pose).
    static void kinematics(const Model& m, const Data& d, State& st);

    // Link wrenches at configuration k (link frame, about the link CoM): gravity and the body
    // forces of the Model and the inputs. Needs kinematics().
    static void forces(const Model& m, const Data& d, State& st);

    // Discrete Legendre start from the continuous state of Data (riqn.md §7.2).
    static void start(const Model& m, const Data& d, State& st, double h);
    // The twist of link i (link frame) from the body twists of Data (ω body frame, v of the
    // centre of mass in the world); needs kinematics().
    static void link_twist_of_data(const Data& d, const State& st, int i, double* V);
    // Joint inputs of the step: torques and the (h/2)·damping added to the RIQN matrix.
    static void set_inputs(const Model& m, const Data& d, State& st, double h);
    // Half the impulse of link l's servo over the interval q → q⁺ (0 without a servo).
    static double servo_half_impulse(const State& st, const TreeLink& l, double h) {
        const ServoTerms& s = st.servo[l.iv];
        const double q = st.q[l.iq], qp = st.qp[l.iq];
        return 0.5 * h * (s.force - s.kp * (0.5 * (q + qp) - s.target)) - 0.5 * s.kv * (qp - q);
    }

    // A change of step length h → h' at node k in momentum form (riqn.md §5.5): the node takes
    // (h/2 + h'/2) of its forcing, so the carried terms move by δ = (h − h')/2 of the node's
    // forcing: π ← π + δ·F(q_k) (gravity, body forces), Qminus ← Qminus + δ·τ_spring(q_k).
    static void shift_momentum(const Model& m, const Data& d, State& st, double delta);

    // ---- one step of length h ------------------------------------------------------------

    // last_resort: the exact fallback also on a tree above kExactFallbackLinks links (advance()'s
    // retake of a step that failed without it).
    Attempt substep(const Model& m, const Data& d, State& st, double h, bool last_resort = false) const;

    // DRNEA (riqn.md §4): the residual r(q⁺) into st.r, f_i and μ_i kept for the commit.
    // Returns ‖r‖₂, or +inf when a link would turn by π or more in one step.
    double drnea(const Model& m, State& st, double h, int* worst) const;

    // Initial guess for q⁺ (riqn.md §6).
    static void guess(State& st, double h);

    // q ⊕ v for every link of t (q: nq positions, v: nv velocity-space values), in place.
    static void retract(const TreeView& t, double* q, const double* v);
    // A corrected update that did not lower the residual enough (kSecantGrowth): back to the
    // iterate it left, and the plain update from there; the pairs are dropped.
    static void secant_reject(State& st);

    // Continuous forward dynamics at (q_k, q̇_k = st.dq): q̈ into st.u. The articulated-body
    // algorithm in link frames; forcing: gravity and body forces (st.F), joint inputs, springs and
    // dampers (explicit here: this is only the initial guess).
    static void forward_dynamics(State& st);
    // The joint velocities at node k from its discrete momentum (the guess "momentum"): into st.dq.
    static void node_velocity(State& st, double h);

    // Dense exact Newton step (riqn.md §5.4; option newton = "dense"): Δq = −(∂r/∂q⁺)⁻¹ r into st.dq, with
    //   ∂r/∂q⁺ = Σ_i J_i(q_k)ᵀ B_i J_i(q⁺) + D/2,   B_i = (∂μ_i/∂x_i) · dexp⁻¹_{x_i} · Ad_{f_i},
    // J_i the body Jacobian of link i, ∂μ/∂x by complex-step differentiation (exact to round-off).
    // Dense, O(n·depth²) to build and O(n³) to solve: for comparison, not for speed.
    static bool exact_step(State& st, double h);
    // B_i of link i (6×6 row-major) at the last DRNEA's f_i (the matrix of exact_step()).
    static void newton_block(const State& st, int i, double h, double* B);
    // The same block from the derivative of μ written out (no complex steps but for the scalar
    // coefficients a(θ), b(θ)): ~10× cheaper; equal to newton_block() to round-off.
    static void newton_block_fast(const State& st, int i, double h, double* B);
    // The exact Newton step of exact_step() in O(n): ∂r/∂q⁺ has the tree's sparsity with the
    // body Jacobians at q_k on the left and at q⁺ on the right, so the articulated-body
    // elimination goes through with two transforms per link, X_i = Ad_{(T_i^k)⁻¹} into the
    // parent's wrench and X⁺_i = Ad_{(T_i^+)⁻¹} from its twist (docs/integrators.md):
    //   IA_i = B_i + Σ_c X_cᵀ (IA_c − IA_c S_c D_c⁻¹ S_cᵀ IA_c) X⁺_c,   D_c = S_cᵀ IA_c S_c + k_c,
    // then the ABI's two solve passes with those blocks. False if a D_i is singular.
    static bool tree_newton_setup(State& st, double h);
    static bool tree_newton_solve(State& st);

    static void commit(State& st, double h);

    // Body poses at q_k and the discrete twists of the interval (q_{k−1}, q_k) into Data
    // (riqn.md §7.3), and on a tree of screw joints the joint coordinates q_k and their rates
    // (q_k − q_{k−1})/h (true: StepReport::coordinates, the kernel leaves them).
    static bool write_back(const Model& m, Data& d, State& st);
};

}  // namespace riqn
}  // namespace noether
