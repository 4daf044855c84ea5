// The nine joint plugins (compound in four stacks): constraint Jacobians, coordinates and their Jacobians on the
// constraint manifold, actuation wrenches, hinge regularity, minimal descriptions, bad input.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>

#include "util.hpp"

using namespace noether;
using testutil::MatX;
using testutil::VecX;
using Catch::Matchers::Contains;

namespace {

const char* kTypes[] = {"fixed", "revolute", "prismatic", "spherical", "universal", "cylindrical", "planar", "point-on-line",
                        "compound:hh", "compound:hhh", "compound:sh", "compound:ssh", "compound:hh_apart"};

struct Case {
    JointSpec spec;
    Pose a0, b0;
    bool world = false;
    std::unique_ptr<JointModel> joint;
};

// A joint of `type` between random initial poses, attached at a random world anchor and axis.
Case make_case(const std::string& type, bool world, testutil::Rng& rng) {
    Case c;
    c.world = world;
    c.spec.name = "j_" + type;
    c.spec.type = type.rfind("compound:", 0) == 0 ? "compound" : type;
    c.a0 = world ? Pose{} : rng.pose(1);
    c.b0 = rng.pose(1);
    c.spec.anchor = rng.vec(0.5);
    const Vec3 axis = rng.unit();
    c.spec.axis = axis;
    if (type == "universal") {
        Vec3 e1, e2;
        orthonormal_basis(axis, e1, e2);
        c.spec.axis2 = e1;
    }
    if (c.spec.type == "compound") {
        // Motions in the child frame: hinges through the anchor (two at 63 degrees; three with
        // the middle one perpendicular to the others, the outer two at 70 degrees), or slides then
        // a hinge perpendicular to them (two slides at 80 degrees).
        const std::string stack = type.substr(9);
        Vec3 e1, e2;
        const Vec3 n = rng.unit();
        orthonormal_basis(n, e1, e2);
        std::vector<Vec3> axes;
        std::vector<double> kinds;
        const double d63 = 63 * M_PI / 180, d70 = 70 * M_PI / 180, d80 = 80 * M_PI / 180;
        if (stack == "hh" || stack == "hh_apart") axes = {n, std::cos(d63) * n + std::sin(d63) * e1}, kinds = {0, 0};
        if (stack == "hh_apart") c.spec.params["points"] = {0.1, -0.2, 0.3, 0.0, 0.05, -0.1};  // the ankle's two points
        if (stack == "hhh") axes = {std::cos(d70) * e2 + std::sin(d70) * e1, n, e2}, kinds = {0, 0, 0};
        if (stack == "sh") axes = {e1, n}, kinds = {1, 0};
        if (stack == "ssh") axes = {e1, std::cos(d80) * e1 + std::sin(d80) * e2, n}, kinds = {1, 1, 0};
        std::vector<double> flat;
        for (const Vec3& v : axes) flat.insert(flat.end(), {v.x, v.y, v.z});
        c.spec.params["kinds"] = kinds;
        c.spec.params["axes"] = flat;
        c.spec.axis.reset();
    }
    auto cj = testutil::compile_joint(c.spec, world, c.a0, c.b0);
    INFO("compiling " << type << (cj.diags.empty() ? "" : ": " + cj.diags[0].str()));
    REQUIRE(cj.joint);
    c.joint = std::move(cj.joint);
    return c;
}

void eval(const JointModel& j, const Pose& a, const Pose& b, VecX& g, MatX* Ja, MatX* Jb) {
    g.resize(j.rows());
    if (Ja) Ja->resize(j.rows(), 6);
    if (Jb) Jb->resize(j.rows(), 6);
    j.constraint(a, b, g.data(), Ja ? Ja->data() : nullptr, Jb ? Jb->data() : nullptr);
}

// Apply a 6-vector motion [dx; dθ] to a pose.
Pose move(const Pose& p, const VecX& xi, double s) {
    return {p.x + s * Vec3{xi[0], xi[1], xi[2]}, oplus(p.q, s * Vec3{xi[3], xi[4], xi[5]})};
}

// Bring b back onto the constraint manifold (min-norm Gauss–Newton on b's six coordinates).
Pose project(const JointModel& j, const Pose& a, Pose b) {
    VecX g;
    MatX Jb;
    for (int it = 0; it < 50; ++it) {
        eval(j, a, b, g, nullptr, &Jb);
        if (g.norm() < 1e-14) break;
        const VecX step = Jb.completeOrthogonalDecomposition().solve(g);
        b = move(b, -step, 1.0);
    }
    return b;
}

// A tangent direction of b (null space of Jb), random.
VecX tangent(const JointModel& j, const Pose& a, const Pose& b, testutil::Rng& rng) {
    VecX g;
    MatX Jb;
    eval(j, a, b, g, nullptr, &Jb);
    VecX xi(6);
    for (int k = 0; k < 6; ++k) xi[k] = rng.uniform();
    if (j.rows() > 0) xi -= Jb.completeOrthogonalDecomposition().solve(Jb * xi);
    return xi;
}

// A random configuration on the manifold: a random rigid motion of the assembled pair, then a
// random walk of b along the joint's free directions.
void random_assembled(const Case& c, testutil::Rng& rng, Pose& a, Pose& b) {
    a = c.a0;
    b = c.b0;
    if (!c.world) {  // move both rigidly
        const Quat R = rng.quat();
        const Vec3 t = rng.vec();
        a = {rotate(R, c.a0.x) + t, R * c.a0.q};
        b = {rotate(R, c.b0.x) + t, R * c.b0.q};
    }
    for (int k = 0; k < 10; ++k) {
        b = move(b, tangent(*c.joint, a, b, rng), 0.08);
        b = project(*c.joint, a, b);
    }
}

}  // namespace

