// The tree LDU and the loop node (kernel/src/tree_ldu.cpp) against dense LU on random matrices
// with the sparsity of a block graph: a branched tree, and the same tree closed by loops.
#include <catch2/catch.hpp>

#include <Eigen/Dense>
#include <vector>

#include "noether/sdk/tree_ldu.hpp"
#include "util.hpp"

using namespace noether;

namespace {

// A random, well-conditioned matrix with the graph's block pattern: diagonal blocks dominant
// (bodies ~ mass matrices, joints ~ −ε I as in a regularised saddle point would be singular, so
// use a dominant random block there too), random coupling blocks.
BlockMatrix random_matrix(const BlockGraph& g, testutil::Rng& rng) {
    BlockMatrix A(g);
    for (int n = 0; n < g.nnodes(); ++n) {
        const int m = g.node_size[n];
        double* D = A.diag(n);
        for (int i = 0; i < m; ++i)
            for (int k = 0; k < m; ++k) D[i * m + k] = (i == k ? 8.0 : 0.0) + rng.uniform();
    }
    for (int j = 0; j < g.njoints; ++j)
        for (int side = 0; side < 2; ++side) {
            double* B = A.bj(j, side);
            double* H = A.jb(j, side);
            if (!B) continue;
            const int mj = g.node_size[g.nbodies + j];
            for (int i = 0; i < 6 * mj; ++i) B[i] = rng.uniform(), H[i] = rng.uniform();
        }
    return A;
}

testutil::VecX dense_solve(const BlockGraph& g, const BlockMatrix& A, const testutil::VecX& b) {
    const int n = g.total_size;
    testutil::MatX D(n, n);
    A.to_dense(g, D.data());
    return D.fullPivLu().solve(b);
}

// Bodies 0..6: 0-1-2-3 a chain from the world, 4 and 5 branch off 1, 6 off 4; row counts vary
// (5 for a hinge, 3 for a ball, 6 for a weld, 1 for point-on-line).
BlockGraph branched(bool loops) {
    std::vector<int> a = {-1, 0, 1, 2, 1, 1, 4}, b = {0, 1, 2, 3, 4, 5, 6}, rows = {5, 3, 5, 6, 5, 3, 5};
    if (loops) {
        a.push_back(3), b.push_back(6), rows.push_back(3);   // body-body loop 3–6
        a.push_back(-1), b.push_back(5), rows.push_back(1);  // second world joint
    }
    return build_block_graph(7, a, b, rows);
}

// Factor A, solve for a random right-hand side: the dense LU's solution to 1e-12.
void solves_as_dense(TreeLDU& ldu, const BlockGraph& g, const BlockMatrix& A, testutil::Rng& rng) {
    int failed = -2;
    REQUIRE(ldu.factor(g, A, &failed));
    testutil::VecX b(g.total_size);
    for (int i = 0; i < g.total_size; ++i) b[i] = rng.uniform();
    testutil::VecX x = b;
    ldu.solve(g, A, x.data());
    const testutil::VecX ref = dense_solve(g, A, b);
    CHECK((x - ref).norm() <= 1e-12 * ref.norm());
}

}  // namespace

TEST_CASE("tree LDU solves equal dense LU on a branched tree", "[tree-ldu]") {
    testutil::Rng rng(7);
    const BlockGraph g = branched(false);
    REQUIRE(g.loop_joints.empty());
    TreeLDU ldu;
    ldu.init(g);
    for (int trial = 0; trial < 5; ++trial) {
        const BlockMatrix A = random_matrix(g, rng);
        solves_as_dense(ldu, g, A, rng);
    }
}

