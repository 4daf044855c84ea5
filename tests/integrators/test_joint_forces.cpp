// Implicit joint springs and dampers in vi-maximal and vi-midpoint (issue 15): dampers only
// remove energy at any d·dt/I, undamped springs keep it at any ω·dt, the order of accuracy is
// that of the method. The explicit forms these replace gained energy once d·dt/I > 2 (+55 J on
// the rod below at 3) and blew up once ω·dt > 2.
#include <catch2/catch.hpp>

#include <cmath>

#include "noether/run.hpp"
#include "util.hpp"

using namespace noether;

namespace {

// A 1 kg, 1 m rod hinged at one end about y (I = 1/3 kg m² about the hinge), released horizontal.
Spec rod(const char* integrator, double dt, double damping, double stiffness, double gravity) {
    Spec s = testutil::hinged_rod_spec(integrator, dt, gravity);
    JointSpec& j = s.joints[0];
    j.damping = {damping};
    j.stiffness = {stiffness};
    return s;
}

constexpr double kI = 1.0 / 3.0 + 0.05 * 0.05 / 12.0;  // about the hinge

}  // namespace

TEST_CASE("implicit dampers: the energy never rises, for damping·dt/inertia from 0.1 to 100", "[springs]") {
    for (const char* integrator : {"vi-maximal", "vi-midpoint"}) {
        for (double ratio : {0.1, 1.0, 3.0, 10.0, 100.0}) {
            const double dt = 0.01;
            auto m = compile(rod(integrator, dt, ratio * kI / dt, 0, 9.81));
            Data d(m);
            double last = monitors(*m, d).total, rise = 0;
            const double E0 = last;
            for (int i = 0; i < 300; ++i) {
                REQUIRE(step(*m, d) == StepStatus::ok);
                const double E = monitors(*m, d).total;
                rise = std::max(rise, E - last);
                last = E;
            }
            INFO(integrator << ", d dt/I = " << ratio << ": largest rise in one step " << rise << " J, E " << E0
                            << " -> " << last << " J, rate " << d.rate[0]);
            CHECK(rise < 1e-12);
            CHECK(last < E0);
            CHECK(std::fabs(d.rate[0]) < 10);  // the explicit damper spun the rod up
        }
    }
}

TEST_CASE("implicit springs: an undamped spring keeps its energy at any omega·dt", "[springs]") {
    // k = 3, I = 1/3: ω = 3 rad/s. No gravity: the energy is the spring's and the kinetic one.
    for (const char* integrator : {"vi-maximal", "vi-midpoint"}) {
        for (double wdt : {0.2, 2.0, 2.5, 6.0}) {
            const double dt = wdt / std::sqrt(3.0 / kI);
            Spec s = rod(integrator, dt, 0, 3.0, 0);
            // 0.2 rad/s about the hinge (the rotation guard |w| dt < 2 allows it at dt = 2 s)
            s.bodies[0].angular_velocity = {0, 0.2, 0};
            s.bodies[0].velocity = {0, 0, -0.1};
            auto m = compile(s);
            Data d(m);
            const double E0 = monitors(*m, d).total;
            double dev[2] = {0, 0};  // largest |E − E0| in the first and the second 2000 steps
            for (int i = 0; i < 4000; ++i) {
                REQUIRE(step(*m, d) == StepStatus::ok);
                dev[i / 2000] = std::max(dev[i / 2000], std::fabs(monitors(*m, d).total - E0));
            }
            // Bounded, not growing. The band is a few % except near ω dt = 2, where the discrete
            // motion has period 4 and beats (27 %, the same in every window of 20000 steps).
            INFO(integrator << ", omega dt = " << wdt << ": |E - E0| up to " << dev[0] << " then " << dev[1] << " (E0 " << E0
                            << ")");
            CHECK(dev[1] < 1.02 * dev[0] + 1e-12 * E0);
            // vi-midpoint's monitored energy (interval velocities, spring at the interval midpoint)
            // is not its conserved quantity: at ω dt ≥ 2 it swings by up to 90 %, bounded.
            CHECK(dev[1] < (std::string(integrator) == "vi-maximal" ? 0.5 : 0.95) * E0);
        }
    }
}

TEST_CASE("implicit springs under a Run: the whip guard stays off and the energy stays in its band", "[springs][watch]") {
    // The watch's energy test sees the band of a spring stiff against the step; the guard it turns
    // on (substeps as with max_turn = 0.1) would pump such a spring (docs/integrators.md). (riqn's
    // springs are sampled at the nodes, stable below ω dt = 2 only: not this test's subject.)
    for (const char* integrator : {"vi-maximal", "vi-midpoint"}) {
        for (double wdt : {0.2, 2.0, 6.0}) {
            Spec s = rod(integrator, wdt / std::sqrt(3.0 / kI), 0, 3.0, 0);
            s.bodies[0].angular_velocity = {0, 0.2, 0};
            s.bodies[0].velocity = {0, 0, -0.1};
            Run run(compile(s));
            const double E0 = run.summary().energy_initial;
            double dev = 0;
            for (int i = 0; i < 2000; ++i) {
                run.steps(1);
                dev = std::max(dev, std::fabs(monitors(run.model(), run.data()).total - E0));
            }
            std::string warnings;
            for (const std::string& w : run.summary().warnings) warnings += w + "\n";
            INFO(integrator << ", omega dt = " << wdt << ": |E - E0| up to " << dev << " of " << E0 << "; warnings:\n" << warnings);
            CHECK(run.data().turn_guard == 0);
            CHECK(dev < 0.95 * E0);
        }
    }
}

TEST_CASE("implicit springs and dampers keep the order of the method", "[springs]") {
    // A damped oscillator under gravity: the angle at t = 1 s against a run at dt/64.
    for (const char* integrator : {"vi-maximal", "vi-midpoint"}) {
        auto angle = [&](double dt) {
            auto m = compile(rod(integrator, dt, 0.4, 5.0, 9.81));
            Data d(m);
            const int n = static_cast<int>(std::lround(1.0 / dt));
            for (int i = 0; i < n; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
            return d.coord[0];
        };
        const double ref = angle(0.01 / 64);
        const double e1 = std::fabs(angle(0.01) - ref), e2 = std::fabs(angle(0.005) - ref);
        const double order = std::log2(e1 / e2);
        INFO(integrator << ": errors " << e1 << ", " << e2 << ", observed order " << order);
        if (std::string(integrator) == "vi-maximal") CHECK(order == Approx(1.0).margin(0.25));
        else CHECK(order == Approx(2.0).margin(0.25));
    }
}
