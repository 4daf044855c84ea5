// noether/graph.hpp — the block graph of a mechanism and its elimination ordering.
//
// Nodes are bodies (6 unknowns each) and joints (one node per joint, all of its constraint
// rows); the fixed world is not a node. Node ids: bodies are 0 … nb−1, joint j is nb + j.
// The ordering follows maximal-vi.md §8.2: a depth-first search from every world joint, then
// from every body not reached (floating components), giving a post-order elimination list in
// which every node comes after its tree children and every tree joint has exactly one child
// body. Joints outside the spanning forest (a second path to the world, or a joint between
// two bodies already reached) are loop closures; the loop node of a solver stacks them.
#pragma once

#include "noether/export.h"

#include <cstddef>
#include <vector>

namespace noether {

struct NOETHER_API BlockGraph {
    int nbodies = 0;
    int njoints = 0;
    int nnodes() const { return nbodies + njoints; }
    int joint_node(int j) const { return nbodies + j; }
    bool is_body(int node) const { return node < nbodies; }

    // Endpoints of each joint: parent a (−1 = world) and child b (a body).
    std::vector<int> joint_a, joint_b;

    // Per node: block size (6 per body, rows per joint) and offset of its unknowns in the
    // global vector, which is laid out in node-id order.
    std::vector<int> node_size, node_offset;
    int total_size = 0;

    // Spanning forest. parent[node] = tree parent node, −1 for roots and loop joints.
    std::vector<int> parent;
    // Tree children of each node (CSR: children[children_start[n] … children_start[n+1]−1]).
    std::vector<int> children_start, children;
    // Elimination list: every tree node, children before parents, each root last in its tree.
    std::vector<int> order;
    // Position of each node in `order` (−1 for loop joints).
    std::vector<int> order_pos;

    // Loop-closure joints (in the order the DFS found them) and a per-joint flag.
    std::vector<int> loop_joints;
    std::vector<char> is_loop;
    int loop_rows = 0;  // Σ rows of the loop joints: the size of a solver's loop node

    // Connected components of the tree part: the component of each body and its root node (a
    // world joint, or a body for a floating component). A component is a tree of the forest.
    std::vector<int> component;
    std::vector<int> roots;
    std::vector<char> floating;  // per component: no joint to the world in its tree

    // Fill pattern of a loop node: bodies touched by loop joints, and every tree node on the
    // path from such a body to its root (where the loop border becomes nonzero, §8.4).
    std::vector<int> loop_bodies;
    std::vector<char> on_loop_path;

    // Incidence: joints at each body (CSR, joint ids in increasing order).
    std::vector<int> body_joints_start, body_joints;
};

// Build the graph of nbodies bodies and joints with endpoints (a[j], b[j]) (−1 = world; b
// must be a body) and row counts rows[j]. Deterministic; explicit stack (no recursion).
NOETHER_API BlockGraph build_block_graph(int nbodies, const std::vector<int>& joint_a, const std::vector<int>& joint_b,
                             const std::vector<int>& joint_rows);

// Dense storage of the nonzero blocks of a matrix with the graph's sparsity pattern: one
// diagonal block per node and, for every joint j and each of its body endpoints (side 0 = a,
// side 1 = b), the blocks F[body, joint] (6 × m_j) and F[joint, body] (m_j × 6). Row-major.
class NOETHER_API BlockMatrix {
public:
    BlockMatrix() = default;
    explicit BlockMatrix(const BlockGraph& g);

    double* diag(int node) { return &data_[diag_off_[node]]; }
    const double* diag(int node) const { return &data_[diag_off_[node]]; }
    // F[body, joint] for the body on `side` of joint j (nullptr if that side is the world).
    double* bj(int j, int side) { return off_[2 * j + side] == npos ? nullptr : &data_[off_[2 * j + side]]; }
    const double* bj(int j, int side) const {
        return off_[2 * j + side] == npos ? nullptr : &data_[off_[2 * j + side]];
    }
    // F[joint, body] for the body on `side` of joint j (nullptr if that side is the world).
    double* jb(int j, int side) { return off_[2 * j + side] == npos ? nullptr : &data_[off_[2 * j + side] + bj_size(j)]; }
    const double* jb(int j, int side) const {
        return off_[2 * j + side] == npos ? nullptr : &data_[off_[2 * j + side] + bj_size(j)];
    }
    void set_zero();
    // Expand into a dense n×n row-major matrix (tests and the dense solver).
    void to_dense(const BlockGraph& g, double* out) const;
    std::size_t storage_size() const { return data_.size(); }

private:
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    std::size_t bj_size(int j) const { return 6 * static_cast<std::size_t>(rows_[j]); }
    std::vector<double> data_;
    std::vector<std::size_t> diag_off_, off_;
    std::vector<int> rows_;
};

}  // namespace noether
