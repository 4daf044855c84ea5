// Couplings between joint coordinates (docs/couplings.md): the residual's Jacobian against central
// differences, a geared rotor against the armature it reflects (the same Lagrangian), the gear
// ratio, energy and degrees of freedom of the shared models' rotor chain, Mini Cheetah and Panda,
// assembly onto a coupling, and every refusal naming the coupling.
#include <catch2/catch.hpp>

#include <cmath>

#include "urdf/models_util.hpp"
#include "noether/noether.hpp"
#include "noether/run.hpp"
#include "noether/urdf.hpp"
#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;
using testutil::MatX;

namespace {

constexpr double kRotorI = 2e-3;  // the rotor's inertia about the axis [kg m²]

// A 1 kg, 1 m rod hinged at the world origin about y and a rotor on the same axis, coupled
// rotor = ratio · rod; or (armature = true) the rod alone with the rotor's reflected inertia.
Spec geared_rod(double dt, double ratio, bool armature, const char* integrator = "vi-maximal") {
    Spec s = testutil::hinged_rod_spec(integrator, dt, 9.81);
    s.options.tolerance = 1e-12;
    if (armature) {
        s.joints[0].armature = {ratio * ratio * kRotorI};
        return s;
    }
    BodySpec& r = s.add_body("rotor");
    r.mass = 0.2;
    r.inertia = Mat3::diag(kRotorI, kRotorI, kRotorI);
    JointSpec& j = s.add_joint("motor", "revolute", "world", "rotor");
    j.anchor = Vec3{0, 0, 0};
    j.axis = Vec3{0, 1, 0};
    CouplingSpec c;
    c.name = "gear";
    c.joint = "motor";
    c.leader = "hinge";
    c.ratio = ratio;
    s.couplings.push_back(c);
    return s;
}

// The rod's angle over `T` seconds (every step), and the largest |motor − ratio · hinge|.
std::vector<double> swing(const Spec& s, double T, double* worst = nullptr, double* energy_dev = nullptr) {
    auto m = compile(s);
    Data d(m);
    std::vector<double> q;
    const double e0 = monitors(*m, d).total;
    const int n = static_cast<int>(std::lround(T / s.options.dt));
    for (int i = 0; i < n; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        q.push_back(d.coord[0]);
        if (worst && m->njoints() > 1) *worst = std::max(*worst, std::fabs(d.coord[1] - s.couplings[0].ratio * d.coord[0]));
        if (energy_dev) *energy_dev = std::max(*energy_dev, std::fabs(monitors(*m, d).total - e0));
    }
    return q;
}

// The geared rod's coupling force against the rotor's I_r r θ̈, θ̈ by central differences of the
// rod's angle about node i (the force reported by the step that starts at node i, or with at_end by
// the one that ends there): the largest difference, and the largest θ̈ term in *scale.
double force_error(const Spec& s, int steps, bool at_end, double* scale) {
    const double dt = s.options.dt, ratio = s.couplings[0].ratio;
    auto m = compile(s);
    Data d(m);
    std::vector<double> q{d.coord[0]}, tau;
    if (at_end) tau.push_back(0);
    for (int i = 0; i < steps; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        q.push_back(d.coord[0]);
        tau.push_back(d.coupling_force[0]);
    }
    double err = 0;
    *scale = 0;
    for (std::size_t i = 1; i + 1 < q.size(); ++i) {
        const double expect = kRotorI * ratio * (q[i + 1] - 2 * q[i] + q[i - 1]) / (dt * dt);
        err = std::max(err, std::fabs(tau[i] - expect));
        *scale = std::max(*scale, std::fabs(expect));
    }
    return err;
}

Spec rotor_chain(double dt) {
    Spec s;
    s.gravity = {0, -9.81, 0};  // the chain lies in the x-y plane, its joints about z
    s.options.dt = dt;
    urdf::Options o;
    o.fixed_base = true;
    o.limits = false;
    const urdf::Report r =
        urdf::import(s, models::dir() + "/generalized_rbda/robot-models/revolute_rotor_chain.urdf", o);
    REQUIRE(r.couplings == 3);
    return s;
}

}  // namespace

