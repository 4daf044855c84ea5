// Kinematics and dynamics queries (noether/queries.hpp): Jacobians against finite differences of
// forward kinematics, the mass matrix against the kinetic energy, inverse dynamics against forward
// dynamics, gravity against the potential energy, the bias forces' energy identity.
#include <catch2/catch.hpp>

#include <cmath>

#include "noether/noether.hpp"
#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;
using testutil::box_inertia;

namespace {

// A 5-link arm in 3-D: revolute joints about changing axes and one prismatic joint, links with
// full inertia tensors, joint offsets.
Spec arm() {
    Spec s;
    s.options.integrator = "none";
    const Vec3 axes[5] = {{0, 0, 1}, {0, 1, 0}, {1, 0, 0.3}, {0, 0, 1}, {0.2, 1, 0}};
    for (int i = 0; i < 5; ++i) {
        BodySpec& b = s.add_body("l" + std::to_string(i));
        b.mass = 0.5 + 0.3 * i;
        const Quat r = quat_from_rpy(0.2 * i, -0.1 * i, 0.3);
        b.inertia = rotation(r) * box_inertia(b.mass, 0.1 + 0.05 * i, 0.4, 0.15) * transpose(rotation(r));
        b.position = {0.3 * i + 0.15, 0.05 * i, 0.1 * i};
        b.orientation = quat_from_rpy(0.1 * i, 0.2, -0.1 * i);
        JointSpec& j = s.add_joint("j" + std::to_string(i), i == 3 ? "prismatic" : "revolute",
                                   i == 0 ? "world" : "l" + std::to_string(i - 1), b.name);
        j.anchor = Vec3{0.3 * i, 0.05 * i, 0.1 * i};
        j.axis = normalized(axes[i]);
        j.offset = {0.1 * i};
    }
    return s;
}

std::vector<double> random_q(int n, testutil::Rng& r) {
    std::vector<double> q(n);
    for (double& x : q) x = r.uniform(-1, 1);
    return q;
}

}  // namespace

TEST_CASE("queries: body and point Jacobians match finite differences of forward kinematics", "[queries]") {
    auto m = compile(arm());
    Kinematics k(m);
    const int n = k.n(), nb = m->nbodies();
    REQUIRE(n == 5);
    testutil::Rng r(3);
    const std::vector<double> q = random_q(n, r);
    const double e = 1e-6;
    std::vector<Pose> p(nb), pp(nb), pm(nb);
    double worst = 0;
    for (int b = 0; b < nb; ++b) {
        std::vector<double> J(6 * n), Jp(3 * n);
        k.body_jacobian(q.data(), b, J.data());
        const Vec3 point{0.1, -0.2, 0.05};
        k.point_jacobian(q.data(), b, point, Jp.data());
        for (int c = 0; c < n; ++c) {
            std::vector<double> qp = q, qm = q;
            qp[c] += e, qm[c] -= e;
            k.poses(qp.data(), pp.data());
            k.poses(qm.data(), pm.data());
            const Vec3 v = (1 / (2 * e)) * (pp[b].x - pm[b].x);
            const Vec3 w = (1 / (2 * e)) * rotvec_from_quat(pp[b].q * conj(pm[b].q));
            const Vec3 vp = (1 / (2 * e)) * ((pp[b].x + rotate(pp[b].q, point)) - (pm[b].x + rotate(pm[b].q, point)));
            for (int a = 0; a < 3; ++a) {
                worst = std::max(worst, std::fabs((&w.x)[a] - J[a * n + c]));
                worst = std::max(worst, std::fabs((&v.x)[a] - J[(3 + a) * n + c]));
                worst = std::max(worst, std::fabs((&vp.x)[a] - Jp[a * n + c]));
            }
        }
    }
    CHECK(worst < 1e-8);
}

