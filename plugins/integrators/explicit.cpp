// Explicit integrators on the index-1 formulation: three configured instances of one class,
// exported by this one library:
//   heun             explicit trapezoid, order 2, fixed step
//   rk4              classical Runge–Kutta, order 4, fixed step
//   dp45-projection  Dormand–Prince 5(4) with step-size control and,
//                    after every accepted step, projection onto the constraint manifolds
//                    (quaternion norm; positions by Newton; velocities) and optionally onto
//                    the energy invariant (paper 003, Tuomela, Arponen & Normi §4–5).
//                    The work of the applied forces in the invariant W_total is integrated with
//                    the Runge–Kutta stages (fifth order), not by the trapezoidal rule of the
//                    paper: on the driven planar quadrangle (tol 1e-8, 10 s) the trapezoidal
//                    work made the projected energy 28.5 J off the exact work, against 0.013 J
//                    for the unprojected solution.
//
// Accelerations and multipliers come from the linear system (paper 003 eq. 3.6)
//     [ M   −Gᵀ ] [ a ]   [ f − ω×Jω ]
//     [ G    0  ] [ λ ] = [    −γ     ],     γ = (dG/dt) ν,
// with M = diag(m I, J) per body, G the joint Jacobians (position, body-frame rotation), on the
// model's block graph and solved by the model's solver plugin (its Schur complement on the
// constraint rows is paper 003's Algorithm 5.1). γ is the derivative of G ν along the free
// motion x + t v, q ⊗ exp(t ω/2), by a Richardson-extrapolated central difference.
// heun and rk4 do no stabilisation: constraints drift, as the baselines they are meant to be.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "noether/data.hpp"
#include "noether/model.hpp"
#include "noether/sdk/dense.hpp"
#include "noether/sdk/dormand_prince.hpp"
#include "noether/sdk/integrator.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/solver.hpp"

namespace {

using namespace noether;

enum class Method { heun, rk4, dp45 };

constexpr int kPer = 13;  // per body: x (3), q (4), v (3), ω (3)

struct State final : IntegratorState {
    BlockMatrix A;
    std::unique_ptr<SolverWorkspace> ws;
    std::vector<double> rhs;
    std::vector<Pose> poses, moved;
    std::vector<Twist> twists;
    std::vector<Wrench> wrench;
    std::vector<double> Ja, Jb, g;
    std::vector<double> y0, y, ytmp, acc, k[7];
    // dp45
    double h_next = 0;     // proposed internal step
    double work = 0;       // work of the applied (non-gravity) forces since the start
    double energy0 = 0;    // energy at the start
    double last_power = 0; // power of the applied forces at the last accelerations() state
    double stage_power[7] = {0, 0, 0, 0, 0, 0, 0};
    bool started = false;
    double size_scale = 1;  // divergence: joints apart by more than this [m] (10 × (1 + extent))
    // Couplings (docs/couplings.md): rows bordering the block graph's matrix, solved by their Schur
    // complement on the solver's factors. Per coupling its Jacobian (4 sides × 6) and value at
    // st.poses, Z = K⁻¹ (−G_cᵀ) (one column per coupling), S = G_c Z (LU), the coupling rows' rhs rc
    // and multipliers μ (the generalized force on the follower's coordinate).
    std::vector<double> Gc, phic, Z, S, rc, mu;
    std::vector<int> piv;
    const double* prev = nullptr;  // the coordinates at the step's start (Data::coord): angles unwrapped against them
    bool factor_failed = false;  // this step: the solver could not factor a matrix (its reason in ws->error)

    void save(std::string& out) const override {
        const double v[3] = {h_next, work, energy0};
        out.append(reinterpret_cast<const char*>(v), sizeof v);
        out.push_back(started ? 1 : 0);
    }
    bool restore(const char*& p, const char* end) override {
        if (end - p < static_cast<long>(3 * sizeof(double) + 1)) return false;
        double v[3];
        std::memcpy(v, p, sizeof v);
        p += sizeof v;
        h_next = v[0], work = v[1], energy0 = v[2];
        started = *p++ != 0;
        return true;
    }
};

// Options of dp45-projection (Options::extra / extra_lists).
struct Dp45Options : dp45::Options {
    bool energy = false;
};

Dp45Options dp45_options(const Model& m) {
    Dp45Options o;
    static_cast<dp45::Options&>(o) = dp45::options(m);
    auto inv = m.options.extra_lists.find("invariants");
    if (inv != m.options.extra_lists.end())
        for (const std::string& s : inv->second) o.energy |= s == "energy";
    return o;
}

class Explicit final : public Integrator {
public:
    explicit Explicit(Method method) : kMethod(method) {}
    Scheme scheme() const override { return kMethod == Method::dp45 ? Scheme::adaptive : Scheme::explicit_fixed; }

