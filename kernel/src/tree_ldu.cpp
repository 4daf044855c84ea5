// Tree LDU (maximal-vi.md §8.3) and the loop-closure node (§8.4, variant B).
//
// Design note. The Newton matrix of a tree-structured mechanism has the sparsity of its block
// graph. Eliminating nodes leaves-to-root (the DFS post-order) never creates fill: eliminating
// node n only changes its parent's diagonal block. A joint node's diagonal is zero, so it must
// be eliminated after its child body — the ordering guarantees that. Loop-closure joints would
// break this; instead of a bordered factorisation (variant A, whose border fills every node on
// the paths from loop bodies to their roots), we factor the tree alone and take the Schur
// complement of the loop rows: m_Λ extra tree solves per factorisation, then one small dense
// factorisation. It is cheaper when m_Λ is small compared to n, which is the common case.
#include "noether/sdk/tree_ldu.hpp"
#include "noether/limits.hpp"
#include "noether/model.hpp"

#include <algorithm>
#include <cmath>

namespace noether {

using namespace dense;

namespace {
// tree_edge_blocks() for the factorisation's and the solve's loops here (inlined: called once per
// edge per solve, ~1 % of the double pendulum's instructions under vi-maximal as a call).
inline __attribute__((always_inline)) void edge_blocks(const BlockGraph& g, const BlockMatrix& A, int n, int p,
                                                       const double** Fpn, const double** Fnp) {
    if (g.is_body(n)) {  // n = child body of joint p
        const int j = p - g.nbodies;
        const int side = g.joint_a[j] == n ? 0 : 1;
        *Fpn = A.jb(j, side);
        *Fnp = A.bj(j, side);
    } else {  // n = joint, p = its parent body
        const int j = n - g.nbodies;
        const int side = g.joint_a[j] == p ? 0 : 1;
        *Fpn = A.bj(j, side);
        *Fnp = A.jb(j, side);
    }
}
}  // namespace

void tree_edge_blocks(const BlockGraph& g, const BlockMatrix& A, int n, int p, const double** Fpn,
                      const double** Fnp) {
    edge_blocks(g, A, n, p, Fpn, Fnp);
}

namespace {

// Gauss–Jordan inverse with partial pivoting of an n×n block: Ainv = A⁻¹ (A is only read).
//
// Only the entries that still carry information are updated: at pivot k, the left columns after k
// (columns up to k are never read again), and of the right half [I] only the columns of the rows
// already taken as pivots — every other right column is still a unit column with its one in a row
// not yet pivoted, whose update would subtract l·0. The right half is kept in pivot order (column
// c: the row taken at pivot c; a column's arithmetic does not depend on where it is stored) and put
// back in row order at the end. The values are those of the full 2n-column elimination, bit for
// bit: a skipped update x − l·0 returns x (l ≠ 0 and finite here), and the columns dropped on the
// left are never read again.
template <int N>
bool invert_fixed(const double* A, double* Ainv) {
    double a[N][N], r[N][N];
    int row[N];  // row[i]: the row of A now at position i
    for (int i = 0; i < N; ++i) {
        row[i] = i;
        for (int j = 0; j < N; ++j) a[i][j] = A[i * N + j], r[i][j] = 0.0;
    }
#pragma GCC unroll 6
    for (int k = 0; k < N; ++k) {
        int p = k;
        double best = std::fabs(a[k][k]);
        for (int i = k + 1; i < N; ++i)
            if (std::fabs(a[i][k]) > best) best = std::fabs(a[i][k]), p = i;
        if (!(best > 0) || !std::isfinite(best)) return false;
        if (p != k) {
            for (int j = k; j < N; ++j) std::swap(a[k][j], a[p][j]);
            for (int c = 0; c < k; ++c) std::swap(r[k][c], r[p][c]);
            std::swap(row[k], row[p]);
        }
        r[k][k] = 1.0;  // the pivot row's own unit column joins the active ones
        const double inv = 1.0 / a[k][k];
        for (int j = k + 1; j < N; ++j) a[k][j] *= inv;
        for (int c = 0; c <= k; ++c) r[k][c] *= inv;
        for (int i = 0; i < N; ++i) {
            if (i == k) continue;
            const double l = a[i][k];
            if (l == 0) continue;
            for (int j = k + 1; j < N; ++j) a[i][j] -= l * a[k][j];
            for (int c = 0; c <= k; ++c) r[i][c] -= l * r[k][c];
        }
    }
    // Column c of the inverse in pivot order is column row[c] in row order; Ainv is stored transposed.
    for (int i = 0; i < N; ++i)
        for (int c = 0; c < N; ++c) Ainv[row[c] * N + i] = r[i][c];
    return true;
}

// A body's own diagonal block in vi-maximal's Newton matrix: translation rows with m/h on the
// diagonal only, rotation rows a full 3×3 DR, zeros between (a NaN is not 0).
bool body_block_shape(const double* A) {
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k)
            if (A[i * 6 + 3 + k] != 0 || A[(3 + i) * 6 + k] != 0 || (i != k && A[i * 6 + k] != 0)) return false;
    return true;
}

// The inverse of a block of that shape: the reciprocals of the diagonal and DR⁻¹. invert_fixed<6>
// computes exactly those: at pivots 0–2 the pivot's column is zero elsewhere (no row is updated,
// none swapped) and the entry becomes 1.0 / a_kk; at pivots 3–5 rows 0–2 have a zero in the pivot
// column, so only DR's own elimination happens, in the order of invert_fixed<3> on it (the pivot
// search runs over the same rows). The inverse's off-diagonal blocks are zeros (signed zeros in
// invert_fixed<6>: a sum that starts at +0 and adds them stays what it was). False where
// invert_fixed<6> would be: a zero or non-finite pivot.
bool invert_body_block(const double* A, double* Ainv) {
    for (int k = 0; k < 3; ++k) {
        const double best = std::fabs(A[k * 7]);
        if (!(best > 0) || !std::isfinite(best)) return false;
    }
    double R[9], Rinv[9];
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) R[i * 3 + k] = A[(3 + i) * 6 + 3 + k];
    if (!invert_fixed<3>(R, Rinv)) return false;
    for (int k = 0; k < 36; ++k) Ainv[k] = 0.0;
    for (int k = 0; k < 3; ++k) Ainv[k * 7] = 1.0 / A[k * 7];
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) Ainv[(3 + i) * 6 + 3 + k] = Rinv[i * 3 + k];
    return true;
}

