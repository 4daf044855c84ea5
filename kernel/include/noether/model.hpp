// noether/model.hpp — the compiled, immutable mechanism (Spec → Model → Data, step 2).
//
// compile() validates a Spec, reports every problem with the element's name and origin, the
// rule and the offending value, resolves plugin types and builds the block graph. A Model is
// immutable and may be shared by any number of Data and threads.
#pragma once

#include "noether/export.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "noether/error.hpp"
#include "noether/graph.hpp"
#include "noether/sdk/joint.hpp"
#include "noether/math.hpp"
#include "noether/spec.hpp"

namespace noether {

class Integrator;
class Solver;

struct NOETHER_API BodyInfo {
    std::string name;
    double mass = 0;
    Mat3 inertia;      // about the CoM, body axes
    Pose pose0;        // initial configuration
    Twist twist0;      // initial velocity (ω in the body frame)
    Origin origin;
    std::vector<Shape> shapes;  // for the viewer (BodySpec::shapes, checked)
};

struct NOETHER_API JointInfo {
    std::string name;
    std::string type;
    int a = -1;  // parent body (−1 = world)
    int b = -1;  // child body
    int rows = 0, dofs = 0;
    int row_offset = 0;  // into Data::lambda
    int dof_offset = 0;  // into Data::coord / rate / actuation
    std::shared_ptr<const JointModel> impl;
    std::vector<double> stiffness, damping, rest, offset;  // per DOF
    std::vector<double> lower, upper;                       // limits per DOF (±inf if none)
    bool limited = false;                                   // lower/upper enforced (JointSpec::limited)
    std::vector<double> armature;                           // per DOF (zero: none)
    bool has_force_element = false;                         // any stiffness, damping, armature or a servo
    // The servo (JointSpec::servo; kind none: none), its target resolved, and its gains and
    // targets the initial values of Data's servo inputs.
    ServoSpec::Kind servo = ServoSpec::Kind::none;
    double servo_kp = 0, servo_kv = 0, servo_target = 0, servo_target_velocity = 0;
    double effort_limit = INFINITY;
    bool loop = false;                                      // loop closure in the block graph
    Origin origin;
    // Where the viewer draws the joint: its anchor and primary axis (zero if the type has none)
    // in the child body's frame.
    Vec3 anchor_b, axis_b;
};

struct NOETHER_API ForceInfo {
    int body = -1;
    Vec3 force, torque;
    bool body_frame = false;
    bool has_point = false;
    Vec3 point;
};

// One contact point (a ContactSpec expands into 1, 2 or 8 of them): a point or sphere on `body`
// against the half-space normal·y >= offset, or against a sphere on body `other`.
struct NOETHER_API ContactInfo {
    std::string name;     // the declaration's name; "<name>/<k>" for the corners of a box or ends of a capsule
    int decl = -1;        // index of the ContactSpec it comes from
    int body = -1;
    Vec3 point;           // centre in the body frame
    double radius = 0;    // 0: a point
    int other = -1;       // −1: the half-space
    Vec3 other_point;     // sphere centre in the other body's frame
    double other_radius = 0;
    Vec3 normal{0, 0, 1}; // half-space: unit normal (world)
    double offset = 0;
    double mu = 0;
    Origin origin;
};

// A coupling (CouplingSpec), resolved: φ = q_joint[dof] − ratio · q_leader[leader_dof] − offset = 0,
// or with a range lower <= φ <= upper (an inequality; no degree of freedom removed).
// Its terms list every coordinate with its coefficient, φ = Σ coef · q − offset: [0] the follower
// (coef 1), [1] the leader (−ratio), then the further leaders (−their ratio); a term's Jacobian
// rows are sides 2t (the joint's parent) and 2t + 1 (its child).
struct NOETHER_API CouplingInfo {
    struct Term {
        int joint = -1, dof = 0;
        double coef = 0;
    };
    std::string name;
    int joint = -1, dof = 0;
    int leader = -1, leader_dof = 0;
    double ratio = 1, offset = 0;
    bool range = false;
    double lower = -INFINITY, upper = INFINITY;
    std::vector<Term> terms;
    Origin origin;
    int sides() const { return 2 * static_cast<int>(terms.size()); }
};

struct NOETHER_API Model {
    Origin origin;  // Spec::origin: where the world was declared (for errors in options)
    Vec3 gravity;
    Options options;
    std::vector<BodyInfo> bodies;
    std::vector<JointInfo> joints;
    std::vector<ForceInfo> forces;
    std::vector<ContactInfo> contacts;
    std::vector<CouplingInfo> couplings;
    int limited_joints = 0;  // joints whose limits are enforced
    int servos = 0;          // joints with a servo
    BlockGraph graph;
    int total_rows = 0;  // Σ joint rows
    int total_dofs = 0;  // Σ joint DOFs
    const Integrator* integrator = nullptr;
    const Solver* solver = nullptr;
    std::string solver_name;  // resolved ("auto" replaced)
    std::vector<Diagnostic> warnings;
    std::uint64_t fingerprint = 0;  // hash of the structure (names, sizes), checked by Data::restore

