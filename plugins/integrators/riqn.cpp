// riqn: the linear-time variational integrator in joint coordinates (paper 001, Lee, Liu, Park &
// Srinivasa, WAFR 2016), restated with its verified formulas in docs/design/riqn.md.
//
// The mechanism is seen through the kernel's tree view (noether/tree.hpp): links in parents-first
// order, fixed joints merged, each 1-DOF joint a screw. Per step (riqn.md §3–§7):
//   setup at q_k   link transforms T_i^k, link poses, forcing h·F_i (gravity, body forces),
//                  the impulse articulated-body inertias of M(q_k) + (h/2)·D            O(n)
//   guess          IG3: one continuous forward-dynamics pass (ABA)                      O(n)
//   iterate        r = DRNEA(q⁺) (forward: f_i, μ_i; backward: Γ_i, r_i)                 O(n)
//                  Δq = −h (M + (h/2)D)⁻¹ r by the impulse ABA pass (RIQN)               O(n)
//                  or the dense exact Newton step (option newton = "exact", §5.4)      O(n³)
//                  until ‖r‖ ≤ tolerance or max|Δq| ≤ step_tolerance (§5.5)
//   commit         π_i ← Ad_{f_i}ᵀ μ_i, Qminus, q_{k−1} ← q_k, q_k ← q⁺
// The first step starts from the continuous state by the discrete Legendre transform (§7.2).
// Beyond paper 001 (docs/integrators.md, "riqn: free roots and ball joints"): the root of a
// floating component is a free link whose unknown is its pose on SE(3) and whose residual is its
// whole 6-vector Γ; a ball joint's unknown is its relative rotation on SO(3) and its residual Sᵀ Γ
// with S = [I; c×]. Both are updated by the retraction q ⊕ Δ of the tree view.
// A failed step is retaken from the kernel's snapshot as 2, 4, … substeps in momentum form
// (§5.5). After each step the body poses of the Model and the discrete twists of the interval
// are written back in the maximal layout (§7.3), so monitors, outputs and joint coordinates are
// shared with the maximal-coordinate integrators; if a host moves the bodies between steps,
// the integrator restarts from the Data as from a continuous state.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "noether/data.hpp"
#include "noether/integrator.hpp"
#include "noether/plugin.hpp"
#include "noether/tree.hpp"

namespace {

using namespace noether;

using V6 = double[6];

// ---- SE(3) helpers on [ω; v] twists and [n; f] wrenches (the shared ones, top/bot/set6, the
// adjoints and the logarithms, come with noether/spatial.hpp) --------------------------------------

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

enum class Guess { position, velocity, acceleration };
struct RiqnOptions {
    bool exact = false;
    Guess guess = Guess::acceleration;
    double step_tolerance = 1e-12;
};

const std::string* string_option(const Model& m, const char* key) {
    auto it = m.options.extra_lists.find(key);
    if (it == m.options.extra_lists.end() || it->second.size() != 1) return nullptr;
    return &it->second[0];
}

RiqnOptions riqn_options(const Model& m) {
    RiqnOptions o;
    if (const std::string* s = string_option(m, "newton")) o.exact = *s == "exact";
    if (const std::string* s = string_option(m, "guess"))
        o.guess = *s == "position" ? Guess::position : *s == "velocity" ? Guess::velocity : Guess::acceleration;
    auto it = m.options.extra.find("step_tolerance");
    if (it != m.options.extra.end()) o.step_tolerance = it->second;
    return o;
}

// ---- state ----------------------------------------------------------------------------------

struct State final : IntegratorState {
    // Carried between steps (saved).
    bool started = false;
    bool fresh = false;  // T, Ti, g, bp are those of the current q (not saved: recomputed after a restore)
    double dt_prev = 0;                 // length of the interval q_{k−1} → q_k
    std::vector<double> q, qm, Qminus;  // q_k, q_{k−1} (nq), carried joint impulse (nv)
    std::vector<double> pi;             // carried momentum, 6 per link (link frame at q_k)

    // Setup and workspaces (sized once).
    TreeView tree;
    RiqnOptions opt;
    std::vector<Frame> T, Ti, g, f;             // T_i^k, its inverse, link poses at q_k, f_i of the last DRNEA
    std::vector<double> F, mu, Gam, r, qp, dq, tau;  // F: link wrenches at q_k (unscaled); qp: nq, r, dq, tau: nv
    TreeABI abi;                                     // impulse ABI of M(q_k) + (h/2)·D
    std::vector<double> kd, u, dV;
    std::vector<double> V, c, pA, fdu;  // forward dynamics (IG3)
    std::vector<Pose> bp, prev_pose;
    std::vector<Wrench> bw;
    // Exact Newton: link poses at q⁺, the matrix, Jacobian columns, the factorisation.
    std::vector<Frame> gp;
    Eigen::MatrixXd K, Jk, Jp;
    Eigen::VectorXd kr;
    Eigen::PartialPivLU<Eigen::MatrixXd> lu;