// Ainv = A⁻¹; blocks above 6×6 are factored in `scratch` (which may be A itself).
bool invert_any(int n, const double* A, double* scratch, double* Ainv, int* piv) {
    switch (n) {
        case 1: return invert_fixed<1>(A, Ainv);
        case 2: return invert_fixed<2>(A, Ainv);
        case 3: return invert_fixed<3>(A, Ainv);
        case 4: return invert_fixed<4>(A, Ainv);
        case 5: return invert_fixed<5>(A, Ainv);
        case 6: return invert_fixed<6>(A, Ainv);
        default: break;
    }
    if (scratch != A) std::copy(A, A + n * n, scratch);
    if (!lu_factor(n, scratch, piv)) return false;
    for (int c = 0; c < n; ++c) {
        double col[kMaxNodeSize] = {};
        col[c] = 1;
        lu_solve(n, scratch, piv, col);
        for (int i = 0; i < n; ++i) Ainv[c * n + i] = col[i];
    }
    return true;
}

// Elimination of node n (size N, inverse block Dinv) into its parent p (size P), the parent's block
// read from Dp_in (A's block for the first child eliminated into it, else Dp) and written to Dp:
// U = Dinv F_np (N×P), D_p −= F_pn U. (L_pn = F_pn Dinv is never formed: the forward solve
// applies F_pn to z_n = Dinv y_n, which the backward solve reuses.)
template <int N, int P>
void eliminate_fixed(const double* Dinv, const double* Fpn, const double* Fnp, double* U, const double* Dp_in,
                     double* Dp) {
    // Row by row with the row's P sums in one array, the terms of each sum added in k order: the
    // same round-off as one dot product per entry, but the compiler keeps the row in registers and
    // vectorises across it (a dot product per entry stays scalar, and was 4 instructions a term).
    for (int i = 0; i < N; ++i) {
        double s[P] = {};
        for (int k = 0; k < N; ++k) {
            const double a = Dinv[k * N + i];
            if (a == 0) continue;  // a leaf body's inverse: half its entries (invert_body_block)
            for (int j = 0; j < P; ++j) s[j] += a * Fnp[k * P + j];
        }
        for (int j = 0; j < P; ++j) U[i * P + j] = s[j];
    }
    for (int i = 0; i < P; ++i) {
        double s[P] = {};
        for (int k = 0; k < N; ++k) {
            const double a = Fpn[i * N + k];
            if (a == 0) continue;  // the joint Jacobians' zero blocks (translation of rotation rows, …)
            for (int j = 0; j < P; ++j) s[j] += a * U[k * P + j];
        }
        for (int j = 0; j < P; ++j) Dp[i * P + j] = Dp_in[i * P + j] - s[j];
    }
}

