// dense-lu: the whole Newton matrix as one dense matrix, LU with partial pivoting.
// O(n³): the reference for tests and for small systems.
#include <vector>

#include "noether/sdk/dense.hpp"
#include "noether/model.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/solver.hpp"

namespace {

using namespace noether;

struct Workspace final : SolverWorkspace {
    std::vector<double> M;
    std::vector<int> piv;
};

class DenseLU final : public Solver {
public:
    int preference(const Model&) const override { return 10; }
    std::unique_ptr<SolverWorkspace> create(const Model&, const BlockGraph& g) const override {
        auto ws = std::make_unique<Workspace>();
        ws->M.assign(static_cast<std::size_t>(g.total_size) * g.total_size, 0.0);
        ws->piv.assign(g.total_size, 0);
        return ws;
    }
    bool factor(const BlockGraph& g, const BlockMatrix& A, SolverWorkspace& w) const override {
        auto& ws = static_cast<Workspace&>(w);
        ws.failed_node = -1;
        A.to_dense(g, ws.M.data());
        if (!dense::lu_factor(g.total_size, ws.M.data(), ws.piv.data())) {
            ws.failed_node = 0;
            ws.error = "the matrix is singular (as redundant constraint rows make it: a loop of hinges in one "
                       "plane has them, and dense-lu takes none; solver 'dense-loop' does)";
            return false;
        }
        return true;
    }
    void solve(const BlockGraph& g, SolverWorkspace& w, double* x) const override {
        auto& ws = static_cast<Workspace&>(w);
        dense::lu_solve(g.total_size, ws.M.data(), ws.piv.data(), x);
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_SOLVER, "dense-lu", "whole system dense, partial pivoting, O(n^3) (reference)", DenseLU)