TEST_CASE("every joint is assembled at its initial configuration", "[joints]") {
    testutil::Rng rng(10);
    for (const char* type : kTypes)
        for (bool world : {false, true}) {
            Case c = make_case(type, world, rng);
            VecX g;
            eval(*c.joint, c.a0, c.b0, g, nullptr, nullptr);
            INFO(type << (world ? " (world parent)" : ""));
            CHECK(g.lpNorm<Eigen::Infinity>() < 1e-12);
            std::vector<double> q(c.joint->dofs() + 1);
            c.joint->coordinates(c.a0, c.b0, nullptr, q.data());
            for (int k = 0; k < c.joint->dofs(); ++k) CHECK(std::fabs(q[k]) < 1e-12);
        }
}

TEST_CASE("joint constraint Jacobians match central differences", "[joints]") {
    testutil::Rng rng(11);
    const double h = 1e-6;
    for (const char* type : kTypes)
        for (bool world : {false, true}) {
            Case c = make_case(type, world, rng);
            double worst = 0;
            for (int trial = 0; trial < 8; ++trial) {
                const Pose a = world ? Pose{} : rng.pose(), b = rng.pose();
                VecX g, gp, gm;
                MatX Ja, Jb;
                eval(*c.joint, a, b, g, world ? nullptr : &Ja, &Jb);
                const int m = c.joint->rows();
                MatX Fa(m, 6), Fb(m, 6);
                for (int k = 0; k < 6; ++k) {
                    eval(*c.joint, a, testutil::perturb(b, k, h), gp, nullptr, nullptr);
                    eval(*c.joint, a, testutil::perturb(b, k, -h), gm, nullptr, nullptr);
                    Fb.col(k) = (gp - gm) / (2 * h);
                    if (!world) {
                        eval(*c.joint, testutil::perturb(a, k, h), b, gp, nullptr, nullptr);
                        eval(*c.joint, testutil::perturb(a, k, -h), b, gm, nullptr, nullptr);
                        Fa.col(k) = (gp - gm) / (2 * h);
                    }
                }
                worst = std::max(worst, testutil::rel_err(Jb, Fb));
                if (!world) worst = std::max(worst, testutil::rel_err(Ja, Fa));
            }
            INFO(type << (world ? " (world parent)" : "") << ": worst relative error " << worst);
            CHECK(worst < 1e-6);
        }
}

