// Contacts, friction and joint limits on vi-maximal: the scenes of shared/design/contact-ip.md
// (CIP) §8 and §10.6 with their analytic or reference answers (docs/contact.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "util.hpp"

using namespace noether;
using testutil::box_inertia;

namespace {

constexpr double kG = 9.81;

struct Sim {
    std::shared_ptr<const Model> m;
    std::unique_ptr<Data> d;
    explicit Sim(const Spec& s) : m(compile(s)), d(std::make_unique<Data>(m)) {}
    void step() { REQUIRE(noether::step(*m, *d) == StepStatus::ok); }
    double energy() const { return m->integrator->monitors(*m, *d).total; }
};

// A 1 m cube of 1 kg with its 8 corners as contacts against the ground z = 0.
Spec cube(double z, Vec3 v0, double mu, Vec3 gravity = {0, 0, -kG}) {
    Spec s;
    s.gravity = gravity;
    BodySpec& b = s.add_body("box");
    b.mass = 1;
    b.inertia = box_inertia(1, 1, 1, 1);
    b.position = {0, 0, z};
    b.velocity = v0;
    ContactSpec c;
    c.body = "box";
    c.type = ContactSpec::Type::box;
    c.size = {1, 1, 1};
    c.mu = mu;
    s.contacts.push_back(c);
    return s;
}

// Gravity tilted by theta about y: the same as a plane tilted by theta.
Vec3 tilted(double theta) { return {-kG * std::sin(theta), 0, -kG * std::cos(theta)}; }

double sum_normal(const Data& d) {
    double s = 0;
    for (const ContactResult& c : d.contact) s += c.normal_force;
    return s;
}

// Largest difference between the first trajectory and each other one.
double largest_difference(const std::vector<double>* traj, int n) {
    double diff = 0;
    for (int k = 1; k < n; ++k)
        for (std::size_t i = 0; i < traj[0].size(); ++i) diff = std::max(diff, std::fabs(traj[0][i] - traj[k][i]));
    return diff;
}

}  // namespace

TEST_CASE("scene 1-2: a cube dropped 1 m comes to rest flat without penetrating, losing its kinetic energy", "[contact]") {
    Sim sim(cube(1.5, {}, 0.5));
    double min_gap = HUGE_VAL, e_prev = sim.energy(), max_rise = -HUGE_VAL;
    int impact = -1;
    for (int i = 0; i < 150; ++i) {
        sim.step();
        for (const ContactResult& c : sim.d->contact) min_gap = std::min(min_gap, c.gap);
        const double e = sim.energy();
        max_rise = std::max(max_rise, e - e_prev);
        e_prev = e;
        if (impact < 0 && sum_normal(*sim.d) > 0.1) impact = i + 1;
    }
    CHECK(min_gap >= -1e-9);
    CHECK(std::fabs(sim.d->pose[0].x.z - 0.5) <= 1e-9);  // resting gap
    CHECK(norm(sim.d->twist[0].v) < 1e-9);
    CHECK(norm(sim.d->twist[0].w) < 1e-9);
    CHECK(impact == 45);  // the 45th step (CIP §8 (a) counts from 0: "step 44")
    // Symmetric load: m g / 4 on each bottom corner, nothing on the top ones.
    CHECK(std::fabs(sum_normal(*sim.d) - kG) <= 1e-9 * kG);
    for (const ContactResult& c : sim.d->contact) {
        if (c.point.z < 0.5) CHECK(c.normal_force == Approx(kG / 4).margin(1e-8));
        else CHECK(c.normal_force < 1e-8);
    }
    CHECK(max_rise <= 1e-9);
    CHECK(sim.energy() == Approx(kG * 0.5).margin(1e-9));  // E_end = m g h_c (midpoint potential at rest)
}

TEST_CASE("scene 5: a cube sliding at 2 m/s stops at the discrete distance with the load shifted forward", "[contact]") {
    const double mu = 0.5, dt = 0.01, v0 = 2;
    Sim sim(cube(0.5, {v0, 0, 0}, mu));
    for (int i = 0; i < 10; ++i) sim.step();
    // While sliding: front corners (1 + μ) m g / 4, rear (1 − μ) m g / 4 (the friction moment),
    // every loaded corner on the cone's edge.
    for (const ContactResult& c : sim.d->contact) {
        const Vec3 p = c.point - sim.d->pose[0].x;
        if (p.z > 0) continue;
        CHECK(c.normal_force == Approx((p.x > 0 ? 1 + mu : 1 - mu) * kG / 4).margin(1e-9));
        CHECK(std::fabs(norm(c.friction) - mu * c.normal_force) <= 1e-9);
        CHECK(c.friction.x < 0);
    }
    // While sliding the gaps settle to the tolerance each step, so the vertical balance holds to
    // ~1e-9 relative (the reference: 9.8100002 N).
    CHECK(std::fabs(sum_normal(*sim.d) - kG) <= 1e-8 * kG);
    for (int i = 10; i < 100; ++i) sim.step();
    // The first-order VI's discrete answer: dt Σ_{i=1..40} (v0 − i μ g dt).
    double discrete = 0;
    for (int i = 1; i <= 40; ++i) discrete += dt * (v0 - i * mu * kG * dt);
    CHECK(sim.d->pose[0].x.x == Approx(discrete).margin(1e-12));
    CHECK(discrete == Approx(0.39779).margin(5e-6));
    CHECK(std::fabs(sim.d->pose[0].x.x - v0 * v0 / (2 * mu * kG)) < 0.05 * 0.40775);  // continuous, within 5 %
    CHECK(std::fabs(sim.d->pose[0].x.z - 0.5) < 1e-9);
    CHECK(norm(sim.d->twist[0].w) < 1e-9);  // no tipping
}

