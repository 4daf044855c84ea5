// noether/data.hpp — everything that changes during a run (Spec → Model → Data, step 3).
//
// One Data per simulation run; many Data can step in parallel on one Model. Algorithms are
// free functions f(const Model&, Data&, …) that write into Data. save()/restore() round-trip a
// Data bit for bit.
#pragma once

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
};
const char* status_name(StepStatus s);

// Integrator-owned state kept in Data (workspaces, step-size controller, …).
class IntegratorState {
public:
    virtual ~IntegratorState() = default;
    // Serialise what must survive save/restore (workspaces need not).
    virtual void save(std::string& out) const { (void)out; }
    // Read back what save() wrote; return false on malformed input.
    virtual bool restore(const char*& p, const char* end) { (void)p; (void)end; return true; }
};

struct Warning {
    double time = 0;
    std::int64_t step = 0;
    std::string message;
};

// Per-step record of the last step.
struct StepStats {
    int iterations = 0;   // Newton iterations (summed over substeps)
    double residual = 0;  // final residual norm
    int halvings = 0;     // line-search halvings
    int substeps = 1;     // 1 = taken at dt, else subdivided
};

// Counters over the run.
struct RunStats {
    std::int64_t steps = 0;
    std::int64_t newton_total = 0;  // iterations of the accepted solves
    int newton_max = 0;
    std::int64_t newton_work = 0;   // every iteration performed, including failed attempts
    std::int64_t subdivided_steps = 0;
    std::int64_t failed_steps = 0;
    int redundant_rows = 0;  // constraint rows the solver found dependent (largest seen)
    std::int64_t internal_steps = 0;  // adaptive integrators: accepted internal steps
    std::int64_t rejected_steps = 0;  // adaptive integrators: rejected internal steps
};

class Data {
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

    StepStats last;
    RunStats stats;
    std::vector<Warning> warnings;
    // Warn once per run per key (e.g. "vi-maximal/subdivided"): returns true the first time.
    // Check warned(key) first where composing the message costs something.
    bool warn_once(const char* key, const std::string& message);
    bool warned(const char* key) const;
    void warn(const std::string& message);

    std::unique_ptr<IntegratorState> integrator_state;

    // Serialise to / restore from bytes (bit-identical round trip). restore() checks that the
    // buffer was saved from a Data of a Model with the same structure; throws UsageError if not.
    std::string save() const;
    void restore(const std::string& bytes);
    void save_file(const std::string& path) const;     // written to a temporary name, then renamed
    void restore_file(const std::string& path);

private:
    std::shared_ptr<const Model> model_;
    std::vector<std::string> warned_keys_;
};

// Advance one step of Model::options.dt with the Model's integrator. On failure the Data is
// left at the last good step, a Warning names the time, step and worst element, and the
// status says what went wrong.
StepStatus step(const Model& m, Data& d);

// Quantities monitored during a run (maximal-vi.md §6 for the variational integrators).
struct Monitors {
    double kinetic = 0, potential = 0, total = 0;  // potential zero at the world origin
    Vec3 momentum;                                 // linear, world
    Vec3 angular_momentum;                         // about the world origin
    double max_violation = 0;                      // max |g| over every joint row
    int worst_joint = -1;
};
Monitors monitors(const Model& m, const Data& d);

// ---- kernel services for integrators ------------------------------------------------------

// Sum of the applied wrenches on every body at the given configuration and velocities,
// excluding gravity: the Model's constant forces, Data's applied forces and torques, joint
// actuation, and joint springs and dampers. `out` has one entry per body (overwritten).
void applied_wrenches(const Model& m, const Data& d, const Pose* poses, const Twist* twists, Wrench* out);

// Recompute Data::coord and Data::rate from Data::pose and the given velocities (unwrapping
// angles against the previous coordinates).
void update_joint_coordinates(const Model& m, Data& d, const Twist* twists);

// Largest |g| over every joint row at the given configuration, and the joint it belongs to.
double max_violation(const Model& m, const Pose* poses, int* worst_joint);

// Potential energy stored in the joint springs, ½ k (coord − rest)², at the given coordinates.
double spring_energy(const Model& m, const double* coord);

// Energy and momenta of a continuous state (pose, twist = current velocities).
Monitors continuous_monitors(const Model& m, const Pose* poses, const Twist* twists);

}  // namespace noether