// vi-maximal takes g from the call that also makes the Jacobians for the Newton matrix, and from a
// value-only call for trial iterates: the two must agree bit for bit, or its iterations would
// depend on which call gave the residual.
TEST_CASE("a joint's constraint value is the same bit for bit with or without its Jacobians", "[joints]") {
    testutil::Rng rng(17);
    for (const char* type : kTypes)
        for (bool world : {false, true}) {
            Case c = make_case(type, world, rng);
            int differing = 0;
            for (int trial = 0; trial < 8; ++trial) {
                Pose a = world ? Pose{} : rng.pose(), b = rng.pose();
                if (trial % 2 == 0) random_assembled(c, rng, a, b);  // near closure too, where rows are round-off
                VecX g0, g1, g2;
                MatX Ja, Jb;
                eval(*c.joint, a, b, g0, nullptr, nullptr);
                eval(*c.joint, a, b, g1, world ? nullptr : &Ja, &Jb);
                eval(*c.joint, a, b, g2, nullptr, &Jb);
                for (int r = 0; r < c.joint->rows(); ++r)
                    if (std::memcmp(&g0[r], &g1[r], sizeof(double)) != 0 || std::memcmp(&g0[r], &g2[r], sizeof(double)) != 0)
                        ++differing;
            }
            INFO(type << (world ? " (world parent)" : ""));
            CHECK(differing == 0);
        }
}

TEST_CASE("a joint's coordinate_state gives its coordinates and coordinate Jacobian bit for bit", "[joints]") {
    // The kernel fills Data::coord and Data::rate after every step by coordinate_state(); a joint
    // type that shares the work there (revolute: hinge_angle_state) must give what coordinates()
    // (with and without the unwrapping reference) and coordinate_jacobian() give.
    testutil::Rng rng(23);
    for (const char* type : kTypes)
        for (bool world : {false, true}) {
            Case c = make_case(type, world, rng);
            const int n = c.joint->dofs();
            if (n == 0) continue;
            int differing = 0;
            for (int trial = 0; trial < 8; ++trial) {
                Pose a = world ? Pose{} : rng.pose(), b = rng.pose();
                if (trial % 2 == 0) random_assembled(c, rng, a, b);
                std::vector<double> prev(n);
                for (double& x : prev) x = 20 * rng.uniform();  // several turns away: the unwrapping
                for (const double* pv : {static_cast<const double*>(nullptr), static_cast<const double*>(prev.data())}) {
                    std::vector<double> c0(n), c1(n, -1), Ca0(6 * n), Cb0(6 * n), Ca1(6 * n, -1), Cb1(6 * n, -1);
                    c.joint->coordinates(a, b, pv, c0.data());
                    c.joint->coordinate_jacobian(a, b, world ? nullptr : Ca0.data(), Cb0.data());
                    c.joint->coordinate_state(a, b, pv, c1.data(), world ? nullptr : Ca1.data(), Cb1.data());
                    differing += std::memcmp(c0.data(), c1.data(), sizeof(double) * n) != 0;
                    differing += std::memcmp(Cb0.data(), Cb1.data(), sizeof(double) * 6 * n) != 0;
                    if (!world) differing += std::memcmp(Ca0.data(), Ca1.data(), sizeof(double) * 6 * n) != 0;
                }
            }
            INFO(type << (world ? " (world parent)" : ""));
            CHECK(differing == 0);
        }
}