    void save(std::string& out) const override {
        const char st = started ? 1 : 0;
        out.append(&st, 1);
        out.append(reinterpret_cast<const char*>(&dt_prev), sizeof dt_prev);
        for (const std::vector<double>* v : {&q, &qm, &Qminus, &pi})
            if (!v->empty()) out.append(reinterpret_cast<const char*>(v->data()), sizeof(double) * v->size());
    }
    bool restore(const char*& p, const char* end) override {
        const std::size_t need = 1 + sizeof dt_prev + sizeof(double) * (q.size() + qm.size() + Qminus.size() + pi.size());
        if (static_cast<std::size_t>(end - p) < need) return false;
        started = *p++ != 0;
        fresh = false;
        std::memcpy(&dt_prev, p, sizeof dt_prev);
        p += sizeof dt_prev;
        for (std::vector<double>* v : {&q, &qm, &Qminus, &pi}) {
            if (!v->empty()) std::memcpy(v->data(), p, sizeof(double) * v->size());
            p += sizeof(double) * v->size();
        }
        return true;
    }
};

class Riqn final : public Integrator {
public:
    Scheme scheme() const override { return Scheme::implicit_fixed; }
    std::vector<std::string> option_names() const override { return {"newton", "guess", "step_tolerance"}; }

    void check(const Model& m, std::vector<Diagnostic>& out) const override {
        TreeView t;
        if (build_tree_view(m, "riqn", t, out)) {
            for (const TreeLink& l : t.links) {
                if (l.type != TreeJoint::ball) continue;
                const JointInfo& ji = m.joints[l.joint];
                for (std::size_t k = 0; k < ji.damping.size(); ++k) {
                    if (ji.damping[k] == 0) continue;
                    char buf[96];
                    std::snprintf(buf, sizeof buf, "%g", ji.damping[k]);
                    out.push_back({Severity::error, ji.origin,
                                   "riqn: joint '" + ji.name + "' (" + ji.type + ") has damping " + buf +
                                       "; riqn takes undamped ball joints (their springs and actuation are applied); "
                                       "use vi-maximal or vi-midpoint for a damped ball joint"});
                    break;
                }
            }
        }
        const Origin none = m.origin;
        auto one_of = [&](const char* key, std::initializer_list<const char*> allowed) {
            std::string list;
            for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + "'" + a + "'";
            if (m.options.extra.count(key)) {
                out.push_back({Severity::error, none, std::string("options: riqn option '") + key +
                                                          "' must be a string (one of " + list + "), got a number"});
                return;
            }
            auto it = m.options.extra_lists.find(key);
            if (it == m.options.extra_lists.end()) return;
            bool ok = it->second.size() == 1;
            if (ok) {
                ok = false;
                for (const char* a : allowed) ok |= it->second[0] == a;
            }
            if (!ok)
                out.push_back({Severity::error, none,
                               std::string("options: riqn option '") + key + "' must be one of " + list + ", got '" +
                                   (it->second.empty() ? std::string("") : it->second[0]) +
                                   (it->second.size() > 1 ? "', …" : "'")});
        };
        one_of("newton", {"riqn", "exact"});
        one_of("guess", {"position", "velocity", "acceleration"});
        if (m.options.extra_lists.count("step_tolerance"))
            out.push_back({Severity::error, none, "options: riqn option 'step_tolerance' must be a number"});
        const RiqnOptions o = riqn_options(m);
        if (!(o.step_tolerance > 0) || !std::isfinite(o.step_tolerance)) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "options: riqn option 'step_tolerance' must be positive and finite, got %g",
                          o.step_tolerance);
            out.push_back({Severity::error, none, buf});
        }
    }

    std::unique_ptr<IntegratorState> create_state(const Model& m) const override {
        auto st = std::make_unique<State>();
        std::vector<Diagnostic> errors;
        if (!build_tree_view(m, "riqn", st->tree, errors)) throw ModelError(errors);
        st->opt = riqn_options(m);
        const int n = st->tree.size(), nb = m.nbodies(), nq = st->tree.nq, nv = st->tree.nv;
        st->dt_prev = m.options.dt;
        for (std::vector<double>* v : {&st->q, &st->qm, &st->qp}) v->assign(nq, 0.0);
        for (const TreeLink& l : st->tree.links)
            for (std::vector<double>* v : {&st->q, &st->qm, &st->qp}) link_neutral(l, v->data() + l.iq);
        for (std::vector<double>* v : {&st->Qminus, &st->r, &st->dq, &st->tau, &st->kd, &st->u, &st->fdu})
            v->assign(nv, 0.0);
        for (std::vector<double>* v : {&st->pi, &st->F, &st->mu, &st->Gam, &st->dV, &st->V, &st->c, &st->pA})
            v->assign(6 * static_cast<std::size_t>(n), 0.0);
        st->T.assign(n, Frame{});
        st->Ti.assign(n, Frame{});
        st->g.assign(n, Frame{});
        st->f.assign(n, Frame{});
        st->bp.assign(nb, Pose{});
        st->prev_pose.assign(nb, Pose{});
        st->bw.assign(nb, Wrench{});
        if (st->opt.exact) {
            st->gp.assign(n, Frame{});
            st->K.resize(nv, nv);
            st->Jk.resize(6, nv);
            st->Jp.resize(6, nv);
            st->kr.resize(nv);
            st->lu = Eigen::PartialPivLU<Eigen::MatrixXd>(nv);
        }
        return st;
    }

    StepReport advance(const Model& m, Data& d) const override {
        State& st = static_cast<State&>(*d.integrator_state);
        const double h = m.options.dt;
        StepReport report = subdivide(
            m, d, 1, 1,
            [&](int k, double hs) {
                if (!st.started || d.host_changed()) start(m, d, st, h);  // the kernel's host-edit test
                if (k > 1) shift_momentum(m, d, st, 0.5 * (h - hs));  // keep p⁻ = π + (h/2)F across the change of h
            },
            [&](double hs) { return substep(m, d, st, hs); },
            [&](int k, double hs) {
                if (k > 1) shift_momentum(m, d, st, 0.5 * (hs - h));
            });
        if (report.status == StepStatus::ok) write_back(m, d, st);
        return report;
    }

    // Introspection: the DRNEA residual r(q⁺) of the next step (riqn.md §4). Here the unknowns s
    // are q⁺ (TreeView::nq positions in TreeView order) and f = r (TreeView::nv values); no Newton
    // matrix (A must be null). The integrator state is left as it was.
    bool step_system(const Model& m, Data& d, const double* s, double* f, BlockMatrix* A) const override {
        if (A) return false;
        State& st = static_cast<State&>(*d.integrator_state);
        std::string saved;
        st.save(saved);
        const double h = m.options.dt;
        if (!st.started || d.changed_since_commit()) start(m, d, st, h);
        kinematics(m, d, st);
        forces(m, d, st);
        set_inputs(d, st, h);
        std::copy(s, s + st.tree.nq, st.qp.begin());
        int worst = -1;
        drnea(m, st, h, &worst);
        std::copy(st.r.begin(), st.r.end(), f);
        const char* p = saved.data();
        st.restore(p, saved.data() + saved.size());
        return true;
    }

    Monitors monitors(const Model& m, const Data& d) const override {
        const State& st = static_cast<const State&>(*d.integrator_state);
        if (!st.started) return default_monitors(m, d);  // before the first step: the continuous state
        Monitors mon = discrete_monitors(m, d, st.dt_prev);
        // The momenta riqn's discrete Noether theorem conserves: Σ Ad_{g_i⁻¹}ᵀ π_i over the links,
        // world frame about the origin (π_i: the last interval's momentum μ_i carried to q_k).
        mon.momentum = Vec3{};
        mon.angular_momentum = Vec3{};
        const TreeView& t = st.tree;
        for (int i = 0; i < t.size(); ++i) {
            const int b = t.links[i].body;
            const Frame g = frame_of(d.pose[b]) * inverse(t.body_offset[b]);
            const double* p = &st.pi[6 * i];
            const Vec3 f = g.R * bot(p);
            mon.momentum += f;
            mon.angular_momentum += g.R * top(p) + cross(g.p, f);
        }
        return mon;
    }

