// noether/ensemble.hpp — many runs of one mechanism at once: one compiled Model, K members
// (each a noether::Run with its own Data), stepped in parallel (libnoether_parallel) on oneTBB
// or on the host's own thread pool (set_executor, noether/executor.hpp).
//
//   noether::Ensemble e(model, 64);                    // 64 members, all at the initial state
//   e.set_threads(2);                                  // 0 (default): every core
//   noether::ModelVariation v(model);                  // per-member numbers, no recompiling
//   v.set("link1.mass", {2.0});
//   e.set_model(3, v.build());
//   e.set_controller([](int i, noether::Data& d) {     // inputs before each step of member i
//       d.actuation[0] = -0.5 * d.rate[0];             // (runs on a worker thread: touch only d)
//   });
//   e.steps(1000);
//   for (int i = 0; i < e.size(); ++i)
//       if (e.failed(i)) std::printf("member %d: %s\n", i, e.failure(i).c_str());
//
// Results do not depend on the thread count or the scheduling: each member is stepped by one
// thread at a time, in its own order, exactly as a lone Run would step it (tested bit for bit,
// hash() over every member's state). A member whose step fails (or whose controller throws)
// stops, and says when and why; the others go on. No allocation per step after setup.
#pragma once

#include "noether/export.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "noether/executor.hpp"
#include "noether/model.hpp"
#include "noether/run.hpp"

namespace noether {

class NOETHER_API Ensemble {
public:
    // The most members one Ensemble takes (each is a Run with its own Data on the heap): a host
    // passing an unchecked number gets a UsageError, not an exhausted machine.
    static constexpr int kMaxMembers = 100000;
    // K members of `model`, each a Run at the Model's initial state (1 ≤ K ≤ kMaxMembers).
    Ensemble(std::shared_ptr<const Model> model, int members);
    ~Ensemble();
    Ensemble(const Ensemble&) = delete;
    Ensemble& operator=(const Ensemble&) = delete;

    int size() const { return static_cast<int>(members_.size()); }
    // Worker threads for steps(): 1 … any; 0 = every core (the default). Throws UsageError if negative.
    void set_threads(int n);
    int threads() const { return threads_; }
    // The thread count steps() uses (threads() or, for 0, the cores TBB sees).
    int effective_threads() const;
    // Run the members' steps on the host's executor (its thread pool) instead of oneTBB; an empty
    // one restores oneTBB with set_threads()'s count. Results do not depend on it (see above).
    void set_executor(ParallelFor executor);

    // Member i gets its own Model — same structure, other numbers (ModelVariation::build()) —
    // and a fresh Run at that Model's initial state. Only before the member's first step. Throws
    // UsageError if the structure differs from the ensemble's Model (fingerprint) or i is out of range.
    void set_model(int i, std::shared_ptr<const Model> model);
    const Model& model(int i) const;
    const Model& model() const { return *model_; }
    // Member i's run and state: set its initial state (poses, twists, or Data::restore of a saved
    // state), add outputs (Run::add_output, with a file per member), read results. Not while
    // steps() is running.
    Run& run(int i);
    const Run& run(int i) const;
    Data& data(int i) { return run(i).data(); }
    const Data& data(int i) const { return run(i).data(); }

    // Called before every step of every member, on the thread stepping that member (several
    // members' calls run concurrently: touch only the member's own Data, or synchronise).
    // Exceptions fail that member only.
    using Controller = std::function<void(int member, Data& data)>;
    void set_controller(Controller c) { controller_ = std::move(c); }

    // Advance every member that has not failed by n steps, in parallel. Returns the number of
    // members still running. Throws UsageError for a negative n or more than Run::max_steps().
    int steps(long long n);
    // Members done, for a progress display; may be called from another thread during steps().
    int members_done() const;

    bool failed(int i) const;
    // Why member i stopped ("" if it did not): the step's failure warning or the controller's error.
    const std::string& failure(int i) const;
    // Time and step of the last good state of a failed member (its Data stays there).
    double failure_time(int i) const;
    std::int64_t failure_step(int i) const;
    int failures() const;

    // Finish every member's outputs (Run::finish) and return its summary.
    RunSummary summary(int i);
    // FNV-1a over every member's saved state (Data::save), in member order: equal hashes mean
    // bit-identical ensembles.
    std::uint64_t hash() const;

private:
    struct Member;
    std::shared_ptr<const Model> model_;
    std::vector<std::unique_ptr<Member>> members_;
    Controller controller_;
    int threads_ = 0;
    ParallelFor executor_;
    struct Progress;
    std::unique_ptr<Progress> progress_;
    void check_index(int i, const char* fn) const;
};

}  // namespace noether
