// Joint SDK: JointSetup (attachment resolution) and the constraint primitives of
// maximal-vi.md §5, with analytic Jacobians in the [∂/∂x | ∂/∂θ] layout.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "noether/model.hpp"
#include "noether/sdk/joint.hpp"

namespace noether {

namespace {

std::string fmt_vec(const Vec3& v) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "(%g, %g, %g)", v.x, v.y, v.z);
    return buf;
}

// Write a 1×3 row into the x or θ columns of row r of a rows×6 Jacobian.
inline void put(double* J, int r, int col0, const Vec3& v) {
    if (!J) return;
    J[r * 6 + col0 + 0] = v.x;
    J[r * 6 + col0 + 1] = v.y;
    J[r * 6 + col0 + 2] = v.z;
}
// Row `i` of M (as the row of the Jacobian) — for writing P·M rows: put(J, r, c, Mᵀ p) etc.
inline Vec3 rowT(const Mat3& M, const Vec3& p) { return transpose(M) * p; }  // pᵀ M as a vector

// The selection rows of P(ndof, axis): ndof 0 → e_x, e_y, e_z; 1 → e1, e2; 2 → axis.
int selection(int ndof, const Vec3& axis, Vec3 rows[3]) {
    if (ndof == 0) {
        rows[0] = {1, 0, 0};
        rows[1] = {0, 1, 0};
        rows[2] = {0, 0, 1};
        return 3;
    }
    if (ndof == 1) {
        axis_basis(axis, rows[0], rows[1]);
        return 2;
    }
    if (ndof == 2) {
        rows[0] = axis;
        return 1;
    }
    return 0;
}

}  // namespace

void axis_basis(const Vec3& axis, Vec3& e1, Vec3& e2) { orthonormal_basis(axis, e1, e2); }

// ---------------------------------------------------------------------------------------------
// JointSetup

JointSetup::JointSetup(const JointSpec& spec, bool world_parent, const Pose& a0, const Pose& b0)
    : spec_(spec), world_parent_(world_parent), a0_(a0), b0_(b0) {
    const Mat3 Ra = rotation(a0.q), Rb = rotation(b0.q);
    qoff_ = conj(a0.q) * b0.q;
    if (spec.parent_frame || spec.child_frame) {
        const Quat fa = spec.parent_frame ? qnormalized(*spec.parent_frame) : Quat{};
        const Quat fb = spec.child_frame ? qnormalized(*spec.child_frame) : Quat{};
        if (!isfinite(fa) || !isfinite(fb)) {
            error("fields 'parent_frame' and 'child_frame' must be finite quaternions");
            return;
        }
        qoff_ = fa * conj(fb);
        frames_given_ = true;
    }

    auto finite_or_error = [&](const std::optional<Vec3>& v, const char* field) {
        if (v && !isfinite(*v)) {
            error(std::string("field '") + field + "' must be finite, got " + fmt_vec(*v));
            return false;
        }
        return true;
    };
    bool ok = true;
    ok &= finite_or_error(spec.anchor, "anchor");
    ok &= finite_or_error(spec.parent_anchor, "parent_anchor");
    ok &= finite_or_error(spec.child_anchor, "child_anchor");
    if (!ok) return;

    // Anchors.
    if (spec.anchor && (spec.parent_anchor || spec.child_anchor)) {
        error("give either 'anchor' (world point) or 'parent_anchor'/'child_anchor' (body frames), not both");
        return;
    }
    if (spec.anchor) {
        pa_ = transpose(Ra) * (*spec.anchor - a0.x);
        pb_ = transpose(Rb) * (*spec.anchor - b0.x);
    } else if (spec.parent_anchor && spec.child_anchor) {
        pa_ = *spec.parent_anchor;
        pb_ = *spec.child_anchor;
    } else if (spec.parent_anchor) {
        pa_ = *spec.parent_anchor;
        pb_ = transpose(Rb) * (a0.x + Ra * pa_ - b0.x);
    } else if (spec.child_anchor) {
        pb_ = *spec.child_anchor;
        pa_ = transpose(Ra) * (b0.x + Rb * pb_ - a0.x);
    } else {  // default: the child's centre of mass
        pa_ = transpose(Ra) * (b0.x - a0.x);
        pb_ = Vec3{};
    }

    // Primary axis, in the parent frame.
    if (spec.axis && spec.parent_axis) {
        error("give either 'axis' (world direction) or 'parent_axis' (parent frame), not both");
        return;
    }
    const std::optional<Vec3>& ax = spec.axis ? spec.axis : spec.parent_axis;
    if (ax) {
        const char* field = spec.axis ? "axis" : "parent_axis";
        const double n = norm(*ax);
        if (!isfinite(*ax) || !(n > 1e-12)) {
            error(std::string("field '") + field + "' must be a nonzero finite direction, got " + fmt_vec(*ax));
            return;
        }
        axis_a_ = spec.axis ? transpose(Ra) * (*ax / n) : *ax / n;
        axis_a_ok_ = true;
    }
}

