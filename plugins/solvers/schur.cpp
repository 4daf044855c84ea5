// schur: Schur complement on the constraint rows (maximal-vi.md §8.5, paper 003 §5.1).
//
// Eliminate the body blocks (block diagonal): S = E − C D⁻¹ B over all joint rows, where B, C
// are the (body, joint) and (joint, body) blocks and E the joint diagonal (zero for the
// variational integrators). S has a nonzero block (j, k) iff joints j and k share a body, so it
// is sparse; it is factored by Eigen's SparseLU with the pattern analysed once. Works for any
// topology without redundant rows. Redundant loop-closure rows make S singular: they are
// detected at the first factorisation (rank-revealing check of the loop node) and refused with
// the joints named. Note: Eigen's SparseLU allocates inside factorize(); this solver is not
// allocation-free while stepping (sparse-ldu and dense-loop are). Bodies far apart in scale are
// guarded by CheckedSolve (residual check, refinement, dense fallback; noether/sdk/tree_ldu.hpp).
#include <Eigen/SparseCore>
#include <Eigen/SparseLU>
#include <algorithm>
#include <string>
#include <vector>

#include "noether/sdk/dense.hpp"
#include "noether/model.hpp"
#include "noether/sdk/plugin.hpp"
#include "noether/sdk/solver.hpp"
#include "noether/sdk/tree_ldu.hpp"

namespace {

using namespace noether;
using SpMat = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;

struct Block {
    int j, k;          // joints
    int body;          // shared body (−1 for the E diagonal)
    int sj, sk;        // sides of the body in j and k
    std::vector<int> idx;  // value index of each entry (row-major m_j × m_k)
};

struct Workspace final : SolverWorkspace {
    std::vector<int> row0;         // first S row of each joint
    SpMat S;
    Eigen::SparseLU<SpMat, Eigen::COLAMDOrdering<int>> lu;
    std::vector<Block> blocks;
    std::vector<double> Dlu;        // per body 6×6 LU
    std::vector<int> piv;
    std::vector<double> X;          // per (joint, side): D_b⁻¹ F[b, j] (6 × m_j)
    std::vector<std::size_t> xoff;  // per joint side
    Eigen::VectorXd rhs, sol;
    const BlockMatrix* A = nullptr;
    bool checked = false;
    CheckedSolve guard;
    std::vector<std::string> joint_names;
};

class Schur final : public Solver {
public:
    int preference(const Model&) const override { return 20; }
    std::unique_ptr<SolverWorkspace> create(const Model& m, const BlockGraph& g) const override {
        auto ws = std::make_unique<Workspace>();
        const int nj = g.njoints, nb = g.nbodies;
        ws->row0.assign(nj, 0);
        int rows = 0;
        for (int j = 0; j < nj; ++j) ws->row0[j] = rows, rows += g.node_size[nb + j];
        for (const JointInfo& j : m.joints) ws->joint_names.push_back(j.name);
        // Pattern: E diagonal blocks and every pair of joints sharing a body.
        std::vector<Eigen::Triplet<double>> trip;
        auto add_block = [&](int j, int k, int body, int sj, int sk) {
            Block b{j, k, body, sj, sk, {}};
            ws->blocks.push_back(b);
            for (int r = 0; r < g.node_size[nb + j]; ++r)
                for (int c = 0; c < g.node_size[nb + k]; ++c) trip.emplace_back(ws->row0[j] + r, ws->row0[k] + c, 0.0);
        };
        for (int j = 0; j < nj; ++j) add_block(j, j, -1, 0, 0);
        for (int b = 0; b < nb; ++b)
            for (int x = g.body_joints_start[b]; x < g.body_joints_start[b + 1]; ++x)
                for (int y = g.body_joints_start[b]; y < g.body_joints_start[b + 1]; ++y) {
                    const int j = g.body_joints[x], k = g.body_joints[y];
                    add_block(j, k, b, g.joint_a[j] == b ? 0 : 1, g.joint_a[k] == b ? 0 : 1);
                }
        ws->S.resize(rows, rows);
        ws->S.setFromTriplets(trip.begin(), trip.end());
        ws->S.makeCompressed();
        for (Block& blk : ws->blocks) {
            const int mj = g.node_size[nb + blk.j], mk = g.node_size[nb + blk.k];
            blk.idx.resize(static_cast<std::size_t>(mj) * mk);
            for (int r = 0; r < mj; ++r)
                for (int c = 0; c < mk; ++c)
                    blk.idx[r * mk + c] =
                        static_cast<int>(&ws->S.coeffRef(ws->row0[blk.j] + r, ws->row0[blk.k] + c) - ws->S.valuePtr());
        }
        if (rows > 0) ws->lu.analyzePattern(ws->S);
        ws->Dlu.assign(36 * static_cast<std::size_t>(nb), 0.0);
        ws->piv.assign(6 * static_cast<std::size_t>(nb), 0);
        ws->xoff.assign(2 * static_cast<std::size_t>(nj), 0);
        std::size_t off = 0;
        for (int j = 0; j < nj; ++j) {
            ws->xoff[2 * j] = off;
            off += 6 * static_cast<std::size_t>(g.node_size[nb + j]);
            ws->xoff[2 * j + 1] = off;
            off += 6 * static_cast<std::size_t>(g.node_size[nb + j]);
        }
        ws->X.assign(off, 0.0);
        ws->rhs.setZero(rows);
        ws->sol.setZero(rows);
        ws->guard.init(g, model_scale_spread(m));
        return ws;
    }

