// vi-midpoint (paper 004 / midpoint-vi.md): second order, paper 004's Tables 1 and 2, Newton
// matrix against finite differences at the start and at a regular step.
#include <catch2/catch.hpp>
#include <cstdio>

#include "util.hpp"

using namespace noether;
using testutil::MatX;
using testutil::VecX;

namespace {

std::shared_ptr<const Model> with(Spec s, const char* integrator, double dt) {
    s.options.integrator = integrator;
    s.options.dt = dt;
    return compile(s);
}

// The double spherical pendulum of paper 004 §5.2 (as scripts/examples/double_spherical_pendulum.lua).
Spec dsp_spec(double eps) {
    const double m1 = 2, m2 = 3.5, l1 = 4, l2 = 3;
    const double x1 = 2.820, y1 = 0.025, x2 = 5.085, y2 = 0.105;
    const double vx1 = 3.381, vy1 = 2.506, vx2 = 2.497, vy2 = 10.495;
    const double z1 = -std::sqrt(l1 * l1 - x1 * x1 - y1 * y1);
    const double dx = x2 - x1, dy = y2 - y1, dz = -std::sqrt(l2 * l2 - dx * dx - dy * dy);
    const double vz1 = -(x1 * vx1 + y1 * vy1) / z1;
    const double vz2 = vz1 - (dx * (vx2 - vx1) + dy * (vy2 - vy1)) / dz;
    auto body = [&](Spec& s, const char* name, double m, double l, Vec3 pos, Vec3 u, Vec3 vel, Vec3 rel) {
        BodySpec& b = s.add_body(name);
        b.mass = m;
        b.inertia = Mat3::diag(eps * m * l * l, eps * m * l * l, eps * m * l * l);
        b.position = pos;
        const Vec3 e = normalized(u), ax = cross(Vec3{1, 0, 0}, e);
        b.orientation = norm(ax) < 1e-12 ? Quat{} : quat_from_axis_angle(ax, std::atan2(norm(ax), e.x));
        b.velocity = vel;
        b.angular_velocity = cross(u, rel) / dot(u, u);
    };
    Spec s;
    body(s, "mass1", m1, l1, {x1, y1, z1}, {x1, y1, z1}, {vx1, vy1, vz1}, {vx1, vy1, vz1});
    body(s, "mass2", m2, l2, {x2, y2, z1 + dz}, {dx, dy, dz}, {vx2, vy2, vz2}, {vx2 - vx1, vy2 - vy1, vz2 - vz1});
    JointSpec& p = s.add_joint("pivot", "spherical", "world", "mass1");
    p.anchor = Vec3{0, 0, 0};
    JointSpec& e = s.add_joint("elbow", "spherical", "mass1", "mass2");
    e.anchor = Vec3{x1, y1, z1};
    return s;
}

// Positions of both masses sampled every 0.1 s over T seconds.
std::vector<Vec3> sampled(const Spec& spec, double dt, double T, std::vector<double>* energy, std::vector<double>* lz) {
    auto m = with(spec, "vi-midpoint", dt);
    Data d(m);
    const int every = static_cast<int>(std::lround(0.1 / dt)), n = static_cast<int>(std::lround(T / dt));
    std::vector<Vec3> out;
    for (int i = 1; i <= n; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        if (i % every) continue;
        out.push_back(d.pose[0].x);
        out.push_back(d.pose[1].x);
        const Monitors mon = monitors(*m, d);
        if (energy) energy->push_back(mon.total);
        if (lz) lz->push_back(mon.angular_momentum.z);
    }
    return out;
}

}  // namespace

