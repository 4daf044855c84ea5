// Block graph and DFS elimination ordering (maximal-vi.md §8.1–8.2).
//
// Why this ordering: a joint node has a zero diagonal block. It becomes invertible only after
// its child body is eliminated (H D⁻¹ Gᵀ). So every tree joint must have exactly one child
// body below it, and a joint that would be a leaf — a second path to the world, or a joint
// whose other body was already reached — is taken out of the tree as a loop closure.
// The search is the recursive DFS of §8.2 run with an explicit stack, so chains of any length
// are fine, and it visits joints in increasing id order, so the result is deterministic.
#include "noether/graph.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace noether {

namespace {

struct Frame {
    int body;     // body being expanded
    int next;     // next incidence index to look at
    int via;      // joint through which we reached it (−1 for a root)
};

}  // namespace

BlockGraph build_block_graph(int nb, const std::vector<int>& ja, const std::vector<int>& jbv,
                             const std::vector<int>& rows) {
    const int nj = static_cast<int>(ja.size());
    if (static_cast<int>(jbv.size()) != nj || static_cast<int>(rows.size()) != nj)
        throw std::invalid_argument("build_block_graph: joint arrays differ in length");
    BlockGraph g;
    g.nbodies = nb;
    g.njoints = nj;
    g.joint_a = ja;
    g.joint_b = jbv;
    const int nn = nb + nj;

    // Sizes and offsets in node-id order.
    g.node_size.resize(nn);
    g.node_offset.resize(nn);
    int off = 0;
    for (int n = 0; n < nn; ++n) {
        g.node_size[n] = n < nb ? 6 : rows[n - nb];
        g.node_offset[n] = off;
        off += g.node_size[n];
    }
    g.total_size = off;

    // Incidence lists, joints in increasing id order.
    g.body_joints_start.assign(nb + 1, 0);
    for (int j = 0; j < nj; ++j) {
        if (jbv[j] < 0 || jbv[j] >= nb) throw std::invalid_argument("build_block_graph: joint child must be a body");
        if (ja[j] >= nb) throw std::invalid_argument("build_block_graph: joint parent out of range");
        if (ja[j] >= 0) ++g.body_joints_start[ja[j] + 1];
        if (jbv[j] != ja[j]) ++g.body_joints_start[jbv[j] + 1];
    }
    for (int b = 0; b < nb; ++b) g.body_joints_start[b + 1] += g.body_joints_start[b];
    g.body_joints.resize(g.body_joints_start[nb]);
    {
        std::vector<int> fill(g.body_joints_start.begin(), g.body_joints_start.end() - 1);
        for (int j = 0; j < nj; ++j) {
            if (ja[j] >= 0) g.body_joints[fill[ja[j]]++] = j;
            if (jbv[j] != ja[j]) g.body_joints[fill[jbv[j]]++] = j;
        }
    }

    g.parent.assign(nn, -1);
    g.is_loop.assign(nj, 0);
    g.component.assign(nb, -1);
    std::vector<char> visited(nb, 0), assigned(nj, 0);
    g.order.reserve(nn);

    auto other_end = [&](int j, int b) { return ja[j] == b ? jbv[j] : ja[j]; };

    // Explicit-stack DFS from body `root`; appends the post-order of its subtree (excluding
    // the root itself, which the caller appends with its world joint if any).
    std::vector<Frame> stack;
    auto dfs = [&](int root, int comp) {
        stack.clear();
        stack.push_back({root, g.body_joints_start[root], -1});
        g.component[root] = comp;
        while (!stack.empty()) {
            Frame& f = stack.back();
            if (f.next == g.body_joints_start[f.body + 1]) {
                const Frame done = f;
                stack.pop_back();
                if (done.via >= 0) {
                    g.order.push_back(done.body);
                    g.order.push_back(nb + done.via);
                }
                continue;
            }
            const int j = g.body_joints[f.next++];
            if (assigned[j]) continue;
            assigned[j] = 1;
            const int o = other_end(j, f.body);
            if (o < 0 || o == f.body || visited[o]) {
                g.is_loop[j] = 1;
                g.loop_joints.push_back(j);
                continue;
            }
            visited[o] = 1;
            g.component[o] = comp;
            g.parent[o] = nb + j;
            g.parent[nb + j] = f.body;
            stack.push_back({o, g.body_joints_start[o], j});
        }
    };

    // Trees rooted at world joints, in joint id order.
    for (int j0 = 0; j0 < nj; ++j0) {
        if (ja[j0] >= 0 || assigned[j0]) continue;
        assigned[j0] = 1;
        const int b = jbv[j0];
        if (visited[b]) {  // second path to the world
            g.is_loop[j0] = 1;
            g.loop_joints.push_back(j0);
            continue;
        }
        visited[b] = 1;
        g.parent[b] = nb + j0;
        const int comp = static_cast<int>(g.roots.size());
        g.roots.push_back(nb + j0);
        g.floating.push_back(0);
        dfs(b, comp);
        g.order.push_back(b);
        g.order.push_back(nb + j0);
    }
    // Floating components, rooted at their lowest-id body.
    for (int b = 0; b < nb; ++b) {
        if (visited[b]) continue;
        visited[b] = 1;
        const int comp = static_cast<int>(g.roots.size());
        g.roots.push_back(b);
        g.floating.push_back(1);
        dfs(b, comp);
        g.order.push_back(b);
    }
    // A joint from a body to itself is never reached by the DFS as a tree edge; any joint left
    // unassigned here (only possible for such self-joints) is a loop closure too.
    for (int j = 0; j < nj; ++j)
        if (!assigned[j]) {
            assigned[j] = 1;
            g.is_loop[j] = 1;
            g.loop_joints.push_back(j);
        }

    g.order_pos.assign(nn, -1);
    for (int i = 0; i < static_cast<int>(g.order.size()); ++i) g.order_pos[g.order[i]] = i;

    // Children lists (CSR) from parent pointers, in elimination order for determinism.
    g.children_start.assign(nn + 1, 0);
    for (int n : g.order)
        if (g.parent[n] >= 0) ++g.children_start[g.parent[n] + 1];
    for (int n = 0; n < nn; ++n) g.children_start[n + 1] += g.children_start[n];
    g.children.resize(g.children_start[nn]);
    {
        std::vector<int> fill(g.children_start.begin(), g.children_start.end() - 1);
        for (int n : g.order)
            if (g.parent[n] >= 0) g.children[fill[g.parent[n]]++] = n;
    }

    // Loop node size and fill pattern.
    g.on_loop_path.assign(nn, 0);
    std::vector<char> touched(nb, 0);
    for (int j : g.loop_joints) {
        g.loop_rows += rows[j];
        for (int b : {ja[j], jbv[j]})
            if (b >= 0 && !touched[b]) {
                touched[b] = 1;
                g.loop_bodies.push_back(b);
            }
    }
    std::sort(g.loop_bodies.begin(), g.loop_bodies.end());
    for (int b : g.loop_bodies)
        for (int n = b; n >= 0 && !g.on_loop_path[n]; n = g.parent[n]) g.on_loop_path[n] = 1;
    return g;
}

