// noether/sdk/joint.hpp — the joint plugin interface and the joint SDK (constraint primitives).
//
// A joint type plugin turns a JointSpec into a JointModel at compile time. A JointModel is
// immutable and stateless: it evaluates its constraint rows g(a, b), their Jacobians with
// respect to each body's position and body-frame rotation (maximal-vi.md §1.3), its joint
// coordinates, and the Jacobian of those coordinates (which gives the coordinate rates and
// maps joint actuation to equal and opposite body wrenches).
//
// Jacobian layout: rows × 6, row-major, columns [∂g/∂x (world, 3) | ∂g/∂θ (body frame, 3)],
// where θ is the small rotation of q ⊕ δθ = normalize(q ⊗ [1; δθ/2]).
#pragma once

#include "noether/export.h"

#include <memory>
#include <string>
#include <vector>

#include "noether/limits.hpp"
#include "noether/math.hpp"
#include "noether/spec.hpp"

namespace noether {

// The minimal-coordinate description of a 1-DOF joint (for minimal-coordinate integrators):
// the child's pose in the parent frame as a function of the coordinate c is
//   T(c) = exp(S c) · T0,
// with S the unit twist of the joint in the parent body frame, and T0 the child pose in the
// parent frame at c = 0. (For a world parent, "parent frame" is the world frame.)
struct NOETHER_API MinimalJoint {
    enum class Kind { revolute, prismatic, helical, spherical } kind = Kind::revolute;
    Vec3 axis;        // unit axis, parent frame (1-DOF kinds)
    Vec3 point;       // a point on the axis, parent frame (revolute/helical); the centre (spherical)
    double pitch = 0; // helical: translation per radian
    Pose rest;        // T0: child pose in the parent frame at coordinate 0
};
// T(c) for a 1-DOF MinimalJoint (child pose in the parent frame); the rest pose for spherical.
NOETHER_API Pose minimal_transform(const MinimalJoint& mj, double c);

class NOETHER_API JointModel {
public:
    virtual ~JointModel() = default;
    virtual int rows() const = 0;  // constraint rows
    virtual int dofs() const = 0;  // free directions = coordinates = actuation inputs
    // Constraint value g (rows) and Jacobians Ja, Jb (rows × 6); Ja or Jb may be nullptr.
    // For a world parent, `a` is the identity pose and Ja is nullptr.
    virtual void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const = 0;
    // Joint coordinates (dofs values), raw: zero at the initial configuration. `prev` holds
    // the previous raw coordinates (for unwrapping angles) or is nullptr.
    virtual void coordinates(const Pose& a, const Pose& b, const double* prev, double* c) const = 0;
    // Coordinate Jacobians Ca, Cb (dofs × 6, same column layout as the constraint Jacobian):
    // rates ċ = Ca [v_a; ω_a] + Cb [v_b; ω_b] (ω in body frames); an actuation u along the
    // free directions acts on the bodies as the wrenches Caᵀ u and Cbᵀ u.
    // Ca may be nullptr (world parent).
    virtual void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const = 0;
    // Both at once, as the kernel asks after every step (Data::coord and Data::rate): the values of
    // coordinates() and coordinate_jacobian() bit for bit; a joint type may share their work.
    virtual void coordinate_state(const Pose& a, const Pose& b, const double* prev, double* c, double* Ca,
                                  double* Cb) const {
        coordinates(a, b, prev, c);
        coordinate_jacobian(a, b, Ca, Cb);
    }
    // Short name of coordinate i ("angle", "x", "rx", ...).
    virtual const char* coordinate_name(int i) const = 0;
    // 1-DOF joints and ball joints (Kind::spherical) fill `out` and return true.
    virtual bool minimal(MinimalJoint* out) const { (void)out; return false; }
};

// What a joint type sees at compile time: the spec, the initial poses and the attachment
// converted to body frames. Report problems with error()/warning(); they name the joint.
class NOETHER_API JointSetup {
public:
    JointSetup(const JointSpec& spec, bool world_parent, const Pose& a0, const Pose& b0);

    const JointSpec& spec() const { return spec_; }
    const std::string& name() const { return spec_.name; }
    bool world_parent() const { return world_parent_; }
    const Pose& a0() const { return a0_; }  // parent pose at the initial configuration (identity for the world)
    const Pose& b0() const { return b0_; }  // child pose at the initial configuration

    // Anchors in the parent (pa) and child (pb) frames.
    const Vec3& pa() const { return pa_; }
    const Vec3& pb() const { return pb_; }
    // Reference relative orientation qa† ⊗ qb: from the joint frames when the spec gives them,
    // else at the initial configuration.
    const Quat& qoff() const { return qoff_; }
    // True when the spec gives joint frames (parent_frame/child_frame): coordinates are zero
    // where the frames align, not at the initial poses.
    bool frames_given() const { return frames_given_; }
    // The primary axis in the parent frame (unit). Reports an error if the joint has none.
    Vec3 axis_a(const char* what = "axis");
    bool has_axis() const { return axis_a_ok_; }
    // The second axis (universal joint) in the child frame (unit), from `axis2` (world) or
    // `child_axis` (child frame). Reports an error if absent.
    Vec3 axis2_b();
    // A type parameter: present?, a number, a 3-vector (frame as the caller documents).
    bool has(const std::string& key) const;
    double number(const std::string& key, double fallback);
    Vec3 vector(const std::string& key, const Vec3& fallback);

