// Block graph and DFS elimination ordering (maximal-vi.md §8.1–8.2).
#include <catch2/catch.hpp>
#include <numeric>

#include "util.hpp"

using namespace noether;

namespace {

struct Topo {
    int nb = 0;
    std::vector<int> a, b, rows;
    void joint(int pa, int cb, int r = 5) { a.push_back(pa), b.push_back(cb), rows.push_back(r); }
    BlockGraph build() const { return build_block_graph(nb, a, b, rows); }
};

int find(std::vector<int>& p, int x) {
    while (p[x] != x) x = p[x] = p[p[x]];
    return x;
}

// The invariants every ordering must satisfy.
void check_invariants(const Topo& t, const BlockGraph& g) {
    const int nb = t.nb, nj = static_cast<int>(t.a.size());
    // Every body and every tree joint exactly once in the list; loop joints not at all.
    std::vector<int> seen(nb + nj, 0);
    for (int n : g.order) ++seen[n];
    for (int b = 0; b < nb; ++b) REQUIRE(seen[b] == 1);
    for (int j = 0; j < nj; ++j) REQUIRE(seen[nb + j] == (g.is_loop[j] ? 0 : 1));
    // Every node after its tree children; parents are consistent.
    for (int n : g.order) {
        const int p = g.parent[n];
        if (p >= 0) REQUIRE(g.order_pos[n] < g.order_pos[p]);
        for (int k = g.children_start[n]; k < g.children_start[n + 1]; ++k) REQUIRE(g.parent[g.children[k]] == n);
    }
    // Every tree joint has exactly one child, a body; bodies' tree children are joints.
    for (int j = 0; j < nj; ++j) {
        if (g.is_loop[j]) continue;
        const int jn = nb + j;
        REQUIRE(g.children_start[jn + 1] - g.children_start[jn] == 1);
        REQUIRE(g.is_body(g.children[g.children_start[jn]]));
        REQUIRE((g.children[g.children_start[jn]] == t.b[j] || g.children[g.children_start[jn]] == t.a[j]));
    }
    for (int b = 0; b < nb; ++b)
        for (int k = g.children_start[b]; k < g.children_start[b + 1]; ++k) REQUIRE(!g.is_body(g.children[k]));
    // The loop set is exactly the edges outside a spanning forest: tree joints never close a
    // cycle (world = node nb), and every loop joint closes one.
    std::vector<int> uf(nb + 1);
    std::iota(uf.begin(), uf.end(), 0);
    auto end = [&](int x) { return x < 0 ? nb : x; };
    for (int j = 0; j < nj; ++j) {
        if (g.is_loop[j]) continue;
        const int ra = find(uf, end(t.a[j])), rb = find(uf, end(t.b[j]));
        REQUIRE(ra != rb);
        uf[ra] = rb;
    }
    int nloops = 0;
    for (int j = 0; j < nj; ++j) {
        if (!g.is_loop[j]) continue;
        ++nloops;
        REQUIRE(find(uf, end(t.a[j])) == find(uf, end(t.b[j])));
    }
    REQUIRE(nloops == static_cast<int>(g.loop_joints.size()));
    // Each root is last in its tree; roots have no parent.
    for (int r : g.roots) REQUIRE(g.parent[r] == -1);
    int rows = 0;
    for (int j : g.loop_joints) rows += t.rows[j];
    REQUIRE(g.loop_rows == rows);
}

}  // namespace

TEST_CASE("chain: post-order list, one tree, no loops", "[graph]") {
    Topo t;
    t.nb = 3;
    t.joint(-1, 0), t.joint(0, 1), t.joint(1, 2);
    const BlockGraph g = t.build();
    check_invariants(t, g);
    // bodies 0..2, joint j is node 3 + j: [b2, j2, b1, j1, b0, j0]
    REQUIRE(g.order == std::vector<int>{2, 5, 1, 4, 0, 3});
    REQUIRE(g.loop_joints.empty());
    REQUIRE(g.roots == std::vector<int>{3});
    REQUIRE(g.total_size == 3 * 6 + 3 * 5);
}

TEST_CASE("branching tree", "[graph]") {
    Topo t;
    t.nb = 5;
    t.joint(-1, 0), t.joint(0, 1), t.joint(0, 2), t.joint(1, 3), t.joint(2, 4);
    const BlockGraph g = t.build();
    check_invariants(t, g);
    REQUIRE(g.loop_joints.empty());
    // body 0 has two joint children (j1, j2), each with one body child.
    REQUIRE(g.children_start[1] - g.children_start[0] == 2);
}

TEST_CASE("several roots to the world", "[graph]") {
    Topo t;
    t.nb = 4;
    t.joint(-1, 0), t.joint(0, 1), t.joint(-1, 2), t.joint(2, 3);
    const BlockGraph g = t.build();
    check_invariants(t, g);
    REQUIRE(g.roots.size() == 2);
    REQUIRE(g.component[0] == g.component[1]);
    REQUIRE(g.component[2] == g.component[3]);
    REQUIRE(g.component[0] != g.component[2]);
    REQUIRE(g.loop_joints.empty());
}

