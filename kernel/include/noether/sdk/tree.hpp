// noether/sdk/tree.hpp — the tree view of a compiled Model, for minimal-coordinate integrators.
//
// A Model stores bodies and joint constraints (maximal coordinates). A minimal-coordinate
// integrator (riqn, docs/design/riqn.md) needs the same mechanism as a tree of links moved by
// joint coordinates. build_tree_view() derives it:
//   * links in parents-first order: the kernel's elimination list read backwards;
//   * bodies joined by fixed joints are merged into one link (composite mass and inertia about
//     the composite centre of mass, axes of the link's first body); bodies welded to the world
//     are part of the world;
//   * three kinds of link joint (TreeJoint), each with nq position and nv velocity coordinates:
//       screw (revolute, prismatic, helical; nq = nv = 1): a unit screw A (parent link frame)
//         and the link's pose M at coordinate 0: T(q) = exp(A q) · M = M · exp(S q),
//         S = Ad_{M⁻¹} A. q is the joint's raw coordinate (Data::coord − offset), so the view
//         and the joint plugins agree on every angle and displacement;
//       ball (spherical; nq = 4, nv = 3): q is the unit quaternion E (w, x, y, z) of the turn
//         from the rest pose M about the joint centre c (link frame):
//         T(E) = M · [E, c − E c]; velocities are the relative angular velocity in the link
//         frame, S = [I; c×];
//       free (the root of a floating component; nq = 7, nv = 6): q = (x, y, z, w, qx, qy, qz)
//         is the link's world pose, velocities its body twist [ω; v], S = I;
//   * a joint whose tree direction is the reverse of its spec (the parent is reached through
//     the child) gets the inverse transform: the same coordinate, the screw negated (a ball
//     joint is symmetric: its centre in the other link).
// A Model the view cannot take — a loop closure, a joint of another kind (universal, planar,
// ...), a joint plugin without a minimal description — is refused with one diagnostic per
// offending element, naming it and the integrator that can take it.
//
// Twists are [ω; v] and wrenches [n; f], in link frames at the link centre of mass. Vectors of
// positions have TreeView::nq entries (link i at links[i].iq), velocities, forces and
// impulses TreeView::nv (link i at links[i].iv); for a tree of screw joints both are the link
// index.
#pragma once

#include "noether/export.h"

#include <string>
#include <vector>

#include "noether/error.hpp"
#include "noether/sdk/joint.hpp"
#include "noether/math.hpp"
#include "noether/sdk/spatial.hpp"

