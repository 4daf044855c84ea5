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

namespace {

// factor() and solve() for P control points known at compile time (P = 0: s from the state): the
// same arithmetic in the same order, with the small loops over s unrolled by the compiler.
template <int P>
bool factor_points(State& st, double h) {
    using G_ = Galerkin;
    const TreeView& t = st.tree;
    const Lobatto& L = st.lob;
    const int n = st.n, s = P > 0 ? P : L.s, nn = s + 1, d = 12 * s + 6;
    const std::size_t dd = static_cast<std::size_t>(d) * d, ds = static_cast<std::size_t>(d) * s;
    // Y_i of every link into Y^A (§5.2), children are added as they are condensed.
    // The column ranges [c0, c1) of row rr of a link's own Y_i, in column order: a ξ^j row has its ξ^j
    // block, a ζ^j row its ξ^j block (j ≥ 1: −w h adD(h^j)) and its ζ^j block (w h M̄).
    auto block_ranges = [&](int rr, int* c0, int* c1) {
        if (rr < 6 * s) {
            c0[0] = 6 * (rr / 6), c1[0] = c0[0] + 6;
            return 1;
        }
        const int j = (rr - 6 * s) / 6;
        int k = 0;
        if (j >= 1) c0[k] = G_::xi_off(j), c1[k] = G_::xi_off(j) + 6, ++k;
        c0[k] = G_::zeta_off(s, j), c1[k] = G_::zeta_off(s, j) + 6;
        return k + 1;
    };
    for (int i = 0; i < n; ++i) {
        double* Y = &st.YA[dd * i];
        if (!st.lowrank[i]) std::fill(Y, Y + dd, 0.0);  // (a low-rank link's other entries are never written)
        for (int j = 0; j < nn; ++j) {
            const std::size_t ji = static_cast<std::size_t>(j) * n + i;
            const double wdt = L.w[j] * h;
            const int z = G_::zeta_off(s, j);
            const double* Mb = &st.Mb[36 * ji];
            for (int a = 0; a < 6; ++a)
                for (int b = 0; b < 6; ++b) Y[(z + a) * d + z + b] = wdt * Mb[6 * a + b];
            if (j == 0) continue;
            const int x = G_::xi_off(j);
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
                const int z = G_::zeta_off(s, j);
                for (int k = 0; k < 6; ++k) {
                    const double zv = bj * S[k] + (j == a ? Sd[k] : 0.0);
                    if (cu) cu[z + k] = zv;
                    if (cv) cv[z + k] = zv;
                }
                if (j >= 1 && j == a)
                    for (int k = 0; k < 6; ++k) {
                        if (cu) cu[G_::xi_off(j) + k] = S[k];
                        if (cv) cv[G_::xi_off(j) + k] = S[k];
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
                    for (int k = 0; k < 6; ++k) cg[G_::xi_off(j) + k] = -wj * L.B[j][a] * t1[k];
                    if (j == a) {
                        adD_apply(Gm, S, t2);
                        for (int k = 0; k < 6; ++k) cg[G_::xi_off(j) + k] -= t2[k];
                        adD_apply(mu, Sd, t2);
                        for (int k = 0; k < 6; ++k) cg[G_::xi_off(j) + k] -= wdt * t2[k];
                    }
                }
                if (j == a) {
                    adD_apply(mu, S, t1);
                    for (int k = 0; k < 6; ++k) cg[G_::zeta_off(s, j) + k] = -wdt * t1[k];
                }
            }
        }
        // P = Vᵀ Y^A + Gᵀ into K (row-major s × d), W = Y^A U, D = P U + L. A low-rank link's
        // products run over the nonzero blocks of each row of B_i only, then take its terms:
        // Vᵀ (W_k K_k) = (Vᵀ W_k) K_k and (W_k K_k) U = W_k (K_k U), s × s in the middle.
        const bool lf = st.lowrank[i] != 0;
        const int* t0 = st.term_list.data() + st.term_begin[static_cast<std::size_t>(i)];
        const int* t1 = st.term_list.data() + st.term_begin[static_cast<std::size_t>(i) + 1];
        int c0[2] = {0, 0}, c1[2] = {d, d};
        for (int a = 0; a < s; ++a) {
            const double* cv = V + static_cast<std::size_t>(d) * a;
            double* Pa = K + static_cast<std::size_t>(d) * a;
            for (int c = 0; c < d; ++c) Pa[c] = G[static_cast<std::size_t>(d) * a + c];
            if (lf) {  // by 6 × 6 blocks of B_i (the six rows of a block share their column ranges)
                for (int r0 = 0; r0 < d; r0 += 6) {
                    const double* Y0 = Y + static_cast<std::size_t>(d) * r0;
                    const double* v = cv + r0;
                    const int nr = block_ranges(r0, c0, c1);
                    for (int q = 0; q < nr; ++q) {
                        double* P0 = Pa + c0[q];
                        const double* Yq = Y0 + c0[q];
                        for (int c = 0; c < 6; ++c) {
                            double acc = 0;
                            for (int k = 0; k < 6; ++k) acc += v[k] * Yq[static_cast<std::size_t>(d) * k + c];
                            P0[c] += acc;
                        }
                    }
                }
                continue;
            }
            for (int rr = 0; rr < d; ++rr) {
                const double vr = cv[rr];
                if (vr == 0) continue;
                const double* Yr = Y + static_cast<std::size_t>(d) * rr;
                for (int c = 0; c < d; ++c) Pa[c] += vr * Yr[c];
            }
        }
        // W by blocks of six rows (d = 12 s + 6; a low-rank link's rows share their ranges within a block):
        // six independent sums, each over c in order — the dot products' additions no longer wait
        // on one another.
        for (int r0 = 0; r0 < d; r0 += 6) {
            const double* Y0 = Y + static_cast<std::size_t>(d) * r0;
            const int nr = lf ? block_ranges(r0, c0, c1) : 1;
            for (int b = 0; b < s; ++b) {
                const double* cu = U + static_cast<std::size_t>(d) * b;
                double acc[6] = {0, 0, 0, 0, 0, 0};
                for (int q = 0; q < nr; ++q)
                    for (int c = c0[q]; c < c1[q]; ++c) {
                        const double u = cu[c];
                        for (int k = 0; k < 6; ++k) acc[k] += Y0[static_cast<std::size_t>(d) * k + c] * u;
                    }
                for (int k = 0; k < 6; ++k) W[static_cast<std::size_t>(d) * b + r0 + k] = acc[k];
            }
        }
        for (const int* tk = t0; tk != t1; ++tk) {
            const double* Wk = &st.W[ds * static_cast<std::size_t>(*tk)];
            const double* Kk = &st.K[ds * static_cast<std::size_t>(*tk)];
            double VW[kMaxPoints * kMaxPoints] = {}, KU[kMaxPoints * kMaxPoints] = {};
            for (int c = 0; c < d; ++c)
                for (int a = 0; a < s; ++a) {
                    const double va = V[static_cast<std::size_t>(d) * a + c], ka = Kk[static_cast<std::size_t>(d) * a + c];
                    for (int b = 0; b < s; ++b) {
                        VW[a * s + b] += va * Wk[static_cast<std::size_t>(d) * b + c];
                        KU[a * s + b] += ka * U[static_cast<std::size_t>(d) * b + c];
                    }
                }
            for (int a = 0; a < s; ++a) {
                double* Pa = K + static_cast<std::size_t>(d) * a;
                double* Wa = W + static_cast<std::size_t>(d) * a;
                for (int b = 0; b < s; ++b) {
                    const double vw = VW[a * s + b], ku = KU[b * s + a];
                    const double* Kb = Kk + static_cast<std::size_t>(d) * b;
                    const double* Wb = Wk + static_cast<std::size_t>(d) * b;
                    for (int c = 0; c < d; ++c) Pa[c] -= vw * Kb[c];
                    for (int c = 0; c < d; ++c) Wa[c] -= ku * Wb[c];
                }
            }
        }
        double PU[kMaxPoints * kMaxPoints] = {};  // the s² sums side by side, each over c in order
        for (int c = 0; c < d; ++c)
            for (int a = 0; a < s; ++a) {
                const double pc = K[static_cast<std::size_t>(d) * a + c];
                for (int b = 0; b < s; ++b) PU[a * s + b] += pc * U[static_cast<std::size_t>(d) * b + c];
            }
        for (int a = 0; a < s; ++a)
            for (int b = 0; b < s; ++b) {
                double acc = PU[a * s + b];
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
        // Ŷ_i = Y^A − W K, handed to the parent: to a low-rank parent B_i only (its terms are
        // this link's and this link itself); to a dense one all of it (a low-rank link's terms
        // written out first).
        if (l.parent < 0) continue;
        const bool to_lowrank = st.lowrank[static_cast<std::size_t>(l.parent)] != 0;
        double* Yp = &st.YA[dd * l.parent];
        auto subtract = [&](double* Ypr, int rr, const double* Wm, const double* Km) {
            for (int b = 0; b < s; ++b) {
                const double wv = Wm[static_cast<std::size_t>(d) * b + rr];
                if (wv == 0) continue;
                const double* Kb = Km + static_cast<std::size_t>(d) * b;
                for (int c = 0; c < d; ++c) Ypr[c] -= wv * Kb[c];
            }
        };
        if (lf) {  // B_i's 6 × 6 blocks
            for (int r0 = 0; r0 < d; r0 += 6) {
                const int nr = block_ranges(r0, c0, c1);
                for (int q = 0; q < nr; ++q)
                    for (int k = 0; k < 6; ++k) {
                        double* Ypr = Yp + static_cast<std::size_t>(d) * (r0 + k) + c0[q];
                        const double* Yr = Y + static_cast<std::size_t>(d) * (r0 + k) + c0[q];
                        for (int c = 0; c < 6; ++c) Ypr[c] += Yr[c];
                    }
            }
        }
        if (to_lowrank) continue;
        for (int rr = 0; rr < d; ++rr) {
            double* Ypr = Yp + static_cast<std::size_t>(d) * rr;
            if (!lf)
                for (int c = 0; c < d; ++c) Ypr[c] += Y[static_cast<std::size_t>(d) * rr + c];
            for (const int* tk = t0; tk != t1; ++tk)
                subtract(Ypr, rr, &st.W[ds * static_cast<std::size_t>(*tk)], &st.K[ds * static_cast<std::size_t>(*tk)]);
            subtract(Ypr, rr, W, K);
        }
    }
    return true;
}

template <int P>
void solve_points(State& st, const double* b, double* x) {
    const TreeView& t = st.tree;
    const int n = st.n, s = P > 0 ? P : st.lob.s, d = 12 * s + 6;
    const std::size_t ds = static_cast<std::size_t>(d) * s;
    std::fill(st.chat.begin(), st.chat.end(), 0.0);
    for (int i = n - 1; i >= 0; --i) {
        const double* V = &st.V[ds * i];
        const double* W = &st.W[ds * i];
        double* c = &st.chat[static_cast<std::size_t>(d) * i];
        double* u = &st.uu[static_cast<std::size_t>(s) * i];
        double acc[kMaxPoints];
        for (int a = 0; a < s; ++a) acc[a] = b[static_cast<std::size_t>(i) * s + a];
        for (int k = 0; k < d; ++k)  // the s sums side by side, each over k in order
            for (int a = 0; a < s; ++a) acc[a] -= V[static_cast<std::size_t>(d) * a + k] * c[k];
        for (int a = 0; a < s; ++a) u[a] = acc[a];
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
        double acc[kMaxPoints];
        for (int a = 0; a < s; ++a) acc[a] = st.uu[static_cast<std::size_t>(s) * i + a];
        if (Xp)
            for (int k = 0; k < d; ++k)
                for (int a = 0; a < s; ++a) acc[a] -= K[static_cast<std::size_t>(d) * a + k] * Xp[k];
        for (int a = 0; a < s; ++a) xi[a] = acc[a];
        for (int k = 0; k < d; ++k) {
            double acc = Xp ? Xp[k] : 0.0;
            for (int a = 0; a < s; ++a) acc += U[static_cast<std::size_t>(d) * a + k] * xi[a];
            Xi[k] = acc;
        }
    }
}

}  // namespace

