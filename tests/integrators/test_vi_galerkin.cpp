// vi-galerkin (paper 002, docs/design/galerkin-vi.md): the collocation coefficients, the residual
// against the gradient of an independently coded Galerkin action, the O(n) Newton direction
// against a dense solve, convergence orders 2s against a tight dp45 solution, energy and
// discrete Noether, agreement with vi-maximal, write-back, failures, restarts and options.
//
// White box: this test links the plugin's passes (the object library noether_galerkin_passes,
// plugins/integrators/vi_galerkin/galerkin.hpp) to reach them; the plugin built from the same
// sources is loaded as usual by the Models below.
#include "galerkin.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>

#include <iomanip>

#include "tree_util.hpp"
#include "util.hpp"

using namespace noether;
using namespace noether::galerkin_vi;
using Catch::Matchers::Contains;
using testutil::MatX;
using testutil::Rng;
using testutil::VecX;

namespace {

using testutil::run_steps;

Spec galerkin(Spec s, int points, double dt) {
    s.options.integrator = "vi-galerkin";
    s.options.extra["points"] = points;
    s.options.dt = dt;
    return s;
}

// A branched tree of revolute and prismatic joints with a fixed joint inside, random
// axes, attachments and full inertias (galerkin-vi.md §4's random trees).
Spec random_tree(unsigned seed = 7, std::vector<int> parent = {-1, 0, 0, 1, 1, 2, 2}) {
    Rng r(seed);
    Spec s;
    const int nb = static_cast<int>(parent.size());
    for (int i = 0; i < nb; ++i) {
        BodySpec& b = s.add_body("T" + std::to_string(i));
        b.mass = r.uniform(0.5, 2);
        const Mat3 R = rotation(r.quat());
        b.inertia = R * testutil::box_inertia(b.mass, r.uniform(0.2, 1), r.uniform(0.2, 1), r.uniform(0.2, 1)) * transpose(R);
        b.position = (parent[i] < 0 ? Vec3{0, 0, -0.5} : s.bodies[parent[i]].position + Vec3{0.3, 0, -0.6}) + r.vec(0.2);
        b.orientation = r.quat();
    }
    for (int i = 0; i < nb; ++i) {
        const char* type = i == 5 ? "fixed" : (i % 3 == 2 ? "prismatic" : "revolute");
        JointSpec& j = s.add_joint("q" + std::to_string(i), type, parent[i] < 0 ? "world" : "T" + std::to_string(parent[i]),
                                   "T" + std::to_string(i));
        j.anchor = s.bodies[i].position + Vec3{0, 0, 0.3} + r.vec(0.1);
        if (std::string(type) != "fixed") j.axis = r.unit();
    }
    s.gravity = Vec3{0.8, -1.1, -9.81};  // oblique
    return s;
}

// A branched tree with everything the step differentiates: springs, dampers, oblique gravity,
// body-frame and world forces at points, an input force and torque.
Spec forced_tree(int s, double dt, std::vector<int> parent = {-1, 0, 0, 1, 1, 2, 2}) {
    Spec spec = galerkin(testutil::with_springs(random_tree(11, std::move(parent)), 2.0, 0.4), s, dt);
    ForceSpec f1, f2;
    f1.body = "T4", f1.force = {0.3, 0.1, -0.4}, f1.torque = {0.2, -0.1, 0.05}, f1.body_frame = true, f1.point = Vec3{0.1, 0.2, -0.1};
    f2.body = "T2", f2.force = {-0.2, 0.5, 0.1}, f2.point = Vec3{-0.2, 0.1, 0.3};
    spec.forces = {f1, f2};
    return spec;
}

// The dense residual Jacobian ∂r/∂q^{k,1..s} by central differences of evaluate() (link-major
// rows and columns, like st.r and st.dx).
MatX residual_jacobian(const Model& m, const Data& d, State& st, double h) {
    const int n = st.n, s = st.lob.s;
    MatX J(n * s, n * s);
    int w = -1;
    const double e = 1e-6;
    for (int i = 0; i < n; ++i)
        for (int a = 1; a <= s; ++a) {
            double& x = st.ctrl[static_cast<std::size_t>(a) * n + i];
            const double x0 = x;
            x = x0 + e;
            Galerkin::evaluate(m, d, st, h, &w);
            const std::vector<double> rp = st.r;
            x = x0 - e;
            Galerkin::evaluate(m, d, st, h, &w);
            for (int k = 0; k < n * s; ++k) J(k, i * s + a - 1) = (rp[k] - st.r[k]) / (2 * e);
            x = x0;
        }
    return J;
}

// Joint rates q̇ (TreeView order) into the Data's body twists (and rates), at the Data's poses.
void set_joint_rates(const Model& m, Data& d, const std::vector<double>& qd) {
    const TreeView t = testutil::view_of(m);
    const int n = t.size();
    std::vector<double> q(n), prev(n, 0.0);
    tree_coordinates(t, d.pose.data(), prev.data(), q.data());
    std::vector<Frame> g(n);
    tree_link_poses(t, q.data(), g.data());
    std::vector<double> V(6 * n);
    tree_link_twists(t, q.data(), qd.data(), reinterpret_cast<double(*)[6]>(V.data()));
    for (int b = 0; b < m.nbodies(); ++b)
        if (t.body_link[b] >= 0) d.twist[b] = tree_body_twist(t, g.data(), reinterpret_cast<const double(*)[6]>(V.data()), b);
    for (int i = 0; i < n; ++i) d.rate[t.links[i].dof] = qd[i];
}

// A step of the forced tree at s points, off its solution: random joint rates (seed), applied
// force and torque, the step started and guessed, then the control points from node
// `first_node` on moved by up to ±0.02.
struct PerturbedStep {
    std::shared_ptr<const Model> m;
    std::unique_ptr<Data> d;
    State* st = nullptr;
    double h = 0;
};
PerturbedStep perturbed_step(int s, unsigned seed, int first_node, std::vector<int> parent = {-1, 0, 0, 1, 1, 2, 2}) {
    PerturbedStep p;
    p.m = compile(forced_tree(s, 0.02, std::move(parent)));
    p.d = std::make_unique<Data>(p.m);
    const TreeView t = testutil::view_of(*p.m);
    Rng r(seed);
    std::vector<double> qd(t.size());
    for (double& v : qd) v = r.uniform(-2, 2);
    set_joint_rates(*p.m, *p.d, qd);
    p.d->applied_force[3] = Vec3{0.5, -0.2, 0.3};
    p.d->applied_torque[6] = Vec3{0.1, 0.2, -0.3};
    p.st = &static_cast<State&>(*p.d->integrator_state);
    Galerkin::start(*p.m, *p.d, *p.st);
    p.h = p.m->options.dt;
    Galerkin::guess(*p.st, p.h);
    for (int k = first_node * p.st->n; k < (s + 1) * p.st->n; ++k) p.st->ctrl[k] += r.uniform(-0.02, 0.02);
    return p;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
    double e = 0;
    for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(a[i] - b[i]));
    return e;
}

}  // namespace