TEST_CASE("queries: the mass matrix gives the kinetic energy, the bias forces the energy identity", "[queries]") {
    auto m = compile(arm());
    Kinematics k(m);
    const int n = k.n(), nb = m->nbodies();
    testutil::Rng r(5);
    const std::vector<double> q = random_q(n, r), qd = random_q(n, r);
    std::vector<double> M(n * n);
    k.mass_matrix(q.data(), M.data());
    double qMq = 0;
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) qMq += qd[a] * M[a * n + b] * qd[b];
    // ½ q̇ᵀ M q̇ = Σ ½ m v² + ½ ωᵀ I_world ω with v, ω from the body Jacobians.
    std::vector<Pose> p(nb);
    k.poses(q.data(), p.data());
    double T = 0;
    for (int b = 0; b < nb; ++b) {
        std::vector<double> J(6 * n);
        k.body_jacobian(q.data(), b, J.data());
        Vec3 w, v;
        for (int c = 0; c < n; ++c)
            for (int a = 0; a < 3; ++a) (&w.x)[a] += J[a * n + c] * qd[c], (&v.x)[a] += J[(3 + a) * n + c] * qd[c];
        const Mat3 R = rotation(p[b].q);
        T += 0.5 * m->bodies[b].mass * dot(v, v) + 0.5 * dot(w, R * (m->bodies[b].inertia * (transpose(R) * w)));
    }
    CHECK(0.5 * qMq == Approx(T).epsilon(1e-12));
    // Symmetric positive definite.
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) CHECK(M[a * n + b] == Approx(M[b * n + a]).margin(1e-14));
    // q̇ᵀ (b − g) = ½ q̇ᵀ Ṁ q̇ (the Coriolis matrix's skew property), Ṁ by differences along q̇.
    std::vector<double> bias(n), grav(n), Mp(n * n), Mm(n * n);
    k.bias_forces(q.data(), qd.data(), bias.data());
    k.gravity_forces(q.data(), grav.data());
    const double e = 1e-6;
    std::vector<double> qp = q, qm = q;
    for (int c = 0; c < n; ++c) qp[c] += e * qd[c], qm[c] -= e * qd[c];
    k.mass_matrix(qp.data(), Mp.data());
    k.mass_matrix(qm.data(), Mm.data());
    double lhs = 0, rhs = 0;
    for (int a = 0; a < n; ++a) {
        lhs += qd[a] * (bias[a] - grav[a]);
        for (int b = 0; b < n; ++b) rhs += 0.5 * qd[a] * (Mp[a * n + b] - Mm[a * n + b]) / (2 * e) * qd[b];
    }
    CHECK(lhs == Approx(rhs).epsilon(1e-7));
}

TEST_CASE("queries: gravity forces are the potential energy's gradient", "[queries]") {
    auto m = compile(arm());
    Kinematics k(m);
    const int n = k.n(), nb = m->nbodies();
    testutil::Rng r(7);
    const std::vector<double> q = random_q(n, r);
    std::vector<double> g(n);
    k.gravity_forces(q.data(), g.data());
    auto V = [&](const std::vector<double>& x) {
        std::vector<Pose> p(nb);
        k.poses(x.data(), p.data());
        double v = 0;
        for (int b = 0; b < nb; ++b) v -= m->bodies[b].mass * dot(m->gravity, p[b].x);
        return v;
    };
    const double e = 1e-6;
    for (int c = 0; c < n; ++c) {
        std::vector<double> qp = q, qm = q;
        qp[c] += e, qm[c] -= e;
        CHECK(g[c] == Approx((V(qp) - V(qm)) / (2 * e)).margin(1e-7));
    }
}

TEST_CASE("queries: inverse dynamics undoes forward dynamics, and M q̈ + b = τ", "[queries]") {
    auto m = compile(arm());
    Kinematics k(m);
    const int n = k.n();
    testutil::Rng r(9);
    const std::vector<double> q = random_q(n, r), qd = random_q(n, r), tau = random_q(n, r);
    std::vector<double> qdd(n), back(n), M(n * n), b(n);
    k.forward_dynamics(q.data(), qd.data(), tau.data(), qdd.data());
    k.inverse_dynamics(q.data(), qd.data(), qdd.data(), back.data());
    for (int c = 0; c < n; ++c) CHECK(back[c] == Approx(tau[c]).margin(1e-10));
    // RNEA is linear in q̈ with the mass matrix as its slope.
    k.mass_matrix(q.data(), M.data());
    k.bias_forces(q.data(), qd.data(), b.data());
    std::vector<double> unit(n, 0.0), t1(n);
    for (int c = 0; c < n; ++c) {
        std::fill(unit.begin(), unit.end(), 0.0);
        unit[c] = 1;
        k.inverse_dynamics(q.data(), qd.data(), unit.data(), t1.data());
        for (int a = 0; a < n; ++a) CHECK(t1[a] - b[a] == Approx(M[a * n + c]).margin(1e-10));
    }
}

