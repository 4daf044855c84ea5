// Explicit Runge–Kutta in joint coordinates, for trees of screw joints (revolute, prismatic,
// helical): two configured instances of one class, exported by this one library:
//   rk4-joint   classical Runge–Kutta (order 4), one step of dt (MuJoCo's "RK4" in kind)
//   dp45-joint  Dormand–Prince 5(4) with step-size control (FSAL within a step, and across steps
//               while the inputs are unchanged), internal steps of at most dt, the last one ending
//               on the step's end
// The state is y = (q, q̇) of the kernel's tree view (noether/sdk/tree.hpp); each stage is one
// forward dynamics q̈ = M(q)⁻¹ (τ − C(q, q̇) q̇ + forces) by the articulated-body algorithm in O(n):
//   forward    link transforms T_i(q_i), world poses g_i (gravity's direction), link twists V_i
//              and the velocity-product accelerations c_i = V_i × S_i q̇_i
//   backward   articulated inertias and bias wrenches together: U_i = IA_i S_i, D_i = S_iᵀ U_i,
//              u_i = τ_i − S_iᵀ p_i^A, Ia_i = IA_i − U_i U_iᵀ / D_i; IA_parent += X_iᵀ Ia_i X_i,
//              p_parent^A += X_iᵀ (p_i^A + Ia_i c_i + U_i u_i / D_i) (IA_i from the link's spatial
//              inertia, p_i = V_i ×* I_i V_i − F_i)
//   forward    a_i = X_i a_parent + c_i, q̈_i = (u_i − U_iᵀ a_i) / D_i, a_i += S_i q̈_i
// (X_i = Ad_{T_i⁻¹}: the child's twist from the parent's.)
// Forces: gravity, the Model's body forces and the inputs of Data (applied force and torque,
// actuation), joint springs and dampers, servos (docs/servos.md) — all explicit: a stiff spring,
// damper or servo needs a step below its time scale, as in any explicit method.
// Not variational: the energy drifts (slowly, at the order of the method); the variational
// integrators (vi-maximal, riqn, vi-galerkin) keep it bounded over long runs. Ball joints, free
// roots, loops, couplings, contacts, limits and armature are refused at compile time, naming the
// integrators that take them.
// dp45-joint's error test: per component |e_i| ≤ atol + rtol·s_i, with s_i the larger of |y_i| at
// the two ends of the step for a rate or a prismatic position, and 1 for an angle (an angle's size
// says nothing about the precision it needs: a joint wound up many turns is not integrated more
// loosely); the step is accepted when the root mean square of e_i / (atol + rtol·s_i) is ≤ 1.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "noether/data.hpp"
#include "noether/model.hpp"
#include "noether/sdk/dormand_prince.hpp"
#include "noether/sdk/integrator.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/spatial.hpp"
#include "noether/sdk/tree.hpp"

namespace {

using namespace noether;

enum class Method { rk4, dp45 };

const char* method_name(Method m) { return m == Method::rk4 ? "rk4-joint" : "dp45-joint"; }

struct State final : IntegratorState {
    // Carried between steps (saved): q (raw joint coordinates, TreeView order) and q̇, and the
    // step size dp45-joint proposes next.
    bool started = false;
    double h_next = 0;
    std::vector<double> q, v;
    // Setup and workspaces (sized once).
    TreeView tree;  // moved to origin.c when far from the world's origin (tree_rebase_far)
    TreeOrigin origin;
    bool any_forcing = false;  // body forces of the Model (inputs are checked per step)
    std::vector<Frame> T, g;
    std::vector<double> I0, IA, U, D;  // per link: spatial inertia (constant), articulated inertia (36), U (6), D
    std::vector<double> V, c, pA, dV, F, tau, fdu;  // 6 per link (V, c, pA, dV, F), 1 per link
    std::vector<ServoTerms> servo;
    bool any_servo = false;
    std::vector<Pose> bp;
    std::vector<Wrench> bw;
    // Runge–Kutta: the step's start, a stage's state, stage derivatives (q̇ and q̈ per stage).
    std::vector<double> q0, v0, qs, vs, kq[7], kv[7];
    // dp45-joint: stage 0 (kq[0], kv[0]) is already evaluated at (q, v) for the inputs in_* (the last
    // step's seventh stage; not saved: a restored state evaluates it again, to the same bits).
    bool fsal = false;
    std::vector<double> in_act;
    std::vector<Vec3> in_force, in_torque;
    // The step's start of what save() writes: the method undoes its own failed steps
    // (Integrator::rolls_back_itself(); advance()).
    bool started_entry = false;
    double h_entry = 0;
    std::vector<double> q_entry, v_entry;