TEST_CASE("free-floating and disconnected components", "[graph]") {
    Topo t;
    t.nb = 6;
    t.joint(-1, 0), t.joint(0, 1);  // world-rooted chain
    t.joint(2, 3), t.joint(3, 4);   // floating chain of three bodies
    // body 5: alone, no joints
    const BlockGraph g = t.build();
    check_invariants(t, g);
    REQUIRE(g.roots.size() == 3);
    REQUIRE(g.floating == std::vector<char>{0, 1, 1});
    REQUIRE(g.roots[1] == 2);  // a floating component is rooted at a body
    REQUIRE(g.roots[2] == 5);
    REQUIRE(g.order.back() == 5);
    REQUIRE(g.parent[2] == -1);
}

TEST_CASE("four-bar through the world: the second world joint is the loop", "[graph]") {
    Topo t;
    t.nb = 3;
    t.joint(-1, 0), t.joint(0, 1), t.joint(1, 2), t.joint(-1, 2);
    const BlockGraph g = t.build();
    check_invariants(t, g);
    REQUIRE(g.loop_joints == std::vector<int>{3});
    REQUIRE(g.loop_bodies == std::vector<int>{2});
    // The fill pattern is the whole path from body 2 to the root joint j0.
    for (int n : {2, 3 + 2, 1, 3 + 1, 0, 3 + 0}) REQUIRE(g.on_loop_path[n]);
    REQUIRE(!g.on_loop_path[3 + 3]);
}

TEST_CASE("closed loop of recipe 9: point-on-line closure joint is the loop node", "[graph]") {
    Topo t;
    t.nb = 3;
    t.joint(-1, 0), t.joint(0, 1), t.joint(1, 2);
    t.joint(-1, 2, 2);  // point-on-line from the world to L3's far end (2 rows)
    const BlockGraph g = t.build();
    check_invariants(t, g);
    REQUIRE(g.loop_joints == std::vector<int>{3});
    REQUIRE(g.loop_rows == 2);
}

TEST_CASE("body-body loop", "[graph]") {
    Topo t;
    t.nb = 4;
    t.joint(-1, 0), t.joint(0, 1), t.joint(1, 2), t.joint(2, 3), t.joint(3, 0);
    const BlockGraph g = t.build();
    check_invariants(t, g);
    REQUIRE(g.loop_joints == std::vector<int>{4});
    REQUIRE(g.loop_bodies == std::vector<int>{0, 3});
}

TEST_CASE("two loops sharing bodies", "[graph]") {
    Topo t;
    t.nb = 5;
    t.joint(-1, 0), t.joint(0, 1), t.joint(1, 2), t.joint(2, 0);  // loop A: 0-1-2
    t.joint(1, 3), t.joint(3, 4), t.joint(4, 2);                  // loop B shares 1 and 2
    const BlockGraph g = t.build();
    check_invariants(t, g);
    REQUIRE(g.loop_joints.size() == 2);
    REQUIRE(g.loop_rows == 10);
}

TEST_CASE("a joint parallel to another one (two joints between the same bodies)", "[graph]") {
    Topo t;
    t.nb = 2;
    t.joint(-1, 0), t.joint(0, 1), t.joint(0, 1, 3), t.joint(-1, 0, 3);
    const BlockGraph g = t.build();
    check_invariants(t, g);
    REQUIRE(g.loop_joints.size() == 2);
}

TEST_CASE("100 000-link chain: no recursion, linear list", "[graph]") {
    const int n = 100000;
    Topo t;
    t.nb = n;
    for (int i = 0; i < n; ++i) t.joint(i - 1, i);
    const BlockGraph g = t.build();
    check_invariants(t, g);
    REQUIRE(g.order.size() == 2u * n);
    REQUIRE(g.order.front() == n - 1);  // the tip is eliminated first
    REQUIRE(g.order.back() == n);       // the world joint of link 0 is the root
}

TEST_CASE("BlockMatrix dense expansion places every block", "[graph]") {
    Topo t;
    t.nb = 2;
    t.joint(-1, 0, 2), t.joint(0, 1, 3);
    const BlockGraph g = t.build();
    BlockMatrix A(g);
    A.diag(0)[0] = 1;
    A.bj(0, 1)[0] = 2;         // F[body0, joint0] (0,0)
    A.jb(1, 0)[5] = 3;         // F[joint1, body0] (0,5)
    REQUIRE(A.bj(0, 0) == nullptr);  // world side has no block
    std::vector<double> D(static_cast<std::size_t>(g.total_size) * g.total_size);
    A.to_dense(g, D.data());
    const int n = g.total_size;
    REQUIRE(D[0] == 1);
    REQUIRE(D[0 * n + g.node_offset[2]] == 2);
    REQUIRE(D[g.node_offset[3] * n + 5] == 3);
}