TEST_CASE("queries: forward dynamics agrees with the simulation's acceleration", "[queries]") {
    // A step of rk4 from rest at q: q̈ ≈ 2 (q(h) − q) / h² for small h.
    Spec s = arm();
    s.options.integrator = "rk4";
    s.options.dt = 1e-4;
    auto m = compile(s);
    Data d(m);
    Kinematics k(m);
    const int n = k.n();
    std::vector<double> q(d.coord), zero(n, 0.0), qdd(n);
    k.forward_dynamics(q.data(), zero.data(), zero.data(), qdd.data());
    REQUIRE(step(*m, d) == StepStatus::ok);
    for (int c = 0; c < n; ++c) CHECK(2 * (d.coord[c] - q[c]) / (1e-8) == Approx(qdd[c]).epsilon(1e-3).margin(1e-3));
}

TEST_CASE("queries: the centre of mass and its Jacobian", "[queries]") {
    auto m = compile(arm());
    Kinematics k(m);
    const int n = k.n();
    testutil::Rng r(11);
    const std::vector<double> q = random_q(n, r);
    std::vector<double> J(3 * n);
    k.com_jacobian(q.data(), J.data());
    const double e = 1e-6;
    for (int c = 0; c < n; ++c) {
        std::vector<double> qp = q, qm = q;
        qp[c] += e, qm[c] -= e;
        const Vec3 d = (1 / (2 * e)) * (k.center_of_mass(qp.data()) - k.center_of_mass(qm.data()));
        for (int a = 0; a < 3; ++a) CHECK(J[a * n + c] == Approx((&d.x)[a]).margin(1e-8));
    }
}

TEST_CASE("queries: momenta equal the run's monitors and the centre of mass's motion", "[queries]") {
    auto m = compile(arm());
    Kinematics k(m);
    const int n = k.n();
    testutil::Rng r(17);
    const std::vector<double> q = random_q(n, r), qd = random_q(n, r);
    Vec3 p, L;
    k.momentum(q.data(), qd.data(), &p, &L);
    // The same state in a Data: its monitors compute the momenta from the bodies' poses and twists.
    Data d(m);
    set_joint_state(*m, d, q.data(), qd.data());
    const Monitors mon = monitors(*m, d);
    for (int a = 0; a < 3; ++a) {
        CHECK((&p.x)[a] == Approx((&mon.momentum.x)[a]).margin(1e-12));
        CHECK((&L.x)[a] == Approx((&mon.angular_momentum.x)[a]).margin(1e-12));
    }
    // p = (Σ m) J_com q̇.
    std::vector<double> J(3 * n);
    k.com_jacobian(q.data(), J.data());
    double mass = 0;
    for (const BodyInfo& b : m->bodies) mass += b.mass;
    for (int a = 0; a < 3; ++a) {
        double v = 0;
        for (int c = 0; c < n; ++c) v += J[a * n + c] * qd[c];
        CHECK((&p.x)[a] == Approx(mass * v).margin(1e-12));
    }
    CHECK(std::sqrt(dot(L, L)) > 0.1);  // not a vacuous comparison
}

TEST_CASE("queries: mechanisms they do not take are refused naming the element", "[queries]") {
    Spec s;
    s.options.integrator = "none";
    BodySpec& b = s.add_body("free");
    b.mass = 1;
    CHECK_THAT(testutil::error_of([&] { Kinematics k(compile(s)); }), Contains("body 'free' floats free"));
    Spec loop = testutil::closed_loop_spec();
    loop.options.integrator = "none";
    CHECK_THAT(testutil::error_of([&] { Kinematics k(compile(loop)); }), Contains("closes a kinematic loop"));
    auto m = compile(arm());
    Kinematics k(m);
    std::vector<double> q(5, 0.0), J(30);
    CHECK_THAT(testutil::error_of([&] { k.body_jacobian(q.data(), 9, J.data()); }), Contains("body index 9 out of range"));
}
