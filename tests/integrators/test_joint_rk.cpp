// rk4-joint and dp45-joint: explicit Runge–Kutta in joint coordinates (plugins/integrators/joint_rk.cpp).
// Their forward dynamics against the maximal-coordinate dp45-projection (another formulation, another
// linear system) on a branched tree with every kind of force; the orders of convergence; the error
// control; what they refuse; snapshots.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include "noether/noether.hpp"
#include "noether/queries.hpp"
#include "../tree_util.hpp"
#include "../util.hpp"

using namespace noether;
using Catch::Matchers::Contains;

namespace {

// A branched tree of screw joints: A on a hinge to the world, B hinged on A (another axis), C on a
// slider from A with a spring and a damper, a plate welded to C, D hinged on B about a skew axis
// with a damper; random full inertias, initial velocities, an actuated hinge, a constant body force
// of the Model and a force and torque a host applies (Data inputs, set by `inputs`).
Spec tree_spec(const char* integrator, double dt) {
    testutil::Rng r(7);
    Spec s;
    s.options.integrator = integrator;
    s.options.dt = dt;
    const char* names[5] = {"A", "B", "C", "plate", "D"};
    const Vec3 at[5] = {{0.5, 0, 0}, {1.2, 0.2, -0.3}, {0.8, -0.3, 0.2}, {0.9, -0.5, 0.3}, {1.6, 0.5, -0.6}};
    for (int i = 0; i < 5; ++i) {
        BodySpec& b = s.add_body(names[i]);
        b.mass = r.uniform(0.5, 2);
        const Mat3 R = rotation(r.quat());
        b.inertia = R * testutil::box_inertia(b.mass, r.uniform(0.2, 0.6), r.uniform(0.2, 0.6), r.uniform(0.2, 0.6)) * transpose(R);
        b.position = at[i];
        b.orientation = r.quat();
    }
    JointSpec& a = s.add_joint("hA", "revolute", "world", "A");
    a.anchor = Vec3{0, 0, 0};
    a.axis = Vec3{0, 1, 0};
    JointSpec& b = s.add_joint("hB", "revolute", "A", "B");
    b.anchor = Vec3{0.9, 0.1, -0.1};
    b.axis = Vec3{1, 0, 0};
    JointSpec& c = s.add_joint("sC", "prismatic", "A", "C");
    c.anchor = Vec3{0.7, -0.2, 0.1};
    c.axis = normalized(Vec3{0.2, -0.3, 1});
    c.stiffness = {40};
    c.damping = {0.5};
    c.rest = {0.05};
    s.add_joint("weld", "fixed", "C", "plate").anchor = Vec3{0.85, -0.4, 0.25};
    JointSpec& dj = s.add_joint("hD", "revolute", "B", "D");
    dj.anchor = Vec3{1.4, 0.35, -0.45};
    dj.axis = r.unit();
    dj.damping = {0.2};
    ForceSpec f;
    f.body = "D";
    f.force = {0.3, -0.2, 0.5};
    f.torque = {0.1, 0, -0.05};
    f.body_frame = true;
    s.forces.push_back(f);
    return s;
}

int dof(const Model& m, const char* joint) {
    for (const JointInfo& j : m.joints)
        if (j.name == joint) return j.dof_offset;
    FAIL("no joint " << joint);
    return -1;
}

// Rates at the start (the coordinates as built), and the inputs a host sets each step.
void start_moving(const Model& m, Data& d) {
    std::vector<double> rate(m.total_dofs, 0.0);
    const double rates[4] = {0.8, -1.5, 0.3, 2.0};
    for (int i = 0; i < m.total_dofs; ++i) rate[i] = rates[i % 4];
    set_joint_state(m, d, d.coord.data(), rate.data());
}
// The inputs change every 0.01 s (held between): the same forcing for runs of any step up to that.
void inputs(const Model& m, Data& d) {
    const double t = 0.01 * std::floor(d.time / 0.01 + 1e-6);
    d.actuation[dof(m, "hB")] = 0.4 * std::sin(3 * t);
    const int b = m.body_index("B");
    d.applied_force[b] = {0, 0.2, 0.1 * std::cos(2 * t)};
    d.applied_torque[b] = {0.05, 0, 0};
}

struct Outcome {
    std::vector<double> coord, rate;
    double energy_drift = 0;  // largest |E − E0| (continuous energy), for conservative runs
    long long internal = 0;
};

Outcome simulate(Spec s, double T, bool forced) {
    auto m = compile(s);
    Data d(m);
    start_moving(*m, d);
    const double e0 = monitors(*m, d).total;
    Outcome out;
    const int n = static_cast<int>(std::lround(T / m->options.dt));
    for (int i = 0; i < n; ++i) {
        if (forced) inputs(*m, d);
        REQUIRE(step(*m, d) == StepStatus::ok);
        out.energy_drift = std::max(out.energy_drift, std::fabs(monitors(*m, d).total - e0));
    }
    out.coord = d.coord;
    out.rate = d.rate;
    out.internal = d.stats.internal_steps;
    return out;
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
    double e = 0;
    for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(a[i] - b[i]));
    return e;
}

}  // namespace