Vec3 JointSetup::axis_a(const char* what) {
    if (!axis_a_ok_) {
        if (!failed_)
            error(std::string("field '") + what + "' (or 'parent_axis') is required for type '" + spec_.type + "'");
        return {0, 0, 1};
    }
    return axis_a_;
}

Vec3 JointSetup::axis2_b() {
    if (spec_.axis2 && spec_.child_axis) {
        error("give either 'axis2' (world direction) or 'child_axis' (child frame), not both");
        return {0, 0, 1};
    }
    const std::optional<Vec3>& ax = spec_.axis2 ? spec_.axis2 : spec_.child_axis;
    const char* field = spec_.axis2 ? "axis2" : "child_axis";
    if (!ax) {
        error(std::string("field 'axis2' (or 'child_axis') is required for type '") + spec_.type + "'");
        return {0, 0, 1};
    }
    const double n = norm(*ax);
    if (!isfinite(*ax) || !(n > 1e-12)) {
        error(std::string("field '") + field + "' must be a nonzero finite direction, got " + fmt_vec(*ax));
        return {0, 0, 1};
    }
    return spec_.axis2 ? transpose(rotation(b0_.q)) * (*ax / n) : *ax / n;
}

bool JointSetup::has(const std::string& key) const { return spec_.params.count(key) != 0; }

double JointSetup::number(const std::string& key, double fallback) {
    auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return fallback;
    if (it->second.size() != 1 || !std::isfinite(it->second[0])) {
        error("parameter '" + key + "' must be one finite number");
        return fallback;
    }
    return it->second[0];
}

Vec3 JointSetup::vector(const std::string& key, const Vec3& fallback) {
    auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return fallback;
    const Vec3 v = it->second.size() == 3 ? Vec3{it->second[0], it->second[1], it->second[2]} : Vec3{NAN, 0, 0};
    if (!isfinite(v)) {
        error("parameter '" + key + "' must be a finite 3-vector");
        return fallback;
    }
    return v;
}

void JointSetup::error(const std::string& msg) {
    failed_ = true;
    diags_.push_back({Severity::error, spec_.origin, "joint '" + spec_.name + "': " + msg});
}

void JointSetup::warning(const std::string& msg) {
    diags_.push_back({Severity::warning, spec_.origin, "joint '" + spec_.name + "': " + msg});
}

// ---------------------------------------------------------------------------------------------
// Primitives

namespace {
// q = (1, 0, 0, 0) exactly (the world's rotation).
inline bool is_identity(const Quat& q) { return q.w == 1 && q.x == 0 && q.y == 0 && q.z == 0; }
// a.x = 0 and a.q the identity exactly (the world's pose).
inline bool is_identity(const Pose& a) { return a.x.x == 0 && a.x.y == 0 && a.x.z == 0 && is_identity(a.q); }
// The point rows' Jacobian for body b (prim_point): ∂g/∂xb = I, ∂g/∂θb = −Rb [pb]×.
inline void point_rows_b(const Mat3& Rb, const Vec3& pb, RowWriter& w) {
    for (int i = 0; i < 3; ++i) {
        double* J = w.Jb + (w.row + i) * 6;
        const Vec3 t = -1.0 * cross(Rb.row(i), pb);
        J[0] = J[1] = J[2] = 0.0;
        J[i] = 1.0;
        J[3] = t.x, J[4] = t.y, J[5] = t.z;
    }
}
}  // namespace