BlockMatrix::BlockMatrix(const BlockGraph& g) {
    const int nn = g.nnodes();
    diag_off_.resize(nn);
    off_.assign(2 * static_cast<std::size_t>(g.njoints), npos);
    rows_.resize(g.njoints);
    std::size_t off = 0;
    for (int n = 0; n < nn; ++n) {
        diag_off_[n] = off;
        off += static_cast<std::size_t>(g.node_size[n]) * g.node_size[n];
    }
    for (int j = 0; j < g.njoints; ++j) {
        rows_[j] = g.node_size[g.nbodies + j];
        const int ends[2] = {g.joint_a[j], g.joint_b[j]};
        for (int s = 0; s < 2; ++s) {
            if (ends[s] < 0) continue;
            off_[2 * j + s] = off;
            off += 2 * 6 * static_cast<std::size_t>(rows_[j]);
        }
    }
    data_.assign(off, 0.0);
}

void BlockMatrix::set_zero() { std::fill(data_.begin(), data_.end(), 0.0); }

void BlockMatrix::to_dense(const BlockGraph& g, double* out) const {
    const int n = g.total_size;
    std::fill(out, out + static_cast<std::size_t>(n) * n, 0.0);
    auto put = [&](int r0, int c0, int nr, int nc, const double* blk) {
        for (int i = 0; i < nr; ++i)
            for (int k = 0; k < nc; ++k) out[static_cast<std::size_t>(r0 + i) * n + c0 + k] += blk[i * nc + k];
    };
    for (int node = 0; node < g.nnodes(); ++node)
        put(g.node_offset[node], g.node_offset[node], g.node_size[node], g.node_size[node], diag(node));
    for (int j = 0; j < g.njoints; ++j) {
        const int jn = g.nbodies + j, m = g.node_size[jn];
        const int ends[2] = {g.joint_a[j], g.joint_b[j]};
        for (int s = 0; s < 2; ++s) {
            if (ends[s] < 0) continue;
            put(g.node_offset[ends[s]], g.node_offset[jn], 6, m, bj(j, s));
            put(g.node_offset[jn], g.node_offset[ends[s]], m, 6, jb(j, s));
        }
    }
}

}  // namespace noether
