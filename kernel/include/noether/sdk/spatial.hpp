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
// P += Xᵀ I X for X = Ad_{T⁻¹} = [[Rᵀ, 0], [B, Rᵀ]] (B = −Rᵀ p^), I symmetric 6×6: by 3×3 blocks.
inline void add_congruence_ad(const Frame& T, const double* I, double* P) {
    Mat3 A, Bm, C;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            A.m[a][b] = I[6 * a + b];
            Bm.m[a][b] = I[6 * a + b + 3];
            C.m[a][b] = I[6 * (a + 3) + b + 3];
        }
    const Mat3& R = T.R;
    const Mat3 Rt = transpose(R), Bk = -1.0 * (Rt * skew(T.p)), Bkt = transpose(Bk);
    const Mat3 BtRt_CBk = transpose(Bm) * Rt + C * Bk;  // lower-left block of I X
    const Mat3 P11 = R * (A * Rt + Bm * Bk) + Bkt * BtRt_CBk;
    const Mat3 CRt = C * Rt;
    const Mat3 P12 = R * (Bm * Rt) + Bkt * CRt;
    const Mat3 P22 = R * CRt;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            P[6 * a + b] += P11.m[a][b];
            P[6 * a + b + 3] += P12.m[a][b];
            P[6 * (a + 3) + b] += P12.m[b][a];
            P[6 * (a + 3) + b + 3] += P22.m[a][b];
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