void eliminate_any(int N, int P, const double* Dinv, const double* Fpn, const double* Fnp, double* U,
                   const double* Dp_in, double* Dp) {
#define NOETHER_ELIM(a, b) \
    if (N == a && P == b) return eliminate_fixed<a, b>(Dinv, Fpn, Fnp, U, Dp_in, Dp);
    // Every tree edge joins a body (6) and a joint (1…6 rows in the shipped joint types).
    NOETHER_ELIM(6, 1) NOETHER_ELIM(6, 2) NOETHER_ELIM(6, 3) NOETHER_ELIM(6, 4) NOETHER_ELIM(6, 5) NOETHER_ELIM(6, 6)
    NOETHER_ELIM(1, 6) NOETHER_ELIM(2, 6) NOETHER_ELIM(3, 6) NOETHER_ELIM(4, 6) NOETHER_ELIM(5, 6)
#undef NOETHER_ELIM
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < P; ++j) {
            double s = 0;
            for (int k = 0; k < N; ++k) s += Dinv[k * N + i] * Fnp[k * P + j];
            U[i * P + j] = s;
        }
    if (Dp_in != Dp) std::copy(Dp_in, Dp_in + P * P, Dp);
    gemm_sub(P, N, P, Fpn, U, Dp);
}

// y = A x (r×c), y −= A x
template <int R, int C>
inline void matvec_sub_fixed(const double* A, const double* x, double* y) {
    double s[R] = {};
    for (int j = 0; j < C; ++j) {
        const double xj = x[j];
        for (int i = 0; i < R; ++i) s[i] += A[i * C + j] * xj;
    }
    for (int i = 0; i < R; ++i) y[i] -= s[i];
}

inline void matvec_sub(int r, int c, const double* A, const double* x, double* y) {
    if (r == 6 && c == 5) return matvec_sub_fixed<6, 5>(A, x, y);
    if (r == 5 && c == 6) return matvec_sub_fixed<5, 6>(A, x, y);
    if (r == 6 && c == 3) return matvec_sub_fixed<6, 3>(A, x, y);
    if (r == 3 && c == 6) return matvec_sub_fixed<3, 6>(A, x, y);
    if (r == 6 && c == 6) return matvec_sub_fixed<6, 6>(A, x, y);
    gemv_sub(r, c, A, x, y);
}

// y = A x for a block stored transposed (At = Aᵀ), column by column: y gathers the terms of each
// entry in column order, as a dot product per row would, but vectorised across the rows. x is read
// before y is written, so y may be x. Called with a constant n for the shipped sizes, where the
// loops unroll.
inline __attribute__((always_inline)) void matvec_t_n(int n, const double* At, const double* x, double* y) {
    double s[kMaxNodeSize] = {};
    for (int k = 0; k < n; ++k)
        for (int i = 0; i < n; ++i) s[i] += At[k * n + i] * x[k];
    for (int i = 0; i < n; ++i) y[i] = s[i];
}

