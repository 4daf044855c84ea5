// The kernel's step pipeline: a failed step of every integrator leaves Data bit-identical to
// before the step (only the failure counter, the work counter and one warning are added), and
// the commit stage writes time, counters and the last-step record from the integrator's report.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "noether/registry.hpp"
#include "noether/sdk/plugin.hpp"
#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;

namespace {

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), sizeof(T) * a.size()) == 0);
}

std::string istate(const Data& d) {
    std::string s;
    if (d.integrator_state) d.integrator_state->save(s);
    return s;
}

}  // namespace

// The planar four-bar of four hinges has redundant closure rows: 'dense-loop' runs it, 'schur'
// refuses it at every factorisation. A state saved under dense-loop restores into the schur
// model (same structure), whose next step must fail.
TEST_CASE("a failed step of every integrator leaves Data bit-identical to before the step", "[step]") {
    for (const char* integ : {"vi-maximal", "vi-midpoint", "heun", "rk4", "dp45-projection"}) {
        INFO("integrator " << integ);
        Spec good = testutil::closed_loop_spec("revolute", "dense-loop");
        good.options.integrator = integ;
        good.joints[0].damping = {0.3};
        good.joints[1].stiffness = {2.0};
        auto mg = compile(good);
        Data dg(mg);
        dg.actuation[0] = 0.7;
        for (int i = 0; i < 40; ++i) REQUIRE(step(*mg, dg) == StepStatus::ok);
        Spec bad = good;
        bad.options.solver = "schur";
        bad.options.max_substeps = 8;  // the implicit methods retry from the snapshot 3 times
        auto mb = compile(bad);
        Data d(mb);
        d.restore(dg.save());
        Data before(mb);
        before.restore(d.save());

        const StepStatus st = step(*mb, d);
        REQUIRE(st != StepStatus::ok);
        CHECK(d.time == before.time);
        CHECK(d.step == before.step);
        CHECK(same_bits(d.pose, before.pose));
        CHECK(same_bits(d.twist, before.twist));
        CHECK(same_bits(d.twist_guess, before.twist_guess));
        CHECK(same_bits(d.lambda, before.lambda));
        CHECK(same_bits(d.coord, before.coord));
        CHECK(same_bits(d.rate, before.rate));
        CHECK(same_bits(d.actuation, before.actuation));
        CHECK(d.last.iterations == before.last.iterations);
        CHECK(std::memcmp(&d.last.residual, &before.last.residual, sizeof(double)) == 0);
        CHECK(d.last.substeps == before.last.substeps);
        CHECK(d.last.projections == before.last.projections);
        CHECK(istate(d) == istate(before));
        CHECK(d.stats.steps == before.stats.steps);
        CHECK(d.stats.newton_total == before.stats.newton_total);
        CHECK(d.stats.internal_steps == before.stats.internal_steps);
        CHECK(d.stats.rejected_steps == before.stats.rejected_steps);
        CHECK(d.stats.projection_total == before.stats.projection_total);
        CHECK(d.stats.failed_steps == before.stats.failed_steps + 1);
        REQUIRE(d.warnings.size() == before.warnings.size() + 1);
        // One format for every integrator.
        CHECK_THAT(d.warnings.back().message,
                   Contains("step 41 (t = 0.41 s): ") && Contains(" at dt = 0.01 s") &&
                       Contains("; the state is left at t = 0.4 s"));
        // And the run goes on from there with the good model as if nothing had happened.
        Data again(mg);
        again.restore(d.save());
        Data ref(mg);
        ref.restore(before.save());
        REQUIRE(step(*mg, again) == StepStatus::ok);
        REQUIRE(step(*mg, ref) == StepStatus::ok);
        CHECK(same_bits(again.pose, ref.pose));
        CHECK(same_bits(again.twist, ref.twist));
    }
}

