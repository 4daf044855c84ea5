// vi-galerkin: higher-order variational integrators in joint coordinates (paper 002, Fan, Schultz
// & Murphey), restated with verified formulas in docs/design/galerkin-vi.md (section numbers below
// refer to it).
//
// The mechanism is seen through the kernel's tree view (noether/sdk/tree.hpp): links in parents-first
// order, fixed joints merged, each joint a 1-DOF screw. One step of length h takes the control
// points q^{k,α} = q(t_k + c_α h), α = 0..s, at the Gauss–Lobatto nodes c_α of [0, 1] (s = 1: the
// trapezoid, s = 2: Simpson, order 2s) and solves the discrete Euler–Lagrange equations of the
// Galerkin discrete Lagrangian L_d = Σ_j w_j h L(q(τ_j), q̇(τ_j)) for q^{k,1..s}:
//
//   r^{k,0} = p^k + D_0 L_d + Q^{k,0} = 0,   r^{k,α} = D_α L_d + Q^{k,α} = 0 (α = 1..s−1),
//   p^{k+1} = D_s L_d + Q^{k,s}.
//
//   residual   Algorithm 1 (§4): a forward pass per node (poses, world screws S̄, velocities v̄,
//              Ṡ̄ = ad(v̄) S̄, world inertias M̄, momenta M̄ v̄, force impulses) and a backward
//              pass (subtree momenta μ̄ and impulses Γ̄)                                   O(s n)
//   direction  the exact Newton direction by articulated condensation (§5): per joint a
//              d × d matrix, d = 12 s + 6                                                 O(s³ n)
//   stop       when the applied correction is ≤ step_tolerance (§6)
//
// Joint springs, dampers and actuation act in joint space (Q); gravity, the Model's forces and
// the inputs' body forces and torques are evaluated at every quadrature node. After the step the
// bodies get their poses at q^{k+1} and their continuous velocities q̇ = M(q)⁻¹ p^{k+1} (§2.2,
// §9.1), so energy, momenta, joint rates and outputs are those of the continuous state. Energy is
// H(q, p) exactly; the maximal integrators' discrete monitors do not apply to this method.
//
// A failed step is retaken from the kernel's snapshot as 2, 4, … substeps. If a host moves the
// bodies or changes their velocities between steps, the integrator restarts from the Data as
// from a continuous state.
//
// Loop-closure joints stay holonomic constraints (§7): multipliers λ^{k,α} per interval node,
// the Schur update with s·m tree solves, velocities projected onto the constraints after the
// step. linearize() gives ∂x_{k+1}/∂x_k and ∂x_{k+1}/∂u (x = (q, q̇)) of a tree in O(n²) (§8).
//
// Source layout (plugins/integrators/vi_galerkin/): galerkin.hpp the state and the class,
// plugin.cpp the plugin class, entry.cpp its entry point, setup.cpp collocation, options, small dense
// solves, the continuous start and the write-back, residual.cpp Algorithm 1, newton.cpp the
// Newton direction and the substep, linearize.cpp the linearisation. tests/integrators/
// test_vi_galerkin.cpp links the class and its passes (not the entry point) to test them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "noether/data.hpp"
#include "noether/sdk/dense.hpp"
#include "noether/sdk/integrator.hpp"
#include "noether/sdk/misses.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/tree.hpp"

namespace noether {
namespace galerkin_vi {

constexpr int kMaxPoints = 6;  // s: the order is 2s; s = 6 is far beyond any use

// ---- Gauss–Lobatto collocation on [0, 1] ----------------------------------------------------

struct Lobatto {
    int s = 2;
    double c[kMaxPoints + 1] = {};  // nodes, c_0 = 0 < … < c_s = 1
    double w[kMaxPoints + 1] = {};  // weights, Σ w = 1
    double B[kMaxPoints + 1][kMaxPoints + 1] = {};  // B[j][a] = ℓ_a'(c_j)
    // M[a][b] = ∫₀¹ ℓ_a ℓ_b, exact (Gauss–Legendre): a servo's spring integrated exactly over the
    // interval, which for a linear spring is Gauss collocation, stable at any ω h (the Lobatto
    // sampling w_a δ_ab of the joint springs is stable only for ω h below about 2√3 at s = 2).
    double M[kMaxPoints + 1][kMaxPoints + 1] = {};

