// noether/tree.hpp — the tree view of a compiled Model, for minimal-coordinate integrators.
//
// A Model stores bodies and joint constraints (maximal coordinates). A minimal-coordinate
// integrator (riqn, docs/design/riqn.md) needs the same mechanism as a tree of links moved by
// 1-DOF joint coordinates. build_tree_view() derives it:
//   * links in parents-first order: the kernel's elimination list read backwards;
//   * bodies joined by fixed joints are merged into one link (composite mass and inertia about
//     the composite centre of mass, axes of the link's first body); bodies welded to the world
//     are part of the world;
//   * per link, the joint from its parent as a unit screw A (parent link frame) and the link's
//     pose M at coordinate 0: T(q) = exp(A q) · M = M · exp(S q), S = Ad_{M⁻¹} A. The
//     coordinate q is the joint's raw coordinate (Data::coord − offset), so the view and the
//     joint plugins agree on every angle and displacement;
//   * a joint whose tree direction is the reverse of its spec (the parent is reached through
//     the child) gets the inverse transform: the same coordinate, the screw negated.
// A Model the view cannot take — a loop closure, a joint with more than one degree of freedom,
// a joint plugin without a minimal description, a free-floating body — is refused with one
// diagnostic per offending element, naming it and the integrator that can take it.
//
// Twists are [ω; v] and wrenches [n; f], in link frames at the link centre of mass.
#pragma once

#include "noether/export.h"

#include <string>
#include <vector>

#include "noether/error.hpp"
#include "noether/joint.hpp"
#include "noether/math.hpp"

namespace noether {

struct Model;

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

struct NOETHER_API TreeLink {
    int parent = -1;      // parent link (−1 = the world); parents come before children
    int joint = -1;       // the Model joint that moves this link
    int dof = -1;         // its index into Data::coord / rate / actuation
    int body = -1;        // the Model body the link frame is built on (its first body)
    MinimalJoint::Kind kind = MinimalJoint::Kind::revolute;
    double A[6] = {0, 0, 0, 0, 0, 0};  // unit screw of the joint, parent link frame [ω; v]
    double S[6] = {0, 0, 0, 0, 0, 0};  // the same screw in the link frame (constant)
    Frame M;              // link pose in the parent link frame at q = 0
    double mass = 0;      // composite
    Mat3 inertia;         // composite, about the link centre of mass, link axes
    double damping = 0, stiffness = 0;
    double rest = 0;      // spring rest position as a raw coordinate (rest − offset)
};

struct NOETHER_API TreeView {
    std::vector<TreeLink> links;     // parents first
    std::vector<int> body_link;      // per Model body: its link, −1 = welded to the world
    std::vector<Frame> body_offset;  // per Model body: pose in its link frame (world frame if welded)
    int size() const { return static_cast<int>(links.size()); }
};

// Build the view of m, or append one error per element it cannot take and return false.
// `integrator` names the caller in the errors.
NOETHER_API bool build_tree_view(const Model& m, const char* integrator, TreeView& out, std::vector<Diagnostic>& errors);

// exp(A q) for a unit screw (|ω| = 1, or ω = 0 and |v| = 1): the exact exponential.
NOETHER_API Frame screw_exp(const double* A, double q);
// T(q) = exp(A q) · M: the link's pose in its parent link frame.
NOETHER_API Frame link_transform(const TreeLink& l, double q);
// World poses of every link at coordinates q.
NOETHER_API void tree_link_poses(const TreeView& t, const double* q, Frame* g);
// World poses of every Model body from the link poses. Each quaternion takes the sign closest to
// sign_ref[b] (may be null).
NOETHER_API void tree_body_poses(const TreeView& t, const Frame* link_g, const Pose* sign_ref, Pose* out);
// Coordinates read from Model body poses: q_i from the relative pose of link i in its parent,
// angles unwrapped to within π of prev (may be null).
NOETHER_API void tree_coordinates(const TreeView& t, const Pose* body_poses, const double* prev, double* q);
// Link twists (link frames) from coordinate rates: V_i = Ad_{T_i⁻¹} V_parent + S_i q̇_i.
NOETHER_API void tree_link_twists(const TreeView& t, const double* q, const double* qdot, double (*V)[6]);

// ---- articulated-body passes (riqn.md §5.2) ---------------------------------------------------
// At fixed link transforms T (T[i] = link_transform(link i, q_i)), with an optional diagonal k
// added to the joint-space mass matrix: setup builds the articulated inertias of M(q) + diag(k)
// in O(n); solve returns Δq = (M(q) + diag(k))⁻¹ u in O(n). Workspaces are sized on first use.
struct NOETHER_API TreeABI {
    std::vector<double> X;   // Ad_{T_i⁻¹} per link, 6×6 row-major
    std::vector<double> IA;  // articulated inertia per link, 6×6
    std::vector<double> U, P, dV;  // 6 per link
    std::vector<double> D, u;      // per link
};
NOETHER_API void tree_abi_setup(const TreeView& t, const Frame* T, const double* k, TreeABI& w);
NOETHER_API void tree_abi_solve(const TreeView& t, const Frame* T, TreeABI& w, const double* u, double* dq);
// The dense joint-space mass matrix M(q) (n×n, row-major) by the composite-rigid-body algorithm;
// every entry is written (zero between links on different branches).
NOETHER_API void tree_mass_matrix(const TreeView& t, const double* q, double* M);

}  // namespace noether
