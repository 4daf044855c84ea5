// sparse-ldu: the O(n) tree LDU of maximal-vi.md §8.3, for tree-structured mechanisms.
#include <string>

#include "noether/model.hpp"
#include "noether/plugin.hpp"
#include "noether/solver.hpp"
#include "noether/tree_ldu.hpp"

namespace {

using namespace noether;

struct Workspace final : SolverWorkspace {
    TreeLDU tree;
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
    std::unique_ptr<SolverWorkspace> create(const Model&, const BlockGraph& g) const override {
        auto ws = std::make_unique<Workspace>();
        ws->tree.init(g);
        return ws;
    }
    bool factor(const BlockGraph& g, const BlockMatrix& A, SolverWorkspace& w) const override {
        auto& ws = static_cast<Workspace&>(w);
        ws.failed_node = -1;
        ws.A = &A;
        return ws.tree.factor(g, A, &ws.failed_node);
    }
    void solve(const BlockGraph& g, SolverWorkspace& w, double* x) const override {
        auto& ws = static_cast<Workspace&>(w);
        ws.tree.solve(g, *ws.A, x);
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_SOLVER, "sparse-ldu", "tree LDU in elimination order, O(n); trees only", SparseLDU)