TEST_CASE("couplings: the residual's Jacobian equals central differences along every motion the joints allow", "[couplings]") {
    // Follower and leader on different parents, one a compound joint's second motion, one prismatic.
    // A compound joint's coordinates are defined on its manifold (off it they are a projection), so
    // the check is at assembled configurations, along the null space of every joint's rows: there
    // central differences of the residual equal Σ G · motion to O(h²).
    Spec t;
    for (const char* n : {"a", "b", "c", "d"}) {
        BodySpec& b = t.add_body(n);
        b.mass = 1;
        b.inertia = Mat3::diag(0.1, 0.2, 0.3);
    }
    t.bodies[1].position = {1, 0, 0};
    t.bodies[2].position = {0, 1, 0};
    t.bodies[3].position = {1, 1, 0.5};
    JointSpec& j1 = t.add_joint("hinge", "revolute", "a", "b");
    j1.anchor = Vec3{0.5, 0, 0};
    j1.axis = Vec3{0, 0.6, 0.8};
    JointSpec& j2 = t.add_joint("stack", "compound", "a", "c");
    j2.anchor = Vec3{0, 0.5, 0};
    j2.params["kinds"] = {0, 0};  // two hinges through one point
    j2.params["axes"] = {1, 0, 0, 0, 1, 0};
    JointSpec& j3 = t.add_joint("slide", "prismatic", "b", "d");
    j3.axis = Vec3{0, 0, 1};
    CouplingSpec c1;
    c1.joint = "stack";
    c1.dof = 1;
    c1.leader = "hinge";
    c1.ratio = -2.5;
    CouplingSpec c2;
    c2.name = "slider";
    c2.joint = "slide";
    c2.leader = "stack";
    c2.ratio = 0.3;
    c2.offset = 0.0;
    CouplingSpec c3;  // over three coordinates: hinge = 0.4 stack[0] + 0.7 slide − 0.05
    c3.name = "differential";
    c3.joint = "hinge";
    c3.leader = "stack";
    c3.ratio = 0.4;
    c3.more = {{"slide", 0, 0.7}};
    c3.offset = -0.05;
    t.couplings = {c1, c2, c3};
    t.options.integrator = "none";
    testutil::Rng rng(5);
    for (int trial = 0; trial < 4; ++trial) {
        Spec s = t;
        if (trial > 0)  // moved off the joints, then assembled back onto them (and onto the couplings)
            for (BodySpec& b : s.bodies) {
                b.position += 0.2 * rng.vec();
                b.orientation = oplus(b.orientation, 0.6 * rng.vec());
            }
        REQUIRE(assemble(s).converged);
        auto m = compile(s);
        REQUIRE(m->couplings.size() == 3);
        REQUIRE(m->couplings[2].sides() == 6);
        CHECK(m->couplings[0].name == "stack/coupling");
        const int nb = m->nbodies();
        std::vector<Pose> pose(nb);
        for (int b = 0; b < nb; ++b) pose[b] = m->bodies[b].pose0;
        // The joints' rows and their null space: the motions of the four bodies the joints allow.
        MatX J = MatX::Zero(m->total_rows, 6 * nb);
        for (const JointInfo& j : m->joints) {
            double g[kMaxJointRows], Ja[6 * kMaxJointRows], Jb[6 * kMaxJointRows];
            j.impl->constraint(pose[j.a], pose[j.b], g, Ja, Jb);
            for (int r = 0; r < j.rows; ++r)
                for (int k = 0; k < 6; ++k) {
                    J(j.row_offset + r, 6 * j.a + k) += Ja[6 * r + k];
                    J(j.row_offset + r, 6 * j.b + k) += Jb[6 * r + k];
                }
        }
        Eigen::FullPivLU<MatX> lu(J);
        const MatX N = lu.kernel();
        REQUIRE(N.cols() == 6 + 4);  // a floats; hinge, stack (2), slide
        for (const CouplingInfo& c : m->couplings) {
            double G[2 * kMaxCouplingTerms][6];
            coupling_residual(*m, c, pose.data(), nullptr, G);
            int bodies[2 * kMaxCouplingTerms];
            coupling_bodies(*m, c, bodies);
            for (int v = 0; v < N.cols(); ++v) {
                double analytic = 0;
                for (int side = 0; side < c.sides(); ++side)
                    for (int k = 0; k < 6; ++k) analytic += G[side][k] * N(6 * bodies[side] + k, v);
                const double h = 1e-5;
                std::vector<Pose> p = pose, q = pose;
                for (int b = 0; b < nb; ++b)
                    for (int k = 0; k < 6; ++k) {
                        p[b] = testutil::perturb(p[b], k, h * N(6 * b + k, v));
                        q[b] = testutil::perturb(q[b], k, -h * N(6 * b + k, v));
                    }
                const double fd = (coupling_residual(*m, c, p.data(), nullptr, nullptr) -
                                   coupling_residual(*m, c, q.data(), nullptr, nullptr)) / (2 * h);
                INFO("trial " << trial << ", coupling " << c.name << ", motion " << v);
                CHECK(analytic == Approx(fd).margin(1e-8));
            }
            // And the residual is zero where assembly put the bodies.
            CHECK(std::fabs(coupling_residual(*m, c, pose.data(), nullptr, nullptr)) <= 1e-12);
        }
    }
}

