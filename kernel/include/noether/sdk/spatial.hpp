// noether/sdk/spatial.hpp — rigid transforms and 6-vector algebra for the tree passes of
// minimal-coordinate integrators (riqn, vi-galerkin) and the tree view (noether/sdk/tree.hpp).
// Twists are [ω; v] and wrenches [n; f]. The small operations are inline so that integrators'
// inner loops keep them; the logarithms live in kernel/src/spatial.cpp.
#pragma once

#include "noether/export.h"
#include "noether/math.hpp"

namespace noether {

// A rigid transform as rotation matrix and translation: x_world = R x_body + p.
struct NOETHER_API Frame {
    Mat3 R = Mat3::identity();
    Vec3 p;
};
inline Frame operator*(const Frame& a, const Frame& b) { return {a.R * b.R, a.R * b.p + a.p}; }
inline Frame inverse(const Frame& a) {
    const Mat3 Rt = transpose(a.R);
    return {Rt, -1.0 * (Rt * a.p)};
}
inline Frame frame_of(const Pose& p) { return {rotation(p.q), p.x}; }

// Spatial algebra on 6-vectors (twists [ω; v], wrenches [n; f]) for the tree passes; inline so
// integrators' inner loops keep them.
inline double dot6(const double* a, const double* b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}
// Ad_g: a twist in the frame of g → the frame g maps into: [R ω; p × (R ω) + R v].
inline void ad_apply(const Frame& g, const double* in, double* out) {
    const Vec3 w = g.R * Vec3{in[0], in[1], in[2]};
    const Vec3 v = cross(g.p, w) + g.R * Vec3{in[3], in[4], in[5]};
    out[0] = w.x, out[1] = w.y, out[2] = w.z, out[3] = v.x, out[4] = v.y, out[5] = v.z;
}
// Ad_{T⁻¹}ᵀ: a wrench in the frame of a child at pose T (in the parent) → the parent frame.
inline void wrench_to_parent(const Frame& T, const double* w, double* o) {
    const Vec3 f = T.R * Vec3{w[3], w[4], w[5]};
    const Vec3 n = T.R * Vec3{w[0], w[1], w[2]} + cross(T.p, f);
    o[0] = n.x, o[1] = n.y, o[2] = n.z, o[3] = f.x, o[4] = f.y, o[5] = f.z;
}
// The matrix of twist_to_child (6×6 row-major): X = Ad_{T⁻¹} = [[Rᵀ, 0], [−Rᵀ p×, Rᵀ]].
inline void ad_inv_matrix(const Frame& T, double* X) {
    const Mat3 Rt = transpose(T.R);
    const Mat3 B = -1.0 * (Rt * skew(T.p));
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            X[i * 6 + j] = Rt(i, j);
            X[i * 6 + j + 3] = 0;
            X[(i + 3) * 6 + j] = B(i, j);
            X[(i + 3) * 6 + j + 3] = Rt(i, j);
        }
}
// P += Xlᵀ I Xr (6×6, row-major): an inertia-like block carried to the parent (Xl = Xr = Ad_{T⁻¹}
// for a symmetric one; the two differ where the left and right sides are taken at different poses).
inline void add_congruence(const double* Xl, const double* I, const double* Xr, double* P) {
    double IX[36];
    for (int a = 0; a < 6; ++a)
        for (int b = 0; b < 6; ++b) {
            double s = 0;
            for (int k = 0; k < 6; ++k) s += I[6 * a + k] * Xr[6 * k + b];
            IX[6 * a + b] = s;
        }
    for (int a = 0; a < 6; ++a)
        for (int b = 0; b < 6; ++b) {
            double s = 0;
            for (int k = 0; k < 6; ++k) s += Xl[6 * k + a] * IX[6 * k + b];
            P[6 * a + b] += s;
        }
}

namespace detail {
// A row of a 3×3 matrix as a pair (x, y) and z, so that row combinations go two lanes at a time
// (GCC's vector extension; each lane's arithmetic is the scalar one, in the same order).
typedef double Lanes2 __attribute__((vector_size(16)));
struct Row3 {
    Lanes2 xy;
    double z;
};
// s0 r0 + s1 r1 + s2 r2, summed left to right.
inline Row3 combine3(double s0, const Row3& r0, double s1, const Row3& r1, double s2, const Row3& r2) {
    return {s0 * r0.xy + s1 * r1.xy + s2 * r2.xy, s0 * r0.z + s1 * r1.z + s2 * r2.z};
}
}  // namespace detail

