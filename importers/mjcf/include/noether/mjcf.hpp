// noether/mjcf.hpp — import MuJoCo XML (MJCF) models into a Spec (library libnoether_mjcf).
//
// What is read, mapped, reported and refused, element by element: docs/mjcf.md. In short: bodies
// become bodies (bodies without a joint are merged into their parent, as URDF fixed joints are;
// the centre of mass is the body origin, the axes are the MJCF body's axes), hinge/slide/ball
// joints become revolute/prismatic/spherical joints with their MJCF frames (coordinates equal
// MuJoCo's qpos: `ref` is the joint's offset), a free joint leaves its body floating, <connect>
// and <weld> equalities become loop closures. Inertia comes from <inertial> or from the geoms as
// MuJoCo computes it. The file's angle unit (degrees unless compiler angle="radian") applies.
#pragma once

#include "noether/export.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "noether/spec.hpp"

namespace noether {
namespace mjcf {

struct NOETHER_API Options {
    std::string prefix;    // prepended to every body, joint and contact name ("robot1/")
    std::string keyframe;  // start from this <key> (by name, or "#k" for the k-th key from 0); "": qpos0
    // Enforce joint ranges (hinge and slide joints with limited="true", or a range under autolimits).
    bool limits = true;
    // Contacts between the geoms of moving bodies (sphere, capsule, box) and the world's planes whose
    // contype/conaffinity let them collide, with the larger friction[0] of the two.
    bool contacts = true;
    // <position>/<velocity> actuators (and <general> ones written as position servos) as servos
    // on their joints (docs/servos.md), targets from the keyframe's ctrl or 0 as in MuJoCo.
    bool actuators = true;
    // <equality><joint> (joint1 = polycoef0 + polycoef1 · joint2 about their qpos0) as couplings
    // between the joints (docs/couplings.md; taken by every integrator but riqn); false leaves them out, reported.
    bool couplings = true;
    // Joint armature (reflected rotor inertia) is kept on hinge and slide joints (JointSpec::armature:
    // integrated by vi-maximal and vi-midpoint; the other integrators refuse it). Set this to
    // leave it out (for the other integrators), with a warning naming every joint that had it.
    bool drop_armature = false;
    // Mesh geoms are drawn by the viewer as their triangles (the file read by assimp, as for their
    // inertia); false draws their bodies' inertia boxes instead and reads no mesh for drawing.
    bool visual_meshes = true;
    // Asked before an <include> is opened (the resolved path): "" lets it be read, anything else
    // is the reason it may not (a sandboxed host keeps included files inside its directory).
    std::function<std::string(const std::string& path)> include_problem;
};

// An MJCF body or site kept as a frame of a noether body: its pose in that body's frame.
struct NOETHER_API Frame {
    std::string body;  // "world" for bodies welded to the world
    Pose offset;
};

struct NOETHER_API Report {
    std::string file, model;
    struct Entry {
        std::string name;    // MJCF element name (or "<tag> line N" when unnamed)
        std::string mapped;  // what it became, or what happened to it
    };
    std::vector<Entry> bodies_in, joints_in, equalities, tendons, actuators;
    std::vector<std::string> ignored;   // elements and attributes not used, with file:line and why
    std::vector<std::string> warnings;
    std::vector<std::string> bodies, joint_names;  // names added to the spec (with prefix)
    std::map<std::string, Frame> frames;            // every MJCF body and site (prefixed) → body and offset
    std::vector<std::string> keyframes;             // names of the file's keys ("#k" when unnamed)
    std::string keyframe;                           // the key started from ("" = qpos0)
    int nq = 0, nv = 0;              // MuJoCo's coordinate counts of the file
    int loop_joints = 0;             // <connect>/<weld> closures added
    int couplings = 0;               // couplings added: <equality><joint>, <fixed> tendons with a range
    double file_mass = 0;            // MuJoCo's total: every body, from <inertial> or geoms
    double imported_mass = 0;        // mass of the bodies added
    double world_mass = 0;           // mass of bodies welded to the world
    int limits_enforced = 0, contacts = 0, servos = 0, motors = 0;
    int meshes_drawn = 0, mesh_triangles = 0;  // mesh geoms drawn as triangles, and their count
    double timestep = 0;             // <option timestep> (0: not given)
    std::string to_text() const;
};

// Parse `path` (and its includes) and add the model to `spec`: bodies, joints, loop closures,
// contacts, servos; <option gravity> sets the spec's gravity (the timestep is reported, not
// applied: the host chooses its step). Throws ModelError naming file:line and the element; the
// spec is then unchanged.
NOETHER_API Report import(Spec& spec, const std::string& path, const Options& options);

// Whether the file's root element is <mujoco> (false for URDF, unreadable or malformed files).
NOETHER_API bool is_mjcf(const std::string& path);

}  // namespace mjcf
}  // namespace noether
