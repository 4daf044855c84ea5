// Test helpers for the tree view (noether/sdk/tree.hpp), shared by the tree-view and riqn tests.
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
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

// The largest difference between link_transform(l, q) (the screw transform multiplied out) and
// exp(A q) · M over angles from 0 to well past 2π, the translation relative to 1 + |q|.
inline double screw_transform_error(const noether::TreeLink& l) {
    using namespace noether;
    double err = 0;
    for (double q : {0.0, 0.3, -1.7, 3.1, 7.5, -40.0, 123.4}) {
        const Frame a = link_transform(l, q), e = screw_exp(l.A, q) * l.M;
        err = std::max(err, norm(a.p - e.p) / (1 + std::fabs(q)));
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) err = std::max(err, std::fabs(a.R(r, c) - e.R(r, c)));
    }
    return err;
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