TEST_CASE("rk4-joint and dp45-joint follow dp45-projection (maximal coordinates) on a forced branched tree", "[joint-rk]") {
    // The same motion from two formulations: joint coordinates with articulated-body forward dynamics,
    // and body poses with the constrained [M −Gᵀ; G 0] system. Springs, dampers, actuation, a Model
    // body force in the body frame, host forces and torques, gravity, a welded plate.
    Spec ref = tree_spec("dp45-projection", 0.01);
    ref.options.extra = {{"atol", 1e-11}, {"rtol", 1e-11}};
    ref.options.tolerance = 1e-13;
    const Outcome r = simulate(ref, 1.0, true);
    Spec dp = tree_spec("dp45-joint", 0.01);
    dp.options.extra = {{"atol", 1e-11}, {"rtol", 1e-11}};
    const Outcome a = simulate(dp, 1.0, true);
    const Outcome b = simulate(tree_spec("rk4-joint", 5e-4), 1.0, true);
    INFO("dp45-joint: coordinates " << max_diff(a.coord, r.coord) << ", rates " << max_diff(a.rate, r.rate));
    INFO("rk4-joint at dt 5e-4: coordinates " << max_diff(b.coord, r.coord) << ", rates " << max_diff(b.rate, r.rate));
    CHECK(max_diff(a.coord, r.coord) < 1e-8);
    CHECK(max_diff(a.rate, r.rate) < 1e-7);
    CHECK(max_diff(b.coord, r.coord) < 1e-8);  // (rk4's error at dt 5e-4: ~1e-10)
    CHECK(max_diff(b.rate, r.rate) < 1e-7);
    // The forces matter: without the host's inputs the motion is another one.
    const Outcome u = simulate(dp, 1.0, false);
    CHECK(max_diff(u.coord, a.coord) > 1e-3);
}

