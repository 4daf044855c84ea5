// noether/data.hpp — everything that changes during a run (Spec → Model → Data, step 3).
//
// One Data per simulation run; many Data can step in parallel on one Model. Algorithms are
// free functions f(const Model&, Data&, …) that write into Data. save()/restore() round-trip a
// Data bit for bit.
#pragma once

#include "noether/export.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "noether/math.hpp"
#include "noether/model.hpp"

namespace noether {

enum class StepStatus {
    ok = 0,
    not_converged,   // Newton (or the step controller) failed, even after subdivision
    rotation_limit,  // a body would turn by ≥ 180° in one step (|ω| ≥ 2/dt)
    non_finite,      // NaN or Inf appeared
    singular,        // the linear solver met a singular block
    diverged,        // the state left every plausible range (joints apart by more than the mechanism's size)
};
NOETHER_API const char* status_name(StepStatus s);

// Integrator-owned state kept in Data (workspaces, step-size controller, …).
class NOETHER_API IntegratorState {
public:
    virtual ~IntegratorState() = default;
    // Serialise what must survive save/restore (workspaces need not).
    virtual void save(std::string& out) const { (void)out; }
    // Read back what save() wrote; return false on malformed input.
    virtual bool restore(const char*& p, const char* end) { (void)p; (void)end; return true; }
};

struct NOETHER_API Warning {
    double time = 0;
    std::int64_t step = 0;
    std::string message;
};

// Per-step record of the last step.
struct NOETHER_API StepStats {
    int iterations = 0;   // Newton iterations (summed over substeps)
    double residual = 0;  // final residual norm
    int halvings = 0;     // line-search halvings
    int substeps = 1;     // 1 = taken at dt, else subdivided (adaptive methods: internal steps)
    int projections = 0;  // projection iterations (projection methods)
};

// Counters over the run, as one field list (type, name) so that save/restore and the run
// summary are generated from it and cannot drift:
//   steps             committed steps
//   newton_total      Newton iterations of the accepted solves;  newton_max: largest per step
//   newton_work       every iteration performed, including failed attempts
//   subdivided_steps  steps a fixed-step method had to subdivide;  failed_steps: failed steps
//   redundant_rows    constraint rows the solver found dependent (largest seen)
//   internal_steps, rejected_steps   adaptive methods: accepted / rejected internal steps
//   projection_total  projection iterations (projection methods)
//   floor_steps       steps accepted at Newton's floor above the tolerance (StepReport::at_floor)
//   factor_total      Newton matrices factored in the accepted solves (StepReport::factorizations)
#define NOETHER_RUN_STATS(X)                                                                  \
    X(std::int64_t, steps) X(std::int64_t, newton_total) X(int, newton_max)                 \
    X(std::int64_t, newton_work) X(std::int64_t, subdivided_steps) X(std::int64_t, failed_steps) \
    X(int, redundant_rows) X(std::int64_t, internal_steps) X(std::int64_t, rejected_steps)    \
    X(std::int64_t, projection_total) X(std::int64_t, floor_steps) X(std::int64_t, factor_total)

struct NOETHER_API RunStats {
#define NOETHER_X(type, name) type name = 0;
    NOETHER_RUN_STATS(NOETHER_X)
#undef NOETHER_X
};

// A view of the inputs of a step (per joint DOF actuation, per body world force and torque).
// Data's own inputs by default; an integrator may pass others (vi-midpoint: interval averages).
struct NOETHER_API Inputs {
    const double* actuation = nullptr;
    const Vec3* force = nullptr;
    const Vec3* torque = nullptr;
};

namespace detail {
struct StepAccess;
}

// What the last step found at one contact point (Model::contacts), world frame.
struct NOETHER_API ContactResult {
    Vec3 point;            // on the contact's body surface, end of the step
    Vec3 normal;           // unit, along which the gap grows (from the other side towards the body)
    double gap = 0;        // signed distance at the end of the step [m] (>= 0 up to the tolerance)
    double normal_force = 0;  // [N], >= 0
    Vec3 friction;         // friction force on the body [N], tangent to the normal
    bool active = false;   // carrying load: the normal force's complementarity pair sits on the force side
};

class NOETHER_API Data {
public:
    explicit Data(std::shared_ptr<const Model> model);
    ~Data();
    Data(const Data&) = delete;
    Data& operator=(const Data&) = delete;

