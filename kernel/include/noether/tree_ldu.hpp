// noether/tree_ldu.hpp — the O(n) tree LDU and the loop node, as building blocks for solvers.
//
// TreeLDU is maximal-vi.md §8.3 (paper Algorithms 3–4, corrected): it factors the tree part
// of a BlockMatrix in the graph's elimination order, in O(Σ block³), with no fill-in.
// LoopClosure adds the loop-closure joints as one dense node by a Schur complement on top of
// the tree factors (§8.4, variant B): Z = T⁻¹C (m_Λ tree solves), S = F_ΛΛ − R Z, factored by
// a rank-revealing QR so redundant closure rows get minimum-norm multipliers. Variant B costs
// O(n·m_Λ + m_Λ³) per factorisation against O(n·m_Λ² + m_Λ³) for the bordered variant A.
// Neither allocates after init().
#pragma once

#include "noether/export.h"

#include <cstddef>
#include <vector>

#include "noether/dense.hpp"
#include "noether/graph.hpp"

namespace noether {

class NOETHER_API TreeLDU {
public:
    void init(const BlockGraph& g);
    // Factor the tree nodes (loop joints ignored). On a singular block returns false and sets
    // *failed_node.
    bool factor(const BlockGraph& g, const BlockMatrix& A, int* failed_node);
    // x ← T⁻¹ x on the tree unknowns; the entries of loop joints are left untouched. A must be
    // the matrix that was factored.
    void solve(const BlockGraph& g, const BlockMatrix& A, double* x) const;

private:
    std::vector<double> D_, Dinv_, U_;
    std::vector<std::size_t> doff_, eoff_;
    std::vector<int> piv_;
    std::vector<int> poff_;
};

class NOETHER_API LoopClosure {
public:
    void init(const BlockGraph& g);
    // After tree.factor(): build and factor the loop node. Returns its numerical rank.
    int factor(const BlockGraph& g, const BlockMatrix& A, const TreeLDU& tree);
    // Full solve: x ← F⁻¹ x (tree and loop unknowns), using tree for the tree part; `negligible`
    // as in dense::RankRevealingQR::solve.
    void solve(const BlockGraph& g, const BlockMatrix& A, const TreeLDU& tree, double* x, double negligible = 0);
    int rows() const { return m_; }
    int rank() const { return qr_.rank(); }
    // Joints owning the rows found dependent by the last factor() (each once, in order).
    void dependent_joints(const BlockGraph& g, std::vector<int>& out) const;

private:
    int m_ = 0;
    std::vector<int> row_joint_;   // loop row → joint
    std::vector<int> joint_row0_;  // loop joint j → first loop row (−1 if not a loop joint)
    std::vector<double> Z_;        // m_Λ columns of length total_size (column-major: column c at c·n)
    std::vector<double> S_, rhs_;
    dense::RankRevealingQR qr_;
};

// For a tree node n with parent p: the blocks F_pn (m_p × m_n) and F_np (m_n × m_p) of A.
NOETHER_API void tree_edge_blocks(const BlockGraph& g, const BlockMatrix& A, int n, int p, const double** Fpn, const double** Fnp);

}  // namespace noether