namespace {

// Three rotors hinged to the world about z (gravity does no work), the third driven by the other two
// through a differential: r3 = a r1 + b r2.
Spec differential(const char* integrator, double dt, double a, double b) {
    Spec s;
    s.options.integrator = integrator;
    s.options.dt = dt;
    s.options.tolerance = 1e-12;
    const double inertia[3] = {0.02, 0.05, 0.03};
    for (int k = 0; k < 3; ++k) {
        const std::string n = "r" + std::to_string(k + 1);
        BodySpec& r = s.add_body(n);
        r.mass = 0.5;
        r.inertia = Mat3::diag(0.6 * inertia[k], 0.6 * inertia[k], inertia[k]);  // a disc-like rotor
        r.position = {0.3 * k, 0, 0};
        JointSpec& j = s.add_joint(n, "revolute", "world", n);
        j.anchor = Vec3{0.3 * k, 0, 0};
        j.axis = Vec3{0, 0, 1};
    }
    CouplingSpec c;
    c.name = "differential";
    c.joint = "r3";
    c.leader = "r1";
    c.ratio = a;
    c.more = {{"r2", 0, b}};
    s.couplings.push_back(c);
    return s;
}

}  // namespace

TEST_CASE("couplings: a differential over three rotors moves as its reduced Lagrangian says", "[couplings]") {
    // r3 = a r1 + b r2 leaves 2 degrees of freedom with the mass matrix
    //   M = [[I1 + a² I3, a b I3], [a b I3, I2 + b² I3]];
    // a constant torque u on r1 from rest gives q = ½ M⁻¹ [u, 0] t² (exact: the motion is about fixed
    // axes), and the coupling's force on the follower is I3 q̈3.
    const double a = 0.5, b = -0.25, u = 0.2, T = 1;
    const double I1 = 0.02, I2 = 0.05, I3 = 0.03;
    const double m11 = I1 + a * a * I3, m12 = a * b * I3, m22 = I2 + b * b * I3, det = m11 * m22 - m12 * m12;
    const double acc1 = m22 * u / det, acc2 = -m12 * u / det, acc3 = a * acc1 + b * acc2;
    for (const char* integrator : {"vi-maximal", "vi-midpoint", "vi-galerkin", "rk4", "dp45-projection"}) {
        INFO(integrator);
        const double dt = 1e-3;
        auto m = compile(differential(integrator, dt, a, b));
        CHECK(m->dof() == 2);
        REQUIRE(m->couplings[0].sides() == 6);
        Data d(m);
        double worst = 0;
        const int n = static_cast<int>(std::lround(T / dt));
        for (int i = 0; i < n; ++i) {
            d.actuation[0] = u;
            REQUIRE(step(*m, d) == StepStatus::ok);
            worst = std::max(worst, std::fabs(d.coord[2] - a * d.coord[0] - b * d.coord[1]));
        }
        CHECK(worst <= 1e-9);
        // First-order vi-maximal: O(dt) in the position; vi-midpoint: second order, its start
        // sampling the torque at half weight; the others to 1e-6 relative.
        const std::string name = integrator;
        const double tol = name == "vi-maximal" ? 2e-3 : name == "vi-midpoint" ? 1e-4 : 1e-6;
        CHECK(d.coord[0] == Approx(0.5 * acc1 * T * T).epsilon(tol));
        CHECK(d.coord[1] == Approx(0.5 * acc2 * T * T).epsilon(tol));
        CHECK(d.coupling_force[0] == Approx(I3 * acc3).epsilon(std::max(tol, 1e-5)));
    }
    // A fourth coordinate is the most a coupling takes; a fifth is refused by rule, as is a coordinate twice.
    Spec s = differential("vi-maximal", 0.01, a, b);
    s.couplings[0].more.push_back({"r1", 0, 1.0});
    CHECK_THAT(testutil::error_of([&] { compile(s); }), Contains("coupling 'differential': coordinate 0 of joint 'r1' appears twice"));
    s.couplings[0].more = {{"r2", 0, b}, {"nope", 0, 1}};
    CHECK_THAT(testutil::error_of([&] { compile(s); }), Contains("coupling 'differential': field 'more[2]': joint 'nope' not found"));
    s.couplings[0].more = {{"r2", 0, 0}};
    CHECK_THAT(testutil::error_of([&] { compile(s); }), Contains("field 'more[1]': ratio must be finite and nonzero, got 0"));
    s.couplings[0].more = {{"r2", 0, b}, {"r2", 0, b}, {"r2", 0, b}};
    CHECK_THAT(testutil::error_of([&] { compile(s); }),
               Contains("coupling 'differential': relates 5 coordinates; a coupling takes at most 4 (the follower, the leader and 2 further leaders)"));
    s.couplings[0].more = {{"r2", 0, b}};
    s.couplings[0].offset = 0.1;
    CHECK_THAT(testutil::error_of([&] { compile(s); }),
               Contains("violates it by -0.1 (r3 must equal 0.5 × r1 + -0.25 × r2 + 0.1)"));
}