    const Model& model() const { return *model_; }
    const std::shared_ptr<const Model>& model_ptr() const { return model_; }

    // Back to the Model's initial state (inputs cleared, counters and warnings cleared).
    void reset();

    double time = 0;
    std::int64_t step = 0;

    // Per body. For the variational integrators `pose` is the current configuration (x2, q2)
    // and `twist` the discrete velocity of the interval that ended now (v1, ω1); for the
    // continuous ones, the current velocity. ω always in the body frame.
    std::vector<Pose> pose;
    std::vector<Twist> twist;
    std::vector<Twist> twist_guess;  // warm start of the next solve (v2, ω2)
    std::vector<double> lambda;      // joint multipliers (Model::total_rows), warm start

    // Joint coordinates (raw + offset) and rates, per DOF (Model::total_dofs); updated after each step.
    std::vector<double> coord, rate;

    // Inputs for the coming step, set by the host or a callback; held until changed.
    std::vector<double> actuation;    // per joint DOF: torque [N m] or force [N] along the free direction
    std::vector<Vec3> applied_force;  // per body, world frame, at the CoM
    std::vector<Vec3> applied_torque; // per body, world frame
    // Servo inputs per joint DOF (docs/servos.md), read at the DOFs of joints with a servo
    // (Model::joints[j].servo) and ignored elsewhere; reset() sets the Model's values. Gains >= 0
    // and finite targets: a step refuses others (UsageError naming the joint).
    std::vector<double> servo_kp, servo_kv;                // [N m/rad, N m s/rad] or [N/m, N s/m]
    std::vector<double> target_position, target_velocity;  // joint coordinate (raw + offset) and rate

    // Contacts and limits (docs/contact.md), written by each step of an integrator that takes
    // them: per contact point, and per joint DOF the limit's generalized force (N m or N; > 0
    // pushes the coordinate up, away from its lower limit).
    std::vector<ContactResult> contact;
    std::vector<double> limit_force;
    // Couplings (docs/couplings.md), written by each step of an integrator that takes them: per
    // coupling, the generalized force it applies to its follower's coordinate (N m or N); the
    // leader's is −ratio times it.
    std::vector<double> coupling_force;

    // The whip guard (docs/integrators.md, "Never a silent blow-up"): radians per substep that
    // the fixed-step integrators with the option max_turn keep the fastest body below when that
    // option is not given (0: plain steps). A Run sets it once the energy grew with no input doing
    // work (its watch's warning says so); a host may set it too. reset() clears it; saved.
    double turn_guard = 0;

    StepStats last;
    RunStats stats;
    std::vector<Warning> warnings;
    // Warn once per run per key (e.g. "vi-maximal/subdivided"): returns true the first time.
    // Check warned(key) first where composing the message costs something.
    bool warn_once(const char* key, const std::string& message);
    bool warned(const char* key) const;
    void warn(const std::string& message);

    std::unique_ptr<IntegratorState> integrator_state;

    // Host edits. Between steps the snapshot holds the poses and twists the kernel committed last
    // (and those a Data starts with); a step that starts from others — a host called
    // set_joint_state, restored a state saved after such an edit, or wrote them itself — sees
    // host_changed() true for all of that step (and for every retry until a step commits), and
    // the integrators that carry state of their own across steps (warm starts, predictors, joint
    // coordinates) start again from Data. changed_since_commit() computes it now, for calls
    // between steps (step_system, linearize).
    bool host_changed() const { return host_changed_; }
    bool changed_since_commit() const;

    // Data's own inputs as a view.
    Inputs inputs() const { return {actuation.data(), applied_force.data(), applied_torque.data()}; }
    // Whether a host applies a force or a torque to any body (applied_force, applied_torque nonzero).
    bool any_applied_wrench() const {
        for (std::size_t b = 0; b < applied_force.size(); ++b) {
            const Vec3& f = applied_force[b];
            const Vec3& tq = applied_torque[b];
            if (f.x != 0 || f.y != 0 || f.z != 0 || tq.x != 0 || tq.y != 0 || tq.z != 0) return true;
        }
        return false;
    }

