// Servo actuators (issue 35, docs/servos.md): a rod on a hinge without gravity under a position
// servo, I θ̈ = −kp (θ − θ*) − kv θ̇, against the analytic second-order response; the order of
// each variational integrator; stiff servos at any dt; the effort limit; velocity servos; inputs
// changed between steps; bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "util.hpp"

using namespace noether;

namespace {

constexpr double kI = 1.0 / 3.0 + 0.05 * 0.05 / 12.0;  // the rod about its hinge

// The hinged rod of tests/util.hpp (I = kI about the hinge), no gravity, with a servo.
Spec rod(const char* integrator, double dt, const ServoSpec& servo) {
    Spec s = testutil::hinged_rod_spec(integrator, dt, 0.0);
    s.joints[0].servo = servo;
    return s;
}

ServoSpec position(double kp, double kv, double target) {
    ServoSpec s;
    s.kind = ServoSpec::Kind::position;
    s.kp = kp, s.kv = kv, s.target = target;
    return s;
}

// θ(t) of I θ̈ = −kp (θ − θ*) − kv θ̇ from rest at 0 (underdamped).
double response(double kp, double kv, double target, double t) {
    const double w0 = std::sqrt(kp / kI), zeta = kv / (2 * std::sqrt(kp * kI));
    const double wd = w0 * std::sqrt(1 - zeta * zeta), a = zeta * w0;
    return target * (1 - std::exp(-a * t) * (std::cos(wd * t) + a / wd * std::sin(wd * t)));
}

const char* const kVIs[] = {"vi-maximal", "vi-midpoint", "riqn", "vi-galerkin"};

// Largest |θ − θ_exact| over [0, T] at steps of dt.
double worst_error(const char* integrator, double dt, double T, double kp, double kv, double target) {
    auto m = compile(rod(integrator, dt, position(kp, kv, target)));
    Data d(m);
    const int n = static_cast<int>(std::lround(T / dt));
    double worst = 0;
    for (int i = 0; i < n; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        worst = std::max(worst, std::fabs(d.coord[0] - response(kp, kv, target, d.time)));
    }
    return worst;
}

}  // namespace

TEST_CASE("position servo: a 0.5 rad setpoint step follows the analytic response at dt 0.005, every VI", "[servos]") {
    // ω0 = 5.5 rad/s, ζ = 0.27: three visible overshoots in 3 s. vi-maximal is first order: its
    // start gives the first interval the whole impulse of the node, a lag of dt/2 (4.7e-3 rad at
    // dt 0.005); it meets 1e-3 at dt 0.001.
    for (const char* integrator : kVIs) {
        const bool first_order = std::string(integrator) == "vi-maximal";
        const double e = worst_error(integrator, 0.005, 3.0, 10.0, 1.0, 0.5);
        INFO(integrator << ": largest error " << e << " rad at dt 0.005");
        CHECK(e < (first_order ? 6e-3 : 1e-3));
        if (first_order) {
            const double e1 = worst_error(integrator, 0.001, 3.0, 10.0, 1.0, 0.5);
            INFO(integrator << ": largest error " << e1 << " rad at dt 0.001");
            CHECK(e1 < 1e-3);
        }
    }
}

TEST_CASE("position servo: each VI converges at its order", "[servos]") {
    // The largest error over 2 s against the analytic response at three dt (halving).
    struct Case {
        const char* integrator;
        double dt, order;
    };
    // vi-galerkin (s = 2 by default: order 4) is at the round-off floor below dt 0.01.
    for (const Case& c : {Case{"vi-maximal", 0.01, 1.0}, Case{"vi-midpoint", 0.01, 2.0}, Case{"riqn", 0.01, 2.0},
                          Case{"vi-galerkin", 0.08, 4.0}}) {
        double e[3];
        for (int k = 0; k < 3; ++k) e[k] = worst_error(c.integrator, c.dt / (1 << k), 2.0, 10.0, 1.0, 0.5);
        const double o1 = std::log2(e[0] / e[1]), o2 = std::log2(e[1] / e[2]);
        INFO(c.integrator << ": errors " << e[0] << ", " << e[1] << ", " << e[2] << "; observed orders " << o1 << ", " << o2);
        CHECK(o1 == Approx(c.order).margin(0.3));
        CHECK(o2 == Approx(c.order).margin(0.3));
    }
}