    int nbodies() const { return static_cast<int>(bodies.size()); }
    int njoints() const { return static_cast<int>(joints.size()); }
    // Degrees of freedom by counting: 6 per body minus the constraint rows and the couplings
    // (redundant rows of a loop are counted as constraints; a solver may find them dependent).
    int dof() const { return 6 * nbodies() - total_rows - equality_couplings(); }
    int equality_couplings() const {
        int n = 0;
        for (const CouplingInfo& c : couplings) n += c.range ? 0 : 1;
        return n;
    }
    // Contacts or enforced joint limits: inequality constraints, taken only by integrators whose
    // takes_inequalities() is true.
    bool has_inequalities() const { return !contacts.empty() || limited_joints > 0; }
    int body_index(const std::string& name) const;   // −1 if absent
    int joint_index(const std::string& name) const;  // −1 if absent
};

// The coordinates of joint j as reported (raw + offset, Data::coord's values) with its parent at `a`
// (identity for the world) and its child at `b`, unwrapped against prev (reported, the joint's DOFs;
// nullptr: not unwrapped) into out (j.dofs values; out may be prev).
NOETHER_API void joint_coordinates(const JointInfo& j, const Pose& a, const Pose& b, const double* prev, double* out);
// Row k of the joint's coordinate Jacobian on each side (6 each, the joints' column layout); Ca is
// zero for a world parent.
NOETHER_API void joint_coordinate_row(const JointInfo& j, const Pose& a, const Pose& b, int k, double* Ca, double* Cb);

// φ of coupling c at the bodies' poses: Σ coef · q − offset over its terms (q_joint[dof] − ratio ·
// q_leader[leader_dof] − … − offset), the coordinates as reported (raw + offset) and unwrapped against
// prev (reported coordinates per DOF of the Model, Data::coord's layout; nullptr: not unwrapped). With
// G (c.sides() rows), its Jacobian per side, in the joints' column layout: G[2t], G[2t + 1] the
// parent and child of term t's joint (zero for a world parent).
NOETHER_API double coupling_residual(const Model& m, const CouplingInfo& c, const Pose* pose, const double* prev,
                                     double (*G)[6]);
// The body of each side of coupling c (c.sides() entries, −1 for the world): side 2t the parent of
// term t's joint, 2t + 1 its child — the rows G of coupling_residual() act on.
inline void coupling_bodies(const Model& m, const CouplingInfo& c, int* body) {
    for (std::size_t t = 0; t < c.terms.size(); ++t)
        body[2 * t] = m.joints[c.terms[t].joint].a, body[2 * t + 1] = m.joints[c.terms[t].joint].b;
}
// The whole turns in a residual φ computed from poses alone (prev = nullptr) that the follower's
// angle may hide: a revolute angle read from poses lies in (−π, π], so a rotor geared 6:1 to a link at
// 0.6 rad sits at the pose of 3.6 − 2π. Returns 2π · round(φ / 2π) when the follower's coordinate is
// such an angle, else 0.
NOETHER_API double coupling_turns(const Model& m, const CouplingInfo& c, double phi);

// Validate and freeze. Throws ModelError listing every error; warnings are kept in Model::warnings.
NOETHER_API std::shared_ptr<const Model> compile(const Spec& spec);

// A Model with different numbers and the same structure, without recompiling: a copy of the
// base that shares its compiled joints (JointModel objects), plugins and block graph layout,
// with the changed values validated by the same rules as compile(). Data saved from one
// restores into the other (same fingerprint). Ensembles and sweeps use it for per-member
// parameters (docs/ensembles.md).
//
//   ModelVariation v(model);
//   v.set("link1.mass", {2.0});
//   v.set("j1.damping", {0.1});
//   v.set("gravity", {0, 0, -1.62});
//   std::shared_ptr<const Model> m2 = v.build();
//
// Keys (values):
//   dt (1)                      step size [s]
//   gravity (3)                 world gravity [m/s²]
//   <body>.mass (1)             [kg]
//   <body>.inertia (3, 6 or 9)  principal diagonal; xx yy zz xy xz yz; or the full 3×3 (row-major)
//   <body>.velocity (3)         initial CoM velocity, world frame [m/s]
//   <body>.angular_velocity (3) initial angular velocity, world frame [rad/s]
//   <joint>.damping / .stiffness / .rest (1 or one per DOF)
class NOETHER_API ModelVariation {
public:
    explicit ModelVariation(std::shared_ptr<const Model> base);
    // Record a change. Throws UsageError for an unknown key or element (naming it and the keys)
    // or a wrong number of values; the values themselves are checked by build().
    void set(const std::string& key, const std::vector<double>& values);
    bool empty() const { return changes_.empty(); }
    // The varied Model (the base itself when nothing changed). Throws ModelError naming the
    // element, the key, the rule and the value (e.g. a negative mass), or what the integrator's
    // own checks refuse (riqn: damping on a ball joint).
    std::shared_ptr<const Model> build() const;
    // The accepted key forms, for messages.
    static const char* keys();

private:
    struct Change {
        std::string key;
        int kind = 0, index = -1;
        std::vector<double> values;
    };
    std::shared_ptr<const Model> base_;
    std::vector<Change> changes_;
};

// Compiled Models shared between Specs that differ only in the numbers a ModelVariation can
// change (masses, inertias, initial velocities, joint damping/stiffness/rest, gravity, dt): the
// first such Spec is compiled, the others are variations of it — bit for bit what compile()
// would give (tested). Used by sweeps, whose members rebuild the same scene with other numbers.
// Thread-safe.
class NOETHER_API ModelCache {
public:
    ModelCache();
    ~ModelCache();
    ModelCache(const ModelCache&) = delete;
    ModelCache& operator=(const ModelCache&) = delete;
    // compile(spec), or a variation of an earlier Model of the same structure. Throws like compile().
    std::shared_ptr<const Model> compile(const Spec& spec);
    int compiles() const;    // Specs compiled from scratch
    int variations() const;  // Specs served as variations
    int size() const;        // distinct structures held

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace noether