TEST_CASE("vi-galerkin Lobatto coefficients: trapezoid, Simpson and s = 3", "[galerkin]") {
    const Lobatto L1 = make_lobatto(1), L2 = make_lobatto(2), L3 = make_lobatto(3);
    CHECK(L1.w[0] == Approx(0.5));
    CHECK(L1.B[0][0] == Approx(-1));
    CHECK(L1.B[1][1] == Approx(1));
    const double b[3][3] = {{-3, 4, -1}, {-1, 0, 1}, {1, -4, 3}}, w[3] = {1.0 / 6, 2.0 / 3, 1.0 / 6};
    for (int j = 0; j < 3; ++j) {
        CHECK(L2.w[j] == Approx(w[j]).epsilon(1e-14));
        for (int a = 0; a < 3; ++a) CHECK(L2.B[j][a] == Approx(b[j][a]).margin(1e-13));
    }
    CHECK(L3.c[1] == Approx((1 - 1 / std::sqrt(5.0)) / 2).epsilon(1e-14));
    CHECK(L3.w[0] == Approx(1.0 / 12).epsilon(1e-14));
    CHECK(L3.w[1] == Approx(5.0 / 12).epsilon(1e-14));
    for (int s = 1; s <= 6; ++s) {  // exact for polynomials of degree 2s − 1; rows of B sum to 0
        const Lobatto L = make_lobatto(s);
        double sum = 0, quad = 0;
        for (int j = 0; j <= s; ++j) sum += L.w[j], quad += L.w[j] * std::pow(L.c[j], 2 * s - 1);
        CHECK(sum == Approx(1).epsilon(1e-14));
        CHECK(quad == Approx(1.0 / (2 * s)).epsilon(1e-13));
        for (int j = 0; j <= s; ++j) {
            double row = 0;
            for (int a = 0; a <= s; ++a) row += L.B[j][a];
            CHECK(std::fabs(row) < 1e-11);
        }
    }
}

TEST_CASE("vi-galerkin residual is the gradient of an independently coded Galerkin action", "[galerkin]") {
    // r^α = [α = 0] p^k + ∂L_d/∂q^{k,α} + Q^α (galerkin-vi.md §3), with L_d built here from the
    // kernel's composite-rigid-body mass matrix and body potentials (gravity, an input force; no
    // world-frame passes), joint springs, dampers and torques as Q^α = w_α h Q(q^α, q̇^α).
    for (int s : {1, 2, 3}) {
        Spec spec = galerkin(testutil::with_springs(random_tree(), 3.0, 0.7), s, 0.02);
        auto m = compile(spec);
        Data d(m);
        const TreeView t = testutil::view_of(*m);
        const int n = t.size();
        const Lobatto L = make_lobatto(s);
        Rng r(3 + s);
        std::vector<double> q0(n), qd0(n);
        for (int i = 0; i < n; ++i) qd0[i] = r.uniform(-2, 2);
        set_joint_rates(*m, d, qd0);
        for (int i = 0; i < n; ++i) d.actuation[t.links[i].dof] = r.uniform(-1, 1);
        const Vec3 push{0.7, -0.3, 0.4};  // an input force on T3: potential −push·x
        d.applied_force[3] = push;
        std::vector<double> prev(n, 0.0);
        tree_coordinates(t, d.pose.data(), prev.data(), q0.data());
        const double h = m->options.dt;
        // Control points near the solution, perturbed.
        std::vector<double> ctrl((s + 1) * n);
        for (int a = 0; a <= s; ++a)
            for (int i = 0; i < n; ++i) ctrl[a * n + i] = q0[i] + L.c[a] * h * qd0[i] + (a ? r.uniform(-0.01, 0.01) : 0.0);
        std::vector<double> res(s * n);
        REQUIRE(m->integrator->step_system(*m, d, ctrl.data() + n, res.data(), nullptr));

        auto lagrangian = [&](const std::vector<double>& c) {
            double Ld = 0;
            MatX M(n, n);
            for (int j = 0; j <= s; ++j) {
                std::vector<double> q(n), qd(n);
                for (int i = 0; i < n; ++i) {
                    q[i] = c[j * n + i];
                    for (int a = 0; a <= s; ++a) qd[i] += L.B[j][a] * c[a * n + i] / h;
                }
                tree_mass_matrix(t, q.data(), M.data());
                const Eigen::Map<const VecX> v(qd.data(), n);
                double V = 0;
                const std::vector<Pose> P = testutil::poses_at(*m, t, q);
                for (int b = 0; b < m->nbodies(); ++b) V -= m->bodies[b].mass * dot(m->gravity, P[b].x);
                V -= dot(push, P[3].x);
                for (int i = 0; i < n; ++i) {
                    const TreeLink& l = t.links[i];
                    V += 0.5 * l.stiffness * (q[i] - l.rest) * (q[i] - l.rest);
                }
                Ld += L.w[j] * h * (0.5 * v.dot(M * v) - V);
            }
            return Ld;
        };
        MatX M0(n, n);
        tree_mass_matrix(t, q0.data(), M0.data());
        const VecX p0 = M0 * Eigen::Map<const VecX>(qd0.data(), n);
        double worst = 0, scale = 0;
        const double e = 1e-5;
        for (int a = 0; a < s; ++a)
            for (int i = 0; i < n; ++i) {
                std::vector<double> c1 = ctrl, c2 = ctrl, c3 = ctrl, c4 = ctrl;
                const int k = a * n + i;
                c1[k] += e, c2[k] -= e, c3[k] += 2 * e, c4[k] -= 2 * e;
                const double grad =
                    (8 * (lagrangian(c1) - lagrangian(c2)) - (lagrangian(c3) - lagrangian(c4))) / (12 * e);
                double qd = 0;
                for (int b = 0; b <= s; ++b) qd += L.B[a][b] * ctrl[b * n + i] / h;
                const TreeLink& l = t.links[i];
                const double Q = L.w[a] * h * (d.actuation[l.dof] - l.damping * qd);  // springs are in V
                const double expect = (a == 0 ? p0[i] : 0.0) + grad + Q;
                worst = std::max(worst, std::fabs(res[k] - expect));
                scale = std::max(scale, std::fabs(res[k]));
            }
        INFO("s = " << s << ": max |r| = " << scale << ", max |r − independent| = " << worst);
        CHECK(scale > 1e-3);  // off the solution: a residual worth comparing
        CHECK(worst < 1e-8 * std::max(1.0, scale));
    }
}

TEST_CASE("vi-galerkin Newton direction equals a dense solve (O(n) articulated condensation)", "[galerkin]") {
    // galerkin-vi.md §5.3 and recipe 3, on a branched tree with springs, dampers, torques, an
    // oblique gravity, input forces and torques and the Model's forces (world and body frame, at
    // points), s = 1, 2, 3.
    for (int s : {1, 2, 3}) {
        PerturbedStep p = perturbed_step(s, 30 + s, 1);
        const auto& m = p.m;
        Data& d = *p.d;
        State& st = *p.st;
        const double h = p.h;
        int w = -1;
        Galerkin::evaluate(*m, d, st, h, &w);
        const std::vector<double> r0 = st.r;
        REQUIRE(Galerkin::factor(st, h));
        std::vector<double> b(r0.size()), x(r0.size());
        for (std::size_t k = 0; k < b.size(); ++k) b[k] = -r0[k];
        Galerkin::solve(st, b.data(), x.data());
        const MatX J = residual_jacobian(*m, d, st, h);
        const VecX dense = J.fullPivLu().solve(Eigen::Map<const VecX>(b.data(), b.size()));
        const Eigen::Map<const VecX> rec(x.data(), x.size());
        const double err = (rec - dense).norm() / dense.norm();
        INFO("s = " << s << ": |direction| = " << dense.norm() << ", relative difference " << err);
        CHECK(dense.norm() > 1e-3);
        CHECK(err < 1e-7);  // central differences of the residual: ~1e-9
    }
}

