// noether/sdk/tree_ldu.hpp — the O(n) tree LDU and the loop node, as building blocks for solvers.
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

#include "noether/sdk/dense.hpp"
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

// The structured solvers (sparse-ldu, dense-loop, schur) eliminate in a fixed order, so they can
// pivot only inside a block. When bodies far apart in scale meet (1e-4 and 1e6 kg in one chain),
// eliminating the heavy one into the light one loses the light one's inertia to round-off: the
// factorisation is then inaccurate (relative residuals 0.66 to 500 where ordinary scenes stay
// below 1.3e-9) or singular. CheckedSolve is the guard they share (issue 14, item 14): when the
// bodies' diagonal blocks span more than kSpread, every solve checks its residual and refines to
// kRefined; if that does not get there, or the structured factorisation failed, the matrix is
// solved densely (LU with partial pivoting; a system with redundant rows then stays with the
// refined structured solution, as dense LU cannot take it either). Dense storage (up to
// kDenseMax unknowns) is allocated at init() only when the model's bodies span more than
// kModelSpread in mass or inertia. Scenes inside kSpread step bit for bit as without it, at the
// cost of one scan of the body blocks per factorisation.
struct Model;

class NOETHER_API CheckedSolve {
public:
    static constexpr double kSpread = 1e6, kRefined = 1e-12, kModelSpread = 1e3;
    static constexpr int kRefinements = 2, kDenseMax = 600;

    // `scale_spread`: the spread of the bodies' scales in the Model (model_scale_spread()).
    void init(const BlockGraph& g, double scale_spread);
    // At each factorisation of A, after the structured one (`structured_ok`: it succeeded).
    // False when the structured factorisation failed and no dense one can stand in.
    bool factor(const BlockGraph& g, const BlockMatrix& A, bool structured_ok);
    bool checked() const { return checked_; }
    // Do the bodies' diagonal blocks of A span more than kSpread in scale (max |entry| per block)?
    static bool scales_apart(const BlockGraph& g, const BlockMatrix& A);
    // x ← A⁻¹ x, by `structured(double* v)` (v ← A⁻¹ v with the structured factors) while it is
    // accurate, else densely.
    template <class F>
    void solve(const BlockGraph& g, double* x, F&& structured) {
        if (!structured_ok_) return dense_solve(x);
        if (!checked_) return structured(x);
        const int n = g.total_size;
        for (int i = 0; i < n; ++i) b_[i] = x[i];
        structured(x);
        for (int it = 0;; ++it) {
            if (residual_within(g, x)) return;
            if (it == kRefinements) break;
            structured(r_.data());
            for (int i = 0; i < n; ++i) x[i] += r_[i];
        }
        if (!dense_ready_ && !dense_factor(g)) return;  // no fallback: the refined solution stands
        for (int i = 0; i < n; ++i) x[i] = b_[i];
        dense_solve(x);
    }

private:
    bool residual_within(const BlockGraph& g, const double* x);  // r ← b − A x; ‖r‖∞ ≤ kRefined‖b‖∞
    bool dense_factor(const BlockGraph& g);
    void dense_solve(double* x);

    const BlockMatrix* A_ = nullptr;
    bool structured_ok_ = true, checked_ = false, dense_ready_ = false;
    std::vector<double> b_, r_, M_;
    std::vector<int> piv_;
};

// max/min over bodies of max(mass, largest inertia entry): for CheckedSolve::init.
NOETHER_API double model_scale_spread(const Model& m);

// For a tree node n with parent p: the blocks F_pn (m_p × m_n) and F_np (m_n × m_p) of A.
NOETHER_API void tree_edge_blocks(const BlockGraph& g, const BlockMatrix& A, int n, int p, const double** Fpn, const double** Fnp);

}  // namespace noether
