// vi-galerkin: Algorithm 1 (§4): the residual at the control points, forces and loop rows at the
// nodes. (docs/design/galerkin-vi.md; layout in galerkin.hpp)
#include "galerkin.hpp"

namespace noether {
namespace galerkin_vi {

double Galerkin::evaluate(const Model& m, const Data& d, State& st, double h, int* worst, bool jacobian) {
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
    // Node 0's kinematics (poses, screws, inertias) as the last evaluate() of this step left them?
    const std::size_t qbytes = sizeof(double) * static_cast<std::size_t>(n);
    bool keep0 = st.node0_ok && std::memcmp(st.ctrl.data(), st.node0_q.data(), qbytes) == 0;
    // Else node s of the last evaluate() (the substep before's q^{k+1}, bit for bit the next q^k):
    // its kinematics are node 0's, computed from the same bits.
    if (!keep0 && st.nodes_ok && std::memcmp(st.ctrl.data(), st.node_s_q.data(), qbytes) == 0) {
        for (int i = 0; i < n; ++i) {
            const std::size_t si = static_cast<std::size_t>(s) * n + i;
            st.g[i] = st.g[si];
            std::copy_n(&st.Sb[6 * si], 6, &st.Sb[6 * static_cast<std::size_t>(i)]);
            std::copy_n(&st.Mb[36 * si], 36, &st.Mb[36 * static_cast<std::size_t>(i)]);
        }
        std::memcpy(st.node0_q.data(), st.ctrl.data(), qbytes);
        st.node0_ok = keep0 = true;
    }
    for (int j = 0; j < nn; ++j) {
        const double wdt = L.w[j] * h;
        const bool kinematics = j > 0 || !keep0;
        for (int i = 0; i < n; ++i) {
            const TreeLink& l = t.links[i];
            const std::size_t ji = static_cast<std::size_t>(j) * n + i;
            const std::size_t jp = static_cast<std::size_t>(j) * n + l.parent;
            Frame& g = st.g[ji];
            double* S = &st.Sb[6 * ji];
            double* v = &st.vb[6 * ji];
            double* Mb = &st.Mb[36 * ji];
            if (kinematics) {
                const Frame Ti = link_transform(l, st.ctrl[ji]);
                g = l.parent >= 0 ? st.g[jp] * Ti : Ti;
                ad_apply(g, l.S, S);
                world_inertia(l, g, Mb);
            }
            const double qd = st.qdn[ji];
            for (int k = 0; k < 6; ++k) v[k] = (l.parent >= 0 ? st.vb[6 * jp + k] : 0.0) + S[k] * qd;
            ad_twist(v, S, &st.Sd[6 * ji]);
            const Mat3 X = skew(g.p);
            double* hm = &st.hm[6 * ji];
            for (int a = 0; a < 6; ++a) hm[a] = dot6(&Mb[6 * a], v);
            // Gravity impulse w h [x × f; f] and its ξ-derivative block [f]×[x]×.
            const Vec3 f = l.mass * m.gravity;
            set6(&st.E[6 * ji], wdt * cross(g.p, f), wdt * f);
            if (!jacobian) continue;
            const Mat3 KA = skew(f) * X;
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) st.KA[9 * ji + 3 * a + b] = KA(a, b), st.KB[9 * ji + 3 * a + b] = 0;
            st.Fs[3 * ji] = f.x, st.Fs[3 * ji + 1] = f.y, st.Fs[3 * ji + 2] = f.z;
        }
        if (body_forcing) add_body_forcing(m, d, st, j, wdt, jacobian);
        if (!st.loops.empty()) add_loops(m, d, st, j, wdt);
    }
    if (!keep0) {
        std::memcpy(st.node0_q.data(), st.ctrl.data(), qbytes);
        st.node0_ok = true;
    }
    std::memcpy(st.node_s_q.data(), &st.ctrl[static_cast<std::size_t>(s) * n], qbytes);
    st.nodes_ok = true;
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
        double Smu[kMaxPoints + 1];  // S̄ᵀ μ̄ per node
        for (int j = 0; j < nn; ++j) {
            const std::size_t ji = static_cast<std::size_t>(j) * n + i;
            Smu[j] = dot6(&st.Sb[6 * ji], &st.mu[6 * ji]);
        }
        for (int a = 0; a <= s; ++a) {
            double R = 0;
            for (int j = 0; j < nn; ++j) R += L.w[j] * L.B[j][a] * Smu[j];
            const std::size_t ai = static_cast<std::size_t>(a) * n + i;
            const double Q = u - l.stiffness * (st.ctrl[ai] - l.rest) - l.damping * st.qdn[ai];
            R += L.w[a] * h * (dot6(&st.Sd[6 * ai], &st.mu[6 * ai]) + Q) + dot6(&st.Sb[6 * ai], &st.Gam[6 * ai]);
            if (st.any_servo) {  // force and damper sampled like Q; the spring integrated exactly (L.M)
                const ServoTerms& sv = st.servo[i];
                double Mq = 0;
                for (int b = 0; b <= s; ++b) Mq += L.M[a][b] * st.ctrl[static_cast<std::size_t>(b) * n + i];
                R += h * (L.w[a] * (sv.force - sv.kv * st.qdn[ai]) - sv.kp * (Mq - L.w[a] * sv.target));
            }
            if (a == s) {
                st.pn[i] = R;
                continue;
            }
            if (a == 0) R += st.p[i];
            if (st.any_coupling) R += st.cf[static_cast<std::size_t>(a) * n + i];
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

void Galerkin::add_force(State& st, std::size_t ji, double wdt, const Vec3& f, const Vec3& y, bool f_turns,
                         const Vec3& tau, bool tau_turns, bool jacobian) {
    double* E = &st.E[6 * ji];
    const Vec3 n0 = cross(y, f) + tau;
    E[0] += wdt * n0.x, E[1] += wdt * n0.y, E[2] += wdt * n0.z;
    E[3] += wdt * f.x, E[4] += wdt * f.y, E[5] += wdt * f.z;
    if (!jacobian) return;
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

void Galerkin::add_body_forcing(const Model& m, const Data& d, State& st, int j, double wdt, bool jacobian) {
    const TreeView& t = st.tree;
    const int n = st.n;
    tree_body_poses(t, &st.g[static_cast<std::size_t>(j) * n], nullptr, st.bp.data());
    auto at = [&](int b) { return static_cast<std::size_t>(j) * n + t.body_link[b]; };
    for (int b = 0; b < m.nbodies(); ++b) {  // inputs: world force at the CoM, world torque
        const Vec3& f = d.applied_force[b];
        const Vec3& tq = d.applied_torque[b];
        if (t.body_link[b] < 0 || (f.x == 0 && f.y == 0 && f.z == 0 && tq.x == 0 && tq.y == 0 && tq.z == 0)) continue;
        add_force(st, at(b), wdt, f, st.bp[b].x, false, tq, false, jacobian);
    }
    for (const ForceInfo& fi : m.forces) {
        if (t.body_link[fi.body] < 0) continue;
        const Mat3 R = rotation(st.bp[fi.body].q);
        const Vec3 f = fi.body_frame ? R * fi.force : fi.force;
        const Vec3 tq = fi.body_frame ? R * fi.torque : fi.torque;
        const Vec3 y = st.bp[fi.body].x + (fi.has_point ? R * fi.point : Vec3{});
        add_force(st, at(fi.body), wdt, f, y, fi.body_frame, tq, fi.body_frame, jacobian);
    }
}

void Galerkin::world_row(const Pose& pose, const double* J, double* G) {
    const Vec3 Jx{J[0], J[1], J[2]}, Jt{J[3], J[4], J[5]};
    set6(G, cross(pose.x, Jx) + rotate(pose.q, Jt), Jx);
}

Pose Galerkin::body_pose_at(const TreeView& t, const Frame* g, int b) {
    const int L = t.body_link[b];
    const Frame f = L >= 0 ? g[L] * t.body_offset[b] : t.body_offset[b];
    return {f.p, quat_from_matrix(f.R)};
}

void Galerkin::add_loops(const Model& m, const Data& d, State& st, int j, double wdt) {
    const TreeView& t = st.tree;
    const int n = st.n, s = st.lob.s, M = st.mrows;
    const Frame* gj = &st.g[static_cast<std::size_t>(j) * n];
    double gv[6], Ja[36], Jb[36], W[6];
    auto add = [&](int link, const double* w, double f) {
        if (link < 0) return;
        double* E = &st.E[6 * (static_cast<std::size_t>(j) * n + link)];
        for (int k = 0; k < 6; ++k) E[k] += f * w[k];
    };
    if (st.any_coupling && j < s) std::fill(&st.cf[static_cast<std::size_t>(j) * n], &st.cf[static_cast<std::size_t>(j + 1) * n], 0.0);
    for (const State::Loop& c : st.loops) {
        if (c.coupling >= 0) {  // linear in the node's coordinates; its force goes to R directly (cf)
            const std::size_t jr = static_cast<std::size_t>(j) * M + c.row0;
            const double* qj = &st.ctrl[static_cast<std::size_t>(j) * n];
            double v = qj[c.link[0]];
            for (int t = 1; t < c.nterms; ++t) v += c.coef[t] * qj[c.link[t]];
            st.hv[jr] = v + c.c;
            if (j < s) {
                const double l = st.lam[jr];
                st.cf[static_cast<std::size_t>(j) * n + c.link[0]] += l;
                for (int t = 1; t < c.nterms; ++t) st.cf[static_cast<std::size_t>(j) * n + c.link[t]] += c.coef[t] * l;
            }
            continue;
        }
        const JointInfo& ji = m.joints[c.joint];
        const Pose pa = c.a >= 0 ? body_pose_at(t, gj, c.a) : st.origin.world();
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

double Galerkin::loop_row(const State& st, int node, int row, double f, double* x, int stride, int slot, bool dot) {
    const int n = st.n, M = st.mrows;
    int li = 0;
    while (row >= st.loops[li].row0 + st.loops[li].rows) ++li;
    const State::Loop& c = st.loops[li];
    const std::size_t jr = static_cast<std::size_t>(node) * M + row;
    double acc = 0;
    if (c.coupling >= 0) {  // the row Σ coef_t e_t
        auto at = [&](int t) { return static_cast<std::size_t>(c.link[t]) * stride + slot; };
        if (dot) {
            double v = x[at(0)];
            for (int t = 1; t < c.nterms; ++t) v += c.coef[t] * x[at(t)];
            return v;
        }
        x[at(0)] += f;
        for (int t = 1; t < c.nterms; ++t) x[at(t)] += c.coef[t] * f;
        return 0;
    }
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

}  // namespace galerkin_vi
}  // namespace noether
