// Test helpers for the tree view (noether/sdk/tree.hpp), shared by the tree-view and riqn tests.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "noether/sdk/sdk.hpp"
#include "noether/sdk/tree.hpp"

namespace testutil {

// n steps, each required to succeed.
inline void run_steps(const noether::Model& m, noether::Data& d, int steps) {
    for (int i = 0; i < steps; ++i) REQUIRE(noether::step(m, d) == noether::StepStatus::ok);
}

// Save d, take `steps` steps, restore, take them again: true if both end in the same state, bit
// for bit (what the integrator carries between steps survives save/restore).
inline bool restore_replays(const noether::Model& m, noether::Data& d, int steps) {
    const std::string mid = d.save();
    run_steps(m, d, steps);
    const std::string a = d.save();
    d.restore(mid);
    run_steps(m, d, steps);
    return d.save() == a;
}

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