TEST_CASE("scene 5: the slide distance converges at order 1 to v0²/(2 μ g)", "[contact]") {
    double err[2];
    for (int k = 0; k < 2; ++k) {
        Spec s = cube(0.5, {2, 0, 0}, 0.5);
        s.options.dt = k == 0 ? 0.01 : 0.002;
        Sim sim(s);
        for (int i = 0; i < (k == 0 ? 60 : 300); ++i) sim.step();
        err[k] = std::fabs(sim.d->pose[0].x.x - 4 / (2 * 0.5 * kG));
    }
    CHECK(err[1] < 0.01 * 0.40775);
    CHECK(err[0] / err[1] == Approx(5).epsilon(0.1));  // dt / 5 → error / 5
}

TEST_CASE("scene 3: a cube on a slope shallower than atan(mu) sticks", "[contact]") {
    Sim sim(cube(0.5, {}, 0.5, tilted(0.35)));
    for (int i = 0; i < 100; ++i) sim.step();
    CHECK(std::fabs(sim.d->pose[0].x.x) < 1e-8);
    CHECK(norm(sim.d->twist[0].v) < 1e-8);
}

TEST_CASE("scene 4: a cube on a slope steeper than atan(mu) slides at g (sin - mu cos)", "[contact]") {
    const double th = 0.6, mu = 0.5, dt = 0.01;
    Sim sim(cube(0.5, {}, mu, tilted(th)));
    for (int i = 0; i < 100; ++i) sim.step();
    const double a = kG * (std::sin(th) - mu * std::cos(th));
    CHECK(std::fabs(-sim.d->twist[0].v.x - a) <= 1e-9 * a);
    double discrete = 0;  // x_n = dt Σ v_i, v_i = i a dt
    for (int i = 1; i <= 100; ++i) discrete += dt * i * a * dt;
    CHECK(-sim.d->pose[0].x.x == Approx(discrete).margin(1e-12));
}

TEST_CASE("scene 3 (frictionless): a cube on a frictionless slope slides at g sin", "[contact]") {
    Sim sim(cube(0.5, {}, 0, tilted(0.35)));
    for (int i = 0; i < 100; ++i) sim.step();
    CHECK(-sim.d->twist[0].v.x == Approx(kG * std::sin(0.35)).epsilon(1e-9));
    CHECK(std::fabs(sim.d->pose[0].x.z - 0.5) < 1e-9);
}

TEST_CASE("scene 6: an oblique slide keeps its heading exactly (circular cone)", "[contact]") {
    const double mu = 0.25, dt = 0.01;
    const Vec3 v0{4, 0.8, 0};
    Sim sim(cube(0.5, v0, mu));
    for (int i = 0; i < 200; ++i) sim.step();
    const Vec3 x = sim.d->pose[0].x;
    CHECK(std::fabs(std::atan2(x.y, x.x) - std::atan2(0.8, 4)) < 1e-9);
    const double s0 = norm(v0);
    double discrete = 0;
    for (int i = 1; s0 - i * mu * kG * dt > 0; ++i) discrete += dt * (s0 - i * mu * kG * dt);
    CHECK(std::hypot(x.x, x.y) == Approx(discrete).margin(1e-12));
    CHECK(discrete == Approx(3.37209).margin(5e-6));
}

namespace {

// A solid ball of 1 kg and radius r on the ground, gravity tilted by th (a slope).
Spec ball_on_slope(double th, double r, double mu, double dt) {
    Spec s;
    s.options.dt = dt;
    s.gravity = tilted(th);
    BodySpec& b = s.add_body("ball");
    b.mass = 1;
    b.inertia = Mat3::diag(0.4 * r * r, 0.4 * r * r, 0.4 * r * r);
    b.position = {0, 0, r};
    ContactSpec c;
    c.body = "ball";
    c.type = ContactSpec::Type::sphere;
    c.size = {r, 0, 0};
    c.mu = mu;
    s.contacts.push_back(c);
    return s;
}

}  // namespace

