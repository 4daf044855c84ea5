// Joint armature (an inertia on the joint coordinate, MuJoCo's armature): the pendulum's period
// with it, energy kept over long runs, momentum untouched, agreement with an independent
// integration of (M(q) + diag(a)) q̈ = −C q̇ − g by the queries and RK4, the queries' mass matrix,
// and the integrators that do not take it refusing it by name.
#include <catch2/catch.hpp>

#include <cmath>

#include "noether/noether.hpp"
#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;

namespace {

constexpr double kRodI = (1 + 0.05 * 0.05) / 12.0 + 0.25;  // the hinged rod about its hinge [kg m²]

// A double pendulum of two rods, both hinges with armature a; the second starts bent.
Spec double_pendulum_with_armature(const char* integrator, double dt, double a) {
    Spec s = testutil::chain_spec(2, "revolute", integrator);
    s.options.dt = dt;
    s.options.tolerance = 1e-12;
    for (JointSpec& j : s.joints) j.armature = {a};
    return s;
}

// Coordinates and rates of a tree of 1-DOF joints after `steps` steps from (q0, 0).
std::vector<double> run_from(const Spec& s, const std::vector<double>& q0, int steps) {
    auto m = compile(s);
    Data d(m);
    std::vector<double> z(q0.size(), 0.0);
    set_joint_state(*m, d, q0.data(), z.data());
    for (int i = 0; i < steps; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
    std::vector<double> out = d.coord;
    return out;
}

}  // namespace

TEST_CASE("armature: a hinged rod swings with the period of its inertia plus the armature", "[armature][vi-maximal]") {
    // Small oscillations: ω² = m g l_c / (I + a). With a = I the period grows by √2 exactly.
    for (const char* integ : {"vi-maximal", "vi-midpoint"}) {
        const double dt = 5e-4, a = kRodI;
        Spec s = testutil::hinged_rod_spec(integ, dt, 9.81);
        s.joints[0].armature = {a};
        const double w = std::sqrt(1 * 9.81 * 0.5 / (kRodI + a)), period = 2 * M_PI / w;
        // Hanging down: start 0.01 rad from the bottom, at rest.
        s.bodies[0].position = {0, 0, -0.5};
        s.bodies[0].orientation = quat_from_axis_angle({0, 1, 0}, M_PI / 2);
        auto m = compile(s);
        Data d(m);
        const double q0 = d.coord[0];
        std::vector<double> q{q0 + 0.01}, qd{0};
        set_joint_state(*m, d, q.data(), qd.data());
        const int n = static_cast<int>(std::lround(period / dt));
        double lowest = INFINITY;
        for (int i = 0; i < n; ++i) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            lowest = std::min(lowest, d.coord[0] - q0);
        }
        INFO(integ << ": after one period " << d.coord[0] - q0 << " (from 0.01), lowest " << lowest);
        CHECK(d.coord[0] - q0 == Approx(0.01).margin(2e-5));  // back after the armature's period
        CHECK(lowest == Approx(-0.01).margin(2e-5));
        // Without the armature the rod would be near −0.01·cos(2π/√2) = +0.0061 at that time: far off.
    }
}

TEST_CASE("armature: energy stays bounded over a long chaotic run and momentum is untouched", "[armature][vi-maximal]") {
    for (const char* integ : {"vi-maximal", "vi-midpoint"}) {
        Spec s = double_pendulum_with_armature(integ, 0.005, 0.2);
        auto m = compile(s);
        Data d(m);
        std::vector<double> q{0.3, 1.2}, qd{0, 0};
        set_joint_state(*m, d, q.data(), qd.data());
        const double e0 = m->integrator->monitors(*m, d).total;
        double dev_early = 0, dev_late = 0;
        const int n = 8000;  // 40 s
        for (int i = 0; i < n; ++i) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            const double dev = std::fabs(m->integrator->monitors(*m, d).total - e0);
            (i < n / 4 ? dev_early : dev_late) = std::max(i < n / 4 ? dev_early : dev_late, dev);
        }
        INFO(integ << ": energy deviation in the first 10 s " << dev_early << " J, in the last 30 s " << dev_late << " J");
        // The scale of the motion: about 15 J swing between kinetic and potential energy.
        CHECK(dev_late <= 1e-2);  // measured 2.3e-3 (vi-midpoint) and 2.6e-3 (vi-maximal) J in the first 10 s
        CHECK(dev_late <= 3 * dev_early + 1e-9);  // bounded: no drift
    }
    // Free in space, two bodies on a hinge with armature: the bodies' momenta are the system's
    // (the armature's kinetic energy depends only on the relative rate).
    Spec s;
    s.options.integrator = "vi-midpoint";
    s.options.dt = 0.01;
    s.gravity = {0, 0, 0};
    BodySpec& a = s.add_body("a");
    a.inertia = testutil::box_inertia(1, 1, 0.2, 0.1);
    a.position = {-0.5, 0, 0};
    a.velocity = {0.1, 0.2, 0};
    a.angular_velocity = {0, 1.5, 0.3};
    BodySpec& b = s.add_body("b");
    b.inertia = testutil::box_inertia(2, 1, 0.1, 0.3);
    b.mass = 2;
    b.position = {0.5, 0, 0};
    b.angular_velocity = {0.2, -2, 0};
    JointSpec& j = s.add_joint("hinge", "revolute", "a", "b");
    j.anchor = Vec3{0, 0, 0};
    j.axis = Vec3{0, 1, 0};
    j.armature = {0.3};
    auto m = compile(s);
    Data d(m);
    const Monitors m0 = m->integrator->monitors(*m, d);
    double dp = 0, dL = 0;
    for (int i = 0; i < 500; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        const Monitors mi = m->integrator->monitors(*m, d);
        dp = std::max(dp, norm(mi.momentum - m0.momentum));
        dL = std::max(dL, norm(mi.angular_momentum - m0.angular_momentum));
    }
    INFO("linear momentum change " << dp << ", angular " << dL);
    CHECK(dp <= 1e-12);
    CHECK(dL <= 1e-10);
}