    bool takes_couplings() const override { return true; }
    std::vector<std::string> option_names() const override {
        if (kMethod != Method::dp45) return {};
        std::vector<std::string> names(std::begin(dp45::kOptionNames), std::end(dp45::kOptionNames));
        names.push_back("invariants");
        return names;
    }

    void check(const Model& m, std::vector<Diagnostic>& out) const override {
        refuse_armature(m, kMethod == Method::heun ? "heun" : kMethod == Method::rk4 ? "rk4" : "dp45-projection", out);
        if (kMethod != Method::dp45) {
            // Servos (docs/servos.md) are applied explicitly here: say so once, where a stiff one
            // would otherwise just blow up with a step-size suggestion.
            for (const JointInfo& j : m.joints) {
                if (j.servo == ServoSpec::Kind::none) continue;
                out.push_back({Severity::warning, j.origin,
                               "joint '" + j.name + "': " + (kMethod == Method::heun ? "heun" : "rk4") +
                                   " applies servos explicitly, stable only while kv·dt/I < 2 and sqrt(kp/I)·dt < 2 for "
                                   "the inertia I the joint moves; vi-maximal, vi-midpoint, riqn and vi-galerkin "
                                   "integrate servos inside the step at any gains"});
                break;
            }
            return;
        }
        const Dp45Options o = dp45_options(m);
        const Origin none = m.origin;
        // A list where a number belongs, or a number where the list of invariants belongs, is an
        // error (before: silently dropped, the defaults used).
        dp45::check_options(m, "dp45-projection", out);
        if (m.options.extra.count("invariants"))
            out.push_back({Severity::error, none,
                           "options: dp45-projection option 'invariants' must be a list of names (known: energy)"});
        auto inv = m.options.extra_lists.find("invariants");
        if (inv != m.options.extra_lists.end())
            for (const std::string& s : inv->second)
                if (s != "energy")
                    out.push_back({Severity::error, none, "options: dp45-projection: unknown invariant '" + s +
                                                              "' (known: energy)"});
        if (o.energy)
            for (const JointInfo& j : m.joints)
                for (double k : j.stiffness)
                    if (k != 0)
                        out.push_back({Severity::error, j.origin, "joint '" + j.name +
                                                                      "': the energy invariant of dp45-projection does "
                                                                      "not support joint springs yet"});
        if (o.energy && m.servos > 0)
            out.push_back({Severity::error, none, "options: the energy invariant of dp45-projection holds a "
                                                  "mechanism's energy fixed; servos do work on it (remove the "
                                                  "invariant or the servos)"});
    }

    std::unique_ptr<IntegratorState> create_state(const Model& m) const override {
        auto st = std::make_unique<State>();
        const int nb = m.nbodies();
        st->A = BlockMatrix(m.graph);
        st->ws = m.solver->create(m, m.graph);
        st->rhs.assign(m.graph.total_size, 0.0);
        st->poses.assign(nb, Pose{});
        st->moved.assign(nb, Pose{});
        st->twists.assign(nb, Twist{});
        st->wrench.assign(nb, Wrench{});
        st->Ja.assign(6 * static_cast<std::size_t>(m.total_rows), 0.0);
        st->Jb.assign(6 * static_cast<std::size_t>(m.total_rows), 0.0);
        st->g.assign(m.total_rows, 0.0);
        for (auto* v : {&st->y0, &st->y, &st->ytmp}) v->assign(kPer * static_cast<std::size_t>(nb), 0.0);
        st->acc.assign(6 * static_cast<std::size_t>(nb), 0.0);
        for (auto& k : st->k) k.assign(kPer * static_cast<std::size_t>(nb), 0.0);
        double extent = 0;
        for (const BodyInfo& b : m.bodies) extent = std::max(extent, norm(b.pose0.x));
        st->size_scale = 10 * (1 + extent);
        const std::size_t nc = m.couplings.size();
        if (nc > 0) {
            st->Gc.assign(kCouplingStride * nc, 0.0);
            st->phic.assign(nc, 0.0);
            st->Z.assign(nc * static_cast<std::size_t>(m.graph.total_size), 0.0);
            st->S.assign(nc * nc, 0.0);
            for (auto* v : {&st->rc, &st->mu}) v->assign(nc, 0.0);
            st->piv.assign(nc, 0);
        }
        return st;
    }