TEST_CASE("position servo: stiff and heavily damped servos stay stable and never add energy", "[servos]") {
    // The energy E = ½ I θ̇² + ½ kp (θ − θ*)² starts at ½ kp θ*² (the setpoint's work) and may only
    // fall. kv·dt/I from 0.1 to 1000 at ω0·dt up to 3, and ω0·dt = 30 damped at least critically
    // (kv·dt/I ≥ 2 ω0·dt): an undamped midpoint spring at ω0·dt ≫ 1 keeps its energy but rings at
    // the step frequency, as every symplectic method does. vi-galerkin (order 4) is stable to
    // ω0·dt = 3, where its node energy swings by up to 27 % about its conserved one (the
    // discrete energy of a symplectic map differs from E by O((ω0 dt)^4)); it is not taken to 30.
    struct Case {
        double damp, wdt;
    };
    for (const char* integrator : kVIs) {
        const bool galerkin = std::string(integrator) == "vi-galerkin";
        for (const Case& c : {Case{0.1, 0.1}, Case{0.1, 1}, Case{0.1, 3}, Case{10, 0.1}, Case{10, 3}, Case{1000, 0.1},
                              Case{1000, 3}, Case{60, 30}, Case{1000, 30}}) {
            if (galerkin && c.wdt > 3) continue;
            const double dt = 0.01, kv = c.damp * kI / dt, kp = kI * (c.wdt / dt) * (c.wdt / dt), target = 0.1;
            auto m = compile(rod(integrator, dt, position(kp, kv, target)));
            Data d(m);
            const double E0 = 0.5 * kp * target * target;
            double worst = 0;
            for (int i = 0; i < 400; ++i) {
                INFO(integrator << ", kv dt/I = " << c.damp << ", omega dt = " << c.wdt << ", step " << i);
                REQUIRE(step(*m, d) == StepStatus::ok);
                // vi-maximal, vi-midpoint, riqn: the spring at the middle of the interval that ended
                // (the rate is the interval's); vi-galerkin: at the node (the rate is the node's)
                const double x = d.coord[0] - (galerkin ? 0.0 : 0.5 * dt * d.rate[0]) - target;
                const double E = 0.5 * kI * d.rate[0] * d.rate[0] + 0.5 * kp * x * x;
                worst = std::max(worst, E / E0);
            }
            INFO(integrator << ", kv dt/I = " << c.damp << ", omega dt = " << c.wdt << ": largest E/E0 " << worst
                            << ", final angle " << d.coord[0]);
            CHECK(worst < (galerkin && c.wdt > 1 ? 1.3 : 1.0 + 1e-6));
            // Settled (the overdamped cases crawl: kv/kp is their time constant).
            if (kv / kp < 0.5) CHECK(std::fabs(d.coord[0] - target) < 0.01);
        }
    }
}

TEST_CASE("effort limit: a saturated servo applies its limit as a constant torque", "[servos]") {
    // kp 1000 towards 1 rad with a 1 N m limit: θ = t²/(2I) while the servo asks for more.
    for (const char* integrator : {"vi-maximal", "vi-midpoint", "riqn", "vi-galerkin", "rk4"}) {
        ServoSpec s = position(1000, 10, 1.0);
        s.effort_limit = 1.0;
        auto m = compile(rod(integrator, 0.002, s));
        Data d(m);
        for (int i = 0; i < 250; ++i) REQUIRE(step(*m, d) == StepStatus::ok);  // 0.5 s: θ = 0.375, u = 625 - 10 θ̇
        const double exact = 0.5 * d.time * d.time / kI;
        INFO(integrator << ": angle " << d.coord[0] << " against " << exact);
        CHECK(d.coord[0] == Approx(exact).epsilon(5e-3));
        CHECK(d.rate[0] == Approx(d.time / kI).epsilon(5e-3));
    }
}