bool Galerkin::factor(State& st, double h) {
    switch (st.lob.s) {
        case 1: return factor_points<1>(st, h);
        case 2: return factor_points<2>(st, h);
        case 3: return factor_points<3>(st, h);
        default: return factor_points<0>(st, h);
    }
}

void Galerkin::solve(State& st, const double* b, double* x) {
    switch (st.lob.s) {
        case 1: return solve_points<1>(st, b, x);
        case 2: return solve_points<2>(st, b, x);
        case 3: return solve_points<3>(st, b, x);
        default: return solve_points<0>(st, b, x);
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
        // With q̇ at q^k known (qd0 after a whole step, NaN after a substep), the polynomial of
        // degree s + 1 through the last interval's control points with that slope at its end:
        // P + κ ω, ω(τ) = Π_b (τ − c_b) (τ in units of the last interval), κ from P'(1) + κ ω'(1)
        // = prev_h q̇, per coordinate. Its error is one order higher than the extrapolated P's —
        // where the motion is smooth on the step's scale. Taken when the two slopes agree over all
        // coordinates (‖prev_h q̇ − P'(1)‖ ≤ kSlopeAgreement ‖P'(1)‖), else P alone: a stiff servo or
        // damper, or a whipping chain's tip, moves faster than the step resolves, and a guess
        // raised in some coordinates only slows the chord iteration (docs/integrators.md).
        constexpr double kSlopeAgreement = 0.05;
        auto end_slope = [&](int i) {  // P'(1) of coordinate i, in units of the last interval
            double d1 = 0;
            for (int b = 0; b <= s; ++b) d1 += L.B[s][b] * st.prev_ctrl[static_cast<std::size_t>(b) * n + i];
            return d1;
        };
        bool slope = n > 0 && !std::isnan(st.qd0[0]);
        if (slope) {
            double gap2 = 0, d2 = 0;
            for (int i = 0; i < n; ++i) {
                const double d1 = end_slope(i), gap = st.prev_h * st.qd0[i] - d1;
                gap2 += gap * gap, d2 += d1 * d1;
            }
            slope = gap2 <= kSlopeAgreement * kSlopeAgreement * d2;
        }
        double om[kMaxPoints + 1] = {}, dom = 1;
        for (int b = 0; b < s; ++b) dom *= 1 - L.c[b];
        for (int a = 1; a <= s; ++a) {
            om[a] = 1;
            for (int b = 0; b <= s; ++b) om[a] *= 1 + rho * L.c[a] - L.c[b];
        }
        for (int i = 0; i < n; ++i) {
            const double kappa = slope ? (st.prev_h * st.qd0[i] - end_slope(i)) / dom : 0.0;
            for (int a = 1; a <= s; ++a) {
                double v = 0;
                for (int b = 0; b <= s; ++b) v += st.ext[a][b] * st.prev_ctrl[static_cast<std::size_t>(b) * n + i];
                st.ctrl[static_cast<std::size_t>(a) * n + i] = slope ? v + kappa * om[a] : v;
            }
        }
        st.guess_kind = slope ? 2 : 1;
        if (st.opt.feedback) add_misses(st, h);
        return;
    }
    st.guess_kind = 0;
    for (int a = 1; a <= s; ++a)
        for (int i = 0; i < n; ++i) st.ctrl[static_cast<std::size_t>(a) * n + i] = st.q[i] + L.c[a] * h * st.qd0[i];
}

