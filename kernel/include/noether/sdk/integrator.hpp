// noether/sdk/integrator.hpp — the integrator plugin interface.
//
// One interface carries implicit fixed-step (vi-maximal), explicit fixed-step (heun, rk4) and
// adaptive methods (dp45-projection). The kernel owns the step (noether::step, kernel/src/step.cpp):
//
//   check → snapshot → integrator->advance(m, d) → commit or restore → joint coordinates
//
// (the joint coordinates from the poses, unless the integrator wrote them: StepReport::coordinates)
//
// advance() moves the state (poses, twists, warm starts, multipliers and the integrator's own
// state in Data::integrator_state) by exactly Model::options.dt, taking whatever internal steps
// the method needs, and returns a StepReport. It never touches Data::time, Data::step,
// Data::stats, Data::last or the warnings: the kernel commits those from the report, and on a
// failed step restores the snapshot exactly and writes the one failure warning. A method that
// retries a step (subdivision) calls Data::rollback_step() to return to the step's start. (A
// method that undoes its own failed steps says so, Integrator::rolls_back_itself(): then the
// kernel takes no snapshot and the method restores Data and its state itself.)
#pragma once

#include "noether/export.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "noether/data.hpp"
#include "noether/linearize.hpp"
#include "noether/error.hpp"
#include "noether/model.hpp"