// P += Xᵀ I X for X = Ad_{T⁻¹} = [[Rᵀ, 0], [−Rᵀ p^, Rᵀ]] and I = [[A, B], [Bᵀ, C]] symmetric 6×6
// (its lower-left block is not read). X = diag(Rᵀ, Rᵀ) Y with Y = [[1, 0], [−p^, 1]], so the
// blocks are first rotated into the parent's axes (A' = R A Rᵀ, B' = R B Rᵀ, C' = R C Rᵀ) and
// then carried along p:
//   Xᵀ I X = [[A' − B'p^ − (B'p^)ᵀ − p^C'p^,  B' + p^C'], [(B' + p^C')ᵀ,  C']],
// a row of M p^ being the row × p and a column of p^ M being p × the column. ~330 flops against
// ~610 for the block products of the same matrix, and the diagonal blocks come out exactly
// symmetric (each entry is computed once and mirrored).
inline void add_congruence_ad(const Frame& T, const double* I, double* P) {
    using detail::Row3;
    const Mat3& R = T.R;
    // The rows of Rᵀ (R's columns).
    Row3 Rt[3];
    for (int k = 0; k < 3; ++k) Rt[k] = {detail::Lanes2{R.m[0][k], R.m[1][k]}, R.m[2][k]};
    double Ap[3][3], Bp[3][3], Cp[3][3];
    // R M Rᵀ for the block of I at (r0, c0): E = M Rᵀ (row i: Σ_k M_ik (Rᵀ)_k), then R E (row i:
    // Σ_k R_ik E_k); a symmetric block's lower triangle is its upper one mirrored.
    auto rotate_block = [&](int r0, int c0, bool sym, double (*out)[3]) {
        Row3 E[3];
        for (int i = 0; i < 3; ++i) {
            const double* Mi = &I[6 * (r0 + i) + c0];
            E[i] = detail::combine3(Mi[0], Rt[0], Mi[1], Rt[1], Mi[2], Rt[2]);
        }
        for (int i = 0; i < 3; ++i) {
            const Row3 o = detail::combine3(R.m[i][0], E[0], R.m[i][1], E[1], R.m[i][2], E[2]);
            out[i][0] = o.xy[0], out[i][1] = o.xy[1], out[i][2] = o.z;
        }
        if (sym) out[1][0] = out[0][1], out[2][0] = out[0][2], out[2][1] = out[1][2];
    };
    rotate_block(0, 0, true, Ap);
    rotate_block(0, 3, false, Bp);
    rotate_block(3, 3, true, Cp);
    // F = B' p^ (row i: B'_i × p), G = p^ C' (column j: p × C'_j), H = G p^ (row i: G_i × p;
    // symmetric: its upper triangle).
    const Vec3& p = T.p;
    Vec3 F[3], Gc[3];
    for (int i = 0; i < 3; ++i) {
        F[i] = cross(Vec3{Bp[i][0], Bp[i][1], Bp[i][2]}, p);
        Gc[i] = cross(p, Vec3{Cp[0][i], Cp[1][i], Cp[2][i]});
    }
    for (int i = 0; i < 3; ++i) {
        const Vec3 g{Gc[0][i], Gc[1][i], Gc[2][i]}, H = cross(g, p);
        for (int j = i; j < 3; ++j) {
            const double v = Ap[i][j] - F[i][j] - F[j][i] - H[j];
            P[6 * i + j] += v;
            if (j != i) P[6 * j + i] += v;
        }
        for (int j = 0; j < 3; ++j) {
            const double v = Bp[i][j] + g[j];
            P[6 * i + j + 3] += v;
            P[6 * (j + 3) + i] += v;
            P[6 * (i + 3) + j + 3] += Cp[i][j];
        }
    }
}
// Ad_{T⁻¹}: a twist in the parent frame → the child frame at pose T.
inline void twist_to_child(const Frame& T, const double* V, double* o) {
    const Mat3 Rt = transpose(T.R);
    const Vec3 w{V[0], V[1], V[2]};
    const Vec3 a = Rt * w, b = Rt * (Vec3{V[3], V[4], V[5]} - cross(T.p, w));
    o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = b.x, o[4] = b.y, o[5] = b.z;
}

// The halves of a 6-vector, and a 6-vector from two halves.
inline Vec3 top(const double* a) { return {a[0], a[1], a[2]}; }
inline Vec3 bot(const double* a) { return {a[3], a[4], a[5]}; }
inline void set6(double* o, const Vec3& a, const Vec3& b) {
    o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = b.x, o[4] = b.y, o[5] = b.z;
}
// Ad_fᵀ: a wrench in the frame at g_k → the frame at g_{k+1} = g_k f.
inline void wrench_to_next(const Frame& f, const double* w, double* o) {
    const Mat3 Rt = transpose(f.R);
    const Vec3 F = bot(w);
    set6(o, Rt * (top(w) - cross(f.p, F)), Rt * F);
}
// ad(x) y = [ω × ω_y; v × ω_y + ω × v_y] (the Lie bracket of twists).
inline void ad_twist(const double* x, const double* y, double* o) {
    const Vec3 w = top(x), v = bot(x), wy = top(y), vy = bot(y);
    set6(o, cross(w, wy), cross(v, wy) + cross(w, vy));
}
// adD(F) x = [τ × ω + f × v; f × ω] for F = [τ; f] (skew: ad(x)ᵀ F = adD(F) x).
inline void adD_apply(const double* F, const double* x, double* o) {
    const Vec3 t = top(F), f = bot(F), w = top(x), v = bot(x);
    set6(o, cross(t, w) + cross(f, v), cross(f, w));
}

// log of a rotation matrix: the rotation vector, θ = its angle (stable near 0 and near π;
// docs/design/riqn.md §1.2).
NOETHER_API Vec3 so3_log(const Mat3& R, double& theta);
// Jl(φ)⁻¹ p: the translation part of the logarithm on SE(3) for the rotation vector φ of angle θ.
NOETHER_API Vec3 se3_log_translation(const Vec3& phi, double theta, const Vec3& p);
// x = log(f) on SE(3) = [φ; Jl(φ)⁻¹ p]. Returns the rotation angle.
NOETHER_API double se3_log(const Frame& f, double* x);

}  // namespace noether