    StepReport advance(const Model& m, Data& d) const override {
        State& st = static_cast<State&>(*d.integrator_state);
        const double dt = m.options.dt;
        st.prev = d.coord.data();
        st.factor_failed = false;
        pack(m, d, st.y0);
        StepReport r;
        if (kMethod == Method::dp45) {
            r.status = dp45(m, d, st, dt, r);
            r.substeps = static_cast<int>(r.internal_steps);
        } else {
            r.status = kMethod == Method::heun ? heun(m, d, st, dt) : rk4(m, d, st, dt);
            if (r.status == StepStatus::ok) unpack(m, st.y, d);
            // heun and rk4 let constraints drift by design, but a state whose joints are apart by
            // more than ten times the mechanism's size has diverged: fail, do not report success.
            if (r.status == StepStatus::ok) {
                int worst = -1;
                const double v = max_violation(m, d.pose.data(), &worst);
                if (!(v <= st.size_scale)) {
                    r.status = StepStatus::diverged;
                    r.worst_node = worst >= 0 ? m.nbodies() + worst : -1;
                }
            }
        }
        if (r.status == StepStatus::ok && !m.couplings.empty()) {  // the couplings' forces at the step's end
            pack(m, d, st.ytmp);
            if (accelerations(m, d, st, st.ytmp, st.acc.data()))
                for (std::size_t k = 0; k < m.couplings.size(); ++k) d.coupling_force[k] = st.mu[k];
        }
        if (r.status != StepStatus::ok && st.factor_failed) {  // said as vi-maximal says it (the solver's reason)
            r.status = StepStatus::singular;
            r.solver_error = &st.ws->error;
        }
        r.work = r.projections;
        // The loop rows the solver found dependent (so the degrees of freedom reported do not
        // depend on the integrator).
        r.redundant_rows = st.ws->redundant_rows;
        r.redundant_joints = &st.ws->redundant_joints;
        return r;
    }

private:
    static void pack(const Model& m, const Data& d, std::vector<double>& y) {
        for (int b = 0; b < m.nbodies(); ++b) {
            double* p = &y[kPer * b];
            const Pose& P = d.pose[b];
            const Twist& T = d.twist[b];
            p[0] = P.x.x, p[1] = P.x.y, p[2] = P.x.z, p[3] = P.q.w, p[4] = P.q.x, p[5] = P.q.y, p[6] = P.q.z;
            p[7] = T.v.x, p[8] = T.v.y, p[9] = T.v.z, p[10] = T.w.x, p[11] = T.w.y, p[12] = T.w.z;
        }
    }
    static void unpack(const Model& m, const std::vector<double>& y, Data& d) {
        for (int b = 0; b < m.nbodies(); ++b) {
            const double* p = &y[kPer * b];
            d.pose[b] = {{p[0], p[1], p[2]}, qnormalized(Quat{p[3], p[4], p[5], p[6]})};
            d.twist[b] = {{p[7], p[8], p[9]}, {p[10], p[11], p[12]}};
        }
    }
    static void to_state(const Model& m, const std::vector<double>& y, State& st) {
        for (int b = 0; b < m.nbodies(); ++b) {
            const double* p = &y[kPer * b];
            st.poses[b] = {{p[0], p[1], p[2]}, qnormalized(Quat{p[3], p[4], p[5], p[6]})};
            st.twists[b] = {{p[7], p[8], p[9]}, {p[10], p[11], p[12]}};
        }
    }

