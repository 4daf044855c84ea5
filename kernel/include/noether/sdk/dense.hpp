// noether/sdk/dense.hpp — small dense linear algebra on row-major arrays, allocation-free.
//
// For solver and integrator plugins working on the blocks of a BlockMatrix (6×6 body blocks,
// joint blocks of up to 12 rows). Header-only; no Eigen.
#pragma once

#include "noether/export.h"

#include <cmath>
#include <algorithm>
#include <utility>
#include <vector>

#include "noether/limits.hpp"

namespace noether {
namespace dense {

// In-place LU with partial pivoting of the n×n matrix A (row-major): PA = LU, unit lower L.
// piv[i] = row swapped into row i at step i. Returns false on a pivot not above min_pivot (in
// magnitude; by default on a zero pivot) or not finite.
inline bool lu_factor(int n, double* A, int* piv, double min_pivot = 0) {
    for (int k = 0; k < n; ++k) {
        int p = k;
        double best = std::fabs(A[k * n + k]);
        for (int i = k + 1; i < n; ++i) {
            const double v = std::fabs(A[i * n + k]);
            if (v > best) best = v, p = i;
        }
        piv[k] = p;
        if (!(best > min_pivot) || !std::isfinite(best)) return false;
        if (p != k)
            for (int j = 0; j < n; ++j) std::swap(A[k * n + j], A[p * n + j]);
        const double inv = 1.0 / A[k * n + k];
        for (int i = k + 1; i < n; ++i) {
            const double l = A[i * n + k] * inv;
            A[i * n + k] = l;
            if (l == 0) continue;
            for (int j = k + 1; j < n; ++j) A[i * n + j] -= l * A[k * n + j];
        }
    }
    return true;
}

// b ← A⁻¹ b using the factors of lu_factor.
inline void lu_solve(int n, const double* LU, const int* piv, double* b) {
    for (int k = 0; k < n; ++k)
        if (piv[k] != k) std::swap(b[k], b[piv[k]]);
    for (int i = 1; i < n; ++i) {
        double s = b[i];
        for (int j = 0; j < i; ++j) s -= LU[i * n + j] * b[j];
        b[i] = s;
    }
    for (int i = n - 1; i >= 0; --i) {
        double s = b[i];
        for (int j = i + 1; j < n; ++j) s -= LU[i * n + j] * b[j];
        b[i] = s / LU[i * n + i];
    }
}

// b ← A⁻ᵀ b using the factors of lu_factor (Aᵀ = Uᵀ Lᵀ P).
inline void lu_solve_transposed(int n, const double* LU, const int* piv, double* b) {
    for (int i = 0; i < n; ++i) {  // Uᵀ z = b
        double s = b[i];
        for (int j = 0; j < i; ++j) s -= LU[j * n + i] * b[j];
        b[i] = s / LU[i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) {  // Lᵀ w = z
        double s = b[i];
        for (int j = i + 1; j < n; ++j) s -= LU[j * n + i] * b[j];
        b[i] = s;
    }
    for (int k = n - 1; k >= 0; --k)  // b = Pᵀ w
        if (piv[k] != k) std::swap(b[k], b[piv[k]]);
}

// X ← A⁻¹ X for an n×m right-hand side X (row-major, column by column); n ≤ kMaxNodeSize.
inline void lu_solve_matrix(int n, int m, const double* LU, const int* piv, double* X) {
    double col[kMaxNodeSize];
    for (int c = 0; c < m; ++c) {
        for (int i = 0; i < n; ++i) col[i] = X[i * m + c];
        lu_solve(n, LU, piv, col);
        for (int i = 0; i < n; ++i) X[i * m + c] = col[i];
    }
}

// Y ← Y A⁻¹ for an m×n matrix Y (row-major): each row y solves Aᵀ yᵀ = yᵀ.
inline void lu_solve_right(int n, int m, const double* LU, const int* piv, double* Y) {
    for (int r = 0; r < m; ++r) lu_solve_transposed(n, LU, piv, Y + r * n);
}

// The largest magnitude among the n entries of a.
inline double max_abs(int n, const double* a) {
    double big = 0;
    for (int k = 0; k < n; ++k) big = std::max(big, std::fabs(a[k]));
    return big;
}

// x = A⁻¹ b for the k×k matrix A (row-major; A and b are destroyed) by Gaussian elimination
// with complete pivoting. A pivot not above rel·max|A| (or 1e-300) ends the elimination and the
// remaining unknowns are 0: for redundant rows this is a basic solution. Returns the rank.
// Workspaces rp, cp (row and column permutations) and y hold k entries each.
inline int solve_rank_revealing(int k, double* A, double* b, double* x, int* rp, int* cp, double* y, double rel) {
    const double big = max_abs(k * k, A);
    for (int i = 0; i < k; ++i) rp[i] = i, cp[i] = i;
    int rank = 0;
    for (; rank < k; ++rank) {
        int pi = rank, pj = rank;
        double best = -1;
        for (int i = rank; i < k; ++i)
            for (int j = rank; j < k; ++j)
                if (std::fabs(A[i * k + j]) > best) best = std::fabs(A[i * k + j]), pi = i, pj = j;
        if (!(best > rel * big) || !(best > 1e-300)) break;
        if (pi != rank) {
            for (int j = 0; j < k; ++j) std::swap(A[rank * k + j], A[pi * k + j]);
            std::swap(b[rank], b[pi]);
            std::swap(rp[rank], rp[pi]);
        }
        if (pj != rank) {
            for (int i = 0; i < k; ++i) std::swap(A[i * k + rank], A[i * k + pj]);
            std::swap(cp[rank], cp[pj]);
        }
        for (int i = rank + 1; i < k; ++i) {
            const double f = A[i * k + rank] /= A[rank * k + rank];
            for (int j = rank + 1; j < k; ++j) A[i * k + j] -= f * A[rank * k + j];
            b[i] -= f * b[rank];
        }
    }
    for (int i = rank - 1; i >= 0; --i) {
        double v = b[i];
        for (int j = i + 1; j < rank; ++j) v -= A[i * k + j] * y[j];
        y[i] = v / A[i * k + i];
    }
    for (int i = 0; i < k; ++i) x[cp[i]] = i < rank ? y[i] : 0.0;
    return rank;
}

// C (r×c) −= A (r×k) · B (k×c), all row-major.
inline void gemm_sub(int r, int k, int c, const double* A, const double* B, double* C) {
    for (int i = 0; i < r; ++i)
        for (int t = 0; t < k; ++t) {
            const double a = A[i * k + t];
            if (a == 0) continue;
            const double* Bt = B + t * c;
            double* Ci = C + i * c;
            for (int j = 0; j < c; ++j) Ci[j] -= a * Bt[j];
        }
}

// y (r) −= A (r×c) · x (c).
inline void gemv_sub(int r, int c, const double* A, const double* x, double* y) {
    for (int i = 0; i < r; ++i) {
        double s = 0;
        for (int j = 0; j < c; ++j) s += A[i * c + j] * x[j];
        y[i] -= s;
    }
}

// Rank-revealing solve of a square m×m system by Householder QR with column pivoting:
// A P = Q R. Columns P(r…m−1) with |R_kk| ≤ tol·|R_00| are dependent; solve() then returns the
// minimum-norm solution of the (consistent part of the) system.
//
// Dependent is decided per right-hand side between two ranks: columns at round-off
// (|R_kk| ≤ kZero·m·|R_00|) are always dropped; weak columns (up to tol·|R_00|) are dropped only
// while the right-hand side asks for nothing along them: |(Qᵀb)_k| ≤ max(kConsistent·‖b‖,
// negligible), `negligible` an absolute size the caller gives (a Newton solve: well below its
// tolerance, as rows that repeat others leave round-off there, ~1e-14 relative). A mechanism
// near a singular pose (a four-bar folding flat) does ask: dropping that direction leaves its
// equation unsolved and Newton stalls above its tolerance (issue 14, item 13).
// All storage is caller-owned and sized once (`reserve(m)`): no allocation in factor() or solve().
class NOETHER_API RankRevealingQR {
public:
    void reserve(int m) {
        m_ = m;
        a_.assign(static_cast<std::size_t>(m) * m, 0.0);
        tau_.assign(m, 0.0);
        perm_.assign(m, 0);
        norms_.assign(m, 0.0);
        for (Null* z : {&soft_, &hard_}) {
            z->w.assign(static_cast<std::size_t>(m) * m, 0.0);
            z->g.assign(static_cast<std::size_t>(m) * m, 0.0);
            z->piv.assign(m, 0);
        }
        t1_.assign(m, 0.0);
        t2_.assign(m, 0.0);
    }
    // Factor A (m×m row-major, copied). Returns the numerical rank.
    int factor(const double* A, double tol = 1e-9) {
        const int m = m_;
        std::copy(A, A + static_cast<std::size_t>(m) * m, a_.begin());
        for (int j = 0; j < m; ++j) perm_[j] = j;
        for (int k = 0; k < m; ++k) {
            // Pivot: the remaining column of largest norm (exact norms: m is small).
            int p = k;
            double best = -1;
            for (int j = k; j < m; ++j) {
                double s = 0;
                for (int i = k; i < m; ++i) s += a_[i * m + j] * a_[i * m + j];
                if (s > best) best = s, p = j;
            }
            if (p != k) {
                for (int i = 0; i < m; ++i) std::swap(a_[i * m + k], a_[i * m + p]);
                std::swap(perm_[k], perm_[p]);
            }
            // Householder reflector for a(k…m−1, k).
            const double normx = std::sqrt(best > 0 ? best : 0.0);
            const double x0 = a_[k * m + k];
            if (normx == 0) {
                tau_[k] = 0;
                continue;
            }
            const double alpha = x0 > 0 ? -normx : normx;
            const double v0 = x0 - alpha;
            for (int i = k + 1; i < m; ++i) a_[i * m + k] /= v0;  // v = [1; x/v0]
            tau_[k] = (alpha - x0) / alpha;
            a_[k * m + k] = alpha;
            // Apply H = I − τ v vᵀ to the remaining columns.
            for (int j = k + 1; j < m; ++j) {
                double s = a_[k * m + j];
                for (int i = k + 1; i < m; ++i) s += a_[i * m + k] * a_[i * m + j];
                s *= tau_[k];
                a_[k * m + j] -= s;
                for (int i = k + 1; i < m; ++i) a_[i * m + j] -= s * a_[i * m + k];
            }
        }
        const double r00 = m ? std::fabs(a_[0]) : 0.0;
        rank_ = 0;
        while (rank_ < m && std::fabs(a_[rank_ * m + rank_]) > tol * r00) ++rank_;
        hard_rank_ = rank_;
        const double zero = kZero * m * r00;
        while (hard_rank_ < m && std::fabs(a_[hard_rank_ * m + hard_rank_]) > zero) ++hard_rank_;
        null_space(rank_, soft_);
        if (hard_rank_ > rank_) null_space(hard_rank_, hard_);
        return rank_;
    }
    int rank() const { return rank_; }
    // Index (in the original ordering) of the i-th dependent column, i < m − rank.
    int dependent(int i) const { return perm_[rank_ + i]; }
    // b ← minimum-norm x with A x ≈ b (`negligible`: see above).
    void solve(double* b, double negligible = 0) {
        const int m = m_;
        for (int k = 0; k < m; ++k) {  // c = Qᵀ b
            if (tau_[k] == 0) continue;
            double s = b[k];
            for (int i = k + 1; i < m; ++i) s += a_[i * m + k] * b[i];
            s *= tau_[k];
            b[k] -= s;
            for (int i = k + 1; i < m; ++i) b[i] -= s * a_[i * m + k];
        }
        int r = rank_;
        const Null* z = &soft_;
        if (hard_rank_ > rank_) {  // weak columns: kept if b asks for something along them
            double bb = 0;
            for (int k = 0; k < m; ++k) bb += b[k] * b[k];
            const double limit = std::max(kConsistent * std::sqrt(bb), negligible);
            for (int k = rank_; k < hard_rank_; ++k)
                if (std::fabs(b[k]) > limit) r = hard_rank_, z = &hard_;
        }
        const int kk = m - r;
        double* y = t1_.data();
        for (int i = r - 1; i >= 0; --i) {  // y = R11⁻¹ c1
            double s = b[i];
            for (int j = i + 1; j < r; ++j) s -= a_[i * m + j] * y[j];
            y[i] = s / a_[i * m + i];
        }
        double* t = t2_.data();
        for (int i = 0; i < kk; ++i) {  // t = (WᵀW + I)⁻¹ (−Wᵀ y)
            double s = 0;
            for (int j = 0; j < r; ++j) s -= z->w[j * kk + i] * y[j];
            t[i] = s;
        }
        if (kk > 0) lu_solve(kk, z->g.data(), z->piv.data(), t);
        for (int i = 0; i < r; ++i) {  // x = P [y + W t; −t]
            double s = y[i];
            for (int c = 0; c < kk; ++c) s += z->w[i * kk + c] * t[c];
            b[perm_[i]] = s;
        }
        for (int c = 0; c < kk; ++c) b[perm_[r + c]] = -t[c];
    }

    // Relative size of a pivot at round-off (per row), and of a right-hand side component that
    // asks for nothing (√ε: rows that repeat others to within δ leave components of order δ·‖b‖).
    static constexpr double kZero = 8 * 2.220446049250313e-16, kConsistent = 1.5e-8;

private:
    // Null-space data for the minimum-norm correction at rank r: W = R11⁻¹ R12 (r×k),
    // G = WᵀW + I (k×k, LU-factored), k = m − r.
    struct Null {
        std::vector<double> w, g;
        std::vector<int> piv;
    };
    void null_space(int r, Null& z) {
        const int m = m_, kk = m - r;
        if (kk == 0) return;
        for (int c = 0; c < kk; ++c) {
            for (int i = r - 1; i >= 0; --i) {
                double s = a_[i * m + r + c];
                for (int j = i + 1; j < r; ++j) s -= a_[i * m + j] * z.w[j * kk + c];
                z.w[i * kk + c] = s / a_[i * m + i];
            }
        }
        for (int i = 0; i < kk; ++i)
            for (int j = 0; j < kk; ++j) {
                double s = i == j ? 1.0 : 0.0;
                for (int t = 0; t < r; ++t) s += z.w[t * kk + i] * z.w[t * kk + j];
                z.g[i * kk + j] = s;
            }
        lu_factor(kk, z.g.data(), z.piv.data());
    }

    int m_ = 0, rank_ = 0, hard_rank_ = 0;
    std::vector<double> a_, tau_, norms_, t1_, t2_;
    std::vector<int> perm_;
    Null soft_, hard_;
};

}  // namespace dense
}  // namespace noether