    bool factor(const BlockGraph& g, const BlockMatrix& A, SolverWorkspace& w) const override {
        auto& ws = static_cast<Workspace&>(w);
        ws.failed_node = -1;
        ws.error.clear();
        ws.A = &A;
        if (!ws.checked && !g.loop_joints.empty() && !check_redundancy(g, A, ws)) return false;
        ws.checked = true;
        if (ws.guard.factor(g, A, factor_structured(g, A, ws))) {
            ws.failed_node = -1;
            ws.error.clear();
            return true;
        }
        return false;
    }

    void solve(const BlockGraph& g, SolverWorkspace& w, double* x) const override {
        auto& ws = static_cast<Workspace&>(w);
        ws.guard.solve(g, x, [&](double* v) { solve_structured(g, ws, v); });
    }

private:
    static bool factor_structured(const BlockGraph& g, const BlockMatrix& A, Workspace& ws) {
        const int nb = g.nbodies, nj = g.njoints;
        // Body blocks and X = D_b⁻¹ F[b, j] for every joint side.
        for (int b = 0; b < nb; ++b) {
            double* D = &ws.Dlu[36 * static_cast<std::size_t>(b)];
            std::copy(A.diag(b), A.diag(b) + 36, D);
            if (!dense::lu_factor(6, D, &ws.piv[6 * static_cast<std::size_t>(b)])) {
                ws.failed_node = b;
                return false;
            }
        }
        for (int j = 0; j < nj; ++j) {
            const int mj = g.node_size[nb + j];
            const int ends[2] = {g.joint_a[j], g.joint_b[j]};
            for (int s = 0; s < 2; ++s) {
                if (ends[s] < 0) continue;
                double* X = &ws.X[ws.xoff[2 * j + s]];
                std::copy(A.bj(j, s), A.bj(j, s) + 6 * mj, X);
                dense::lu_solve_matrix(6, mj, &ws.Dlu[36 * static_cast<std::size_t>(ends[s])],
                                       &ws.piv[6 * static_cast<std::size_t>(ends[s])], X);
            }
        }
        // S = E − Σ_b F[j, b] X_k.
        double* val = ws.S.valuePtr();
        std::fill(val, val + ws.S.nonZeros(), 0.0);
        for (const Block& blk : ws.blocks) {
            const int mj = g.node_size[nb + blk.j], mk = g.node_size[nb + blk.k];
            if (blk.body < 0) {
                const double* E = A.diag(nb + blk.j);
                for (int i = 0; i < mj * mk; ++i) val[blk.idx[i]] += E[i];
                continue;
            }
            const double* C = A.jb(blk.j, blk.sj);                     // m_j × 6
            const double* X = &ws.X[ws.xoff[2 * blk.k + blk.sk]];      // 6 × m_k
            for (int r = 0; r < mj; ++r)
                for (int c = 0; c < mk; ++c) {
                    double acc = 0;
                    for (int i = 0; i < 6; ++i) acc += C[r * 6 + i] * X[i * mk + c];
                    val[blk.idx[r * mk + c]] -= acc;
                }
        }
        if (ws.S.rows() == 0) return true;
        ws.lu.factorize(ws.S);
        if (ws.lu.info() != Eigen::Success) {
            ws.failed_node = nb;
            ws.error = "the constraint-space matrix is singular (" + ws.lu.lastErrorMessage() + ")";
            return false;
        }
        return true;
    }