    // Fill the [M −Gᵀ; G 0] matrix at st.poses (G also left in st.Ja/Jb, g in st.g) and factor it.
    bool factor_at_poses(const Model& m, State& st) const {
        for (int b = 0; b < m.nbodies(); ++b) {
            double* D = st.A.diag(b);
            std::memset(D, 0, sizeof(double) * 36);
            for (int i = 0; i < 3; ++i) {
                D[i * 6 + i] = m.bodies[b].mass;
                for (int k = 0; k < 3; ++k) D[(3 + i) * 6 + 3 + k] = m.bodies[b].inertia.m[i][k];
            }
        }
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            const std::size_t o = 6 * static_cast<std::size_t>(ji.row_offset);
            const Pose a = ji.a >= 0 ? st.poses[ji.a] : Pose{};
            ji.impl->constraint(a, st.poses[ji.b], &st.g[ji.row_offset], ji.a >= 0 ? &st.Ja[o] : nullptr, &st.Jb[o]);
            for (int side = 0; side < 2; ++side) {
                double* B = st.A.bj(j, side);
                double* H = st.A.jb(j, side);
                if (!B) continue;
                const double* J = side == 0 ? &st.Ja[o] : &st.Jb[o];
                for (int r = 0; r < ji.rows; ++r)
                    for (int c = 0; c < 6; ++c) {
                        H[r * 6 + c] = J[r * 6 + c];
                        B[c * ji.rows + r] = -J[r * 6 + c];
                    }
            }
        }
        if (!m.solver->factor(m.graph, st.A, *st.ws)) {
            st.factor_failed = true;
            return false;
        }
        return m.couplings.empty() || factor_couplings(m, st);
    }

    // A coupling's sides (coupling_bodies): at most kSides; st.Gc holds kCouplingStride per coupling.
    static constexpr int kSides = 2 * kMaxCouplingTerms;
    static constexpr std::size_t kCouplingStride = 6 * kSides;

    // G_c ν of coupling k from its Jacobian G (c.sides() × 6).
    static double coupling_rate(const Model& m, const CouplingInfo& c, const double (*G)[6], const Twist* tw) {
        int body[kSides];
        coupling_bodies(m, c, body);
        double s = 0;
        for (int side = 0; side < c.sides(); ++side) {
            if (body[side] < 0) continue;
            for (int i = 0; i < 3; ++i) s += G[side][i] * tw[body[side]].v[i] + G[side][3 + i] * tw[body[side]].w[i];
        }
        return s;
    }

    // G_c x: coupling r's Jacobian (st.Gc) times the rows of its bodies in a block-graph vector x.
    static double coupling_dot(const Model& m, const State& st, int r, const double* x) {
        const auto* G = reinterpret_cast<const double(*)[6]>(&st.Gc[kCouplingStride * static_cast<std::size_t>(r)]);
        int body[kSides];
        coupling_bodies(m, m.couplings[r], body);
        double v = 0;
        for (int side = 0; side < m.couplings[r].sides(); ++side)
            if (body[side] >= 0)
                for (int i = 0; i < 6; ++i) v += G[side][i] * x[m.graph.node_offset[body[side]] + i];
        return v;
    }

    // After the solver's factorisation at st.poses: the couplings' Jacobians and values, Z and S.
    bool factor_couplings(const Model& m, State& st) const {
        const BlockGraph& gr = m.graph;
        const std::size_t nt = static_cast<std::size_t>(gr.total_size);
        const int nc = static_cast<int>(m.couplings.size());
        for (int k = 0; k < nc; ++k) {
            const CouplingInfo& c = m.couplings[k];
            auto* G = reinterpret_cast<double(*)[6]>(&st.Gc[kCouplingStride * static_cast<std::size_t>(k)]);
            st.phic[k] = coupling_residual(m, c, st.poses.data(), st.prev, G);
            double* z = &st.Z[static_cast<std::size_t>(k) * nt];
            std::fill(z, z + nt, 0.0);
            int body[kSides];
            coupling_bodies(m, c, body);
            for (int side = 0; side < c.sides(); ++side)
                if (body[side] >= 0)
                    for (int i = 0; i < 6; ++i) z[gr.node_offset[body[side]] + i] -= G[side][i];
            m.solver->solve(gr, *st.ws, z);
        }
        for (int r = 0; r < nc; ++r)
            for (int k = 0; k < nc; ++k) st.S[static_cast<std::size_t>(r) * nc + k] = coupling_dot(m, st, r, &st.Z[k * nt]);
        return dense::lu_factor(nc, st.S.data(), st.piv.data());
    }