TEST_CASE("scene 7: a sphere on a slope rolls without slipping, or slides when mu is small", "[contact]") {
    const double th = 0.3, r = 0.2;
    for (double mu : {1.0, 0.05}) {
        Sim sim(ball_on_slope(th, r, mu, 0.01));
        for (int i = 0; i < 100; ++i) sim.step();
        const double v = -sim.d->twist[0].v.x;
        const double wr = -sim.d->twist[0].w.y * r;  // rolling down −x spins about −y
        INFO("mu " << mu << " v " << v << " w r " << wr);
        if (mu == 1.0) {
            CHECK(std::fabs(v - wr) < 1e-9);
            CHECK(v == Approx(5.0 / 7 * kG * std::sin(th)).epsilon(1e-3));
        } else {
            CHECK(v == Approx(kG * (std::sin(th) - mu * std::cos(th))).epsilon(1e-9));
            CHECK(wr == Approx(2.5 * mu * kG * std::cos(th)).epsilon(1e-3));
        }
    }
}

namespace {

// CIP §8 (d): a 0.1 × 0.1 × 1 m box of 1 kg hanging from a hinge (axis y) at the world origin, swung at 4 rad/s.
Spec limited_pendulum(double lower, double upper) {
    Spec s;
    BodySpec& b = s.add_body("bob");
    b.mass = 1;
    b.inertia = box_inertia(1, 0.1, 0.1, 1);
    b.position = {0, 0, -0.5};
    b.angular_velocity = {0, 4, 0};
    b.velocity = cross(Vec3{0, 4, 0}, Vec3{0, 0, -0.5});
    JointSpec& j = s.add_joint("hinge", "revolute", "world", "bob");
    j.anchor = Vec3{0, 0, 0};
    j.axis = Vec3{0, 1, 0};
    j.lower = {lower};
    j.upper = {upper};
    j.limited = true;
    return s;
}

}  // namespace

TEST_CASE("scene 8: a pendulum swung into a +-0.5 rad limit stops at it without overshoot", "[contact][limits]") {
    Sim sim(limited_pendulum(-0.5, 0.5));
    // The discrete energy of a swinging pendulum oscillates (bounded, O(dt²)); without limits this
    // one stays below e_free. The stops are inelastic: with limits it loses energy at each.
    Spec free = limited_pendulum(-0.5, 0.5);
    free.joints[0].limited = false;
    Sim ref(free);
    double e_free = ref.energy();
    for (int i = 0; i < 300; ++i) ref.step(), e_free = std::max(e_free, ref.energy());
    double lo = HUGE_VAL, hi = -HUGE_VAL, e_max = -HUGE_VAL;
    int at_limit = 0, first_stop = -1;
    std::vector<double> e(301);
    e[0] = sim.energy();
    for (int i = 0; i < 300; ++i) {
        sim.step();
        lo = std::min(lo, sim.d->coord[0]);
        hi = std::max(hi, sim.d->coord[0]);
        if (std::fabs(sim.d->limit_force[0]) > 1e-6) {
            ++at_limit;
            if (first_stop < 0) first_stop = i + 1;
        }
        e[i + 1] = sim.energy();
        e_max = std::max(e_max, e[i + 1]);
    }
    CHECK(hi <= 0.5 + 1e-9);
    CHECK(lo >= -0.5 - 1e-9);
    CHECK(hi > 0.5 - 1e-9);  // it does reach the limit (free amplitude 1.10 rad)
    CHECK(lo < -0.5 + 1e-9);
    CHECK(at_limit > 0);
    CHECK(e_max <= e_free + 1e-9);
    REQUIRE(first_stop > 0);
    CHECK(e[first_stop] < e[first_stop - 1] - 1.0);  // the stop takes most of the 8 J of swing
    CHECK(sim.m->integrator->monitors(*sim.m, *sim.d).max_violation < 1e-9);
}

TEST_CASE("scene 9: a slider thrown up stops at its upper limit and rests on its lower one", "[contact][limits]") {
    Spec s;
    BodySpec& b = s.add_body("slider");
    b.mass = 1;
    b.inertia = box_inertia(1, 0.1, 0.1, 0.1);
    b.velocity = {0, 0, 3};
    JointSpec& j = s.add_joint("rail", "prismatic", "world", "slider");
    j.axis = Vec3{0, 0, 1};
    j.lower = {-0.3};
    j.upper = {0.2};
    j.limited = true;
    Sim sim(s);
    double hi = -HUGE_VAL, lo = HUGE_VAL;
    for (int i = 0; i < 300; ++i) {
        sim.step();
        hi = std::max(hi, sim.d->coord[0]);
        lo = std::min(lo, sim.d->coord[0]);
    }
    CHECK(hi == Approx(0.2).margin(1e-9));
    CHECK(lo >= -0.3 - 1e-9);
    CHECK(sim.d->coord[0] == Approx(-0.3).margin(1e-9));
    CHECK(sim.d->limit_force[0] == Approx(kG).epsilon(1e-9));  // the lower limit carries the weight
}