    // ℓ_a(x), the Lagrange basis on the nodes.
    double basis(int a, double x) const {
        double v = 1;
        for (int m = 0; m <= s; ++m)
            if (m != a) v *= (x - c[m]) / (c[a] - c[m]);
        return v;
    }
    double basis_derivative(int a, double x) const {
        double sum = 0;
        for (int k = 0; k <= s; ++k) {
            if (k == a) continue;
            double v = 1 / (c[a] - c[k]);
            for (int m = 0; m <= s; ++m)
                if (m != a && m != k) v *= (x - c[m]) / (c[a] - c[m]);
            sum += v;
        }
        return sum;
    }
};

// Nodes: ±1 and the roots of P_s' on [−1, 1] (Newton on (1 − x²) P_s' from the Chebyshev–Lobatto
// points), weights 2 / (s (s+1) P_s(x)²), both mapped to [0, 1].
Lobatto make_lobatto(int s);

// ---- options --------------------------------------------------------------------------------

struct GalerkinOptions {
    int s = 2;
    double step_tolerance = 1e-12;
    // newton = "chord": factor once per step and iterate with that factor while the corrections
    // shrink at least 4-fold, refactoring when a chord correction does not (docs/integrators.md);
    // "exact": a factor per iteration.
    bool chord = true;
    // guess = "feedback" (default): the polynomial extrapolation plus the misses of the last guesses,
    // extrapolated, while the last two agree (Galerkin::guess); "polynomial": the extrapolation.
    bool feedback = true;
    // max_turn: radians per substep (0: off), as vi-maximal's and riqn's option: each step is taken
    // as the fewest substeps (a power of two) that keep the fastest body of the last interval below
    // it (turn_substeps); not given, the kernel's whip guard (Data::turn_guard) stands in for it.
    double max_turn = 0;
};
// The largest max_turn accepted: a link turning π in one substep is beyond what any step resolves.
constexpr double kMaxTurnOption = 3.1;

// Guess "feedback": the last two misses agree within this fraction of the last one. Measured with
// points = 2: Atlas (fixed base, 2 s at dt 0.0052) 3.74 iterations a step without the misses, 3.48
// at 0.25, 3.43 at 0.5; the 16-link chain at dt 0.01 took 9 subdivided steps with no agreement test,
// 7 at 1, none at 0.25 (the whip's misses alternate).
constexpr double kMissAgreement = 0.25;

GalerkinOptions galerkin_options(const Model& m);

// ---- state ----------------------------------------------------------------------------------

struct State final : IntegratorState {
    // Carried between steps (saved).
    bool started = false;
    bool have_prev = false;             // prev_ctrl holds the last interval's control points
    double prev_h = 0;                  // its length
    std::vector<double> q, p;           // q^k, p^k (n)
    std::vector<double> qd0;            // q̇ at q^k for the guess: of the continuous start, then
                                        // written by write_back(); NaN (qd0[0]) after a substep
    std::vector<double> prev_ctrl;      // (s+1)·n, node-major
    SubstepHold hold;                   // remembered subdivision (option substep_hold)