TEST_CASE("the commit stage writes time, counters and the last-step record, integrators do not", "[step]") {
    Spec s = testutil::chain_spec(3, "revolute", "vi-maximal");
    s.options.extra_lists["guess"] = {"predictor"};  // (at least two iterations a step: the counts below)
    auto m = compile(s);
    Data d(m);
    for (int i = 0; i < 25; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
    CHECK(d.step == 25);
    CHECK(d.stats.steps == 25);
    CHECK(d.time == Approx(0.25).margin(1e-15));
    CHECK(d.last.iterations >= 2);
    CHECK(d.stats.newton_total >= 25 * 2);
    CHECK(d.stats.newton_work >= d.stats.newton_total);
    // advance() alone moves the state but leaves time, counters and warnings to the kernel.
    const double t = d.time;
    const RunStats stats = d.stats;
    const StepStats last = d.last;
    const Pose p = d.pose[2];
    d.snapshot_step();
    const StepReport r = m->integrator->advance(*m, d);
    REQUIRE(r.status == StepStatus::ok);
    CHECK(r.iterations >= 2);
    CHECK(d.time == t);
    CHECK(d.stats.steps == stats.steps);
    CHECK(d.stats.newton_total == stats.newton_total);
    CHECK(d.last.iterations == last.iterations);
    CHECK(d.warnings.empty());
    CHECK(norm(d.pose[2].x - p.x) > 1e-6);  // it did move
    // rollback_step() returns to the snapshot exactly.
    d.rollback_step();
    CHECK(std::memcmp(&d.pose[2], &p, sizeof(Pose)) == 0);
}

TEST_CASE("the default monitors include the joint spring energy", "[step]") {
    Spec s = testutil::chain_spec(1, "revolute", "rk4");
    s.gravity = {0, 0, 0};
    s.joints[0].stiffness = {3.0};
    s.joints[0].rest = {0.5};  // the spring is stretched by 0.5 rad at the start
    auto m = compile(s);
    Data d(m);
    const Monitors mon = monitors(*m, d);
    CHECK(mon.potential == Approx(0.5 * 3.0 * 0.25).epsilon(1e-12));
    CHECK(mon.total == Approx(0.375).epsilon(1e-12));
    // and energy stays at that level while the spring swings the link (rk4 at a small step)
    for (int i = 0; i < 200; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
    CHECK(std::fabs(d.coord[0]) > 1e-3);
    CHECK(monitors(*m, d).total == Approx(0.375).epsilon(1e-6));
}

TEST_CASE("solver 'auto' picks the supported solver with the highest preference", "[step]") {
    auto tree = compile(testutil::chain_spec(4, "revolute", "vi-maximal"));
    CHECK(tree->solver_name == "sparse-ldu");
    auto loop = compile(testutil::closed_loop_spec("point-on-line"));
    CHECK(loop->solver_name == "dense-loop");
    const Solver* ldu = Registry::global().solver("sparse-ldu");
    const Solver* dl = Registry::global().solver("dense-loop");
    CHECK(ldu->preference(*tree) > dl->preference(*tree));
    CHECK_FALSE(ldu->unsupported(*loop).empty());
}

// Issue 32 item 2: the kernel's one host-edit test replaces the three integrators' own.
TEST_CASE("the kernel tells a step whether a host changed the state since the last commit", "[step]") {
    auto m = compile(testutil::chain_spec(2, "revolute", "vi-maximal"));
    Data d(m);
    CHECK_FALSE(d.changed_since_commit());  // the initial state counts as committed
    REQUIRE(step(*m, d) == StepStatus::ok);
    CHECK_FALSE(d.host_changed());
    CHECK_FALSE(d.changed_since_commit());
    // A host sets the joint state: the next step sees it, the one after does not.
    const double q[2] = {0.3, -0.2}, qd[2] = {0.1, 0.0};
    set_joint_state(*m, d, q, qd);
    CHECK(d.changed_since_commit());
    REQUIRE(step(*m, d) == StepStatus::ok);
    CHECK(d.host_changed());
    CHECK_FALSE(d.changed_since_commit());
    REQUIRE(step(*m, d) == StepStatus::ok);
    CHECK_FALSE(d.host_changed());
    // A velocity alone, written by hand, is a change too.
    d.twist[1].w.y += 1e-12;
    CHECK(d.changed_since_commit());
    // A state saved after an edit and restored elsewhere carries the edit; a committed one does not.
    Data e(m), f(m);
    e.restore(d.save());
    CHECK(e.changed_since_commit());
    REQUIRE(step(*m, e) == StepStatus::ok);
    CHECK(e.host_changed());
    f.restore(e.save());
    CHECK_FALSE(f.changed_since_commit());
}

namespace {

// An integrator that says it rolls back its own failed steps (Integrator::rolls_back_itself) and,
// by the host's actuation of its first joint, keeps its word or not: > 0 moves the first body to
// NaN and returns ok; < 0 asks for the kernel's snapshot (Data::rollback_step); 0 drifts every body
// along its twist for dt.
struct SelfRollbackProbe final : Integrator {
    Scheme scheme() const override { return Scheme::explicit_fixed; }
    std::unique_ptr<IntegratorState> create_state(const Model&) const override { return std::make_unique<IntegratorState>(); }
    StepReport advance(const Model& m, Data& d) const override {
        if (d.actuation[0] < 0) d.rollback_step();
        for (int b = 0; b < m.nbodies(); ++b) d.pose[b].x += m.options.dt * d.twist[b].v;
        if (d.actuation[0] > 0) d.pose[0].x.y = std::nan("");
        return StepReport{};
    }
    bool rolls_back_itself() const override { return true; }
};

}  // namespace

TEST_CASE("an integrator that rolls back its own steps gets no snapshot, and a non-finite state it returns as ok is undone", "[step]") {
    static const noether_plugin_descriptor probe = {
        NOETHER_PLUGIN_ABI, sizeof(noether_plugin_descriptor), NOETHER_PLUGIN_INTEGRATOR, "test-self-rollback",
        "rolls back its own steps, or says it does", []() -> void* {
            static SelfRollbackProbe p;
            return &p;
        }};
    if (!Registry::global().find(PluginKind::integrator, "test-self-rollback")) Registry::global().add(&probe);
    auto m = compile(testutil::chain_spec(2, "revolute", "test-self-rollback"));
    Data d(m);
    d.twist[0].v = {1, 0, 0};
    d.twist[1].v = {1, 0, 0};
    REQUIRE(step(*m, d) == StepStatus::ok);
    CHECK(d.pose[0].x.x == Approx(m->bodies[0].pose0.x.x + 0.01));
    // No snapshot for it: a rollback within its step is refused (and the step with it).
    d.actuation[0] = -1;
    CHECK_THROWS_WITH(step(*m, d), Contains("no snapshot of this step"));
    // A non-finite state returned as ok: the last commit's poses and twists again, the step failed
    // and said so, and the next step sees a host edit (the integrator restarts from them).
    Data before(m);
    before.restore(d.save());
    d.actuation[0] = 1;
    CHECK(step(*m, d) == StepStatus::non_finite);
    CHECK(same_bits(d.pose, before.pose));
    CHECK(same_bits(d.twist, before.twist));
    CHECK(d.time == before.time);
    CHECK(d.stats.failed_steps == before.stats.failed_steps + 1);
    REQUIRE(!d.warnings.empty());
    CHECK_THAT(d.warnings.back().message, Contains("returned a non-finite state as ok") && Contains("restarts from them"));
    CHECK(d.changed_since_commit());
    d.actuation[0] = 0;
    REQUIRE(step(*m, d) == StepStatus::ok);
    CHECK(d.host_changed());
    CHECK(d.pose[1].x.x == Approx(before.pose[1].x.x + 0.01));
}