TEST_CASE("tree LDU pivots where a block's dominant entries lie off its diagonal", "[tree-ldu]") {
    // Every diagonal block (sizes 1, 3, 5, 6 here) a permuted dominant matrix with a small
    // diagonal: the block inverse swaps rows at almost every pivot, and the rows' unit columns
    // enter the elimination in a scrambled order (tree_ldu.cpp keeps them in pivot order).
    testutil::Rng rng(11);
    const BlockGraph g = branched(false);
    TreeLDU ldu;
    ldu.init(g);
    for (int trial = 0; trial < 5; ++trial) {
        BlockMatrix A = random_matrix(g, rng);
        for (int n = 0; n < g.nnodes(); ++n) {
            const int m = g.node_size[n];
            double* D = A.diag(n);
            std::vector<int> perm(m);
            for (int i = 0; i < m; ++i) perm[i] = (i + 1 + trial) % m;
            for (int i = 0; i < m; ++i)
                for (int k = 0; k < m; ++k) D[i * m + k] = (k == perm[i] ? 8.0 : 0.0) + 0.1 * rng.uniform();
        }
        solves_as_dense(ldu, g, A, rng);
    }
}

TEST_CASE("tree LDU reports the node of a singular diagonal block", "[tree-ldu]") {
    testutil::Rng rng(8);
    const BlockGraph g = branched(false);
    BlockMatrix A = random_matrix(g, rng);
    const int leaf = 6;  // a leaf body: eliminated first, before any fill reaches it
    for (int i = 0; i < 36; ++i) A.diag(leaf)[i] = 0;
    TreeLDU ldu;
    ldu.init(g);
    int failed = -1;
    CHECK_FALSE(ldu.factor(g, A, &failed));
    CHECK(failed == leaf);
}

TEST_CASE("tree LDU: leaf bodies whose block has the shape of vi-maximal's invert as any block", "[tree-ldu]") {
    // vi-maximal's body block: m/h on the translation diagonal, a full (non-symmetric) rotation block,
    // zeros elsewhere. A leaf body's is inverted from those two parts (tree_ldu.cpp,
    // invert_body_block); the other bodies here keep dense blocks, so both paths meet in one solve.
    testutil::Rng rng(13);
    const BlockGraph g = branched(false);
    TreeLDU ldu;
    ldu.init(g);
    const int leaves[] = {3, 5, 6};
    for (int trial = 0; trial < 5; ++trial) {
        BlockMatrix A = random_matrix(g, rng);
        for (int leaf : leaves) {
            double* D = A.diag(leaf);
            for (int i = 0; i < 36; ++i) D[i] = 0;
            for (int i = 0; i < 3; ++i) {
                D[i * 7] = 2.0 + i + trial;  // (different masses per axis: a wrong diagonal would show)
                for (int k = 0; k < 3; ++k)
                    D[(3 + i) * 6 + 3 + k] = (i == k ? 3.0 : 0.0) + rng.uniform() - 0.5;
            }
        }
        solves_as_dense(ldu, g, A, rng);
    }
    SECTION("a singular rotation block or a zero mass fails at that leaf") {
        for (int what = 0; what < 2; ++what) {
            BlockMatrix A = random_matrix(g, rng);
            double* D = A.diag(6);
            for (int i = 0; i < 36; ++i) D[i] = 0;
            for (int i = 0; i < 6; ++i) D[i * 7] = 1.0;
            if (what == 0)
                for (int k = 3; k < 6; ++k) D[5 * 6 + k] = D[4 * 6 + k];  // two equal rotation rows
            else
                D[1 * 7] = 0;  // a zero mass
            int failed = -1;
            CHECK_FALSE(ldu.factor(g, A, &failed));
            CHECK(failed == 6);
        }
    }
}