    std::size_t saved_size() const { return 1 + sizeof h_next + sizeof(double) * (q.size() + v.size()); }
    void save(std::string& out) const override {
        StateWriter w(out, saved_size());
        w.value(static_cast<char>(started ? 1 : 0));
        w.value(h_next);
        w.values(q);
        w.values(v);
    }
    bool restore(const char*& p, const char* end) override {
        if (static_cast<std::size_t>(end - p) < saved_size()) return false;
        started = *p++ != 0;
        fsal = false;
        restore_value(p, h_next);
        restore_values(p, q);
        restore_values(p, v);
        return true;
    }
    // The method's own rollback (advance()): what save() writes, kept at the step's start, and
    // back to it as restore() of those bytes would.
    void keep_entry() {
        started_entry = started;
        h_entry = h_next;
        std::copy(q.begin(), q.end(), q_entry.begin());
        std::copy(v.begin(), v.end(), v_entry.begin());
    }
    void back_to_entry() {
        started = started_entry;
        fsal = false;
        h_next = h_entry;
        std::copy(q_entry.begin(), q_entry.end(), q.begin());
        std::copy(v_entry.begin(), v_entry.end(), v.begin());
    }
};

class JointRK final : public Integrator {
public:
    explicit JointRK(Method method) : kMethod(method) {}
    Scheme scheme() const override { return kMethod == Method::dp45 ? Scheme::adaptive : Scheme::explicit_fixed; }
    std::vector<std::string> option_names() const override {
        if (kMethod != Method::dp45) return {};
        return {std::begin(dp45::kOptionNames), std::end(dp45::kOptionNames)};
    }

    void check(const Model& m, std::vector<Diagnostic>& out) const override {
        const char* name = method_name(kMethod);
        refuse_armature(m, name, out);
        TreeView t;
        if (build_tree_view(m, name, t, out))
            for (const TreeLink& l : t.links) {
                if (l.type == TreeJoint::screw) continue;
                const bool free = l.type == TreeJoint::free;
                const std::string what = free ? "body '" + m.bodies[l.body].name + "' is a free root"
                                              : "joint '" + m.joints[l.joint].name + "' is a ball joint";
                out.push_back({Severity::error, free ? m.bodies[l.body].origin : m.joints[l.joint].origin,
                               std::string(name) + ": " + what + "; " + name +
                                   " takes trees of screw joints (revolute, prismatic, helical); riqn, vi-galerkin, "
                                   "vi-maximal, vi-midpoint and dp45-projection take ball joints and free bodies"});
                break;
            }
        for (const JointInfo& j : m.joints) {
            if (j.servo == ServoSpec::Kind::none) continue;
            out.push_back({Severity::warning, j.origin,
                           "joint '" + j.name + "': " + name +
                               " applies servos explicitly, stable only while their time scales (I/kv, sqrt(I/kp) for the "
                               "inertia I the joint moves) are resolved by the step; vi-maximal, vi-midpoint, riqn and "
                               "vi-galerkin integrate servos inside the step at any gains"});
            break;
        }
        if (kMethod != Method::dp45) return;
        dp45::check_options(m, name, out);
    }