// Guess "feedback": the extrapolation misses by its error term, which changes smoothly along a
// motion the step resolves; the misses of the last guesses (of this kind and step length) are
// extrapolated by the degree record_miss() picked (noether/sdk/misses.hpp: 2 e_k − e_{k−1} while
// fewer than five are known) and added while the last two agree (‖e_k − e_{k−1}‖ ≤ kMissAgreement
// ‖e_k‖). The guess itself is kept for the miss (record_miss()).
void Galerkin::add_misses(State& st, double h) {
    const std::size_t n = static_cast<std::size_t>(st.n), end = st.ctrl.size();
    std::copy(st.ctrl.begin() + static_cast<std::ptrdiff_t>(n), st.ctrl.end(), st.ctrl_guess.begin() + static_cast<std::ptrdiff_t>(n));
    if (st.miss_count < 2 || st.miss_h != h || st.miss_kind != st.guess_kind) return;
    if (!misses_agree(st.miss, n, end, kMissAgreement)) return;
    const int degree = std::min<int>(st.miss_degree, st.miss_count - 1);
    for (std::size_t k = n; k < end; ++k) st.ctrl[k] += extrapolated_miss(st.miss, degree, 0, k);
}

void Galerkin::record_miss(State& st, double h) {
    if (!st.opt.feedback) return;
    if (st.guess_kind == 0) {  // the first guess of a start: nothing to compare
        st.miss_count = 0;
        return;
    }
    const std::size_t n = static_cast<std::size_t>(st.n), end = st.ctrl.size();
    shift_misses(st.miss);
    for (std::size_t k = n; k < end; ++k) st.miss[0][k] = st.ctrl[k] - st.ctrl_guess[k];
    st.miss_count = misses_after_record(st.miss_count, st.miss_h == h && st.miss_kind == st.guess_kind);
    st.miss_h = h;
    st.miss_kind = st.guess_kind;
    st.miss_degree = best_miss_degree(st.miss, st.miss_count, n, end);
}