TEST_CASE("vi-galerkin Newton direction equals a dense solve where Y^A is low-rank, dense, and both meet", "[galerkin]") {
    // A chain of 11 bodies with a branch of 4 off its third: the links near the tips keep Y^A as
    // blocks plus terms (State::lowrank), those with more than kMaxTerms links below are dense,
    // and a dense link takes a low-rank child's terms written out.
    const std::vector<int> parent = {-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 11, 12, 13};
    for (int s : {1, 2, 3}) {
        PerturbedStep p = perturbed_step(s, 40 + s, 1, parent);
        const auto& m = p.m;
        Data& d = *p.d;
        State& st = *p.st;
        int lowrank = 0, dense_over_lowrank = 0;
        for (int i = 0; i < st.n; ++i) {
            lowrank += st.lowrank[i] != 0;
            const int par = st.tree.links[i].parent;
            if (par >= 0 && st.lowrank[i] && !st.lowrank[par]) ++dense_over_lowrank;
        }
        CHECK(lowrank >= 6);
        CHECK(lowrank < st.n);
        CHECK(dense_over_lowrank >= 1);
        int w = -1;
        Galerkin::evaluate(*m, d, st, p.h, &w);
        const std::vector<double> r0 = st.r;
        REQUIRE(Galerkin::factor(st, p.h));
        std::vector<double> b(r0.size()), x(r0.size());
        for (std::size_t k = 0; k < b.size(); ++k) b[k] = -r0[k];
        Galerkin::solve(st, b.data(), x.data());
        const MatX J = residual_jacobian(*m, d, st, p.h);
        const VecX dense = J.fullPivLu().solve(Eigen::Map<const VecX>(b.data(), b.size()));
        const double err = (Eigen::Map<const VecX>(x.data(), x.size()) - dense).norm() / dense.norm();
        INFO("s = " << s << ": " << lowrank << " of " << st.n << " links low-rank; |direction| = " << dense.norm()
                    << ", relative difference " << err);
        CHECK(dense.norm() > 1e-3);
        CHECK(err < 1e-7);
    }
}

TEST_CASE("vi-galerkin converges at order 2s against a tight dp45 solution", "[galerkin]") {
    // 6-link chain released horizontally, q(1 s) against dp45-projection at atol = rtol = 1e-12.
    auto final_coords = [](const std::string& integrator, int s, double h) {
        Spec spec = testutil::chain_spec(6, "revolute", integrator);
        spec.options.dt = h;
        if (integrator == "vi-galerkin") spec.options.extra["points"] = s;
        if (integrator == "dp45-projection") spec.options.extra = {{"atol", 1e-12}, {"rtol", 1e-12}};
        auto m = compile(spec);
        Data d(m);
        run_steps(*m, d, static_cast<int>(std::lround(1.0 / h)));
        return d.coord;
    };
    const std::vector<double> ref = final_coords("dp45-projection", 0, 0.01);
    struct Case {
        int s;
        double h[3];
    };
    for (const Case& c : {Case{1, {0.02, 0.01, 0.005}}, Case{2, {0.04, 0.02, 0.01}}, Case{3, {0.05, 0.025, 0.0125}}}) {
        double e[3];
        for (int i = 0; i < 3; ++i) e[i] = max_abs_diff(final_coords("vi-galerkin", c.s, c.h[i]), ref);
        INFO("s = " << c.s << ": errors " << e[0] << " " << e[1] << " " << e[2] << ", orders "
                    << std::log2(e[0] / e[1]) << " " << std::log2(e[1] / e[2]));
        CHECK(std::log2(e[1] / e[2]) == Approx(2 * c.s).margin(c.s < 3 ? 0.15 : 0.3));
    }
}

TEST_CASE("vi-galerkin energy stays bounded: double pendulum at dt 0.01 for 600 s", "[galerkin]") {
    // galerkin-vi.md §10 recipe 7: Simpson max |E − E0| 3.13e-4 J, trapezoid 0.232 J; no drift. The
    // recipe's Newton directions per step (3.01 / 3.54) are exact Newton's (checked in the chord test
    // below); the default chord iteration takes a few more, each without a factorization.
    struct Case {
        int s;
        double max_dev, drift, newton;
    };
    for (const Case& c : {Case{2, 3.15e-4, 2e-5, 3.4}, Case{1, 0.25, 2e-2, 4.8}}) {
        auto m = compile(galerkin(testutil::chain_spec(2, "revolute"), c.s, 0.01));
        Data d(m);
        const double E0 = monitors(*m, d).total;
        double dev = 0, first = 0, last = 0;
        const int steps = 60000, window = 6000;
        for (int i = 1; i <= steps; ++i) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            const double E = monitors(*m, d).total - E0;
            dev = std::max(dev, std::fabs(E));
            if (i <= window) first += E / window;
            if (i > steps - window) last += E / window;
        }
        const double newton = double(d.stats.newton_total) / d.stats.steps;
        INFO("s = " << c.s << ": max |E − E0| " << dev << " J, 60-s means " << first << " / " << last << " J, Newton "
                    << newton);
        CHECK(dev < c.max_dev);
        CHECK(dev > 0.3 * c.max_dev);  // the method's own error, not a frozen state
        CHECK(std::fabs(last - first) < c.drift);
        CHECK(newton < c.newton);
        CHECK(monitors(*m, d).max_violation < 1e-12);
    }
}