TEST_CASE("rk4-joint's step is classical RK4 on the queries' forward dynamics (CRB, RNEA, LU), to round-off", "[joint-rk]") {
    // The same method on the same coordinates with another forward dynamics: the queries API's
    // q̈ = M⁻¹ (τ − C q̇ − g) (composite rigid bodies, Newton–Euler, a dense LU) against the
    // integrator's articulated-body pass. A 6-link chain with a branch-free twist (axes alternate),
    // actuated joints, 100 steps of 0.01 s.
    Spec s = testutil::chain_spec(6, "revolute", "rk4-joint");
    s.options.dt = 0.01;
    for (std::size_t j = 0; j < s.joints.size(); ++j)
        if (j % 2) s.joints[j].axis = Vec3{0, 0, 1};
    auto m = compile(s);
    Data d(m);
    const int n = m->total_dofs;
    std::vector<double> q(n), v(n), tau(n);
    for (int i = 0; i < n; ++i) q[i] = 0.1 * i, v[i] = 0.5 - 0.2 * i, tau[i] = 0.3 * std::cos(i);
    set_joint_state(*m, d, q.data(), v.data());
    Kinematics kin(m);
    const double h = m->options.dt;
    std::vector<double> kq[4], kv[4], qs(n), vs(n);
    for (int k = 0; k < 100; ++k) {
        for (int i = 0; i < n; ++i) d.actuation[i] = tau[i];
        REQUIRE(step(*m, d) == StepStatus::ok);
        const double c[4] = {0, 0.5, 0.5, 1};
        for (int st = 0; st < 4; ++st) {
            for (int i = 0; i < n; ++i) {
                qs[i] = st ? q[i] + c[st] * h * kq[st - 1][i] : q[i];
                vs[i] = st ? v[i] + c[st] * h * kv[st - 1][i] : v[i];
            }
            kq[st] = vs;
            kv[st].resize(n);
            kin.forward_dynamics(qs.data(), vs.data(), tau.data(), kv[st].data());
        }
        for (int i = 0; i < n; ++i) {
            q[i] += h / 6 * (kq[0][i] + 2 * kq[1][i] + 2 * kq[2][i] + kq[3][i]);
            v[i] += h / 6 * (kv[0][i] + 2 * kv[1][i] + 2 * kv[2][i] + kv[3][i]);
        }
    }
    INFO("after 1 s: coordinates " << max_diff(d.coord, q) << ", rates " << max_diff(d.rate, v));
    CHECK(max_diff(d.coord, q) < 1e-11);
    CHECK(max_diff(d.rate, v) < 1e-10);
    CHECK(std::fabs(d.coord[0] - 0.0) > 0.1);  // it moved
}

TEST_CASE("rk4-joint converges at order 4 and its energy error falls as dt^4", "[joint-rk]") {
    Spec ref = tree_spec("dp45-joint", 0.01);
    ref.forces.clear();
    ref.joints[2].damping.clear();
    ref.joints[4].damping.clear();  // conservative: gravity and the slider's spring
    Spec tight = ref;
    tight.options.extra = {{"atol", 1e-12}, {"rtol", 1e-12}};
    const Outcome r = simulate(tight, 2.0, false);
    const std::vector<double> hs = {0.01, 0.005, 0.0025};
    std::vector<double> err, drift;
    for (double h : hs) {
        Spec s = ref;
        s.options.integrator = "rk4-joint";
        s.options.dt = h;
        const Outcome x = simulate(s, 2.0, false);
        err.push_back(max_diff(x.coord, r.coord));
        drift.push_back(x.energy_drift);
    }
    const double order = std::log(err[0] / err[2]) / std::log(hs[0] / hs[2]);
    const double eorder = std::log(drift[0] / drift[2]) / std::log(hs[0] / hs[2]);
    INFO("errors " << err[0] << " " << err[1] << " " << err[2] << ": order " << order);
    INFO("energy drift " << drift[0] << " " << drift[1] << " " << drift[2] << ": order " << eorder);
    CHECK(order == Approx(4.0).margin(0.3));
    CHECK(eorder == Approx(4.0).margin(0.5));
    CHECK(drift[0] > 1e-9);  // not conserved: explicit Runge–Kutta drifts (here ~1e-6 J at dt 0.01)
    CHECK(r.energy_drift < 1e-9);  // the tight reference conserves it to its tolerance
}