Attempt Galerkin::substep(const Model& m, const Data& d, State& st, double h) const {
    const int n = st.n, s = st.lob.s;
    if (st.any_servo) set_servos(m, d, st);
    guess(st, h);
    Attempt out;
    double prev_step = INFINITY;
    bool refactor = true;  // chord: the factor of this step's first iterate until corrections stop shrinking
    for (int it = 0;; ++it) {
        const bool newton_step = refactor || !st.opt.chord;  // (a factorisation follows the residual)
        const double rn = evaluate(m, d, st, h, &out.worst_node, newton_step);
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
        out.factorizations += newton_step;
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
        // (chord) a slow contraction: a fresh factor next. Judged on chord corrections only: the first
        // one of a fresh factor says nothing yet about how fast that factor contracts.
        refactor = it > 0 && !newton_step && step > 0.25 * prev_step;
        prev_step = step;
        // Converged: every correction within step_tolerance, or within its coordinate's resolution
        // where that is coarser (coordinate_resolution: a joint wound up many turns).
        bool within = true;
        for (int i = 0; i < n && within; ++i)
            for (int a = 1; a <= s; ++a) {
                const double lim = std::max(st.opt.step_tolerance,
                                            coordinate_resolution(st.ctrl[static_cast<std::size_t>(a) * n + i]));
                if (std::fabs(st.dx[static_cast<std::size_t>(i) * s + a - 1]) > lim) {
                    within = false;
                    break;
                }
            }
        if (!within && !floor) continue;
        out.at_floor = !within;
        // Converged: p^{k+1} (and the residual) at the final control points.
        out.residual = evaluate(m, d, st, h, &out.worst_node);
        if (!std::isfinite(out.residual)) {
            out.status = StepStatus::non_finite;
            return out;
        }
        break;
    }
    out.worst_node = -1;
    record_miss(st, h);
    std::copy(st.ctrl.begin() + static_cast<std::ptrdiff_t>(s) * n, st.ctrl.begin() + static_cast<std::ptrdiff_t>(s + 1) * n,
              st.q.begin());
    std::copy(st.pn.begin(), st.pn.end(), st.p.begin());
    std::copy(st.ctrl.begin(), st.ctrl.end(), st.prev_ctrl.begin());
    st.prev_h = h;
    st.have_prev = true;
    if (n > 0) st.qd0[0] = NAN;  // q̇ at the new q^k: unknown until write_back() (a whole step)
    return out;
}

}  // namespace galerkin_vi
}  // namespace noether