    static void solve_structured(const BlockGraph& g, Workspace& ws, double* x) {
        const BlockMatrix& A = *ws.A;
        const int nb = g.nbodies, nj = g.njoints;
        // y_b = D_b⁻¹ f_b
        for (int b = 0; b < nb; ++b)
            dense::lu_solve(6, &ws.Dlu[36 * static_cast<std::size_t>(b)], &ws.piv[6 * static_cast<std::size_t>(b)],
                            x + g.node_offset[b]);
        // rhs_j = f_j − Σ F[j, b] y_b
        for (int j = 0; j < nj; ++j) {
            const int mj = g.node_size[nb + j];
            double* rj = ws.rhs.data() + ws.row0[j];
            const double* fj = x + g.node_offset[nb + j];
            for (int r = 0; r < mj; ++r) rj[r] = fj[r];
            const int ends[2] = {g.joint_a[j], g.joint_b[j]};
            for (int s = 0; s < 2; ++s)
                if (ends[s] >= 0) dense::gemv_sub(mj, 6, A.jb(j, s), x + g.node_offset[ends[s]], rj);
        }
        if (ws.S.rows() > 0) ws.sol = ws.lu.solve(ws.rhs);
        // λ, then Δy_b = y_b − Σ X_j λ_j (X = D_b⁻¹ F[b, j])
        for (int j = 0; j < nj; ++j) {
            const int mj = g.node_size[nb + j];
            const double* lj = ws.sol.data() + ws.row0[j];
            double* xj = x + g.node_offset[nb + j];
            for (int r = 0; r < mj; ++r) xj[r] = lj[r];
            const int ends[2] = {g.joint_a[j], g.joint_b[j]};
            for (int s = 0; s < 2; ++s)
                if (ends[s] >= 0) dense::gemv_sub(6, mj, &ws.X[ws.xoff[2 * j + s]], lj, x + g.node_offset[ends[s]]);
        }
    }

    // Redundant rows can only come with loop closures: check the rank of the loop node once.
    // Whether rows are redundant is geometry (the constraint Jacobian), not mass: when the bodies
    // span more than CheckedSolve::kSpread in scale, whose round-off would blur the rank, the
    // check runs with unit body blocks instead.
    static bool check_redundancy(const BlockGraph& g, const BlockMatrix& A, Workspace& ws) {
        TreeLDU tree;
        LoopClosure loop;
        tree.init(g);
        loop.init(g);
        BlockMatrix unit;
        const BlockMatrix* M = &A;
        if (CheckedSolve::scales_apart(g, A)) {
            unit = A;
            for (int b = 0; b < g.nbodies; ++b)
                for (int i = 0; i < 36; ++i) unit.diag(b)[i] = i % 7 == 0 ? 1.0 : 0.0;
            M = &unit;
        }
        int failed = -1;
        if (!tree.factor(g, *M, &failed)) return true;  // let the main factorisation report it
        if (loop.factor(g, *M, tree) == loop.rows()) return true;
        loop.dependent_joints(g, ws.redundant_joints);
        std::string names;
        for (int j : ws.redundant_joints) names += (names.empty() ? "'" : ", '") + ws.joint_names[j] + "'";
        ws.error = "redundant constraint rows (" + std::to_string(loop.rows() - loop.rank()) +
                   " dependent) in the loop closure joint(s) " + names +
                   "; the Schur complement needs independent rows: use solver 'dense-loop'";
        ws.failed_node = g.nbodies + ws.redundant_joints.front();
        return false;
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_SOLVER, "schur", "Schur complement on the constraint rows, sparse LU (no redundant rows)",
               Schur)