TEST_CASE("dp45-joint: fifth-order local error, and the error and the work follow the tolerance", "[joint-rk]") {
    // One internal step of h (atol = rtol = 1: accepted as proposed) against a tight run: O(h^6),
    // on the double pendulum (as dp45-projection's test in test_explicit.cpp).
    Spec s = testutil::chain_spec(2, "revolute", "dp45-joint");
    std::vector<double> hs = {0.08, 0.04, 0.02}, err;
    Spec tight = s;
    tight.options.extra = {{"atol", 1e-13}, {"rtol", 1e-13}};
    for (double h : hs) {
        Spec one = s;
        one.options.dt = h;
        one.options.extra = {{"atol", 1.0}, {"rtol", 1.0}, {"initial_step", h}};
        Spec t = tight;
        t.options.dt = h;
        const Outcome a = simulate(one, h, false), b = simulate(t, h, false);
        REQUIRE(a.internal == 1);
        err.push_back(std::max(max_diff(a.rate, b.rate), max_diff(a.coord, b.coord)));
    }
    const double order = std::log(err[0] / err[2]) / std::log(hs[0] / hs[2]);
    INFO("local errors " << err[0] << " " << err[1] << " " << err[2] << ": slope " << order);
    CHECK(order == Approx(6.0).margin(0.5));
    // Over 2 s of the forced tree in steps of dt = 0.1 (the longest internal step): the error against
    // a tight run shrinks with the tolerance, the internal steps grow about as tol^(−1/5).
    s = tree_spec("dp45-joint", 0.1);
    s.forces.clear();
    tight = s;
    tight.options.extra = {{"atol", 1e-13}, {"rtol", 1e-13}};
    const Outcome r = simulate(tight, 2.0, false);
    std::vector<double> e;
    std::vector<long long> steps;
    for (double tol : {1e-5, 1e-7, 1e-9}) {
        Spec x = s;
        x.options.extra = {{"atol", tol}, {"rtol", tol}};
        const Outcome a = simulate(x, 2.0, false);
        e.push_back(max_diff(a.coord, r.coord));
        steps.push_back(a.internal);
    }
    INFO("errors " << e[0] << " " << e[1] << " " << e[2] << ", internal steps " << steps[0] << " " << steps[1] << " "
                   << steps[2]);
    CHECK(e[0] > 10 * e[1]);
    CHECK(e[1] > 10 * e[2]);
    CHECK(e[2] < 1e-7);
    CHECK(steps[1] > steps[0]);
    CHECK(steps[2] > 2 * steps[1]);  // (10^(2/5) = 2.5)
    CHECK(steps[0] >= 20);           // at most dt per internal step
}

TEST_CASE("rk4-joint and dp45-joint: what they refuse, with the element and the way out", "[joint-rk]") {
    for (const char* integ : {"rk4-joint", "dp45-joint"}) {
        Spec ball = testutil::chain_spec(2, "spherical", integ);
        CHECK_THAT(testutil::error_of([&] { compile(ball); }),
                   Contains(std::string(integ) + ": joint 'j1' is a ball joint") && Contains("riqn, vi-galerkin"));
        Spec fl = testutil::floating_tree_spec(12, integ);
        CHECK_THAT(testutil::error_of([&] { compile(fl); }), Contains("is a free root") || Contains("is a ball joint"));
        Spec loop = testutil::closed_loop_spec("revolute");
        loop.options.integrator = integ;
        CHECK_THAT(testutil::error_of([&] { compile(loop); }), Contains("closure") && Contains(integ));
        Spec arm = testutil::chain_spec(2, "revolute", integ);
        arm.joints[1].armature = {0.1};
        CHECK_THAT(testutil::error_of([&] { compile(arm); }), Contains("armature") && Contains(integ));
        Spec servo = testutil::chain_spec(1, "revolute", integ);
        servo.joints[0].servo.kind = ServoSpec::Kind::position;
        servo.joints[0].servo.kp = 5;
        servo.joints[0].servo.kv = 1;
        auto m = compile(servo);
        bool warned = false;
        for (const Diagnostic& w : m->warnings) warned = warned || w.message.find("applies servos explicitly") != std::string::npos;
        CHECK(warned);
    }
    Spec bad = testutil::chain_spec(2, "revolute", "dp45-joint");
    bad.options.extra = {{"rtol", -1}};
    CHECK_THAT(testutil::error_of([&] { compile(bad); }), Contains("dp45-joint") && Contains("'rtol'") && Contains("-1"));
    bad.options.extra = {{"fac_max", 1}};
    CHECK_THAT(testutil::error_of([&] { compile(bad); }), Contains("'fac_max' must be finite and greater than 1, got 1"));
    bad.options.extra = {{"points", 2}};
    CHECK_THAT(testutil::error_of([&] { compile(bad); }), Contains("points"));
    Spec rk = testutil::chain_spec(2, "revolute", "rk4-joint");
    rk.options.extra = {{"atol", 1e-6}};
    CHECK_THAT(testutil::error_of([&] { compile(rk); }), Contains("atol"));
}

