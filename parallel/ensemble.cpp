// Ensembles: K Runs of one Model stepped in parallel by an executor (noether/executor.hpp): oneTBB
// by default, or the host's own thread pool.
//
// Determinism: a member is one task per steps() call; it steps its own Run exactly as a lone Run
// steps (same calls in the same order), so neither the thread count nor the scheduling can
// change a bit of its state. Members share only immutable things (the Model, the plugins).
#include "noether/ensemble.hpp"

#include <atomic>
#include <cstring>
#include <exception>
#include <thread>

#include "noether/data.hpp"
#include "noether/error.hpp"

#include "fnv.hpp"

namespace noether {

struct Ensemble::Member {
    int index = 0;
    std::unique_ptr<Run> run;
    std::string failure;
    double failure_time = 0;
    std::int64_t failure_step = -1;
    bool failed = false;
};

struct Ensemble::Progress {
    std::atomic<int> done{0};
    ParallelFor tbb;  // the default executor, made for tbb_threads
    int tbb_threads = 0;
};

namespace {

// Calls the ensemble's controller before each step of one member.
class ControllerHooks final : public RunHooks {
public:
    ControllerHooks(const Ensemble::Controller& c, int member) : c_(c), member_(member) {}
    void before_step(Run& run) override { c_(member_, run.data()); }

private:
    const Ensemble::Controller& c_;
    int member_;
};

}  // namespace

Ensemble::Ensemble(std::shared_ptr<const Model> model, int members)
    : model_(std::move(model)), progress_(std::make_unique<Progress>()) {
    if (!model_) throw UsageError("Ensemble: no Model");
    if (members < 1) throw UsageError("Ensemble: the number of members must be at least 1, got " + std::to_string(members));
    if (members > kMaxMembers)
        throw UsageError("Ensemble: the number of members must be at most " + std::to_string(kMaxMembers) + ", got " +
                         std::to_string(members));
    members_.reserve(members);
    for (int i = 0; i < members; ++i) {
        auto m = std::make_unique<Member>();
        m->index = i;
        m->run = std::make_unique<Run>(model_);
        members_.push_back(std::move(m));
    }
}

Ensemble::~Ensemble() = default;

void Ensemble::check_index(int i, const char* fn) const {
    if (i < 0 || i >= size())
        throw UsageError(std::string("Ensemble::") + fn + ": member " + std::to_string(i) + " out of range (0 … " +
                         std::to_string(size() - 1) + ")");
}

void Ensemble::set_threads(int n) {
    if (n < 0) throw UsageError("Ensemble::set_threads: the thread count must be 0 (every core) or more, got " + std::to_string(n));
    threads_ = n;
}

int Ensemble::effective_threads() const { return threads_ > 0 ? threads_ : default_concurrency(); }

void Ensemble::set_executor(ParallelFor executor) { executor_ = std::move(executor); }

void Ensemble::set_model(int i, std::shared_ptr<const Model> model) {
    check_index(i, "set_model");
    if (!model) throw UsageError("Ensemble::set_model: no Model");
    if (model->fingerprint != model_->fingerprint)
        throw UsageError("Ensemble::set_model: member " + std::to_string(i) +
                         ": the Model's structure differs from the ensemble's (vary numbers with ModelVariation, or "
                         "make another ensemble)");
    Member& m = *members_[i];
    if (m.run->data().step != 0 || m.failed)
        throw UsageError("Ensemble::set_model: member " + std::to_string(i) + " has already stepped");
    m.run = std::make_unique<Run>(std::move(model));
}

const Model& Ensemble::model(int i) const {
    check_index(i, "model");
    return members_[i]->run->model();
}

Run& Ensemble::run(int i) {
    check_index(i, "run");
    return *members_[i]->run;
}

const Run& Ensemble::run(int i) const {
    check_index(i, "run");
    return *members_[i]->run;
}

int Ensemble::steps(long long n) {
    if (n < 0) throw UsageError("Ensemble::steps: the number of steps must be non-negative, got " + std::to_string(n));
    for (const auto& m : members_)
        if (n > m->run->max_steps())
            throw UsageError("Ensemble::steps: " + std::to_string(n) + " steps is more than the limit of " +
                             std::to_string(m->run->max_steps()) + " (Run::set_max_steps)");
    Progress& p = *progress_;
    if (!executor_ && (!p.tbb || p.tbb_threads != effective_threads())) {
        p.tbb_threads = effective_threads();
        p.tbb = tbb_executor(p.tbb_threads);
    }
    p.done.store(0);
    auto one = [&](Member& m) {
        if (m.failed) {
            p.done.fetch_add(1);
            return;
        }
        Run& run = *m.run;
        try {
            if (controller_) {
                ControllerHooks hooks(controller_, m.index);
                run.steps(n, &hooks);
            } else {
                run.steps(n);
            }
        } catch (const std::exception& e) {
            run.abort(std::string("the controller failed: ") + e.what());
        } catch (...) {
            run.abort("the controller failed (an exception of unknown type)");
        }
        if (run.failed()) {
            m.failed = true;
            m.failure = run.failure();
            m.failure_time = run.data().time;
            m.failure_step = run.data().step;
        }
        p.done.fetch_add(1);
    };
    (executor_ ? executor_ : p.tbb)(size(), [&](int i) { one(*members_[i]); });
    return size() - failures();
}

int Ensemble::members_done() const { return progress_->done.load(); }

bool Ensemble::failed(int i) const {
    check_index(i, "failed");
    return members_[i]->failed;
}

const std::string& Ensemble::failure(int i) const {
    check_index(i, "failure");
    return members_[i]->failure;
}

double Ensemble::failure_time(int i) const {
    check_index(i, "failure_time");
    return members_[i]->failure_time;
}

std::int64_t Ensemble::failure_step(int i) const {
    check_index(i, "failure_step");
    return members_[i]->failure_step;
}

int Ensemble::failures() const {
    int n = 0;
    for (const auto& m : members_) n += m->failed ? 1 : 0;
    return n;
}

RunSummary Ensemble::summary(int i) {
    check_index(i, "summary");
    Run& r = *members_[i]->run;
    std::vector<std::string> notes;
    r.finish(&notes);
    RunSummary s = r.summary();
    for (const std::string& x : notes) s.warnings.push_back(x);
    return s;
}

std::uint64_t Ensemble::hash() const {
    std::uint64_t h = detail::kFnvOffset;
    for (const auto& m : members_) {
        const std::string bytes = m->run->data().save();
        h = detail::fnv(h, bytes.data(), bytes.size());
    }
    return h;
}

}  // namespace noether
