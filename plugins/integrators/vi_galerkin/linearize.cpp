// vi-galerkin: the linearisation of a step (§8). (docs/design/galerkin-vi.md; layout in
// galerkin.hpp)
#include "galerkin.hpp"

namespace noether {
namespace galerkin_vi {

void Galerkin::kinematics(const TreeView& t, const double* q, const double* qd, State::Kinematics& k) {
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

void Galerkin::momentum_tangent(const TreeView& t, State::Kinematics& k, const double* dq, const double* dqd,
                                double* dp) {
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

void Galerkin::residual_tangent(State& st, double h) {
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
            if (st.any_servo) {
                double Mq = 0;
                for (int b = 0; b <= s; ++b) Mq += L.M[a][b] * st.ldq[static_cast<std::size_t>(b) * n + i];
                R += h * (-st.servo[i].kp * Mq - L.w[a] * st.servo[i].kv * st.ldqd[ai]);
            }
            st.ldR[ai] = R;
        }
    }
}

StepStatus Galerkin::linearize(const Model& m, Data& d, Linearization& out) const {
    State& st = static_cast<State&>(*d.integrator_state);
    if (!st.loops.empty())
        throw UsageError("linearize: vi-galerkin linearises the steps of trees; " +
                         (st.loops[0].coupling >= 0 ? "coupling '" + m.couplings[st.loops[0].coupling].name + "' ties two joints"
                                                    : "joint '" + m.joints[st.loops[0].joint].name + "' closes a kinematic loop") +
                         " (not yet supported)");
    const TreeView& t = st.tree;
    const Lobatto& L = st.lob;
    const int n = st.n, s = L.s;
    const double h = m.options.dt;
    const std::size_t N = static_cast<std::size_t>(n), N2 = 2 * N;
    // The step's state, restored at the end.
    const bool started = st.started, have_prev = st.have_prev;
    const double prev_h = st.prev_h, miss_h = st.miss_h;
    const std::int32_t miss_count = st.miss_count, miss_kind = st.miss_kind, miss_degree = st.miss_degree;
    for (int k = 0; k < kGuessMisses; ++k) std::copy(st.miss[k].begin(), st.miss[k].end(), st.bk_miss[k].begin());
    std::copy(st.q.begin(), st.q.end(), st.bk_q.begin());
    std::copy(st.p.begin(), st.p.end(), st.bk_p.begin());
    std::copy(st.qd0.begin(), st.qd0.end(), st.bk_qd0.begin());
    std::copy(st.prev_ctrl.begin(), st.prev_ctrl.end(), st.bk_prev.begin());
    auto restore = [&] {
        st.started = started, st.have_prev = have_prev, st.prev_h = prev_h;
        st.miss_count = miss_count, st.miss_kind = miss_kind, st.miss_degree = miss_degree, st.miss_h = miss_h;
        for (int k = 0; k < kGuessMisses; ++k) std::copy(st.bk_miss[k].begin(), st.bk_miss[k].end(), st.miss[k].begin());
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
            x[dof] = st.q[i] + tree_link_offset(m, t.links[i]);
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

}  // namespace galerkin_vi
}  // namespace noether