inline void matvec_t(int n, const double* At, const double* x, double* y) {
    switch (n) {
        case 5: return matvec_t_n(5, At, x, y);
        case 6: return matvec_t_n(6, At, x, y);
        default: return matvec_t_n(n, At, x, y);
    }
}

}  // namespace

void TreeLDU::init(const BlockGraph& g) {
    const int nn = g.nnodes();
    doff_.assign(nn, 0);
    eoff_.assign(nn, 0);
    poff_.assign(nn, 0);
    std::size_t d = 0, e = 0;
    int p = 0;
    for (int n = 0; n < nn; ++n) {
        const int m = g.node_size[n];
        doff_[n] = d;
        poff_[n] = p;
        d += static_cast<std::size_t>(m) * m;
        p += m;
        eoff_[n] = e;
        if (g.parent[n] >= 0) e += static_cast<std::size_t>(m) * g.node_size[g.parent[n]];
    }
    D_.assign(d, 0.0);
    Dinv_.assign(d, 0.0);
    U_.assign(e, 0.0);
    piv_.assign(p, 0);
}

bool TreeLDU::factor(const BlockGraph& g, const BlockMatrix& A, int* failed_node) {
    // Each diagonal block is inverted once (blocks are at most 6×6 for the shipped joints);
    // the eliminations then are fixed-size matrix products. A's blocks are not copied: a node
    // without children is inverted from A's block, and the first child eliminated into a node
    // writes D_p = A_pp − F_pn U (the others subtract from D_p).
    for (int n : g.order) {
        const int mn = g.node_size[n];
        double* Dinv = &Dinv_[doff_[n]];
        const bool reduced = g.children_start[n + 1] > g.children_start[n];
        const bool leaf_body = mn == 6 && !reduced && g.is_body(n) && body_block_shape(A.diag(n));
        const bool ok = leaf_body ? invert_body_block(A.diag(n), Dinv)
                                  : invert_any(mn, reduced ? &D_[doff_[n]] : A.diag(n), &D_[doff_[n]], Dinv, &piv_[poff_[n]]);
        if (!ok) {
            if (failed_node) *failed_node = n;
            return false;
        }
        const int p = g.parent[n];
        if (p < 0) continue;
        const double *Fpn, *Fnp;
        edge_blocks(g, A, n, p, &Fpn, &Fnp);
        int first = n;  // the child of p eliminated first
        for (int c = g.children_start[p]; c < g.children_start[p + 1]; ++c)
            if (g.order_pos[g.children[c]] < g.order_pos[first]) first = g.children[c];
        double* Dp = &D_[doff_[p]];
        eliminate_any(mn, g.node_size[p], Dinv, Fpn, Fnp, &U_[eoff_[n]], first == n ? A.diag(p) : Dp, Dp);
    }
    return true;
}

void TreeLDU::solve(const BlockGraph& g, const BlockMatrix& A, double* x) const {
    // Forward: z_n = D_n⁻¹ y_n (stored in place), y_p −= F_pn z_n.
    for (int n : g.order) {
        const int mn = g.node_size[n];
        double* xn = x + g.node_offset[n];
        matvec_t(mn, &Dinv_[doff_[n]], xn, xn);
        const int p = g.parent[n];
        if (p < 0) continue;
        const double *Fpn, *Fnp;
        edge_blocks(g, A, n, p, &Fpn, &Fnp);
        matvec_sub(g.node_size[p], mn, Fpn, xn, x + g.node_offset[p]);
    }
    // Backward: x_n = z_n − U_np x_p.
    for (auto it = g.order.rbegin(); it != g.order.rend(); ++it) {
        const int n = *it, p = g.parent[n];
        if (p >= 0) matvec_sub(g.node_size[n], g.node_size[p], &U_[eoff_[n]], x + g.node_offset[p], x + g.node_offset[n]);
    }
}