// The two Dormand–Prince integrators read the same options (noether/sdk/dormand_prince.hpp) and
// judge them alike. Before one check served both: dp45-joint compiled rtol = atol = 1e-300 and failed
// the first step ("not converged"), and refused initial_step = 0, which the shared options define
// as the step's dt; dp45-projection took fac_max = inf.
TEST_CASE("dp45-projection and dp45-joint check their shared options alike", "[joint-rk]") {
    struct Bad {
        std::vector<std::pair<std::string, double>> opts;
        std::string message;
    };
    const std::vector<Bad> bad = {
        {{{"rtol", 1e-300}, {"atol", 1e-300}}, "option 'rtol' is 1e-300: a step's error cannot be told that finely"},
        {{{"rtol", 1e-15}}, "option 'rtol' is 1e-15"},
        {{{"atol", -1}}, "option 'atol' must be positive and finite, got -1"},
        {{{"rtol", INFINITY}}, "option 'rtol' must be positive and finite, got inf"},
        {{{"fac_max", INFINITY}}, "option 'fac_max' must be finite and greater than 1, got inf"},
        {{{"fac_max", 0.5}}, "option 'fac_max' must be finite and greater than 1, got 0.5"},
        {{{"initial_step", -0.01}}, "option 'initial_step' must be 0 (the step's dt) or positive, and finite, got -0.01"},
        {{{"initial_step", NAN}}, "option 'initial_step' must be 0 (the step's dt) or positive, and finite, got nan"},
        {{{"max_internal_steps", 0}}, "option 'max_internal_steps' must be a whole number of at least 1, got 0"},
        {{{"max_internal_steps", 2.5}}, "option 'max_internal_steps' must be a whole number of at least 1, got 2.5"},
        {{{"max_internal_steps", INFINITY}}, "option 'max_internal_steps' must be a whole number of at least 1, got inf"},
    };
    for (const char* integ : {"dp45-projection", "dp45-joint"}) {
        for (const Bad& b : bad) {
            Spec s = testutil::chain_spec(2, "revolute", integ);
            for (const auto& kv : b.opts) s.options.extra[kv.first] = kv.second;
            INFO(integ << ": " << b.message);
            CHECK_THAT(testutil::error_of([&] { compile(s); }), Contains(std::string("options: ") + integ + " " + b.message));
        }
        Spec list = testutil::chain_spec(2, "revolute", integ);
        list.options.extra_lists["initial_step"] = {"dt"};
        CHECK_THAT(testutil::error_of([&] { compile(list); }), Contains(std::string(integ) + " option 'initial_step' must be a number"));
        // The smallest rtol allowed, and initial_step 0 (the step's dt) equal to no initial_step: the
        // same trajectory bit for bit.
        Spec fine = testutil::chain_spec(2, "revolute", integ);
        fine.options.extra = {{"rtol", 1e-14}, {"atol", 1e-14}};
        CHECK(testutil::error_of([&] { compile(fine); }).empty());
        std::vector<double> ends[2];
        for (int k = 0; k < 2; ++k) {
            Spec s = testutil::chain_spec(2, "revolute", integ);
            if (k == 1) s.options.extra["initial_step"] = 0;
            Run run(compile(s));
            REQUIRE(run.steps(20));
            ends[k] = run.data().coord;
        }
        INFO(integ);
        CHECK(ends[0] == ends[1]);
    }
}

