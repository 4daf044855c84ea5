// compound: k = 2 or 3 hinge/slide motions applied in order in the child's frame, as MJCF stacks
// several joints in one body (the first joint's motion, then the next one's about the moved frame):
// 6 − k rows, k DOF, one coordinate per motion (its angle or displacement, zero at the reference
// pose). No intermediate bodies (massless ones would make the maximal-coordinate step singular).
// Two families, which cover the stacks of MuJoCo's humanoid and the Gymnasium models:
//   * hinges through one point (k = 2: any two non-parallel axes; k = 3: a1 ⟂ a2 ⟂ a3, not
//     a1 ∥ a3): the point coincides (3 rows) and, for k = 2, a1ᵀ R a2 keeps its reference value
//     (1 row, R the relative rotation). Coordinates by the closed-form decomposition
//     R = R(a1, q1) R(a2, q2) [R(a3, q3)]. Two hinges may also sit at different points p1, p2
//     (the humanoid's ankles): then the second point moves as the first hinge turns it (3 rows);
//
//   * one or two slides, then one hinge ⟂ to them (planar roots: slide x, slide z, hinge y): the
//     hinge point moves in the slides' span (3 − s rows) and the child turns only about the hinge
//     (2 rows). Coordinates: the point's displacement in the slides' (not necessarily orthogonal)
//     directions, and the hinge angle.
// Parameters (JointSpec::params): kinds (k values, 0 hinge, 1 slide), axes (3k numbers, child
// frame), points (optional, 3k numbers, child frame: the motions' points; only differences matter).
// The anchor (parent_anchor/child_anchor or anchor) is the last hinge's point. Other stacks are refused naming the joint.
#include <cmath>
#include <cstdio>

#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"

