// compile(): one test per validation rule, each checking that the message names the element.
#include <catch2/catch.hpp>

#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;

namespace {

Spec two_links() {
    Spec s = testutil::chain_spec(2);
    s.bodies[0].origin = {"scene.lua", 3, ""};
    s.bodies[1].origin = {"scene.lua", 4, ""};
    s.joints[0].origin = {"scene.lua", 6, ""};
    s.joints[1].origin = {"scene.lua", 7, ""};
    return s;
}

// compile() must throw ModelError; return its message.
std::string error_of(const Spec& s) {
    try {
        compile(s);
    } catch (const ModelError& e) {
        return e.what();
    }
    FAIL("compile() accepted an invalid spec");
    return "";
}

}  // namespace

TEST_CASE("a valid spec compiles", "[compile]") {
    auto m = compile(two_links());
    REQUIRE(m->nbodies() == 2);
    REQUIRE(m->njoints() == 2);
    REQUIRE(m->total_rows == 10);
    REQUIRE(m->total_dofs == 2);
    REQUIRE(m->dof() == 2);
    REQUIRE(m->joints[1].row_offset == 5);
    REQUIRE(m->warnings.empty());
    REQUIRE(m->body_index("link2") == 1);
    REQUIRE(m->joint_index("nope") == -1);
}

TEST_CASE("duplicate names", "[compile]") {
    Spec s = two_links();
    s.bodies[1].name = "link1";
    s.joints[1].child = "link1";
    CHECK_THAT(error_of(s), Contains("scene.lua:4: body 'link1': duplicate name (first defined at scene.lua:3)"));
    Spec t = two_links();
    t.joints[1].name = "j1";
    CHECK_THAT(error_of(t), Contains("scene.lua:7: joint 'j1': duplicate name"));
}

TEST_CASE("unknown references", "[compile]") {
    Spec s = two_links();
    s.joints[1].parent = "link9";
    CHECK_THAT(error_of(s), Contains("scene.lua:7: joint 'j2': parent body 'link9' not found"));
    Spec t = two_links();
    t.joints[1].child = "ghost";
    CHECK_THAT(error_of(t), Contains("joint 'j2': child body 'ghost' not found"));
    Spec u = two_links();
    u.forces.push_back({"ghost", {1, 0, 0}, {}, false, {}, {"scene.lua", 9, ""}});
    CHECK_THAT(error_of(u), Contains("scene.lua:9: force: body 'ghost' not found"));
}

TEST_CASE("joint from a body to itself, and the world as child", "[compile]") {
    Spec s = two_links();
    s.joints[1].parent = "link2";
    CHECK_THAT(error_of(s), Contains("joint 'j2': joint from body 'link2' to itself"));
    Spec t = two_links();
    t.joints[1].child = "world";
    CHECK_THAT(error_of(t), Contains("joint 'j2': child must be a body, not the world"));
}

TEST_CASE("non-positive or non-finite mass", "[compile]") {
    for (double mass : {0.0, -2.0, std::nan("")}) {
        Spec s = two_links();
        s.bodies[0].mass = mass;
        CHECK_THAT(error_of(s), Contains("scene.lua:3: body 'link1': mass must be positive and finite, got"));
    }
}

TEST_CASE("inertia: non-symmetric and non-positive-definite are errors", "[compile]") {
    Spec s = two_links();
    s.bodies[0].inertia.m[0][1] = 0.01;
    CHECK_THAT(error_of(s), Contains("body 'link1': inertia must be symmetric"));
    Spec t = two_links();
    t.bodies[1].inertia = Mat3::diag(1, 1, -0.5);
    CHECK_THAT(error_of(t), Contains("body 'link2': inertia must be positive definite, smallest principal moment is -0.5"));
    Spec u = two_links();
    u.bodies[1].inertia = Mat3::diag(1, 0, 1);
    CHECK_THAT(error_of(u), Contains("inertia must be positive definite"));
}

TEST_CASE("inertia violating the triangle inequality is a warning", "[compile]") {
    Spec s = two_links();
    s.bodies[0].inertia = Mat3::diag(0.1, 0.1, 1.0);  // 0.1 + 0.1 < 1
    auto m = compile(s);
    REQUIRE(m->warnings.size() == 1);
    CHECK(m->warnings[0].severity == Severity::warning);
    CHECK_THAT(m->warnings[0].str(), Contains("scene.lua:3: warning: body 'link1': principal moments"));
    CHECK_THAT(m->warnings[0].str(), Contains("triangle inequality"));
}