TEST_CASE("vi-midpoint converges at second order, vi-maximal at first", "[vi-midpoint]") {
    const Spec s = testutil::double_pendulum_spec();
    auto x_at_2s = [&](const char* integ, double dt) {
        auto m = with(s, integ, dt);
        Data d(m);
        for (int i = 0, n = static_cast<int>(std::lround(2.0 / dt)); i < n; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
        return d.pose[1].x;
    };
    for (const char* integ : {"vi-midpoint", "vi-maximal"}) {
        const Vec3 ref = x_at_2s("vi-midpoint", 1e-4);
        std::vector<double> err;
        for (double dt : {0.02, 0.01, 0.005, 0.0025}) err.push_back(norm(x_at_2s(integ, dt) - ref));
        const double slope = std::log(err.front() / err.back()) / std::log(8.0);
        std::printf("%s: errors %.3e %.3e %.3e %.3e, slope %.3f\n", integ, err[0], err[1], err[2], err[3], slope);
        CHECK(slope == Approx(std::string(integ) == "vi-midpoint" ? 2.0 : 1.0).margin(0.3));
    }
}

TEST_CASE("paper 004 Table 1: free rigid body errors scale as h^2, momentum exact", "[vi-midpoint]") {
    // Reference: Euler's equations and the quaternion ODE by RK4 at h = 1e-5.
    auto rhs = [](const Quat& q, const Vec3& w, Quat& dq, Vec3& dw) {
        const Vec3 J{1, 2, 3};
        dw = {((J.y - J.z) * w.y * w.z) / J.x, ((J.z - J.x) * w.z * w.x) / J.y, ((J.x - J.y) * w.x * w.y) / J.z};
        const Quat p = q * Quat{0, w.x, w.y, w.z};
        dq = {0.5 * p.w, 0.5 * p.x, 0.5 * p.y, 0.5 * p.z};
    };
    std::vector<Quat> exact;
    {
        Quat q;
        Vec3 w{0, 3, 4};
        const double h = 1e-5;
        auto add = [](const Quat& a, const Quat& b, double s) { return Quat{a.w + s * b.w, a.x + s * b.x, a.y + s * b.y, a.z + s * b.z}; };
        for (int i = 1; i <= 3000000; ++i) {
            Quat k1q, k2q, k3q, k4q;
            Vec3 k1w, k2w, k3w, k4w;
            rhs(q, w, k1q, k1w);
            rhs(add(q, k1q, h / 2), w + (h / 2) * k1w, k2q, k2w);
            rhs(add(q, k2q, h / 2), w + (h / 2) * k2w, k3q, k3w);
            rhs(add(q, k3q, h), w + h * k3w, k4q, k4w);
            q = add(add(add(add(q, k1q, h / 6), k2q, h / 3), k3q, h / 3), k4q, h / 6);
            w = w + (h / 6) * (k1w + 2.0 * k2w + 2.0 * k3w + k4w);
            if (i % 10000 == 0) exact.push_back(qnormalized(q));
        }
    }
    struct Row { double h, quat, energy; };
    // midpoint-vi.md recipe 7, Legendre start.
    for (const Row& row : {Row{0.01, 3.8134e-3, 1.8846e-2}, Row{0.001, 3.8099e-5, 1.8825e-4}}) {
        auto m = with(testutil::free_body_spec(), "vi-midpoint", row.h);
        Data d(m);
        const Vec3 L0{0, 6, 12};
        CHECK(norm(monitors(*m, d).angular_momentum - L0) < 1e-14);  // continuous before the start
        const int every = static_cast<int>(std::lround(0.1 / row.h));
        double eq = 0, ee = 0, el = 0;
        int n = 0;
        for (int i = 1; i <= static_cast<int>(std::lround(30 / row.h)); ++i) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            if (i % every) continue;
            Quat q = d.pose[0].q, r = exact[n];
            if (q.w * r.w + q.x * r.x + q.y * r.y + q.z * r.z < 0) q = {-q.w, -q.x, -q.y, -q.z};
            eq += std::sqrt((q.w - r.w) * (q.w - r.w) + (q.x - r.x) * (q.x - r.x) + (q.y - r.y) * (q.y - r.y) +
                            (q.z - r.z) * (q.z - r.z)) / 4;
            const Monitors mon = monitors(*m, d);
            ee += std::fabs(mon.total - 33.0);
            el += norm(mon.angular_momentum - L0) / 3;
            ++n;
        }
        eq /= n, ee /= n, el /= n;
        std::printf("free body h = %g: quaternion %.4e (ref %.4e), energy %.4e (ref %.4e), momentum %.2e\n", row.h, eq,
                    row.quat, ee, row.energy, el);
        CHECK(ee == Approx(row.energy).epsilon(0.01));
        CHECK(eq == Approx(row.quat).epsilon(0.05));
        CHECK(el < 1e-12);
    }
}

TEST_CASE("paper 004 Table 2: double spherical pendulum at h = 0.01 and 0.001", "[vi-midpoint][slow]") {
    const Spec s = dsp_spec(1e-6);
    const std::vector<Vec3> ref = sampled(s, 1e-4, 30, nullptr, nullptr);
    auto m0 = with(s, "vi-midpoint", 0.01);
    Data d0(m0);
    const Monitors start = monitors(*m0, d0);  // continuous values before the start
    CHECK(start.total == Approx(24.93959).epsilon(2e-5));
    struct Row { double h, pos, energy; };
    // midpoint-vi.md recipe 8 (Legendre start, eps = 1e-10; eps = 1e-6 changes them < 1 % here).
    for (const Row& row : {Row{0.01, 1.1515e-3, 3.1086e-2}, Row{0.001, 1.1510e-5, 3.1067e-4}}) {
        std::vector<double> E, Lz;
        const std::vector<Vec3> x = sampled(s, row.h, 30, &E, &Lz);
        double ep = 0, ee = 0, el = 0;
        for (std::size_t i = 0; i < x.size(); i += 2)
            ep += (std::sqrt(dot(x[i] - ref[i], x[i] - ref[i]) + dot(x[i + 1] - ref[i + 1], x[i + 1] - ref[i + 1]))) / 6;
        ep /= x.size() / 2;
        for (double e : E) ee += std::fabs(e - start.total);
        ee /= E.size();
        for (double l : Lz) el = std::max(el, std::fabs(l - start.angular_momentum.z));
        std::printf("DSP h = %g: position %.4e (ref %.4e), energy %.4e (ref %.4e), |Lz - Lz0| max %.2e\n", row.h, ep,
                    row.pos, ee, row.energy, el);
        CHECK(ep == Approx(row.pos).epsilon(0.1));
        CHECK(ee == Approx(row.energy).epsilon(0.05));
        CHECK(el < 1e-9 * std::fabs(start.angular_momentum.z));
    }
}