namespace noether {

// What one advance() did. Iteration counts are those of the method's own solves.
struct NOETHER_API StepReport {
    StepStatus status = StepStatus::ok;
    int iterations = 0;        // Newton iterations of the accepted solve (summed over substeps)
    int factorizations = 0;    // of those, the ones that factored a Newton matrix (chord and
                               // quasi-Newton iterations reuse a factorisation)
    int projections = 0;       // projection iterations (projection methods)
    double residual = 0;       // final residual norm (implicit methods)
    int halvings = 0;          // line-search halvings
    int substeps = 1;          // 1 = taken at dt; k = subdivided into k substeps; for adaptive
                               // methods the internal steps of this step
    bool subdivided = false;   // a fixed-step method had to subdivide the step
    std::int64_t work = 0;     // every iteration performed, including failed attempts
    std::int64_t internal_steps = 0;  // adaptive methods: accepted internal steps
    std::int64_t rejected_steps = 0;  // adaptive methods: rejected internal steps
    int attempts = 1;          // how many subdivision levels were tried (for the failure message)
    int worst_node = -1;       // block-graph node with the largest residual (−1: unknown)
    // Constraint rows the linear solver found dependent in the accepted solve, and their joints
    // (may be null); the kernel reports them once per run.
    int redundant_rows = 0;
    const std::vector<int>* redundant_joints = nullptr;
    // Implicit methods: Newton stopped at its floor a little above the tolerance (no update
    // changed anything any more; `residual` says where) and the step was accepted. The kernel
    // counts these steps and warns once per run.
    bool at_floor = false;
    // The integrator wrote Data::coord and Data::rate of every joint DOF from its own state (an
    // integrator in joint coordinates: the coordinates it steps, raw + offset, and their rates;
    // riqn's the interval's (q_k − q_{k−1})/h, as its twists are the interval's). The kernel then
    // does not compute them from the poses after the commit (update_joint_coordinates): on the
    // double pendulum that round trip was 1.19k of the frame's 2.36k instructions a step.
    bool coordinates = false;
    // A failed step: the reason the linear solver gave for a factorisation it could not make in
    // any of the step's attempts (SolverWorkspace::error of the first one: "redundant constraint
    // rows … in the loop closure joint(s) …: use solver 'dense-loop'"), or null. The kernel adds
    // it to the failure's warning.
    const std::string* solver_error = nullptr;
};

// Option checks shared by integrators: appends "options: <integrator> option '<name>' must be
// positive and finite, got <value>" unless value > 0 and finite.
NOETHER_API void check_positive_option(const Model& m, const char* integrator, const char* name, double value,
                                       std::vector<Diagnostic>& out);
// Option max_turn (radians per substep, turn_substeps()): appends "options: <integrator> option
// 'max_turn' (radians per substep) must be in [0, <limit>] (0: off), got <value>" unless value is in
// [0, limit].
NOETHER_API void check_max_turn_option(const Model& m, const char* integrator, double value, double limit,
                                       std::vector<Diagnostic>& out);
// A string option (Options::extra_lists) given as one value: that value, else null.
NOETHER_API const std::string* string_option(const Model& m, const char* name);
// Appends "options: <integrator> option '<name>' must be a string (one of 'a', 'b'), got a number" or
// "... must be one of 'a', 'b', got '<value>'" unless the option is absent or one of `allowed`.
NOETHER_API void check_choice_option(const Model& m, const char* integrator, const char* name,
                                     std::initializer_list<const char*> allowed, std::vector<Diagnostic>& out);
// One error for the first joint with armature (JointInfo::armature), for an integrator that does
// not take it, naming the integrators that do.
NOETHER_API void refuse_armature(const Model& m, const char* integrator, std::vector<Diagnostic>& out);

// For introspection that must leave an integrator's state as it was (step_system, linearize):
// runs f() between a save and a restore of `st`, and returns what f returns.
template <class F>
auto with_state_kept(IntegratorState& st, F&& f) {
    std::string saved;
    st.save(saved);
    struct Restore {
        IntegratorState& st;
        const std::string& saved;
        ~Restore() {
            const char* p = saved.data();
            st.restore(p, saved.data() + saved.size());
        }
    } restore{st, saved};
    return f();
}

// What an integrator that undoes its own failed steps (Integrator::rolls_back_itself()) keeps of
// its state at a step's start: the bytes save() writes, taken at most once a step, before the
// first attempt that may change more than the integrator keeps by other means (a restart from
// Data, a subdivided attempt). begin() at the step's start; keep(st) before such an attempt;
// kept() whether it was taken this step; put_back(st) restores them (false if restore() refused
// them or left bytes over). reserve() with the state's saved size once every saved vector is
// sized: keep() then does not allocate in a step.
class KeptState {
public:
    void reserve(std::size_t n) { bytes_.reserve(n); }
    void begin() { kept_ = false; }
    bool kept() const { return kept_; }
    void keep(const IntegratorState& st) {
        if (kept_) return;
        bytes_.clear();
        st.save(bytes_);
        kept_ = true;
    }
    bool put_back(IntegratorState& st) const {
        const char* p = bytes_.data();
        const char* end = p + bytes_.size();
        return st.restore(p, end) && p == end;
    }

private:
    std::string bytes_;
    bool kept_ = false;
};

// One solve of a fixed-step implicit method over one (sub)step: what subdivide() sums.
struct Attempt {
    StepStatus status = StepStatus::ok;
    int iterations = 0;     // Newton (or quasi-Newton) iterations
    int factorizations = 0;  // matrices factored for them (a chord step reuses the last one)
    int halvings = 0;       // line-search halvings
    double residual = 0;    // final residual norm
    int worst_node = -1;    // block-graph node (or tree link) with the largest residual
    bool at_floor = false;  // accepted at Newton's round-off floor above the tolerance
    const std::string* solver_error = nullptr;  // why a factorisation failed (SolverWorkspace::error), or null
};

// IntegratorState::save()/restore() of plain values and of vectors of them, in the order written
// (restore() checks that the bytes are there first; a vector's size comes from the Model).
template <class T>
inline void save_value(std::string& out, const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
inline void save_values(std::string& out, const std::vector<T>& v) {
    if (!v.empty()) out.append(reinterpret_cast<const char*>(v.data()), sizeof(T) * v.size());
}
namespace detail {
// n bytes from src to dst (not overlapping): a multiple of 8 up to 64 (a small tree's vectors,
// the kernel's per-step snapshot) by fixed-size copies, which the compiler makes moves; anything
// else by memcpy, whose library call cost ~20 instructions for a double pendulum's two doubles.
inline void copy_bytes(void* dst, const void* src, std::size_t n) {
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    switch (n) {
        case 64: std::memcpy(d + 56, s + 56, 8); [[fallthrough]];
        case 56: std::memcpy(d + 48, s + 48, 8); [[fallthrough]];
        case 48: std::memcpy(d + 40, s + 40, 8); [[fallthrough]];
        case 40: std::memcpy(d + 32, s + 32, 8); [[fallthrough]];
        case 32: std::memcpy(d + 24, s + 24, 8); [[fallthrough]];
        case 24: std::memcpy(d + 16, s + 16, 8); [[fallthrough]];
        case 16: std::memcpy(d + 8, s + 8, 8); [[fallthrough]];
        case 8: std::memcpy(d, s, 8); [[fallthrough]];
        case 0: return;
        default: std::memcpy(d, s, n);
    }
}
}  // namespace detail

// The same into a buffer sized once: save() writes through a StateWriter after one resize of the
// string (the kernel's snapshot keeps its capacity from the last step, so a save costs the copies
// alone; appending value by value cost riqn ~60 instructions an item, 40 % of its save).
class StateWriter {
public:
    StateWriter(std::string& out, std::size_t size) {
        const std::size_t at = out.size();
        out.resize(at + size);
        q_ = &out[at];
    }
    template <class T>
    void value(const T& v) {
        std::memcpy(q_, &v, sizeof v);
        q_ += sizeof v;
    }
    template <class T>
    void values(const std::vector<T>& v) {
        detail::copy_bytes(q_, v.data(), sizeof(T) * v.size());
        q_ += sizeof(T) * v.size();
    }

private:
    char* q_ = nullptr;
};
template <class T>
inline void restore_value(const char*& p, T& v) {
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
}
template <class T>
inline void restore_values(const char*& p, std::vector<T>& v) {
    detail::copy_bytes(v.data(), p, sizeof(T) * v.size());
    p += sizeof(T) * v.size();
}

// How finely a joint's constraint rows can be closed with its bodies at world positions xa, xb
// (the world: zero): a row is a difference of world positions or of unit-quaternion components,
// each rounded to its last place, so kRowRoundoff · (1 + |xa| + |xb|) — about 4 units in the last
// place of the larger position: 1e-15 near the origin, 9e-10 at 1000 km. An integrator that closes
// joints to Model::options.tolerance takes the larger of the two, as it can do no better.
constexpr double kRowRoundoff = 2 * 2.220446049250313e-16;
inline double row_resolution(const Vec3& xa, const Vec3& xb) { return kRowRoundoff * (1 + norm(xa) + norm(xb)); }
// The size of the terms of joint j's rows with its bodies at `poses` (1 + |xa| + |xb|; the world at
// the origin), and the bound its rows are closed to: the larger of `tolerance` and their resolution.
inline double row_magnitude(const JointInfo& j, const Pose* poses) {
    return 1 + (j.a >= 0 ? norm(poses[j.a].x) : 0.0) + norm(poses[j.b].x);
}
inline double row_limit(const JointInfo& j, const Pose* poses, double tolerance) {
    return std::max(tolerance, kRowRoundoff * row_magnitude(j, poses));
}

// How finely a joint coordinate q can change: 2 eps |q|. A wheel wound 10,000 turns (q = 6.3e4 rad)
// moves in steps of 7e-12 rad, coarser than a Newton step tolerance of 1e-12; an integrator that
// stops when its corrections fall below that tolerance takes, per coordinate, the larger of the
// two, as a smaller correction can no longer change the coordinate.
inline double coordinate_resolution(double q) { return kRowRoundoff * std::fabs(q); }

// The substeps a turn limit asks for (option max_turn, else Data::turn_guard; 0: none): the
// smallest power of two, up to Model::options.max_substeps, that keeps the fastest body of the last
// interval (Data::twist_guess) below `turn` radians per substep. 1 when turn is 0.
inline int turn_substeps(const Model& m, const Data& d, double turn) {
    int k = 1;
    if (!(turn > 0)) return k;
    double wmax = 0;
    for (int b = 0; b < m.nbodies(); ++b) {
        const double w = norm(d.twist_guess[b].w);
        if (w > wmax) wmax = w;
    }
    while (k < m.options.max_substeps && wmax * m.options.dt / k > turn) k *= 2;
    return k;
}

// Remembered subdivision (option substep_hold; vi-maximal, vi-midpoint, riqn): when Newton needs
// substeps a second time within kWindow steps, the next `hold` steps start at that many substeps
// instead of failing at the full step first; then one halving is tried, and each halving that fails
// doubles the hold (up to kHoldMax × hold). A lone subdivision is not held, so scenes that subdivide
// rarely step exactly as without it. Saved with the integrator's state (save/restore, 20 bytes).
struct SubstepHold {
    static constexpr std::int32_t kHoldMax = 256;  // longest hold after failed halvings (× hold)
    static constexpr std::int64_t kWindow = 16;    // a second need within this many steps starts a hold
    static constexpr double kDefault = 4, kMax = 1 << 20;
    static constexpr std::size_t kSavedSize = 3 * sizeof(std::int32_t) + sizeof(std::int64_t);

    std::int32_t hold = 4;  // the option (0: off); from the Model (steps()), not saved
    std::int32_t k = 1, left = 0, len = 0;  // held substeps, steps left of the hold, its length
    std::int64_t last_needed = -(std::int64_t(1) << 40);  // step at which Newton last needed substeps

    // The option's value as a hold length (a value check() refused: 0, off).
    static std::int32_t steps(double option) { return option >= 0 && option <= kMax ? static_cast<std::int32_t>(option) : 0; }
    // The substeps to try first: what the turn limit asks (k0), or the held ones, or one halving
    // below them once the hold is over.
    int first(int k0, int max_substeps) const {
        if (hold <= 0 || k <= k0) return k0;
        return std::min(max_substeps, left > 0 ? k : std::max(k0, k / 2));
    }
    // After committed step `step` took `took` substeps, starting at `first`.
    void remember(std::int64_t step, int k0, int first, int took) {
        if (hold <= 0) return;
        if (took > first) {
            const bool recent = step - last_needed <= kWindow;
            last_needed = step;
            if (!recent && k <= k0) return;
        }
        if (took <= k0) {  // back at the plain step
            k = 1, left = 0, len = 0;
            return;
        }
        if (took > first) {  // Newton needed more substeps than tried: hold them, longer after a failed halving
            const bool halving_failed = k > first && left == 0;
            len = halving_failed ? std::min(kHoldMax * hold, 2 * std::max(hold, len)) : hold;
            k = took;
            left = len;
        } else if (took < k) {  // a halving held: keep it for a fresh hold
            k = took;
            left = len = hold;
        } else if (left > 0) {
            --left;
        }
    }
    void save(StateWriter& w) const {  // kSavedSize bytes
        w.value(k), w.value(left), w.value(len), w.value(last_needed);
    }
    // False (nothing changed beyond p) if the values are out of range.
    bool restore(const char*& p) {
        std::int32_t h[3];
        std::memcpy(h, p, sizeof h);
        std::int64_t last;
        std::memcpy(&last, p + sizeof h, sizeof last);
        p += kSavedSize;
        if (h[0] < 1 || h[1] < 0 || h[2] < 0) return false;
        k = h[0], left = h[1], len = h[2], last_needed = last;
        return true;
    }
};
// The option substep_hold of Model m (SubstepHold::kDefault when not given), and its check: a
// whole number in [0, SubstepHold::kMax] (an error naming `integrator` otherwise).
NOETHER_API double substep_hold_option(const Model& m);
NOETHER_API void check_substep_hold_option(const Model& m, const char* integrator, std::vector<Diagnostic>& out);

// The one retry loop of the fixed-step implicit methods. Tries the step as k substeps of dt/k
// for k = first, 2·first, 4·first, … up to Model::options.max_substeps, returning to the step's
// start (Data::rollback_step) before every attempt after the first, and stops at the first k
// whose substeps all succeed. The method supplies:
//   begin(k, h)   before the substeps of an attempt (h = dt/k): restart from the host's state,
//                 shift a momentum to the new step length, ...
//   substep(h)    one substep of length h → Attempt
//   done(k, h)    after a successful attempt, before the report is made
// The report sums the attempt's iterations and halvings, keeps its last residual and worst node,
// (failed) the first reason a solver gave for a factorisation it could not make, counts every
// iteration of every attempt as work, and calls the step subdivided when it took
// more substeps than `baseline` (what the method would take anyway: 1, or turn_substeps()).
// subdivide_with() is the same loop with the method's own return to the step's start,
// rollback(), in place of Data::rollback_step() (an integrator that rolls back its own steps).
template <class Begin, class Substep, class Done, class Rollback>
StepReport subdivide_with(const Model& m, int first, int baseline, Begin&& begin, Substep&& substep, Done&& done,
                          Rollback&& rollback) {
    StepReport report;
    Attempt total;
    const std::string* solver_error = nullptr;  // the first attempt's that failed to factor
    for (int k = first; k <= m.options.max_substeps; k *= 2) {
        if (k > first) rollback();  // a failed attempt leaves no trace
        report.attempts = k;
        total = Attempt{};
        const double h = m.options.dt / k;
        begin(k, h);
        for (int i = 0; i < k && total.status == StepStatus::ok; ++i) {
            const Attempt a = substep(h);
            report.work += a.iterations;
            total.status = a.status;
            total.iterations += a.iterations;
            total.factorizations += a.factorizations;
            total.halvings += a.halvings;
            total.residual = a.residual;
            total.worst_node = a.worst_node;
            total.at_floor = total.at_floor || a.at_floor;
            if (!solver_error && a.solver_error && !a.solver_error->empty()) solver_error = a.solver_error;
        }
        if (total.status == StepStatus::ok) {
            done(k, h);
            report.substeps = k;
            break;
        }
    }
    report.status = total.status;
    report.iterations = total.iterations;
    report.factorizations = total.factorizations;
    report.halvings = total.halvings;
    report.residual = total.residual;
    report.worst_node = total.worst_node;
    report.subdivided = report.status == StepStatus::ok && report.substeps > baseline;
    report.at_floor = report.status == StepStatus::ok && total.at_floor;
    if (report.status != StepStatus::ok) report.solver_error = solver_error;
    return report;
}
// advance() of an integrator that undoes its own failed steps (Integrator::rolls_back_itself()):
// the report of attempt(), after rollback() whenever its status is not ok; and rollback() before
// a throw of attempt() goes on.
template <class AttemptStep, class Rollback>
StepReport undone_on_failure(AttemptStep&& attempt, Rollback&& rollback) {
    try {
        StepReport report = attempt();
        if (report.status != StepStatus::ok) rollback();
        return report;
    } catch (...) {
        rollback();
        throw;
    }
}
template <class Begin, class Substep, class Done>
StepReport subdivide(const Model& m, Data& d, int first, int baseline, Begin&& begin, Substep&& substep, Done&& done) {
    return subdivide_with(m, first, baseline, begin, substep, done, [&d] { d.rollback_step(); });
}

class NOETHER_API Integrator {
public:
    enum class Scheme { implicit_fixed, explicit_fixed, adaptive };
    virtual ~Integrator() = default;
    virtual Scheme scheme() const = 0;
    // Names accepted in Options::extra / Options::extra_lists (others are compile errors).
    virtual std::vector<std::string> option_names() const { return {}; }
    // Further checks of the Model and its options; append errors/warnings.
    virtual void check(const Model& m, std::vector<Diagnostic>& out) const { (void)m; (void)out; }
    // The integrator's state in a new Data (workspaces sized for the Model). Its save()/restore()
    // must carry everything a step may change: the kernel uses them for the step snapshot.
    virtual std::unique_ptr<IntegratorState> create_state(const Model& m) const = 0;
    // Advance the state by Model::options.dt (see the top of this file).
    virtual StepReport advance(const Model& m, Data& d) const = 0;
    // Introspection for tests and tools: prepare a step of Model::options.dt from the committed
    // state of d, then evaluate the step equations f(s) at the unknowns s (laid out by
    // BlockGraph::node_offset) and, if A is not null, the Newton matrix ∂f/∂s into A. Returns
    // false if the method has no such system (explicit methods). Does not change the state of d.
    // Minimal-coordinate methods (riqn) take s = the next joint coordinates, one per link of the
    // tree view (noether/sdk/tree.hpp, TreeView order), return their residual in f, and no matrix.
    virtual bool step_system(const Model& m, Data& d, const double* s, double* f, BlockMatrix* A) const {
        (void)m; (void)d; (void)s; (void)f; (void)A;
        return false;
    }
    // The block graph of step_system()'s unknowns for this Model and Data: the Model's graph, or
    // for methods with unknowns of their own per joint (vi-maximal and vi-midpoint: the joint-space
    // force of an implicit spring or damper, after the joint's constraint rows) a graph with larger
    // joint nodes, same nodes and ordering.
    virtual const BlockGraph& system_graph(const Model& m, const Data& d) const {
        (void)d;
        return m.graph;
    }
    // Energy (including the joint springs), momenta and violation of the committed state as
    // this method defines them. The default: the continuous values of Data::pose/twist.
    virtual Monitors monitors(const Model& m, const Data& d) const { return default_monitors(m, d); }
    // Whether linearize() is provided.
    virtual bool has_linearization() const { return false; }
    // The linearisation of the step that advance() would take now (no subdivision), into `out`
    // (sized by the caller: n = Model::total_dofs). Leaves the Data and the integrator's state
    // as they were. Returns the status of the step; `out` is valid only when it is ok.
    virtual StepStatus linearize(const Model& m, Data& d, Linearization& out) const {
        (void)m; (void)d; (void)out;
        return StepStatus::singular;
    }
    // Whether the method takes inequality constraints — contacts and enforced joint limits
    // (Model::has_inequalities(), docs/contact.md) — and writes Data::contact and
    // Data::limit_force. compile() refuses a Model with them for a method that does not.
    virtual bool takes_inequalities() const { return false; }
    // Whether the method enforces couplings between joint coordinates (Model::couplings,
    // docs/couplings.md) and writes Data::coupling_force. compile() refuses them otherwise.
    virtual bool takes_couplings() const { return false; }
    // Whether advance() undoes its own failed steps. Then the kernel takes no step snapshot before
    // it (only the host-edit test: Data::host_changed()), and advance() must leave Data and its own
    // state exactly as on entry whenever it returns a status other than ok or throws, return ok only
    // with finite poses and twists, and retry a step through its own rollback (subdivide_with()),
    // never Data::rollback_step(), which throws without a snapshot. A plugin that returns a
    // non-finite state as ok all the same: the kernel puts the last commit's poses and twists back,
    // as a host edit the integrator restarts from, and reports the step failed.
    virtual bool rolls_back_itself() const { return false; }
    // The default monitors: continuous_monitors() of the committed state plus spring energy.
    static Monitors default_monitors(const Model& m, const Data& d);
};

}  // namespace noether