TEST_CASE("rotated inertia is checked by its principal moments", "[compile]") {
    // A valid box inertia rotated into a non-diagonal tensor stays valid (no warning).
    Spec s = two_links();
    const Mat3 R = rotation(quat_from_axis_angle({1, 2, 3}, 0.7));
    s.bodies[0].inertia = R * testutil::box_inertia(1, 1, 0.1, 0.1) * transpose(R);
    auto m = compile(s);
    REQUIRE(m->warnings.empty());
}

TEST_CASE("zero or non-finite axis", "[compile]") {
    Spec s = two_links();
    s.joints[0].axis = Vec3{0, 0, 0};
    CHECK_THAT(error_of(s), Contains("scene.lua:6: joint 'j1': field 'axis' must be a nonzero finite direction, got (0, 0, 0)"));
    Spec t = two_links();
    t.joints[1].axis = Vec3{0, std::nan(""), 1};
    CHECK_THAT(error_of(t), Contains("joint 'j2': field 'axis' must be a nonzero finite direction"));
    Spec u = two_links();
    u.joints[1].axis.reset();
    CHECK_THAT(error_of(u), Contains("joint 'j2': field 'axis' (or 'parent_axis') is required for type 'revolute'"));
}

TEST_CASE("unknown joint type lists the known ones", "[compile]") {
    Spec s = two_links();
    s.joints[1].type = "hinge";
    const std::string e = error_of(s);
    CHECK_THAT(e, Contains("joint 'j2': unknown joint type 'hinge' (known types: "));
    CHECK_THAT(e, Contains("revolute"));
    CHECK_THAT(e, Contains("spherical"));
}

TEST_CASE("unknown integrator and solver list the known ones", "[compile]") {
    Spec s = two_links();
    s.options.integrator = "warp-drive";
    CHECK_THAT(error_of(s), Contains("unknown integrator 'warp-drive' (known integrators: "));
    Spec t = two_links();
    t.options.integrator = "none";
    t.options.solver = "magic";
    // Without an integrator no solver is resolved; with one, an unknown solver is an error.
    REQUIRE_NOTHROW(compile(t));
}

TEST_CASE("unknown type parameter and bad force-element sizes", "[compile]") {
    Spec s = two_links();
    s.joints[1].params["pitch"] = {0.1};
    CHECK_THAT(error_of(s), Contains("joint 'j2': unknown parameter 'pitch' for type 'revolute' (accepted: none)"));
    Spec t = two_links();
    t.joints[1].stiffness = {1, 2};
    CHECK_THAT(error_of(t), Contains("joint 'j2': field 'stiffness' needs 1 or 1 values (one per DOF), got 2"));
    Spec u = two_links();
    u.joints[1].damping = {-1};
    CHECK_THAT(error_of(u), Contains("joint 'j2': field 'damping' must be non-negative and finite, got -1"));
}

TEST_CASE("options are validated", "[compile]") {
    Spec s = two_links();
    s.options.dt = 0;
    CHECK_THAT(error_of(s), Contains("options: dt must be positive and finite, got 0"));
    Spec t = two_links();
    t.options.max_iterations = 0;
    CHECK_THAT(error_of(t), Contains("options: max_iterations must be at least 1, got 0"));
}

TEST_CASE("every error is reported, not just the first", "[compile]") {
    Spec s = two_links();
    s.bodies[0].mass = -1;
    s.joints[1].parent = "nowhere";
    s.bodies[1].position = {std::nan(""), 0, 0};
    ModelError err({});
    try {
        compile(s);
        FAIL("accepted");
    } catch (const ModelError& e) {
        err = e;
    }
    int errors = 0;
    for (const auto& d : err.diagnostics()) errors += d.severity == Severity::error;
    REQUIRE(errors == 3);
    CHECK_THAT(std::string(err.what()), Contains("mass") && Contains("nowhere") && Contains("position must be finite"));
}

TEST_CASE("a non-unit quaternion is normalised with a warning, a zero one is an error", "[compile]") {
    Spec s = two_links();
    s.bodies[0].orientation = {2, 0, 0, 0};
    auto m = compile(s);
    REQUIRE(m->warnings.size() == 1);
    CHECK_THAT(m->warnings[0].message, Contains("has norm 2; normalised"));
    REQUIRE(m->bodies[0].pose0.q.w == 1.0);
    Spec t = two_links();
    t.bodies[0].orientation = {0, 0, 0, 0};
    CHECK_THAT(error_of(t), Contains("body 'link1': orientation must be a nonzero finite quaternion"));
}

TEST_CASE("the 'world' name is reserved", "[compile]") {
    Spec s = two_links();
    s.bodies[0].name = "world";
    CHECK_THAT(error_of(s), Contains("the name 'world' is reserved"));
}
