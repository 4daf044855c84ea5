// One library exporting two solvers: configured instances of one class (NOETHER_PLUGIN_LIST).
#include "noether/model.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/solver.hpp"

namespace {

class Never final : public noether::Solver {
public:
    explicit Never(int preference) : preference_(preference) {}
    std::string unsupported(const noether::Model&) const override { return "a test solver that supports nothing"; }
    int preference(const noether::Model&) const override { return preference_; }
    std::unique_ptr<noether::SolverWorkspace> create(const noether::Model&, const noether::BlockGraph&) const override {
        return std::make_unique<noether::SolverWorkspace>();
    }
    bool factor(const noether::BlockGraph&, const noether::BlockMatrix&, noether::SolverWorkspace&) const override {
        return false;
    }
    void solve(const noether::BlockGraph&, noether::SolverWorkspace&, double*) const override {}

private:
    int preference_;
};

}  // namespace

NOETHER_PLUGIN_LIST(NOETHER_PLUGIN_ENTRY(NOETHER_PLUGIN_SOLVER, "test-list-a", "first of a list", Never, 1000),
                    NOETHER_PLUGIN_ENTRY(NOETHER_PLUGIN_SOLVER, "test-list-b", "second of a list", Never, 2000))