TEST_CASE("scene 10: a limit on the middle joint of a double pendulum holds, every solver matches dense-lu", "[contact][limits]") {
    const char* solvers[4] = {"dense-lu", "sparse-ldu", "dense-loop", "schur"};
    std::vector<double> traj[4];
    for (int k = 0; k < 4; ++k) {
        INFO(solvers[k]);
        Spec s = testutil::double_pendulum_spec(solvers[k]);
        s.joints[1].lower = {-0.3};
        s.joints[1].upper = {0.3};
        s.joints[1].limited = true;
        Sim sim(s);
        double lo = HUGE_VAL, hi = -HUGE_VAL;
        int at = 0;
        for (int i = 0; i < 300; ++i) {
            sim.step();
            lo = std::min(lo, sim.d->coord[1]);
            hi = std::max(hi, sim.d->coord[1]);
            at += std::fabs(sim.d->limit_force[1]) > 1e-6;
            traj[k].push_back(sim.d->coord[0]);
            traj[k].push_back(sim.d->coord[1]);
        }
        CHECK(hi <= 0.3 + 1e-12);
        CHECK(lo >= -0.3 - 1e-12);
        CHECK(at > 50);
    }
    CHECK(largest_difference(traj, 4) < 1e-10);
}

TEST_CASE("a double pendulum falls onto the ground: no penetration, inelastic impacts, every solver agrees", "[contact]") {
    // CIP §8 "articulated + contacts": hinged at (0, 0, 1.5), point contacts (μ 0.5) at the free end
    // of link 1 and both ends of link 2.
    const char* solvers[4] = {"dense-lu", "sparse-ldu", "dense-loop", "schur"};
    std::vector<double> traj[4];
    for (int k = 0; k < 4; ++k) {
        INFO(solvers[k]);
        Sim sim(testutil::falling_double_pendulum(solvers[k]));
        const double e0 = sim.energy();
        double min_gap = HUGE_VAL;
        int first = -1, iters = 0, iters_max = 0;
        for (int i = 0; i < 300; ++i) {
            sim.step();
            iters += sim.d->last.iterations;
            iters_max = std::max(iters_max, sim.d->last.iterations);
            for (const ContactResult& c : sim.d->contact) {
                min_gap = std::min(min_gap, c.gap);
                if (first < 0 && c.normal_force > 1e-6) first = i + 1;
            }
            for (int b = 0; b < 2; ++b) traj[k].push_back(sim.d->pose[b].x.x), traj[k].push_back(sim.d->pose[b].x.z);
        }
        INFO("iterations mean " << iters / 300.0 << " max " << iters_max);
        CHECK(min_gap >= -1e-9);
        CHECK(first == 52);  // the tip reaches the ground in step 52 (as in CIP §8)
        CHECK(e0 == Approx(29.43).margin(1e-9));
        CHECK(sim.energy() < 16.0);  // E 29.43 → 15.80 J in the reference: the impacts are inelastic
        CHECK(sim.energy() > 15.6);
        CHECK(sim.m->integrator->monitors(*sim.m, *sim.d).max_violation < 1e-9);
    }
    CHECK(largest_difference(traj, 4) < 1e-9);
}

TEST_CASE("scene 11: Newton's cradle: a sphere hitting a row of touching spheres moves them all at v0/N", "[contact]") {
    const int N = 4;
    const double r = 0.1, v0 = 1;
    Spec s;
    s.gravity = {0, 0, 0};
    for (int i = 0; i < N; ++i) {
        BodySpec& b = s.add_body("s" + std::to_string(i));
        b.mass = 1;
        b.inertia = Mat3::diag(0.4 * r * r, 0.4 * r * r, 0.4 * r * r);
        b.position = {i == 0 ? -0.3 : 2 * r * (i - 1), 0, 0};
        if (i == 0) b.velocity = {v0, 0, 0};
    }
    for (int i = 0; i + 1 < N; ++i) {
        ContactSpec c;
        c.body = "s" + std::to_string(i + 1);
        c.type = ContactSpec::Type::sphere;
        c.size = {r, 0, 0};
        c.other = "s" + std::to_string(i);
        c.other_radius = r;
        s.contacts.push_back(c);
    }
    Sim sim(s);
    double min_gap = HUGE_VAL;
    for (int i = 0; i < 60; ++i) {
        sim.step();
        for (const ContactResult& c : sim.d->contact) min_gap = std::min(min_gap, c.gap);
    }
    double p = 0;
    for (int i = 0; i < N; ++i) {
        p += sim.d->twist[i].v.x;
        CHECK(sim.d->twist[i].v.x == Approx(v0 / N).margin(1e-9));
    }
    CHECK(std::fabs(p - v0) <= 1e-12 * v0);
    CHECK(min_gap >= -1e-9);
}