    std::unique_ptr<IntegratorState> create_state(const Model& m) const override {
        auto st = std::make_unique<State>();
        std::vector<Diagnostic> errors;
        if (!build_tree_view(m, method_name(kMethod), st->tree, errors)) throw ModelError(errors);
        st->origin = tree_rebase_far(m, st->tree);
        const std::size_t n = static_cast<std::size_t>(st->tree.size());
        for (auto* v : {&st->q, &st->v, &st->tau, &st->fdu, &st->q0, &st->v0, &st->qs, &st->vs, &st->q_entry, &st->v_entry})
            v->assign(n, 0.0);
        for (int s = 0; s < 7; ++s) st->kq[s].assign(n, 0.0), st->kv[s].assign(n, 0.0);
        for (auto* v : {&st->V, &st->c, &st->pA, &st->dV, &st->F, &st->U}) v->assign(6 * n, 0.0);
        st->IA.assign(36 * n, 0.0);
        st->D.assign(n, 0.0);
        st->I0.assign(36 * n, 0.0);
        for (std::size_t i = 0; i < n; ++i) spatial_inertia(st->tree.links[i], &st->I0[36 * i]);
        st->T.assign(n, Frame{});
        st->g.assign(n, Frame{});
        st->servo.assign(n, ServoTerms{});
        st->any_servo = m.servos > 0;
        st->any_forcing = !m.forces.empty();
        st->bp.assign(m.nbodies(), Pose{});
        st->bw.assign(m.nbodies(), Wrench{});
        st->in_act.assign(m.total_dofs, 0.0);
        st->in_force.assign(m.nbodies(), Vec3{});
        st->in_torque.assign(m.nbodies(), Vec3{});
        return st;
    }

    StepReport advance(const Model& m, Data& d) const override {
        State& st = static_cast<State&>(*d.integrator_state);
        const double dt = m.options.dt;
        // Its own rollback: Data is written only after a successful step (write_back()), so a
        // failed one returns to the saved part of the state as at the start, with fsal off, as the
        // kernel's restore of its snapshot did (the same bits).
        st.keep_entry();
        return undone_on_failure(
            [&] {
                if (!st.started || d.host_changed()) start(m, d, st), st.fsal = false;
                inputs(m, d, st);
                StepReport r;
                r.status = kMethod == Method::rk4 ? rk4(m, d, st, dt) : dp45(m, d, st, dt, r);
                if (kMethod == Method::dp45) r.substeps = static_cast<int>(std::max<std::int64_t>(1, r.internal_steps));
                // (dp45-joint's last forward dynamics, the seventh stage, was at the new state: its
                // link transforms, poses and twists are those to write.)
                if (r.status == StepStatus::ok) r.coordinates = write_back(m, d, st, kMethod == Method::dp45);
                return r;
            },
            [&st] { st.back_to_entry(); });
    }
    // A failed step (or a throw) leaves Data and the state as they were (advance()): the kernel
    // takes no step snapshot.
    bool rolls_back_itself() const override { return true; }

private:
    // The tree's coordinates from Data: angles from the body poses, unwrapped against Data::coord;
    // rates from Data::rate.
    static void start(const Model& m, const Data& d, State& st) {
        const TreeView& t = st.tree;
        std::vector<double>& prev = st.qs;  // scratch
        for (const TreeLink& l : t.links) prev[l.iq] = d.coord[l.dof] - tree_link_offset(m, l);
        tree_coordinates(t, st.origin.view_poses(d.pose, st.bp), prev.data(), st.q.data());  // (st.bp: scratch)
        for (const TreeLink& l : t.links) st.v[l.iv] = d.rate[l.dof];
        st.started = true;
    }

    // Joint inputs of the step (constant over it): actuation and servos in raw coordinates.
    static void inputs(const Model& m, const Data& d, State& st) {
        for (const TreeLink& l : st.tree.links) {
            st.tau[l.iv] = d.actuation[l.dof];
            if (!st.any_servo) continue;
            ServoTerms s = servo_terms(m, d, l.joint);
            s.target -= tree_link_offset(m, l);
            st.servo[l.iv] = s;
        }
    }