namespace noether {

class Data;

struct Model;

enum class TreeJoint { screw, ball, free };

struct NOETHER_API TreeLink {
    int parent = -1;      // parent link (−1 = the world); parents come before children
    int joint = -1;       // the Model joint that moves this link (−1 for a free root)
    int dof = -1;         // its first index into Data::coord / rate / actuation (−1: free)
    TreeJoint type = TreeJoint::screw;
    int nq = 1, nv = 1;   // position and velocity coordinates: 1/1 screw, 4/3 ball, 7/6 free
    int iq = 0, iv = 0;   // offsets into position and velocity vectors
    int id = 0;           // offset of the link's nv×nv block in TreeABI::D
    int body = -1;        // the Model body the link frame is built on (its first body)
    MinimalJoint::Kind kind = MinimalJoint::Kind::revolute;
    double A[6] = {0, 0, 0, 0, 0, 0};  // unit screw of the joint, parent link frame [ω; v]
    double S[6] = {0, 0, 0, 0, 0, 0};  // the same screw in the link frame (constant)
    Vec3 centre;          // ball: the joint centre c in the link frame
    Frame M;              // link pose in the parent link frame at q = 0 (identity for free)
    double mass = 0;      // composite
    Mat3 inertia;         // composite, about the link centre of mass, link axes
    double damping = 0, stiffness = 0;  // screw joints (ball springs act as wrenches)
    double rest = 0;      // spring rest position as a raw coordinate (rest − offset)
    // A screw link's T(q) = exp(A q) · M multiplied out (build_tree_view; link_set_screw after a
    // change of A or M): entrywise
    // T0 + cos q · Tc + sin q · Ts, and q · pq added to the translation; a screw that does not
    // turn (prismatic, ω = 0: turns false) is T0 + q · pq.
    Frame T0, Tc, Ts;
    Vec3 pq;
    bool turns = false;
};
// Column k < nv of the link's motion subspace S (link frame).
NOETHER_API void link_motion(const TreeLink& l, int k, double* s);

struct NOETHER_API TreeView {
    std::vector<TreeLink> links;     // parents first
    std::vector<int> body_link;      // per Model body: its link, −1 = welded to the world
    std::vector<Frame> body_offset;  // per Model body: pose in its link frame (world frame if welded)
    int nq = 0, nv = 0;              // position and velocity coordinates of the whole tree
    int nd = 0;                      // Σ nv² (TreeABI::D)
    bool screws_only = true;         // every link a screw joint (nq = nv = size())
    int size() const { return static_cast<int>(links.size()); }
};

// Build the view of m, or append one error per element it cannot take and return false.
// `integrator` names the caller in the errors.
NOETHER_API bool build_tree_view(const Model& m, const char* integrator, TreeView& out, std::vector<Diagnostic>& errors);
// The same, with loop-closure joints left out of the view instead of refused (the view is the
// spanning tree; an integrator that keeps the loops as constraints takes them from
// BlockGraph::loop_joints).
NOETHER_API bool build_tree_view(const Model& m, const char* integrator, TreeView& out, std::vector<Diagnostic>& errors,
                                 bool allow_loops);

// Expresses the view in the world frame moved to the point c (every point p becomes p − c): the
// rest poses M of the links attached to the world, their screws A (v − c × ω) and the offsets of
// the bodies welded to the world. Link frames and everything relative are unchanged, so poses
// computed from the view (tree_link_poses, tree_body_poses) come out relative to c, and body poses
// handed to it (tree_coordinates) must be given relative to c; a free link's coordinates, its pose,
// are then its pose relative to c. A minimal-coordinate integrator far from the world origin works
// near c instead, where positions keep their precision (at 100 km a position is resolved to
// 1.5e-11 m, above a step's tolerance; relative to the mechanism it is exact).
NOETHER_API void tree_rebase(TreeView& t, const Vec3& c);
// Where a view sits after tree_rebase_far: the point c it was moved to (moved false: left as built,
// c zero) and the conversions at an integrator's boundary, which do nothing for a view left as built.
struct TreeOrigin {
    Vec3 c;
    bool moved = false;
    // Data's body poses as the view takes them (tree_coordinates): `world` itself, or relative to
    // c, written to `scratch` (the same size).
    const Pose* view_poses(const std::vector<Pose>& world, std::vector<Pose>& scratch) const {
        if (!moved) return world.data();
        for (std::size_t b = 0; b < world.size(); ++b) scratch[b] = {world[b].x - c, world[b].q};
        return scratch.data();
    }
    // Body poses the view gave (tree_body_poses: relative to c) back in the world, in place.
    void to_world(std::vector<Pose>& poses) const {
        if (moved)
            for (Pose& p : poses) p.x = p.x + c;
    }
    // The world frame as the view sees it (a loop joint's parent when that is the world).
    Pose world() const { return moved ? Pose{-1.0 * c, Quat{}} : Pose{}; }
};
// tree_rebase to the position of the first root link (its rest position; a free root: its body's
// initial position in m) when that lies farther than kNearOrigin from the origin (a scene of several
// trees far apart keeps the precision of the first); returns where the view sits (not moved: left as
// it is, bit for bit — scenes near the origin step exactly as without it). The point depends on the
// Model only, so states saved and restored agree on it.
constexpr double kNearOrigin = 16;  // m
NOETHER_API TreeOrigin tree_rebase_far(const Model& m, TreeView& t);

// The joint coordinate offset of a screw link's joint (Data::coord = raw coordinate + offset).
NOETHER_API double tree_link_offset(const Model& m, const TreeLink& l);

// An integrator in joint coordinates reporting its own (StepReport::coordinates): Data::coord from
// the view's screw coordinates q (raw + offset) and Data::rate from the rates v, both indexed as
// the view's. True if written; false, with nothing written, unless every link is a screw and the
// view holds every DOF of the Model (a loop joint with coordinates of its own: the kernel's then).
NOETHER_API bool tree_write_coordinates(const Model& m, const TreeView& t, const double* q, const double* v, Data& d);

// exp(A q) for a unit screw (|ω| = 1, or ω = 0 and |v| = 1): the exact exponential.
NOETHER_API Frame screw_exp(const double* A, double q);
// The exponential of any twist x = [φ; ρ] on SE(3): (exp(φ×), Jl(φ) ρ).
NOETHER_API Frame se3_exp(const double* x);
// T(q) = exp(A q) · M: a screw link's pose in its parent link frame (from T0, Tc, Ts, pq).
NOETHER_API Frame link_transform(const TreeLink& l, double q);
// Sets a screw link's T0, Tc, Ts, pq and turns from its A and M (build_tree_view does it for the
// links it builds).
NOETHER_API void link_set_screw(TreeLink& l);
// The pose of any link in its parent link frame from its nq coordinates q (= &positions[iq]).
NOETHER_API Frame link_transform(const TreeLink& l, const double* q);
// q ⊕ v: the link's coordinates moved by the velocity-space step v (nv values) — q + v for a
// screw, E ⊗ exp(v) for a ball, g · exp(v) (SE(3)) for a free link; T(q ⊕ v) = T(q) · exp(S v).
NOETHER_API void link_retract(const TreeLink& l, const double* q, const double* v, double* out);
// v = q1 ⊖ q0, the inverse of link_retract (rotations below π).
NOETHER_API void link_difference(const TreeLink& l, const double* q0, const double* q1, double* v);
// The coordinates of T = M: 0, the identity quaternion, the identity pose for a free link.
NOETHER_API void link_neutral(const TreeLink& l, double* q);
// World poses of every link at coordinates q (nq).
NOETHER_API void tree_link_poses(const TreeView& t, const double* q, Frame* g);
// World poses of every Model body from the link poses. Each quaternion takes the sign closest to
// sign_ref[b] (may be null).
NOETHER_API void tree_body_poses(const TreeView& t, const Frame* link_g, const Pose* sign_ref, Pose* out);
// Coordinates read from Model body poses: q_i from the relative pose of link i in its parent,
// angles unwrapped to within π of prev (may be null), quaternions signed as in prev (or w ≥ 0).
NOETHER_API void tree_coordinates(const TreeView& t, const Pose* body_poses, const double* prev, double* q);
// Link twists (link frames) from velocities (nv): V_i = Ad_{T_i⁻¹} V_parent + S_i q̇_i.
NOETHER_API void tree_link_twists(const TreeView& t, const double* q, const double* qdot, double (*V)[6]);
// The same with the link transforms T_i = link_transform(link i, q) already at hand (bit for bit).
NOETHER_API void tree_link_twists(const TreeView& t, const Frame* T, const double* qdot, double (*V)[6]);
// The Data::twist of Model body b (ω in the body frame, v of its centre of mass in the world) from
// the link poses and link twists V (tree_link_twists); zero for a body welded to the world.
NOETHER_API Twist tree_body_twist(const TreeView& t, const Frame* link_g, const double (*V)[6], int b);

// Adds the wrenches of the Model's bodies (Wrench: force in the world, torque in the body frame,
// about the body's centre of mass; body_wrenches()) to their links' F (6 per link, link frame, about
// the link's centre of mass) at link poses g. Bodies welded to the world are skipped.
inline void tree_add_body_wrenches(const TreeView& t, const Frame* g, const Wrench* w, double* F) {
    for (std::size_t b = 0; b < t.body_link.size(); ++b) {
        const int L = t.body_link[b];
        if (L < 0) continue;
        const Frame& o = t.body_offset[b];
        const Vec3 f = transpose(g[L].R) * w[b].force;
        const Vec3 n = o.R * w[b].torque + cross(o.p, f);
        double* Fl = &F[6 * L];
        Fl[0] += n.x, Fl[1] += n.y, Fl[2] += n.z, Fl[3] += f.x, Fl[4] += f.y, Fl[5] += f.z;
    }
}

// A link's spatial inertia [J, 0; 0, m I] about its centre of mass, link axes (6×6, row-major).
inline void spatial_inertia(const TreeLink& l, double* G) {
    for (int k = 0; k < 36; ++k) G[k] = 0;
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b) G[6 * a + b] = l.inertia(a, b);
        G[6 * (a + 3) + a + 3] = l.mass;
    }
}