TEST_CASE("coordinate rates match finite differences of coordinates along the joint's motion", "[joints]") {
    testutil::Rng rng(12);
    const double h = 1e-5;
    for (const char* type : kTypes)
        for (bool world : {false, true}) {
            Case c = make_case(type, world, rng);
            const int n = c.joint->dofs();
            if (n == 0) continue;
            double worst = 0;
            for (int trial = 0; trial < 6; ++trial) {
                Pose a, b;
                random_assembled(c, rng, a, b);
                MatX Ca(n, 6), Cb(n, 6);
                c.joint->coordinate_jacobian(a, b, world ? nullptr : Ca.data(), Cb.data());
                VecX c0(n), cp(n), cm(n);
                c.joint->coordinates(a, b, nullptr, c0.data());
                // Move b along a free direction.
                const VecX xb = tangent(*c.joint, a, b, rng);
                c.joint->coordinates(a, move(b, xb, h), c0.data(), cp.data());
                c.joint->coordinates(a, move(b, xb, -h), c0.data(), cm.data());
                worst = std::max(worst, (Cb * xb - (cp - cm) / (2 * h)).norm() / std::max(1.0, (Cb * xb).norm()));
                if (!world) {  // move a along a free direction of a (joint seen from b)
                    VecX xa(6);
                    for (int k = 0; k < 6; ++k) xa[k] = rng.uniform();
                    VecX g;
                    MatX Ja;
                    eval(*c.joint, a, b, g, &Ja, nullptr);
                    if (c.joint->rows()) xa -= Ja.completeOrthogonalDecomposition().solve(Ja * xa);
                    c.joint->coordinates(move(a, xa, h), b, c0.data(), cp.data());
                    c.joint->coordinates(move(a, xa, -h), b, c0.data(), cm.data());
                    worst = std::max(worst, (Ca * xa - (cp - cm) / (2 * h)).norm() / std::max(1.0, (Ca * xa).norm()));
                }
            }
            INFO(type << (world ? " (world parent)" : "") << ": worst relative rate error " << worst);
            CHECK(worst < 1e-6);
        }
}

TEST_CASE("actuation: the wrench pair has zero net force and moment, and power = u * rate", "[joints]") {
    testutil::Rng rng(13);
    for (const char* type : kTypes) {
        Case c = make_case(type, false, rng);
        const int n = c.joint->dofs();
        if (n == 0) continue;
        double worst_f = 0, worst_m = 0, worst_p = 0;
        for (int trial = 0; trial < 6; ++trial) {
            Pose a, b;
            random_assembled(c, rng, a, b);
            MatX Ca(n, 6), Cb(n, 6);
            c.joint->coordinate_jacobian(a, b, Ca.data(), Cb.data());
            VecX u(n);
            for (int k = 0; k < n; ++k) u[k] = rng.uniform(-5, 5);
            const VecX wa = Ca.transpose() * u, wb = Cb.transpose() * u;  // [force world; torque body]
            const Vec3 Fa{wa[0], wa[1], wa[2]}, Fb{wb[0], wb[1], wb[2]};
            const Vec3 Ta = rotate(a.q, Vec3{wa[3], wa[4], wa[5]}), Tb = rotate(b.q, Vec3{wb[3], wb[4], wb[5]});
            const Vec3 p = rng.vec(3);
            const Vec3 net_f = Fa + Fb;
            const Vec3 net_m = cross(a.x - p, Fa) + Ta + cross(b.x - p, Fb) + Tb;
            const double scale = u.norm() * (1 + norm(a.x - p) + norm(b.x - p));
            worst_f = std::max(worst_f, norm(net_f) / scale);
            worst_m = std::max(worst_m, norm(net_m) / scale);
            // Power of the wrenches over an admissible motion equals u · ċ.
            VecX ta(6), tb = tangent(*c.joint, a, b, rng);
            ta.setZero();
            const double power = wa.dot(ta) + wb.dot(tb);
            const double urate = u.dot(Ca * ta + Cb * tb);
            worst_p = std::max(worst_p, std::fabs(power - urate) / std::max(1.0, std::fabs(urate)));
        }
        INFO(type << ": net force " << worst_f << ", net moment " << worst_m << ", power mismatch " << worst_p);
        CHECK(worst_f < 1e-12);
        CHECK(worst_m < 1e-9);
        CHECK(worst_p < 1e-12);
    }
}

