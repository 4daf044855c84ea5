// noether/spec.hpp — the mutable description of a mechanism (Spec → Model → Data, step 1).
//
// A Spec is plain data with defaults: name only what differs. Lua scripts, the URDF importer
// and C/C++ hosts all build one. Every element keeps its Origin so compile() can name it.
#pragma once

#include "noether/export.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "noether/error.hpp"
#include "noether/math.hpp"

namespace noether {

// A shape drawn for a body by the viewer (docs/viewer.md; no contact, no mass): in the body's
// frame, whose origin is the centre of mass. A body without shapes is drawn as the box of its
// inertia (the uniform box with the same mass and principal moments).
// A triangle mesh for the viewer: vertices (x, y, z per vertex, in the shape's frame, scale
// applied) and triangles (three vertex indices each); where it was read from.
struct NOETHER_API MeshData {
    std::vector<float> vertices;
    std::vector<std::uint32_t> triangles;
    std::string source;
};

struct NOETHER_API Shape {
    enum class Type { box, sphere, cylinder, capsule, mesh };
    Type type = Type::box;
    // box: full edge lengths (x, y, z); sphere: (radius, -, -); cylinder and capsule: (radius,
    // length, -) along the shape's z axis (a capsule's length without its end caps); mesh: the
    // extents of its vertices' bounding box (for the viewer's camera; the mesh is in `mesh`).
    Vec3 size;
    Pose pose;                               // shape frame in the body frame
    double rgba[4] = {0.62, 0.66, 0.72, 1};  // colour, each in [0, 1]
    std::shared_ptr<const MeshData> mesh;    // a mesh shape's triangles (shared between copies)
};
NOETHER_API const char* shape_type_name(Shape::Type t);
// The uniform box with this mass and inertia (about the CoM), along its principal axes: what the
// viewer draws for a body without shapes.
NOETHER_API Shape inertia_box(double mass, const Mat3& inertia);

struct NOETHER_API BodySpec {
    std::string name;
    double mass = 1.0;
    Mat3 inertia = Mat3::identity();  // about the CoM, body axes [kg m²]
    Vec3 position;                    // CoM, world [m]
    Quat orientation;                 // body → world
    Vec3 velocity;                    // CoM, world [m/s]
    Vec3 angular_velocity;            // [rad/s], world frame unless angular_velocity_in_body
    bool angular_velocity_in_body = false;
    std::vector<Shape> shapes;        // what the viewer draws (none: the inertia box)
    Origin origin;
};

// A joint between a parent (a body, or the world) and a child body.
//
// Attachment is given in one of two styles:
//  * world style: `anchor` (world point) and `axis` (world direction) at the initial
//    configuration; `axis2` is the second axis where a type needs one (universal);
//  * body style: `parent_anchor`/`child_anchor` (points in each body's frame),
//    `parent_axis` (frame of the parent), `child_axis` (frame of the child; the second axis
//    of a universal joint).
// A servo actuator on a 1-DOF joint (docs/servos.md): the generalized force
//   u = clamp(kp (target − θ) + kv (target_velocity − θ̇), −effort_limit, effort_limit)
// (θ the joint coordinate as reported, raw + offset), integrated implicitly by the variational
// integrators. A position servo has kp > 0 and kv >= 0, its target defaulting to the joint's
// initial coordinate (it holds the initial pose); a velocity servo has kv > 0 and no kp. The
// gains and targets here are the initial values of inputs a host or controller may change every
// step (Data::servo_kp, servo_kv, target_position, target_velocity).
struct NOETHER_API ServoSpec {
    enum class Kind { none, position, velocity };
    Kind kind = Kind::none;
    double kp = 0, kv = 0;
    std::optional<double> target;  // position servo: default the initial coordinate
    double target_velocity = 0;
    double effort_limit = INFINITY;  // > 0 [N m or N]
    Origin origin;                   // where it was declared (empty: the joint's)
};

// A missing anchor defaults to the child's CoM at the initial configuration (world style) or
// to the point that makes the joint assembled (body style).
struct NOETHER_API JointSpec {
    std::string name;
    std::string type;    // plugin name: "revolute", "spherical", ...
    std::string parent;  // body name, or "world" (also "")
    std::string child;   // body name