// rk4-joint and dp45-joint undo their own failed steps (Integrator::rolls_back_itself(): the kernel
// takes no snapshot for them). A host's edit the step restarted from, and internal steps accepted
// before the failure (dp45-joint), are undone: Data and the saved state as in a copy restored from
// the bytes saved before the step, and the next step of both the same bits.
TEST_CASE("rk4-joint and dp45-joint undo their own failed steps: Data and state as in a copy restored from before",
          "[joint-rk]") {
    for (const char* integ : {"rk4-joint", "dp45-joint"}) {
        INFO(integ);
        const bool dp45 = std::string(integ) == "dp45-joint";
        Spec s = testutil::chain_spec(3, "revolute", integ);
        if (dp45) s.options.extra["max_internal_steps"] = 50;
        auto m = compile(s);
        REQUIRE(m->integrator->rolls_back_itself());
        Data d(m);
        for (int i = 0; i < 5; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
        // The last link spun up by the host: rk4-joint's stages leave the finite range, dp45-joint
        // accepts internal steps until its cap.
        double coord[3], rate[3];
        for (int k = 0; k < 3; ++k) coord[k] = d.coord[k], rate[k] = d.rate[k];
        rate[2] = dp45 ? 2e3 : 1e160;
        set_joint_state(*m, d, coord, rate);
        Data ref(m);
        ref.restore(d.save());
        const std::int64_t internal = d.stats.internal_steps;
        CHECK(step(*m, d) == (dp45 ? StepStatus::not_converged : StepStatus::non_finite));
        CHECK(d.stats.internal_steps == internal);  // (a failed step's are not counted)
        CHECK(d.step == ref.step);
        for (int b = 0; b < m->nbodies(); ++b) {
            CHECK(std::memcmp(&d.pose[b], &ref.pose[b], sizeof(Pose)) == 0);
            CHECK(std::memcmp(&d.twist[b], &ref.twist[b], sizeof(Twist)) == 0);
        }
        CHECK(std::memcmp(d.coord.data(), ref.coord.data(), sizeof(double) * 3) == 0);
        CHECK(std::memcmp(d.rate.data(), ref.rate.data(), sizeof(double) * 3) == 0);
        std::string sd, sr;
        d.integrator_state->save(sd);
        ref.integrator_state->save(sr);
        CHECK(sd == sr);
        // Back to a gentle rate, in both: the same step.
        rate[2] = 3;
        set_joint_state(*m, d, coord, rate);
        set_joint_state(*m, ref, coord, rate);
        REQUIRE(step(*m, d) == StepStatus::ok);
        REQUIRE(step(*m, ref) == StepStatus::ok);
        for (int b = 0; b < m->nbodies(); ++b) CHECK(std::memcmp(&d.pose[b], &ref.pose[b], sizeof(Pose)) == 0);
    }
}

// Found by the saved-state fuzzer (tests/fuzz/fuzz_state.cpp): a restored dp45-joint state with a rate
// of 1e6 rad/s took ~1e5 internal steps a step (3 s for three steps), and the step-size floor of
// 1e-12 dt let a larger rate take up to ~1e12: a hang, for a host's edit as well. Both Dormand–Prince
// integrators now fail such a step as not converged after max_internal_steps internal steps
// (default 1e5), with the Data left as before the step.
TEST_CASE("dp45-projection and dp45-joint: a step that needs more than max_internal_steps internal steps fails",
          "[joint-rk][hardening]") {
    for (const char* integ : {"dp45-projection", "dp45-joint"}) {
        INFO(integ);
        Spec s = testutil::chain_spec(3, "revolute", integ);
        s.options.extra["max_internal_steps"] = 1000;
        auto m = compile(s);
        Data d(m);
        REQUIRE(step(*m, d) == StepStatus::ok);
        REQUIRE(d.stats.failed_steps == 0);
        // The last link spun up to 1e6 rad/s about its hinge by the host: restart from Data.
        double coord[3], rate[3];
        for (int k = 0; k < 3; ++k) coord[k] = d.coord[k], rate[k] = d.rate[k];
        rate[2] = 1e6;
        set_joint_state(*m, d, coord, rate);
        CHECK(step(*m, d) == StepStatus::not_converged);
        CHECK(d.step == 1);
        CHECK(d.stats.failed_steps == 1);
        // A gentle rate takes its few internal steps as before the option.
        rate[2] = 1;
        set_joint_state(*m, d, coord, rate);
        CHECK(step(*m, d) == StepStatus::ok);
        // The default allows 1e5: at 1e8 rad/s (100 times 1e6 rad/s, where 1e5 sufficed) the step fails there too, at once
        // (dp45-projection's may fail as non-finite first).
        Spec dflt = testutil::chain_spec(3, "revolute", integ);
        auto m2 = compile(dflt);
        Data e(m2);
        REQUIRE(step(*m2, e) == StepStatus::ok);
        rate[2] = 1e8;
        for (int k = 0; k < 3; ++k) coord[k] = e.coord[k];
        set_joint_state(*m2, e, coord, rate);
        CHECK(step(*m2, e) != StepStatus::ok);
        CHECK(e.step == 1);
    }
}

TEST_CASE("rk4-joint and dp45-joint: a restored step repeats bit for bit, a host's edit restarts from Data", "[joint-rk]") {
    for (const char* integ : {"rk4-joint", "dp45-joint"}) {
        Spec s = tree_spec(integ, 0.01);
        auto m = compile(s);
        Data d(m);
        start_moving(*m, d);
        for (int i = 0; i < 30; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
        CHECK(testutil::restore_replays(*m, d, 20));
        // The host sets the joint state: the next step starts there, as a fresh Data would.
        std::vector<double> q = d.coord, v = d.rate;
        q[dof(*m, "hA")] = 0.3;
        v[dof(*m, "hA")] = 0.0;
        set_joint_state(*m, d, q.data(), v.data());
        Data fresh(m);
        set_joint_state(*m, fresh, q.data(), v.data());
        REQUIRE(step(*m, d) == StepStatus::ok);
        REQUIRE(step(*m, fresh) == StepStatus::ok);
        INFO(integ);
        CHECK(max_diff(d.coord, fresh.coord) < 1e-12);
    }
}

TEST_CASE("integrators in joint coordinates write Data's coordinates and rates from the state they step", "[joint-rk][riqn]") {
    // The branched tree (its DOFs in joint order, the view's links parents first) with offsets on
    // two joints: the coordinates written are the stepped q (raw + offset), which the kernel's
    // recomputation from the poses (update_joint_coordinates, what every step did before) meets
    // to round-off; rk4-joint's, dp45-joint's and vi-galerkin's rates are their q̇ (vi-galerkin's
    // from the node momentum), riqn's the interval's (q_k − q_{k−1})/dt, as its twists are the
    // interval's.
    for (const char* integ : {"rk4-joint", "dp45-joint", "riqn", "vi-galerkin"}) {
        INFO(integ);
        Spec s = tree_spec(integ, 0.01);
        for (JointSpec& j : s.joints) {
            if (j.name == "hB") j.offset = {0.7};
            if (j.name == "sC") j.offset = {-0.25};
        }
        auto m = compile(s);
        Data d(m);
        start_moving(*m, d);
        std::vector<double> before;
        double rate_gap = 0;  // riqn: the interval's rate against the kernel's from the end poses
        for (int i = 0; i < 60; ++i) {
            inputs(*m, d);
            before = d.coord;
            REQUIRE(step(*m, d) == StepStatus::ok);
            std::vector<double> c = d.coord, v = d.rate;
            update_joint_coordinates(*m, d, d.twist.data());  // the kernel's, from the poses
            CHECK(max_diff(c, d.coord) < 1e-12);
            if (std::string(integ) != "riqn") {
                CHECK(max_diff(v, d.rate) < 1e-12);
            } else {
                for (int k = 0; k < m->total_dofs; ++k) {
                    CHECK(v[k] == Approx((c[k] - before[k]) / 0.01).margin(1e-10));
                    rate_gap = std::max(rate_gap, std::fabs(v[k] - d.rate[k]));
                }
            }
            d.coord = c, d.rate = v;  // (as the step left them: the next step's inputs)
        }
        // riqn's rates differ from the kernel's by more than round-off on this tree (a skew hinge
        // on a moving link): the assertion above tells the two apart.
        if (std::string(integ) == "riqn") CHECK(rate_gap > 1e-6);
    }
    // vi-galerkin on a closed loop: the closing hinge is no link of the view, so the kernel
    // computes every coordinate from the poses as before (the closure's angle moves: not stale).
    Spec s = testutil::closed_loop_spec("revolute");
    s.options.integrator = "vi-galerkin";
    auto m = compile(s);
    Data d(m);
    const std::vector<double> c0 = d.coord;
    for (int i = 0; i < 30; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        std::vector<double> c = d.coord, v = d.rate;
        update_joint_coordinates(*m, d, d.twist.data());
        CHECK(c == d.coord);
        CHECK(v == d.rate);
    }
    const int k = dof(*m, "closure");
    CHECK(std::fabs(d.coord[k] - c0[k]) > 0.01);
}