    // Solve the bordered system [K, −G_cᵀ; G_c, 0] [x; μ] = [rhs; rc] in place of rhs (μ into st.mu):
    // x0 = K⁻¹ rhs, μ = S⁻¹ (G_c x0 − rc), x = x0 − Z μ. Without couplings, the solver's solve.
    void solve_bordered(const Model& m, State& st) const {
        const BlockGraph& gr = m.graph;
        m.solver->solve(gr, *st.ws, st.rhs.data());
        if (m.couplings.empty()) return;
        const std::size_t nt = static_cast<std::size_t>(gr.total_size);
        const int nc = static_cast<int>(m.couplings.size());
        for (int r = 0; r < nc; ++r) st.mu[r] = coupling_dot(m, st, r, st.rhs.data()) - st.rc[r];
        dense::lu_solve(nc, st.S.data(), st.piv.data(), st.mu.data());
        for (int k = 0; k < nc; ++k) {
            const double* z = &st.Z[static_cast<std::size_t>(k) * nt];
            for (std::size_t i = 0; i < nt; ++i) st.rhs[i] -= st.mu[k] * z[i];
        }
    }

    // G ν for joint j from its Jacobian rows Ja, Jb (rows × 6; Ja unused for a world parent).
    static void jacobian_times_twist(const JointInfo& ji, const double* Ja, const double* Jb, const Twist* tw, double* out) {
        for (int r = 0; r < ji.rows; ++r) {
            double s = 0;
            for (int c = 0; c < 3; ++c) {
                s += Jb[6 * r + c] * tw[ji.b].v[c] + Jb[6 * r + 3 + c] * tw[ji.b].w[c];
                if (ji.a >= 0) s += Ja[6 * r + c] * tw[ji.a].v[c] + Ja[6 * r + 3 + c] * tw[ji.a].w[c];
            }
            out[r] = s;
        }
    }

    // G ν for joint j at the given poses.
    static void g_nu(const JointInfo& ji, const Pose* poses, const Twist* tw, double* Ja, double* Jb, double* g, double* out) {
        const Pose a = ji.a >= 0 ? poses[ji.a] : Pose{};
        ji.impl->constraint(a, poses[ji.b], g, ji.a >= 0 ? Ja : nullptr, Jb);
        jacobian_times_twist(ji, Ja, Jb, tw, out);
    }

