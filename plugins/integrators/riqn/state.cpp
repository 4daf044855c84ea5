// riqn: kinematics and forces at the current configuration, the discrete Legendre start from Data
// (§7.2), the inputs, the momentum shift of a subdivided step, the commit and the write-back into
// Data (docs/design/riqn.md; layout in riqn.hpp).
#include "riqn.hpp"

namespace noether {
namespace riqn {

void Riqn::kinematics(const Model& m, const Data& d, State& st) {
    const TreeView& t = st.tree;
    // After commit(): the link transforms at q are those the last DRNEA made at q⁺ (st.Tq).
    const bool kept = st.tq_at_q;
    if (kept) st.T.swap(st.Tq);
    st.tq_at_q = false;
    for (int i = 0; i < t.size(); ++i) {
        const TreeLink& l = t.links[i];
        if (!kept) st.T[i] = l.type == TreeJoint::screw ? link_transform(l, st.q[l.iq]) : link_transform(l, &st.q[l.iq]);
        st.Ti[i] = inverse(st.T[i]);
        st.g[i] = l.parent >= 0 ? st.g[l.parent] * st.T[i] : st.T[i];
    }
    (void)m;
    tree_body_poses(t, st.g.data(), d.pose.data(), st.bp.data());
    st.origin.to_world(st.bp);  // (the view works about st.origin.c)
    st.fresh = true;
}

void Riqn::forces(const Model& m, const Data& d, State& st) {
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
    if (m.forces.empty() && !d.any_applied_wrench() && !ball_forcing) return;
    body_wrenches(m, d.inputs(), st.bp.data(), st.bw.data());
    if (ball_forcing)
        for (const TreeLink& l : t.links)
            if (l.type == TreeJoint::ball) add_joint_wrenches(m, d, d.inputs(), st.bp.data(), l.joint, st.bw.data());
    tree_add_body_wrenches(t, st.g.data(), st.bw.data(), st.F.data());
}

void Riqn::start(const Model& m, const Data& d, State& st, double h) {
    const TreeView& t = st.tree;
    const int n = t.size();
    st.tq_at_q = false;  // q is Data's now
    st.miss_count = 0;  // a new start: no guess has missed yet
    st.sec.drop();      // nor has an update been measured
    // Unwrap references: the joint coordinates of Data; quaternion signs: the last state.
    st.qm = st.q;
    for (const TreeLink& l : t.links)
        if (l.type == TreeJoint::screw) st.qm[l.iq] = d.coord[l.dof] - tree_link_offset(m, l);
    tree_coordinates(t, st.origin.view_poses(d.pose, st.bp), st.qm.data(), st.q.data());  // (st.bp: scratch here)
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
    tree_link_twists(t, st.T.data(), st.dq.data(), reinterpret_cast<V6*>(st.V.data()));  // (st.T: kinematics() at q)
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

void Riqn::link_twist_of_data(const Data& d, const State& st, int i, double* V) {
    const TreeView& t = st.tree;
    const int b = t.links[i].body;
    const Frame& O = t.body_offset[b];
    const Vec3 wb = d.twist[b].w;
    const Frame& g = st.g[i];
    const Vec3 ww = rotation(d.pose[b].q) * wb;
    const Vec3 v = d.twist[b].v + cross(ww, g.p - (d.pose[b].x - st.origin.c));
    set6(V, O.R * wb, transpose(g.R) * v);
}

void Riqn::set_inputs(const Model& m, const Data& d, State& st, double h) {
    for (const TreeLink& l : st.tree.links) {
        if (l.type != TreeJoint::screw) continue;
        st.tau[l.iv] = d.actuation[l.dof];
        st.kd[l.iv] = 0.5 * h * l.damping;
        if (!st.any_servo) continue;
        ServoTerms s = servo_terms(m, d, l.joint);
        s.target -= tree_link_offset(m, l);  // to raw coordinates, like l.rest
        st.servo[l.iv] = s;
        st.kd[l.iv] += h * (0.25 * h * s.kp + 0.5 * s.kv);  // h ∂r/∂q⁺ of its half impulse
    }
}

void Riqn::shift_momentum(const Model& m, const Data& d, State& st, double delta) {
    kinematics(m, d, st);
    forces(m, d, st);
    for (std::size_t k = 0; k < st.pi.size(); ++k) st.pi[k] += delta * st.F[k];
    for (const TreeLink& l : st.tree.links)
        if (l.type == TreeJoint::screw) st.Qminus[l.iv] += delta * (-l.stiffness * (st.q[l.iq] - l.rest));
}

void Riqn::commit(State& st, double h) {
    const TreeView& t = st.tree;
    const int n = t.size();
    for (int i = 0; i < n; ++i) {
        wrench_to_next(st.f[i], &st.mu[6 * i], &st.pi[6 * i]);
        const TreeLink& l = t.links[i];
        if (l.type == TreeJoint::screw) {
            st.Qminus[l.iv] = 0.5 * h * st.tau[l.iv] - 0.5 * l.damping * (st.qp[l.iq] - st.q[l.iq]);
            if (st.any_servo) st.Qminus[l.iv] += servo_half_impulse(st, l, h);
        }
    }
    if (st.opt.guess == Guess::feedback) {  // this substep's miss (guess())
        shift_misses(st.miss);  // (the oldest becomes the newest)
        double* e = st.miss[0].data();
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            if (l.type == TreeJoint::screw) e[l.iv] = st.qp[l.iq] - st.qguess[l.iq];
            else link_difference(l, &st.qguess[l.iq], &st.qp[l.iq], &e[l.iv]);
        }
        st.miss_count = misses_after_record(st.miss_count, st.miss_h == h);
        st.miss_h = h;
        // The degree for the next guess (a line while fewer are known; where the guess is already
        // within the tolerance, a lone pendulum, the line wins over the round-off the others amplify).
        st.miss_degree = best_miss_degree(st.miss, st.miss_count, 0, static_cast<std::size_t>(t.nv));
    }
    st.qm.swap(st.q);
    st.q = st.qp;
    st.tq_at_q = true;  // the last DRNEA was at this q⁺ (substep())
    st.dt_prev = h;
    st.prev_pose.swap(st.bp);  // the body poses at the new q_{k−1}, for the write-back
    st.fresh = false;
}

bool Riqn::write_back(const Model& m, Data& d, State& st) {
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
    // The joint coordinates are the q stepped (raw + offset), their rates the interval's
    // (q_k − q_{k−1})/h, as the twists above are the interval's (st.u: scratch). (Ball and free
    // links: the kernel's, from the poses and twists.)
    if (!st.tree.screws_only) return false;
    for (const TreeLink& l : st.tree.links) st.u[l.iv] = (st.q[l.iq] - st.qm[l.iq]) / h;
    return tree_write_coordinates(m, st.tree, st.q.data(), st.u.data(), d);
}

}  // namespace riqn
}  // namespace noether