    std::optional<Vec3> anchor, axis, axis2;                           // world style
    std::optional<Vec3> parent_anchor, child_anchor, parent_axis, child_axis;  // body style
    // Orientation of the joint frame in each body's frame (body style, e.g. from URDF). When
    // given, the joint's reference relative orientation and the zero of its coordinates come
    // from these frames (aligned frames = zero), not from the initial poses: the joint then
    // means the same even if the initial poses do not satisfy it (see assemble()).
    std::optional<Quat> parent_frame, child_frame;

    // Joint-space force elements, per degree of freedom (one value = the same for every DOF).
    std::vector<double> stiffness, damping, rest;
    // Armature: an inertia on the joint coordinate itself (a geared rotor's reflected inertia,
    // MuJoCo's armature), kinetic energy ½ a q̇², per DOF (≥ 0; not on spherical joints; docs/integrators.md).
    std::vector<double> armature;
    // Joint coordinates at the initial configuration (default 0): reported coordinate = raw + offset.
    std::vector<double> offset;

    // Joint limits per DOF (±inf: no limit on that side). Enforced when `limited` (revolute and
    // prismatic joints, by the integrators that take inequalities: docs/contact.md); otherwise
    // kept in the Model for output only.
    std::vector<double> lower, upper;
    bool limited = false;

    ServoSpec servo;  // kind none: no servo

    // Type-specific parameters (e.g. helical "pitch"). The type plugin lists the names it accepts.
    std::map<std::string, std::vector<double>> params;