TEST_CASE("vi-midpoint Newton matrix matches central differences, at the start and after it", "[vi-midpoint]") {
    Spec spec = testutil::every_joint_spec();
    spec.options.integrator = "vi-midpoint";
    auto m = compile(spec);
    Data d(m);
    testutil::Rng r(9);
    for (double& u : d.actuation) u = r.uniform(-2, 2);
    for (auto& f : d.applied_force) f = r.vec(3);
    for (int phase = 0; phase < 2; ++phase) {
        if (phase == 1) REQUIRE(step(*m, d) == StepStatus::ok);  // now a regular step
        const double err = testutil::newton_matrix_error(*m, d, r);
        INFO((phase ? "regular step" : "start") << ": relative error " << err);
        CHECK(err >= 0);
        CHECK(err < 1e-6);
    }
}

TEST_CASE("vi-midpoint keeps loops closed and momentum of an actuated floating pair", "[vi-midpoint]") {
    auto m = with(testutil::closed_loop_spec("revolute"), "vi-midpoint", 0.01);
    Data d(m);
    double vmax = 0;
    for (int i = 0; i < 500; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        vmax = std::max(vmax, monitors(*m, d).max_violation);
    }
    CHECK(vmax < 1e-10);
    CHECK(double(d.stats.newton_total) / d.stats.steps < 4.5);
    // Two floating bodies, internal actuation varying in time: P and L stay at their start values.
    Spec s;
    s.gravity = {0, 0, 0};
    for (int i = 0; i < 2; ++i) {
        BodySpec& b = s.add_body("b" + std::to_string(i));
        b.inertia = testutil::box_inertia(1, 1, 0.2, 0.3);
        b.position = {1.0 * i, 0, 0};
        b.velocity = {0.1 * i, -0.2, 0.3};
        b.angular_velocity = {0.2, 0.1 * i, -0.3};
    }
    JointSpec& j = s.add_joint("act", "revolute", "b0", "b1");
    j.anchor = Vec3{0.5, 0, 0};
    j.axis = Vec3{0, 0, 1};
    auto mm = with(s, "vi-midpoint", 0.01);
    Data dd(mm);
    double dP = 0, dL = 0;
    Monitors m0;
    for (int i = 0; i < 300; ++i) {
        dd.actuation[0] = std::sin(0.05 * i);
        REQUIRE(step(*mm, dd) == StepStatus::ok);
        const Monitors mon = monitors(*mm, dd);
        if (i == 0) m0 = mon;
        dP = std::max(dP, norm(mon.momentum - m0.momentum));
        dL = std::max(dL, norm(mon.angular_momentum - m0.angular_momentum));
    }
    CHECK(dP < 1e-13);
    CHECK(dL < 1e-12);
}

TEST_CASE("a failed vi-midpoint step leaves its integrator state (previous inputs) as it was", "[vi-midpoint]") {
    Spec s = testutil::chain_spec(2, "revolute", "vi-midpoint");
    s.options.dt = 0.2;  // too large: a regular step after the start fails, even in 2 substeps
    s.options.max_substeps = 2;
    auto m = compile(s);
    Data d(m);
    // Integrator state = the last bytes of save(): dt_prev, started, previous forces, torques, inputs.
    const std::size_t istate = sizeof(double) + 1 + 2 * sizeof(Vec3) * m->nbodies() + sizeof(double) * m->total_dofs;
    std::string before;
    StepStatus st = StepStatus::ok;
    for (int i = 0; i < 50 && st == StepStatus::ok; ++i) {
        d.applied_force[1] = {0.3 * (i + 1), 0, -0.2 * i};  // the inputs change every step
        d.actuation[0] = 0.1 * i;
        before = d.save();
        st = step(*m, d);
    }
    REQUIRE(st != StepStatus::ok);
    REQUIRE(d.step > 0);  // it was a regular step, not the start
    const std::string after = d.save();
    REQUIRE(after.size() >= istate);
    CHECK(after.substr(after.size() - istate) == before.substr(before.size() - istate));
}
