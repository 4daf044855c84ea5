// sparse-ldu: the O(n) tree LDU of maximal-vi.md §8.3, for tree-structured mechanisms.
//
// Bodies far apart in scale (masses 1e-4 and 1e6 kg in one chain) are guarded by CheckedSolve
// (noether/sdk/tree_ldu.hpp): residual check, refinement, dense fallback (issue 14, item 14).
#include <string>

#include "noether/model.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/solver.hpp"
#include "noether/sdk/tree_ldu.hpp"

namespace {

using namespace noether;

struct Workspace final : SolverWorkspace {
    TreeLDU tree;
    CheckedSolve guard;
    const BlockMatrix* A = nullptr;
};

class SparseLDU final : public Solver {
public:
    int preference(const Model&) const override { return 100; }
    std::string unsupported(const Model& m) const override {
        if (m.graph.loop_joints.empty()) return {};
        std::string names;
        for (int j : m.graph.loop_joints) names += (names.empty() ? "'" : ", '") + m.joints[j].name + "'";
        return "handles tree-structured mechanisms only, and this model closes " +
               std::to_string(m.graph.loop_joints.size()) + " loop(s) with joint(s) " + names +
               "; use solver 'dense-loop' (or 'auto', which picks it)";
    }
    std::unique_ptr<SolverWorkspace> create(const Model& m, const BlockGraph& g) const override {
        auto ws = std::make_unique<Workspace>();
        ws->tree.init(g);
        ws->guard.init(g, model_scale_spread(m));
        return ws;
    }
    bool factor(const BlockGraph& g, const BlockMatrix& A, SolverWorkspace& w) const override {
        auto& ws = static_cast<Workspace&>(w);
        ws.failed_node = -1;
        ws.A = &A;
        int failed = -1;
        const bool ok = ws.tree.factor(g, A, &failed);
        if (ws.guard.factor(g, A, ok)) return true;
        ws.failed_node = failed;  // singular at any order, or too large for the fallback
        return false;
    }
    void solve(const BlockGraph& g, SolverWorkspace& w, double* x) const override {
        auto& ws = static_cast<Workspace&>(w);
        ws.guard.solve(g, x, [&](double* v) { ws.tree.solve(g, *ws.A, v); });
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_SOLVER, "sparse-ldu", "tree LDU in elimination order, O(n); trees only", SparseLDU)