TEST_CASE("revolute angle is continuous over several turns and prismatic displacement matches geometry", "[joints]") {
    JointSpec s;
    s.name = "hinge";
    s.type = "revolute";
    s.anchor = Vec3{0.3, -0.2, 0.1};
    s.axis = normalized(Vec3{1, 2, 2});
    const Pose a0{{0, 0, 0}, quat_from_axis_angle({0, 0, 1}, 0.4)}, b0{{1, 0.5, 0}, Quat{}};
    auto cj = testutil::compile_joint(s, false, a0, b0);
    REQUIRE(cj.joint);
    for (double dir : {1.0, -1.0}) {
        double prev = 0;
        for (double th = 0; th < 4.5 * M_PI; th += 0.3) {
            const Quat R = quat_from_axis_angle(*s.axis, dir * th);
            const Pose b{*s.anchor + rotate(R, b0.x - *s.anchor), R * b0.q};
            double c = 0;
            cj.joint->coordinates(a0, b, &prev, &c);
            REQUIRE(c == Approx(dir * th).margin(1e-10));
            prev = c;
        }
    }
    JointSpec p;
    p.name = "slider";
    p.type = "prismatic";
    p.axis = Vec3{0, 0, 2};
    auto pj = testutil::compile_joint(p, true, Pose{}, b0);
    REQUIRE(pj.joint);
    for (double d : {-0.7, 0.0, 0.25, 3.0}) {
        double c = 0;
        pj.joint->coordinates(Pose{}, {b0.x + Vec3{0, 0, d}, b0.q}, nullptr, &c);
        CHECK(c == Approx(d).margin(1e-14));
    }
}

TEST_CASE("revolute rotational rows keep full rank at 0, 90, 180 and 270 degrees", "[joints]") {
    JointSpec s;
    s.name = "hinge";
    s.type = "revolute";
    s.anchor = Vec3{0, 0, 0};
    s.axis = Vec3{0, 1, 0};
    const Pose a0{}, b0{{0.5, 0, 0}, Quat{}};
    auto cj = testutil::compile_joint(s, true, a0, b0);
    REQUIRE(cj.joint);
    for (double deg : {0.0, 90.0, 180.0, 270.0}) {
        const Quat R = quat_from_axis_angle({0, 1, 0}, deg * M_PI / 180);
        const Pose b{rotate(R, b0.x), R};
        VecX g;
        MatX Jb;
        eval(*cj.joint, a0, b, g, nullptr, &Jb);
        const Eigen::MatrixXd rot = Jb.block(3, 3, 2, 3);
        const auto sv = Eigen::JacobiSVD<Eigen::MatrixXd>(rot).singularValues();
        std::printf("revolute rotational rows at %5.1f deg: singular values %.6f %.6f\n", deg, sv[0], sv[1]);
        CHECK(sv[1] == Approx(0.5).margin(1e-12));
        CHECK(sv[0] == Approx(0.5).margin(1e-12));
    }
}

TEST_CASE("minimal-coordinate description reproduces the maximal configuration", "[joints]") {
    testutil::Rng rng(14);
    for (const char* type : {"revolute", "prismatic"})
        for (bool world : {false, true}) {
            Case c = make_case(type, world, rng);
            MinimalJoint mj;
            REQUIRE(c.joint->minimal(&mj));
            for (double q : {-2.0, 0.3, 1.7}) {
                const Pose rel = minimal_transform(mj, q);
                const Pose b{c.a0.x + rotate(c.a0.q, rel.x), c.a0.q * rel.q};
                VecX g;
                eval(*c.joint, c.a0, b, g, nullptr, nullptr);
                double coord = 0;
                c.joint->coordinates(c.a0, b, nullptr, &coord);
                INFO(type << " at " << q);
                CHECK(g.lpNorm<Eigen::Infinity>() < 1e-12);
                CHECK(coord == Approx(q).margin(1e-12));
            }
        }
    // A ball joint: its centre and rest pose; a turn E about the centre keeps the points together
    // and reads back as the coordinates rotvec(E).
    for (bool world : {false, true}) {
        Case s = make_case("spherical", world, rng);
        MinimalJoint mj;
        REQUIRE(s.joint->minimal(&mj));
        CHECK(mj.kind == MinimalJoint::Kind::spherical);
        for (int k = 0; k < 3; ++k) {
            const Vec3 rv = k == 0 ? Vec3{} : rng.unit() * rng.uniform(0.2, 3.0);
            const Quat E = quat_from_rotvec(rv);
            const Pose rel{mj.point + rotate(E, mj.rest.x - mj.point), E * mj.rest.q};
            const Pose b{s.a0.x + rotate(s.a0.q, rel.x), s.a0.q * rel.q};
            VecX g;
            eval(*s.joint, s.a0, b, g, nullptr, nullptr);
            double c[3];
            s.joint->coordinates(s.a0, b, nullptr, c);
            CHECK(g.lpNorm<Eigen::Infinity>() < 1e-12);
            for (int i = 0; i < 3; ++i) CHECK(c[i] == Approx(rv[i]).margin(1e-12));
        }
    }
    Case u = make_case("universal", false, rng);
    MinimalJoint mj;
    CHECK_FALSE(u.joint->minimal(&mj));
}