void prim_point(const Pose& a, const Pose& b, const Vec3& pa, const Vec3& pb, RowWriter& w) {
    if (!w.Ja && is_identity(a)) {  // the world (or a body at its origin), no Jacobian asked of it
        // Ra = rotation(a.q) is the identity exactly and a.x zero: Ra pa is pa and subtracting a.x
        // changes nothing (but the sign of a zero), the same values as below.
        const Mat3 Rb = rotation(b.q);
        const Vec3 g = b.x + Rb * pb - pa;
        for (int i = 0; i < 3; ++i) w.g[w.row + i] = g[i];
        if (w.Jb) point_rows_b(Rb, pb, w);
        w.row += 3;
        return;
    }
    const Mat3 Ra = rotation(a.q), Rb = rotation(b.q);
    const Vec3 g = b.x + Rb * pb - a.x - Ra * pa;
    for (int i = 0; i < 3; ++i) w.g[w.row + i] = g[i];
    // ∂g/∂x = ∓I; ∂g/∂θa = Ra [pa]×, ∂g/∂θb = −Rb [pb]×, whose row i is (row i of R) × p: the
    // products of R [p]× without the terms of [p]×'s zero diagonal (each such term is a zero added
    // to the others: the same values).
    if (w.Ja)
        for (int i = 0; i < 3; ++i) {
            double* J = w.Ja + (w.row + i) * 6;
            const Vec3 t = cross(Ra.row(i), pa);
            J[0] = J[1] = J[2] = -0.0;
            J[i] = -1.0;
            J[3] = t.x, J[4] = t.y, J[5] = t.z;
        }
    if (w.Jb) point_rows_b(Rb, pb, w);
    w.row += 3;
}

Selection selection_rows(int ndof, const Vec3& axis_a) {
    Selection sel;
    sel.rows = selection(ndof, axis_a, sel.P);
    return sel;
}

RotationRows rotation_rows(int ndof, const Vec3& axis_a, const Quat& qoff) {
    return {selection_rows(ndof, axis_a), qoff, rotation(qoff)};
}

void prim_translation(const Pose& a, const Pose& b, const Selection& sel, const Vec3& pa, const Vec3& pb,
                      RowWriter& w) {
    const Mat3 Ra = rotation(a.q), Rb = rotation(b.q);
    const Mat3 RaT = transpose(Ra);
    const Vec3 r = RaT * (b.x + Rb * pb - a.x);
    if (!w.Ja && !w.Jb) {  // the value only
        for (int i = 0; i < sel.rows; ++i) w.g[w.row + i] = dot(sel.P[i], r - pa);
        w.row += sel.rows;
        return;
    }
    const Mat3 Mb = -1.0 * (RaT * Rb * skew(pb));
    const Mat3 Ma = skew(r);
    for (int i = 0; i < sel.rows; ++i) {
        const int row = w.row + i;
        const Vec3& P = sel.P[i];
        w.g[row] = dot(P, r - pa);
        const Vec3 px = Ra * P;  // (P Raᵀ) row i as a vector
        put(w.Ja, row, 0, -px);
        put(w.Ja, row, 3, rowT(Ma, P));
        put(w.Jb, row, 0, px);
        put(w.Jb, row, 3, rowT(Mb, P));
    }
    w.row += sel.rows;
}

void prim_translation(const Pose& a, const Pose& b, int ndof, const Vec3& axis_a, const Vec3& pa, const Vec3& pb,
                      RowWriter& w) {
    prim_translation(a, b, selection_rows(ndof, axis_a), pa, pb, w);
}

