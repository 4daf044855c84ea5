// The out-of-tree helical joint, loaded from NOETHER_PLUGIN_PATH: registered, analytic
// Jacobians, and a screw falling under gravity against its closed-form motion.
#include <catch2/catch.hpp>

#include "tree_util.hpp"
#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;
using testutil::MatX;
using testutil::VecX;

TEST_CASE("the helical example is loaded from NOETHER_PLUGIN_PATH", "[helical]") {
    const PluginInfo* p = Registry::global().find(PluginKind::joint, "helical");
    REQUIRE(p);
    CHECK_THAT(p->path, Contains("helical/build/helical_joint.so"));
    CHECK(Registry::global().errors().empty());
}

TEST_CASE("helical constraint Jacobians match central differences", "[helical]") {
    testutil::Rng rng(31);
    for (bool world : {false, true}) {
        JointSpec s;
        s.name = "screw";
        s.type = "helical";
        s.anchor = rng.vec(0.5);
        s.axis = rng.unit();
        s.params["pitch"] = {0.05};
        const Pose a0 = world ? Pose{} : rng.pose(), b0 = rng.pose();
        auto cj = testutil::compile_joint(s, world, a0, b0);
        REQUIRE(cj.joint);
        REQUIRE(cj.joint->rows() == 5);
        double worst = 0;
        for (int trial = 0; trial < 6; ++trial) {
            // Near the assembled configuration (the screw row unwraps next to the solution).
            const Pose a = world ? Pose{} : testutil::perturb(testutil::perturb(a0, 1, 0.1), 4, 0.2);
            const Pose b = testutil::perturb(testutil::perturb(b0, trial % 6, 0.15), (trial + 3) % 6, -0.1);
            VecX g(5), gp(5), gm(5);
            MatX Ja(5, 6), Jb(5, 6), Fa(5, 6), Fb(5, 6);
            cj.joint->constraint(a, b, g.data(), world ? nullptr : Ja.data(), Jb.data());
            const double h = 1e-6;
            for (int k = 0; k < 6; ++k) {
                cj.joint->constraint(a, testutil::perturb(b, k, h), gp.data(), nullptr, nullptr);
                cj.joint->constraint(a, testutil::perturb(b, k, -h), gm.data(), nullptr, nullptr);
                Fb.col(k) = (gp - gm) / (2 * h);
                if (!world) {
                    cj.joint->constraint(testutil::perturb(a, k, h), b, gp.data(), nullptr, nullptr);
                    cj.joint->constraint(testutil::perturb(a, k, -h), b, gm.data(), nullptr, nullptr);
                    Fa.col(k) = (gp - gm) / (2 * h);
                }
            }
            worst = std::max(worst, testutil::rel_err(Jb, Fb));
            if (!world) worst = std::max(worst, testutil::rel_err(Ja, Fa));
        }
        INFO("worst relative error " << worst);
        CHECK(worst < 1e-6);
    }
}

TEST_CASE("a screw falling under gravity follows (m p^2 + I) theta'' = -m g p", "[helical]") {
    // In maximal coordinates (first order) and through the tree view in joint coordinates (riqn,
    // second order: exact for this constant acceleration up to the Newton tolerance).
    const std::string integrator = GENERATE(as<std::string>{}, "vi-maximal", "riqn");
    const double m = 2.0, I = 0.05, p = 0.1, g = 9.81;
    Spec s;
    s.options.integrator = integrator;
    s.options.dt = 1e-3;
    BodySpec& b = s.add_body("nut");
    b.mass = m;
    b.inertia = Mat3::diag(0.2, 0.2, I);
    JointSpec& j = s.add_joint("screw", "helical", "world", "nut");
    j.anchor = Vec3{0, 0, 0};
    j.axis = Vec3{0, 0, 1};
    j.params["pitch"] = {p};
    auto model = compile(s);
    REQUIRE(model->dof() == 1);
    Data d(model);
    double vmax = 0;
    for (int i = 0; i < 1000; ++i) {
        REQUIRE(step(*model, d) == StepStatus::ok);
        vmax = std::max(vmax, monitors(*model, d).max_violation);
    }
    const double theta_exact = -0.5 * m * g * p / (m * p * p + I) * 1.0;
    INFO(integrator << ": theta(1 s) = " << d.coord[0] << ", exact " << theta_exact << ", z = " << d.pose[0].x.z);
    CHECK(d.coord[0] == Approx(theta_exact).epsilon(integrator == "riqn" ? 1e-8 : 5e-3));
    CHECK(d.pose[0].x.z == Approx(p * d.coord[0]).epsilon(1e-9));
    CHECK(vmax < 1e-10);
    // Several turns: the coordinate keeps counting through ±pi.
    CHECK(std::fabs(d.coord[0]) > 2 * M_PI);
}

TEST_CASE("helical without a pitch is an error naming the joint", "[helical]") {
    Spec s;
    s.options.integrator = "none";
    s.add_body("nut");
    JointSpec& j = s.add_joint("screw", "helical", "world", "nut");
    j.axis = Vec3{0, 0, 1};
    try {
        compile(s);
        FAIL("accepted");
    } catch (const ModelError& e) {
        CHECK_THAT(e.what(), Contains("joint 'screw': parameter 'pitch' (translation per radian, m/rad) is required"));
    }
}

TEST_CASE("a helical link's transform multiplied out equals exp(A q) M (tree view)", "[helical]") {
    Spec s;
    s.options.integrator = "none";
    BodySpec& b = s.add_body("nut");
    b.mass = 1;
    b.inertia = Mat3::diag(0.2, 0.2, 0.05);
    b.position = {0.3, -0.2, 0.4};
    b.orientation = testutil::Rng(5).quat();
    JointSpec& j = s.add_joint("screw", "helical", "world", "nut");
    j.anchor = Vec3{0.1, 0.2, 0.3};
    j.axis = Vec3{0.3, -0.5, 0.8};
    j.params["pitch"] = {0.1};
    auto m = compile(s);
    const TreeView t = testutil::view_of(*m);
    REQUIRE(t.size() == 1);
    CHECK(t.links[0].turns);
    CHECK(norm(t.links[0].pq) > 0.01);  // the pitch: q (ω · v) ω
    CHECK(testutil::screw_transform_error(t.links[0]) < 1e-14);
}
