// vi-galerkin: higher-order variational integrators in joint coordinates (paper 002, Fan, Schultz
// & Murphey), restated with verified formulas in docs/design/galerkin-vi.md (section numbers below
// refer to it).
//
// The mechanism is seen through the kernel's tree view (noether/tree.hpp): links in parents-first
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
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "noether/data.hpp"
#include "noether/integrator.hpp"
#include "noether/plugin.hpp"
#include "noether/tree.hpp"

namespace {

using namespace noether;

constexpr int kMaxPoints = 6;  // s: the order is 2s; s = 6 is far beyond any use

// ---- Gauss–Lobatto collocation on [0, 1] ----------------------------------------------------

struct Lobatto {
    int s = 2;
    double c[kMaxPoints + 1] = {};  // nodes, c_0 = 0 < … < c_s = 1
    double w[kMaxPoints + 1] = {};  // weights, Σ w = 1
    double B[kMaxPoints + 1][kMaxPoints + 1] = {};  // B[j][a] = ℓ_a'(c_j)

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
Lobatto make_lobatto(int s) {
    Lobatto L;
    L.s = s;
    double x[kMaxPoints + 1];
    for (int j = 0; j <= s; ++j) x[j] = -std::cos(M_PI * j / s);
    double Ps[kMaxPoints + 1];
    for (int it = 0; it < 100; ++it) {
        double change = 0;
        for (int j = 0; j <= s; ++j) {
            // P_{s−1}, P_s by the three-term recurrence; x P_s − P_{s−1} = (x² − 1) P_s' / s vanishes
            // at the Lobatto nodes, and its derivative there is (s + 1) P_s.
            double p0 = 1, p1 = x[j];
            for (int k = 2; k <= s; ++k) {
                const double p2 = ((2 * k - 1) * x[j] * p1 - (k - 1) * p0) / k;
                p0 = p1, p1 = p2;
            }
            Ps[j] = p1;
            if (j == 0 || j == s) continue;  // the end points are exact
            const double dx = (x[j] * p1 - p0) / ((s + 1) * p1);
            x[j] -= dx;
            change = std::max(change, std::fabs(dx));
        }
        if (change < 1e-16) break;
    }
    for (int j = 0; j <= s; ++j) {
        L.c[j] = 0.5 * (1 + x[j]);
        L.w[j] = 1.0 / (s * (s + 1) * Ps[j] * Ps[j]);  // 2/(s(s+1)P²) on [−1, 1], halved
    }
    if (s % 2 == 0) L.c[s / 2] = 0.5;  // the middle node exactly
    for (int j = 0; j <= s; ++j)
        for (int a = 0; a <= s; ++a) L.B[j][a] = L.basis_derivative(a, L.c[j]);
    return L;
}

// ---- options --------------------------------------------------------------------------------

struct GalerkinOptions {
    int s = 2;
    double step_tolerance = 1e-12;
};

GalerkinOptions galerkin_options(const Model& m) {
    GalerkinOptions o;
    auto it = m.options.extra.find("points");
    if (it != m.options.extra.end() && it->second >= 1 && it->second <= kMaxPoints) o.s = static_cast<int>(it->second);
    it = m.options.extra.find("step_tolerance");
    if (it != m.options.extra.end()) o.step_tolerance = it->second;
    return o;
}

// ---- state ----------------------------------------------------------------------------------

struct State final : IntegratorState {
    // Carried between steps (saved).
    bool started = false;
    bool have_prev = false;             // prev_ctrl holds the last interval's control points
    double prev_h = 0;                  // its length
    std::vector<double> q, p;           // q^k, p^k (n)
    std::vector<double> qd0;            // q̇ of the continuous start (first guess)
    std::vector<double> prev_ctrl;      // (s+1)·n, node-major

    // Setup (constant) and workspaces (sized once).
    TreeView tree;
    GalerkinOptions opt;
    Lobatto lob;
    int n = 0, nn = 0, d = 0;           // links, nodes (s + 1), condensed size 12 s + 6
    double ext[kMaxPoints + 1][kMaxPoints + 1] = {};  // guess: ℓ_β(1 + ρ c_α)
    std::vector<double> ctrl, qdn;      // control points and node rates, node-major (j·n + i)
    std::vector<Frame> g;               // link poses per node
    std::vector<double> Sb, vb, Sd, hm, mu, Gam, E;  // 6 per (node, link)
    std::vector<double> Mb;             // world inertia per (node, link), 6×6 row-major
    std::vector<double> KA, KB, Fs;     // ∂(force impulse)/∂ξ: 3×3 blocks (torque and force rows
                                        // by ω) and the force, per (node, link)
    std::vector<double> r, dx, pn;      // residual and direction (s·n, link-major), p^{k+1} (n)
    // Newton factor (§5.3), per link: U, V, G, W (d × s, column-major), K (s × d, row-major),
    // LU of D (s × s) with pivots, Y^A (d × d).
    std::vector<double> U, V, G, W, K, Dlu, YA;
    std::vector<int> piv;
    std::vector<double> chat, X, uu;    // solve: d, d and s per link
    // Loop closures (§7): per loop joint its bodies, links (−1: the world) and rows; per
    // (node, row) the rows' Jacobians with respect to the world twists of a's and b's links (6
    // each) and the values h; the multipliers λ^{k,α}, α = 0..s−1 (carried, saved); the Schur
    // workspaces: Zc = J⁻¹ Aᵀ (s·m columns of s·n), Sm (s·m)², the projection of the write-back.
    struct Loop {
        int joint = -1, a = -1, b = -1, la = -1, lb = -1, rows = 0, row0 = 0;
    };
    std::vector<Loop> loops;
    int mrows = 0;
    std::vector<double> Ga, Gb, hv, lam;
    std::vector<double> Zc, Sm, lrhs2, dlam, ywork, dqr, wproj, aproj, u0;
    std::vector<int> rperm, cperm;
    // Linearisation (§8, by tangents of the passes above): the tangent of the residuals of every
    // node (X: ξ^j, ζ^j per (node, link); Phi: its duals), the step's state before linearize()
    // (restored after), and the kinematics at the start and the end of the step.
    std::vector<double> LX, LPhi, ldq, ldqd, ldR, lrhs, lz, ldp, ldp1;
    std::vector<double> bk_q, bk_p, bk_qd0, bk_prev;
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

    void save(std::string& out) const override {
        const char flags[2] = {static_cast<char>(started ? 1 : 0), static_cast<char>(have_prev ? 1 : 0)};
        out.append(flags, 2);
        out.append(reinterpret_cast<const char*>(&prev_h), sizeof prev_h);
        for (const std::vector<double>* v : {&q, &p, &qd0, &prev_ctrl, &lam})
            if (!v->empty()) out.append(reinterpret_cast<const char*>(v->data()), sizeof(double) * v->size());
    }
    bool restore(const char*& p_, const char* end) override {
        const std::size_t need = 2 + sizeof prev_h +
                                 sizeof(double) * (q.size() + p.size() + qd0.size() + prev_ctrl.size() + lam.size());
        if (static_cast<std::size_t>(end - p_) < need) return false;
        started = *p_++ != 0;
        have_prev = *p_++ != 0;
        std::memcpy(&prev_h, p_, sizeof prev_h);
        p_ += sizeof prev_h;
        for (std::vector<double>* v : {&q, &p, &qd0, &prev_ctrl, &lam}) {
            if (!v->empty()) std::memcpy(v->data(), p_, sizeof(double) * v->size());
            p_ += sizeof(double) * v->size();
        }
        return true;
    }
};

// LU with partial pivoting of the s × s matrix A (row-major) in place; false if singular.
bool lu_factor(double* A, int* piv, int s) {
    double big = 0;
    for (int k = 0; k < s * s; ++k) big = std::max(big, std::fabs(A[k]));
    for (int k = 0; k < s; ++k) {
        int p = k;
        for (int i = k + 1; i < s; ++i)
            if (std::fabs(A[i * s + k]) > std::fabs(A[p * s + k])) p = i;
        piv[k] = p;
        if (!(std::fabs(A[p * s + k]) > 1e-300 + 1e-14 * big)) return false;
        if (p != k)
            for (int j = 0; j < s; ++j) std::swap(A[k * s + j], A[p * s + j]);
        for (int i = k + 1; i < s; ++i) {
            const double f = A[i * s + k] /= A[k * s + k];
            for (int j = k + 1; j < s; ++j) A[i * s + j] -= f * A[k * s + j];
        }
    }
    return true;
}
void lu_solve(const double* A, const int* piv, int s, double* b) {
    for (int k = 0; k < s; ++k)
        if (piv[k] != k) std::swap(b[k], b[piv[k]]);
    for (int i = 1; i < s; ++i)
        for (int j = 0; j < i; ++j) b[i] -= A[i * s + j] * b[j];
    for (int i = s - 1; i >= 0; --i) {
        for (int j = i + 1; j < s; ++j) b[i] -= A[i * s + j] * b[j];
        b[i] /= A[i * s + i];
    }
}

// x = A⁻¹ b for the k × k matrix A (row-major, destroyed) by Gaussian elimination with complete
// pivoting; pivots below 1e-11 of the largest entry end the elimination and the remaining
// unknowns are 0 (redundant constraint rows: a basic solution). Returns the rank.
int solve_pivoted(double* A, int k, double* b, double* x, int* rp, int* cp, double* y) {
    double big = 0;
    for (int i = 0; i < k * k; ++i) big = std::max(big, std::fabs(A[i]));
    for (int i = 0; i < k; ++i) rp[i] = i, cp[i] = i;
    int rank = 0;
    for (; rank < k; ++rank) {
        int pi = rank, pj = rank;
        double best = -1;
        for (int i = rank; i < k; ++i)
            for (int j = rank; j < k; ++j)
                if (std::fabs(A[i * k + j]) > best) best = std::fabs(A[i * k + j]), pi = i, pj = j;
        if (!(best > 1e-11 * big) || !(best > 1e-300)) break;
        if (pi != rank) {
            for (int j = 0; j < k; ++j) std::swap(A[rank * k + j], A[pi * k + j]);
            std::swap(b[rank], b[pi]);
            std::swap(rp[rank], rp[pi]);
        }
        if (pj != rank) {
            for (int i = 0; i < k; ++i) std::swap(A[i * k + rank], A[i * k + pj]);
            std::swap(cp[rank], cp[pj]);
        }
        for (int i = rank + 1; i < k; ++i) {
            const double f = A[i * k + rank] /= A[rank * k + rank];
            for (int j = rank + 1; j < k; ++j) A[i * k + j] -= f * A[rank * k + j];
            b[i] -= f * b[rank];
        }
    }
    for (int i = rank - 1; i >= 0; --i) {
        double v = b[i];
        for (int j = i + 1; j < rank; ++j) v -= A[i * k + j] * y[j];
        y[i] = v / A[i * k + i];
    }
    for (int i = 0; i < k; ++i) x[cp[i]] = i < rank ? y[i] : 0.0;
    return rank;
}

class Galerkin final : public Integrator {
public:
    Scheme scheme() const override { return Scheme::implicit_fixed; }
    std::vector<std::string> option_names() const override { return {"points", "step_tolerance"}; }

