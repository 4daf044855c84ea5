// dense-loop: tree LDU plus every loop-closure joint in one dense node.
//
// Variant B of maximal-vi.md §8.4 (loop Schur complement on top of the tree factors,
// O(n·m_Λ + m_Λ³)), chosen over the bordered variant A (O(n·m_Λ² + m_Λ³)) for its cost.
// The loop block is factored by a rank-revealing QR: redundant closure rows (a planar
// four-bar of four revolute joints in 3-D, a planar loop closed by a ball joint) get
// minimum-norm multipliers, and the joints owning them are reported to the caller. Bodies far
// apart in scale are guarded by CheckedSolve (residual check, refinement, dense fallback).
#include "noether/model.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/solver.hpp"
#include "noether/sdk/tree_ldu.hpp"

namespace {

using namespace noether;

struct Workspace final : SolverWorkspace {
    TreeLDU tree;
    LoopClosure loop;
    CheckedSolve guard;
    const BlockMatrix* A = nullptr;
};

class DenseLoop final : public Solver {
public:
    int preference(const Model&) const override { return 90; }
    std::unique_ptr<SolverWorkspace> create(const Model& m, const BlockGraph& g) const override {
        auto ws = std::make_unique<Workspace>();
        ws->tree.init(g);
        ws->loop.init(g);
        ws->guard.init(g, model_scale_spread(m));
        ws->redundant_joints.reserve(g.loop_joints.size());
        return ws;
    }
    bool factor(const BlockGraph& g, const BlockMatrix& A, SolverWorkspace& w) const override {
        auto& ws = static_cast<Workspace&>(w);
        ws.failed_node = -1;
        ws.A = &A;
        int failed = -1;
        bool ok = ws.tree.factor(g, A, &failed);
        if (ok && g.loop_rows > 0) {
            const int rank = ws.loop.factor(g, A, ws.tree);
            if (rank < ws.loop.rows()) ws.loop.dependent_joints(g, ws.redundant_joints);
            else ws.redundant_joints.clear();
            ws.redundant_rows = ws.loop.rows() - rank;
            if (rank == 0) ok = false, failed = g.nbodies + g.loop_joints.front();
        }
        if (ws.guard.factor(g, A, ok)) return true;
        ws.failed_node = failed;
        return false;
    }
    void solve(const BlockGraph& g, SolverWorkspace& w, double* x) const override {
        auto& ws = static_cast<Workspace&>(w);
        ws.guard.solve(g, x, [&](double* v) {
            if (g.loop_rows == 0) ws.tree.solve(g, *ws.A, v);
            else ws.loop.solve(g, *ws.A, ws.tree, v, ws.negligible_rhs);
        });
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_SOLVER, "dense-loop",
               "tree LDU + loop closures in one dense rank-revealing node (any topology)", DenseLoop)
