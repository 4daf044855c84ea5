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
#include "noether/tree_ldu.hpp"

#include <algorithm>

namespace noether {

using namespace dense;

void tree_edge_blocks(const BlockGraph& g, const BlockMatrix& A, int n, int p, const double** Fpn,
                      const double** Fnp) {
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
    L_.assign(e, 0.0);
    U_.assign(e, 0.0);
    piv_.assign(p, 0);
}

bool TreeLDU::factor(const BlockGraph& g, const BlockMatrix& A, int* failed_node) {
    for (int n : g.order) {
        const int m = g.node_size[n];
        std::copy(A.diag(n), A.diag(n) + m * m, D_.begin() + doff_[n]);
    }
    for (int n : g.order) {
        const int mn = g.node_size[n];
        double* Dn = &D_[doff_[n]];
        int* pv = &piv_[poff_[n]];
        if (!lu_factor(mn, Dn, pv)) {
            if (failed_node) *failed_node = n;
            return false;
        }
        const int p = g.parent[n];
        if (p < 0) continue;
        const int mp = g.node_size[p];
        const double *Fpn, *Fnp;
        tree_edge_blocks(g, A, n, p, &Fpn, &Fnp);
        double* L = &L_[eoff_[n]];  // m_p × m_n
        double* U = &U_[eoff_[n]];  // m_n × m_p
        std::copy(Fpn, Fpn + mp * mn, L);
        std::copy(Fnp, Fnp + mn * mp, U);
        lu_solve_right(mn, mp, Dn, pv, L);     // L_pn = F_pn D_n⁻¹
        lu_solve_matrix(mn, mp, Dn, pv, U);    // U_np = D_n⁻¹ F_np
        gemm_sub(mp, mn, mp, L, Fnp, &D_[doff_[p]]);  // D_p −= L_pn F_np
    }
    return true;
}

void TreeLDU::solve(const BlockGraph& g, double* x) const {
    for (int n : g.order) {  // forward: y_p −= L_pn y_n
        const int p = g.parent[n];
        if (p >= 0) gemv_sub(g.node_size[p], g.node_size[n], &L_[eoff_[n]], x + g.node_offset[n], x + g.node_offset[p]);
    }
    for (auto it = g.order.rbegin(); it != g.order.rend(); ++it) {  // backward
        const int n = *it;
        double* xn = x + g.node_offset[n];
        lu_solve(g.node_size[n], &D_[doff_[n]], &piv_[poff_[n]], xn);
        const int p = g.parent[n];
        if (p >= 0) gemv_sub(g.node_size[n], g.node_size[p], &U_[eoff_[n]], x + g.node_offset[p], xn);
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
    for (int c = 0; c < m_; ++c) tree.solve(g, &Z_[static_cast<std::size_t>(c) * n]);
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

void LoopClosure::solve(const BlockGraph& g, const BlockMatrix& A, const TreeLDU& tree, double* x) {
    const int n = g.total_size;
    tree.solve(g, x);  // y1 = T⁻¹ f_T (loop entries still hold f_Λ)
    for (int j : g.loop_joints) {  // rhs = f_Λ − R y1
        const int mj = g.node_size[g.nbodies + j], r0 = joint_row0_[j];
        const double* fj = x + g.node_offset[g.nbodies + j];
        for (int r = 0; r < mj; ++r) rhs_[r0 + r] = fj[r];
        const int ends[2] = {g.joint_a[j], g.joint_b[j]};
        for (int s = 0; s < 2; ++s)
            if (ends[s] >= 0) gemv_sub(mj, 6, A.jb(j, s), x + g.node_offset[ends[s]], &rhs_[r0]);
    }
    qr_.solve(rhs_.data());  // Δs_Λ
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