    // The tree view of m, or false with one error per element vi-galerkin cannot take.
    static bool take_tree(const Model& m, TreeView& t, std::vector<Diagnostic>& out) {
        const std::size_t first = out.size();
        const bool tree = build_tree_view(m, "vi-galerkin", t, out, true);  // loops stay constraints (§7)
        for (std::size_t k = first; k < out.size(); ++k) {  // the tree view's list includes ball joints
            std::string& msg = out[k].message;
            const std::string kinds = "helical, spherical and fixed joints";
            const std::size_t at = msg.find(kinds);
            if (at != std::string::npos) msg.replace(at, kinds.size(), "helical and fixed joints");
        }
        if (!tree) return false;
        for (const TreeLink& l : t.links) {
            if (l.type == TreeJoint::screw) continue;
            if (l.type == TreeJoint::ball) {
                const JointInfo& ji = m.joints[l.joint];
                out.push_back({Severity::error, ji.origin,
                               "vi-galerkin: joint '" + ji.name + "' (" + ji.type +
                                   ") has 3 degrees of freedom; vi-galerkin takes 1-DOF joints (revolute, prismatic, "
                                   "helical) and fixed joints; use riqn, vi-maximal or vi-midpoint"});
            } else {
                const BodyInfo& b = m.bodies[l.body];
                out.push_back({Severity::error, b.origin,
                               "vi-galerkin: body '" + b.name +
                                   "' floats free (no chain of joints to the world); vi-galerkin takes mechanisms "
                                   "attached to the world by 1-DOF joints; use riqn, vi-maximal or vi-midpoint"});
            }
        }
        for (int j : m.graph.loop_joints) {
            const JointInfo& ji = m.joints[j];
            bool forced = false;
            for (double v : ji.stiffness) forced = forced || v != 0;
            for (double v : ji.damping) forced = forced || v != 0;
            if (forced)
                out.push_back({Severity::error, ji.origin,
                               "vi-galerkin: joint '" + ji.name +
                                   "' closes a kinematic loop and has a spring or damper; vi-galerkin keeps loop "
                                   "closures as constraints without springs or dampers; put them on a tree joint or "
                                   "use vi-maximal or vi-midpoint"});
        }
        return out.size() == first;
    }

    void check(const Model& m, std::vector<Diagnostic>& out) const override {
        TreeView t;
        take_tree(m, t, out);
        const Origin none = m.origin;
        if (m.options.extra_lists.count("points") || m.options.extra_lists.count("step_tolerance"))
            out.push_back({Severity::error, none, "options: vi-galerkin options 'points' and 'step_tolerance' are numbers"});
        auto it = m.options.extra.find("points");
        if (it != m.options.extra.end()) {
            const double v = it->second;
            if (!(v >= 1 && v <= kMaxPoints && v == std::floor(v))) {
                char buf[200];
                std::snprintf(buf, sizeof buf,
                              "options: vi-galerkin option 'points' must be an integer from 1 to %d (1: trapezoid, "
                              "order 2; 2: Simpson, order 4; s: order 2s), got %g",
                              kMaxPoints, v);
                out.push_back({Severity::error, none, buf});
            }
        }
        const GalerkinOptions o = galerkin_options(m);
        if (!(o.step_tolerance > 0) || !std::isfinite(o.step_tolerance)) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "options: vi-galerkin option 'step_tolerance' must be positive and finite, got %g",
                          o.step_tolerance);
            out.push_back({Severity::error, none, buf});
        }
    }

    std::unique_ptr<IntegratorState> create_state(const Model& m) const override {
        auto st = std::make_unique<State>();
        std::vector<Diagnostic> errors;
        if (!take_tree(m, st->tree, errors)) throw ModelError(errors);
        st->opt = galerkin_options(m);
        st->lob = make_lobatto(st->opt.s);
        const int n = st->tree.size(), s = st->opt.s, nn = s + 1, d = 12 * s + 6, nb = m.nbodies();
        st->n = n, st->nn = nn, st->d = d;
        const std::size_t N = static_cast<std::size_t>(n), NN = N * nn;
        st->q.assign(N, 0.0);
        st->p.assign(N, 0.0);
        st->qd0.assign(N, 0.0);
        st->pn.assign(N, 0.0);
        st->qdot.assign(N, 0.0);
        st->prev_ctrl.assign(NN, 0.0);
        st->ctrl.assign(NN, 0.0);
        st->qdn.assign(NN, 0.0);
        st->g.assign(NN, Frame{});
        for (std::vector<double>* v : {&st->Sb, &st->vb, &st->Sd, &st->hm, &st->mu, &st->Gam, &st->E}) v->assign(6 * NN, 0.0);
        st->Mb.assign(36 * NN, 0.0);
        st->KA.assign(9 * NN, 0.0);
        st->KB.assign(9 * NN, 0.0);
        st->Fs.assign(3 * NN, 0.0);
        st->r.assign(N * s, 0.0);
        st->dx.assign(N * s, 0.0);
        for (std::vector<double>* v : {&st->U, &st->V, &st->G, &st->W, &st->K}) v->assign(N * d * s, 0.0);
        st->Dlu.assign(N * s * s, 0.0);
        st->piv.assign(N * s, 0);
        st->YA.assign(N * d * d, 0.0);
        st->chat.assign(N * d, 0.0);
        st->X.assign(N * d, 0.0);
        st->uu.assign(N * s, 0.0);
        for (int j : m.graph.loop_joints) {
            const JointInfo& ji = m.joints[j];
            State::Loop c;
            c.joint = j, c.a = ji.a, c.b = ji.b, c.rows = ji.rows, c.row0 = st->mrows;
            c.la = ji.a >= 0 ? st->tree.body_link[ji.a] : -1;
            c.lb = st->tree.body_link[ji.b];
            st->loops.push_back(c);
            st->mrows += ji.rows;
        }
        if (st->mrows > 0) {
            const std::size_t M = static_cast<std::size_t>(st->mrows), K = M * s;
            st->Ga.assign(6 * M * nn, 0.0);
            st->Gb.assign(6 * M * nn, 0.0);
            st->hv.assign(M * nn, 0.0);
            st->lam.assign(K, 0.0);
            st->Zc.assign(K * N * s, 0.0);
            st->Sm.assign(K * K, 0.0);
            for (std::vector<double>* v : {&st->lrhs2, &st->dlam, &st->ywork}) v->assign(K, 0.0);
            st->dqr.assign(N * s, 0.0);
            st->wproj.assign(M * N, 0.0);
            st->aproj.assign(M * N, 0.0);
            st->u0.assign(N, 0.0);
            st->rperm.assign(K, 0);
            st->cperm.assign(K, 0);
        }
        st->T.assign(N, Frame{});
        st->Vl.assign(6 * N, 0.0);
        for (std::vector<double>* v : {&st->LX, &st->LPhi}) v->assign(12 * NN, 0.0);
        for (std::vector<double>* v : {&st->ldq, &st->ldqd, &st->ldR, &st->bk_prev}) v->assign(NN, 0.0);
        for (std::vector<double>* v : {&st->lrhs, &st->lz}) v->assign(N * s, 0.0);
        for (std::vector<double>* v : {&st->ldp, &st->ldp1, &st->bk_q, &st->bk_p, &st->bk_qd0}) v->assign(N, 0.0);
        for (State::Kinematics* k : {&st->kin0, &st->kin1}) {
            k->g.assign(N, Frame{});
            for (std::vector<double>* v : {&k->S, &k->Sd, &k->v, &k->h, &k->mu, &k->xi, &k->ze, &k->dmu})
                v->assign(6 * N, 0.0);
            k->Mb.assign(36 * N, 0.0);
        }
        st->bp.assign(nb, Pose{});
        return st;
    }