namespace {

using namespace noether;

void put_rot(double* C, int row, const Vec3& r) {
    double* p = C + 6 * row;
    p[0] = p[1] = p[2] = 0;
    p[3] = r.x, p[4] = r.y, p[5] = r.z;
}

// The signed angle about unit axis n that turns x into y (both projected onto the plane ⟂ n).
double angle_about(const Vec3& n, const Vec3& x, const Vec3& y) {
    const Vec3 xp = x - dot(n, x) * n, yp = y - dot(n, y) * n;
    return std::atan2(dot(n, cross(xp, yp)), dot(xp, yp));
}

Mat3 rot(const Vec3& axis, double angle) { return rotation(quat_from_axis_angle(axis, angle)); }

double unwrap(double v, const double* prev) {
    const double two_pi = 2.0 * M_PI;
    return prev ? v + two_pi * std::round((*prev - v) / two_pi) : v;
}

// Hinges through one point.
class Hinges final : public JointModel {
public:
    // r: p2 − p1, the second hinge's point from the first's (child frame; zero: one point). The
    // anchor is the last hinge's point.
    Hinges(const JointSetup& s, const Vec3* axes, int k, const Vec3& r) : pa_(s.pa()), pb_(s.pb()), k_(k), qoff_(s.qoff()), r_(r) {
        offset_ = norm(r) > 0;
        for (int i = 0; i < k; ++i) a_[i] = axes[i];
        R0_ = rotation(qoff_);
        if (k == 2) {
            u_ = R0_ * a_[0];
            c0_ = dot(a_[0], a_[1]);
        } else {
            const Vec3 b = cross(a_[1], a_[2]);
            phi_ = std::atan2(dot(a_[0], b), dot(a_[0], a_[2]));
        }
    }
    int rows() const override { return k_ == 2 ? 4 : 3; }
    int dofs() const override { return k_; }
    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        if (offset_) translation_rows(a, b, w);
        else prim_point(a, b, pa_, pb_, w);
        if (k_ == 2) {
            prim_perpendicular(a, b, u_, a_[1], w);
            g[3] -= c0_;
        }
    }
    // Two hinges at different points: the second point's displacement, in the child's reference
    // frame, d = R0ᵀ (Raᵀ(xb + Rb pb − xa) − pa), must be the first hinge's turn of it,
    // (R(a1, q1) − I) r, with q1 read from the relative rotation (3 rows).
    void translation_rows(const Pose& a, const Pose& b, RowWriter& w) const {
        const Mat3 Ra = rotation(a.q), Rb = rotation(b.q), RaT = transpose(Ra), R0T = transpose(R0_);
        const Vec3 wv = RaT * (b.x + Rb * pb_ - a.x);
        const Vec3 d = R0T * (wv - pa_);
        double q[3];
        decompose(relative(a, b), nullptr, q);
        const Mat3 R1 = rot(a_[0], q[0]);
        const Vec3 model = R1 * r_ - r_, dm = cross(a_[0], R1 * r_);  // (R1 − I) r and its q1-derivative
        // The exact gradient of q1 = atan2((a1 × x)·v, x·v), v = R a2, x = a2 ⟂ a1 (also off the joint):
        // dv = −R (a2 × δ) for a child-frame turn δ, so ∂q1/∂δ = a2 × (Rᵀ ∇v q1); δ = δθb − Rabᵀ δθa.
        double Ca[6] = {}, Cb[6] = {};
        if (w.Ja || w.Jb) {
            const Mat3 R = relative(a, b);
            const Vec3 x = a_[1] - dot(a_[0], a_[1]) * a_[0], t = cross(a_[0], x), v = R * a_[1];
            const double X = dot(x, v), Y = dot(t, v);
            const Vec3 grad = (X * t - Y * x) / (X * X + Y * Y);
            const Vec3 gb = cross(a_[1], transpose(R) * grad), ga = -1.0 * (transpose(Ra) * Rb * gb);
            Cb[3] = gb.x, Cb[4] = gb.y, Cb[5] = gb.z;
            Ca[3] = ga.x, Ca[4] = ga.y, Ca[5] = ga.z;
        }
        const Mat3 Jxb = R0T * RaT, Jtb = -1.0 * (R0T * RaT * Rb * skew(pb_)), Jxa = -1.0 * Jxb, Jta = R0T * skew(wv);
        for (int r = 0; r < 3; ++r) {
            const double dmr = r == 0 ? dm.x : r == 1 ? dm.y : dm.z;
            w.g[w.row + r] = (r == 0 ? d.x - model.x : r == 1 ? d.y - model.y : d.z - model.z);
            for (int c = 0; c < 3; ++c) {
                if (w.Jb) {
                    w.Jb[6 * (w.row + r) + c] = Jxb.m[r][c] - dmr * Cb[c];
                    w.Jb[6 * (w.row + r) + 3 + c] = Jtb.m[r][c] - dmr * Cb[3 + c];
                }
                if (w.Ja) {
                    w.Ja[6 * (w.row + r) + c] = Jxa.m[r][c] - dmr * Ca[c];
                    w.Ja[6 * (w.row + r) + 3 + c] = Jta.m[r][c] - dmr * Ca[3 + c];
                }
            }
        }
        w.row += 3;
    }
    // The relative rotation in the child frame, identity at the reference pose.
    Mat3 relative(const Pose& a, const Pose& b) const {
        return transpose(R0_) * (transpose(rotation(a.q)) * rotation(b.q));
    }
    void decompose(const Mat3& R, const double* prev, double* q) const {
        if (k_ == 2) {
            q[0] = unwrap(angle_about(a_[0], a_[1], R * a_[1]), prev);
            const Mat3 M = transpose(rot(a_[0], q[0])) * R;
            Vec3 e1, e2;
            orthonormal_basis(a_[1], e1, e2);
            q[1] = unwrap(angle_about(a_[1], e1, M * e1), prev ? prev + 1 : nullptr);
            return;
        }
        // a1ᵀ R a3 = cos(q2 − φ): two branches; the one nearest the previous q2 (or 0).
        const double c = std::max(-1.0, std::min(1.0, dot(a_[0], R * a_[2])));
        const double ac = std::acos(c), ref = prev ? prev[1] : 0.0;
        double best = 0, dist = INFINITY;
        for (double cand : {phi_ + ac, phi_ - ac}) {
            const double u = unwrap(cand, &ref), dd = std::fabs(u - ref);
            if (dd < dist) dist = dd, best = u;
        }
        q[1] = best;
        const Mat3 R2 = rot(a_[1], q[1]);
        q[0] = unwrap(angle_about(a_[0], R2 * a_[2], R * a_[2]), prev);
        q[2] = unwrap(angle_about(a_[2], transpose(R) * a_[0], transpose(R2) * a_[0]), prev ? prev + 2 : nullptr);
    }
    void coordinates(const Pose& a, const Pose& b, const double* prev, double* c) const override {
        decompose(relative(a, b), prev, c);
    }
    // ω_rel (child frame) = Σ_i (R(a_{i+1}) ⋯ R(a_k))ᵀ a_i q̇_i = A q̇; q̇ = A⁺ ω_rel, with
    // ω_rel = ω_b − R_abᵀ ω_a.
    void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const override {
        double q[3];
        decompose(relative(a, b), nullptr, q);
        Vec3 A[3];
        Mat3 tail = Mat3::identity();  // R(a_{i+1}) ⋯ R(a_k)
        for (int i = k_ - 1; i >= 0; --i) {
            A[i] = transpose(tail) * a_[i];
            tail = rot(a_[i], q[i]) * tail;
        }
        // A⁺ = (AᵀA)⁻¹ Aᵀ (k = 3: A⁻¹).
        Vec3 rows[3];
        if (k_ == 3) {
            Mat3 Am;
            for (int r = 0; r < 3; ++r) {
                const double col[3][3] = {{A[0].x, A[1].x, A[2].x}, {A[0].y, A[1].y, A[2].y}, {A[0].z, A[1].z, A[2].z}};
                for (int c = 0; c < 3; ++c) Am.m[r][c] = col[r][c];
            }
            const Mat3 Ai = inverse(Am);
            for (int i = 0; i < 3; ++i) rows[i] = {Ai.m[i][0], Ai.m[i][1], Ai.m[i][2]};
        } else {
            const double g11 = dot(A[0], A[0]), g12 = dot(A[0], A[1]), g22 = dot(A[1], A[1]);
            const double det = g11 * g22 - g12 * g12;
            rows[0] = (g22 * A[0] - g12 * A[1]) / det;
            rows[1] = (g11 * A[1] - g12 * A[0]) / det;
        }
        const Mat3 Rab = transpose(rotation(a.q)) * rotation(b.q);
        for (int i = 0; i < k_; ++i) {
            put_rot(Cb, i, rows[i]);
            if (Ca) put_rot(Ca, i, -1.0 * (Rab * rows[i]));
        }
    }
    const char* coordinate_name(int i) const override { return i == 0 ? "angle1" : i == 1 ? "angle2" : "angle3"; }

private:
    Vec3 pa_, pb_, a_[3], u_;
    int k_;
    Quat qoff_;
    Vec3 r_;
    bool offset_ = false;
    Mat3 R0_;
    double c0_ = 0, phi_ = 0;
};