TEST_CASE("couplings: a geared rotor swings the rod as the armature it reflects would", "[couplings][vi-maximal][vi-midpoint]") {
    // Rotor turning r times the rod: kinetic energy ½ (I + r² I_r) θ̇², the Lagrangian of the rod
    // with armature r² I_r. The two discretisations differ at O(dt²): the gap quarters with dt.
    const double ratio = 6;
    for (const char* integ : {"vi-maximal", "vi-midpoint"}) {
        INFO(integ);
        double gap[2] = {0, 0};
        for (int k = 0; k < 2; ++k) {
            const double dt = k == 0 ? 0.004 : 0.002;
            double worst = 0, dev = 0;
            const std::vector<double> geared = swing(geared_rod(dt, ratio, false, integ), 2.0, &worst, &dev);
            const std::vector<double> reflected = swing(geared_rod(dt, ratio, true, integ), 2.0);
            REQUIRE(geared.size() == reflected.size());
            for (std::size_t i = 0; i < geared.size(); ++i) gap[k] = std::max(gap[k], std::fabs(geared[i] - reflected[i]));
            INFO("dt " << dt << ": largest gap " << gap[k] << " rad, gear ratio error " << worst << ", energy deviation " << dev);
            CHECK(worst <= 1e-12);
            CHECK(dev <= 2e-2);  // of a 4.9 J swing
            // Without the rotor the rod swings with I = 1/3: it would be 0.2 rad away within the run.
            CHECK(gap[k] <= 2e-3);
        }
        INFO("gap at dt 0.004: " << gap[0] << ", at 0.002: " << gap[1]);
        CHECK(gap[0] / gap[1] == Approx(4).margin(0.6));
        // The rotor matters: with ratio 1 the same run ends elsewhere.
        const std::vector<double> light = swing(geared_rod(0.004, 1, false, integ), 2.0);
        const std::vector<double> heavy = swing(geared_rod(0.004, ratio, false, integ), 2.0);
        CHECK(std::fabs(light.back() - heavy.back()) > 0.05);
        // The coupling's force is the torque that turns the rotor: I_r r θ̈, θ̈ by central differences.
        double scale = 0;
        // The variational methods' force of the step from q[i] to q[i+1] acts at q[i] (its start).
        const double err = force_error(geared_rod(0.002, ratio, false, integ), 500, false, &scale);
        INFO("coupling force against I_r r θ̈: largest difference " << err << " of " << scale << " N m");
        CHECK(scale > 0.1);
        CHECK(err <= 0.02 * scale);
    }
}

TEST_CASE("couplings: vi-galerkin swings a geared rotor's rod as the rod with the rotor's reflected inertia", "[couplings][vi-galerkin]") {
    // In joint coordinates the coupling is a linear row of the step's constraints. The same Lagrangian
    // as a rod whose own inertia about the hinge axis is larger by r² I_r.
    const double ratio = 6;
    double gap[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
        const double dt = k == 0 ? 0.01 : 0.005;
        Spec geared = geared_rod(dt, ratio, false, "vi-galerkin");
        Spec heavy = testutil::hinged_rod_spec("vi-galerkin", dt, 9.81);
        heavy.options.tolerance = 1e-12;
        heavy.bodies[0].inertia.m[1][1] += ratio * ratio * kRotorI;
        double worst = 0, dev = 0;
        const std::vector<double> a = swing(geared, 2.0, &worst, &dev);
        const std::vector<double> b = swing(heavy, 2.0);
        for (std::size_t i = 0; i < a.size(); ++i) gap[k] = std::max(gap[k], std::fabs(a[i] - b[i]));
        INFO("dt " << dt << ": gap " << gap[k] << " rad, ratio error " << worst << ", energy deviation " << dev << " J");
        CHECK(worst <= 1e-12);
        CHECK(dev <= 1e-4);  // H(q, p) of an order-4 method
        // In joint coordinates the rotor's energy is exactly ½ r² I_r θ̇²: the same discrete Lagrangian,
        // so the same trajectory to round-off (measured 2.5e-13 and 1.1e-12 rad).
        CHECK(gap[k] <= 1e-10);
    }
    // The linearisation does not take couplings yet: refused by name.
    auto m = compile(geared_rod(0.01, ratio, false, "vi-galerkin"));
    Data d(m);
    Linearization lin;
    CHECK_THAT(testutil::error_of([&] { linearize(*m, d, lin); }), Contains("coupling 'gear' ties two joints (not yet supported)"));
}