    StepReport advance(const Model& m, Data& d) const override {
        State& st = static_cast<State&>(*d.integrator_state);
        StepReport report = subdivide(
            m, d, 1, 1,
            [&](int, double) {
                if (!st.started || d.host_changed()) start(m, d, st);  // the kernel's host-edit test
            },
            [&](double hs) { return substep(m, d, st, hs); }, [](int, double) {});
        if (report.status == StepStatus::ok) write_back(m, d, st);
        return report;
    }

    // Introspection: the residual of the next step (§3) at the control points s = q^{k,1..s}
    // (s·n values, node-major: s[(α−1)·n + i], TreeView link order); f gets r^{k,0..s−1} in the
    // same layout. No Newton matrix (A must be null). The integrator state is left as it was.
    bool step_system(const Model& m, Data& d, const double* s, double* f, BlockMatrix* A) const override {
        if (A) return false;
        State& st = static_cast<State&>(*d.integrator_state);
        std::string saved;
        st.save(saved);
        if (!st.started || d.changed_since_commit()) start(m, d, st);
        const int n = st.n, S = st.opt.s;
        std::copy(st.q.begin(), st.q.end(), st.ctrl.begin());
        std::copy(s, s + static_cast<std::size_t>(S) * n, st.ctrl.begin() + n);
        int worst = -1;
        evaluate(m, d, st, m.options.dt, &worst);
        for (int a = 0; a < S; ++a)
            for (int i = 0; i < n; ++i) f[a * n + i] = st.r[i * S + a];
        const char* p = saved.data();
        st.restore(p, saved.data() + saved.size());
        return true;
    }

    // The passes below are public for the white-box test (tests/integrators/test_vi_galerkin.cpp
    // compiles this file with NOETHER_GALERKIN_NO_ENTRY).

    // ---- start from a continuous state (§2.3) ----------------------------------------------


    static double offset(const Model& m, const TreeLink& l) {
        const JointInfo& j = m.joints[l.joint];
        return j.offset.empty() ? 0 : j.offset[0];
    }