    // Setup (constant) and workspaces (sized once).
    // The view is moved to origin.c when it lies far from the world's (tree_rebase_far): every world
    // quantity below (poses, screws, inertias, momenta, impulses) is then about that point, and Data's
    // body poses are converted at start() and write_back().
    TreeView tree;
    TreeOrigin origin;
    GalerkinOptions opt;
    Lobatto lob;
    int n = 0, nn = 0, d = 0;           // links, nodes (s + 1), condensed size 12 s + 6
    double ext[kMaxPoints + 1][kMaxPoints + 1] = {};  // guess: ℓ_β(1 + ρ c_α)
    std::vector<double> ctrl, qdn;      // control points and node rates, node-major (j·n + i)
    // Servos of the step per link (docs/servos.md), target in raw coordinates: the force
    // force − kp (q − target) − kv q̇ at every quadrature node, like the joint's spring and damper.
    std::vector<ServoTerms> servo;
    bool any_servo = false;
    std::vector<Frame> g;               // link poses per node
    std::vector<double> Sb, vb, Sd, hm, mu, Gam, E;  // 6 per (node, link)
    std::vector<double> Mb;             // world inertia per (node, link), 6×6 row-major
    std::vector<double> KA, KB, Fs;     // ∂(force impulse)/∂ξ: 3×3 blocks (torque and force rows
                                        // by ω) and the force, per (node, link)
    std::vector<double> r, dx, pn;      // residual and direction (s·n, link-major), p^{k+1} (n)
    // Node 0 is q^k for the whole step: evaluate() keeps its poses, screws and world inertias
    // while ctrl[0..n) equals node0_q bit for bit (node0_ok: evaluate() computed them from it or took
    // them from node s; reset by start(), which writes node 0's workspace too).
    bool node0_ok = false;
    std::vector<double> node0_q;
    // Guess "feedback" (saved but ctrl_guess): this substep's extrapolated control points 1..s and
    // guess_kind (0: none, 1: the polynomial, 2: with the end slope; guess()), the misses of the last
    // kGuessMisses guesses (converged less guessed, (s + 1)·n like ctrl, node 0 unused; newest
    // first: noether/sdk/misses.hpp), miss_count of them in a row of kind miss_kind and length
    // miss_h, and the degree of their extrapolation for the next guess (record_miss()).
    std::vector<double> ctrl_guess;
    std::vector<double> miss[kGuessMisses];
    std::int32_t guess_kind = 0, miss_count = 0, miss_kind = 0, miss_degree = 1;
    double miss_h = 0;
    // Node s's kinematics were computed by the last evaluate() from node_s_q (nodes_ok: there was
    // one; only evaluate() writes nodes 1..s): node 0's of the next substep, which starts there.
    bool nodes_ok = false;
    std::vector<double> node_s_q;
    // Newton factor (§5.3), per link: U, V, G, W (d × s, column-major), K (s × d, row-major),
    // LU of D (s × s) with pivots, Y^A (d × d).
    std::vector<double> U, V, G, W, K, Dlu, YA;
    std::vector<int> piv;
    // Per link, whether its Y^A is kept low-rank (factor()): Y^A_i = B_i − Σ_k W_k K_k over its
    // terms k (every link below it), B_i = Σ Y_k over its subtree, whose entries lie in the node
    // blocks of a link's own Y_i (in YA; the rest stays zero from the allocation). A link is
    // low-rank when its children are and it has at most kMaxTerms terms (a leaf: none); the others
    // keep Y^A dense. Terms per link: term_list[term_begin[i] .. term_begin[i + 1]).
    static constexpr int kMaxTerms = 6;  // measured: UR5 (5 terms at its root), chains, s = 2, 3
    std::vector<char> lowrank;
    std::vector<int> term_begin, term_list;
    std::vector<double> chat, X, uu;    // solve: d, d and s per link
    // Loop closures (§7): per loop joint its bodies, links (−1: the world) and rows; per
    // (node, row) the rows' Jacobians with respect to the world twists of a's and b's links (6
    // each) and the values h; the multipliers λ^{k,α}, α = 0..s−1 (carried, saved); the Schur
    // workspaces: Zc = J⁻¹ Aᵀ (s·m columns of s·n), Sm (s·m)², the projection of the write-back.
    // A coupling between tree coordinates (docs/couplings.md) is one row of the same kind, linear in
    // the coordinates: Σ coef_t q_t + c (raw coordinates; c takes the offsets; coef 1 for the
    // follower, −ratio for each leader), its row of A the constant Σ coef_t e_t, its multiplier a
    // generalized force on those coordinates.
    struct Loop {
        int joint = -1, a = -1, b = -1, la = -1, lb = -1, rows = 0, row0 = 0;
        int coupling = -1, nterms = 0;  // a coupling: Model::couplings index, its terms' links
        int link[kMaxCouplingTerms] = {};
        double coef[kMaxCouplingTerms] = {};
        double c = 0;
    };
    std::vector<Loop> loops;
    int mrows = 0;
    std::vector<double> Ga, Gb, hv, lam;
    std::vector<double> cf;  // couplings' generalized forces per (node < s, link), added to R
    bool any_coupling = false;
    std::vector<double> Zc, Sm, lrhs2, dlam, ywork, dqr, wproj, aproj, u0;
    std::vector<int> rperm, cperm;
    // Linearisation (§8, by tangents of the passes above): the tangent of the residuals of every
    // node (X: ξ^j, ζ^j per (node, link); Phi: its duals), the step's state before linearize()
    // (restored after), and the kinematics at the start and the end of the step.
    std::vector<double> LX, LPhi, ldq, ldqd, ldR, lrhs, lz, ldp, ldp1;
    std::vector<double> bk_q, bk_p, bk_qd0, bk_prev, bk_miss[kGuessMisses];
    struct Kinematics {
        std::vector<Frame> g;
        std::vector<double> S, Sd, v, h, mu, Mb, xi, ze, dmu;
    } kin0, kin1;
    // Outputs.
    std::vector<Frame> T;
    TreeABI abi;
    std::vector<double> qdot;
    std::vector<double> Vl;             // link twists, 6 per link
    std::vector<Pose> bp;