TEST_CASE("couplings: the explicit integrators take them as bordered rows of their index-1 system", "[couplings][explicit]") {
    // The coupled rod and the rod with the rotor's inertia added have the same equations of motion
    // (the index-1 accelerations of the one are the other's): rk4 and heun let the coupling drift as
    // they let joints drift, dp45-projection projects it back to its tolerance.
    const double ratio = 6, dt = 0.002;
    for (const char* integ : {"rk4", "heun", "dp45-projection"}) {
        INFO(integ);
        Spec geared = geared_rod(dt, ratio, false, integ);
        Spec heavy = testutil::hinged_rod_spec(integ, dt, 9.81);
        heavy.options.tolerance = 1e-12;
        heavy.bodies[0].inertia.m[1][1] += ratio * ratio * kRotorI;
        double worst = 0;
        const std::vector<double> a = swing(geared, 1.0, &worst);
        const std::vector<double> b = swing(heavy, 1.0);
        double gap = 0;
        for (std::size_t i = 0; i < a.size(); ++i) gap = std::max(gap, std::fabs(a[i] - b[i]));
        INFO("ratio error " << worst << ", gap to the heavy rod " << gap << " rad");
        const std::string name = integ;
        CHECK(worst <= (name == "dp45-projection" ? 1e-9 : name == "rk4" ? 1e-7 : 1e-2));  // measured 1e-12, 6e-8, 1.7e-3
        CHECK(gap <= 1e-10);  // the same accelerations: measured 6e-14
        // The force on the rotor at the end of each step against I_r r θ̈ (central differences).
        double scale = 0;
        const double err = force_error(geared, 300, true, &scale);  // the explicit ones report it at the step's end
        INFO("coupling force against I_r r θ̈: " << err << " of " << scale << " N m");
        CHECK(err <= 0.01 * scale);
    }
}

TEST_CASE("couplings: the rotor chain keeps its gear ratios, its energy and 3 degrees of freedom", "[couplings][models]") {
    if (!models::available()) return;
    for (const char* integ : {"vi-maximal", "vi-midpoint", "vi-galerkin"}) {
    INFO(integ);
    double dev[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
        const double dt = k == 0 ? 0.005 : 0.0025;
        Spec s = rotor_chain(dt);
        s.options.integrator = integ;
        auto m = compile(s);
        CHECK(m->dof() == 3);
        Data d(m);
        const double e0 = monitors(*m, d).total;
        double worst = 0, early = 0, late = 0;
        const int n = static_cast<int>(std::lround(20.0 / dt));
        for (int i = 0; i < n; ++i) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            for (const CouplingInfo& c : m->couplings)
                worst = std::max(worst, std::fabs(d.coord[m->joints[c.joint].dof_offset] -
                                                  6.0 * d.coord[m->joints[c.leader].dof_offset]));
            const double e = std::fabs(monitors(*m, d).total - e0);
            (i < n / 2 ? early : late) = std::max(i < n / 2 ? early : late, e);
        }
        dev[k] = std::max(early, late);
        INFO("dt " << dt << ": ratio error " << worst << ", energy deviation first half " << early << " J, second " << late
                   << " J; the chain swings through " << std::fabs(d.coord[0]) << " rad");
        CHECK(worst <= 1e-12);
        if (std::string(integ) == "vi-galerkin") {
            CHECK(dev[k] <= 1e-6);  // H(q, p) to order 4: its chaotic excursions, not a drift (80 s: 4e-7)
        } else {
            CHECK(late <= 2 * early);  // bounded, no drift
            CHECK(dev[k] <= 0.05);     // of ~30 J of swing
        }
    }
    if (std::string(integ) == "vi-galerkin") CHECK(dev[0] / dev[1] > 8);  // order 4
    else CHECK(dev[0] / dev[1] == Approx(4).margin(1.2));                // second order
    }
}

