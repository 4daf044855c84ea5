// The assembly solve (kernel/src/assemble.cpp): bodies moved to the nearest configuration that
// satisfies every joint.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;

namespace {

// The loop of recipe 9 with its closing joint in body style (anchors in each body's frame), so
// that it means the same wherever the bodies start: the far end of L3 on the line along y
// through (2, 0, −1).
Spec body_style_loop() {
    Spec s = testutil::closed_loop_spec("point-on-line");
    JointSpec& c = s.joints.back();
    c.anchor.reset();
    c.axis.reset();
    c.parent_anchor = Vec3{2, 0, -1};
    c.parent_axis = Vec3{0, 1, 0};
    c.child_anchor = Vec3{0.5, 0, 0};
    return s;
}

}  // namespace

TEST_CASE("assemble closes an opened loop and then the model runs with joints at tolerance", "[assemble]") {
    Spec s = body_style_loop();
    // Open the loop: move the last link 0.2 m away and turn it a little.
    s.bodies[2].position = s.bodies[2].position + Vec3{0.2, 0, 0.1};
    s.bodies[2].orientation = quat_from_axis_angle({0, 1, 0}, 0.3);
    {
        auto m0 = compile(s);
        Data d0(m0);
        CHECK(monitors(*m0, d0).max_violation > 0.05);  // really open
    }
    const AssemblyReport r = assemble(s);
    REQUIRE(r.converged);
    CHECK(r.initial_violation > 0.05);
    CHECK(r.final_violation < 1e-12);
    CHECK(r.largest_move > 0.05);
    auto m = compile(s);
    Data d(m);
    CHECK(monitors(*m, d).max_violation < 1e-12);
    for (int i = 0; i < 200; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
    CHECK(monitors(*m, d).max_violation < 1e-10);
}

TEST_CASE("an assembled model is left alone, an impossible one is reported, not faked", "[assemble]") {
    Spec s = body_style_loop();
    const Vec3 before = s.bodies[1].position;
    const AssemblyReport ok = assemble(s);
    REQUIRE(ok.converged);
    CHECK(ok.largest_move < 1e-12);
    CHECK(norm(s.bodies[1].position - before) < 1e-12);
    // Two joints that cannot both hold: the bob 1 m from the origin (a hinge there) and also
    // pinned by a ball joint at 3 m from the origin.
    Spec bad;
    bad.options.integrator = "vi-maximal";
    BodySpec& b = bad.add_body("bob");
    b.mass = 1;
    b.inertia = Mat3::diag(0.1, 0.1, 0.1);
    b.position = {1, 0, 0};
    JointSpec& h = bad.add_joint("hinge", "revolute", "world", "bob");
    h.anchor = Vec3{0, 0, 0};
    h.axis = Vec3{0, 1, 0};
    JointSpec& p = bad.add_joint("pin", "spherical", "world", "bob");
    p.parent_anchor = Vec3{3, 0, 0};  // body style: the bob's centre at (3, 0, 0)
    p.child_anchor = Vec3{0, 0, 0};
    const AssemblyReport r = assemble(bad);
    CHECK_FALSE(r.converged);
    CHECK(r.final_violation > 0.1);
}

namespace {

// n links of 0.1 m along x, each on a hinge about y to the one before (the first to the world);
// anchors and axes in each body's frame, so that moving a body opens its joints.
Spec hinge_chain(int n) {
    Spec s;
    s.gravity = {0, 0, -9.81};
    for (int i = 0; i < n; ++i) {
        BodySpec& b = s.add_body("l" + std::to_string(i));
        b.mass = 1;
        b.inertia = Mat3::diag(1e-3, 1e-3, 1e-3);
        b.position = {0.1 * i + 0.05, 0, 0};
    }
    for (int i = 0; i < n; ++i) {
        JointSpec& j = s.add_joint("j" + std::to_string(i), "revolute", i ? "l" + std::to_string(i - 1) : "world",
                                   "l" + std::to_string(i));
        j.parent_anchor = i ? Vec3{0.05, 0, 0} : Vec3{0, 0, 0};
        j.child_anchor = Vec3{-0.05, 0, 0};
        j.parent_axis = j.child_axis = Vec3{0, 1, 0};
    }
    return s;
}

long max_rss_kb() {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

}  // namespace

// Issue 31 item 4: assemble() built a dense Jacobian (rows x 6 bodies: 5,000 links 5.9 GB), so a
// 20,000-link URDF aborted on bad_alloc. Above 100 bodies it is sparse now.
TEST_CASE("assemble is linear in memory on a long chain and closes it when it is open", "[assemble]") {
    const int n = 3000;  // dense: 15,000 x 18,000 doubles = 2.2 GB
    Spec s = hinge_chain(n);
    // Open every joint a little: each body shifted and turned.
    for (int i = 0; i < n; ++i) {
        s.bodies[i].position = s.bodies[i].position + Vec3{0, 1e-3 * ((i % 7) - 3), 1e-3 * ((i % 5) - 2)};
        s.bodies[i].orientation = quat_from_axis_angle({0, 0, 1}, 1e-3 * ((i % 3) - 1));
    }
    const long before = max_rss_kb();
    const AssemblyReport r = assemble(s);
    const long grown_mb = (max_rss_kb() - before) / 1024;
    INFO("peak resident memory grew by " << grown_mb << " MB");
    CHECK(grown_mb < 300);
    REQUIRE(r.converged);
    CHECK(r.initial_violation > 1e-3);
    CHECK(r.final_violation <= 1e-12);
    auto m = compile(s);
    Data d(m);
    CHECK(monitors(*m, d).max_violation <= 1e-12);
}

TEST_CASE("assemble's sparse path closes loops with redundant rows like the dense one", "[assemble]") {
    // 120 hinges in a plane closing back onto the world with another hinge: a planar loop, whose
    // closure has rows that depend on the others (what the dense decomposition tolerates).
    for (int n : {40, 120}) {  // 40: dense path; 120: sparse path
        Spec s = hinge_chain(n);
        // The far end tied to a world point 0.05 m short of the stretched chain's end, and a little
        // below it: the chain must bend (a stretched one would be a singular loop).
        JointSpec& c = s.add_joint("close", "revolute", "world", "l" + std::to_string(n - 1));
        c.parent_anchor = Vec3{0.1 * n - 0.05, 0, -0.02};
        c.child_anchor = Vec3{0.05, 0, 0};
        c.parent_axis = c.child_axis = Vec3{0, 1, 0};
        const AssemblyReport r = assemble(s);
        INFO("n = " << n);
        REQUIRE(r.converged);
        CHECK(r.initial_violation > 0.01);
        CHECK(r.final_violation <= 1e-12);
        auto m = compile(s);
        Data d(m);
        CHECK(monitors(*m, d).max_violation <= 1e-12);
    }
}
