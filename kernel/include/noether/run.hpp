// noether/run.hpp — running a Model over many steps: output channels, the atomic CSV writer,
// run tracking and the run summary. Every host (the Lua binding, the `noether` command, C and
// C++ programs) runs through this one loop.
//
//   auto run = noether::Run(model);                          // makes its Data
//   run.add_output({"out.csv", 1, {"time", "energy", "link1.position"}});
//   run.steps(1000);                                         // hooks: before each step, on sample
//   run.finish();                                            // renames out.csv.part → out.csv
//   std::puts(run.summary().to_text().c_str());
#pragma once

#include "noether/export.h"

#include <cstdint>
#include <cstdio>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "noether/data.hpp"
#include "noether/model.hpp"
#include "noether/output_file.hpp"

namespace noether {

// One output channel (a CSV column group).
struct NOETHER_API Channel {
    enum class Kind {
        time, energy, kinetic, potential, momentum, angular_momentum, violation, newton, residual, substeps,
        position, orientation, velocity, angular_velocity, coord, rate,
        // contacts and limits (docs/contact.md): totals, per contact point, per limited joint
        contact_force, penetration, contacts_active, gap, normal_force, friction, point, active, limit_force
    };
    Kind kind = Kind::time;
    std::string text;     // as written ("link1.position")
    std::string element;  // body, joint or contact name, for per-element channels
    int index = -1;       // body, joint or contact index, resolved by Run::add_output
};
// Parse a channel name; false if it is not one.
NOETHER_API bool parse_channel(const std::string& text, Channel& out);
// The channel names, for messages ("time, energy, …, <joint>.rate").
NOETHER_API const char* channel_names();
// The deepest penetration of the state's last step [m] (0: every gap open) and the number of contact
// points carrying load (Data::contact).
NOETHER_API double penetration(const Data& d);
NOETHER_API int contacts_active(const Data& d);

struct NOETHER_API OutputSpec {
    // csv: the channels, one row per sample; recording: body poses, energy and violation per
    // sample for the viewer (`noether view`, docs/viewer.md), channels not used.
    enum class Format { csv, recording };
    Format format = Format::csv;
    std::string file;  // path ("" for none): written as <file>.part, renamed when the run finishes
    int every = 1;     // sample every `every` steps (and the initial state)
    // > 0: sample at about this many frames per simulated second instead (every = round(1/(fps dt)), at least 1)
    double fps = 0;
    std::vector<std::string> channels;
    bool hook = false;  // call RunHooks::on_sample for this output when it samples
    Origin origin;      // where it was declared (prefixes error messages)
    // A symbolic link named as the file is written through (false: refused, as in the sandbox).
    // Devices and FIFOs are written in place, never replaced (noether/output_file.hpp).
    bool follow_links = true;
};

// The run summary. Its fields are one list (type, name); the JSON form, the Lua table and the
// C API are generated from it. Types: I integer, D number, DN number or null, S string, B boolean.
#define NOETHER_SUMMARY_FIELDS(X)                                                             \
    X(I, bodies) X(I, joints) X(I, loop_joints) X(I, dof) X(S, integrator) X(S, solver)        \
    X(D, dt) X(I, steps) X(D, sim_time) X(D, wall_s) X(D, us_per_step) X(D, energy_initial)    \
    X(D, energy_final) X(D, energy_max_abs_dev) X(DN, energy_max_rel_dev) X(D, max_violation)  \
    X(S, worst_joint) X(D, newton_mean) X(I, newton_max) X(D, factor_mean) X(I, subdivided_steps) \
    X(I, failed_steps) X(I, floor_steps) X(I, internal_steps) X(I, rejected_steps)              \
    X(I, projection_total) X(I, contacts) X(I, limited_joints) X(D, penetration_max)            \
    X(I, contacts_active_max) X(B, failed)

struct NOETHER_API RunSummary {
    using I = long long;
    using D = double;
    using DN = double;  // NaN when undefined (energy_max_rel_dev with zero initial energy)
    using S = std::string;
    using B = bool;
#define NOETHER_X(type, name) type name{};
    NOETHER_SUMMARY_FIELDS(NOETHER_X)
#undef NOETHER_X
    std::vector<std::string> warnings;
    std::string graph;  // Run::graph_report(), filled by the hosts that print it (`noether check`)
    std::string to_json() const;
    std::string to_text() const;
};
// One object for one summary, else an array.
NOETHER_API std::string summaries_json(const std::vector<RunSummary>& runs);
// A string as a JSON string literal (quoted and escaped).
NOETHER_API std::string json_quote(const std::string& s);
// The block graph, elimination order and options of a Model, as text.
NOETHER_API std::string graph_text(const Model& m);

class Run;

// Host callbacks. Exceptions thrown here leave the run consistent and propagate out of steps().
class NOETHER_API RunHooks {
public:
    virtual ~RunHooks() = default;
    virtual void before_step(Run& run) { (void)run; }
    // An output declared with hook = true sampled (after its CSV row, if any).
    virtual void on_sample(Run& run, int output) { (void)run; (void)output; }
};

class NOETHER_API Run {
public:
    explicit Run(std::shared_ptr<const Model> model);
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    const Model& model() const { return *model_; }
    const std::shared_ptr<const Model>& model_ptr() const { return model_; }
    Data& data() { return *data_; }
    const Data& data() const { return *data_; }