TEST_CASE("scene 12: a stack of spheres carries (k - i) m g at each contact and does not drift", "[contact]") {
    const int k = 4;
    const double r = 0.1;
    Spec s;
    for (int i = 0; i < k; ++i) {
        BodySpec& b = s.add_body("s" + std::to_string(i));
        b.mass = 1;
        b.inertia = Mat3::diag(0.4 * r * r, 0.4 * r * r, 0.4 * r * r);
        b.position = {0, 0, r + 2 * r * i};
        ContactSpec c;
        c.body = b.name;
        c.type = ContactSpec::Type::sphere;
        c.size = {r, 0, 0};
        c.mu = 0.5;
        if (i > 0) c.other = "s" + std::to_string(i - 1), c.other_radius = r;
        s.contacts.push_back(c);
    }
    Sim sim(s);
    for (int i = 0; i < 1000; ++i) sim.step();
    for (int i = 0; i < k; ++i) {
        CHECK(sim.d->contact[i].normal_force == Approx((k - i) * kG).epsilon(1e-9));
        CHECK(std::fabs(sim.d->pose[i].x.z - (r + 2 * r * i)) < 1e-8);
        CHECK(std::hypot(sim.d->pose[i].x.x, sim.d->pose[i].x.y) < 1e-8);
    }
}

TEST_CASE("limits and contacts a step cannot reach leave the step bit-identical to the scene without them", "[contact][limits]") {
    Spec free = testutil::double_pendulum_spec();
    Spec bounded = free;
    for (JointSpec& j : bounded.joints) j.lower = {-10}, j.upper = {10}, j.limited = true;
    ContactSpec c;  // a floor 5 m below the hinge: never reached
    c.body = "link2";
    c.type = ContactSpec::Type::sphere;
    c.size = {0.05, 0, 0};
    c.pose.x = {0.5, 0, 0};
    c.offset = -5;
    c.mu = 0.5;
    bounded.contacts.push_back(c);
    Sim a(free), b(bounded);
    for (int i = 0; i < 500; ++i) {
        a.step();
        b.step();
    }
    for (int k = 0; k < 2; ++k) CHECK(a.d->coord[k] == b.d->coord[k]);
    CHECK(std::memcmp(a.d->pose.data(), b.d->pose.data(), sizeof(Pose) * a.d->pose.size()) == 0);
    CHECK(b.d->contact[0].gap > 3);
    CHECK(b.d->contact[0].normal_force == 0);
}

TEST_CASE("scene 13: the Painleve rod slides on its lower end without failing, penetrating or gaining energy", "[contact]") {
    // A uniform rod of 1 m and 1 kg at tan(theta) = 2 to the ground, its lower end touching it and
    // sliding at 2 m/s; mu 1.5 is beyond the critical 4/3 of the classical (acceleration-level)
    // problem, which has no solution there — the velocity-level step always has one.
    const double th = std::atan(2.0);
    for (double mu : {1.5, 0.5}) {
        for (double dir : {1.0, -1.0}) {
            INFO("mu " << mu << ", sliding direction " << dir);
            Spec s;
            BodySpec& b = s.add_body("rod");
            b.mass = 1;
            b.inertia = box_inertia(1, 0.02, 0.02, 1);  // long axis z (body)
            b.orientation = quat_from_axis_angle({0, 1, 0}, -(M_PI / 2 - th));  // lean towards +x
            b.position = rotate(b.orientation, Vec3{0, 0, 0.5});
            b.velocity = {2 * dir, 0, 0};
            ContactSpec c;
            c.body = "rod";
            c.pose.x = {0, 0, -0.5};
            c.mu = mu;
            s.contacts.push_back(c);
            REQUIRE(std::fabs(b.position.z - 0.5 * std::sin(th)) < 1e-12);
            Sim sim(s);
            // While the end holds, the contact acts like a pivot, and the discrete energy oscillates as
            // a pendulum's does (O(dt²), ~1e-4 J per step here): it never exceeds the start by more
            // than that, and friction and the landing take energy out.
            const double e0 = sim.energy();
            double e_max = -HUGE_VAL, min_gap = HUGE_VAL;
            for (int i = 0; i < 100; ++i) {
                sim.step();
                e_max = std::max(e_max, sim.energy());
                min_gap = std::min(min_gap, sim.d->contact[0].gap);
            }
            CHECK(min_gap >= -1e-9);
            CHECK(e_max <= e0 + 1e-3);
            CHECK(sim.energy() < e0 - 0.1);
        }
    }
}

TEST_CASE("scene 14: a cube tossed with spin lands, tumbles and comes to rest flat", "[contact]") {
    Spec s = cube(1.5, {1, 0.3, 2}, 0.5);
    s.bodies[0].angular_velocity = {3, 2, 1};
    Sim sim(s);
    double min_gap = HUGE_VAL;
    for (int i = 0; i < 500; ++i) {
        sim.step();
        for (const ContactResult& c : sim.d->contact) min_gap = std::min(min_gap, c.gap);
    }
    CHECK(min_gap >= -1e-9);
    CHECK(norm(sim.d->twist[0].v) < 1e-9);
    CHECK(norm(sim.d->twist[0].w) < 1e-9);
    CHECK(std::fabs(sim.d->pose[0].x.z - 0.5) < 1e-9);  // on a face
    CHECK(std::fabs(sum_normal(*sim.d) - kG) <= 1e-9 * kG);
}

