// sparse-ldu: the O(n) tree LDU of maximal-vi.md §8.3, for tree-structured mechanisms.
//
// The elimination order is fixed by the tree, so pivoting can only happen inside a block. When
// bodies far apart in scale meet (masses 1e-3 and 1e6 kg in one chain), eliminating the heavy one
// into the light one loses the light body's own inertia to round-off: the factorisation is then
// inaccurate (relative residuals 0.66 to 500 where ordinary scenes stay below 1.3e-9) or singular.
// So when the bodies' diagonal blocks span more than kSpread, every solve checks its residual and
// refines to kRefined; if that does not get there, or the factorisation found a zero pivot, the
// matrix is solved by dense LU with partial pivoting (systems up to kDenseFallback unknowns).
// Other scenes step bit for bit as before, at no extra cost (issue 14, item 14).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "noether/dense.hpp"
#include "noether/model.hpp"
#include "noether/plugin.hpp"
#include "noether/solver.hpp"
#include "noether/tree_ldu.hpp"

namespace {

using namespace noether;

constexpr double kSpread = 1e6;       // body blocks this far apart in scale: check every solve
constexpr double kRefined = 1e-12;    // relative residual a checked solve must reach
constexpr int kRefinements = 2;       // refinement steps before the dense fallback
constexpr int kDenseFallback = 600;   // largest system with a dense fallback (2.9 MB, made once)

struct Workspace final : SolverWorkspace {
    TreeLDU tree;
    const BlockMatrix* A = nullptr;
    bool tree_ok = true;          // the tree factorisation of A succeeded
    bool checked = false;         // the body blocks span more than kSpread: check each solve
    bool dense_ready = false;     // M holds the dense LU of A
    std::vector<double> b, r;     // right-hand side and residual of a solve
    std::vector<double> M;        // dense fallback (empty above kDenseFallback)
    std::vector<int> piv;
};

// r ← b − A x over the blocks of the graph.
void residual(const BlockGraph& g, const BlockMatrix& A, const double* b, const double* x, double* r) {
    std::copy(b, b + g.total_size, r);
    for (int n = 0; n < g.nnodes(); ++n) {
        const int sz = g.node_size[n], off = g.node_offset[n];
        dense::gemv_sub(sz, sz, A.diag(n), x + off, r + off);
    }
    for (int j = 0; j < g.njoints; ++j) {
        const int jn = g.joint_node(j), m = g.node_size[jn], jo = g.node_offset[jn];
        for (int side = 0; side < 2; ++side) {
            const int body = side == 0 ? g.joint_a[j] : g.joint_b[j];
            if (body < 0) continue;
            const int bo = g.node_offset[body];
            dense::gemv_sub(6, m, A.bj(j, side), x + jo, r + bo);  // F[body, joint]: 6 × m
            dense::gemv_sub(m, 6, A.jb(j, side), x + bo, r + jo);  // F[joint, body]: m × 6
        }
    }
}

double max_abs(const double* v, int n) {
    double m = 0;
    for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
    return m;
}

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
        ws->b.assign(g.total_size, 0.0);
        ws->r.assign(g.total_size, 0.0);
        if (g.total_size <= kDenseFallback) {
            ws->M.assign(static_cast<std::size_t>(g.total_size) * g.total_size, 0.0);
            ws->piv.assign(g.total_size, 0);
        }
        return ws;
    }
    bool factor(const BlockGraph& g, const BlockMatrix& A, SolverWorkspace& w) const override {
        auto& ws = static_cast<Workspace&>(w);
        ws.failed_node = -1;
        ws.A = &A;
        ws.dense_ready = false;
        double lo = HUGE_VAL, hi = 0;  // scale of each body's diagonal block
        for (int b = 0; b < g.nbodies; ++b) {
            const double sb = max_abs(A.diag(b), 36);
            lo = std::min(lo, sb), hi = std::max(hi, sb);
        }
        ws.checked = hi > kSpread * lo;
        int failed = -1;
        ws.tree_ok = ws.tree.factor(g, A, &failed);
        if (ws.tree_ok) return true;
        if (!dense(g, ws)) {  // singular at any order, or too large for the fallback
            ws.failed_node = failed;
            return false;
        }
        return true;
    }
    void solve(const BlockGraph& g, SolverWorkspace& w, double* x) const override {
        auto& ws = static_cast<Workspace&>(w);
        const int n = g.total_size;
        if (!ws.tree_ok) {
            dense::lu_solve(n, ws.M.data(), ws.piv.data(), x);
            return;
        }
        if (!ws.checked) {
            ws.tree.solve(g, *ws.A, x);
            return;
        }
        std::copy(x, x + n, ws.b.begin());
        ws.tree.solve(g, *ws.A, x);
        const double scale = max_abs(ws.b.data(), n);
        for (int it = 0;; ++it) {
            residual(g, *ws.A, ws.b.data(), x, ws.r.data());
            if (!(max_abs(ws.r.data(), n) > kRefined * scale)) return;
            if (it == kRefinements) break;
            ws.tree.solve(g, *ws.A, ws.r.data());
            for (int i = 0; i < n; ++i) x[i] += ws.r[i];
        }
        if (!ws.dense_ready && !dense(g, ws)) return;  // no fallback: the refined solution stands
        std::copy(ws.b.begin(), ws.b.end(), x);
        dense::lu_solve(n, ws.M.data(), ws.piv.data(), x);
    }

private:
    // The dense LU of the current matrix into ws.M (false if too large or singular).
    static bool dense(const BlockGraph& g, Workspace& ws) {
        if (ws.M.empty()) return false;
        ws.A->to_dense(g, ws.M.data());
        ws.dense_ready = dense::lu_factor(g.total_size, ws.M.data(), ws.piv.data());
        return ws.dense_ready;
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_SOLVER, "sparse-ldu", "tree LDU in elimination order, O(n); trees only", SparseLDU)