    // Accelerations of every body (6 per body into acc, world linear / body angular) at y.
    bool accelerations(const Model& m, const Data& d, State& st, const std::vector<double>& y, double* acc) const {
        to_state(m, y, st);
        if (!factor_at_poses(m, st)) return false;
        applied_wrenches(m, d, st.poses.data(), st.twists.data(), st.wrench.data());
        const BlockGraph& gr = m.graph;
        double wmax = 1;
        st.last_power = 0;
        for (int b = 0; b < m.nbodies(); ++b)
            st.last_power += dot(st.wrench[b].force, st.twists[b].v) + dot(st.wrench[b].torque, st.twists[b].w);
        for (int b = 0; b < m.nbodies(); ++b) {
            const BodyInfo& body = m.bodies[b];
            const Twist& t = st.twists[b];
            const Vec3 f = body.mass * m.gravity + st.wrench[b].force;
            const Vec3 tau = st.wrench[b].torque - cross(t.w, body.inertia * t.w);
            double* r = &st.rhs[gr.node_offset[b]];
            r[0] = f.x, r[1] = f.y, r[2] = f.z, r[3] = tau.x, r[4] = tau.y, r[5] = tau.z;
            wmax = std::max(wmax, norm(t.w));
        }
        // γ_j = d/dt (G ν) along the free motion, Richardson on central differences.
        const double eps = 1e-3 / wmax;
        double Ja[6 * kMaxJointRows], Jb[6 * kMaxJointRows], g[kMaxJointRows], p1[kMaxJointRows], m1[kMaxJointRows],
            p2[kMaxJointRows], m2[kMaxJointRows];
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            double* r = &st.rhs[gr.node_offset[gr.nbodies + j]];
            for (const double s : {eps, -eps, 2 * eps, -2 * eps}) {
                for (int side = 0; side < 2; ++side) {
                    const int b = side == 0 ? ji.a : ji.b;
                    if (b < 0) continue;
                    st.moved[b] = {st.poses[b].x + s * st.twists[b].v, oplus(st.poses[b].q, s * st.twists[b].w)};
                }
                double* out = s == eps ? p1 : (s == -eps ? m1 : (s > 0 ? p2 : m2));
                g_nu(ji, st.moved.data(), st.twists.data(), Ja, Jb, g, out);
            }
            for (int row = 0; row < ji.rows; ++row) {
                const double gamma = (8 * (p1[row] - m1[row]) - (p2[row] - m2[row])) / (12 * eps);
                r[row] = -gamma;
            }
        }
        for (int k = 0; k < static_cast<int>(m.couplings.size()); ++k) {  // γ of the couplings the same way
            const CouplingInfo& c = m.couplings[k];
            int body[kSides];
            coupling_bodies(m, c, body);
            double rate[4];
            int e = 0;
            for (const double s : {eps, -eps, 2 * eps, -2 * eps}) {
                for (int side = 0; side < c.sides(); ++side) {
                    const int b = body[side];
                    if (b >= 0) st.moved[b] = {st.poses[b].x + s * st.twists[b].v, oplus(st.poses[b].q, s * st.twists[b].w)};
                }
                double G[kSides][6];
                coupling_residual(m, c, st.moved.data(), nullptr, G);
                rate[e++] = coupling_rate(m, c, G, st.twists.data());
            }
            st.rc[k] = -(8 * (rate[0] - rate[1]) - (rate[2] - rate[3])) / (12 * eps);
        }
        solve_bordered(m, st);
        for (int b = 0; b < m.nbodies(); ++b)
            for (int i = 0; i < 6; ++i) acc[6 * b + i] = st.rhs[gr.node_offset[b] + i];
        for (double v : st.rhs)
            if (!std::isfinite(v)) return false;
        return true;
    }

    // k = f(y): derivative of the state.
    bool derivative(const Model& m, const Data& d, State& st, const std::vector<double>& y, std::vector<double>& k) const {
        std::vector<double>& acc = st.acc;
        if (!accelerations(m, d, st, y, acc.data())) return false;
        for (int b = 0; b < m.nbodies(); ++b) {
            const double* p = &y[kPer * b];
            double* o = &k[kPer * b];
            o[0] = p[7], o[1] = p[8], o[2] = p[9];
            const Quat q{p[3], p[4], p[5], p[6]};
            const Quat dq = q * Quat{0, p[10], p[11], p[12]};
            o[3] = 0.5 * dq.w, o[4] = 0.5 * dq.x, o[5] = 0.5 * dq.y, o[6] = 0.5 * dq.z;
            for (int i = 0; i < 6; ++i) o[7 + i] = acc[6 * b + i];
        }
        return true;
    }

    static void axpy(std::vector<double>& out, const std::vector<double>& y, double h,
                     std::initializer_list<std::pair<double, const std::vector<double>*>> terms) {
        for (std::size_t i = 0; i < y.size(); ++i) {
            double s = 0;
            for (const auto& t : terms) s += t.first * (*t.second)[i];
            out[i] = y[i] + h * s;
        }
    }

    StepStatus heun(const Model& m, const Data& d, State& st, double h) const {
        if (!derivative(m, d, st, st.y0, st.k[0])) return StepStatus::non_finite;
        axpy(st.ytmp, st.y0, h, {{1.0, &st.k[0]}});
        if (!derivative(m, d, st, st.ytmp, st.k[1])) return StepStatus::non_finite;
        axpy(st.y, st.y0, h, {{0.5, &st.k[0]}, {0.5, &st.k[1]}});
        return StepStatus::ok;
    }

    StepStatus rk4(const Model& m, const Data& d, State& st, double h) const {
        if (!derivative(m, d, st, st.y0, st.k[0])) return StepStatus::non_finite;
        axpy(st.ytmp, st.y0, h, {{0.5, &st.k[0]}});
        if (!derivative(m, d, st, st.ytmp, st.k[1])) return StepStatus::non_finite;
        axpy(st.ytmp, st.y0, h, {{0.5, &st.k[1]}});
        if (!derivative(m, d, st, st.ytmp, st.k[2])) return StepStatus::non_finite;
        axpy(st.ytmp, st.y0, h, {{1.0, &st.k[2]}});
        if (!derivative(m, d, st, st.ytmp, st.k[3])) return StepStatus::non_finite;
        axpy(st.y, st.y0, h, {{1.0 / 6, &st.k[0]}, {1.0 / 3, &st.k[1]}, {1.0 / 3, &st.k[2]}, {1.0 / 6, &st.k[3]}});
        return StepStatus::ok;
    }

    double energy(const Model& m, State& st, const std::vector<double>& y) const {
        to_state(m, y, st);
        return continuous_monitors(m, st.poses.data(), st.twists.data()).total;
    }

    // Projection onto the manifolds after an accepted step (paper 003 §5): quaternion norm;
    // positions: Newton on g(x) = 0 with M-orthogonal corrections; velocities: G ν = 0; and,
    // with the energy invariant, the velocities scaled to the target energy (the M-orthogonal
    // projection onto the energy level within the velocity manifold). Returns Newton iterations.
    int project(const Model& m, State& st, std::vector<double>& y, double target_energy, bool energy_on,
                bool* ok) const {
        *ok = true;
        const BlockGraph& gr = m.graph;
        const int nb = m.nbodies();
        for (int b = 0; b < nb; ++b) {  // Euler parameters back onto the unit sphere
            double* p = &y[kPer * b];
            const double n = std::sqrt(p[3] * p[3] + p[4] * p[4] + p[5] * p[5] + p[6] * p[6]);
            for (int i = 3; i < 7; ++i) p[i] /= n;
        }
        int it = 0;
        const double tol = m.options.tolerance;
        for (; it < m.options.max_iterations; ++it) {
            to_state(m, y, st);
            if (!factor_at_poses(m, st)) {
                *ok = false;
                return it;
            }
            // Closed: every row within the tolerance, or a joint's rows within the resolution of
            // its bodies' positions where that is coarser (row_limit; 1000 km out).
            double worst = 0;  // in units of each row's limit
            for (const JointInfo& ji : m.joints) {
                const double lim = row_limit(ji, st.poses.data(), tol);
                for (int r = 0; r < ji.rows; ++r) worst = std::max(worst, std::fabs(st.g[ji.row_offset + r]) / lim);
            }
            for (double v : st.phic) worst = std::max(worst, std::fabs(v) / tol);
            if (worst < 1) break;
            std::fill(st.rhs.begin(), st.rhs.end(), 0.0);
            for (int j = 0; j < m.njoints(); ++j)
                for (int r = 0; r < m.joints[j].rows; ++r)
                    st.rhs[gr.node_offset[nb + j] + r] = -st.g[m.joints[j].row_offset + r];
            for (std::size_t k = 0; k < st.rc.size(); ++k) st.rc[k] = -st.phic[k];
            solve_bordered(m, st);
            for (int b = 0; b < nb; ++b) {
                const double* dx = &st.rhs[gr.node_offset[b]];
                double* p = &y[kPer * b];
                p[0] += dx[0], p[1] += dx[1], p[2] += dx[2];
                const Quat q = oplus(Quat{p[3], p[4], p[5], p[6]}, Vec3{dx[3], dx[4], dx[5]});
                p[3] = q.w, p[4] = q.x, p[5] = q.y, p[6] = q.z;
            }
        }
        if (it == m.options.max_iterations) *ok = false;
        // Velocities: ν ← ν + Δν with [M −Gᵀ; G 0][Δν; μ] = [0; −G ν] (the matrix is current).
        // The Jacobians of the last factorisation are those of the projected positions.
        std::fill(st.rhs.begin(), st.rhs.end(), 0.0);
        double gv[kMaxJointRows];
        for (int j = 0; j < m.njoints(); ++j) {
            const std::size_t o = 6 * static_cast<std::size_t>(m.joints[j].row_offset);
            jacobian_times_twist(m.joints[j], &st.Ja[o], &st.Jb[o], st.twists.data(), gv);
            for (int r = 0; r < m.joints[j].rows; ++r) st.rhs[gr.node_offset[nb + j] + r] = -gv[r];
        }
        for (std::size_t k = 0; k < st.rc.size(); ++k)
            st.rc[k] = -coupling_rate(m, m.couplings[k], reinterpret_cast<const double(*)[6]>(&st.Gc[kCouplingStride * k]), st.twists.data());
        solve_bordered(m, st);
        for (int b = 0; b < nb; ++b)
            for (int i = 0; i < 6; ++i) y[kPer * b + 7 + i] += st.rhs[gr.node_offset[b] + i];
        if (energy_on) {
            to_state(m, y, st);
            const Monitors mon = continuous_monitors(m, st.poses.data(), st.twists.data());
            const double ke_target = target_energy - mon.potential;
            if (mon.kinetic > 0 && ke_target > 0) {
                const double s = std::sqrt(ke_target / mon.kinetic);
                for (int b = 0; b < nb; ++b)
                    for (int i = 7; i < 13; ++i) y[kPer * b + i] *= s;
            }
        }
        return it;
    }

    StepStatus dp45(const Model& m, Data& d, State& st, double dt, StepReport& r) const {
        const auto& a = dp45::kA;
        const auto& e = dp45::kE;
        const Dp45Options o = dp45_options(m);
        if (!st.started) {
            st.started = true;
            st.energy0 = energy(m, st, st.y0);
            st.work = 0;
            st.h_next = o.initial_step > 0 ? o.initial_step : dt;
        }
        const double t_end = d.time + dt;
        double t = d.time;
        std::vector<double>& y = st.y;
        y = st.y0;
        const std::size_t n = y.size();
        double internal = 0;  // internal steps tried (o.max_internal_steps)
        while (t < t_end - 1e-14 * std::max(1.0, std::fabs(t_end))) {
            double h = std::min(st.h_next, t_end - t);
            const bool last = h >= t_end - t;
            if (h < 1e-12 * dt || ++internal > o.max_internal_steps) return StepStatus::not_converged;
            if (!derivative(m, d, st, y, st.k[0])) return StepStatus::non_finite;
            st.stage_power[0] = st.last_power;
            for (int s = 1; s < 7; ++s) {
                for (std::size_t i = 0; i < n; ++i) {
                    double acc = 0;
                    for (int r = 0; r < s; ++r) acc += a[s][r] * st.k[r][i];
                    st.ytmp[i] = y[i] + h * acc;
                }
                if (!derivative(m, d, st, st.ytmp, st.k[s])) return StepStatus::non_finite;
                st.stage_power[s] = st.last_power;
            }
            // ytmp now holds the fifth-order solution (FSAL: stage 7 is evaluated at it).
            double err2 = 0;
            for (std::size_t i = 0; i < n; ++i) {
                double ei = 0;
                for (int s = 0; s < 7; ++s) ei += e[s] * st.k[s][i];
                ei *= h;
                const double sc = o.atol + o.rtol * std::max(std::fabs(y[i]), std::fabs(st.ytmp[i]));
                const double ratio = std::min(std::fabs(ei / sc), 1e100);  // a tiny atol must not overflow the sum
                err2 += ratio * ratio;
            }
            const double err = std::sqrt(err2 / static_cast<double>(n));
            if (!std::isfinite(err)) return StepStatus::non_finite;
            const double fac = dp45::factor(err, o.fac_max);
            if (err <= 1) {
                ++r.internal_steps;
                y = st.ytmp;
                for (int r = 0; r < 6; ++r) st.work += h * a[6][r] * st.stage_power[r];  // fifth-order work
                bool ok = true;
                r.projections += project(m, st, y, st.energy0 + st.work, o.energy, &ok);
                if (!ok) return StepStatus::not_converged;
                unpack(m, y, d);  // joint angles unwrap internal step by internal step
                update_joint_coordinates(m, d, d.twist.data());
                t = last ? t_end : t + h;
                const double h_new = h * std::min(o.fac_max, std::max(0.2, fac));
                if (!last) st.h_next = h_new;
                else st.h_next = std::max(st.h_next, h_new);  // a truncated last step does not shrink the proposal
            } else {
                ++r.rejected_steps;
                st.h_next = h * std::max(0.2, fac);
            }
        }
        unpack(m, y, d);
        return StepStatus::ok;
    }

    Method kMethod;
};

}  // namespace

NOETHER_PLUGIN_LIST(
    NOETHER_PLUGIN_ENTRY(NOETHER_PLUGIN_INTEGRATOR, "heun",
                         "explicit trapezoid (order 2), index-1, no stabilisation (baseline)", Explicit, Method::heun),
    NOETHER_PLUGIN_ENTRY(NOETHER_PLUGIN_INTEGRATOR, "rk4",
                         "classical Runge-Kutta (order 4), index-1, no stabilisation (baseline)", Explicit, Method::rk4),
    NOETHER_PLUGIN_ENTRY(NOETHER_PLUGIN_INTEGRATOR, "dp45-projection",
                         "Dormand-Prince 5(4), step-size control, projection onto constraints and energy (paper 003)",
                         Explicit, Method::dp45))