TEST_CASE("vi-galerkin conserves the momentum of a symmetry (discrete Noether) and reports H(q, p)", "[galerkin]") {
    // Root joint about world z through the origin (gravity along z leaves that rotation a
    // symmetry), four more revolute joints on random axes, random rates: p_1 = the angular
    // momentum about z is conserved to round-off; the continuous write-back makes the monitors
    // the energy H = ½ q̇ᵀ M(q) q̇ + V(q) with q̇ = M⁻¹ p.
    Rng r(10);
    Spec s;
    for (int i = 0; i < 5; ++i) {
        BodySpec& b = s.add_body("b" + std::to_string(i));
        b.mass = r.uniform(0.5, 2);
        b.inertia = testutil::box_inertia(b.mass, r.uniform(0.2, 1), r.uniform(0.2, 1), r.uniform(0.2, 1));
        b.position = {0.5 + 0.6 * i, 0.1 * i, -0.3 * i};
        b.orientation = r.quat();
    }
    for (int i = 0; i < 5; ++i) {
        JointSpec& j = s.add_joint("j" + std::to_string(i), "revolute", i == 0 ? "world" : "b" + std::to_string(i - 1),
                                   "b" + std::to_string(i));
        j.anchor = i == 0 ? Vec3{0, 0, 0} : Vec3{0.2 + 0.6 * i, 0.1 * i, -0.3 * i + 0.1};
        j.axis = i == 0 ? Vec3{0, 0, 1} : r.unit();
    }
    for (int points : {1, 2}) {
        auto m = compile(galerkin(s, points, 0.01));
        Data d(m);
        std::vector<double> qd(5);
        for (double& v : qd) v = r.uniform(-2, 2);
        set_joint_rates(*m, d, qd);
        const double L0 = monitors(*m, d).angular_momentum.z, E0 = monitors(*m, d).total;
        double worst = 0, dE = 0, worstH = 0;
        const TreeView t = testutil::view_of(*m);
        for (int k = 0; k < 500; ++k) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            const Monitors mon = monitors(*m, d);
            worst = std::max(worst, std::fabs(mon.angular_momentum.z - L0));
            dE = std::max(dE, std::fabs(mon.total - E0));
            if (k % 50 == 0) {  // H from the kernel's mass matrix and the written joint rates
                std::vector<double> q(5), prev(5, 0.0);
                for (int i = 0; i < 5; ++i) prev[i] = d.coord[t.links[i].dof];
                tree_coordinates(t, d.pose.data(), prev.data(), q.data());
                MatX M(5, 5);
                tree_mass_matrix(t, q.data(), M.data());
                VecX v(5);
                for (int i = 0; i < 5; ++i) v[i] = d.rate[t.links[i].dof];
                double H = 0.5 * v.dot(M * v);
                for (int b = 0; b < 5; ++b) H -= m->bodies[b].mass * dot(m->gravity, d.pose[b].x);
                worstH = std::max(worstH, std::fabs(H - mon.total));
            }
        }
        INFO("points " << points << ": |L_z| = " << std::fabs(L0) << ", drift " << worst << "; energy change " << dE
                       << " J; |H − monitor| " << worstH);
        CHECK(std::fabs(L0) > 0.1);
        CHECK(worst < 1e-10);  // 500 steps at a step tolerance of 1e-12
        CHECK(worstH < 1e-10);
        CHECK(dE < (points == 1 ? 0.05 : 1e-3));
    }
}

TEST_CASE("vi-galerkin agrees with vi-maximal and dp45-projection on a branched tree", "[galerkin]") {
    auto final_state = [](const std::string& integrator, int points, double h) {
        Spec s = testutil::with_springs(random_tree(), 2.0, 0.3);
        s.options.integrator = integrator;
        s.options.dt = h;
        if (integrator == "vi-galerkin") s.options.extra["points"] = points;
        if (integrator == "dp45-projection") s.options.extra = {{"atol", 1e-11}, {"rtol", 1e-11}};
        auto m = compile(s);
        Data d(m);
        for (std::size_t k = 0; k < d.actuation.size(); ++k) d.actuation[k] = 0.3 * std::cos(double(k));
        run_steps(*m, d, static_cast<int>(std::lround(0.5 / h)));
        return d.coord;
    };
    const std::vector<double> ref = final_state("dp45-projection", 0, 0.01);
    const double e2 = max_abs_diff(final_state("vi-galerkin", 2, 0.01), ref);
    const double e1 = max_abs_diff(final_state("vi-galerkin", 1, 0.01), ref);
    const double emax_a = max_abs_diff(final_state("vi-maximal", 0, 2e-3), final_state("vi-galerkin", 2, 0.01));
    const double emax_b = max_abs_diff(final_state("vi-maximal", 0, 1e-3), final_state("vi-galerkin", 2, 0.01));
    INFO("vi-galerkin s=2 " << e2 << ", s=1 " << e1 << "; |vi-maximal − vi-galerkin| at 2e-3 " << emax_a << ", 1e-3 "
                            << emax_b);
    CHECK(e2 < 5e-8);
    CHECK(e1 < 2e-4);
    CHECK(e2 < 0.01 * e1);
    // vi-maximal converges to the Galerkin trajectory at its own (first) order.
    CHECK(emax_b < 0.6 * emax_a);
    CHECK(emax_b < 1e-3);
}

TEST_CASE("vi-galerkin: failures leave the Data at the last good step, subdivision, save and restore", "[galerkin]") {
    Spec s = galerkin(testutil::chain_spec(10, "revolute"), 2, 0.05);
    s.options.max_iterations = 1;
    s.options.max_substeps = 1;
    auto m = compile(s);
    Data d(m);
    CHECK(step(*m, d) == StepStatus::not_converged);
    CHECK(d.stats.failed_steps == 1);
    REQUIRE(!d.warnings.empty());
    CHECK_THAT(d.warnings.back().message, Contains("not converged at dt = 0.05 s"));
    Data fresh(m);
    for (int b = 0; b < m->nbodies(); ++b) {
        CHECK(std::memcmp(&d.pose[b], &fresh.pose[b], sizeof(Pose)) == 0);
        CHECK(std::memcmp(&d.twist[b], &fresh.twist[b], sizeof(Twist)) == 0);
    }
    // Subdivision recovers where one step at dt does not, and stays on the trajectory.
    Spec s2 = galerkin(testutil::chain_spec(10, "revolute"), 2, 0.05);
    s2.options.max_iterations = 4;
    auto m2 = compile(s2);
    Data d2(m2);
    run_steps(*m2, d2, 20);
    CHECK(d2.stats.subdivided_steps > 5);
    auto m3 = compile(galerkin(testutil::chain_spec(10, "revolute"), 2, 0.0125));
    Data d3(m3);
    run_steps(*m3, d3, 80);
    CHECK(max_abs_diff(d2.coord, d3.coord) < 1e-3);
    CHECK(testutil::restore_replays(*m3, d3, 30));  // save, continue, restore, continue: bit for bit
    // Subdivided steps too: within one, the slope at a substep's end is unknown (qd0 NaN) and the
    // guess is the plain extrapolation; a restored run repeats it bit for bit.
    CHECK(testutil::restore_replays(*m2, d2, 10));
}

TEST_CASE("vi-galerkin restarts from the Data when a host moves the bodies or changes their velocities", "[galerkin]") {
    auto m = compile(galerkin(testutil::chain_spec(3, "revolute"), 2, 0.01));
    Data moved(m), fresh(m);
    run_steps(*m, moved, 30);
    moved.pose = fresh.pose;
    moved.coord = fresh.coord;
    for (Twist& t : moved.twist) t = Twist{};
    run_steps(*m, moved, 1);
    run_steps(*m, fresh, 1);
    for (int b = 0; b < m->nbodies(); ++b) {
        CHECK(std::memcmp(&moved.pose[b], &fresh.pose[b], sizeof(Pose)) == 0);
        CHECK(std::memcmp(&moved.twist[b], &fresh.twist[b], sizeof(Twist)) == 0);
    }
    // A velocity change alone is taken too: the energy after it is the new state's.
    Data a(m);
    run_steps(*m, a, 30);
    for (Twist& t : a.twist) t = Twist{};
    const double E = monitors(*m, a).total;  // potential only
    run_steps(*m, a, 1);
    CHECK(std::fabs(monitors(*m, a).total - E) < 1e-3);
    // Without a change the run continues on its own state, bit for bit.
    Data b(m), c(m);
    run_steps(*m, b, 31);
    run_steps(*m, c, 30);
    const std::string saved = c.save();
    c.restore(saved);
    run_steps(*m, c, 1);
    CHECK(b.save() == c.save());
}

