// vi-galerkin: the Newton direction by articulated condensation (§5), the first guess and the
// substep (§6). (docs/design/galerkin-vi.md; layout in galerkin.hpp)
#include "galerkin.hpp"

namespace noether {
namespace galerkin_vi {

void Galerkin::constrained_direction(State& st) {
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
    dense::solve_rank_revealing(K, st.Sm.data(), st.lrhs2.data(), st.dlam.data(), st.rperm.data(), st.cperm.data(),
                                st.ywork.data(), kRankTolerance);
    for (std::size_t k = 0; k < sn; ++k) {
        double v = st.dqr[k];
        for (int col = 0; col < K; ++col) v -= st.Zc[static_cast<std::size_t>(col) * sn + k] * st.dlam[col];
        st.dx[k] = v;
    }
    for (int k = 0; k < K; ++k) st.lam[k] += st.dlam[k];
}

bool Galerkin::factor(State& st, double h) {
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
                if (st.any_servo)
                    acc += -h * st.servo[i].kp * L.M[a][b + 1] - L.w[a] * st.servo[i].kv * L.B[a][b + 1];
                Dm[a * s + b] = acc;
            }
        // A pivot below 1e-14 of the block's largest entry is singular to working precision.
        const double floor = 1e-300 + 1e-14 * dense::max_abs(s * s, Dm);
        if (!dense::lu_factor(s, Dm, &st.piv[static_cast<std::size_t>(s) * i], floor)) return false;
        // K = D⁻¹ P, column by column.
        for (int c = 0; c < d; ++c) {
            double col[kMaxPoints];
            for (int a = 0; a < s; ++a) col[a] = K[static_cast<std::size_t>(d) * a + c];
            dense::lu_solve(s, Dm, &st.piv[static_cast<std::size_t>(s) * i], col);
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

void Galerkin::solve(State& st, const double* b, double* x) {
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
        dense::lu_solve(s, &st.Dlu[static_cast<std::size_t>(s) * s * i], &st.piv[static_cast<std::size_t>(s) * i], u);
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

void Galerkin::guess(State& st, double h) {
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

Attempt Galerkin::substep(const Model& m, const Data& d, State& st, double h) const {
    const int n = st.n, s = st.lob.s;
    if (st.any_servo) set_servos(m, d, st);
    guess(st, h);
    Attempt out;
    double prev_step = INFINITY;
    bool refactor = true;  // chord: the factor of this step's first iterate until corrections stop shrinking
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
        const bool newton_step = refactor || !st.opt.chord;
        if (newton_step && !factor(st, h)) {
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
        const bool floor = it > 0 && newton_step && step <= 1e3 * st.opt.step_tolerance && step > 0.5 * prev_step;
        refactor = it > 0 && step > 0.25 * prev_step;  // (chord) a slow contraction: a fresh factor next
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

}  // namespace galerkin_vi
}  // namespace noether
