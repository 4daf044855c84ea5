// heun, rk4 and dp45-projection: convergence orders, energy and constraint drift of the
// explicit baselines, paper 003's models under dp45-projection, agreement of every integrator.
#include <catch2/catch.hpp>
#include <cstdio>

#include "../scenes/scene_util.hpp"
#include "noether/run.hpp"
#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;

namespace {

std::shared_ptr<const Model> with(Spec s, const char* integrator, double dt) {
    s.options.integrator = integrator;
    s.options.dt = dt;
    return compile(s);
}

Vec3 tip_at(const Spec& s, const char* integrator, double dt, double T) {
    auto m = with(s, integrator, dt);
    Data d(m);
    for (int i = 0, n = static_cast<int>(std::lround(T / dt)); i < n; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
    return d.pose[1].x;
}

double slope(const std::vector<double>& h, const std::vector<double>& e) {
    return std::log(e.front() / e.back()) / std::log(h.front() / h.back());
}

}  // namespace

TEST_CASE("heun and rk4 converge at orders 2 and 4 on the double pendulum", "[explicit]") {
    const Spec s = testutil::double_pendulum_spec();
    const Vec3 ref = tip_at(s, "rk4", 1e-4, 1.0);
    const std::vector<double> hs = {0.02, 0.01, 0.005};
    for (const auto& [integ, order] : {std::pair<const char*, double>{"heun", 2.0}, {"rk4", 4.0}}) {
        std::vector<double> err;
        for (double h : hs) err.push_back(norm(tip_at(s, integ, h, 1.0) - ref));
        std::printf("%s: errors %.3e %.3e %.3e, slope %.3f\n", integ, err[0], err[1], err[2], slope(hs, err));
        CHECK(slope(hs, err) == Approx(order).margin(0.3));
    }
}

TEST_CASE("dp45-projection: the local error of one step is fifth order (O(h^6))", "[explicit][dp45]") {
    Spec s = testutil::double_pendulum_spec();
    s.options.tolerance = 1e-14;  // projection far below the local errors measured
    s.options.extra = {{"atol", 1.0}, {"rtol", 1.0}};  // accept every step as proposed
    // Reference: rk4 at a tiny step from the same state.
    std::vector<double> hs = {0.08, 0.04, 0.02}, err;
    for (double h : hs) {
        s.options.extra["initial_step"] = h;
        const Vec3 x = tip_at(s, "dp45-projection", h, h);
        Spec r = s;
        r.options.extra.clear();
        const Vec3 ref = tip_at(r, "rk4", h / 400, h);
        err.push_back(norm(x - ref));
    }
    std::printf("dp45 local errors %.3e %.3e %.3e, slope %.3f\n", err[0], err[1], err[2], slope(hs, err));
    CHECK(slope(hs, err) == Approx(6.0).margin(0.5));
}

TEST_CASE("explicit baselines: heun's energy drifts where vi-maximal's stays bounded (paper 000 Fig. 4a)", "[explicit]") {
    const Spec s = testutil::double_pendulum_spec();
    for (const char* integ : {"heun", "vi-maximal"}) {
        auto m = with(s, integ, 0.01);
        Data d(m);
        double first = 0, last = 0;
        for (int i = 0; i < 6000; ++i) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            const double E = monitors(*m, d).total;
            if (i < 600) first += E / 600;
            if (i >= 5400) last += E / 600;
        }
        std::printf("%s: mean energy over the first / last 6 s of 60 s: %.4f / %.4f J\n", integ, first, last);
        if (std::string(integ) == "heun") CHECK(std::fabs(last - first) > 0.5);  // drifts
        else CHECK(std::fabs(last - first) < 0.05);                           // bounded, no drift
    }
}

TEST_CASE("explicit baselines drift off a closed loop, the variational and projected ones do not (Fig. 4b)", "[explicit]") {
    const Spec s = testutil::closed_loop_spec("point-on-line");
    for (const char* integ : {"heun", "rk4", "vi-maximal", "vi-midpoint", "dp45-projection"}) {
        auto m = with(s, integ, 0.01);
        Data d(m);
        double vmax = 0;
        for (int i = 0; i < 1000; ++i) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            vmax = std::max(vmax, monitors(*m, d).max_violation);
        }
        std::printf("%s: largest constraint violation over 10 s: %.3g\n", integ, vmax);
        const std::string n = integ;
        if (n == "heun" || n == "rk4") CHECK(vmax > 1e-8);
        else CHECK(vmax < 1e-9);
    }
}

TEST_CASE("all integrators converge to the same trajectory at small steps", "[explicit]") {
    const Spec s = testutil::double_pendulum_spec();
    Spec tight = s;
    tight.options.extra = {{"atol", 1e-11}, {"rtol", 1e-11}};
    const Vec3 ref = tip_at(tight, "dp45-projection", 0.05, 1.0);
    struct Case { const char* integ; double dt, tol; };
    for (const Case& c : {Case{"rk4", 1e-3, 1e-8}, Case{"vi-midpoint", 1e-3, 5e-5}, Case{"heun", 1e-3, 2e-4},
                          Case{"vi-maximal", 1e-4, 2e-3}}) {
        const double e = norm(tip_at(s, c.integ, c.dt, 1.0) - ref);
        INFO(c.integ << " at dt " << c.dt << ": distance " << e);
        CHECK(e < c.tol);
    }
}