TEST_CASE("vi-galerkin refuses what it cannot take, with clear errors", "[galerkin]") {
    auto error_of = [](const std::function<void(Spec&)>& edit) {
        Spec s = galerkin(testutil::chain_spec(2, "revolute"), 2, 0.01);
        edit(s);
        try {
            compile(s);
        } catch (const ModelError& e) {
            return std::string(e.what());
        }
        return std::string("compiled");
    };
    CHECK(error_of([](Spec&) {}) == "compiled");
    CHECK_THAT(error_of([](Spec& s) { s.options.extra["points"] = 0; }),
               Contains("vi-galerkin option 'points' must be an integer from 1 to 6"));
    CHECK_THAT(error_of([](Spec& s) { s.options.extra["points"] = 2.5; }), Contains("got 2.5"));
    CHECK_THAT(error_of([](Spec& s) { s.options.extra_lists["points"] = {"simpson"}; }),
               Contains("'points', 'step_tolerance' and 'max_turn' are numbers"));
    CHECK_THAT(error_of([](Spec& s) { s.options.extra_lists["max_turn"] = {"fast"}; }),
               Contains("'points', 'step_tolerance' and 'max_turn' are numbers"));
    CHECK_THAT(error_of([](Spec& s) { s.options.extra["max_turn"] = -0.1; }),
               Contains("vi-galerkin option 'max_turn' (radians per substep) must be in [0, 3.1] (0: off), got -0.1"));
    CHECK_THAT(error_of([](Spec& s) { s.options.extra["max_turn"] = 4; }), Contains("must be in [0, 3.1] (0: off), got 4"));
    CHECK_THAT(error_of([](Spec& s) { s.options.extra["step_tolerance"] = 0; }),
               Contains("'step_tolerance' must be positive and finite, got 0"));
    CHECK_THAT(error_of([](Spec& s) { s.options.extra["substep_hold"] = 2.5; }),
               Contains("vi-galerkin option 'substep_hold' (steps a subdivision is kept) must be a whole number"));
    CHECK_THAT(error_of([](Spec& s) { s.options.extra_lists["substep_hold"] = {"long"}; }),
               Contains("vi-galerkin option 'substep_hold' must be a number"));
    CHECK_THAT(error_of([](Spec& s) { s.options.extra["tol"] = 1; }),
               Contains("'tol' is not an option of integrator 'vi-galerkin'"));
    CHECK_THAT(error_of([](Spec& s) {
                   s.joints[1].type = "spherical";
                   s.joints[1].axis.reset();
               }),
               Contains("vi-galerkin: joint 'j2' (spherical) has 3 degrees of freedom; vi-galerkin takes 1-DOF joints"));
    CHECK_THAT(error_of([](Spec& s) { s.joints.erase(s.joints.begin()); }),
               Contains("vi-galerkin: body 'link1' floats free"));
}

TEST_CASE("vi-galerkin max_turn: substeps while a link turns fast keep a whipping chain's energy, a slow scene steps as "
          "without it",
          "[galerkin]") {
    // The 8-link chain of the examples with points = 1 (the trapezoid), 10 s at dt 0.01: its tip whips
    // at up to 0.5 rad a step, and the plain steps let the energy stray by 167 J.
    const testutil::TurnRuns r = testutil::max_turn_runs(galerkin(testutil::chain_spec(8, "revolute"), 1, 0.01), 1000);
    INFO("largest energy deviation: plain steps " << r.dev_plain << " J (" << r.k_plain << " substeps at most), max_turn 0.1 "
                                                  << r.dev_turn << " J (" << r.k_turn << ")");
    CHECK(r.off == r.plain);  // 0 is off: bit for bit the plain run
    CHECK(r.k_plain == 1);
    CHECK(r.k_turn >= 4);
    CHECK(r.dev_plain > 100);
    CHECK(r.dev_turn < 0.25 * r.dev_plain);
    // A substep of the turn limit is a step of its length: a pendulum going over the top at 22–25 rad/s
    // asks for 4 substeps at 0.1 rad (0.25 rad a step), and 100 of them take it where 400 steps of
    // dt/4 do.
    auto spinning = [](double dt, double max_turn, int steps) {
        Spec s = galerkin(testutil::chain_spec(1, "revolute"), 2, dt);
        s.bodies[0].angular_velocity = {0, 25, 0};
        s.bodies[0].velocity = cross(Vec3{0, 25, 0}, Vec3{0.5, 0, 0});  // about the hinge at its end
        if (max_turn > 0) s.options.extra["max_turn"] = max_turn;
        auto m = compile(s);
        Data d(m);
        int k = 0;
        for (int i = 0; i < steps; ++i) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            k = std::max(k, d.last.substeps);
        }
        return std::make_pair(d.coord[0], k);
    };
    const auto limited = spinning(0.01, 0.1, 100), fine = spinning(0.0025, 0, 400);
    CHECK(limited.second == 4);
    CHECK(fine.second == 1);
    CHECK_THAT(limited.first, Catch::Matchers::WithinAbs(fine.first, 1e-10));  // (measured: 1-3e-12 apart, the step tolerance)
    CHECK(limited.first > 22);  // a turn of more than 3.5 revolutions in the 1 s
    // The double pendulum never turns 0.5 rad a step in 2 s: bit for bit the plain run.
    CHECK(testutil::turn_changes_nothing(galerkin(testutil::chain_spec(2, "revolute"), 2, 0.01), 0.5, 200));
}

TEST_CASE("vi-galerkin accepts Newton's round-off floor on long chains instead of subdividing", "[galerkin]") {
    // 512-link chain, Simpson, dt = 0.001: the corrections stall at ~1.5e-12, just above
    // step_tolerance = 1e-12; before the floor rule such steps ran 50 iterations, failed and
    // were retaken as substeps (26 of 200 steps).
    auto m = compile(galerkin(testutil::chain_spec(512, "revolute"), 2, 0.001));
    Data d(m);
    run_steps(*m, d, 200);
    INFO("floor steps " << d.stats.floor_steps << ", Newton max " << d.stats.newton_max);
    CHECK(d.stats.subdivided_steps == 0);
    CHECK(d.stats.floor_steps > 0);
    CHECK(d.stats.newton_max < 8);
}

// ---- linearisation ------------------------------------------------------------------------------

namespace {


// x = (coord, rate) of the Data.
std::vector<double> joint_state(const Model& m, const Data& d) {
    std::vector<double> x(d.coord.begin(), d.coord.end());
    x.insert(x.end(), d.rate.begin(), d.rate.begin() + m.total_dofs);
    return x;
}

struct FdResult {
    double err_A = 0, err_B = 0, scale_A = 0, scale_B = 0, err_next = 0;
};

// The linearisation at (x0, u0) against central differences of noether::step itself.
FdResult linearization_vs_fd(const Model& m, const std::vector<double>& x0, const std::vector<double>& u0, double e) {
    const int n = m.total_dofs;
    Data d(std::shared_ptr<const Model>(&m, [](const Model*) {}));
    auto put = [&](const std::vector<double>& x, const std::vector<double>& u) {
        set_joint_state(m, d, x.data(), x.data() + n);
        for (int k = 0; k < n; ++k) d.actuation[k] = u[k];
    };
    auto next = [&](const std::vector<double>& x, const std::vector<double>& u) {
        put(x, u);
        REQUIRE(step(m, d) == StepStatus::ok);
        return joint_state(m, d);
    };
    put(x0, u0);
    Linearization lin;
    REQUIRE(linearize(m, d, lin) == StepStatus::ok);
    REQUIRE(lin.n == n);
    FdResult out;
    for (int k = 0; k < 2 * n; ++k) out.err_next = std::max(out.err_next, std::fabs(lin.x[k] - x0[k]));
    const std::vector<double> x1 = next(x0, u0);
    for (int k = 0; k < 2 * n; ++k) out.err_next = std::max(out.err_next, std::fabs(lin.x_next[k] - x1[k]));
    for (int c = 0; c < 3 * n; ++c) {
        std::vector<double> xp = x0, xm = x0, up = u0, um = u0;
        if (c < 2 * n) xp[c] += e, xm[c] -= e;
        else up[c - 2 * n] += e, um[c - 2 * n] -= e;
        const std::vector<double> fp = next(xp, up), fm = next(xm, um);
        for (int r = 0; r < 2 * n; ++r) {
            const double fd = (fp[r] - fm[r]) / (2 * e);
            const double an = c < 2 * n ? lin.A[r * 2 * n + c] : lin.B[r * n + (c - 2 * n)];
            double& err = c < 2 * n ? out.err_A : out.err_B;
            double& scale = c < 2 * n ? out.scale_A : out.scale_B;
            err = std::max(err, std::fabs(fd - an));
            scale = std::max(scale, std::fabs(an));
        }
    }
    return out;
}

}  // namespace