TEST_CASE("scene 15: the same relative answers from a 45 g, 8 mm cube to a 175 kg, 1 m one, one tolerance", "[contact]") {
    const double mu = 0.5, dt = 0.01, v0 = 2;
    for (auto [mass, edge] : {std::pair<double, double>{0.045, 0.008}, {1.0, 1.0}, {175.0, 1.0}, {175.0, 0.2}}) {
        INFO("mass " << mass << " kg, edge " << edge << " m");
        auto scaled = [&](Vec3 v, Vec3 g) {
            Spec s = cube(0.5 * edge, v, mu, g);
            s.bodies[0].mass = mass;
            s.bodies[0].inertia = box_inertia(mass, edge, edge, edge);
            s.contacts[0].size = {edge, edge, edge};
            return s;
        };
        // Drop from one edge length: rests flat, gap within 1e-9 of the edge, carries m g.
        {
            Spec s = scaled({}, {0, 0, -kG});
            s.bodies[0].position.z = 1.5 * edge;
            Sim sim(s);
            double min_gap = HUGE_VAL;
            for (int i = 0; i < 150; ++i) {
                sim.step();
                for (const ContactResult& c : sim.d->contact) min_gap = std::min(min_gap, c.gap);
            }
            CHECK(min_gap >= -1e-9 * edge);
            CHECK(std::fabs(sim.d->pose[0].x.z - 0.5 * edge) <= 1e-9 * edge);
            CHECK(std::fabs(sum_normal(*sim.d) - mass * kG) <= 1e-9 * mass * kG);
        }
        // Slide: the discrete distance.
        {
            Sim sim(scaled({v0, 0, 0}, {0, 0, -kG}));
            for (int i = 0; i < 60; ++i) sim.step();
            double discrete = 0;
            for (int i = 1; i <= 40; ++i) discrete += dt * (v0 - i * mu * kG * dt);
            CHECK(sim.d->pose[0].x.x == Approx(discrete).margin(1e-10));
        }
        // Slope below atan(mu): sticks.
        {
            Sim sim(scaled({}, tilted(0.35)));
            for (int i = 0; i < 100; ++i) sim.step();
            CHECK(std::fabs(sim.d->pose[0].x.x) < 1e-8 * std::max(edge, 1e-2));
        }
    }
}

TEST_CASE("a multi-turn limit: a wheel spun past several turns stops at +10 rad, not a turn early", "[contact][limits]") {
    Spec s;
    s.gravity = {0, 0, 0};
    BodySpec& b = s.add_body("wheel");
    b.mass = 1;
    b.inertia = Mat3::diag(0.1, 0.1, 0.2);
    b.angular_velocity = {0, 0, 20};
    JointSpec& j = s.add_joint("axle", "revolute", "world", "wheel");
    j.anchor = Vec3{0, 0, 0};
    j.axis = Vec3{0, 0, 1};
    j.lower = {-10}, j.upper = {10}, j.limited = true;
    s.options.dt = 0.005;
    Sim sim(s);
    double hi = -HUGE_VAL;
    int first = -1;
    for (int i = 0; i < 300; ++i) {
        sim.step();
        hi = std::max(hi, sim.d->coord[0]);
        if (first < 0 && std::fabs(sim.d->limit_force[0]) > 1e-6) first = i + 1;
    }
    CHECK(hi <= 10 + 1e-9);
    CHECK(sim.d->coord[0] == Approx(10).margin(1e-9));  // inelastic: it stays at the stop
    CHECK(first == 100);  // 10 rad at 20 rad/s: the 100th step of 0.005 s reaches it
}

TEST_CASE("a limit and ground contacts on one chain: the double pendulum falls onto the ground with its elbow limited",
          "[contact][limits]") {
    std::vector<double> traj[2];
    const char* solvers[2] = {"sparse-ldu", "dense-lu"};
    for (int k = 0; k < 2; ++k) {
        Spec s = testutil::falling_double_pendulum(solvers[k]);
        s.joints[1].lower = {-0.3}, s.joints[1].upper = {0.3}, s.joints[1].limited = true;
        Sim sim(s);
        double lo = HUGE_VAL, hi = -HUGE_VAL, min_gap = HUGE_VAL;
        int both = 0;
        for (int i = 0; i < 300; ++i) {
            sim.step();
            lo = std::min(lo, sim.d->coord[1]);
            hi = std::max(hi, sim.d->coord[1]);
            double f = 0;
            for (const ContactResult& c : sim.d->contact) min_gap = std::min(min_gap, c.gap), f += c.normal_force;
            both += f > 1e-6 && std::fabs(sim.d->limit_force[1]) > 1e-6;
            traj[k].push_back(sim.d->coord[0]), traj[k].push_back(sim.d->coord[1]);
        }
        CHECK(hi <= 0.3 + 1e-12);
        CHECK(lo >= -0.3 - 1e-12);
        CHECK(min_gap >= -1e-9);
        CHECK(both > 0);  // steps with the limit and a contact loaded at once
    }
    CHECK(largest_difference(traj, 2) < 1e-9);
}

