// noether/urdf.hpp — import URDF robots into a Spec (library libnoether_urdf).
//
// Links become bodies (the centre of mass is the body origin; body axes are the link's axes,
// the inertia tensor is rotated into them); joints become joints in body-frame style with their
// URDF frames, so a file whose loops are open at q = 0 means the same thing after assemble().
// Closed loops: <loop_joint> (ConstrainedDynamics.jl / Drake style) and <loop>
// (generalized_rbda style). Every link, joint and ignored element is listed in the report.
#pragma once

#include "noether/export.h"

#include <map>
#include <string>
#include <vector>

#include "noether/spec.hpp"

namespace noether {
namespace urdf {

struct NOETHER_API Options {
    std::string prefix;        // prepended to every body and joint name ("robot1/")
    bool fixed_base = false;   // weld the root link (and what is welded to it) to the world
    Vec3 position;             // pose of the root link frame in the world
    Quat orientation;
    Vec3 velocity, angular_velocity;  // initial rigid motion of the whole robot (world frame, about the root frame origin)
    bool lump_fixed = true;    // merge links attached by fixed joints into their parent
    // Initial joint positions (URDF joint name → angle [rad] or displacement [m]); others are 0.
    std::map<std::string, double> positions;
    // Joint damping [N m s/rad or N s/m] for moving joints whose <dynamics> gives none (0: none).
    double damping = 0;
    // Enforce the <limit lower upper> of revolute and prismatic joints (docs/contact.md); false
    // keeps them in the model for output only.
    bool limits = true;
    // Enforce <mimic> and <coupling> as couplings between the joints (docs/couplings.md; taken by
    // every integrator but riqn); false leaves the joints free and lists the couplings in the report.
    bool couplings = true;
    // Contacts against the ground z = 0 (docs/contact.md) from the <collision> primitives (sphere,
    // box, capsule) of these links, or of every link with contacts_all; friction coefficient mu.
    std::vector<std::string> contact_links;
    bool contacts_all = false;
    double mu = 1.0;
    // Move the robot vertically so that its lowest contact touches the ground (needs contacts).
    bool on_ground = false;
    // Position servos (docs/servos.md) on every revolute, continuous and prismatic joint when
    // servo_kp > 0: gains kp, kv, holding the pose the robot is imported in, the <limit effort> (when
    // positive) as the effort limit. URDF has no actuator models; this is the common stand-in.
    double servo_kp = 0, servo_kv = 0;
};

// A URDF link kept as a frame of a body (after lumping): its pose in the body frame.
struct NOETHER_API Frame {
    std::string body;  // "world" for links welded to a fixed base
    Pose offset;
};

struct NOETHER_API Report {
    std::string file, robot;
    struct Entry {
        std::string name;    // URDF link or joint name
        std::string mapped;  // body / joint it became, or what happened to it
    };
    std::vector<Entry> links, joints;
    std::vector<std::string> ignored;   // elements and attributes skipped, with the reason
    std::vector<std::string> warnings;
    std::vector<std::string> bodies, joint_names;  // names added to the spec (with prefix)
    std::map<std::string, Frame> frames;            // every link (prefixed name) → its body and offset
    int loop_joints = 0;
    int couplings = 0;             // <mimic> and <coupling> elements, as couplings (docs/couplings.md)
    double file_mass = 0;          // sum of the file's <mass> values
    double regularised_mass = 0;   // mass added to massless links that move (see docs)
    double imported_mass = 0;      // total mass of the bodies added
    double world_mass = 0;         // mass of links welded to a fixed base (part of the world)
    int limits_enforced = 0;       // joints whose limits are enforced
    int contacts = 0;              // contact shapes added (a box counts once)
    int servos = 0;                // position servos added (Options::servo_kp)
    double lifted = 0;             // on_ground: how far the robot was moved up [m] (negative: down)
    bool root_is_world = false;    // the root link is named "world" (ROS fixed-base idiom)
    std::string to_text() const;
};

// Parse `path` and add the robot to `spec`. Throws ModelError naming file:line and the element.
NOETHER_API Report import(Spec& spec, const std::string& path, const Options& options);

}  // namespace urdf
}  // namespace noether