TEST_CASE("vi-galerkin tangent of Algorithm 1 equals central differences at every node", "[galerkin][linearize]") {
    // ∂R^{0..s}/∂q^{k,0..s} (node 0 included: the step's dependence on q^k) on the forced tree.
    for (int s : {1, 2, 3}) {
        PerturbedStep p = perturbed_step(s, 40 + s, 0);
        const auto& m = p.m;
        Data& d = *p.d;
        State& st = *p.st;
        const double h = p.h;
        const int n = st.n, nn = s + 1;
        auto residual_all = [&](std::vector<double>& R) {  // R^{0..s}, node-major, without p^k
            int w = -1;
            Galerkin::evaluate(*m, d, st, h, &w);
            for (int i = 0; i < n; ++i) {
                for (int a = 0; a < s; ++a) R[a * n + i] = st.r[i * s + a] - (a == 0 ? st.p[i] : 0.0);
                R[s * n + i] = st.pn[i];
            }
        };
        std::vector<double> R0(nn * n), Rp(nn * n), Rm(nn * n);
        residual_all(R0);
        double worst = 0, scale = 0;
        const double e = 1e-6;
        for (int c = 0; c < nn * n; ++c) {
            residual_all(R0);  // the tangent uses the passes at the unperturbed point
            std::fill(st.ldq.begin(), st.ldq.end(), 0.0);
            st.ldq[c] = 1;
            Galerkin::residual_tangent(st, h);
            const std::vector<double> an = st.ldR;
            const double x0 = st.ctrl[c];
            st.ctrl[c] = x0 + e;
            residual_all(Rp);
            st.ctrl[c] = x0 - e;
            residual_all(Rm);
            st.ctrl[c] = x0;
            for (int k = 0; k < nn * n; ++k) {
                worst = std::max(worst, std::fabs((Rp[k] - Rm[k]) / (2 * e) - an[k]));
                scale = std::max(scale, std::fabs(an[k]));
            }
        }
        INFO("s = " << s << ": max |∂R/∂q| = " << scale << ", max |tangent − central differences| = " << worst);
        CHECK(scale > 1);
        CHECK(worst < 1e-7 * scale);
    }
}

TEST_CASE("vi-galerkin linearize equals central differences of the step (chain and branched tree)", "[galerkin][linearize]") {
    // galerkin-vi.md §8: ∂x_{k+1}/∂x_k and ∂x_{k+1}/∂u with x = (coord, rate), u = actuation, against
    // central differences of noether::step from states set by set_joint_state.
    struct Case {
        const char* name;
        Spec spec;
    };
    Spec chain = galerkin(testutil::with_springs(testutil::chain_spec(5, "revolute"), 1.5, 0.3), 2, 0.01);
    std::vector<Case> cases = {{"chain, Simpson", chain}, {"forced tree, trapezoid", forced_tree(1, 0.01)},
                               {"forced tree, Simpson", forced_tree(2, 0.01)}, {"forced tree, s = 3", forced_tree(3, 0.02)}};
    for (const Case& cs : cases) {
        auto m = compile(cs.spec);
        const int n = m->total_dofs;
        Rng r(5);
        std::vector<double> x0(2 * n), u0(n);
        for (int k = 0; k < n; ++k) x0[k] = r.uniform(-0.6, 0.6), x0[n + k] = r.uniform(-1.5, 1.5), u0[k] = r.uniform(-1, 1);
        // h = 1e-4: truncation ~1e-8; the step's own noise (Newton stops at corrections of 1e-12)
        // is ~1e-13 / h (at h = 1e-6 it reached 2e-7 on the chain).
        const FdResult f = linearization_vs_fd(*m, x0, u0, 1e-4);
        INFO(cs.name << ": max|A| " << f.scale_A << ", error " << f.err_A << "; max|B| " << f.scale_B << ", error "
                     << f.err_B << "; x, x_next against the step " << f.err_next);
        CHECK(f.scale_A > 0.5);
        CHECK(f.scale_B > 1e-3);
        CHECK(f.err_A < 1e-6 * f.scale_A);
        CHECK(f.err_B < 1e-6 * f.scale_B);
        CHECK(f.err_next < 1e-11);
    }
}

TEST_CASE("vi-galerkin linearize leaves the Data as it was and the next step unchanged", "[galerkin][linearize]") {
    auto m = compile(forced_tree(2, 0.01));
    Data a(m), b(m);
    for (Data* d : {&a, &b}) {
        d->actuation[0] = 0.4;
        run_steps(*m, *d, 3);
    }
    const std::string before = a.save();
    Linearization lin;
    REQUIRE(linearize(*m, a, lin) == StepStatus::ok);
    CHECK(a.save() == before);
    run_steps(*m, a, 5);
    run_steps(*m, b, 5);
    CHECK(a.save() == b.save());  // bit for bit
    // The first call sized the matrices; x is the Data's (coord, rate).
    CHECK(lin.A.size() == std::size_t(4 * lin.n * lin.n));
    CHECK(lin.B.size() == std::size_t(2 * lin.n * lin.n));
}

TEST_CASE("linearize names the integrators that have it, set_joint_state refuses what it cannot set", "[galerkin][linearize]") {
    Spec spec = testutil::chain_spec(3, "revolute", "vi-maximal");
    auto m = compile(spec);
    Data d(m);
    Linearization lin;
    CHECK_THROWS_WITH(linearize(*m, d, lin), Contains("integrator 'vi-maximal' has no linearisation") && Contains("vi-galerkin"));
    auto loop = compile(testutil::closed_loop_spec());
    Data dl(loop);
    std::vector<double> zero(loop->total_dofs + 8, 0.0);
    CHECK_THROWS_WITH(set_joint_state(*loop, dl, zero.data(), zero.data()), Contains("set_joint_state: needs a tree of 1-DOF joints"));
    std::vector<double> q(3, 0.0), qd(3, 0.0);
    qd[1] = NAN;
    CHECK_THROWS_WITH(set_joint_state(*m, d, q.data(), qd.data()), Contains("rate 1 (joint 'j2') is not finite"));
}