// One or two slides, then a hinge ⟂ to them.
class SlidesHinge final : public JointModel {
public:
    SlidesHinge(const JointSetup& s, const Vec3* axes, int k) : pa_(s.pa()), pb_(s.pb()), ns_(k - 1), qoff_(s.qoff()) {
        const Mat3 R0 = rotation(qoff_);
        for (int i = 0; i < ns_; ++i) e_[i] = R0 * axes[i];
        n_ = R0 * axes[k - 1];
        sel_ = selection_rows(ns_ == 2 ? 2 : 1, ns_ == 2 ? n_ : e_[0]);
        rot_ = rotation_rows(1, n_, qoff_);
        if (ns_ == 2) {
            const double g11 = dot(e_[0], e_[0]), g12 = dot(e_[0], e_[1]), g22 = dot(e_[1], e_[1]);
            const double det = g11 * g22 - g12 * g12;
            gi_[0][0] = g22 / det, gi_[0][1] = -g12 / det, gi_[1][0] = -g12 / det, gi_[1][1] = g11 / det;
        }
    }
    int rows() const override { return 6 - (ns_ + 1); }
    int dofs() const override { return ns_ + 1; }
    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        prim_translation(a, b, sel_, pa_, pb_, w);
        prim_rotation(a, b, rot_, w);
    }
    void coordinates(const Pose& a, const Pose& b, const double* prev, double* c) const override {
        if (ns_ == 1) {
            c[0] = slide_displacement(a, b, e_[0], pa_, pb_);
        } else {
            const double d0 = slide_displacement(a, b, e_[0], pa_, pb_), d1 = slide_displacement(a, b, e_[1], pa_, pb_);
            c[0] = gi_[0][0] * d0 + gi_[0][1] * d1;
            c[1] = gi_[1][0] * d0 + gi_[1][1] * d1;
        }
        c[ns_] = hinge_angle(a, b, n_, qoff_, prev ? prev + ns_ : nullptr);
    }
    void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const override {
        if (ns_ == 1) {
            slide_displacement_jacobian(a, b, e_[0], pb_, Ca, Cb);
        } else {
            double Da[12], Db[12];
            slide_displacement_jacobian(a, b, e_[0], pb_, Ca ? Da : nullptr, Db);
            slide_displacement_jacobian(a, b, e_[1], pb_, Ca ? Da + 6 : nullptr, Db + 6);
            for (int i = 0; i < 2; ++i)
                for (int c = 0; c < 6; ++c) {
                    Cb[6 * i + c] = gi_[i][0] * Db[c] + gi_[i][1] * Db[6 + c];
                    if (Ca) Ca[6 * i + c] = gi_[i][0] * Da[c] + gi_[i][1] * Da[6 + c];
                }
        }
        hinge_angle_jacobian(a, b, n_, qoff_, Ca ? Ca + 6 * ns_ : nullptr, Cb + 6 * ns_);
    }
    const char* coordinate_name(int i) const override { return i == ns_ ? "angle" : i == 0 ? "x" : "y"; }

private:
    Vec3 pa_, pb_, e_[2], n_;
    int ns_;
    Quat qoff_;
    Selection sel_;
    RotationRows rot_;
    double gi_[2][2] = {{1, 0}, {0, 1}};
};