    // Add an output before the first step: resolves the channels and opens <file>.part with its
    // header. Throws UsageError naming the origin and the channel or file. Returns its index.
    int add_output(const OutputSpec& spec);
    // Progress line on stderr (simulated time, steps/s, ETA) once a call of steps() has run for a
    // second (only if stderr is a terminal).
    void set_progress(bool on) { progress_ = on; }
    // Warnings from outside the kernel (e.g. an importer's) shown in the summary.
    void add_note(const std::string& warning) { notes_.push_back(warning); }

    // Advance `n` steps (sampling the initial state first if nothing was sampled yet). Returns
    // false if a step failed (failure() says why; the run does not go on). Throws UsageError
    // when n is negative or larger than max_steps() (a guard against runs nobody meant, e.g.
    // dt = 1e-12 over 10 s).
    bool steps(long long n, RunHooks* hooks = nullptr);
    // Steps for a duration: llround(seconds / dt). Throws UsageError for a negative, non-finite
    // or overflowing count.
    long long steps_for(double seconds) const;
    static constexpr long long kDefaultMaxSteps = 100000000;  // 1e8
    void set_max_steps(long long n) { max_steps_ = n; }
    long long max_steps() const { return max_steps_; }

    // Close the outputs: complete ones are renamed to their final names; after a failed run
    // or a write error the partial file stays as <file>.part and a note says so. Idempotent.
    void finish(std::vector<std::string>* notes = nullptr);
    bool finished() const { return finished_; }
    // False once an output could not be written completely (a write, close or rename failed).
    bool outputs_ok() const { return outputs_ok_; }
    // The host stopped the run (e.g. its script raised an error): finish() will leave the
    // outputs as <file>.part, like after a failed step.
    void abort(const std::string& why);

    bool failed() const { return failed_; }
    const std::string& failure() const { return failure_; }
    RunSummary summary() const;

    // Tracking since the start (initial energy, extremes, wall time of the steps).
    double energy_initial() const { return e0_; }
    double wall_seconds() const { return wall_; }
    // The block graph (graph_text) and the step advice (noether/advice.hpp) for the current
    // state, as `noether check` and the import report print them (before any step: the initial
    // state). Not part of summary(): summaries are taken per run and per ensemble member, and
    // the advice factors the joint-space mass matrix.
    std::string graph_report() const;

private:
    struct Output {
        OutputSpec spec;
        std::vector<Channel> channels;
        OutputFile file;
        std::FILE* fp = nullptr;  // file.fp() while open
        std::vector<float> frame;  // recording: one frame
    };
    void sample(bool force, const Monitors* known, RunHooks* hooks);
    void set_baseline(const Monitors& mon);
    void write_header(Output& o);
    void write_row(Output& o, const Monitors& mon);
    void watch(const Monitors& mon);

    // The watch over a fixed-step run (docs/integrators.md, "Never a silent blow-up"): energy
    // growth without inputs, bodies turning too far per step, a growing share of subdivided steps.
    struct Watch {
        bool passive = true;          // no input seen yet (constant forces, applied forces, actuation)
        double kinetic_max = 0;       // largest kinetic energy seen (the energy scale with |E0|)
        long long window_start = 0;   // step and subdivided count at the start of the window
        long long window_subdivided = 0;
        double last_share = 0;        // subdivided share of the previous window
        double e_ref = std::nan("");  // reference of the energy test: E0, with contacts or limits the lowest seen
        // The bodies' centre-of-mass velocities after step v_step: a warning takes their
        // accelerations from them (the joint forces it names: joint_force_mode, noether/advice.hpp).
        // Sized at start.
        std::vector<Vec3> v_prev;
        long long v_step = -1;
    };
    Watch watch_;

    std::shared_ptr<const Model> model_;
    std::unique_ptr<Data> data_;
    std::vector<Output> outputs_;
    std::vector<std::string> notes_;
    double e0_ = 0, e_final_ = 0, e_max_dev_ = 0, v_max_ = 0, wall_ = 0;
    double penetration_max_ = 0;  // deepest penetration of any step
    long long active_max_ = 0;    // most contacts carrying load at once
    std::string worst_joint_;
    bool sampled_ = false, failed_ = false, finished_ = false, progress_ = false, outputs_ok_ = true;
    long long max_steps_ = kDefaultMaxSteps;
    std::string failure_;
};

}  // namespace noether