private:
    // ---- configuration-k setup -----------------------------------------------------------

    // T_i^k, link poses g, body poses bp (quaternion signs continuous with Data::pose).
    static void kinematics(const Model& m, const Data& d, State& st) {
        const TreeView& t = st.tree;
        for (int i = 0; i < t.size(); ++i) {
            const TreeLink& l = t.links[i];
            st.T[i] = l.type == TreeJoint::screw ? link_transform(l, st.q[l.iq]) : link_transform(l, &st.q[l.iq]);
            st.Ti[i] = inverse(st.T[i]);
            st.g[i] = l.parent >= 0 ? st.g[l.parent] * st.T[i] : st.T[i];
        }
        (void)m;
        tree_body_poses(t, st.g.data(), d.pose.data(), st.bp.data());
        st.fresh = true;
    }

    // Link wrenches at configuration k (link frame, about the link CoM): gravity and the body
    // forces of the Model and the inputs. Needs kinematics().
    static void forces(const Model& m, const Data& d, State& st) {
        const TreeView& t = st.tree;
        const int n = t.size();
        for (int i = 0; i < n; ++i) {
            const Vec3 fg = t.links[i].mass * (transpose(st.g[i].R) * m.gravity);
            set6(&st.F[6 * i], Vec3{}, fg);
        }
        bool ball_forcing = false;  // actuation or springs on a ball joint: wrenches at the node
        if (!t.screws_only)
            for (const TreeLink& l : t.links) {
                if (l.type != TreeJoint::ball) continue;
                const JointInfo& ji = m.joints[l.joint];
                ball_forcing = ball_forcing || ji.has_force_element;
                for (int k = 0; k < 3; ++k) ball_forcing = ball_forcing || d.actuation[l.dof + k] != 0;
            }
        if (m.forces.empty() && !any_input(m, d) && !ball_forcing) return;
        body_wrenches(m, d.inputs(), st.bp.data(), st.bw.data());
        if (ball_forcing)
            for (const TreeLink& l : t.links)
                if (l.type == TreeJoint::ball) add_joint_wrenches(m, d, d.inputs(), st.bp.data(), l.joint, st.bw.data());
        for (int b = 0; b < m.nbodies(); ++b) {
            const int L = t.body_link[b];
            if (L < 0) continue;
            const Frame& o = t.body_offset[b];
            const Vec3 f = transpose(st.g[L].R) * st.bw[b].force;
            const Vec3 n_ = o.R * st.bw[b].torque + cross(o.p, f);
            double* F = &st.F[6 * L];
            F[0] += n_.x, F[1] += n_.y, F[2] += n_.z, F[3] += f.x, F[4] += f.y, F[5] += f.z;
        }
    }
    static bool any_input(const Model& m, const Data& d) {
        for (int b = 0; b < m.nbodies(); ++b) {
            const Vec3& f = d.applied_force[b];
            const Vec3& tq = d.applied_torque[b];
            if (f.x != 0 || f.y != 0 || f.z != 0 || tq.x != 0 || tq.y != 0 || tq.z != 0) return true;
        }
        return false;
    }

    // Discrete Legendre start from the continuous state of Data (riqn.md §7.2).
    static void start(const Model& m, const Data& d, State& st, double h) {
        const TreeView& t = st.tree;
        const int n = t.size();
        // Unwrap references: the joint coordinates of Data; quaternion signs: the last state.
        st.qm = st.q;
        for (const TreeLink& l : t.links)
            if (l.type == TreeJoint::screw) st.qm[l.iq] = d.coord[l.dof] - offset(m, l);
        tree_coordinates(t, d.pose.data(), st.qm.data(), st.q.data());
        kinematics(m, d, st);
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            if (l.type == TreeJoint::screw) {
                st.dq[l.iv] = d.rate[l.dof];
                continue;
            }
            // Ball and free links: velocities from the body twists of Data.
            double Vi[6], Vp[6] = {0, 0, 0, 0, 0, 0};
            link_twist_of_data(d, st, i, Vi);
            if (l.type == TreeJoint::free) {
                for (int k = 0; k < 6; ++k) st.dq[l.iv + k] = Vi[k];
                continue;
            }
            if (l.parent >= 0) link_twist_of_data(d, st, l.parent, Vp);
            const Vec3 w = top(Vi) - transpose(st.T[i].R) * top(Vp);  // relative angular velocity
            st.dq[l.iv] = w.x, st.dq[l.iv + 1] = w.y, st.dq[l.iv + 2] = w.z;
        }
        tree_link_twists(t, st.q.data(), st.dq.data(), reinterpret_cast<V6*>(st.V.data()));
        forces(m, d, st);
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            const double* Vi = &st.V[6 * i];
            const Vec3 Jw = l.inertia * top(Vi);
            double* p = &st.pi[6 * i];
            set6(p, Jw, l.mass * bot(Vi));
            for (int k = 0; k < 6; ++k) p[k] -= 0.5 * h * st.F[6 * i + k];
            if (l.type == TreeJoint::screw) {
                st.qm[l.iq] = st.q[l.iq] - h * st.dq[l.iv];
                st.Qminus[l.iv] = 0;
                continue;
            }
            double back[6];
            for (int k = 0; k < l.nv; ++k) back[k] = -h * st.dq[l.iv + k];
            link_retract(l, &st.q[l.iq], back, &st.qm[l.iq]);
        }
        st.dt_prev = h;
        st.started = true;
    }
    // The twist of link i (link frame) from the body twists of Data (ω body frame, v of the
    // centre of mass in the world); needs kinematics().
    static void link_twist_of_data(const Data& d, const State& st, int i, double* V) {
        const TreeView& t = st.tree;
        const int b = t.links[i].body;
        const Frame& O = t.body_offset[b];
        const Vec3 wb = d.twist[b].w;
        const Frame& g = st.g[i];
        const Vec3 ww = rotation(d.pose[b].q) * wb;
        const Vec3 v = d.twist[b].v + cross(ww, g.p - d.pose[b].x);
        set6(V, O.R * wb, transpose(g.R) * v);
    }
    // Joint inputs of the step: torques and the (h/2)·damping added to the RIQN matrix.
    static void set_inputs(const Data& d, State& st, double h) {
        for (const TreeLink& l : st.tree.links) {
            if (l.type != TreeJoint::screw) continue;
            st.tau[l.iv] = d.actuation[l.dof];
            st.kd[l.iv] = 0.5 * h * l.damping;
        }
    }
    static double offset(const Model& m, const TreeLink& l) {
        const JointInfo& j = m.joints[l.joint];
        return j.offset.empty() ? 0 : j.offset[0];
    }

    // A change of step length h → h' at node k in momentum form (riqn.md §5.5): the node takes
    // (h/2 + h'/2) of its forcing, so the carried terms move by δ = (h − h')/2 of the node's
    // forcing: π ← π + δ·F(q_k) (gravity, body forces), Qminus ← Qminus + δ·τ_spring(q_k).
    static void shift_momentum(const Model& m, const Data& d, State& st, double delta) {
        kinematics(m, d, st);
        forces(m, d, st);
        for (std::size_t k = 0; k < st.pi.size(); ++k) st.pi[k] += delta * st.F[k];
        for (const TreeLink& l : st.tree.links)
            if (l.type == TreeJoint::screw) st.Qminus[l.iv] += delta * (-l.stiffness * (st.q[l.iq] - l.rest));
    }

    // ---- one step of length h ------------------------------------------------------------

    Attempt substep(const Model& m, const Data& d, State& st, double h) const {
        const TreeView& t = st.tree;
        const int n = t.size();
        if (!st.fresh) kinematics(m, d, st);
        forces(m, d, st);
        set_inputs(d, st, h);
        tree_abi_setup(t, st.T.data(), st.kd.data(), st.abi);
        guess(st, h);
        Attempt out;
        const double tol = m.options.tolerance;
        for (int it = 0;; ++it) {
            const double rn = drnea(m, st, h, &out.worst_node);
            out.residual = rn;
            out.iterations = it;
            if (!std::isfinite(rn)) {
                out.status = rn == INFINITY ? StepStatus::rotation_limit : StepStatus::non_finite;
                return out;
            }
            if (rn <= tol) break;
            double far = 0;  // screw coordinates (rotations are bounded by the π check of drnea)
            for (int i = 0; i < n; ++i) {
                const TreeLink& l = t.links[i];
                if (l.type == TreeJoint::screw) far = std::max(far, std::fabs(st.qp[l.iq] - st.q[l.iq]));
            }
            if (it == m.options.max_iterations || far > 3) {
                out.status = far > 3 ? StepStatus::diverged : StepStatus::not_converged;
                return out;
            }
            if (st.opt.exact) {
                if (!exact_step(st, h)) {
                    out.status = StepStatus::singular;
                    return out;
                }
            } else {
                for (int k = 0; k < t.nv; ++k) st.u[k] = -h * st.r[k];
                tree_abi_solve(t, st.T.data(), st.abi, st.u.data(), st.dq.data());
            }
            double step = 0;
            for (int i = 0; i < n; ++i) {
                const TreeLink& l = t.links[i];
                if (l.type == TreeJoint::screw) st.qp[l.iq] += st.dq[l.iv];
                else link_retract(l, &st.qp[l.iq], &st.dq[l.iv], &st.qp[l.iq]);
            }
            for (int k = 0; k < t.nv; ++k) step = std::max(step, std::fabs(st.dq[k]));
            if (step <= st.opt.step_tolerance) {  // the residual is at its round-off floor
                out.iterations = it + 1;
                out.residual = drnea(m, st, h, &out.worst_node);
                if (!std::isfinite(out.residual)) {
                    out.status = StepStatus::non_finite;
                    return out;
                }
                break;
            }
        }
        out.worst_node = -1;
        commit(st, h);
        return out;
    }

    // DRNEA (riqn.md §4): the residual r(q⁺) into st.r, f_i and μ_i kept for the commit.
    // Returns ‖r‖₂, or +inf when a link would turn by π or more in one step.
    double drnea(const Model& m, State& st, double h, int* worst) const {
        const TreeView& t = st.tree;
        const int n = t.size();
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            const Frame Tp = l.type == TreeJoint::screw ? link_transform(l, st.qp[l.iq]) : link_transform(l, &st.qp[l.iq]);
            const Frame& Ti = st.Ti[i];
            st.f[i] = l.parent >= 0 ? Ti * (st.f[l.parent] * Tp) : Ti * Tp;
            double x[6];
            const double th = se3_log(st.f[i], x);
            if (!(th < 3.1)) return INFINITY;
            double* mu = &st.mu[6 * i];
            momentum(x, l.inertia, l.mass, h, mu);
            double* G = &st.Gam[6 * i];
            for (int k = 0; k < 6; ++k) G[k] = mu[k] - st.pi[6 * i + k] - h * st.F[6 * i + k];
        }
        double rn = 0, worst_r = -1;
        for (int i = n - 1; i >= 0; --i) {
            const TreeLink& l = t.links[i];
            const double* G = &st.Gam[6 * i];
            if (l.type == TreeJoint::screw) {
                const double spring = -l.stiffness * (st.q[l.iq] - l.rest);
                const double ri = dot6(l.S, G) - st.Qminus[l.iv] - 0.5 * h * st.tau[l.iv] - h * spring +
                                  0.5 * l.damping * (st.qp[l.iq] - st.q[l.iq]);
                st.r[l.iv] = ri;
                rn += ri * ri;
                if (std::fabs(ri) > worst_r) worst_r = std::fabs(ri), *worst = m.nbodies() + l.joint;
            } else {  // ball: Sᵀ Γ; free: Γ (their forcing is in F)
                for (int c = 0; c < l.nv; ++c) {
                    double sc[6];
                    link_motion(l, c, sc);
                    const double ri = dot6(sc, G);
                    st.r[l.iv + c] = ri;
                    rn += ri * ri;
                    if (std::fabs(ri) > worst_r) worst_r = std::fabs(ri), *worst = l.joint >= 0 ? m.nbodies() + l.joint : l.body;
                }
            }
            if (l.parent >= 0) {
                double w[6];
                wrench_to_parent(st.T[i], G, w);
                double* Gp = &st.Gam[6 * l.parent];
                for (int k = 0; k < 6; ++k) Gp[k] += w[k];
            }
        }
        return std::sqrt(rn);
    }

    // Initial guess for q⁺ (riqn.md §6).
    static void guess(State& st, double h) {
        const TreeView& t = st.tree;
        const int n = t.size();
        if (st.opt.guess == Guess::position) {
            st.qp = st.q;
            return;
        }
        for (int i = 0; i < n; ++i) {  // q̇_k
            const TreeLink& l = t.links[i];
            if (l.type == TreeJoint::screw) {
                st.dq[l.iv] = (st.q[l.iq] - st.qm[l.iq]) / st.dt_prev;
                continue;
            }
            link_difference(l, &st.qm[l.iq], &st.q[l.iq], &st.dq[l.iv]);
            for (int k = 0; k < l.nv; ++k) st.dq[l.iv + k] /= st.dt_prev;
        }
        const bool accel = st.opt.guess == Guess::acceleration;
        if (accel) forward_dynamics(st);  // q̈ into st.u
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            if (l.type == TreeJoint::screw) {
                st.qp[l.iq] = accel ? st.q[l.iq] + h * (st.dq[l.iv] + h * st.u[l.iv]) : st.q[l.iq] + h * st.dq[l.iv];
                continue;
            }
            double v[6];
            for (int k = 0; k < l.nv; ++k) v[k] = h * (st.dq[l.iv + k] + (accel ? h * st.u[l.iv + k] : 0.0));
            link_retract(l, &st.q[l.iq], v, &st.qp[l.iq]);
        }
    }

    // Continuous forward dynamics at (q_k, q̇_k = st.dq): q̈ into st.u. The articulated-body
    // algorithm in link frames; forcing: gravity and body forces (st.F), joint inputs, springs and
    // dampers (explicit here: this is only the initial guess).
    static void forward_dynamics(State& st) {
        const TreeView& t = st.tree;
        const int n = t.size();
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            double* Vi = &st.V[6 * i];
            if (l.parent >= 0) twist_to_child(st.T[i], &st.V[6 * l.parent], Vi);
            else std::fill(Vi, Vi + 6, 0.0);
            const Vec3 wp = top(Vi), vp = bot(Vi);  // the part carried from the parent
            double Sq[6];  // S_i q̇_i
            if (l.type == TreeJoint::screw) {
                for (int k = 0; k < 6; ++k) Sq[k] = l.S[k] * st.dq[l.iv];
            } else {
                std::fill(Sq, Sq + 6, 0.0);
                for (int c = 0; c < l.nv; ++c) {
                    double sc[6];
                    link_motion(l, c, sc);
                    for (int k = 0; k < 6; ++k) Sq[k] += sc[k] * st.dq[l.iv + c];
                }
            }
            for (int k = 0; k < 6; ++k) Vi[k] += Sq[k];
            // c_i = ad_{V_i} S_i q̇_i (= ad of the carried part, since ad_x x = 0)
            const Vec3 sw = top(Sq), sv = bot(Sq);
            set6(&st.c[6 * i], cross(wp, sw), cross(vp, sw) + cross(wp, sv));
            // bias wrench −ad_Vᵀ G V − F
            const Vec3 w = top(Vi), v = bot(Vi);
            const Vec3 Jw = l.inertia * w, mv = l.mass * v;
            double* p = &st.pA[6 * i];
            set6(p, cross(w, Jw) + cross(v, mv), cross(w, mv));
            for (int k = 0; k < 6; ++k) p[k] -= st.F[6 * i + k];
        }
        // The articulated inertias are those of the impulse ABI already built for this step
        // (M(q_k) + (h/2)·D: with dampers the guess's acceleration is that of an implicit damper).
        for (int i = n - 1; i >= 0; --i) {
            const TreeLink& l = t.links[i];
            const double* U = &st.abi.U[6 * l.iv];
            const double* IA = &st.abi.IA[36 * i];
            const double* c = &st.c[6 * i];
            double pa[6], o[6];
            if (l.type == TreeJoint::screw) {
                const double Di = st.abi.D[l.id];
                const double tau = st.tau[l.iv] - l.stiffness * (st.q[l.iq] - l.rest) - l.damping * st.dq[l.iv];
                const double ui = tau - dot6(l.S, &st.pA[6 * i]);
                st.fdu[l.iv] = ui;
                if (l.parent < 0) continue;
                const double Uc = dot6(U, c);
                for (int k = 0; k < 6; ++k) pa[k] = st.pA[6 * i + k] + dot6(&IA[6 * k], c) + U[k] * (ui - Uc) / Di;
            } else {  // no joint forces here: a ball's actuation and springs are in F
                const int nv = l.nv;
                const double* Dinv = &st.abi.D[l.id];
                double y[6];
                for (int e = 0; e < nv; ++e) {
                    double sc[6];
                    link_motion(l, e, sc);
                    st.fdu[l.iv + e] = -dot6(sc, &st.pA[6 * i]);
                    y[e] = st.fdu[l.iv + e] - dot6(&U[6 * e], c);
                }
                if (l.parent < 0) continue;
                for (int k = 0; k < 6; ++k) pa[k] = st.pA[6 * i + k] + dot6(&IA[6 * k], c);
                for (int e = 0; e < nv; ++e) {
                    double z = 0;
                    for (int f = 0; f < nv; ++f) z += Dinv[e * nv + f] * y[f];
                    for (int k = 0; k < 6; ++k) pa[k] += U[6 * e + k] * z;
                }
            }
            wrench_to_parent(st.T[i], pa, o);
            for (int k = 0; k < 6; ++k) st.pA[6 * l.parent + k] += o[k];
        }
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            double* a = &st.dV[6 * i];
            if (l.parent >= 0) twist_to_child(st.T[i], &st.dV[6 * l.parent], a);
            else std::fill(a, a + 6, 0.0);
            for (int k = 0; k < 6; ++k) a[k] += st.c[6 * i + k];
            if (l.type == TreeJoint::screw) {
                const double qdd = (st.fdu[l.iv] - dot6(&st.abi.U[6 * l.iv], a)) / st.abi.D[l.id];
                st.u[l.iv] = qdd;
                for (int k = 0; k < 6; ++k) a[k] += l.S[k] * qdd;
                continue;
            }
            const int nv = l.nv;
            const double* Dinv = &st.abi.D[l.id];
            double y[6];
            for (int e = 0; e < nv; ++e) y[e] = st.fdu[l.iv + e] - dot6(&st.abi.U[6 * (l.iv + e)], a);
            for (int e = 0; e < nv; ++e) {
                double z = 0;
                for (int f = 0; f < nv; ++f) z += Dinv[e * nv + f] * y[f];
                st.u[l.iv + e] = z;
                double sc[6];
                link_motion(l, e, sc);
                for (int k = 0; k < 6; ++k) a[k] += sc[k] * z;
            }
        }
    }

    // Exact Newton step (riqn.md §5.4): Δq = −(∂r/∂q⁺)⁻¹ r into st.dq, with
    //   ∂r/∂q⁺ = Σ_i J_i(q_k)ᵀ B_i J_i(q⁺) + D/2,   B_i = (∂μ_i/∂x_i) · dexp⁻¹_{x_i} · Ad_{f_i},
    // J_i the body Jacobian of link i, ∂μ/∂x by complex-step differentiation (exact to round-off).
    // Dense, O(n·depth²) to build and O(n³) to solve: for comparison, not for speed.
    static bool exact_step(State& st, double h) {
        const TreeView& t = st.tree;
        const int n = t.size();
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            const Frame Tp = link_transform(l, &st.qp[l.iq]);
            st.gp[i] = l.parent >= 0 ? st.gp[l.parent] * Tp : Tp;
        }
        st.K.setZero();
        for (int i = 0; i < n; ++i) {
            const TreeLink& li = t.links[i];
            double x[6];
            se3_log(st.f[i], x);
            Eigen::Matrix<double, 6, 6> dmu, ad, Dinv, Adf;
            constexpr double eps = 1e-30;
            for (int k = 0; k < 6; ++k) {
                std::complex<double> xc[6], mc[6];
                for (int a = 0; a < 6; ++a) xc[a] = x[a];
                xc[k] += std::complex<double>(0, eps);
                momentum(xc, li.inertia, li.mass, h, mc);
                for (int a = 0; a < 6; ++a) dmu(a, k) = mc[a].imag() / eps;
            }
            const Mat3 P = skew(top(x)), Q = skew(bot(x));
            ad.setZero();
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) {
                    ad(a, b) = ad(a + 3, b + 3) = P(a, b);
                    ad(a + 3, b) = Q(a, b);
                }
            double th = norm(top(x)), ca, cb;
            dexpinv_coeffs(th, ca, cb);
            const Eigen::Matrix<double, 6, 6> ad2 = ad * ad;
            Dinv = Eigen::Matrix<double, 6, 6>::Identity() - 0.5 * ad + ca * ad2 + cb * ad2 * ad2;
            const Frame& f = st.f[i];
            const Mat3 pR = skew(f.p) * f.R;
            Adf.setZero();
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) {
                    Adf(a, b) = Adf(a + 3, b + 3) = f.R(a, b);
                    Adf(a + 3, b) = pR(a, b);
                }
            const Eigen::Matrix<double, 6, 6> B = dmu * Dinv * Adf;
            // Jacobian columns of the ancestors j of i (and i): Ad_{g_i⁻¹ g_j} S_j at q_k and at q⁺
            // (for ball and free links, one column per velocity: T(q ⊕ v) = T(q) exp(S v)).
            const Frame gi_k = inverse(st.g[i]), gi_p = inverse(st.gp[i]);
            for (int j = i; j >= 0; j = t.links[j].parent) {
                const TreeLink& lj = t.links[j];
                const Frame ak = gi_k * st.g[j], ap = gi_p * st.gp[j];
                for (int e = 0; e < lj.nv; ++e) {
                    double sc[6], ck[6], cp[6];
                    link_motion(lj, e, sc);
                    ad_apply(ak, sc, ck);
                    ad_apply(ap, sc, cp);
                    Eigen::Map<const Eigen::Matrix<double, 6, 1>> Ck(ck), Cp(cp);
                    st.Jk.col(lj.iv + e) = Ck;
                    st.Jp.col(lj.iv + e) = Cp;
                }
            }
            for (int j = i; j >= 0; j = t.links[j].parent)
                for (int a = t.links[j].iv; a < t.links[j].iv + t.links[j].nv; ++a) {
                    const Eigen::Matrix<double, 1, 6> row = st.Jk.col(a).transpose() * B;
                    for (int k = i; k >= 0; k = t.links[k].parent)
                        for (int b = t.links[k].iv; b < t.links[k].iv + t.links[k].nv; ++b) st.K(a, b) += row.dot(st.Jp.col(b));
                }
        }
        for (const TreeLink& l : t.links)
            if (l.type == TreeJoint::screw) st.K(l.iv, l.iv) += 0.5 * l.damping;
        for (int k = 0; k < t.nv; ++k) st.kr(k) = -st.r[k];
        st.lu.compute(st.K);
        // Singular or not finite: judged from the pivots (rcond() would allocate in the step).
        const auto piv = st.lu.matrixLU().diagonal().cwiseAbs();
        if (!(piv.minCoeff() > 1e-14 * piv.maxCoeff())) return false;
        Eigen::Map<Eigen::VectorXd> dq(st.dq.data(), t.nv);
        dq.noalias() = st.lu.solve(st.kr);
        return true;
    }

    static void commit(State& st, double h) {
        const TreeView& t = st.tree;
        const int n = t.size();
        for (int i = 0; i < n; ++i) {
            wrench_to_next(st.f[i], &st.mu[6 * i], &st.pi[6 * i]);
            const TreeLink& l = t.links[i];
            if (l.type == TreeJoint::screw)
                st.Qminus[l.iv] = 0.5 * h * st.tau[l.iv] - 0.5 * l.damping * (st.qp[l.iq] - st.q[l.iq]);
        }
        st.qm.swap(st.q);
        st.q = st.qp;
        st.dt_prev = h;
        st.prev_pose.swap(st.bp);  // the body poses at the new q_{k−1}, for the write-back
        st.fresh = false;
    }

    // Body poses at q_k and the discrete twists of the interval (q_{k−1}, q_k) into Data
    // (riqn.md §7.3).
    static void write_back(const Model& m, Data& d, State& st) {
        const double h = st.dt_prev;
        kinematics(m, d, st);  // poses at the new q_k (signs continuous with the old ones)
        for (int b = 0; b < m.nbodies(); ++b) {
            d.pose[b] = st.bp[b];
            const Pose& p2 = d.pose[b];
            Quat q1 = st.prev_pose[b].q;
            if (q1.w * p2.q.w + q1.x * p2.q.x + q1.y * p2.q.y + q1.z * p2.q.z < 0) q1 = {-q1.w, -q1.x, -q1.y, -q1.z};
            const Quat rel = conj(q1) * p2.q;
            d.twist[b].v = (p2.x - st.prev_pose[b].x) / h;
            d.twist[b].w = (2.0 / h) * rel.vec();
            d.twist_guess[b] = d.twist[b];
        }
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_INTEGRATOR, "riqn",
               "second-order variational integrator in joint coordinates, linear time per iteration (paper 001)", Riqn)