// ---- articulated-body passes (riqn.md §5.2) ---------------------------------------------------
// At fixed link transforms T (T[i] = link_transform(link i, q_i)), with an optional diagonal k
// (nv) added to the joint-space mass matrix: setup builds the articulated inertias of
// M(q) + diag(k) in O(n); solve returns Δv = (M(q) + diag(k))⁻¹ u in O(n) (u, Δv: nv).
// Workspaces are sized on first use.
struct NOETHER_API TreeABI {
    std::vector<double> IA;        // articulated inertia per link, 6×6
    std::vector<double> U;         // IA·S: 6 per velocity
    std::vector<double> P, dV;     // 6 per link
    std::vector<double> D;         // per link: Sᵀ IA S + k (nv = 1), its inverse (nv > 1)
    std::vector<double> u;         // per velocity
};
NOETHER_API void tree_abi_setup(const TreeView& t, const Frame* T, const double* k, TreeABI& w);
NOETHER_API void tree_abi_solve(const TreeView& t, const Frame* T, TreeABI& w, const double* u, double* dq);
// The dense joint-space mass matrix M(q) (nv×nv, row-major) by the composite-rigid-body algorithm;
// every entry is written (zero between links on different branches).
NOETHER_API void tree_mass_matrix(const TreeView& t, const double* q, double* M);

}  // namespace noether