TEST_CASE("couplings: a rotor geared past half a turn keeps its whole turns (assembly and the coordinates)", "[couplings][models]") {
    // Before: the link at 0.6 rad put its 6:1 rotor at 3.6 rad, whose pose reads −2.68; assembly took
    // the 2π for a violation and moved the chain to −0.19 rad. Now the turns go into the rotor
    // joint's offset: it reports 3.6 and steps from there.
    if (!models::available()) return;
    Spec t;
    t.gravity = {0, -9.81, 0};
    t.options.dt = 0.005;
    urdf::Options o;
    o.fixed_base = true;
    o.limits = false;
    o.positions = {{"joint1", 0.6}};  // the importer starts joint1r at 6 × 0.6
    urdf::import(t, models::dir() + "/generalized_rbda/robot-models/revolute_rotor_chain.urdf", o);
    const AssemblyReport rep = assemble(t);
    CHECK(rep.largest_move <= 1e-12);  // nothing to assemble
    auto m = compile(t);
    Data d(m);
    const int l = m->joints[m->joint_index("joint1")].dof_offset, r = m->joints[m->joint_index("joint1r")].dof_offset;
    CHECK(d.coord[l] == Approx(0.6));
    CHECK(d.coord[r] == Approx(3.6));
    double worst = 0;
    for (int i = 0; i < 400; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        worst = std::max(worst, std::fabs(d.coord[r] - 6 * d.coord[l]));
    }
    CHECK(worst <= 1e-12);
}

TEST_CASE("couplings: Mini Cheetah has 18 degrees of freedom and holds its 12 transmissions in flight", "[couplings][models]") {
    if (!models::available()) return;
    Spec s;
    s.options.dt = 0.002;
    urdf::Options o;
    o.limits = false;
    const urdf::Report r = urdf::import(s, models::dir() + "/generalized_rbda/robot-models/mini_cheetah.urdf", o);
    REQUIRE(r.couplings == 12);
    // Torques on a knee and an abduction link set the legs moving while it falls (no ground).
    for (const char* link : {"FR_knee_link", "HL_abad_link"}) {
        ForceSpec f;
        f.body = link;
        f.torque = {0.3, 0.3, 0};
        s.forces.push_back(f);
    }
    auto m = compile(s);
    CHECK(m->dof() == 18);  // 25 bodies: 150 − 24 × 5 rows − 12 couplings
    Data d(m);
    const int knee = m->joints[m->joint_index("FR_hip_to_knee_j")].dof_offset;
    double worst = 0;
    for (int i = 0; i < 250; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        for (const CouplingInfo& c : m->couplings)
            worst = std::max(worst, std::fabs(d.coord[m->joints[c.joint].dof_offset] -
                                              c.ratio * d.coord[m->joints[c.leader].dof_offset]));
    }
    INFO("knee turned " << d.coord[knee] << " rad; worst transmission error " << worst << " rad");
    CHECK(std::fabs(d.coord[knee]) > 0.05);
    CHECK(worst <= 1e-11);  // rotor angles up to ~10 rad at ratio 9.33
}

TEST_CASE("couplings: the Panda's fingers move together (URDF mimic)", "[couplings][models]") {
    if (!models::available()) return;
    Spec s;
    s.options.dt = 0.002;
    urdf::Options o;
    o.fixed_base = true;  // limits enforced: the coupled fingers stop at their stops together
    o.positions = {{"panda_joint2", 0.6}, {"panda_joint4", -1.0}, {"panda_finger_joint1", 0.02}};
    const urdf::Report r = urdf::import(s, models::dir() + "/example-robot-data/robots/panda_description/urdf/panda.urdf", o);
    REQUIRE(r.couplings == 1);
    auto m = compile(s);
    CHECK(m->dof() == 8);
    Data d(m);
    const int f1 = m->joints[m->joint_index("panda_finger_joint1")].dof_offset;
    const int f2 = m->joints[m->joint_index("panda_finger_joint2")].dof_offset;
    CHECK(d.coord[f2] == Approx(0.02));  // the mimic starts where its leader puts it
    double worst = 0, lo = 1, hi = -1;
    for (int i = 0; i < 1000; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        worst = std::max(worst, std::fabs(d.coord[f2] - d.coord[f1]));
        lo = std::min(lo, d.coord[f1]), hi = std::max(hi, d.coord[f1]);
    }
    INFO("fingers apart by at most " << worst << " m; finger 1 in [" << lo << ", " << hi << "] m");
    CHECK(worst <= 1e-12);
    // The falling arm slings the fingers open, together, onto their 0.04 m stops (both limits and the
    // coupling active at once: dependent rows the interior-point step takes).
    CHECK(hi == Approx(0.04).margin(1e-9));
    CHECK(lo >= 0.02 - 1e-9);
}