    Origin origin;
};

// A constant wrench on a body, for the whole run.
struct NOETHER_API ForceSpec {
    std::string body;
    Vec3 force;                   // [N]
    Vec3 torque;                  // [N m]
    bool body_frame = false;      // force and torque given in the body frame (else world)
    std::optional<Vec3> point;    // application point in the body frame (default: CoM)
    Origin origin;
};

// A contact (docs/contact.md): a shape on a body that may not pass into a half-space (the ground
// z >= 0 by default) or, for a sphere, into a sphere on another body. Contacts are declared pairs
// (no broad phase): a box is its 8 corners, a capsule its 2 end spheres, each a contact point.
struct NOETHER_API ContactSpec {
    enum class Type { point, sphere, capsule, box };
    std::string name;     // optional: default "<body>/contact<k>"
    std::string body;     // the body carrying the shape
    Type type = Type::point;
    // sphere: (radius, -, -); capsule: (radius, length, -) along the shape's z axis (length
    // without the end caps); box: full edge lengths (x, y, z); point: unused.
    Vec3 size;
    Pose pose;            // shape frame in the body frame (a point: its position)
    // The half-space n·y >= offset (world; n need not be unit length: it is normalised).
    Vec3 normal{0, 0, 1};
    double offset = 0;
    // Instead of the half-space, a sphere on another body (sphere shapes only): its radius and
    // centre in that body's frame.
    std::string other;
    double other_radius = 0;
    Vec3 other_position;
    double mu = 0;        // Coulomb friction coefficient (0: frictionless)
    Origin origin;
};
NOETHER_API const char* contact_type_name(ContactSpec::Type t);
// The contact points a ContactSpec expands into, in its body's frame — a box's 8 corners, a
// capsule's 2 end centres, a sphere's centre, the point — and their radius (0 for a point or box).
NOETHER_API void contact_points(const ContactSpec& c, std::vector<Vec3>& points, double& radius);

// A coupling between joint coordinates (docs/couplings.md): the follower's coordinate is held at
//   q_joint = ratio · q_leader + offset
// or, with a range (`range`), kept within it: lower <= q_joint − ratio · q_leader − offset <= upper (a
// limit on a combination of the coordinates: MuJoCo's fixed tendon with a range)
// (both coordinates as reported, raw + the joint's offset) — a gear pair (a rotor turning `ratio`
// times its link), URDF's <mimic>, MuJoCo's joint equality. `dof` picks the coordinate of a joint
// with several (a compound joint's k-th motion); spherical joints cannot be coupled. Enforced by the
// integrators that take couplings (Integrator::takes_couplings: every integrator but riqn; a range, an
// inequality, only by those that take inequalities), refused by the others.
//
// Further leaders (`more`) make it a general linear relation over up to kMaxCouplingTerms
// coordinates, q_joint = ratio · q_leader + Σ more[k].ratio · q_more[k] + offset — MuJoCo's fixed
// tendon over three or four joints, a differential.
struct NOETHER_API CouplingSpec {
    struct Leader {
        std::string joint;
        int dof = 0;
        double ratio = 0;  // finite, nonzero
    };
    std::string name;     // optional: default "<joint>/coupling"
    std::string joint;    // the follower
    int dof = 0;
    std::string leader;
    int leader_dof = 0;
    double ratio = 1;     // finite, nonzero
    double offset = 0;    // [rad or m]
    bool range = false;   // an inequality: lower <= q_joint − ratio · q_leader − offset <= upper
    double lower = -INFINITY, upper = INFINITY;
    std::vector<Leader> more;  // further leaders (at most kMaxCouplingTerms − 2)
    Origin origin;
};
// The most coordinates one coupling relates (follower, leader and further leaders).
constexpr int kMaxCouplingTerms = 4;

struct NOETHER_API Options {
    std::string integrator = "vi-maximal";  // the default integrator: the one plugin the kernel names
    std::string solver = "auto";  // "auto": the supported solver with the highest preference (Solver::preference)
    double dt = 0.01;
    double tolerance = 1e-10;     // Newton residual tolerance
    int max_iterations = 50;      // Newton iterations per step
    int max_halvings = 10;        // line-search halvings per iteration
    int max_substeps = 16;        // recovery: a failed step is retried as 2, 4, … up to this many substeps
    // Integrator-specific options (validated by the integrator plugin, unknown names are errors).
    std::map<std::string, double> extra;
    std::map<std::string, std::vector<std::string>> extra_lists;
};

struct NOETHER_API Spec {
    Origin origin;  // where the world was declared (for errors in gravity and options)
    Vec3 gravity{0, 0, -9.81};
    Options options;
    std::vector<BodySpec> bodies;
    std::vector<JointSpec> joints;
    std::vector<ForceSpec> forces;
    std::vector<ContactSpec> contacts;
    std::vector<CouplingSpec> couplings;
    std::vector<std::string> plugin_dirs;  // searched after the built-in dir and NOETHER_PLUGIN_PATH

    BodySpec& add_body(const std::string& name) {
        bodies.emplace_back();
        bodies.back().name = name;
        return bodies.back();
    }
    JointSpec& add_joint(const std::string& name, const std::string& type, const std::string& parent,
                         const std::string& child) {
        joints.emplace_back();
        JointSpec& j = joints.back();
        j.name = name;
        j.type = type;
        j.parent = parent;
        j.child = child;
        return j;
    }
};

// Move the bodies of `spec` to the nearest configuration that satisfies every joint and coupling:
// Gauss–Newton on all constraint rows with minimum-norm steps from the given poses (redundant rows are fine).
// An already satisfied configuration is left exactly as it is. Throws ModelError if the spec
// does not compile.
struct NOETHER_API AssemblyReport {
    double initial_violation = 0, final_violation = 0;
    double largest_move = 0;      // largest translation of a body's centre of mass [m]
    double largest_rotation = 0;  // largest rotation of a body [rad]
    std::string moved_body;       // the body that moved most
    int iterations = 0;
    bool converged = true;
};
NOETHER_API AssemblyReport assemble(Spec& spec, double tolerance = 1e-12, int max_iterations = 100);

}  // namespace noether
