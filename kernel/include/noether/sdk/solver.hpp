// noether/sdk/solver.hpp — the linear solver plugin interface.
//
// A solver factors and solves a matrix with the sparsity of the Model's block graph (a
// BlockMatrix): one diagonal block per body (6×6) and per joint (rows×rows), and the
// off-diagonal blocks of every (joint, body) edge. Integrators fill the matrix; solvers use
// the graph's ordering and loop set — they do not rediscover the structure.
#pragma once

#include "noether/export.h"

#include <memory>
#include <string>
#include <vector>

#include "noether/graph.hpp"

namespace noether {

struct Model;

// Solver-owned workspace, created once per run (no allocation while stepping).
class NOETHER_API SolverWorkspace {
public:
    virtual ~SolverWorkspace() = default;
    // Joints whose rows the last factorisation found redundant (linearly dependent); the
    // caller reports them once per run. Filled only by solvers that detect redundancy.
    std::vector<int> redundant_joints;
    int redundant_rows = 0;  // how many rows were found dependent by the last factorisation
    // Node at which the last factorisation failed (−1 if none), and why (optional).
    int failed_node = -1;
    std::string error;
    // Set by the caller: right-hand side components up to this size (absolute, in the units of
    // the system's rows) need not be solved for along nearly dependent directions. A Newton
    // solve sets a fraction of its tolerance; 0 (default): decided relative to the right-hand
    // side alone. Read by rank-revealing solvers (dense-loop).
    double negligible_rhs = 0;
};

class NOETHER_API Solver {
public:
    virtual ~Solver() = default;
    // Empty if this solver can handle the Model's graph, else the reason (shown by compile()).
    virtual std::string unsupported(const Model& m) const { (void)m; return {}; }
    // How much this solver prefers the Model (higher is better): solver "auto" picks the
    // supported solver with the highest preference, built-in or not (ties: by name). The
    // built-ins: sparse-ldu 100 (trees), dense-loop 90, schur 20, dense-lu 10.
    virtual int preference(const Model& m) const { (void)m; return 0; }
    virtual std::unique_ptr<SolverWorkspace> create(const Model& m, const BlockGraph& g) const = 0;
    // Factor A (A itself is not modified). False if a block is singular (ws.failed_node set).
    virtual bool factor(const BlockGraph& g, const BlockMatrix& A, SolverWorkspace& ws) const = 0;
    // x ← A⁻¹ x, x laid out by BlockGraph::node_offset. The matrix given to factor() must
    // still exist, unchanged (solvers may read its off-diagonal blocks instead of copying them).
    virtual void solve(const BlockGraph& g, SolverWorkspace& ws, double* x) const = 0;
};

}  // namespace noether