    std::size_t saved_size() const {
        return 2 + sizeof prev_h + sizeof miss_count + sizeof miss_kind + sizeof miss_degree + sizeof miss_h +
               sizeof(double) * (q.size() + p.size() + qd0.size() + prev_ctrl.size() + lam.size() +
                                 kGuessMisses * miss[0].size()) +
               SubstepHold::kSavedSize;
    }
    void save(std::string& out) const override {
        StateWriter w(out, saved_size());
        w.value(static_cast<char>(started ? 1 : 0));
        w.value(static_cast<char>(have_prev ? 1 : 0));
        w.value(prev_h);
        w.value(miss_count);
        w.value(miss_kind);
        w.value(miss_degree);
        w.value(miss_h);
        for (const std::vector<double>* v : {&q, &p, &qd0, &prev_ctrl, &lam}) w.values(*v);
        for (const std::vector<double>& v : miss) w.values(v);
        hold.save(w);
    }
    bool restore(const char*& p_, const char* end) override {
        if (static_cast<std::size_t>(end - p_) < saved_size()) return false;
        started = *p_++ != 0;
        have_prev = *p_++ != 0;
        restore_value(p_, prev_h);
        restore_value(p_, miss_count);
        restore_value(p_, miss_kind);
        restore_value(p_, miss_degree);
        restore_value(p_, miss_h);
        if (!misses_restorable(miss_count, miss_degree)) return false;
        for (std::vector<double>* v : {&q, &p, &qd0, &prev_ctrl, &lam}) restore_values(p_, *v);
        for (std::vector<double>& v : miss) restore_values(p_, v);
        return hold.restore(p_);
    }

    // The method's own rollback (Integrator::rolls_back_itself(); Galerkin::advance()). Before its
    // commit a substep changes, of what save() writes, only the loops' multipliers lam (their
    // Newton updates them in place); Data only write_back() writes, after success. begin_step() at
    // the step's start keeps lam; keep_entry() before an attempt that may change more (a restart
    // from Data, a subdivided attempt, whose substeps commit one by one) keeps what save() writes;
    // back_to_entry() returns to the step's start as restore() of what save() wrote then would.
    // The buffers are sized by create_state() (no allocation in a step).
    KeptState entry;
    std::vector<double> entry_lam;
    void begin_step() {
        entry.begin();
        std::copy(lam.begin(), lam.end(), entry_lam.begin());
    }
    void keep_entry() { entry.keep(*this); }
    bool back_to_entry() {
        if (entry.kept()) return entry.put_back(*this);
        std::copy(entry_lam.begin(), entry_lam.end(), lam.begin());
        return true;
    }
};

// Loop-closure multipliers: pivots below this fraction of the largest entry of the constraint
// system end the elimination (redundant rows, dense::solve_rank_revealing).
constexpr double kRankTolerance = 1e-11;


class Galerkin final : public Integrator {
public:
    Scheme scheme() const override { return Scheme::implicit_fixed; }
    std::vector<std::string> option_names() const override { return {"points", "step_tolerance", "newton", "guess", "max_turn", "substep_hold"}; }

    // The tree view of m, or false with one error per element vi-galerkin cannot take.
    static bool take_tree(const Model& m, TreeView& t, std::vector<Diagnostic>& out);

    void check(const Model& m, std::vector<Diagnostic>& out) const override;

    std::unique_ptr<IntegratorState> create_state(const Model& m) const override;

    StepReport advance(const Model& m, Data& d) const override;
    // A failed step (or a throw) leaves Data and the state as they were (State::keep_entry): the
    // kernel takes no step snapshot (~0.8k instructions a step on the double pendulum).
    bool rolls_back_itself() const override { return true; }

    // Introspection: the residual of the next step (§3) at the control points s = q^{k,1..s}
    // (s·n values, node-major: s[(α−1)·n + i], TreeView link order); f gets r^{k,0..s−1} in the
    // same layout. No Newton matrix (A must be null). The integrator state is left as it was.
    bool step_system(const Model& m, Data& d, const double* s, double* f, BlockMatrix* A) const override;

