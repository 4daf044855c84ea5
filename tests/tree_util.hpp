// Test helpers for the tree view (noether/sdk/tree.hpp), shared by the tree-view and riqn tests.
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "noether/sdk/sdk.hpp"
#include "noether/sdk/tree.hpp"

namespace testutil {

// n steps, each required to succeed.
inline void run_steps(const noether::Model& m, noether::Data& d, int steps) {
    for (int i = 0; i < steps; ++i) REQUIRE(noether::step(m, d) == noether::StepStatus::ok);
}

// A run for the max_turn tests: `steps` steps of Spec s from its start (each required to succeed,
// none failed), the largest |E − E0| of the monitors in *dev and the most substeps a step took in
// *max_k; the final state, saved.
inline std::string run_turns(const noether::Spec& s, int steps, double* dev, int* max_k) {
    auto m = noether::compile(s);
    noether::Data d(m);
    const double E0 = noether::monitors(*m, d).total;
    *dev = 0, *max_k = 1;
    for (int i = 0; i < steps; ++i) {
        REQUIRE(noether::step(*m, d) == noether::StepStatus::ok);
        *dev = std::max(*dev, std::fabs(noether::monitors(*m, d).total - E0));
        *max_k = std::max(*max_k, d.last.substeps);
    }
    CHECK(d.stats.failed_steps == 0);
    CHECK(d.stats.subdivided_steps == 0);  // the substeps max_turn asks for are not counted as subdivided
    return d.save();
}

// The runs of a max_turn test on Spec s: the option not given (plain), 0 (off) and 0.1.
struct TurnRuns {
    std::string plain, off;  // final states
    double dev_plain = 0, dev_turn = 0;
    int k_plain = 0, k_turn = 0;
};
inline TurnRuns max_turn_runs(noether::Spec s, int steps) {
    TurnRuns r;
    double dev_off = 0;
    int k_off = 0;
    r.plain = run_turns(s, steps, &r.dev_plain, &r.k_plain);
    s.options.extra["max_turn"] = 0;
    r.off = run_turns(s, steps, &dev_off, &k_off);
    s.options.extra["max_turn"] = 0.1;
    run_turns(s, steps, &r.dev_turn, &r.k_turn);
    return r;
}
// True if `steps` steps of s with option max_turn = turn end bit for bit where they do without it.
inline bool turn_changes_nothing(noether::Spec s, double turn, int steps) {
    double dev = 0;
    int k = 0;
    const std::string plain = run_turns(s, steps, &dev, &k);
    s.options.extra["max_turn"] = turn;
    return run_turns(s, steps, &dev, &k) == plain;
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

// Steps d until a step fails (at most max_steps); returns the bytes Data::save() wrote before the
// failed step and its status in *status (ok if none failed).
inline std::string step_until_failure(const noether::Model& m, noether::Data& d, int max_steps, noether::StepStatus* status) {
    std::string before;
    *status = noether::StepStatus::ok;
    for (int i = 0; i < max_steps && *status == noether::StepStatus::ok; ++i) {
        before = d.save();
        *status = noether::step(m, d);
    }
    return before;
}

// A failed step of an integrator that undoes its own failed steps (Integrator::rolls_back_itself()):
// d is as a copy restored from `before` (the bytes Data::save() wrote before the step) — time,
// step, poses, twists, warm starts, multipliers, joint coordinates and rates and the integrator's
// saved state — with one failed step more and at least min_work Newton iterations done; there is no
// snapshot to roll back to; and the same step taken again in both, three times, fails the same way
// with the same work and leaves the same state.
inline void check_failure_undone(const std::shared_ptr<const noether::Model>& m, noether::Data& d, const std::string& before,
                                 noether::StepStatus status, std::int64_t min_work) {
    REQUIRE(status != noether::StepStatus::ok);
    noether::Data ref(m);
    ref.restore(before);
    auto same = [](const auto& a, const auto& b) {
        return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), sizeof(a[0]) * a.size()) == 0);
    };
    auto same_state = [&] {
        std::string sd, sr;
        d.integrator_state->save(sd);
        ref.integrator_state->save(sr);
        return sd == sr;
    };
    CHECK(d.time == ref.time);
    CHECK(d.step == ref.step);
    CHECK(d.stats.failed_steps == ref.stats.failed_steps + 1);
    CHECK(d.stats.newton_work >= ref.stats.newton_work + min_work);  // it did iterate
    CHECK(same(d.pose, ref.pose));
    CHECK(same(d.twist, ref.twist));
    CHECK(same(d.twist_guess, ref.twist_guess));
    CHECK(same(d.lambda, ref.lambda));
    CHECK(same(d.coord, ref.coord));
    CHECK(same(d.rate, ref.rate));
    CHECK(same_state());
    CHECK_THROWS_WITH(d.rollback_step(), Catch::Matchers::Contains("no snapshot of this step"));
    for (int i = 0; i < 3; ++i) {
        const std::int64_t wd = d.stats.newton_work, wr = ref.stats.newton_work;
        REQUIRE(noether::step(*m, d) == status);
        REQUIRE(noether::step(*m, ref) == status);
        CHECK(d.stats.newton_work - wd == ref.stats.newton_work - wr);
        CHECK(same(d.pose, ref.pose));
    }
    CHECK(same_state());
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