void prim_rotation(const Pose& a, const Pose& b, const RotationRows& rot, RowWriter& w) {
    // conj(a.q) ⊗ b.q is b.q itself when a.q is the identity exactly (the product's terms with
    // a.q's zeros are zeros: the same values, but the sign of a zero).
    const Quat r = (is_identity(a.q) ? b.q : conj(a.q) * b.q) * conj(rot.qoff);
    const Vec3 rv = r.vec();
    for (int i = 0; i < rot.sel.rows; ++i) w.g[w.row + i] = dot(rot.sel.P[i], rv);
    if (!w.Ja && !w.Jb) {  // the value only
        w.row += rot.sel.rows;
        return;
    }
    // Ma = −½ (r_w I − [rv]×) and Mb = ½ (r_w I + [rv]×) Roff, their entries written out (the
    // identity's and [rv]×'s zeros drop out of the sums: the same values).
    const double hw = 0.5 * r.w, hx = 0.5 * rv.x, hy = 0.5 * rv.y, hz = 0.5 * rv.z;
    Mat3 Ma;
    Ma.m[0][0] = Ma.m[1][1] = Ma.m[2][2] = -hw;
    Ma.m[0][1] = -hz, Ma.m[0][2] = hy;
    Ma.m[1][0] = hz, Ma.m[1][2] = -hx;
    Ma.m[2][0] = -hy, Ma.m[2][1] = hx;
    Mat3 N;
    N.m[0][0] = N.m[1][1] = N.m[2][2] = r.w;
    N.m[0][1] = -rv.z, N.m[0][2] = rv.y;
    N.m[1][0] = rv.z, N.m[1][2] = -rv.x;
    N.m[2][0] = -rv.y, N.m[2][1] = rv.x;
    const Mat3 Mb = 0.5 * (N * rot.Roff);
    for (int i = 0; i < rot.sel.rows; ++i) {
        const Vec3& P = rot.sel.P[i];
        if (double* J = w.Ja ? w.Ja + (w.row + i) * 6 : nullptr) {
            const Vec3 t = rowT(Ma, P);
            J[0] = J[1] = J[2] = 0.0;
            J[3] = t.x, J[4] = t.y, J[5] = t.z;
        }
        if (double* J = w.Jb ? w.Jb + (w.row + i) * 6 : nullptr) {
            const Vec3 t = rowT(Mb, P);
            J[0] = J[1] = J[2] = 0.0;
            J[3] = t.x, J[4] = t.y, J[5] = t.z;
        }
    }
    w.row += rot.sel.rows;
}

void prim_rotation(const Pose& a, const Pose& b, int ndof, const Vec3& axis_a, const Quat& qoff, RowWriter& w) {
    prim_rotation(a, b, rotation_rows(ndof, axis_a, qoff), w);
}

void prim_perpendicular(const Pose& a, const Pose& b, const Vec3& u_a, const Vec3& v_b, RowWriter& w) {
    const Mat3 Ra = rotation(a.q), Rb = rotation(b.q);
    const Vec3 v_in_a = transpose(Ra) * (Rb * v_b);
    const Vec3 u_in_b = transpose(Rb) * (Ra * u_a);
    const int row = w.row;
    w.g[row] = dot(u_a, v_in_a);
    put(w.Ja, row, 0, Vec3{});
    put(w.Ja, row, 3, cross(u_a, v_in_a));
    put(w.Jb, row, 0, Vec3{});
    put(w.Jb, row, 3, cross(v_b, u_in_b));
    w.row += 1;
}

// ---------------------------------------------------------------------------------------------
// Coordinate helpers