TEST_CASE("dp45-projection on paper 003's models: constraints at Newton tolerance, energy invariant, step counts", "[explicit][dp45][slow]") {
    struct Model3 { const char* scene; const char* coord; double torque; int paper_steps; };
    for (const Model3& mc : {Model3{"pendulum_3d", nullptr, 0, 164}, Model3{"planar_quadrangle", "ground_1.coord", -1200, 1300},
                             Model3{"crank_mechanism", "hinge.coord", -50, 2086}}) {
        double mismatch[2] = {0, 0};
        for (int inv = 0; inv < 2; ++inv) {
            const std::string csv = scenes::out_path(std::string("dp45_") + mc.scene + ".csv");
            const auto r = scenes::run(scenes::example(mc.scene), {{"integrator", "dp45-projection"}, {"dt", "0.01"},
                                                                   {"invariant", inv ? "true" : "false"}, {"csv", csv}});
            INFO(mc.scene << (inv ? " with" : " without") << " the energy invariant: " << r.error);
            REQUIRE(r.exit_code == 0);
            CHECK(r.worlds[0].max_violation < 1e-9);
            const auto c = scenes::read_csv(csv);
            const auto E = c.column("energy");
            std::vector<double> q = mc.coord ? c.column(mc.coord) : std::vector<double>(E.size(), 0.0);
            for (std::size_t i = 0; i < E.size(); ++i)
                mismatch[inv] = std::max(mismatch[inv], std::fabs(E[i] - E[0] - mc.torque * (q[i] - q[0])));
        }
        std::printf("dp45 %s: largest |E - E0 - W|: %.3g J without, %.3g J with the energy invariant\n", mc.scene,
                    mismatch[0], mismatch[1]);
        CHECK(mismatch[1] < 1e-3 * std::max(1.0, mismatch[0]));
        CHECK(mismatch[0] > 100 * mismatch[1]);  // without the invariant the energy drifts
    }
    // Accepted step counts for the paper's tolerances over 10 s, against Tables 8-10 (the same order).
    for (const Model3& mc : {Model3{"pendulum_3d", nullptr, 0, 164}, Model3{"planar_quadrangle", nullptr, 0, 1300},
                             Model3{"crank_mechanism", nullptr, 0, 2086}}) {
        const auto r = scenes::run(scenes::example(mc.scene), {{"integrator", "dp45-projection"}, {"dt", "1"}});
        REQUIRE(r.exit_code == 0);
        const long long steps = r.worlds[0].internal_steps;
        std::printf("dp45 %s: %lld accepted (%lld rejected) steps; paper %d\n", mc.scene, steps,
                    r.worlds[0].rejected_steps, mc.paper_steps);
        CHECK(steps > mc.paper_steps / 3);
        CHECK(steps < mc.paper_steps * 3);
    }
}

TEST_CASE("integrator options are validated with clear errors", "[explicit]") {
    Spec s = testutil::double_pendulum_spec();
    s.options.integrator = "rk4";
    s.options.extra["atol"] = 1e-6;
    try {
        compile(s);
        FAIL("accepted");
    } catch (const ModelError& e) {
        CHECK_THAT(e.what(), Contains("options: 'atol' is not an option of integrator 'rk4' (its options: none)"));
    }
    s.options.integrator = "dp45-projection";
    s.options.extra["atol"] = -1;
    s.options.extra_lists["invariants"] = {"momentum"};
    try {
        compile(s);
        FAIL("accepted");
    } catch (const ModelError& e) {
        CHECK_THAT(e.what(), Contains("dp45-projection option 'atol' must be positive") &&
                                 Contains("unknown invariant 'momentum' (known: energy)"));
    }
    // A list where a number belongs and a number where the list belongs: errors, not dropped.
    for (const char* name : {"atol", "rtol", "fac_max", "initial_step"}) {
        Spec t = testutil::double_pendulum_spec();
        t.options.integrator = "dp45-projection";
        t.options.extra_lists[name] = {"tight"};
        CHECK_THROWS_WITH(compile(t), Contains(std::string("dp45-projection option '") + name + "' must be a number"));
    }
    Spec t = testutil::double_pendulum_spec();
    t.options.integrator = "dp45-projection";
    t.options.extra["invariants"] = 1;
    CHECK_THROWS_WITH(compile(t), Contains("dp45-projection option 'invariants' must be a list of names (known: energy)"));
}

TEST_CASE("the degrees of freedom reported do not depend on the integrator", "[explicit]") {
    // The planar four-bar of four hinges: 3 of the closing hinge's 5 rows are redundant in 3-D.
    long long dof_vi = -99;
    for (const char* integ : {"vi-maximal", "vi-midpoint", "dp45-projection", "rk4", "heun"}) {
        INFO(integ);
        noether::Spec s = testutil::closed_loop_spec("revolute");
        s.options.integrator = integ;
        noether::Run run(noether::compile(s));
        REQUIRE(run.steps(20));
        const noether::RunSummary sum = run.summary();
        if (dof_vi == -99) dof_vi = sum.dof;
        CHECK(sum.dof == dof_vi);  // dp45/rk4/heun reported -2 for the same mechanism
        CHECK(sum.dof == 1);
    }
}