// vi-galerkin undoes its own failed steps (Integrator::rolls_back_itself): the kernel takes no
// snapshot for it. Failing steps — after Newton iterations at one substep (a chain; a closed
// four-bar, whose loop multipliers the iterations move), and through every subdivision (the
// substeps commit one by one) — leave Data and the saved state as a copy restored from the bytes
// saved before the step, and the same step taken again fails the same way.
TEST_CASE("vi-galerkin undoes its own failed steps: Data and its state as in a copy restored from before the step", "[galerkin]") {
    struct Case {
        const char* name;
        Spec spec;
        int max_iterations, max_substeps;
    };
    const Case cases[] = {
        {"a chain, one substep", galerkin(testutil::chain_spec(10, "revolute"), 2, 0.01), 4, 1},
        {"a chain, every subdivision", galerkin(testutil::chain_spec(10, "revolute"), 2, 0.01), 4, 4},
        {"a closed four-bar, one substep", galerkin(testutil::closed_loop_spec("revolute"), 2, 0.05), 5, 1},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        Spec s = c.spec;
        s.options.max_iterations = c.max_iterations;
        s.options.max_substeps = c.max_substeps;
        auto m = compile(s);
        REQUIRE(m->integrator->rolls_back_itself());
        Data d(m);
        StepStatus st;
        const std::string before = testutil::step_until_failure(*m, d, 2000, &st);
        REQUIRE(st != StepStatus::ok);
        CHECK(d.step > 0);  // not the start's step: the attempt began from the state carried
        testutil::check_failure_undone(m, d, before, st, c.max_iterations);
    }
}

// ---- loop closures (§7) -------------------------------------------------------------------------

TEST_CASE("vi-galerkin closed four-bar: galerkin-vi.md recipe 9 (point-on-line closure)", "[galerkin][loops]") {
    // 1000 steps of 0.01 from rest; H = the monitors' energy (velocities projected onto the
    // constraints). Reference: s = 1 H in [−14.71562, −14.62101], s = 2 in [−14.71500, −14.71495],
    // max |h| 1.3e-15, Newton mean 3.49 (s = 1) and 2.98 (s = 2, exact curvature; ours leaves it out).
    for (int s : {1, 2}) {
        Spec spec = galerkin(testutil::closed_loop_spec("point-on-line"), s, 0.01);
        auto m = compile(spec);
        Data d(m);
        double lo = INFINITY, hi = -INFINITY, viol = 0, angle = 0;
        for (int k = 0; k < 1000; ++k) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            const Monitors mon = monitors(*m, d);
            lo = std::min(lo, mon.total), hi = std::max(hi, mon.total);
            viol = std::max(viol, mon.max_violation);
            angle = std::max(angle, std::fabs(d.coord[0]));
        }
        const double newton = double(d.stats.newton_total) / d.stats.steps;
        INFO(std::setprecision(8) << "s = " << s << ": H in [" << lo << ", " << hi << "], max violation " << viol << ", Newton mean " << newton
                    << ", largest crank angle " << angle);
        CHECK(viol < 1e-10);
        CHECK(angle == Approx(M_PI / 2).epsilon(2e-3));  // L1 swings 0° → 90°
        if (s == 1) {
            CHECK(lo == Approx(-14.71562).margin(2e-5));
            CHECK(hi == Approx(-14.62101).margin(2e-4));
            CHECK(newton < 4.8);  // chord iterations (exact Newton: < 3.6)
        } else {
            CHECK(lo > -14.71501);
            CHECK(hi < -14.71494);
            CHECK(newton < 3.6);
        }
    }
}

TEST_CASE("vi-galerkin closed loops agree with dp45 and keep their closure to round-off (revolute closure, redundant rows)", "[galerkin][loops]") {
    // fourbar.lua's mechanism: the closing hinge has 5 rows, 3 of them redundant in the plane.
    // q(1 s) of the crank against dp45-projection at 1e-11: Simpson at dt 0.01 within 1e-6, the
    // trapezoid within 1e-3 and at least 100× farther (orders 4 and 2).
    auto crank_at_1s = [](const std::string& integrator, int s, double dt) {
        Spec spec = testutil::closed_loop_spec("revolute");
        spec.options.integrator = integrator;
        spec.options.dt = dt;
        if (integrator == "vi-galerkin") spec.options.extra["points"] = s;
        if (integrator == "dp45-projection") spec.options.extra["atol"] = 1e-11, spec.options.extra["rtol"] = 1e-11;
        auto m = compile(spec);
        Data d(m);
        double viol = 0;
        for (int k = 0; k < static_cast<int>(std::lround(1.0 / dt)); ++k) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            viol = std::max(viol, monitors(*m, d).max_violation);
        }
        if (integrator == "vi-galerkin") CHECK(viol < 1e-10);
        return d.coord[0];
    };
    const double ref = crank_at_1s("dp45-projection", 0, 0.01);
    const double e2 = std::fabs(crank_at_1s("vi-galerkin", 2, 0.01) - ref);
    const double e1 = std::fabs(crank_at_1s("vi-galerkin", 1, 0.01) - ref);
    INFO("crank at 1 s: dp45 " << ref << ", |Simpson − dp45| " << e2 << ", |trapezoid − dp45| " << e1);
    CHECK(std::fabs(ref) > 0.3);
    CHECK(e2 < 1e-6);
    CHECK(e1 < 1e-3);
    CHECK(e1 > 100 * e2);
}

TEST_CASE("vi-galerkin loops: linearize refuses, loop springs are refused at compile time", "[galerkin][loops]") {
    auto m = compile(galerkin(testutil::closed_loop_spec("point-on-line"), 2, 0.01));
    Data d(m);
    Linearization lin;
    CHECK_THROWS_WITH(linearize(*m, d, lin), Contains("closes a kinematic loop (not yet supported)"));
    Spec sp = galerkin(testutil::closed_loop_spec("revolute"), 2, 0.01);
    for (JointSpec& j : sp.joints)
        if (j.name == "closure") j.damping = {0.3};
    try {
        compile(sp);
        FAIL("compiled");
    } catch (const ModelError& e) {
        CHECK_THAT(e.what(), Contains("closes a kinematic loop and has a spring, damper or servo"));
    }
}

