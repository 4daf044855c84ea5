// The assembly solve (kernel/src/assemble.cpp): bodies moved to the nearest configuration that
// satisfies every joint.
#include <catch2/catch.hpp>

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