TEST_CASE("the run's energy watch: dissipation by contacts is no warning, a gain after it is", "[contact][watch]") {
    Run run(compile(cube(1.5, {}, 0.5)));
    REQUIRE(run.steps(150));  // lands and rests: 14.715 J -> 4.905 J, legitimately
    for (const Warning& w : run.data().warnings) CHECK(w.message.find("energy grew") == std::string::npos);
    // A gain of 4.4 J from nothing (the state edited behind the integrator's back) stays below the
    // initial energy: measured from E0 it would pass; from the lowest energy seen it is caught.
    run.data().twist[0].v = {0, 0, 3};
    run.data().twist_guess[0].v = {0, 0, 3};
    REQUIRE(run.steps(5));
    bool warned = false;
    for (const Warning& w : run.data().warnings) warned = warned || w.message.find("energy grew from 4.9") != std::string::npos;
    CHECK(warned);
}

namespace {

// The classical Painlevé rod in the x-z plane: a uniform rod (mass 1, half-length l) whose lower
// end slides on z = 0 with Coulomb friction mu; angle th of the rod from +x (counter-clockwise
// towards +z). State (x_end, th, xdot_end... ) integrated as (xc, zc, th) with the contact holding:
//   N = m (g − l th'² sin th) / (1 + 3 cos th (cos th + mu s sin th)),  s = sign of the end's slip,
//   m xc'' = −mu s N,  m zc'' = N − m g,  I th'' = −l N cos th − l mu s N sin th,  I = m l²/3.
struct Rod {
    double xc, zc, th, vx, vz, w;
};

Rod rod_rate(const Rod& r, double mu, double l, double& N) {
    const double xe_dot = r.vx + l * std::sin(r.th) * r.w;  // the end: xc − l cos th
    const double s = xe_dot > 0 ? 1 : -1;
    const double c = std::cos(r.th), sn = std::sin(r.th);
    N = (kG - l * r.w * r.w * sn) / (1 + 3 * c * (c + mu * s * sn));
    const double F = -mu * s * N;
    const double I = l * l / 3;
    return {r.vx, r.vz, r.w, F, N - kG, (-l * N * c + l * F * sn) / I};
}

}  // namespace

TEST_CASE("scene 13: the Painleve rod with mu 0.5 agrees with the classical ODE at order 1", "[contact]") {
    const double mu = 0.5, l = 0.5, th0 = M_PI - std::atan(2.0), T = 0.2;
    // The ODE, RK4 at 1e-5 s; the contact holds and slides throughout (N > 0, the end's slip never 0).
    Rod r{-l * std::cos(M_PI - th0), l * std::sin(th0), th0, 2, 0, 0};
    r.xc = l * std::cos(th0);  // the end at the origin
    const double h = 1e-5;
    double N, Nmin = HUGE_VAL;
    for (int i = 0; i < static_cast<int>(std::lround(T / h)); ++i) {
        auto add = [](const Rod& a, const Rod& k, double f) {
            return Rod{a.xc + f * k.xc, a.zc + f * k.zc, a.th + f * k.th, a.vx + f * k.vx, a.vz + f * k.vz, a.w + f * k.w};
        };
        const Rod k1 = rod_rate(r, mu, l, N);
        Nmin = std::min(Nmin, N);
        const Rod k2 = rod_rate(add(r, k1, h / 2), mu, l, N), k3 = rod_rate(add(r, k2, h / 2), mu, l, N);
        const Rod k4 = rod_rate(add(r, k3, h), mu, l, N);
        r = {r.xc + h / 6 * (k1.xc + 2 * k2.xc + 2 * k3.xc + k4.xc), r.zc + h / 6 * (k1.zc + 2 * k2.zc + 2 * k3.zc + k4.zc),
             r.th + h / 6 * (k1.th + 2 * k2.th + 2 * k3.th + k4.th), r.vx + h / 6 * (k1.vx + 2 * k2.vx + 2 * k3.vx + k4.vx),
             r.vz + h / 6 * (k1.vz + 2 * k2.vz + 2 * k3.vz + k4.vz), r.w + h / 6 * (k1.w + 2 * k2.w + 2 * k3.w + k4.w)};
    }
    REQUIRE(Nmin > 0);
    REQUIRE(r.vx + l * std::sin(r.th) * r.w > 0.1);  // still sliding
    double err[3];
    const double dts[3] = {0.01, 0.005, 0.0025};
    for (int k = 0; k < 3; ++k) {
        Spec s;
        s.options.dt = dts[k];
        BodySpec& b = s.add_body("rod");
        b.mass = 1;
        b.inertia = box_inertia(1, 1e-3, 1e-3, 2 * l);  // a thin rod along body z
        // body z along the rod's direction (cos th0, 0, sin th0): a turn about y by pi/2 − th0
        b.orientation = quat_from_axis_angle({0, 1, 0}, M_PI / 2 - th0);
        b.position = rotate(b.orientation, Vec3{0, 0, l});
        b.velocity = {2, 0, 0};
        ContactSpec c;
        c.body = "rod";
        c.pose.x = {0, 0, -l};
        c.mu = mu;
        s.contacts.push_back(c);
        Sim sim(s);
        for (int i = 0; i < static_cast<int>(std::lround(T / dts[k])); ++i) sim.step();
        const Vec3 dir = rotate(sim.d->pose[0].q, Vec3{0, 0, 1});
        const double th = std::atan2(dir.z, dir.x);
        err[k] = std::max({std::fabs(sim.d->pose[0].x.x - r.xc), std::fabs(sim.d->pose[0].x.z - r.zc), l * std::fabs(th - r.th)});
        INFO("dt " << dts[k] << ": error " << err[k]);
        CHECK(err[k] < 0.05);
    }
    INFO("errors " << err[0] << " " << err[1] << " " << err[2]);
    CHECK(err[0] / err[1] == Approx(2).epsilon(0.25));  // order 1
    CHECK(err[1] / err[2] == Approx(2).epsilon(0.25));
}