class CompoundType final : public JointType {
public:
    std::vector<std::string> parameters() const override { return {"kinds", "axes", "points"}; }
    std::unique_ptr<JointModel> compile(JointSetup& s) const override {
        const auto& p = s.spec().params;
        auto kinds_it = p.find("kinds"), axes_it = p.find("axes");
        if (kinds_it == p.end() || axes_it == p.end()) {
            s.error("parameters 'kinds' (0 hinge, 1 slide per motion) and 'axes' (3 numbers per motion, child frame) are required");
            return nullptr;
        }
        const std::vector<double>& kinds = kinds_it->second;
        const std::vector<double>& ax = axes_it->second;
        const int k = static_cast<int>(kinds.size());
        if (k < 2 || k > 3 || ax.size() != 3 * kinds.size()) {
            s.error("parameter 'kinds' needs 2 or 3 values and 'axes' 3 numbers per motion, got " + std::to_string(kinds.size()) +
                    " and " + std::to_string(ax.size()));
            return nullptr;
        }
        Vec3 axes[3];
        int slides = 0, first_hinge = -1;
        for (int i = 0; i < k; ++i) {
            if (kinds[i] != 0 && kinds[i] != 1) {
                s.error("parameter 'kinds': each value is 0 (hinge) or 1 (slide)");
                return nullptr;
            }
            const Vec3 v{ax[3 * i], ax[3 * i + 1], ax[3 * i + 2]};
            if (!isfinite(v) || !(norm(v) > 1e-12)) {
                s.error("parameter 'axes': axis " + std::to_string(i + 1) + " must be finite and non-zero");
                return nullptr;
            }
            axes[i] = normalized(v);
            if (kinds[i] == 1) ++slides;
            else if (first_hinge < 0) first_hinge = i;
        }
        // Points of the motions (child frame; only their differences matter): optional, default one point.
        Vec3 pts[3];
        if (auto pit = p.find("points"); pit != p.end()) {
            if (pit->second.size() != ax.size()) {
                s.error("parameter 'points' needs 3 numbers per motion, got " + std::to_string(pit->second.size()));
                return nullptr;
            }
            for (int i = 0; i < k; ++i) {
                pts[i] = {pit->second[3 * i], pit->second[3 * i + 1], pit->second[3 * i + 2]};
                if (!isfinite(pts[i])) {
                    s.error("parameter 'points' must be finite");
                    return nullptr;
                }
            }
        }
        char buf[160];
        if (slides == 0) {
            if (k == 2 && std::fabs(dot(axes[0], axes[1])) > 1 - 1e-9) {
                s.error("two hinges through one point need non-parallel axes");
                return nullptr;
            }
            if (k == 3) {
                const double c12 = dot(axes[0], axes[1]), c23 = dot(axes[1], axes[2]);
                const Vec3 b = cross(axes[1], axes[2]);
                const double sphi = dot(axes[0], b);
                if (std::fabs(c12) > 1e-6 || std::fabs(c23) > 1e-6 || std::fabs(sphi) < 1e-3) {
                    std::snprintf(buf, sizeof buf,
                                  "three hinges through one point are taken with axis 2 perpendicular to axes 1 and 3 and "
                                  "axes 1 and 3 not parallel (cosines %.3g, %.3g)",
                                  c12, c23);
                    s.error(buf);
                    return nullptr;
                }
            }
            Vec3 r;
            if (k == 2) r = pts[1] - pts[0];
            for (int i = 1; i < k && k == 3; ++i)
                if (norm(pts[i] - pts[0]) > 1e-12) {
                    s.error("three hinges are taken through one point only");
                    return nullptr;
                }
            return std::make_unique<Hinges>(s, axes, k, r);
        }
        // Slides, then one hinge perpendicular to them.
        if (!(slides == k - 1 && kinds[k - 1] == 0)) {
            s.error("this stack of motions is not supported: take hinges through one point, or one or two slides followed by "
                    "one hinge perpendicular to them");
            return nullptr;
        }
        for (int i = 0; i < slides; ++i)
            if (std::fabs(dot(axes[i], axes[k - 1])) > 1e-6) {
                std::snprintf(buf, sizeof buf, "slide %d is not perpendicular to the hinge (cosine %.3g)", i + 1,
                              dot(axes[i], axes[k - 1]));
                s.error(buf);
                return nullptr;
            }
        if (slides == 2 && norm(cross(axes[0], axes[1])) < 1e-6) {
            s.error("the two slides are parallel");
            return nullptr;
        }
        return std::make_unique<SlidesHinge>(s, axes, k);
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "compound",
               "k = 2 or 3 hinge/slide motions in order (MJCF bodies with several joints; 6 - k rows, k DOF)", CompoundType)