TEST_CASE("couplings: assembly brings a violated start onto the coupling", "[couplings]") {
    Spec s = geared_rod(0.01, 6, false);
    s.bodies[1].orientation = quat_from_axis_angle({0, 1, 0}, 0.3);  // the rotor turned, the rod not
    s.joints[1].child_frame = Quat{};  // the joint's zero from frames, not the (turned) initial pose
    s.joints[1].parent_frame = Quat{};
    std::string err = testutil::error_of([&] { compile(s); });
    CHECK_THAT(err, Contains("coupling 'gear': the initial configuration violates it by"));
    CHECK_THAT(err, Contains("assemble"));
    const AssemblyReport rep = assemble(s);
    INFO("assembly: " << rep.initial_violation << " -> " << rep.final_violation << " in " << rep.iterations << " iterations");
    CHECK(rep.converged);
    CHECK(rep.initial_violation == Approx(0.3).margin(1e-9));
    auto m = compile(s);
    Data d(m);
    CHECK(std::fabs(d.coord[1] - 6 * d.coord[0]) <= 1e-12);
}

TEST_CASE("couplings: refusals name the coupling, the rule and the value", "[couplings]") {
    auto error = [](const std::function<void(Spec&)>& edit, const char* integrator = "vi-maximal") {
        Spec s = geared_rod(0.01, 6, false);
        s.options.integrator = integrator;
        edit(s);
        return testutil::error_of([&] { compile(s); });
    };
    CHECK_THAT(error([](Spec&) {}, "riqn"),
               Contains("coupling 'gear': integrator 'riqn' does not take couplings between joints (integrators that do: dp45-projection, heun, rk4, vi-galerkin, vi-maximal, vi-midpoint)"));
    CHECK_THAT(error([](Spec& s) { s.couplings[0].range = true, s.couplings[0].lower = -1, s.couplings[0].upper = 1; }, "vi-midpoint"),
               Contains("coupling 'gear': a range is an inequality, and integrator 'vi-midpoint' does not take inequalities"));
    CHECK_THAT(error([](Spec& s) { s.couplings[0].leader = "nope"; }), Contains("coupling 'gear': field 'leader': joint 'nope' not found"));
    CHECK_THAT(error([](Spec& s) { s.couplings[0].ratio = 0; }), Contains("coupling 'gear': ratio must be finite and nonzero, got 0"));
    CHECK_THAT(error([](Spec& s) { s.couplings[0].offset = NAN; }), Contains("offset must be finite"));
    CHECK_THAT(error([](Spec& s) { s.couplings[0].dof = 1; }),
               Contains("coupling 'gear': joint 'motor' has 1 coordinate, got coordinate index 1 (0-based)"));
    CHECK_THAT(error([](Spec& s) { s.couplings[0].leader = "motor"; }), Contains("joint and leader are the same coordinate"));
    CHECK_THAT(error([](Spec& s) { s.couplings.push_back(s.couplings[0]); }), Contains("coupling 'gear': duplicate name"));
    CHECK_THAT(error([](Spec& s) { s.couplings[0].offset = 0.5; }),
               Contains("coupling 'gear': the initial configuration violates it by -0.5 (motor must equal 6 × hinge + 0.5)"));
    CHECK_THAT(error([](Spec& s) { s.joints[1].type = "spherical"; s.joints[1].axis.reset(); }),
               Contains("field 'joint': coordinate 'rx' of joint 'motor' (spherical) is a rotation-vector component"));
}