    // q from the body poses (unwrapped against Data::coord), q̇_i = S̄ᵀ(v̄_i − v̄_par)/(S̄ᵀS̄) from
    // the bodies' twists (§2.3), and p = ∂L/∂q̇ = S̄ᵀ μ̄ by one forward and one backward pass
    // (node 0's workspace).
    static void start(const Model& m, const Data& d, State& st) {
        const TreeView& t = st.tree;
        const int n = st.n;
        std::vector<double>& prev = st.qdot;  // scratch
        for (int i = 0; i < n; ++i) prev[i] = d.coord[t.links[i].dof] - offset(m, t.links[i]);
        tree_coordinates(t, d.pose.data(), prev.data(), st.q.data());
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            const Frame Ti = link_transform(l, st.q[i]);
            st.g[i] = l.parent >= 0 ? st.g[l.parent] * Ti : Ti;
            double* S = &st.Sb[6 * i];
            double* v = &st.vb[6 * i];
            ad_apply(st.g[i], l.S, S);
            double rel[6], vp[6] = {0, 0, 0, 0, 0, 0};
            spatial_twist(d, l.body, rel);
            if (l.parent >= 0) spatial_twist(d, t.links[l.parent].body, vp);
            for (int k = 0; k < 6; ++k) rel[k] -= vp[k];
            st.qd0[i] = dot6(S, rel) / dot6(S, S);
            for (int k = 0; k < 6; ++k) v[k] = (l.parent >= 0 ? st.vb[6 * l.parent + k] : 0.0) + S[k] * st.qd0[i];
            world_momentum(l, st.g[i], v, &st.mu[6 * i]);
        }
        for (int i = n - 1; i >= 0; --i) {
            const int par = t.links[i].parent;
            st.p[i] = dot6(&st.Sb[6 * i], &st.mu[6 * i]);
            if (par >= 0)
                for (int k = 0; k < 6; ++k) st.mu[6 * par + k] += st.mu[6 * i + k];
        }
        st.have_prev = false;
        st.started = true;
    }
    // The world twist [ω; velocity of the body point at the origin] of body b from Data::twist.
    static void spatial_twist(const Data& d, int b, double* v) {
        const Vec3 w = rotate(d.pose[b].q, d.twist[b].w);
        set6(v, w, d.twist[b].v - cross(w, d.pose[b].x));
    }

    // h = M̄ v̄ = Ad_g⁻ᵀ M Ad_g⁻¹ v̄ for a link at world pose g (CoM frame).
    static void world_momentum(const TreeLink& l, const Frame& g, const double* v, double* h) {
        double b[6], w[6];
        twist_to_child(g, v, b);
        const Vec3 Jw = l.inertia * top(b);
        set6(w, Jw, l.mass * bot(b));
        wrench_to_parent(g, w, h);
    }

    // M̄ = Ad_g⁻ᵀ M Ad_g⁻¹ = [[Jw − m[x]×², m[x]×], [−m[x]×, m I]] (6×6 row-major) for a link at g.
    static void world_inertia(const TreeLink& l, const Frame& g, double* Mb) {
        const Mat3 Jw = g.R * l.inertia * transpose(g.R);
        const Mat3 X = skew(g.p);
        const Mat3 XX = X * X;
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) {
                Mb[6 * a + b] = Jw(a, b) - l.mass * XX(a, b);
                Mb[6 * a + b + 3] = l.mass * X(a, b);
                Mb[6 * (a + 3) + b] = -l.mass * X(a, b);
                Mb[6 * (a + 3) + b + 3] = a == b ? l.mass : 0.0;
            }
    }

    // ---- Algorithm 1 (§4): residual r (and p^{k+1} into st.pn) at st.ctrl ------------------

    static bool any_body_forcing(const Model& m, const Data& d) {
        if (!m.forces.empty()) return true;
        for (int b = 0; b < m.nbodies(); ++b) {
            const Vec3& f = d.applied_force[b];
            const Vec3& tq = d.applied_torque[b];
            if (f.x != 0 || f.y != 0 || f.z != 0 || tq.x != 0 || tq.y != 0 || tq.z != 0) return true;
        }
        return false;
    }

    // Returns max |r| (or +inf / NaN when the state is not finite).
    static double evaluate(const Model& m, const Data& d, State& st, double h, int* worst) {
        const TreeView& t = st.tree;
        const Lobatto& L = st.lob;
        const int n = st.n, s = L.s, nn = st.nn;
        const bool body_forcing = any_body_forcing(m, d);
        // Node rates q̇(τ_j) = Σ_α B[j][α] q^{k,α} / h.
        for (int j = 0; j < nn; ++j)
            for (int i = 0; i < n; ++i) {
                double v = 0;
                for (int a = 0; a < nn; ++a) v += L.B[j][a] * st.ctrl[a * n + i];
                st.qdn[j * n + i] = v / h;
            }
        for (int j = 0; j < nn; ++j) {
            const double wdt = L.w[j] * h;
            for (int i = 0; i < n; ++i) {
                const TreeLink& l = t.links[i];
                const std::size_t ji = static_cast<std::size_t>(j) * n + i;
                const std::size_t jp = static_cast<std::size_t>(j) * n + l.parent;
                const Frame Ti = link_transform(l, st.ctrl[ji]);
                Frame& g = st.g[ji];
                g = l.parent >= 0 ? st.g[jp] * Ti : Ti;
                double* S = &st.Sb[6 * ji];
                double* v = &st.vb[6 * ji];
                ad_apply(g, l.S, S);
                const double qd = st.qdn[ji];
                for (int k = 0; k < 6; ++k) v[k] = (l.parent >= 0 ? st.vb[6 * jp + k] : 0.0) + S[k] * qd;
                ad_twist(v, S, &st.Sd[6 * ji]);
                double* Mb = &st.Mb[36 * ji];
                world_inertia(l, g, Mb);
                const Mat3 X = skew(g.p);
                double* hm = &st.hm[6 * ji];
                for (int a = 0; a < 6; ++a) hm[a] = dot6(&Mb[6 * a], v);
                // Gravity impulse w h [x × f; f] and its ξ-derivative block [f]×[x]×.
                const Vec3 f = l.mass * m.gravity;
                set6(&st.E[6 * ji], wdt * cross(g.p, f), wdt * f);
                const Mat3 KA = skew(f) * X;
                for (int a = 0; a < 3; ++a)
                    for (int b = 0; b < 3; ++b) st.KA[9 * ji + 3 * a + b] = KA(a, b), st.KB[9 * ji + 3 * a + b] = 0;
                st.Fs[3 * ji] = f.x, st.Fs[3 * ji + 1] = f.y, st.Fs[3 * ji + 2] = f.z;
            }
            if (body_forcing) add_body_forcing(m, d, st, j, wdt);
            if (!st.loops.empty()) add_loops(m, d, st, j, wdt);
        }
        // Backward pass: subtree sums μ̄ and Γ̄.
        std::copy(st.hm.begin(), st.hm.end(), st.mu.begin());
        std::copy(st.E.begin(), st.E.end(), st.Gam.begin());
        for (int j = 0; j < nn; ++j)
            for (int i = n - 1; i >= 0; --i) {
                const int par = t.links[i].parent;
                if (par < 0) continue;
                const std::size_t ji = static_cast<std::size_t>(j) * n + i, jp = static_cast<std::size_t>(j) * n + par;
                for (int k = 0; k < 6; ++k) {
                    st.mu[6 * jp + k] += st.mu[6 * ji + k];
                    st.Gam[6 * jp + k] += st.Gam[6 * ji + k];
                }
            }
        // Residuals R_i^α, α = 0..s.
        double worst_r = -1;
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            const double u = d.actuation[l.dof];
            for (int a = 0; a <= s; ++a) {
                double R = 0;
                for (int j = 0; j < nn; ++j) {
                    const std::size_t ji = static_cast<std::size_t>(j) * n + i;
                    R += L.w[j] * L.B[j][a] * dot6(&st.Sb[6 * ji], &st.mu[6 * ji]);
                }
                const std::size_t ai = static_cast<std::size_t>(a) * n + i;
                const double Q = u - l.stiffness * (st.ctrl[ai] - l.rest) - l.damping * st.qdn[ai];
                R += L.w[a] * h * (dot6(&st.Sd[6 * ai], &st.mu[6 * ai]) + Q) + dot6(&st.Sb[6 * ai], &st.Gam[6 * ai]);
                if (a == s) {
                    st.pn[i] = R;
                    continue;
                }
                if (a == 0) R += st.p[i];
                st.r[static_cast<std::size_t>(i) * s + a] = R;
                if (!std::isfinite(R)) {
                    *worst = m.nbodies() + l.joint;
                    return NAN;
                }
                if (std::fabs(R) > worst_r) worst_r = std::fabs(R), *worst = m.nbodies() + l.joint;
            }
        }
        return worst_r;
    }

    // The Model's forces and the inputs' body forces and torques at node j (as body_wrenches()
    // defines them), onto the links' impulses E (world wrench about the origin, times w_j h) and
    // their ξ-derivative blocks. A force f at the world point y = x_b + R c with the torque τ
    // gives [y × f + τ; f]; moved by ξ = [ω; v] it changes by
    //   [[f]×[y]× − [y]×[f]×·(f turns with the body) − [τ]×·(τ turns with the body), −[f]×;
    //    −[f]×·(f turns with the body), 0] ξ.
    static void add_force(State& st, std::size_t ji, double wdt, const Vec3& f, const Vec3& y, bool f_turns,
                          const Vec3& tau, bool tau_turns) {
        double* E = &st.E[6 * ji];
        const Vec3 n0 = cross(y, f) + tau;
        E[0] += wdt * n0.x, E[1] += wdt * n0.y, E[2] += wdt * n0.z;
        E[3] += wdt * f.x, E[4] += wdt * f.y, E[5] += wdt * f.z;
        const Mat3 F = skew(f), Y = skew(y);
        Mat3 A = F * Y;
        if (f_turns) A = A - Y * F;
        if (tau_turns) A = A - skew(tau);
        for (int a = 0; a < 3; ++a)
            for (int c = 0; c < 3; ++c) {
                st.KA[9 * ji + 3 * a + c] += A(a, c);
                if (f_turns) st.KB[9 * ji + 3 * a + c] -= F(a, c);
            }
        st.Fs[3 * ji] += f.x, st.Fs[3 * ji + 1] += f.y, st.Fs[3 * ji + 2] += f.z;
    }
    static void add_body_forcing(const Model& m, const Data& d, State& st, int j, double wdt) {
        const TreeView& t = st.tree;
        const int n = st.n;
        tree_body_poses(t, &st.g[static_cast<std::size_t>(j) * n], nullptr, st.bp.data());
        auto at = [&](int b) { return static_cast<std::size_t>(j) * n + t.body_link[b]; };
        for (int b = 0; b < m.nbodies(); ++b) {  // inputs: world force at the CoM, world torque
            const Vec3& f = d.applied_force[b];
            const Vec3& tq = d.applied_torque[b];
            if (t.body_link[b] < 0 || (f.x == 0 && f.y == 0 && f.z == 0 && tq.x == 0 && tq.y == 0 && tq.z == 0)) continue;
            add_force(st, at(b), wdt, f, st.bp[b].x, false, tq, false);
        }
        for (const ForceInfo& fi : m.forces) {
            if (t.body_link[fi.body] < 0) continue;
            const Mat3 R = rotation(st.bp[fi.body].q);
            const Vec3 f = fi.body_frame ? R * fi.force : fi.force;
            const Vec3 tq = fi.body_frame ? R * fi.torque : fi.torque;
            const Vec3 y = st.bp[fi.body].x + (fi.has_point ? R * fi.point : Vec3{});
            add_force(st, at(fi.body), wdt, f, y, fi.body_frame, tq, fi.body_frame);
        }
    }

    // ---- loop closures as holonomic constraints (§7) ------------------------------------------

    // A joint-Jacobian row [∂g/∂x (world) | ∂g/∂θ (body frame)] of a body at `pose` as a row
    // against the world twist [ω; v] of its link: δx = v + ω × x, δθ = Rᵀ ω, so
    // G = [x × Jx + R Jθ; Jx]. The same map takes a body wrench [f; τ_body] to the world wrench.
    static void world_row(const Pose& pose, const double* J, double* G) {
        const Vec3 Jx{J[0], J[1], J[2]}, Jt{J[3], J[4], J[5]};
        set6(G, cross(pose.x, Jx) + rotate(pose.q, Jt), Jx);
    }
    static Pose body_pose_at(const TreeView& t, const Frame* g, int b) {
        const int L = t.body_link[b];
        const Frame f = L >= 0 ? g[L] * t.body_offset[b] : t.body_offset[b];
        return {f.p, quat_from_matrix(f.R)};
    }
    // At node j: the loop rows h and their Jacobians; the multipliers' impulses A(q^{k,j})ᵀ λ^{k,j}
    // (j < s) and the loop joints' actuation (w_j h C(q)ᵀ u) onto the links' impulses E.
    static void add_loops(const Model& m, const Data& d, State& st, int j, double wdt) {
        const TreeView& t = st.tree;
        const int n = st.n, s = st.lob.s, M = st.mrows;
        const Frame* gj = &st.g[static_cast<std::size_t>(j) * n];
        double gv[6], Ja[36], Jb[36], W[6];
        auto add = [&](int link, const double* w, double f) {
            if (link < 0) return;
            double* E = &st.E[6 * (static_cast<std::size_t>(j) * n + link)];
            for (int k = 0; k < 6; ++k) E[k] += f * w[k];
        };
        for (const State::Loop& c : st.loops) {
            const JointInfo& ji = m.joints[c.joint];
            const Pose pa = c.a >= 0 ? body_pose_at(t, gj, c.a) : Pose{};
            const Pose pb = body_pose_at(t, gj, c.b);
            ji.impl->constraint(pa, pb, gv, c.a >= 0 ? Ja : nullptr, Jb);
            for (int r = 0; r < c.rows; ++r) {
                const std::size_t jr = static_cast<std::size_t>(j) * M + c.row0 + r;
                st.hv[jr] = gv[r];
                double* ga = &st.Ga[6 * jr];
                if (c.a >= 0) world_row(pa, Ja + 6 * r, ga);
                else std::fill(ga, ga + 6, 0.0);
                world_row(pb, Jb + 6 * r, &st.Gb[6 * jr]);
                if (j < s) {
                    const double l = st.lam[static_cast<std::size_t>(j) * M + c.row0 + r];
                    add(c.la, ga, l);
                    add(c.lb, &st.Gb[6 * jr], l);
                }
            }
            bool driven = false;
            for (int k = 0; k < ji.dofs; ++k) driven = driven || d.actuation[ji.dof_offset + k] != 0;
            if (!driven) continue;
            ji.impl->coordinate_jacobian(pa, pb, c.a >= 0 ? Ja : nullptr, Jb);
            for (int k = 0; k < ji.dofs; ++k) {
                const double u = d.actuation[ji.dof_offset + k];
                if (c.a >= 0) {
                    world_row(pa, Ja + 6 * k, W);
                    add(c.la, W, wdt * u);
                }
                world_row(pb, Jb + 6 * k, W);
                add(c.lb, W, wdt * u);
            }
        }
    }
    // Row `row` of A(q^{k,node}) (against the joint coordinates), times f, added to slot `slot` of
    // the link-major vector x (`stride` per link); or, with `dot`, its product with that slot of x.
    static double loop_row(const State& st, int node, int row, double f, double* x, int stride, int slot, bool dot) {
        const int n = st.n, M = st.mrows;
        int li = 0;
        while (row >= st.loops[li].row0 + st.loops[li].rows) ++li;
        const State::Loop& c = st.loops[li];
        const std::size_t jr = static_cast<std::size_t>(node) * M + row;
        double acc = 0;
        for (int side = 0; side < 2; ++side) {
            const double* G = side == 0 ? &st.Ga[6 * jr] : &st.Gb[6 * jr];
            for (int i = side == 0 ? c.la : c.lb; i >= 0; i = st.tree.links[i].parent) {
                const double a = dot6(G, &st.Sb[6 * (static_cast<std::size_t>(node) * n + i)]);
                if (dot) acc += a * x[static_cast<std::size_t>(i) * stride + slot];
                else x[static_cast<std::size_t>(i) * stride + slot] += f * a;
            }
        }
        return acc;
    }
    // The constrained Newton direction (§7) from the factor of J and −r in st.r: δq into st.dx,
    // the multipliers updated. For s ≥ 2 the factor leaves out the constraints' curvature (the
    // change of A(q^{k,α})ᵀ λ with q^{k,α}, α ≥ 1): Newton then contracts linearly, by a factor of
    // about |λ| h² / inertia per iteration.
    static void constrained_direction(State& st) {
        const int n = st.n, s = st.lob.s, M = st.mrows, K = s * M;
        const std::size_t sn = static_cast<std::size_t>(s) * n;
        solve(st, st.r.data(), st.dqr.data());
        for (int a = 0; a < s; ++a)
            for (int row = 0; row < M; ++row) {
                std::fill(st.lrhs.begin(), st.lrhs.end(), 0.0);
                loop_row(st, a, row, 1.0, st.lrhs.data(), s, a, false);
                solve(st, st.lrhs.data(), &st.Zc[static_cast<std::size_t>(a * M + row) * sn]);
            }
        for (int b = 1; b <= s; ++b)
            for (int row = 0; row < M; ++row) {
                const int R = (b - 1) * M + row;
                st.lrhs2[R] = st.hv[static_cast<std::size_t>(b) * M + row] + loop_row(st, b, row, 0, st.dqr.data(), s, b - 1, true);
                for (int col = 0; col < K; ++col)
                    st.Sm[static_cast<std::size_t>(R) * K + col] =
                        loop_row(st, b, row, 0, &st.Zc[static_cast<std::size_t>(col) * sn], s, b - 1, true);
            }
        solve_pivoted(st.Sm.data(), K, st.lrhs2.data(), st.dlam.data(), st.rperm.data(), st.cperm.data(), st.ywork.data());
        for (std::size_t k = 0; k < sn; ++k) {
            double v = st.dqr[k];
            for (int col = 0; col < K; ++col) v -= st.Zc[static_cast<std::size_t>(col) * sn + k] * st.dlam[col];
            st.dx[k] = v;
        }
        for (int k = 0; k < K; ++k) st.lam[k] += st.dlam[k];
    }

    // ---- the exact Newton direction (§5) ----------------------------------------------------

    // X layout (d = 12 s + 6): ξ^j for the active nodes j = 1..s at 6(j−1), then ζ^j for every
    // node j = 0..s at 6 s + 6 j.
    static int xi_off(int j) { return 6 * (j - 1); }
    static int zeta_off(int s, int j) { return 6 * s + 6 * j; }

    // Factor the Newton matrix at the last evaluate(); false if a joint block D_i is singular.
    static bool factor(State& st, double h) {
        const TreeView& t = st.tree;
        const Lobatto& L = st.lob;
        const int n = st.n, s = L.s, nn = st.nn, d = st.d;
        const std::size_t dd = static_cast<std::size_t>(d) * d, ds = static_cast<std::size_t>(d) * s;
        // Y_i of every link into Y^A (§5.2), children are added as they are condensed.
        for (int i = 0; i < n; ++i) {
            double* Y = &st.YA[dd * i];
            std::fill(Y, Y + dd, 0.0);
            for (int j = 0; j < nn; ++j) {
                const std::size_t ji = static_cast<std::size_t>(j) * n + i;
                const double wdt = L.w[j] * h;
                const int z = zeta_off(s, j);
                const double* Mb = &st.Mb[36 * ji];
                for (int a = 0; a < 6; ++a)
                    for (int b = 0; b < 6; ++b) Y[(z + a) * d + z + b] = wdt * Mb[6 * a + b];
                if (j == 0) continue;
                const int x = xi_off(j);
                const double* KA = &st.KA[9 * ji];
                const double* KB = &st.KB[9 * ji];
                const Mat3 Fx = skew(Vec3{st.Fs[3 * ji], st.Fs[3 * ji + 1], st.Fs[3 * ji + 2]});
                for (int a = 0; a < 3; ++a)
                    for (int b = 0; b < 3; ++b) {
                        Y[(x + a) * d + x + b] = wdt * KA[3 * a + b];
                        Y[(x + a) * d + x + b + 3] = -wdt * Fx(a, b);
                        Y[(x + a + 3) * d + x + b] = wdt * KB[3 * a + b];
                    }
                // −w h adD(h^j) in rows ζ^j, columns ξ^j.
                const double* hm = &st.hm[6 * ji];
                const Mat3 Tx = skew(top(hm)), Hx = skew(bot(hm));
                for (int a = 0; a < 3; ++a)
                    for (int b = 0; b < 3; ++b) {
                        Y[(z + a) * d + x + b] = -wdt * Tx(a, b);
                        Y[(z + a) * d + x + b + 3] = -wdt * Hx(a, b);
                        Y[(z + a + 3) * d + x + b] = -wdt * Hx(a, b);
                    }
            }
        }
        for (int i = n - 1; i >= 0; --i) {
            const TreeLink& l = t.links[i];
            double* U = &st.U[ds * i];
            double* V = &st.V[ds * i];
            double* G = &st.G[ds * i];
            double* W = &st.W[ds * i];
            double* K = &st.K[ds * i];
            double* Dm = &st.Dlu[static_cast<std::size_t>(s) * s * i];
            const double* Y = &st.YA[dd * i];
            std::fill(U, U + ds, 0.0);
            std::fill(V, V + ds, 0.0);
            std::fill(G, G + ds, 0.0);
            // Generators (§5.1): column α of the all-node generator, for U (α = 1..s) and V (α = 0..s−1).
            for (int a = 0; a <= s; ++a) {
                double* cu = a >= 1 ? U + static_cast<std::size_t>(d) * (a - 1) : nullptr;
                double* cv = a < s ? V + static_cast<std::size_t>(d) * a : nullptr;
                for (int j = 0; j < nn; ++j) {
                    const std::size_t ji = static_cast<std::size_t>(j) * n + i;
                    const double* S = &st.Sb[6 * ji];
                    const double* Sd = &st.Sd[6 * ji];
                    const double bj = L.B[j][a] / h;
                    const int z = zeta_off(s, j);
                    for (int k = 0; k < 6; ++k) {
                        const double zv = bj * S[k] + (j == a ? Sd[k] : 0.0);
                        if (cu) cu[z + k] = zv;
                        if (cv) cv[z + k] = zv;
                    }
                    if (j >= 1 && j == a)
                        for (int k = 0; k < 6; ++k) {
                            if (cu) cu[xi_off(j) + k] = S[k];
                            if (cv) cv[xi_off(j) + k] = S[k];
                        }
                }
            }
            // G_i (§5.2), columns α = 0..s−1.
            for (int a = 0; a < s; ++a) {
                double* cg = G + static_cast<std::size_t>(d) * a;
                for (int j = 0; j < nn; ++j) {
                    const std::size_t ji = static_cast<std::size_t>(j) * n + i;
                    const double* S = &st.Sb[6 * ji];
                    const double* Sd = &st.Sd[6 * ji];
                    const double* mu = &st.mu[6 * ji];
                    const double* Gm = &st.Gam[6 * ji];
                    const double wj = L.w[j], wdt = wj * h;
                    double t1[6], t2[6];
                    if (j >= 1) {
                        adD_apply(mu, S, t1);
                        for (int k = 0; k < 6; ++k) cg[xi_off(j) + k] = -wj * L.B[j][a] * t1[k];
                        if (j == a) {
                            adD_apply(Gm, S, t2);
                            for (int k = 0; k < 6; ++k) cg[xi_off(j) + k] -= t2[k];
                            adD_apply(mu, Sd, t2);
                            for (int k = 0; k < 6; ++k) cg[xi_off(j) + k] -= wdt * t2[k];
                        }
                    }
                    if (j == a) {
                        adD_apply(mu, S, t1);
                        for (int k = 0; k < 6; ++k) cg[zeta_off(s, j) + k] = -wdt * t1[k];
                    }
                }
            }
            // P = Vᵀ Y^A + Gᵀ into K (row-major s × d), W = Y^A U, D = P U + L.
            for (int a = 0; a < s; ++a) {
                const double* cv = V + static_cast<std::size_t>(d) * a;
                double* Pa = K + static_cast<std::size_t>(d) * a;
                for (int c = 0; c < d; ++c) Pa[c] = G[static_cast<std::size_t>(d) * a + c];
                for (int rr = 0; rr < d; ++rr) {
                    const double vr = cv[rr];
                    if (vr == 0) continue;
                    const double* Yr = Y + static_cast<std::size_t>(d) * rr;
                    for (int c = 0; c < d; ++c) Pa[c] += vr * Yr[c];
                }
            }
            std::fill(W, W + ds, 0.0);
            for (int rr = 0; rr < d; ++rr) {
                const double* Yr = Y + static_cast<std::size_t>(d) * rr;
                for (int b = 0; b < s; ++b) {
                    const double* cu = U + static_cast<std::size_t>(d) * b;
                    double acc = 0;
                    for (int c = 0; c < d; ++c) acc += Yr[c] * cu[c];
                    W[static_cast<std::size_t>(d) * b + rr] = acc;
                }
            }
            for (int a = 0; a < s; ++a)
                for (int b = 0; b < s; ++b) {
                    const double* Pa = K + static_cast<std::size_t>(d) * a;
                    const double* cu = U + static_cast<std::size_t>(d) * b;
                    double acc = 0;
                    for (int c = 0; c < d; ++c) acc += Pa[c] * cu[c];
                    // Joint forces: L[α][β] = w_α h (−k δ_αβ − c B[α][β] / h), β = b + 1.
                    acc += L.w[a] * h * (-(a == b + 1 ? l.stiffness : 0.0) - l.damping * L.B[a][b + 1] / h);
                    Dm[a * s + b] = acc;
                }
            if (!lu_factor(Dm, &st.piv[static_cast<std::size_t>(s) * i], s)) return false;
            // K = D⁻¹ P, column by column.
            for (int c = 0; c < d; ++c) {
                double col[kMaxPoints];
                for (int a = 0; a < s; ++a) col[a] = K[static_cast<std::size_t>(d) * a + c];
                lu_solve(Dm, &st.piv[static_cast<std::size_t>(s) * i], s, col);
                for (int a = 0; a < s; ++a) K[static_cast<std::size_t>(d) * a + c] = col[a];
            }
            // Ŷ_i = Y^A − W K, handed to the parent.
            if (l.parent < 0) continue;
            double* Yp = &st.YA[dd * l.parent];
            for (int rr = 0; rr < d; ++rr) {
                double* Ypr = Yp + static_cast<std::size_t>(d) * rr;
                const double* Yr = Y + static_cast<std::size_t>(d) * rr;
                for (int c = 0; c < d; ++c) Ypr[c] += Yr[c];
                for (int b = 0; b < s; ++b) {
                    const double wv = W[static_cast<std::size_t>(d) * b + rr];
                    if (wv == 0) continue;
                    const double* Kb = K + static_cast<std::size_t>(d) * b;
                    for (int c = 0; c < d; ++c) Ypr[c] -= wv * Kb[c];
                }
            }
        }
        return true;
    }

    // x = J⁻¹ b (b, x: s per link, link-major) with the factor above.
    static void solve(State& st, const double* b, double* x) {
        const TreeView& t = st.tree;
        const int n = st.n, s = st.lob.s, d = st.d;
        const std::size_t ds = static_cast<std::size_t>(d) * s;
        std::fill(st.chat.begin(), st.chat.end(), 0.0);
        for (int i = n - 1; i >= 0; --i) {
            const double* V = &st.V[ds * i];
            const double* W = &st.W[ds * i];
            double* c = &st.chat[static_cast<std::size_t>(d) * i];
            double* u = &st.uu[static_cast<std::size_t>(s) * i];
            for (int a = 0; a < s; ++a) {
                double acc = b[static_cast<std::size_t>(i) * s + a];
                const double* cv = V + static_cast<std::size_t>(d) * a;
                for (int k = 0; k < d; ++k) acc -= cv[k] * c[k];
                u[a] = acc;
            }
            lu_solve(&st.Dlu[static_cast<std::size_t>(s) * s * i], &st.piv[static_cast<std::size_t>(s) * i], s, u);
            for (int a = 0; a < s; ++a) {
                const double* cw = W + static_cast<std::size_t>(d) * a;
                for (int k = 0; k < d; ++k) c[k] += cw[k] * u[a];
            }
            const int par = t.links[i].parent;
            if (par >= 0) {
                double* cp = &st.chat[static_cast<std::size_t>(d) * par];
                for (int k = 0; k < d; ++k) cp[k] += c[k];
            }
        }
        for (int i = 0; i < n; ++i) {
            const int par = t.links[i].parent;
            const double* Xp = par >= 0 ? &st.X[static_cast<std::size_t>(d) * par] : nullptr;
            const double* K = &st.K[ds * i];
            const double* U = &st.U[ds * i];
            double* Xi = &st.X[static_cast<std::size_t>(d) * i];
            double* xi = x + static_cast<std::size_t>(i) * s;
            for (int a = 0; a < s; ++a) {
                double acc = st.uu[static_cast<std::size_t>(s) * i + a];
                if (Xp) {
                    const double* Ka = K + static_cast<std::size_t>(d) * a;
                    for (int k = 0; k < d; ++k) acc -= Ka[k] * Xp[k];
                }
                xi[a] = acc;
            }
            for (int k = 0; k < d; ++k) {
                double acc = Xp ? Xp[k] : 0.0;
                for (int a = 0; a < s; ++a) acc += U[static_cast<std::size_t>(d) * a + k] * xi[a];
                Xi[k] = acc;
            }
        }
    }

    // ---- one step of length h (§6) ---------------------------------------------------------

    // First guess of q^{k,1..s}: the last interval's polynomial extrapolated, or q + c_α h q̇.
    static void guess(State& st, double h) {
        const Lobatto& L = st.lob;
        const int n = st.n, s = L.s;
        std::copy(st.q.begin(), st.q.end(), st.ctrl.begin());
        if (st.have_prev) {
            const double rho = h / st.prev_h;
            for (int a = 1; a <= s; ++a)
                for (int b = 0; b <= s; ++b) st.ext[a][b] = L.basis(b, 1 + rho * L.c[a]);
            for (int a = 1; a <= s; ++a)
                for (int i = 0; i < n; ++i) {
                    double v = 0;
                    for (int b = 0; b <= s; ++b) v += st.ext[a][b] * st.prev_ctrl[static_cast<std::size_t>(b) * n + i];
                    st.ctrl[static_cast<std::size_t>(a) * n + i] = v;
                }
            return;
        }
        for (int a = 1; a <= s; ++a)
            for (int i = 0; i < n; ++i) st.ctrl[static_cast<std::size_t>(a) * n + i] = st.q[i] + L.c[a] * h * st.qd0[i];
    }

    Attempt substep(const Model& m, const Data& d, State& st, double h) const {
        const int n = st.n, s = st.lob.s;
        guess(st, h);
        Attempt out;
        double prev_step = INFINITY;
        for (int it = 0;; ++it) {
            const double rn = evaluate(m, d, st, h, &out.worst_node);
            out.residual = rn;
            if (!std::isfinite(rn)) {
                out.status = StepStatus::non_finite;
                return out;
            }
            double far = 0;
            for (int a = 1; a <= s; ++a)
                for (int i = 0; i < n; ++i)
                    far = std::max(far, std::fabs(st.ctrl[static_cast<std::size_t>(a) * n + i] - st.q[i]));
            if (it == m.options.max_iterations || far > 3) {
                out.status = far > 3 ? StepStatus::diverged : StepStatus::not_converged;
                return out;
            }
            if (!factor(st, h)) {
                out.status = StepStatus::singular;
                return out;
            }
            for (std::size_t k = 0; k < st.r.size(); ++k) st.r[k] = -st.r[k];
            if (st.loops.empty()) solve(st, st.r.data(), st.dx.data());
            else constrained_direction(st);
            double step = 0;
            for (int i = 0; i < n; ++i)
                for (int a = 1; a <= s; ++a) {
                    const double v = st.dx[static_cast<std::size_t>(i) * s + a - 1];
                    st.ctrl[static_cast<std::size_t>(a) * n + i] += v;
                    step = std::max(step, std::fabs(v));
                }
            out.iterations = it + 1;
            // Round-off floor: on long chains the corrections stop contracting a little above
            // step_tolerance (N = 512: ~1.5e-12). A correction that no longer halves and is
            // within 1000× the tolerance is accepted and reported (StepReport::at_floor).
            const bool floor = it > 0 && step <= 1e3 * st.opt.step_tolerance && step > 0.5 * prev_step;
            prev_step = step;
            if (!(step <= st.opt.step_tolerance) && !floor) continue;
            out.at_floor = !(step <= st.opt.step_tolerance);
            // Converged: p^{k+1} (and the residual) at the final control points.
            out.residual = evaluate(m, d, st, h, &out.worst_node);
            if (!std::isfinite(out.residual)) {
                out.status = StepStatus::non_finite;
                return out;
            }
            break;
        }
        out.worst_node = -1;
        std::copy(st.ctrl.begin() + static_cast<std::ptrdiff_t>(s) * n, st.ctrl.begin() + static_cast<std::ptrdiff_t>(s + 1) * n,
                  st.q.begin());
        std::copy(st.pn.begin(), st.pn.end(), st.p.begin());
        std::copy(st.ctrl.begin(), st.ctrl.end(), st.prev_ctrl.begin());
        st.prev_h = h;
        st.have_prev = true;
        return out;
    }

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

    // Poses, world screws, velocities, Ṡ̄, inertias, momenta and subtree momenta at (q, q̇).
    static void kinematics(const TreeView& t, const double* q, const double* qd, State::Kinematics& k) {
        const int n = t.size();
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            const Frame Ti = link_transform(l, q[i]);
            k.g[i] = l.parent >= 0 ? k.g[l.parent] * Ti : Ti;
            double* S = &k.S[6 * i];
            double* v = &k.v[6 * i];
            ad_apply(k.g[i], l.S, S);
            for (int c = 0; c < 6; ++c) v[c] = (l.parent >= 0 ? k.v[6 * l.parent + c] : 0.0) + S[c] * qd[i];
            ad_twist(v, S, &k.Sd[6 * i]);
            double* Mb = &k.Mb[36 * i];
            world_inertia(l, k.g[i], Mb);
            for (int a = 0; a < 6; ++a) k.h[6 * i + a] = dot6(&Mb[6 * a], v);
        }
        std::copy(k.h.begin(), k.h.end(), k.mu.begin());
        for (int i = n - 1; i >= 0; --i)
            if (t.links[i].parent >= 0)
                for (int c = 0; c < 6; ++c) k.mu[6 * t.links[i].parent + c] += k.mu[6 * i + c];
    }
    // δp = ∂(S̄ᵀ μ̄)/∂q δq + M δq̇ at the kinematics k (either tangent may be null).
    static void momentum_tangent(const TreeView& t, State::Kinematics& k, const double* dq, const double* dqd, double* dp) {
        const int n = t.size();
        for (int i = 0; i < n; ++i) {
            const int par = t.links[i].parent;
            const double a = dq ? dq[i] : 0.0, b = dqd ? dqd[i] : 0.0;
            const double* S = &k.S[6 * i];
            const double* Sd = &k.Sd[6 * i];
            double* xi = &k.xi[6 * i];
            double* ze = &k.ze[6 * i];
            for (int c = 0; c < 6; ++c) {
                xi[c] = (par >= 0 ? k.xi[6 * par + c] : 0.0) + S[c] * a;
                ze[c] = (par >= 0 ? k.ze[6 * par + c] : 0.0) + S[c] * b + Sd[c] * a;
            }
            // δh = −adD(h) ξ + M̄ ζ
            double t1[6];
            adD_apply(&k.h[6 * i], xi, t1);
            const double* Mb = &k.Mb[36 * i];
            for (int c = 0; c < 6; ++c) k.dmu[6 * i + c] = dot6(&Mb[6 * c], ze) - t1[c];
        }
        for (int i = n - 1; i >= 0; --i) {
            const int par = t.links[i].parent;
            double t1[6];
            ad_twist(&k.xi[6 * i], &k.S[6 * i], t1);  // δS̄ = ad(ξ) S̄
            dp[i] = dot6(&k.S[6 * i], &k.dmu[6 * i]) + dot6(t1, &k.mu[6 * i]);
            if (par >= 0)
                for (int c = 0; c < 6; ++c) k.dmu[6 * par + c] += k.dmu[6 * i + c];
        }
    }

    // δR^{0..s} (st.ldR, node-major α·n + i) for the control-point tangent st.ldq (node-major),
    // at the last evaluate().
    static void residual_tangent(State& st, double h) {
        const TreeView& t = st.tree;
        const Lobatto& L = st.lob;
        const int n = st.n, s = L.s, nn = st.nn;
        for (int j = 0; j < nn; ++j)
            for (int i = 0; i < n; ++i) {
                double v = 0;
                for (int a = 0; a < nn; ++a) v += L.B[j][a] * st.ldq[static_cast<std::size_t>(a) * n + i];
                st.ldqd[static_cast<std::size_t>(j) * n + i] = v / h;
            }
        for (int j = 0; j < nn; ++j) {
            const double wdt = L.w[j] * h;
            for (int i = 0; i < n; ++i) {
                const int par = t.links[i].parent;
                const std::size_t ji = static_cast<std::size_t>(j) * n + i;
                const double* S = &st.Sb[6 * ji];
                const double* Sd = &st.Sd[6 * ji];
                double* X = &st.LX[12 * ji];
                const double* Xp = par >= 0 ? &st.LX[12 * (static_cast<std::size_t>(j) * n + par)] : nullptr;
                const double a = st.ldq[ji], b = st.ldqd[ji];
                for (int c = 0; c < 6; ++c) {
                    X[c] = (Xp ? Xp[c] : 0.0) + S[c] * a;
                    X[6 + c] = (Xp ? Xp[6 + c] : 0.0) + S[c] * b + Sd[c] * a;
                }
                // Φ: the ξ-dual wh (KA ω − [F]× v; KB ω) and the ζ-dual wh (−adD(h) ξ + M̄ ζ).
                double* P = &st.LPhi[12 * ji];
                const double* KA = &st.KA[9 * ji];
                const double* KB = &st.KB[9 * ji];
                const Vec3 w = top(X), v = bot(X);
                const Vec3 F{st.Fs[3 * ji], st.Fs[3 * ji + 1], st.Fs[3 * ji + 2]};
                const Vec3 tq = Vec3{KA[0] * w.x + KA[1] * w.y + KA[2] * w.z, KA[3] * w.x + KA[4] * w.y + KA[5] * w.z,
                                     KA[6] * w.x + KA[7] * w.y + KA[8] * w.z} -
                                cross(F, v);
                const Vec3 fo{KB[0] * w.x + KB[1] * w.y + KB[2] * w.z, KB[3] * w.x + KB[4] * w.y + KB[5] * w.z,
                              KB[6] * w.x + KB[7] * w.y + KB[8] * w.z};
                set6(P, wdt * tq, wdt * fo);
                double t1[6];
                adD_apply(&st.hm[6 * ji], X, t1);
                const double* Mb = &st.Mb[36 * ji];
                for (int c = 0; c < 6; ++c) P[6 + c] = wdt * (dot6(&Mb[6 * c], X + 6) - t1[c]);
            }
        }
        for (int j = 0; j < nn; ++j)
            for (int i = n - 1; i >= 0; --i) {
                const int par = t.links[i].parent;
                if (par < 0) continue;
                const double* P = &st.LPhi[12 * (static_cast<std::size_t>(j) * n + i)];
                double* Pp = &st.LPhi[12 * (static_cast<std::size_t>(j) * n + par)];
                for (int c = 0; c < 12; ++c) Pp[c] += P[c];
            }
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            for (int a = 0; a <= s; ++a) {
                double R = 0;
                for (int j = 0; j < nn; ++j) {
                    const std::size_t ji = static_cast<std::size_t>(j) * n + i;
                    const double* S = &st.Sb[6 * ji];
                    const double* P = &st.LPhi[12 * ji];
                    const double* X = &st.LX[12 * ji];
                    const double bj = L.B[j][a], wj = L.w[j], wdt = wj * h;
                    double aS[6];
                    adD_apply(&st.mu[6 * ji], S, aS);
                    R += (bj / h) * dot6(S, P + 6) - wj * bj * dot6(aS, X);
                    if (j != a) continue;
                    const double* Sd = &st.Sd[6 * ji];
                    double aG[6], aSd[6];
                    adD_apply(&st.Gam[6 * ji], S, aG);
                    adD_apply(&st.mu[6 * ji], Sd, aSd);
                    R += dot6(S, P) + dot6(Sd, P + 6) - dot6(aG, X) - wdt * dot6(aSd, X) - wdt * dot6(aS, X + 6);
                }
                const std::size_t ai = static_cast<std::size_t>(a) * n + i;
                R += L.w[a] * h * (-l.stiffness * st.ldq[ai] - l.damping * st.ldqd[ai]);
                st.ldR[ai] = R;
            }
        }
    }

    StepStatus linearize(const Model& m, Data& d, Linearization& out) const override {
        State& st = static_cast<State&>(*d.integrator_state);
        if (!st.loops.empty())
            throw UsageError("linearize: vi-galerkin linearises the steps of trees; joint '" +
                             m.joints[st.loops[0].joint].name + "' closes a kinematic loop (not yet supported)");
        const TreeView& t = st.tree;
        const Lobatto& L = st.lob;
        const int n = st.n, s = L.s;
        const double h = m.options.dt;
        const std::size_t N = static_cast<std::size_t>(n), N2 = 2 * N;
        // The step's state, restored at the end.
        const bool started = st.started, have_prev = st.have_prev;
        const double prev_h = st.prev_h;
        std::copy(st.q.begin(), st.q.end(), st.bk_q.begin());
        std::copy(st.p.begin(), st.p.end(), st.bk_p.begin());
        std::copy(st.qd0.begin(), st.qd0.end(), st.bk_qd0.begin());
        std::copy(st.prev_ctrl.begin(), st.prev_ctrl.end(), st.bk_prev.begin());
        auto restore = [&] {
            st.started = started, st.have_prev = have_prev, st.prev_h = prev_h;
            std::copy(st.bk_q.begin(), st.bk_q.end(), st.q.begin());
            std::copy(st.bk_p.begin(), st.bk_p.end(), st.p.begin());
            std::copy(st.bk_qd0.begin(), st.bk_qd0.end(), st.qd0.begin());
            std::copy(st.bk_prev.begin(), st.bk_prev.end(), st.prev_ctrl.begin());
        };
        if (!st.started || d.changed_since_commit()) start(m, d, st);
        // The start: x = (q, M⁻¹ p).
        auto velocities = [&](State::Kinematics& k) {  // q̇ = M(q)⁻¹ p at st.q, st.p into st.qdot
            for (int i = 0; i < n; ++i) st.T[i] = link_transform(t.links[i], st.q[i]);
            tree_abi_setup(t, st.T.data(), nullptr, st.abi);
            tree_abi_solve(t, st.T.data(), st.abi, st.p.data(), st.qdot.data());
            kinematics(t, st.q.data(), st.qdot.data(), k);
        };
        auto put_state = [&](double* x) {
            for (int i = 0; i < n; ++i) {
                const int dof = t.links[i].dof;
                x[dof] = st.q[i] + offset(m, t.links[i]);
                x[N + dof] = st.qdot[i];
            }
        };
        velocities(st.kin0);
        put_state(out.x.data());
        const Attempt sol = substep(m, d, st, h);
        if (sol.status != StepStatus::ok) {
            restore();
            return sol.status;
        }
        if (!factor(st, h)) {  // J at the solution (substep's last evaluate() is there)
            restore();
            return StepStatus::singular;
        }
        velocities(st.kin1);  // st.T and st.abi now at q^{k+1}
        put_state(out.x_next.data());
        for (int c = 0; c < 3 * n; ++c) {
            const int kind = c / n, j = c % n;  // 0: q_j, 1: q̇_j, 2: u_j (link j)
            std::fill(st.ldq.begin(), st.ldq.end(), 0.0);
            std::fill(st.lrhs.begin(), st.lrhs.end(), 0.0);
            if (kind == 0) {
                st.ldq[j] = 1;
                residual_tangent(st, h);
                for (int i = 0; i < n; ++i)
                    for (int a = 0; a < s; ++a) st.lrhs[i * s + a] = st.ldR[static_cast<std::size_t>(a) * n + i];
                std::fill(st.ldp1.begin(), st.ldp1.end(), 0.0);
                st.ldp1[j] = 1;
                momentum_tangent(t, st.kin0, st.ldp1.data(), nullptr, st.ldp.data());
            } else if (kind == 1) {
                std::fill(st.ldp1.begin(), st.ldp1.end(), 0.0);
                st.ldp1[j] = 1;
                momentum_tangent(t, st.kin0, nullptr, st.ldp1.data(), st.ldp.data());
            } else {
                std::fill(st.ldp.begin(), st.ldp.end(), 0.0);
                for (int a = 0; a < s; ++a) st.lrhs[j * s + a] = L.w[a] * h;
            }
            for (int i = 0; i < n; ++i) st.lrhs[i * s] += st.ldp[i];
            for (double& v : st.lrhs) v = -v;
            solve(st, st.lrhs.data(), st.lz.data());
            for (int a = 1; a <= s; ++a)
                for (int i = 0; i < n; ++i) st.ldq[static_cast<std::size_t>(a) * n + i] = st.lz[i * s + a - 1];
            residual_tangent(st, h);
            // δp^{k+1} (ldp) and δq^{k+1} (ldp1); δq̇ = M⁻¹ (δp − ∂p/∂q δq) into qdot's scratch lz.
            const double* dq1 = &st.ldq[static_cast<std::size_t>(s) * n];
            for (int i = 0; i < n; ++i) st.ldp[i] = st.ldR[static_cast<std::size_t>(s) * n + i];
            if (kind == 2) st.ldp[j] += L.w[s] * h;
            momentum_tangent(t, st.kin1, dq1, nullptr, st.ldp1.data());
            for (int i = 0; i < n; ++i) st.ldp1[i] = st.ldp[i] - st.ldp1[i];
            tree_abi_solve(t, st.T.data(), st.abi, st.ldp1.data(), st.lz.data());
            const int col = t.links[j].dof;
            double* M = kind == 2 ? out.B.data() : out.A.data();
            const std::size_t ncol = kind == 2 ? N : N2, cc = static_cast<std::size_t>(kind == 1 ? N + col : col);
            for (int i = 0; i < n; ++i) {
                const std::size_t row = static_cast<std::size_t>(t.links[i].dof);
                M[row * ncol + cc] = dq1[i];
                M[(N + row) * ncol + cc] = st.lz[i];
            }
        }
        restore();
        return StepStatus::ok;
    }

    // ---- write-back (§2.2): poses at q^{k+1}, continuous velocities q̇ = M⁻¹ p ------------

    // With loops, the rates the constraints allow (§9.1): q̇ = M⁻¹ (p − Aᵀ ν) with
    // A M⁻¹ Aᵀ ν = A M⁻¹ p, A at q^{k+1} (the last node of the last evaluate()); st.qdot holds
    // M⁻¹ p and the articulated-body factor is at q^{k+1}.
    static void project_rates(State& st) {
        const TreeView& t = st.tree;
        const int n = st.n, s = st.lob.s, M = st.mrows;
        const std::size_t N = static_cast<std::size_t>(n);
        for (int row = 0; row < M; ++row) {
            double* a = &st.aproj[row * N];
            std::fill(a, a + N, 0.0);
            loop_row(st, s, row, 1.0, a, 1, 0, false);
            tree_abi_solve(t, st.T.data(), st.abi, a, &st.wproj[row * N]);
        }
        for (int r = 0; r < M; ++r) {
            const double* a = &st.aproj[r * N];
            double acc = 0;
            for (int i = 0; i < n; ++i) acc += a[i] * st.qdot[i];
            st.lrhs2[r] = acc;
            for (int c = 0; c < M; ++c) {
                const double* w = &st.wproj[c * N];
                double v = 0;
                for (int i = 0; i < n; ++i) v += a[i] * w[i];
                st.Sm[static_cast<std::size_t>(r) * M + c] = v;
            }
        }
        solve_pivoted(st.Sm.data(), M, st.lrhs2.data(), st.dlam.data(), st.rperm.data(), st.cperm.data(), st.ywork.data());
        for (int c = 0; c < M; ++c)
            for (int i = 0; i < n; ++i) st.qdot[i] -= st.dlam[c] * st.wproj[c * N + i];
    }

    static void write_back(const Model& m, Data& d, State& st) {
        const TreeView& t = st.tree;
        const int n = st.n;
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            st.T[i] = link_transform(l, st.q[i]);
            st.g[i] = l.parent >= 0 ? st.g[l.parent] * st.T[i] : st.T[i];
        }
        tree_body_poses(t, st.g.data(), d.pose.data(), st.bp.data());
        tree_abi_setup(t, st.T.data(), nullptr, st.abi);
        tree_abi_solve(t, st.T.data(), st.abi, st.p.data(), st.qdot.data());
        if (!st.loops.empty()) project_rates(st);
        tree_link_twists(t, st.q.data(), st.qdot.data(), reinterpret_cast<double(*)[6]>(st.Vl.data()));
        for (int b = 0; b < m.nbodies(); ++b) {
            d.pose[b] = st.bp[b];
            const Twist tw = tree_body_twist(t, st.g.data(), reinterpret_cast<const double(*)[6]>(st.Vl.data()), b);
            d.twist[b] = tw;
            d.twist_guess[b] = tw;
        }
    }
};

}  // namespace

#ifndef NOETHER_GALERKIN_NO_ENTRY
NOETHER_PLUGIN(NOETHER_PLUGIN_INTEGRATOR, "vi-galerkin",
               "higher-order (2s) Galerkin variational integrator in joint coordinates, O(n) Newton (paper 002)", Galerkin)
#endif