    // The passes below are public for the white-box test (tests/integrators/test_vi_galerkin.cpp
    // links them without the plugin's entry point).

    // ---- start from a continuous state (§2.3) ----------------------------------------------


    // q from the body poses (unwrapped against Data::coord), q̇_i = S̄ᵀ(v̄_i − v̄_par)/(S̄ᵀS̄) from
    // the bodies' twists (§2.3), and p = ∂L/∂q̇ = S̄ᵀ μ̄ by one forward and one backward pass
    // (node 0's workspace).
    static void start(const Model& m, const Data& d, State& st);
    // The world twist [ω; velocity of the body point at `origin`] of body b from Data::twist.
    static void spatial_twist(const Data& d, int b, const Vec3& origin, double* v);

    // h = M̄ v̄ = Ad_g⁻ᵀ M Ad_g⁻¹ v̄ for a link at world pose g (CoM frame).
    static void world_momentum(const TreeLink& l, const Frame& g, const double* v, double* h);

    // M̄ = Ad_g⁻ᵀ M Ad_g⁻¹ = [[Jw − m[x]×², m[x]×], [−m[x]×, m I]] (6×6 row-major) for a link at g.
    static void world_inertia(const TreeLink& l, const Frame& g, double* Mb);

    // ---- Algorithm 1 (§4): residual r (and p^{k+1} into st.pn) at st.ctrl ------------------

    static bool any_body_forcing(const Model& m, const Data& d);

    // Returns max |r| (or +inf / NaN when the state is not finite). With jacobian false the forces'
    // ξ-derivative blocks (KA, KB, Fs: read only by factor() and linearize()) are left as they are:
    // a chord iteration's residual, which no factorisation follows.
    static double evaluate(const Model& m, const Data& d, State& st, double h, int* worst, bool jacobian = true);

    // The Model's forces and the inputs' body forces and torques at node j (as body_wrenches()
    // defines them), onto the links' impulses E (world wrench about the origin, times w_j h) and
    // their ξ-derivative blocks. A force f at the world point y = x_b + R c with the torque τ
    // gives [y × f + τ; f]; moved by ξ = [ω; v] it changes by
    //   [[f]×[y]× − [y]×[f]×·(f turns with the body) − [τ]×·(τ turns with the body), −[f]×;
    //    −[f]×·(f turns with the body), 0] ξ.
    static void add_force(State& st, std::size_t ji, double wdt, const Vec3& f, const Vec3& y, bool f_turns,
                          const Vec3& tau, bool tau_turns, bool jacobian);
    static void add_body_forcing(const Model& m, const Data& d, State& st, int j, double wdt, bool jacobian);

    // ---- loop closures as holonomic constraints (§7) ------------------------------------------

    // A joint-Jacobian row [∂g/∂x (world) | ∂g/∂θ (body frame)] of a body at `pose` as a row
    // against the world twist [ω; v] of its link: δx = v + ω × x, δθ = Rᵀ ω, so
    // G = [x × Jx + R Jθ; Jx]. The same map takes a body wrench [f; τ_body] to the world wrench.
    static void world_row(const Pose& pose, const double* J, double* G);
    static Pose body_pose_at(const TreeView& t, const Frame* g, int b);
    // At node j: the loop rows h and their Jacobians; the multipliers' impulses A(q^{k,j})ᵀ λ^{k,j}
    // (j < s) and the loop joints' actuation (w_j h C(q)ᵀ u) onto the links' impulses E.
    static void add_loops(const Model& m, const Data& d, State& st, int j, double wdt);
    // Row `row` of A(q^{k,node}) (against the joint coordinates), times f, added to slot `slot` of
    // the link-major vector x (`stride` per link); or, with `dot`, its product with that slot of x.
    static double loop_row(const State& st, int node, int row, double f, double* x, int stride, int slot, bool dot);
    // The constrained Newton direction (§7) from the factor of J and −r in st.r: δq into st.dx,
    // the multipliers updated. For s ≥ 2 the factor leaves out the constraints' curvature (the
    // change of A(q^{k,α})ᵀ λ with q^{k,α}, α ≥ 1): Newton then contracts linearly, by a factor of
    // about |λ| h² / inertia per iteration.
    static void constrained_direction(State& st);

    // ---- the exact Newton direction (§5) ----------------------------------------------------