TEST_CASE("vi-galerkin's first guess takes the slope at q^k: fewer iterations, the same steps, replayed after a restore", "[galerkin]") {
    // 10-link chain from rest, 1 s at dt 0.01. The last interval's polynomial extrapolated took
    // 3.97 (s = 2) and 3.02 (s = 3) iterations a step; with the slope q̇ = M⁻¹p at q^k: 3.02, 2.62.
    const double limit[2] = {3.3, 2.8};
    for (int points = 2; points <= 3; ++points) {
        auto m = compile(galerkin(testutil::chain_spec(10, "revolute"), points, 0.01));
        Data d(m);
        for (int i = 0; i < 100; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
        const double mean = double(d.stats.newton_total) / d.stats.steps;
        INFO("points " << points << ": " << mean << " iterations a step");
        CHECK(mean < limit[points - 2]);
        // The guess only moves where Newton starts: the steps agree with a tight solve of the same
        // scheme (step_tolerance 1e-14, exact Newton) to the tolerance's scale.
        Spec tight = galerkin(testutil::chain_spec(10, "revolute"), points, 0.01);
        tight.options.extra["step_tolerance"] = 1e-14;
        tight.options.extra_lists["newton"] = {"exact"};
        auto mt = compile(tight);
        Data dt(mt);
        run_steps(*mt, dt, 100);
        CHECK(max_abs_diff(d.coord, dt.coord) < 1e-10);
        CHECK(testutil::restore_replays(*m, d, 20));  // (subdivided steps: the failures test)
    }
}

TEST_CASE("vi-galerkin chord Newton takes the steps of exact Newton to round-off, with one factor a step", "[galerkin]") {
    // Simpson on the double pendulum, 10 s at dt 0.01: the default (chord) against newton = "exact".
    // Both converge to 1e-12 a step; the motion is chaotic and their difference grows about tenfold
    // every 1.2 s (measured: 1.4e-13 at 1 s, 1.5e-12 at 2 s, 4.8e-11 at 5 s, 1.7e-9 at 10 s), so
    // the steps are compared at 2 s, and at 10 s only to that growth.
    std::vector<double> q[2], q2[2];
    double mean[2];
    for (int k = 0; k < 2; ++k) {
        Spec spec = galerkin(testutil::chain_spec(2, "revolute"), 2, 0.01);
        spec.options.extra_lists["newton"] = {k == 0 ? "exact" : "chord"};
        auto m = compile(spec);
        Data d(m);
        for (int i = 0; i < 1000; ++i) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            if (i == 199) q2[k] = d.coord;
        }
        q[k] = d.coord;
        mean[k] = double(d.stats.newton_total) / d.stats.steps;
    }
    INFO("Newton iterations per step: exact " << mean[0] << ", chord " << mean[1] << "; difference at 2 s "
                                             << max_abs_diff(q2[0], q2[1]) << ", at 10 s " << max_abs_diff(q[0], q[1]));
    CHECK(max_abs_diff(q2[0], q2[1]) < 1e-11);
    CHECK(max_abs_diff(q[0], q[1]) < 1e-8);
    CHECK(max_abs_diff(q[0], q[1]) > 0);     // two different iterations
    CHECK(mean[0] < 3.05);                   // galerkin-vi.md recipe 7: 3.01
    CHECK(mean[1] < 3.4);
    Spec bad = galerkin(testutil::chain_spec(2, "revolute"), 2, 0.01);
    bad.options.extra_lists["newton"] = {"quasi"};
    CHECK_THROWS_WITH(compile(bad), Catch::Contains("options: vi-galerkin option 'newton' must be one of 'chord', 'exact', got 'quasi'"));
}

TEST_CASE("vi-galerkin's default guess adds its last misses while they agree: fewer iterations, the same steps", "[galerkin]") {
    // guess = "feedback" against "polynomial" (the extrapolation alone): the misses of the last
    // guesses (converged less guessed), extrapolated by the line, parabola or cubic that predicted
    // the newest miss best (noether/sdk/misses.hpp), are added while ‖e_k − e_{k−1}‖ ≤ 0.25 ‖e_k‖.
    // 10-link chain from rest, 1 s; the double pendulum, 10 s.
    struct Case {
        int links, points;
        double dt;
        int steps;
        // iterations a step, measured (2026-11-28; with the line alone, 2026-11-27: 2.77, 2.35,
        // 1.562, 2.355)
        double polynomial, feedback;
        // The two runs' coordinates at the end: both solve every step to the tolerance, and the
        // chaotic double pendulum multiplies their difference tenfold every ~1.2 s (10 s: 5.9e-10,
        // 7.7e-10 and 1.2e-9 measured with three builds whose articulated-body arithmetic differed
        // only in round-off).
        double agree;
    };
    for (const Case& c : {Case{10, 2, 0.01, 100, 3.02, 2.66, 1e-9}, Case{10, 3, 0.01, 100, 2.62, 2.32, 1e-9},
                          Case{10, 2, 0.001, 1000, 1.998, 1.007, 1e-9}, Case{2, 2, 0.01, 1000, 2.705, 2.334, 1e-8}}) {
        std::vector<double> q[2];
        double mean[2];
        for (int k = 0; k < 2; ++k) {
            Spec spec = galerkin(testutil::chain_spec(c.links, "revolute"), c.points, c.dt);
            spec.options.extra_lists["guess"] = {k == 0 ? "polynomial" : "feedback"};
            auto m = compile(spec);
            Data d(m);
            for (int i = 0; i < c.steps; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
            q[k] = d.coord;
            mean[k] = double(d.stats.newton_total) / d.stats.steps;
            if (k == 1) CHECK(testutil::restore_replays(*m, d, 20));  // the misses are saved
        }
        INFO(c.links << " links, points " << c.points << ", dt " << c.dt << ": iterations polynomial " << mean[0]
                     << ", feedback " << mean[1] << "; coordinates differ by " << max_abs_diff(q[0], q[1]));
        CHECK(mean[0] == Approx(c.polynomial).margin(0.02));
        CHECK(mean[1] == Approx(c.feedback).margin(0.02));
        CHECK(max_abs_diff(q[0], q[1]) < c.agree);
    }
    Spec bad = galerkin(testutil::chain_spec(2, "revolute"), 2, 0.01);
    bad.options.extra_lists["guess"] = {"momentum"};
    CHECK_THROWS_WITH(compile(bad), Catch::Contains("vi-galerkin option 'guess' must be one of 'feedback', 'polynomial', got 'momentum'"));
}

TEST_CASE("vi-galerkin remembers a subdivision: less work on a 256-link chain's whip, a held state restores exactly",
          "[vi-galerkin][hold]") {
    // SubstepHold (option substep_hold, shared with vi-maximal and riqn): after Newton needed
    // substeps twice within 16 steps, the next steps start at them instead of failing at dt first.
    if (!NOETHER_TEST_SANITIZED) {  // (2.5 s here; the sanitizer build takes the restore below only)
        std::int64_t work[2] = {0, 0};
        double wall[2] = {0, 0};
        for (int k = 0; k < 2; ++k) {
            Spec s = testutil::chain_spec(256, "revolute", "vi-galerkin");
            s.options.dt = 0.01;
            s.options.extra["substep_hold"] = k == 0 ? 0 : 4;
            auto m = compile(s);
            Data d(m);
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < 700; ++i) REQUIRE(step(*m, d) == StepStatus::ok);
            wall[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            CHECK(d.stats.subdivided_steps > 50);
            work[k] = d.stats.newton_work;
        }
        std::printf("vi-galerkin hold, 256 links, 700 steps: Newton work %lld without, %lld with (%.2f / %.2f s)\n",
                    static_cast<long long>(work[0]), static_cast<long long>(work[1]), wall[0], wall[1]);
        CHECK(work[1] < 0.9 * work[0]);  // measured 0.78 (wall 1.75 → 1.25 s)
    }
    Spec s = testutil::chain_spec(128, "revolute", "vi-galerkin");
    s.options.dt = 0.01;
    auto m = compile(s);
    Data d(m);
    while (d.stats.subdivided_steps < 3) REQUIRE(step(*m, d) == StepStatus::ok);
    const std::int64_t sub = d.stats.subdivided_steps;
    CHECK(testutil::restore_replays(*m, d, 40));  // inside a hold: the hold is part of the saved state
    CHECK(d.stats.subdivided_steps > sub);
}
