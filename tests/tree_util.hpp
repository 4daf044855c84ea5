// Test helpers for the tree view (noether/tree.hpp), shared by the tree-view and riqn tests.
#pragma once

#include <catch2/catch.hpp>
#include <vector>

#include "noether/noether.hpp"
#include "noether/tree.hpp"

namespace testutil {

// The tree view of m; the test fails if the Model is refused.
inline noether::TreeView view_of(const noether::Model& m) {
    noether::TreeView t;
    std::vector<noether::Diagnostic> errors;
    REQUIRE(noether::build_tree_view(m, "test", t, errors));
    REQUIRE(errors.empty());
    return t;
}

// The Model's body poses at tree coordinates q (TreeView::nq values).
inline std::vector<noether::Pose> poses_at(const noether::Model& m, const noether::TreeView& t,
                                           const std::vector<double>& q) {
    std::vector<noether::Frame> g(t.size());
    std::vector<noether::Pose> p(m.nbodies());
    noether::tree_link_poses(t, q.data(), g.data());
    noether::tree_body_poses(t, g.data(), nullptr, p.data());
    return p;
}

}  // namespace testutil