void LoopClosure::init(const BlockGraph& g) {
    m_ = g.loop_rows;
    row_joint_.clear();
    joint_row0_.assign(g.njoints, -1);
    for (int j : g.loop_joints) {
        joint_row0_[j] = static_cast<int>(row_joint_.size());
        for (int r = 0; r < g.node_size[g.nbodies + j]; ++r) row_joint_.push_back(j);
    }
    Z_.assign(static_cast<std::size_t>(m_) * g.total_size, 0.0);
    S_.assign(static_cast<std::size_t>(m_) * m_, 0.0);
    rhs_.assign(m_, 0.0);
    qr_.reserve(m_);
}

int LoopClosure::factor(const BlockGraph& g, const BlockMatrix& A, const TreeLDU& tree) {
    const int n = g.total_size;
    // Z = T⁻¹ C, one column per loop row; C is nonzero only at the bodies loop joints touch.
    std::fill(Z_.begin(), Z_.end(), 0.0);
    for (int j : g.loop_joints) {
        const int mj = g.node_size[g.nbodies + j], r0 = joint_row0_[j];
        const int ends[2] = {g.joint_a[j], g.joint_b[j]};
        for (int s = 0; s < 2; ++s) {
            if (ends[s] < 0) continue;
            const double* B = A.bj(j, s);  // 6 × m_j
            for (int c = 0; c < mj; ++c)
                for (int i = 0; i < 6; ++i) Z_[static_cast<std::size_t>(r0 + c) * n + g.node_offset[ends[s]] + i] += B[i * mj + c];
        }
    }
    for (int c = 0; c < m_; ++c) tree.solve(g, A, &Z_[static_cast<std::size_t>(c) * n]);
    // S = F_ΛΛ − R Z; R is nonzero only at the touched bodies.
    std::fill(S_.begin(), S_.end(), 0.0);
    for (int j : g.loop_joints) {
        const int mj = g.node_size[g.nbodies + j], r0 = joint_row0_[j];
        const double* Djj = A.diag(g.nbodies + j);
        for (int r = 0; r < mj; ++r)
            for (int c = 0; c < mj; ++c) S_[(r0 + r) * m_ + r0 + c] = Djj[r * mj + c];
        const int ends[2] = {g.joint_a[j], g.joint_b[j]};
        for (int s = 0; s < 2; ++s) {
            if (ends[s] < 0) continue;
            const double* R = A.jb(j, s);  // m_j × 6
            const int off = g.node_offset[ends[s]];
            for (int r = 0; r < mj; ++r)
                for (int c = 0; c < m_; ++c) {
                    const double* z = &Z_[static_cast<std::size_t>(c) * n + off];
                    double acc = 0;
                    for (int i = 0; i < 6; ++i) acc += R[r * 6 + i] * z[i];
                    S_[(r0 + r) * m_ + c] -= acc;
                }
        }
    }
    return qr_.factor(S_.data());
}

void LoopClosure::solve(const BlockGraph& g, const BlockMatrix& A, const TreeLDU& tree, double* x, double negligible) {
    const int n = g.total_size;
    tree.solve(g, A, x);  // y1 = T⁻¹ f_T (loop entries still hold f_Λ)
    for (int j : g.loop_joints) {  // rhs = f_Λ − R y1
        const int mj = g.node_size[g.nbodies + j], r0 = joint_row0_[j];
        const double* fj = x + g.node_offset[g.nbodies + j];
        for (int r = 0; r < mj; ++r) rhs_[r0 + r] = fj[r];
        const int ends[2] = {g.joint_a[j], g.joint_b[j]};
        for (int s = 0; s < 2; ++s)
            if (ends[s] >= 0) gemv_sub(mj, 6, A.jb(j, s), x + g.node_offset[ends[s]], &rhs_[r0]);
    }
    qr_.solve(rhs_.data(), negligible);  // Δs_Λ
    for (int j : g.loop_joints) {
        const int mj = g.node_size[g.nbodies + j], r0 = joint_row0_[j];
        for (int r = 0; r < mj; ++r) x[g.node_offset[g.nbodies + j] + r] = rhs_[r0 + r];
    }
    // Δs_T = y1 − Z Δs_Λ. (Z = T⁻¹C reaches every node of the touched components: the back
    // substitution spreads it from the loop paths down to every subtree.)
    for (int node : g.order) {
        double* xn = x + g.node_offset[node];
        for (int c = 0; c < m_; ++c) {
            const double* z = &Z_[static_cast<std::size_t>(c) * n + g.node_offset[node]];
            for (int i = 0; i < g.node_size[node]; ++i) xn[i] -= z[i] * rhs_[c];
        }
    }
}