TEST_CASE("velocity servo: the rate settles on the target at the servo's time constant", "[servos]") {
    // I ω̇ = kv (ω* − ω): ω = ω* (1 − exp(−kv t / I)).
    for (const char* integrator : {"vi-maximal", "vi-midpoint", "riqn", "vi-galerkin", "rk4"}) {
        ServoSpec s;
        s.kind = ServoSpec::Kind::velocity;
        s.kv = 2, s.target_velocity = 3;
        auto m = compile(rod(integrator, 0.001, s));
        Data d(m);
        for (int i = 0; i < 200; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
        // the variational integrators report the rate of the last interval: at its middle
        const bool vi = std::string(integrator) != "rk4";
        const double t = vi ? d.time - 0.0005 : d.time;
        const double exact = 3 * (1 - std::exp(-2 * t / kI));
        INFO(integrator << ": rate " << d.rate[0] << " against " << exact);
        CHECK(d.rate[0] == Approx(exact).epsilon(2e-3));
    }
}

TEST_CASE("servo inputs change between steps: a moving setpoint is tracked, every VI", "[servos]") {
    // θ* = 0.3 sin(2t), θ̇* its rate; stiff gains track it closely.
    for (const char* integrator : kVIs) {
        auto m = compile(rod(integrator, 0.005, position(400, 40, 0)));
        Data d(m);
        double worst = 0;
        for (int i = 0; i < 600; ++i) {
            const double t = d.time + 0.005;
            d.target_position[0] = 0.3 * std::sin(2 * t);
            d.target_velocity[0] = 0.6 * std::cos(2 * t);
            REQUIRE(step(*m, d) == StepStatus::ok);
            if (d.time > 1) worst = std::max(worst, std::fabs(d.coord[0] - d.target_position[0]));
        }
        INFO(integrator << ": tracking error " << worst);
        CHECK(worst < 5e-3);
        CHECK(worst > 1e-5);  // a real servo lags a little; the test would see a teleport
    }
}

TEST_CASE("servos: bad declarations and inputs are refused, naming the joint", "[servos]") {
    auto compile_error = [](const Spec& s) {
        try {
            compile(s);
        } catch (const ModelError& e) {
            return std::string(e.what());
        }
        return std::string("compiled");
    };
    CHECK_THAT(compile_error(rod("vi-maximal", 0.01, position(-1, 0, 0))),
               Catch::Contains("joint 'hinge': position servo: kp must be positive and finite, got -1"));
    CHECK_THAT(compile_error(rod("vi-maximal", 0.01, position(1, -2, 0))),
               Catch::Contains("kv must be non-negative and finite, got -2"));
    CHECK_THAT(compile_error(rod("vi-maximal", 0.01, position(1, 0, NAN))), Catch::Contains("target must be finite"));
    ServoSpec v;
    v.kind = ServoSpec::Kind::velocity;
    v.kv = 1, v.kp = 3;
    CHECK_THAT(compile_error(rod("vi-maximal", 0.01, v)), Catch::Contains("velocity servo: has no kp"));
    ServoSpec lim = position(1, 0, 0);
    lim.effort_limit = 0;
    CHECK_THAT(compile_error(rod("vi-maximal", 0.01, lim)), Catch::Contains("effort_limit must be positive"));
    Spec ball = rod("vi-maximal", 0.01, position(1, 0, 0));
    ball.joints[0].type = "spherical";
    ball.joints[0].axis.reset();
    CHECK_THAT(compile_error(ball), Catch::Contains("servos drive joints of one degree of freedom"));

    auto m = compile(rod("riqn", 0.01, position(10, 1, 0.5)));
    Data d(m);
    REQUIRE(step(*m, d) == StepStatus::ok);
    const std::string before = d.save();
    d.servo_kp[0] = -5;
    CHECK_THROWS_WITH(step(*m, d), Catch::Contains("joint 'hinge': position servo kp must be non-negative"));
    d.servo_kp[0] = 10;
    d.target_position[0] = INFINITY;
    CHECK_THROWS_WITH(step(*m, d), Catch::Contains("target must be finite, got inf"));
    d.target_position[0] = 0.5;
    CHECK(d.save() == before);  // the refused steps moved nothing
}

TEST_CASE("servos: a default target holds the initial pose, save and restore carry the inputs", "[servos]") {
    // Under gravity a position servo with the default target holds the rod near horizontal.
    ServoSpec s;
    s.kind = ServoSpec::Kind::position;
    s.kp = 2000, s.kv = 50;
    Spec spec = rod("vi-maximal", 0.005, s);
    spec.gravity = {0, 0, -9.81};
    auto m = compile(spec);
    CHECK(m->joints[0].servo_target == 0.0);
    Data d(m);
    for (int i = 0; i < 400; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
    // static sag: kp θ = m g L/2 about y (gravity pulls the tip down: positive rotation about y)
    CHECK(d.coord[0] == Approx(9.81 * 0.5 / 2000).epsilon(0.02));
    d.target_position[0] = 0.2;
    d.servo_kv[0] = 60;
    const std::string saved = d.save();
    Data e(m);
    e.restore(saved);
    CHECK(e.target_position[0] == 0.2);
    CHECK(e.servo_kv[0] == 60);
    for (int i = 0; i < 10; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        REQUIRE(step(*m, e) == StepStatus::ok);
    }
    CHECK(d.coord[0] == e.coord[0]);
}

TEST_CASE("servos under heun and rk4: one warning says they are explicit there and names the VIs", "[servos]") {
    for (const char* integrator : {"heun", "rk4"}) {
        auto m = compile(rod(integrator, 0.005, position(10, 1, 0.5)));
        std::string all;
        for (const Diagnostic& w : m->warnings) all += w.message + "\n";
        INFO(all);
        CHECK_THAT(all, Catch::Contains(std::string("joint 'hinge': ") + integrator + " applies servos explicitly"));
        CHECK_THAT(all, Catch::Contains("vi-maximal, vi-midpoint, riqn and vi-galerkin integrate servos inside the step"));
    }
    auto m = compile(rod("vi-maximal", 0.005, position(10, 1, 0.5)));
    CHECK(m->warnings.empty());
}