    void error(const std::string& msg);
    void warning(const std::string& msg);
    bool failed() const { return failed_; }
    std::vector<Diagnostic>& diagnostics() { return diags_; }

private:
    const JointSpec& spec_;
    bool world_parent_;
    Pose a0_, b0_;
    Vec3 pa_, pb_, axis_a_;
    bool axis_a_ok_ = false;
    Quat qoff_;
    bool frames_given_ = false;
    bool failed_ = false;
    std::vector<Diagnostic> diags_;
};

class NOETHER_API JointType {
public:
    virtual ~JointType() = default;
    // Type-specific parameter names accepted in JointSpec::params (others are errors).
    virtual std::vector<std::string> parameters() const { return {}; }
    // Build the joint, or report through setup.error() and return nullptr.
    virtual std::unique_ptr<JointModel> compile(JointSetup& setup) const = 0;
};

// ---------------------------------------------------------------------------------------------
// Joint SDK: constraint primitives (maximal-vi.md §5). Each appends its rows to a RowWriter.
// Parent a (pose `a`; identity for the world), child b.

// Where primitives write: g[row…], Ja[row…][6], Jb[row…][6]. Ja/Jb may be nullptr.
struct NOETHER_API RowWriter {
    double* g;
    double* Ja;
    double* Jb;
    int row = 0;
};

// C: point coincidence, 3 rows (world frame): g = xb + Rb pb − xa − Ra pa.
NOETHER_API void prim_point(const Pose& a, const Pose& b, const Vec3& pa, const Vec3& pb, RowWriter& w);
// O(ndof, axis): translational, 3 − ndof rows, in frame a: g = P (Raᵀ(xb + Rb pb − xa) − pa).
// ndof = 0: all three; 1: the two directions ⟂ axis (point moves on a line); 2: along axis (plane).
NOETHER_API void prim_translation(const Pose& a, const Pose& b, int ndof, const Vec3& axis_a, const Vec3& pa, const Vec3& pb,
                      RowWriter& w);
// Rot(ndof, axis, qoff): rotational, 3 − ndof rows: g = P V (qa† ⊗ qb ⊗ qoff†) (half-angle units).
// ndof = 0: orientation locked; 1: hinge about axis; 2: no relative rotation about axis.
NOETHER_API void prim_rotation(const Pose& a, const Pose& b, int ndof, const Vec3& axis_a, const Quat& qoff, RowWriter& w);
// The same two primitives with their per-joint constants (the selection rows P and Rot(qoff))
// computed once, when the joint is built: joint models call these from constraint(), which the
// integrators evaluate several times per step. Results are identical to the forms above.
struct NOETHER_API Selection {
    int rows = 0;
    Vec3 P[3];
};
NOETHER_API Selection selection_rows(int ndof, const Vec3& axis_a);
struct NOETHER_API RotationRows {
    Selection sel;
    Quat qoff;
    Mat3 Roff;  // rotation(qoff)
};
NOETHER_API RotationRows rotation_rows(int ndof, const Vec3& axis_a, const Quat& qoff);
NOETHER_API void prim_translation(const Pose& a, const Pose& b, const Selection& sel, const Vec3& pa, const Vec3& pb,
                                  RowWriter& w);
NOETHER_API void prim_rotation(const Pose& a, const Pose& b, const RotationRows& rot, RowWriter& w);
// SO(u, v): one row, u (frame a) ⟂ v (frame b): g = uᵀ Raᵀ Rb v.
NOETHER_API void prim_perpendicular(const Pose& a, const Pose& b, const Vec3& u_a, const Vec3& v_b, RowWriter& w);

// The two unit vectors completing `axis` to a right-handed orthonormal frame (the selection
// P of the primitives uses exactly these).
NOETHER_API void axis_basis(const Vec3& axis, Vec3& e1, Vec3& e2);

// Coordinate helpers for plugins.
// Hinge angle about axis_a of the relative rotation qa† ⊗ qb ⊗ qoff†, unwrapped to be within π
// of prev (if given).
NOETHER_API double hinge_angle(const Pose& a, const Pose& b, const Vec3& axis_a, const Quat& qoff, const double* prev);
// Exact Jacobian rows (1 × 6 each, position columns zero) of hinge_angle. On the hinge they are
// ∂angle/∂θa = −axisᵀ and ∂angle/∂θb = (Rbᵀ Ra axis)ᵀ.
NOETHER_API void hinge_angle_jacobian(const Pose& a, const Pose& b, const Vec3& axis_a, const Quat& qoff, double* Ca, double* Cb);
// hinge_angle and hinge_angle_jacobian at once (Roff = rotation(qoff); Ca may be nullptr): the same
// values bit for bit, the relative rotation formed once.
NOETHER_API double hinge_angle_state(const Pose& a, const Pose& b, const Vec3& axis_a, const Quat& qoff, const Mat3& Roff,
                                     const double* prev, double* Ca, double* Cb);
// Displacement of b's anchor along axis_a from a's anchor: axisᵀ (Raᵀ(xb + Rb pb − xa) − pa),
// and its Jacobian rows.
NOETHER_API double slide_displacement(const Pose& a, const Pose& b, const Vec3& axis_a, const Vec3& pa, const Vec3& pb);
NOETHER_API void slide_displacement_jacobian(const Pose& a, const Pose& b, const Vec3& axis_a, const Vec3& pb, double* Ca,
                                 double* Cb);

// Rotation vector (frame a) of the relative rotation qa† ⊗ qb ⊗ qoff†, angle in [0, π], and
// its exact Jacobian rows (3 × 6 each; singular at π like every 3-parameter rotation).
NOETHER_API Vec3 relative_rotvec(const Pose& a, const Pose& b, const Quat& qoff);
NOETHER_API void relative_rotvec_jacobian(const Pose& a, const Pose& b, const Quat& qoff, double* Ca, double* Cb);

}  // namespace noether