    // The step snapshot (kernel/src/step.cpp): everything a step may change — time, step,
    // poses, twists, warm starts, multipliers, joint coordinates and rates, the last-step
    // record, the counters and the integrator's state. snapshot_step() is taken by the kernel
    // before advance(); rollback_step() returns to it exactly (integrators that retry a step
    // call it; the kernel calls it after a failed step). Neither allocates once the first
    // snapshot has been taken.
    // snapshot_step() also tells whether the poses and twists are those of the last commit (see
    // host_changed()): they are copied only when they are not, as the snapshot holds them already
    // (the commit puts them there). The snapshot is a step's: valid from snapshot_step() to the
    // end of that step.
    // An integrator that undoes its own failed steps (Integrator::rolls_back_itself()) gets no
    // snapshot: the kernel only makes the host-edit test before its advance(), and
    // rollback_step() throws UsageError until the next snapshot_step().
    void snapshot_step();
    void rollback_step();

    // Serialise to / restore from bytes (bit-identical round trip). restore() checks that the
    // buffer was saved from a Data of a Model with the same structure; throws UsageError if not.
    std::string save() const;
    void restore(const std::string& bytes);
    // Written as <path>.tmp, then renamed over path (a device or FIFO is written in place, a
    // symbolic link through to its target, or refused with follow_links false: noether/output_file.hpp).
    void save_file(const std::string& path, bool follow_links = true) const;
    void restore_file(const std::string& path);

private:
    friend struct detail::StepAccess;  // kernel/src/step.cpp: the commit renews the snapshot's poses
    std::shared_ptr<const Model> model_;
    std::vector<std::string> warned_keys_;
    struct Snapshot {
        double time = 0;
        std::int64_t step = 0;
        std::vector<Pose> pose;
        std::vector<Twist> twist, twist_guess;
        std::vector<double> lambda, coord, rate;
        std::vector<ContactResult> contact;
        std::vector<double> limit_force, coupling_force;
        StepStats last;
        RunStats stats;
        std::string integrator_state;
    } snap_;
    // A host edit not committed yet: found by a snapshot (and kept through failed steps and their
    // rollbacks, which return to the edited state), or restored with a state saved after an edit;
    // cleared by the next commit.
    bool edit_pending_ = false;
    bool host_changed_ = false;  // set by snapshot_step() and begin_step_unsnapshotted()
    bool snapshot_valid_ = false;  // snap_ holds this step's start (rollback_step() may return to it)
    // The host-edit test of snapshot_step() alone (the step of an integrator that rolls back
    // its own failed steps): the snapshot is not valid for this step.
    void begin_step_unsnapshotted();
    // After such an integrator returned a non-finite state as ok (a broken plugin): the poses and
    // twists of the last commit again (twist_guess: those twists), counted as a host edit so the
    // integrator restarts from them.
    void recover_last_commit();
    // After a successful step (or a restore): the snapshot's poses and twists become the state's.
    void mark_committed();
};

// Advance one step of Model::options.dt with the Model's integrator (kernel/src/step.cpp:
// check → snapshot → advance → commit or restore → joint coordinates). On failure the Data is
// left bit for bit at the last good step (only the failure counter and one Warning naming the
// time, step, integrator and worst element are added), and the status says what went wrong.
NOETHER_API StepStatus step(const Model& m, Data& d);

// Put a mechanism of 1-DOF joints in the state (q, q̇) given per DOF (Model::total_dofs each,
// the layout of Data::coord and Data::rate): body poses by forward kinematics of the tree view,
// body twists from the joint rates, coord and rate set. The integrators take it as a new
// continuous state (the variational ones as their velocity). Throws UsageError for a Model
// without a tree of 1-DOF joints (loops, ball or free joints) or for a non-finite value,
// naming the joint.
NOETHER_API void set_joint_state(const Model& m, Data& d, const double* coord, const double* rate);

// Quantities monitored during a run (maximal-vi.md §6 for the variational integrators).
struct NOETHER_API Monitors {
    double kinetic = 0, potential = 0, total = 0;  // potential zero at the world origin
    Vec3 momentum;                                 // linear, world
    Vec3 angular_momentum;                         // about the world origin
    double max_violation = 0;                      // max |g| over every joint row
    int worst_joint = -1;
};
NOETHER_API Monitors monitors(const Model& m, const Data& d);

// The monitors of maximal-vi.md §6 for a state in the variational layout (Data::twist = the
// discrete velocity v1, ω1 of the interval of length dt that ended at Data::pose): kinetic
// energy of the interval, potential at the interval midpoint, the discrete momenta, spring
// energy and the joint violation. vi-maximal, vi-midpoint and riqn report these.
NOETHER_API Monitors discrete_monitors(const Model& m, const Data& d, double dt);

// ---- kernel services for integrators ------------------------------------------------------

// Sum of the applied wrenches on every body at the given configuration and velocities,
// excluding gravity: the Model's constant forces, the inputs' forces, torques and joint
// actuation, joint springs and dampers, and servos at this state (springs unwrap against Data::coord). `out` has one
// entry per body (overwritten). The first form uses Data's own inputs.
NOETHER_API void applied_wrenches(const Model& m, const Data& d, const Pose* poses, const Twist* twists, Wrench* out);
NOETHER_API void applied_wrenches(const Model& m, const Data& d, const Inputs& in, const Pose* poses, const Twist* twists,
                      Wrench* out);

// The body part of applied_wrenches(): the Model's constant forces and the inputs' forces and
// torques, without joint actuation, springs and dampers (which minimal-coordinate integrators
// apply in joint space).
NOETHER_API void body_wrenches(const Model& m, const Inputs& in, const Pose* poses, Wrench* out);

// applied_wrenches() without joint springs and dampers: the body part and the joint actuation
// (for integrators that treat springs and dampers implicitly).
NOETHER_API void input_wrenches(const Model& m, const Inputs& in, const Pose* poses, Wrench* out);

// The servo of joint j (1 DOF) for the coming step (docs/servos.md): its generalized force is
//   force − kp (θ − target) − kv θ̇,
// θ the joint coordinate (raw + offset). Unsaturated: kp, kv, target from Data's servo inputs
// and force = kv · target_velocity. When the servo's force at the state of Data (coord, rate)
// exceeds its effort limit, the step takes the limit as a constant: kp = kv = 0, force =
// ±effort_limit (saturated). All zero for a joint without a servo.
struct NOETHER_API ServoTerms {
    double kp = 0, kv = 0, target = 0, force = 0;
    bool saturated = false;
};
NOETHER_API ServoTerms servo_terms(const Model& m, const Data& d, int joint);

// Adds the actuation and spring wrenches of joint j (no damper) at the given poses onto its two
// bodies, as applied_wrenches() computes them (springs unwrap against Data::coord).
NOETHER_API void add_joint_wrenches(const Model& m, const Data& d, const Inputs& in, const Pose* poses, int j, Wrench* out);

// Recompute Data::coord and Data::rate from Data::pose and the given velocities (unwrapping
// angles against the previous coordinates).
NOETHER_API void update_joint_coordinates(const Model& m, Data& d, const Twist* twists);

// Largest |g| over every joint row at the given configuration, and the joint it belongs to.
NOETHER_API double max_violation(const Model& m, const Pose* poses, int* worst_joint);

// Potential energy stored in the joint springs, ½ k (coord − rest)², at the given coordinates.
NOETHER_API double spring_energy(const Model& m, const double* coord);
// Kinetic energy of the joints' armature, ½ a q̇², at the given rates (Data::rate layout).
NOETHER_API double armature_energy(const Model& m, const double* rate);

// Energy and momenta of a continuous state (pose, twist = current velocities).
NOETHER_API Monitors continuous_monitors(const Model& m, const Pose* poses, const Twist* twists);

}  // namespace noether