namespace {

// The hinge angle is 2 atan2(y, x), y = r_v·axis, x = r_w, r = qa† ⊗ qb ⊗ qoff†.
struct HingeRelative {
    Vec3 rv;
    double x, y;
};

inline __attribute__((always_inline)) HingeRelative hinge_relative(const Pose& a, const Pose& b, const Vec3& axis_a,
                                                                  const Quat& qoff) {
    const Quat r = conj(a.q) * b.q * conj(qoff);
    const Vec3 rv = r.vec();
    return {rv, r.w, dot(rv, axis_a)};
}

inline __attribute__((always_inline)) double hinge_unwrapped(const HingeRelative& h, const double* prev) {
    double ang = 2.0 * std::atan2(h.y, h.x);  // in (−2π, 2π]
    const double two_pi = 2.0 * M_PI;
    if (prev) ang += two_pi * std::round((*prev - ang) / two_pi);
    else ang = std::remainder(ang, two_pi);
    return ang;
}

// The angle's Jacobian rows (Ca, Cb may be null). A turn δb of b gives r ⊗ [1; u/2] with
// u = Rot(qoff) δb; a turn δa of a gives [1; −δa/2] ⊗ r. Exact everywhere; on the hinge (r_v ∥
// axis) it reduces to ∂/∂θa = −axisᵀ, ∂/∂θb = (Rbᵀ Ra axis)ᵀ. Roff: rotation(qoff) if at hand,
// else null.
inline __attribute__((always_inline)) void hinge_rows(const HingeRelative& h, const Vec3& axis_a, const Quat& qoff,
                                                      const Mat3* Roff, double* Ca, double* Cb) {
    const Vec3& rv = h.rv;
    const double x = h.x, y = h.y, den = x * x + y * y;
    if (Ca) {
        const Vec3 t = (x * (x * axis_a + cross(rv, axis_a)) + y * rv) / den;
        put(Ca, 0, 0, Vec3{});
        put(Ca, 0, 3, -t);
    }
    if (Cb) {
        const Vec3 t = (x * (x * axis_a + cross(axis_a, rv)) + y * rv) / den;
        put(Cb, 0, 0, Vec3{});
        put(Cb, 0, 3, transpose(Roff ? *Roff : rotation(qoff)) * t);
    }
}

}  // namespace

double hinge_angle(const Pose& a, const Pose& b, const Vec3& axis_a, const Quat& qoff, const double* prev) {
    return hinge_unwrapped(hinge_relative(a, b, axis_a, qoff), prev);
}

void hinge_angle_jacobian(const Pose& a, const Pose& b, const Vec3& axis_a, const Quat& qoff, double* Ca, double* Cb) {
    hinge_rows(hinge_relative(a, b, axis_a, qoff), axis_a, qoff, nullptr, Ca, Cb);
}

double hinge_angle_state(const Pose& a, const Pose& b, const Vec3& axis_a, const Quat& qoff, const Mat3& Roff,
                         const double* prev, double* Ca, double* Cb) {
    const HingeRelative h = hinge_relative(a, b, axis_a, qoff);  // formed once for both
    hinge_rows(h, axis_a, qoff, &Roff, Ca, Cb);
    return hinge_unwrapped(h, prev);
}

double slide_displacement(const Pose& a, const Pose& b, const Vec3& axis_a, const Vec3& pa, const Vec3& pb) {
    const Vec3 r = rotate_inv(a.q, b.x + rotate(b.q, pb) - a.x);
    return dot(axis_a, r - pa);
}

void slide_displacement_jacobian(const Pose& a, const Pose& b, const Vec3& axis_a, const Vec3& pb, double* Ca,
                                 double* Cb) {
    const Mat3 Ra = rotation(a.q), Rb = rotation(b.q);
    const Mat3 RaT = transpose(Ra);
    const Vec3 r = RaT * (b.x + Rb * pb - a.x);
    const Vec3 px = Ra * axis_a;
    if (Ca) {
        put(Ca, 0, 0, -px);
        put(Ca, 0, 3, rowT(skew(r), axis_a));
    }
    if (Cb) {
        put(Cb, 0, 0, px);
        put(Cb, 0, 3, rowT(-1.0 * (RaT * Rb * skew(pb)), axis_a));
    }
}

Vec3 relative_rotvec(const Pose& a, const Pose& b, const Quat& qoff) {
    return rotvec_from_quat(conj(a.q) * b.q * conj(qoff));
}