TEST_CASE("couplings: a range keeps the difference of two pendulums within it, as a limit would", "[couplings][limits]") {
    // Two rods hinged side by side about y, one released from 0.6 rad further up: uncoupled their
    // angles drift 0.6 rad apart and more; with the range −0.2 <= a − b <= 0.2 they swing within it.
    auto two_rods = [](bool range) {
        Spec s = testutil::hinged_rod_spec("vi-maximal", 0.005, 9.81);
        BodySpec& r = s.add_body("rod2");
        r = s.bodies[0];
        r.name = "rod2";
        r.position = {0.5 * std::cos(0.3), 0.5, 0.5 * std::sin(0.3)};  // 0.3 rad up, beside the first
        r.orientation = quat_from_axis_angle({0, 1, 0}, -0.3);
        JointSpec& j = s.add_joint("hinge2", "revolute", "world", "rod2");
        j.anchor = Vec3{0, 0.5, 0};
        j.axis = Vec3{0, 1, 0};
        j.offset = {-0.3};  // its coordinate: the angle from the x axis like the first rod's
        if (range) {
            CouplingSpec c;
            c.name = "band";
            c.joint = "hinge";
            c.leader = "hinge2";
            c.range = true;
            c.lower = -0.2;
            c.upper = 0.4;
            s.couplings.push_back(c);
        }
        return s;
    };
    for (bool range : {false, true}) {
        auto m = compile(two_rods(range));
        CHECK(m->dof() == 2);  // a range removes no degree of freedom
        Data d(m);
        REQUIRE(d.coord[1] == Approx(-0.3));
        double lo = 1, hi = -1, force = 0;
        for (int i = 0; i < 600; ++i) {
            REQUIRE(step(*m, d) == StepStatus::ok);
            lo = std::min(lo, d.coord[0] - d.coord[1]), hi = std::max(hi, d.coord[0] - d.coord[1]);
            if (range) force = std::max(force, std::fabs(d.coupling_force[0]));
        }
        INFO((range ? "with" : "without") << " the range: a − b in [" << lo << ", " << hi << "], largest force " << force);
        if (!range) {
            CHECK(hi > 0.6);  // they drift apart
            continue;
        }
        CHECK(lo >= -0.2 - 1e-9);
        CHECK(hi <= 0.4 + 1e-9);
        CHECK(hi > 0.4 - 1e-6);  // it reached the upper side and stayed on it: the bound is active
        CHECK(force > 0.1);
    }
    // Refusals: an empty range, and a start outside it.
    Spec bad = two_rods(true);
    bad.couplings[0].lower = 0.5;
    CHECK_THAT(testutil::error_of([&] { compile(bad); }), Contains("coupling 'band': a range needs lower <= upper"));
    bad.couplings[0].lower = 0.35;
    bad.couplings[0].upper = 0.5;
    CHECK_THAT(testutil::error_of([&] { compile(bad); }),
               Contains("coupling 'band': starts outside its range: hinge − 1 × hinge2 = 0.3 not in [0.35, 0.5]"));
}

TEST_CASE("limits: a compound joint's coordinates stop at their limits", "[limits][compound]") {
    // A rod on two hinges through the world origin (y, then the rod's own z): it falls about y and
    // spins about z from an initial twist; the second hinge's range [−0.25, 0.25] stops the spin.
    Spec s = testutil::hinged_rod_spec("vi-maximal", 0.005, 9.81);
    JointSpec& j = s.joints[0];
    j.type = "compound";
    j.axis.reset();
    j.params["kinds"] = {0, 0};
    j.params["axes"] = {0, 1, 0, 0, 0, 1};
    j.lower = {-HUGE_VAL, -0.25};
    j.upper = {HUGE_VAL, 0.25};
    j.limited = true;
    s.bodies[0].angular_velocity = {0, 0, 2.0};
    s.bodies[0].velocity = {0, 1.0, 0};
    auto m = compile(s);
    Data d(m);
    double lo = 1, hi = -1, fall = 0, force = 0;
    for (int i = 0; i < 400; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        lo = std::min(lo, d.coord[1]), hi = std::max(hi, d.coord[1]);
        fall = std::max(fall, d.coord[0]);
        force = std::max(force, std::fabs(d.limit_force[1]));
        CHECK(d.limit_force[0] == 0);  // the first coordinate has no limit
    }
    INFO("second coordinate in [" << lo << ", " << hi << "], largest limit force " << force << ", fell " << fall << " rad");
    CHECK(hi <= 0.25 + 1e-9);
    CHECK(lo >= -0.25 - 1e-9);
    CHECK(hi > 0.25 - 1e-6);  // it reached the stop
    CHECK(force > 0.1);
    CHECK(fall > 1.0);
    // Without the limit it spins past it.
    s.joints[0].limited = false;
    auto m2 = compile(s);
    Data d2(m2);
    double hi2 = -1;
    for (int i = 0; i < 400; ++i) {
        REQUIRE(step(*m2, d2) == StepStatus::ok);
        hi2 = std::max(hi2, d2.coord[1]);
    }
    CHECK(hi2 > 0.5);
}

TEST_CASE("the watch: quiet on a coupled scene at rest with zero energy (round-off is no growth)", "[couplings][watch]") {
    // Before: this fixture (fingers resting on a limit, a geared rotor, gravity along every axis)
    // warned "the energy grew from 0 J to 9.1e-18 J with no input doing work" at step 1.
    Spec s;
    urdf::Options o;
    o.fixed_base = true;
    urdf::import(s, std::string(NOETHER_SOURCE_DIR) + "/tests/fuzz/seeds/urdf/couplings.urdf", o);
    s.options.dt = 0.005;
    Run run(compile(s));
    run.steps(100);
    CHECK(std::fabs(run.summary().energy_final) < 1e-12);
    for (const std::string& w : run.summary().warnings) CHECK_THAT(w, !Contains("grew"));
}