TEST_CASE("armature: vi-midpoint agrees with RK4 on (M + diag(a)) q̈ = −C q̇ − g from the queries", "[armature][queries]") {
    // The reference integrates the joint-space equations with the queries' mass matrix (armature on
    // its diagonal) and bias forces, RK4 at h = 1e-4: independent of the maximal-coordinate step.
    const double a = 0.15, T = 1.0;
    Spec ref = double_pendulum_with_armature("none", 0.01, a);
    auto mr = compile(ref);
    Kinematics k(mr);
    std::vector<double> M(4);
    k.mass_matrix(std::vector<double>{0.3, 1.2}.data(), M.data());
    Spec plain = double_pendulum_with_armature("none", 0.01, 0);
    Kinematics k0(compile(plain));
    std::vector<double> M0(4);
    k0.mass_matrix(std::vector<double>{0.3, 1.2}.data(), M0.data());
    CHECK(M[0] - M0[0] == Approx(a).epsilon(1e-14));
    CHECK(M[3] - M0[3] == Approx(a).epsilon(1e-14));
    CHECK(M[1] == Approx(M0[1]).epsilon(1e-14));
    auto f = [&](const std::vector<double>& x, std::vector<double>& dx) {
        std::vector<double> tau{0, 0}, qdd(2);
        k.forward_dynamics(x.data(), x.data() + 2, tau.data(), qdd.data());
        dx = {x[2], x[3], qdd[0], qdd[1]};
    };
    std::vector<double> x{0.3, 1.2, 0, 0}, k1, k2, k3, k4, t(4);
    const double h = 1e-4;
    for (int i = 0; i < static_cast<int>(std::lround(T / h)); ++i) {
        f(x, k1);
        for (int c = 0; c < 4; ++c) t[c] = x[c] + 0.5 * h * k1[c];
        f(t, k2);
        for (int c = 0; c < 4; ++c) t[c] = x[c] + 0.5 * h * k2[c];
        f(t, k3);
        for (int c = 0; c < 4; ++c) t[c] = x[c] + h * k3[c];
        f(t, k4);
        for (int c = 0; c < 4; ++c) x[c] += h / 6 * (k1[c] + 2 * k2[c] + 2 * k3[c] + k4[c]);
    }
    double err[2];
    int k_ = 0;
    for (double dt : {2e-3, 1e-3}) {
        const std::vector<double> q = run_from(double_pendulum_with_armature("vi-midpoint", dt, a), {0.3, 1.2},
                                               static_cast<int>(std::lround(T / dt)));
        err[k_++] = std::max(std::fabs(q[0] - x[0]), std::fabs(q[1] - x[1]));
    }
    INFO("vi-midpoint against RK4 after 1 s: " << err[0] << " at dt 2e-3, " << err[1] << " at dt 1e-3");
    CHECK(err[1] <= 1e-5);  // measured 2.6e-6
    CHECK(err[0] / err[1] == Approx(4).margin(0.6));  // second order: the armature is inside the method
    // Without the armature the same run is far from the reference.
    const std::vector<double> q_plain = run_from(double_pendulum_with_armature("vi-midpoint", 1e-3, 0), {0.3, 1.2}, 1000);
    CHECK(std::max(std::fabs(q_plain[0] - x[0]), std::fabs(q_plain[1] - x[1])) > 100 * err[1]);
}

TEST_CASE("armature: bad values and integrators that do not take it are refused by name", "[armature]") {
    auto error_of = [](Spec s) {
        try {
            compile(s);
        } catch (const ModelError& e) {
            return std::string(e.what());
        }
        return std::string("compiled");
    };
    for (const char* integ : {"riqn", "vi-galerkin", "rk4", "heun", "dp45-projection"})
        CHECK_THAT(error_of(double_pendulum_with_armature(integ, 0.01, 0.1)),
                   Contains("joint 'j1': armature 0.1: integrator '" + std::string(integ) +
                            "' does not take joint armature yet (integrators that do: vi-maximal, vi-midpoint)"));
    CHECK_THAT(error_of(double_pendulum_with_armature("vi-maximal", 0.01, -1)), Contains("field 'armature' must be non-negative"));
    Spec sph = testutil::chain_spec(1, "spherical", "vi-maximal");
    sph.joints[0].armature = {0.1};
    CHECK_THAT(error_of(sph), Contains("field 'armature' does not apply to a spherical joint"));
}