    // X layout (d = 12 s + 6): ξ^j for the active nodes j = 1..s at 6(j−1), then ζ^j for every
    // node j = 0..s at 6 s + 6 j.
    static int xi_off(int j) { return 6 * (j - 1); }
    static int zeta_off(int s, int j) { return 6 * s + 6 * j; }

    // Factor the Newton matrix at the last evaluate(); false if a joint block D_i is singular.
    static bool factor(State& st, double h);

    // x = J⁻¹ b (b, x: s per link, link-major) with the factor above.
    static void solve(State& st, const double* b, double* x);

    // ---- one step of length h (§6) ---------------------------------------------------------

    // First guess of q^{k,1..s}: the last interval's polynomial extrapolated, or q + c_α h q̇.
    static void guess(State& st, double h);
    // The servos of the coming step into st.servo (kernel servo_terms, targets made raw).
    static void set_servos(const Model& m, const Data& d, State& st);

    Attempt substep(const Model& m, const Data& d, State& st, double h) const;

    // ---- linearisation of the step -----------------------------------------------------------
    //
    // x = (q, q̇) with q̇ = M(q)⁻¹ p, u = the joint inputs. The step is (q^k, p^k = M(q^k) q̇^k) →
    // solve r^{k,0..s−1} = 0 for q^{k,1..s} → q^{k+1} = q^{k,s}, p^{k+1} = R^s, q̇^{k+1} =
    // M(q^{k+1})⁻¹ p^{k+1}. One column of ∂x_{k+1}/∂(x_k, u) per input direction:
    //   δp^k       = ∂p/∂q δq + M δq̇                      (momentum tangent at the start, O(n))
    //   rhs        = ∂r/∂q^{k,0} δq + E_0 δp^k + ∂r/∂u δu  (tangent of Algorithm 1, O(s n))
    //   δq^{k,1..s} = −J⁻¹ rhs                              (the Newton factor at the solution, O(s³ n))
    //   δp^{k+1}   = δR^s(δq^{k,0..s}) (+ ∂R^s/∂u δu);  δq̇^{k+1} = M⁻¹ (δp^{k+1} − ∂p/∂q δq^{k+1})
    // so 3n columns cost O(n²). The tangent of Algorithm 1 is the pairing of §5.2 with every
    // node active (ξ^0 included): δR_i^α = Σ_j V(α, j)ᵀ Φ_i^j + G(α, j)ᵀ X_i^j + δQ_i^α.

    bool has_linearization() const override { return true; }
    bool takes_couplings() const override { return true; }

    // Poses, world screws, velocities, Ṡ̄, inertias, momenta and subtree momenta at (q, q̇).
    static void kinematics(const TreeView& t, const double* q, const double* qd, State::Kinematics& k);
    // δp = ∂(S̄ᵀ μ̄)/∂q δq + M δq̇ at the kinematics k (either tangent may be null).
    static void momentum_tangent(const TreeView& t, State::Kinematics& k, const double* dq, const double* dqd,
                                 double* dp);

    // δR^{0..s} (st.ldR, node-major α·n + i) for the control-point tangent st.ldq (node-major),
    // at the last evaluate().
    static void residual_tangent(State& st, double h);

    StepStatus linearize(const Model& m, Data& d, Linearization& out) const override;

    // ---- write-back (§2.2): poses at q^{k+1}, continuous velocities q̇ = M⁻¹ p ------------

    // With loops, the rates the constraints allow (§9.1): q̇ = M⁻¹ (p − Aᵀ ν) with
    // A M⁻¹ Aᵀ ν = A M⁻¹ p, A at q^{k+1} (the last node of the last evaluate()); st.qdot holds
    // M⁻¹ p and the articulated-body factor is at q^{k+1}.
    static void project_rates(State& st);

    static void add_misses(State& st, double h);   // guess "feedback" (newton.cpp)
    static void record_miss(State& st, double h);
    // Poses, twists (q̇ from the node momentum) and, when the view holds every DOF, the joint
    // coordinates and rates into Data (true: StepReport::coordinates, the kernel leaves them).
    static bool write_back(const Model& m, Data& d, State& st);

private:
    // advance() within its rollback (State::keep_entry before an attempt that may change more than
    // the loops' multipliers, rollback() to return to the step's start).
    template <class Rollback>
    StepReport advance_kept(const Model& m, Data& d, State& st, int first, int k0, Rollback& rollback) const;
};

}  // namespace galerkin_vi
}  // namespace noether