void relative_rotvec_jacobian(const Pose& a, const Pose& b, const Quat& qoff, double* Ca, double* Cb) {
    // rv = log(r), r = qa† ⊗ qb ⊗ qoff†. A body-frame turn δb of b multiplies r on the right by
    // exp(Rot(qoff) δb): d rv = Jr⁻¹(rv) Rot(qoff) δb. A turn δa of a multiplies r on the left
    // by exp(−δa): d rv = −Jl⁻¹(rv) δa. Jl⁻¹ = I − ½[φ]× + c [φ]×², Jr⁻¹ = I + ½[φ]× + c [φ]×²,
    // c = (1 − (θ/2) cot(θ/2)) / θ².
    const Vec3 phi = relative_rotvec(a, b, qoff);
    const double th = norm(phi);
    const double c = th < 1e-4 ? 1.0 / 12.0 + th * th / 720.0 : (1.0 - 0.5 * th / std::tan(0.5 * th)) / (th * th);
    const Mat3 S = skew(phi), S2 = S * S, I = Mat3::identity();
    if (Ca) {
        const Mat3 M = -1.0 * (I - 0.5 * S + c * S2);
        for (int k = 0; k < 3; ++k) {
            put(Ca, k, 0, Vec3{});
            put(Ca, k, 3, M.row(k));
        }
    }
    if (Cb) {
        const Mat3 M = (I + 0.5 * S + c * S2) * rotation(qoff);
        for (int k = 0; k < 3; ++k) {
            put(Cb, k, 0, Vec3{});
            put(Cb, k, 3, M.row(k));
        }
    }
}

Pose minimal_transform(const MinimalJoint& mj, double c) {
    Pose out;
    switch (mj.kind) {
        case MinimalJoint::Kind::prismatic:
            out.x = mj.rest.x + c * mj.axis;
            out.q = mj.rest.q;
            break;
        case MinimalJoint::Kind::revolute:
        case MinimalJoint::Kind::helical: {
            const Quat Q = quat_from_axis_angle(mj.axis, c);
            out.x = mj.point + rotate(Q, mj.rest.x - mj.point);
            if (mj.kind == MinimalJoint::Kind::helical) out.x += (mj.pitch * c) * mj.axis;
            out.q = Q * mj.rest.q;
            break;
        }
        case MinimalJoint::Kind::spherical: out = mj.rest; break;
    }
    return out;
}

void joint_coordinates(const JointInfo& j, const Pose& a, const Pose& b, const double* prev, double* out) {
    double p[kMaxJointDofs], c[kMaxJointDofs];
    if (prev)
        for (int i = 0; i < j.dofs; ++i) p[i] = prev[i] - j.offset[i];
    j.impl->coordinates(a, b, prev ? p : nullptr, c);
    for (int i = 0; i < j.dofs; ++i) out[i] = c[i] + j.offset[i];
}

void joint_coordinate_row(const JointInfo& j, const Pose& a, const Pose& b, int k, double* Ca, double* Cb) {
    double A[6 * kMaxJointDofs], B[6 * kMaxJointDofs];
    j.impl->coordinate_jacobian(a, b, j.a >= 0 ? A : nullptr, B);
    for (int col = 0; col < 6; ++col) {
        Ca[col] = j.a >= 0 ? A[6 * k + col] : 0.0;
        Cb[col] = B[6 * k + col];
    }
}

double coupling_residual(const Model& m, const CouplingInfo& c, const Pose* pose, const double* prev, double (*G)[6]) {
    double phi = 0;
    for (std::size_t t = 0; t < c.terms.size(); ++t) {
        const CouplingInfo::Term& term = c.terms[t];
        const JointInfo& j = m.joints[term.joint];
        const Pose a = j.a >= 0 ? pose[j.a] : Pose{};
        double v[kMaxJointDofs];
        joint_coordinates(j, a, pose[j.b], prev ? prev + j.dof_offset : nullptr, v);
        phi = t == 0 ? v[term.dof] : phi + term.coef * v[term.dof];  // (the follower's coef is 1)
        if (!G) continue;
        joint_coordinate_row(j, a, pose[j.b], term.dof, G[2 * t], G[2 * t + 1]);
        for (int col = 0; col < 6; ++col) G[2 * t][col] *= term.coef, G[2 * t + 1][col] *= term.coef;
    }
    return phi - c.offset;
}

double coupling_turns(const Model& m, const CouplingInfo& c, double phi) {
    const JointInfo& j = m.joints[c.joint];
    if (j.type != "revolute" && j.type != "compound") return 0;
    if (std::strncmp(j.impl->coordinate_name(c.dof), "angle", 5) != 0) return 0;
    return 2 * M_PI * std::round(phi / (2 * M_PI));
}

}  // namespace noether