TEST_CASE("scene 7: the rolling sphere's speed converges to 5/7 g sin t at order 1 or better", "[contact]") {
    const double th = 0.3, r = 0.2;
    double err[2];
    for (int k = 0; k < 2; ++k) {
        Sim sim(ball_on_slope(th, r, 1, k == 0 ? 0.01 : 0.005));
        for (int i = 0; i < (k == 0 ? 100 : 200); ++i) sim.step();
        err[k] = std::fabs(-sim.d->twist[0].v.x - 5.0 / 7 * kG * std::sin(th));
    }
    INFO("v(1 s) errors " << err[0] << ", " << err[1]);
    CHECK(err[0] < 1e-3 * 5.0 / 7 * kG * std::sin(th));
    // contact-ip.md expects order 1 from the configuration-2 force map; measured here: 4.0 for a
    // halved step (order 2 for this quantity). Demand at least order 1.
    CHECK(err[0] / err[1] > 1.8);
}

TEST_CASE("bodies that nothing connects are separate blocks: boxes sliding side by side match each alone", "[contact]") {
    // Two cubes far apart in one scene step as each does alone, to the tolerance (the Schur
    // complement is block-diagonal by group, each block the one-cube system; the steps' iteration
    // counts are shared, so the bits differ).
    Spec both = cube(0.5, {2, 0, 0}, 0.5);
    Spec other = cube(0.5, {1, 0.5, 0}, 0.5);
    other.bodies[0].name = "box2";
    other.bodies[0].position.y = 5;
    other.contacts[0].body = "box2";
    both.bodies.push_back(other.bodies[0]);
    both.contacts.push_back(other.contacts[0]);
    Sim pair(both), one(cube(0.5, {2, 0, 0}, 0.5)), two(other);
    for (int i = 0; i < 60; ++i) pair.step(), one.step(), two.step();
    CHECK(pair.d->pose[0].x.x == Approx(one.d->pose[0].x.x).margin(1e-9));
    CHECK(pair.d->pose[1].x.x == Approx(two.d->pose[0].x.x).margin(1e-9));
    CHECK(pair.d->pose[1].x.y == Approx(two.d->pose[0].x.y).margin(1e-9));
    CHECK(pair.d->pose[0].x.x == Approx(0.39779).margin(1e-12));  // the discrete slide distance
}

TEST_CASE("the graph report (noether check) lists the contact points and the enforced limits", "[contact]") {
    const std::string c = Run(compile(cube(0.5, {}, 0.5))).graph_report();
    CHECK_THAT(c, Catch::Matchers::Contains("contact points (8):") &&
                      Catch::Matchers::Contains("box/contact1/1  on box, point at (-0.5, -0.5, -0.5) against n.y >= 0, n = (0, 0, 1), mu 0.5"));
    const std::string l = Run(compile(limited_pendulum(-0.5, 0.5))).graph_report();
    CHECK_THAT(l, Catch::Matchers::Contains("enforced limits (1): hinge [-0.5, 0.5]"));
}

TEST_CASE("a mechanism with more contact points than one dense system can take is refused at compile time", "[contact]") {
    Spec s = cube(2, {}, 0.5);
    for (int k = 0; k < 128; ++k) s.contacts.push_back(s.contacts[0]);  // 129 boxes of 8 points with friction
    for (std::size_t k = 1; k < s.contacts.size(); ++k) s.contacts[k].name = "c" + std::to_string(k);
    const std::string e = testutil::error_of([&] { compile(s); });
    CHECK_THAT(e, Catch::Matchers::Contains("body 'box': the contact points and joint limits of its mechanism need 8256 "
                                            "unknowns in one dense system; vi-maximal takes at most 8192"));
    s.contacts.resize(128);  // 1024 points: accepted
    CHECK_NOTHROW(compile(s));
}