void LoopClosure::dependent_joints(const BlockGraph& g, std::vector<int>& out) const {
    (void)g;
    out.clear();
    for (int i = 0; i < m_ - qr_.rank(); ++i) {
        const int j = row_joint_[qr_.dependent(i)];
        if (std::find(out.begin(), out.end(), j) == out.end()) out.push_back(j);
    }
    std::sort(out.begin(), out.end());
}

}  // namespace noether

// ---------------------------------------------------------------------------------------------
// CheckedSolve

namespace noether {

double model_scale_spread(const Model& m) {
    double lo = HUGE_VAL, hi = 0;
    for (const BodyInfo& b : m.bodies) {
        double s = std::fabs(b.mass);
        for (int i = 0; i < 3; ++i)
            for (int k = 0; k < 3; ++k) s = std::max(s, std::fabs(b.inertia.m[i][k]));
        lo = std::min(lo, s), hi = std::max(hi, s);
    }
    return m.bodies.empty() ? 1.0 : (lo > 0 ? hi / lo : HUGE_VAL);
}

void CheckedSolve::init(const BlockGraph& g, double scale_spread) {
    const int n = g.total_size;
    b_.assign(n, 0.0);
    r_.assign(n, 0.0);
    if (n <= kDenseMax && !(scale_spread <= kModelSpread)) {
        M_.assign(static_cast<std::size_t>(n) * n, 0.0);
        piv_.assign(n, 0);
    }
}

namespace {
double max_abs(const double* v, int n) {
    double m = 0;
    for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
    return m;
}

// max_abs of a 6×6 block with four running maxima (the same value: a maximum does not depend on
// the order, and NaN entries are passed over either way); once per body per factorisation.
double max_abs36(const double* v) {
    double m[4] = {0, 0, 0, 0};
    for (int i = 0; i < 36; i += 4)
        for (int k = 0; k < 4; ++k) m[k] = std::max(m[k], std::fabs(v[i + k]));
    return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}
}  // namespace

bool CheckedSolve::scales_apart(const BlockGraph& g, const BlockMatrix& A) {
    double lo = HUGE_VAL, hi = 0;  // scale of each body's diagonal block
    for (int b = 0; b < g.nbodies; ++b) {
        const double sb = max_abs36(A.diag(b));
        lo = std::min(lo, sb), hi = std::max(hi, sb);
    }
    return hi > kSpread * lo;
}

bool CheckedSolve::factor(const BlockGraph& g, const BlockMatrix& A, bool structured_ok) {
    A_ = &A;
    dense_ready_ = false;
    checked_ = scales_apart(g, A);
    structured_ok_ = structured_ok;
    return structured_ok || dense_factor(g);
}

bool CheckedSolve::residual_within(const BlockGraph& g, const double* x) {
    const BlockMatrix& A = *A_;
    double* r = r_.data();
    std::copy(b_.begin(), b_.end(), r);
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
    const int n = g.total_size;
    return !(max_abs(r, n) > kRefined * max_abs(b_.data(), n));
}

bool CheckedSolve::dense_factor(const BlockGraph& g) {
    if (M_.empty()) return false;
    const int n = g.total_size;
    A_->to_dense(g, M_.data());
    dense_ready_ = dense::lu_factor(n, M_.data(), piv_.data());
    return dense_ready_;
}

void CheckedSolve::dense_solve(double* x) { dense::lu_solve(static_cast<int>(b_.size()), M_.data(), piv_.data(), x); }

}  // namespace noether