    // q̈ at (q, qd) into qdd; false if it is not finite.
    static bool forward_dynamics(const Model& m, const Data& d, State& st, const double* q, const double* qd,
                                 double* qdd) {
        const TreeView& t = st.tree;
        const int n = t.size();
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            st.T[i] = link_transform(l, q[i]);
            st.g[i] = l.parent >= 0 ? st.g[l.parent] * st.T[i] : st.T[i];
            double* Vi = &st.V[6 * i];
            if (l.parent >= 0) twist_to_child(st.T[i], &st.V[6 * l.parent], Vi);
            else std::fill(Vi, Vi + 6, 0.0);
            const Vec3 wp = top(Vi), vp = bot(Vi);  // the part carried from the parent
            double Sq[6];
            for (int k = 0; k < 6; ++k) Sq[k] = l.S[k] * qd[i];
            for (int k = 0; k < 6; ++k) Vi[k] += Sq[k];
            // c_i = V_i × S_i q̇_i (= the carried part's, since V × V = 0)
            const Vec3 sw = top(Sq), sv = bot(Sq);
            set6(&st.c[6 * i], cross(wp, sw), cross(vp, sw) + cross(wp, sv));
            set6(&st.F[6 * i], Vec3{}, l.mass * (transpose(st.g[i].R) * m.gravity));
        }
        if (st.any_forcing || d.any_applied_wrench()) {
            tree_body_poses(t, st.g.data(), d.pose.data(), st.bp.data());
            st.origin.to_world(st.bp);
            body_wrenches(m, d.inputs(), st.bp.data(), st.bw.data());
            tree_add_body_wrenches(t, st.g.data(), st.bw.data(), st.F.data());
        }
        for (int i = 0; i < n; ++i) {  // bias wrenches V ×* I V − F, articulated inertias from the links'
            const TreeLink& l = t.links[i];
            const double* Vi = &st.V[6 * i];
            const Vec3 w = top(Vi), vl = bot(Vi);
            const Vec3 Jw = l.inertia * w, mv = l.mass * vl;
            double* p = &st.pA[6 * i];
            set6(p, cross(w, Jw) + cross(vl, mv), cross(w, mv));
            for (int k = 0; k < 6; ++k) p[k] -= st.F[6 * i + k];
            std::copy_n(&st.I0[36 * i], 36, &st.IA[36 * i]);
        }
        for (int i = n - 1; i >= 0; --i) {
            const TreeLink& l = t.links[i];
            double* U = &st.U[6 * i];
            const double* IA = &st.IA[36 * i];
            const double* c = &st.c[6 * i];
            for (int k = 0; k < 6; ++k) U[k] = dot6(&IA[6 * k], l.S);
            const double Di = dot6(l.S, U);
            st.D[i] = Di;
            double tau = st.tau[i] - l.stiffness * (q[i] - l.rest) - l.damping * qd[i];
            if (st.any_servo) {
                const ServoTerms& s = st.servo[i];
                tau += s.force - s.kp * (q[i] - s.target) - s.kv * qd[i];
            }
            const double ui = tau - dot6(l.S, &st.pA[6 * i]);
            st.fdu[i] = ui;
            if (l.parent < 0) continue;
            double Ia[36], pa[6], o[6], Ud[6];
            const double inv = 1.0 / Di;
            for (int k = 0; k < 6; ++k) Ud[k] = U[k] * inv;
            for (int a = 0; a < 6; ++a)
                for (int b = 0; b < 6; ++b) Ia[6 * a + b] = IA[6 * a + b] - Ud[a] * U[b];
            for (int k = 0; k < 6; ++k) pa[k] = st.pA[6 * i + k] + dot6(&Ia[6 * k], c) + Ud[k] * ui;
            add_congruence_ad(st.T[i], Ia, &st.IA[36 * l.parent]);
            wrench_to_parent(st.T[i], pa, o);
            for (int k = 0; k < 6; ++k) st.pA[6 * l.parent + k] += o[k];
        }
        bool finite = true;
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            double* a = &st.dV[6 * i];
            if (l.parent >= 0) twist_to_child(st.T[i], &st.dV[6 * l.parent], a);
            else std::fill(a, a + 6, 0.0);
            for (int k = 0; k < 6; ++k) a[k] += st.c[6 * i + k];
            const double x = (st.fdu[i] - dot6(&st.U[6 * i], a)) / st.D[i];
            qdd[i] = x;
            finite = finite && std::isfinite(x);
            for (int k = 0; k < 6; ++k) a[k] += l.S[k] * x;
        }
        return finite;
    }

    // Stage s's derivative at (qs, vs): kq[s] = vs, kv[s] = q̈.
    static bool stage(const Model& m, const Data& d, State& st, int s, const double* q, const double* qd) {
        std::copy(qd, qd + st.tree.size(), st.kq[s].begin());
        return forward_dynamics(m, d, st, q, qd, st.kv[s].data());
    }

    // The stage state y0 + h Σ_r a_r k_r (r < s) into qs, vs.
    static void combine(State& st, int s, const double* a, double h) {
        const int n = st.tree.size();
        for (int i = 0; i < n; ++i) {
            double aq = 0, av = 0;
            for (int r = 0; r < s; ++r) aq += a[r] * st.kq[r][i], av += a[r] * st.kv[r][i];
            st.qs[i] = st.q0[i] + h * aq;
            st.vs[i] = st.v0[i] + h * av;
        }
    }

    StepStatus rk4(const Model& m, const Data& d, State& st, double h) const {
        static const double a[4][3] = {{0, 0, 0}, {0.5, 0, 0}, {0, 0.5, 0}, {0, 0, 1}};
        static const double b[4] = {1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6};
        st.q0 = st.q;
        st.v0 = st.v;
        if (!stage(m, d, st, 0, st.q0.data(), st.v0.data())) return StepStatus::non_finite;
        for (int s = 1; s < 4; ++s) {
            combine(st, s, a[s], h);
            if (!stage(m, d, st, s, st.qs.data(), st.vs.data())) return StepStatus::non_finite;
        }
        combine(st, 4, b, h);
        for (int i = 0; i < st.tree.size(); ++i)
            if (!std::isfinite(st.qs[i]) || !std::isfinite(st.vs[i])) return StepStatus::non_finite;
        st.q = st.qs;
        st.v = st.vs;
        return StepStatus::ok;
    }

    StepStatus dp45(const Model& m, const Data& d, State& st, double dt, StepReport& r) const {
        const auto& a = dp45::kA;
        const auto& e = dp45::kE;
        const dp45::Options o = dp45::options(m);
        const TreeView& t = st.tree;
        const int n = t.size();
        if (!(st.h_next > 0)) st.h_next = o.initial_step > 0 ? std::min(o.initial_step, dt) : dt;
        double left = dt;  // time still to go in this step
        // Stage 0 of an internal step: after an accepted one its stage 6 (FSAL), after a rejected
        // one the same as before (the inputs are constant over the step); at the step's start the
        // last step's stage 6 when the inputs it was evaluated with are those of this step (no
        // servo: their terms follow the state of Data).
        bool have0 = st.fsal && !st.any_servo && same_inputs(m, d, st);
        if (have0) st.q0 = st.q, st.v0 = st.v;
        st.fsal = false;
        double internal = 0;  // internal steps tried (o.max_internal_steps)
        while (left > 1e-14 * dt) {
            double h = std::min(st.h_next, left);
            const bool last = h >= left;
            if (h < 1e-12 * dt || ++internal > o.max_internal_steps) return StepStatus::not_converged;
            if (!have0) {
                st.q0 = st.q;
                st.v0 = st.v;
                if (!stage(m, d, st, 0, st.q0.data(), st.v0.data())) return StepStatus::non_finite;
                have0 = true;
            }
            bool finite = true;
            for (int s = 1; s < 7 && finite; ++s) {
                combine(st, s, a[s], h);
                finite = stage(m, d, st, s, st.qs.data(), st.vs.data());
            }
            // (qs, vs): the fifth-order solution, at which stage 6 was evaluated.
            double err2 = 0;
            for (int i = 0; i < n && finite; ++i) {
                double eq = 0, ev = 0;
                for (int s = 0; s < 7; ++s) eq += e[s] * st.kq[s][i], ev += e[s] * st.kv[s][i];
                const double sq = t.links[i].turns ? 1.0 : std::max(std::fabs(st.q0[i]), std::fabs(st.qs[i]));
                const double sv = std::max(std::fabs(st.v0[i]), std::fabs(st.vs[i]));
                const double rq = std::min(std::fabs(h * eq / (o.atol + o.rtol * sq)), 1e100);
                const double rv = std::min(std::fabs(h * ev / (o.atol + o.rtol * sv)), 1e100);
                err2 += rq * rq + rv * rv;
            }
            const double err = n > 0 ? std::sqrt(err2 / (2.0 * n)) : 0.0;
            if (!finite || !std::isfinite(err)) {  // too long a step can leave the finite range: shorter
                ++r.rejected_steps;
                st.h_next = 0.2 * h;
                continue;
            }
            const double fac = dp45::factor(err, o.fac_max);
            if (err <= 1) {
                ++r.internal_steps;
                st.q.swap(st.qs);
                st.v.swap(st.vs);
                st.q0 = st.q;
                st.v0 = st.v;
                st.kq[0].swap(st.kq[6]);
                st.kv[0].swap(st.kv[6]);
                left = last ? 0.0 : left - h;
                const double h_new = h * std::min(o.fac_max, std::max(0.2, fac));
                // A last step cut short to end on the step's end does not shrink the proposal.
                st.h_next = last ? std::max(st.h_next, h_new) : h_new;
            } else {
                ++r.rejected_steps;
                st.h_next = h * std::max(0.2, fac);
            }
        }
        st.fsal = have0;  // (kq[0], kv[0]: at the new (q, v))
        std::copy(d.actuation.begin(), d.actuation.end(), st.in_act.begin());
        std::copy(d.applied_force.begin(), d.applied_force.end(), st.in_force.begin());
        std::copy(d.applied_torque.begin(), d.applied_torque.end(), st.in_torque.begin());
        return StepStatus::ok;
    }

    // Whether Data's inputs are, bit for bit, those the last step ended with.
    static bool same_inputs(const Model& m, const Data& d, const State& st) {
        const std::size_t nb = sizeof(Vec3) * static_cast<std::size_t>(m.nbodies());
        return std::memcmp(d.actuation.data(), st.in_act.data(), sizeof(double) * d.actuation.size()) == 0 &&
               std::memcmp(d.applied_force.data(), st.in_force.data(), nb) == 0 &&
               std::memcmp(d.applied_torque.data(), st.in_torque.data(), nb) == 0;
    }

    // Body poses and continuous twists of the new state into Data.
    // With kinematics_at_q, st.g and st.V already hold the link poses and twists at (q, v).
    static bool write_back(const Model& m, Data& d, State& st, bool kinematics_at_q) {
        const TreeView& t = st.tree;
        const int n = t.size();
        if (!kinematics_at_q) {
            for (int i = 0; i < n; ++i) {
                const TreeLink& l = t.links[i];
                st.T[i] = link_transform(l, st.q[i]);
                st.g[i] = l.parent >= 0 ? st.g[l.parent] * st.T[i] : st.T[i];
            }
            tree_link_twists(t, st.T.data(), st.v.data(), reinterpret_cast<double(*)[6]>(st.V.data()));
        }
        tree_body_poses(t, st.g.data(), d.pose.data(), st.bp.data());
        st.origin.to_world(st.bp);
        for (int b = 0; b < m.nbodies(); ++b) {
            d.pose[b] = st.bp[b];
            const Twist tw = tree_body_twist(t, st.g.data(), reinterpret_cast<const double(*)[6]>(st.V.data()), b);
            d.twist[b] = tw;
            d.twist_guess[b] = tw;
        }
        // The joint coordinates and rates stepped: StepReport::coordinates (the tree is of screws
        // and holds every DOF: compile refuses others).
        return tree_write_coordinates(m, t, st.q.data(), st.v.data(), d);
    }

    Method kMethod;
};

}  // namespace

NOETHER_PLUGIN_LIST(
    NOETHER_PLUGIN_ENTRY(NOETHER_PLUGIN_INTEGRATOR, "rk4-joint",
                         "classical Runge-Kutta (order 4) in joint coordinates, trees of screw joints, articulated-body "
                         "forward dynamics",
                         JointRK, Method::rk4),
    NOETHER_PLUGIN_ENTRY(NOETHER_PLUGIN_INTEGRATOR, "dp45-joint",
                         "Dormand-Prince 5(4) with step-size control in joint coordinates, trees of screw joints",
                         JointRK, Method::dp45))