TEST_CASE("loop node: tree LDU + Schur complement on the loop rows equals dense LU", "[tree-ldu]") {
    testutil::Rng rng(9);
    const BlockGraph g = branched(true);
    REQUIRE(g.loop_joints.size() == 2);
    TreeLDU tree;
    LoopClosure loop;
    tree.init(g);
    loop.init(g);
    CHECK(loop.rows() == g.loop_rows);
    for (int trial = 0; trial < 5; ++trial) {
        const BlockMatrix A = random_matrix(g, rng);
        int failed = -2;
        REQUIRE(tree.factor(g, A, &failed));
        CHECK(loop.factor(g, A, tree) == g.loop_rows);  // full rank
        testutil::VecX b(g.total_size);
        for (int i = 0; i < g.total_size; ++i) b[i] = rng.uniform();
        testutil::VecX x = b;
        loop.solve(g, A, tree, x.data());
        const testutil::VecX ref = dense_solve(g, A, b);
        CHECK((x - ref).norm() <= 1e-11 * ref.norm());
    }
}

// Issue 14, item 13: the loop node's rank-revealing QR dropped every direction weaker than 1e-9
// of the largest, also when the right-hand side was nothing but that direction (a four-bar
// folding flat): the solve returned 0 there and Newton stalled. Now a weak direction is dropped
// only while the right-hand side asks for (almost) nothing along it.
TEST_CASE("rank-revealing QR keeps a weak direction the right-hand side asks for", "[tree-ldu][singular]") {
    const Eigen::Matrix3d U = Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 3).normalized()).toRotationMatrix();
    const Eigen::Matrix3d V = Eigen::AngleAxisd(1.1, Eigen::Vector3d(3, -1, 2).normalized()).toRotationMatrix();
    const auto solve = [](const Eigen::Matrix3d& A, const Eigen::Vector3d& rhs, double negligible, int& rank) {
        Eigen::Matrix<double, 3, 3, Eigen::RowMajor> Ar = A;
        dense::RankRevealingQR qr;
        qr.reserve(3);
        rank = qr.factor(Ar.data());
        Eigen::Vector3d x = rhs;
        qr.solve(x.data(), negligible);
        return x;
    };
    int rank = 0;
    // A = U diag(1, 0.5, 1e-11) Vᵀ: numerical rank 2 at tol 1e-9, but not at round-off.
    const Eigen::Matrix3d A = U * Eigen::Vector3d(1, 0.5, 1e-11).asDiagonal() * V.transpose();

    // Only the weak direction asked for: it is solved (before: x = 0, residual = ‖b‖).
    const Eigen::Vector3d b = A * V.col(2);
    Eigen::Vector3d x = solve(A, b, 0, rank);
    CHECK(rank == 2);
    CHECK((A * x - b).norm() < 1e-3 * b.norm());  // round-off of A is 1e-5 of this direction
    CHECK((x - V.col(2)).norm() < 1e-3);
    // ... also when the caller says what is negligible, as long as b is above it.
    x = solve(A, b, 1e-12, rank);
    CHECK((A * x - b).norm() < 1e-3 * b.norm());  // round-off of A is 1e-5 of this direction
    // ... and dropped when all of b along it is below what the caller calls negligible.
    x = solve(A, b, 1e-10, rank);
    CHECK(x.norm() < 1e-12);

    // A right-hand side with round-off along the weak direction: the minimum-norm solution of the
    // rank-2 part (keeping it would add 0.1 along V.col(2)).
    const Eigen::Vector3d c = U * Eigen::Vector3d(1, 0.5, 1e-12);
    x = solve(A, c, 0, rank);
    CHECK((x - (V.col(0) + V.col(1))).norm() < 1e-9);

    // Exactly dependent rows (a third row the sum of the others) with a consistent b: the
    // minimum-norm solution, orthogonal to the null space.
    Eigen::Matrix3d S;
    S << 1, 2, 0.5, -1, 0.3, 2, 0, 2.3, 2.5;
    const Eigen::Vector3d null = S.fullPivLu().kernel().col(0).normalized();
    const Eigen::Vector3d d = S * Eigen::Vector3d(0.2, -0.4, 0.9);
    x = solve(S, d, 0, rank);
    CHECK(rank == 2);
    CHECK((S * x - d).norm() < 1e-12);
    CHECK(std::fabs(x.dot(null)) < 1e-12);
}