TEST_CASE("bad joint parameters give errors naming the joint", "[joints]") {
    auto spec = [](const char* type) {
        JointSpec s;
        s.name = "bad";
        s.type = type;
        s.origin = {"rig.lua", 12, ""};
        return s;
    };
    const Pose a0{}, b0{{1, 0, 0}, Quat{}};
    for (const char* type : {"revolute", "prismatic", "cylindrical", "planar", "point-on-line", "universal"}) {
        JointSpec s = spec(type);
        s.axis = Vec3{0, 0, 0};
        s.axis2 = Vec3{0, 1, 0};
        auto cj = testutil::compile_joint(s, true, a0, b0);
        REQUIRE_FALSE(cj.joint);
        REQUIRE(!cj.diags.empty());
        CHECK_THAT(cj.diags[0].str(), Contains("rig.lua:12: joint 'bad': field 'axis' must be a nonzero finite direction"));
    }
    JointSpec u = spec("universal");
    u.axis = Vec3{1, 0, 0};
    u.axis2 = Vec3{1, 1, 0};
    auto uj = testutil::compile_joint(u, true, a0, b0);
    REQUIRE_FALSE(uj.joint);
    CHECK_THAT(uj.diags[0].str(), Contains("joint 'bad': axes must be perpendicular at assembly, they are 45 degrees apart"));
    JointSpec v = spec("universal");
    v.axis = Vec3{1, 0, 0};
    auto vj = testutil::compile_joint(v, true, a0, b0);
    REQUIRE_FALSE(vj.joint);
    CHECK_THAT(vj.diags[0].str(), Contains("joint 'bad': field 'axis2' (or 'child_axis') is required"));
    // Unknown fields are refused by compile() with the accepted list.
    Spec sc = testutil::chain_spec(1, "spherical");
    sc.joints[0].params["stiffnes"] = {1};
    try {
        compile(sc);
        FAIL("accepted");
    } catch (const ModelError& e) {
        CHECK_THAT(e.what(), Contains("joint 'j1': unknown parameter 'stiffnes' for type 'spherical'"));
    }
    // Both attachment styles at once.
    JointSpec w = spec("spherical");
    w.anchor = Vec3{0, 0, 0};
    w.parent_anchor = Vec3{0, 0, 0};
    auto wj = testutil::compile_joint(w, true, a0, b0);
    REQUIRE_FALSE(wj.joint);
    CHECK_THAT(wj.diags[0].str(), Contains("give either 'anchor'"));
}

TEST_CASE("body-frame attachment equals the world-style attachment", "[joints]") {
    testutil::Rng rng(15);
    const Pose a0 = rng.pose(), b0 = rng.pose();
    const Vec3 anchor = rng.vec(), axis = rng.unit();
    JointSpec w;
    w.name = "w";
    w.type = "revolute";
    w.anchor = anchor;
    w.axis = axis;
    JointSpec b = w;
    b.anchor.reset();
    b.axis.reset();
    b.parent_anchor = rotate_inv(a0.q, anchor - a0.x);
    b.child_anchor = rotate_inv(b0.q, anchor - b0.x);
    b.parent_axis = rotate_inv(a0.q, axis);
    auto jw = testutil::compile_joint(w, false, a0, b0), jb = testutil::compile_joint(b, false, a0, b0);
    REQUIRE(jw.joint);
    REQUIRE(jb.joint);
    const Pose a = rng.pose(), bb = rng.pose();
    VecX g1, g2;
    eval(*jw.joint, a, bb, g1, nullptr, nullptr);
    eval(*jb.joint, a, bb, g2, nullptr, nullptr);
    CHECK((g1 - g2).norm() < 1e-12);
}
