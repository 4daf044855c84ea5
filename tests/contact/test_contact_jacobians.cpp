// vi-maximal's contact and limit units against central differences (plugins/integrators/vi_maximal/
// contact.cpp, docs/contact.md): gap Jacobians at configurations 2 and 3, friction rows, the units'
// own block, the gap rows' dependence on the step's velocities, and the force map as a wrench.
#include <catch2/catch.hpp>

#include <cmath>

#include "contact.hpp"
#include "util.hpp"

using namespace noether;
using namespace noether::vi_max;
using testutil::box_inertia;

namespace {

// Four bodies in general poses: A hinged to the world (limit on it), B hinged to A (two-sided
// limit), C on a limited vertical rail; contacts: a sphere on A against a tilted half-space, a
// point on B with friction, sphere (B) against sphere (A) with friction, a box on C with friction.
Spec mechanism() {
    Spec s;
    const char* names[4] = {"A", "B", "C", "D"};
    const Vec3 pos[4] = {{0.3, -0.2, 3.0}, {1.1, 0.4, 3.5}, {-1.0, 0.5, 4.0}, {2.5, 2.0, 5.0}};
    for (int i = 0; i < 4; ++i) {
        BodySpec& b = s.add_body(names[i]);
        b.mass = 0.5 + i;
        b.inertia = box_inertia(b.mass, 0.3 + 0.1 * i, 0.5, 0.4 - 0.05 * i);
        b.position = pos[i];
        b.orientation = quat_from_rpy(0.3 * (i + 1), -0.2 * i, 0.7 - 0.1 * i);
    }
    JointSpec& ja = s.add_joint("ja", "revolute", "world", "A");
    ja.anchor = Vec3{0, 0, 3.2};
    ja.axis = normalized(Vec3{0.2, 1, 0.1});
    ja.lower = {-0.4}, ja.upper = {HUGE_VAL}, ja.limited = true;
    JointSpec& jb = s.add_joint("jb", "revolute", "A", "B");
    jb.anchor = Vec3{0.8, 0.1, 3.3};
    jb.axis = normalized(Vec3{1, 0.3, -0.2});
    jb.lower = {-1.0}, jb.upper = {0.7}, jb.limited = true;
    JointSpec& jc = s.add_joint("jc", "prismatic", "world", "C");
    jc.axis = normalized(Vec3{0.1, 0, 1});
    jc.lower = {-0.3}, jc.upper = {0.2}, jc.limited = true;
    auto contact = [&](const char* body, ContactSpec::Type t, Vec3 size, Vec3 at, double mu) -> ContactSpec& {
        ContactSpec c;
        c.body = body;
        c.type = t;
        c.size = size;
        c.pose.x = at;
        c.pose.q = quat_from_rpy(0.1, 0.2, 0.3);
        c.mu = mu;
        s.contacts.push_back(c);
        return s.contacts.back();
    };
    ContactSpec& c1 = contact("A", ContactSpec::Type::sphere, {0.1, 0, 0}, {0.1, 0.05, -0.1}, 0);
    c1.normal = {0.2, -0.1, 1};
    c1.offset = 0.3;
    contact("B", ContactSpec::Type::point, {}, {0.2, -0.1, 0.15}, 0.7);
    ContactSpec& c3 = contact("B", ContactSpec::Type::sphere, {0.15, 0, 0}, {-0.1, 0.1, 0.05}, 0.4);
    c3.other = "A";
    c3.other_radius = 0.2;
    c3.other_position = {0.05, -0.1, 0.1};
    contact("C", ContactSpec::Type::box, {0.3, 0.2, 0.4}, {0.05, 0, 0}, 0.5);
    contact("D", ContactSpec::Type::capsule, {0.05, 0.4, 0}, {0, 0.1, 0}, 0.3);
    return s;
}

Pose moved(const Pose& p, int k, double e) {
    Pose q = p;
    if (k < 3) {
        double* x = &q.x.x;
        x[k] += e;
    } else {
        Vec3 d;
        (&d.x)[k - 3] = e;
        q.q = oplus(p.q, d);
    }
    return q;
}

struct Fixture {
    std::shared_ptr<const Model> m;
    std::unique_ptr<Data> d;
    Inequalities q;
    Fixture() : m(compile(mechanism())), d(std::make_unique<Data>(m)) {
        setup_inequalities(*m, m->graph, q);
        prepare_units(*m, *d, q, true);
    }
    double phi(const Unit& u, const std::vector<Pose>& poses) {
        unit_gaps(*m, *d, poses.data(), q, false);
        return u.phi3;
    }
};

}  // namespace

TEST_CASE("contact units: a Model with contacts and limits gives one unit per point and limit side", "[contact][jacobian]") {
    Fixture f;
    // 1 sphere + 1 point + 1 sphere pair + 8 box corners + 2 capsule ends; limits: 1 + 2 + 2 sides.
    CHECK(f.m->contacts.size() == 13);
    CHECK(f.q.units.size() == 18);
    int friction = 0;
    for (const Unit& u : f.q.units) friction += u.friction;
    CHECK(friction == 12);
    CHECK(f.q.m == 12 * 8 + 6 * 2);
}

TEST_CASE("contact units: gap Jacobians at configuration 3 match central differences", "[contact][jacobian]") {
    Fixture f;
    std::vector<Pose> poses(f.d->pose);
    unit_gaps(*f.m, *f.d, poses.data(), f.q, true);
    const std::vector<Unit> units = f.q.units;  // G3 at the unperturbed poses
    double worst = 0;
    const double e = 1e-6;
    for (std::size_t i = 0; i < units.size(); ++i)
        for (int side = 0; side < 2; ++side) {
            const int b = units[i].body[side];
            if (b < 0) continue;
            for (int k = 0; k < 6; ++k) {
                std::vector<Pose> p = poses;
                p[b] = moved(poses[b], k, e);
                const double fp = f.phi(f.q.units[i], p);
                p[b] = moved(poses[b], k, -e);
                const double fm = f.phi(f.q.units[i], p);
                worst = std::max(worst, std::fabs((fp - fm) / (2 * e) - units[i].G3[side][k]));
            }
        }
    CHECK(worst < 1e-8);
    // At the same poses the configuration-2 maps are the same rows.
    for (const Unit& u : units)
        for (int side = 0; side < 2; ++side)
            for (int k = 0; k < 6; ++k) CHECK(u.G2[side][k] == Approx(u.G3[side][k]).margin(1e-15));
}

TEST_CASE("contact units: friction rows are the tangential velocity of the material contact point", "[contact][jacobian]") {
    Fixture f;
    double worst = 0;
    const double e = 1e-6;
    for (const Unit& u : f.q.units) {
        if (!u.friction) continue;
        const ContactInfo& ci = f.m->contacts[u.index];
        for (int side = 0; side < 2; ++side) {
            const int b = u.body[side];
            if (b < 0) continue;
            const Pose& P = f.d->pose[b];
            const Vec3 centre = P.x + rotate(P.q, side == 0 ? ci.point : ci.other_point);
            const Vec3 surface = side == 0 ? centre - ci.radius * u.normal : centre + ci.other_radius * u.normal;
            const Vec3 pc = rotate_inv(P.q, surface - P.x);  // the material point, body frame
            const double sg = side == 0 ? 1 : -1;
            for (int k = 0; k < 6; ++k) {
                const Pose a = moved(P, k, e), c = moved(P, k, -e);
                const Vec3 vel = (1 / (2 * e)) * ((a.x + rotate(a.q, pc)) - (c.x + rotate(c.q, pc)));
                worst = std::max(worst, std::fabs(sg * dot(u.t1, vel) - u.Jt[side][0][k]));
                worst = std::max(worst, std::fabs(sg * dot(u.t2, vel) - u.Jt[side][1][k]));
            }
        }
    }
    CHECK(worst < 1e-8);
}

TEST_CASE("contact units: the units' own block and the gap rows' velocity Jacobian match central differences",
          "[contact][jacobian]") {
    Fixture f;
    const BlockGraph& g = f.m->graph;
    const double h = 0.01;
    testutil::Rng r(7);
    std::vector<double> s(g.total_size), y(f.q.m), fy(f.q.m), fp(f.q.m), fm(f.q.m);
    for (double& v : s) v = r.uniform(-1, 1);
    for (double& v : y) v = r.uniform(0.1, 2);
    // The step's map from velocities to configuration 3 (maximal-vi.md §2).
    auto pose3 = [&](const std::vector<double>& sv) {
        std::vector<Pose> p(f.d->pose);
        for (int b = 0; b < f.m->nbodies(); ++b) {
            const double* sb = &sv[g.node_offset[b]];
            const Vec3 v{sb[0], sb[1], sb[2]}, w{sb[3], sb[4], sb[5]};
            const double s2 = std::sqrt(4 / (h * h) - dot(w, w));
            p[b].x = f.d->pose[b].x + h * v;
            p[b].q = f.d->pose[b].q * Quat{0.5 * h * s2, 0.5 * h * w.x, 0.5 * h * w.y, 0.5 * h * w.z};
        }
        return p;
    };
    auto rows = [&](const std::vector<double>& sv, const std::vector<double>& yv, std::vector<double>& out) {
        const std::vector<Pose> p = pose3(sv);
        unit_gaps(*f.m, *f.d, p.data(), f.q, false);
        unit_rows(g, f.q, sv.data(), yv.data(), out.data());
    };
    const double e = 1e-6;
    // ∂/∂y: block diagonal, unit_block.
    std::vector<double> D(static_cast<std::size_t>(f.q.m) * f.q.m, 0.0);
    for (const Unit& u : f.q.units) unit_block(u, &y[u.off], &D[static_cast<std::size_t>(u.off) * f.q.m + u.off], f.q.m, false);
    double worst = 0;
    for (int c = 0; c < f.q.m; ++c) {
        std::vector<double> yp = y, ym = y;
        yp[c] += e, ym[c] -= e;
        rows(s, yp, fp);
        rows(s, ym, fm);
        for (int rr = 0; rr < f.q.m; ++rr)
            worst = std::max(worst, std::fabs((fp[rr] - fm[rr]) / (2 * e) - D[static_cast<std::size_t>(rr) * f.q.m + c]));
    }
    CHECK(worst < 1e-7);
    // ∂/∂s: r_φ through configuration 3 (Rphi), r_σ through the friction rows (−Jt / V).
    const std::vector<Pose> p3 = pose3(s);
    unit_gaps(*f.m, *f.d, p3.data(), f.q, true);
    gap_jacobians(g, f.q, s.data(), h);
    const std::vector<Unit> units = f.q.units;
    worst = 0;
    for (const Unit& u : units)
        for (int side = 0; side < 2; ++side) {
            const int b = u.body[side];
            if (b < 0) continue;
            for (int k = 0; k < 6; ++k) {
                std::vector<double> sp = s, sm = s;
                sp[g.node_offset[b] + k] += e, sm[g.node_offset[b] + k] -= e;
                rows(sp, y, fp);
                rows(sm, y, fm);
                // Other bodies of the same unit do not move: the difference is this side's column.
                const double dphi = (fp[u.off] - fm[u.off]) / (2 * e);
                worst = std::max(worst, std::fabs(dphi - u.Rphi[side][k]) / std::max(1.0, std::fabs(dphi)));
                if (!u.friction) continue;
                for (int t = 0; t < 2; ++t) {
                    const double ds = (fp[u.off + 2 + t] - fm[u.off + 2 + t]) / (2 * e);
                    worst = std::max(worst, std::fabs(ds + u.Jt[side][t][k] / u.V));
                }
            }
        }
    CHECK(worst < 1e-6);
}

TEST_CASE("contact units: a contact's force acts on its body as the wrench of n F gamma at the contact point",
          "[contact][jacobian]") {
    Fixture f;
    const BlockGraph& g = f.m->graph;
    for (const Unit& u : f.q.units) {
        if (u.limit || u.body[1] >= 0) continue;  // half-space contacts
        std::vector<double> y(f.q.m, 0.0), fT(g.total_size, 0.0);
        y[u.off] = 1;  // γ̂ = 1: a normal force F
        add_unit_forces(g, f.q, y.data(), fT.data());
        const ContactInfo& ci = f.m->contacts[u.index];
        const Pose& P = f.d->pose[u.body[0]];
        const Vec3 force = u.F * ci.normal;
        const Vec3 lever = rotate(P.q, ci.point) - ci.radius * ci.normal;
        const Vec3 torque_body = rotate_inv(P.q, cross(lever, force));
        const double* fb = &fT[g.node_offset[u.body[0]]];
        // Body rows: d_T − force = 0, d_R − 2 torque = 0 (maximal-vi.md §3).
        CHECK(fb[0] == Approx(-force.x).margin(1e-12));
        CHECK(fb[1] == Approx(-force.y).margin(1e-12));
        CHECK(fb[2] == Approx(-force.z).margin(1e-12));
        CHECK(fb[3] == Approx(-2 * torque_body.x).margin(1e-12));
        CHECK(fb[4] == Approx(-2 * torque_body.y).margin(1e-12));
        CHECK(fb[5] == Approx(-2 * torque_body.z).margin(1e-12));
    }
}

TEST_CASE("contact units: the step to the cone boundary lands on it", "[contact][jacobian]") {
    Fixture f;
    const Unit* u = nullptr;
    for (const Unit& v : f.q.units)
        if (v.friction) u = &v;
    REQUIRE(u);
    std::vector<double> y(f.q.m, 1.0), delta(f.q.m, 0.0);
    for (const Unit& v : f.q.units)
        if (v.friction) y[v.off + 2] = y[v.off + 3] = y[v.off + 6] = y[v.off + 7] = 0;
    // Move (ψ, β) of one unit along −Δ = (−0.5, 1.5, 0.7): it leaves the cone.
    delta[u->off + 1] = 0.5, delta[u->off + 2] = -1.5, delta[u->off + 3] = -0.7;
    // A cone is approached to 0.995 of the way at most (an iterate on its boundary has no NT scaling).
    const double a = step_to_boundary(f.q, y.data(), delta.data(), 1.0) / 0.995;
    REQUIRE(a < 1);
    const double psi = y[u->off + 1] - a * delta[u->off + 1];
    const double b1 = y[u->off + 2] - a * delta[u->off + 2], b2 = y[u->off + 3] - a * delta[u->off + 3];
    CHECK(psi == Approx(std::hypot(b1, b2)).margin(1e-15));
    // And an orthant variable: γ stepping towards −1 is stopped at 0 (τ = 1).
    delta.assign(f.q.m, 0.0);
    delta[u->off] = 2;  // γ = 1 − α 2
    CHECK(step_to_boundary(f.q, y.data(), delta.data(), 1.0) == Approx(0.5));
    CHECK(step_to_boundary(f.q, y.data(), delta.data(), 0.95) == Approx(0.475));
}

TEST_CASE("contact units: the NT scaling maps the cone pair to one point, and its block is the scaled rows' derivative",
          "[contact][jacobian]") {
    Fixture f;
    testutil::Rng r(11);
    for (double& v : f.q.y) v = r.uniform(0.1, 1);
    for (const Unit& u : f.q.units)
        if (u.friction) {  // inside the cones, one pair nearly on its boundary
            double* y = &f.q.y[u.off];
            y[2] = r.uniform(-0.5, 0.5), y[3] = r.uniform(-0.5, 0.5), y[1] = std::hypot(y[2], y[3]) + 1e-6;
            y[6] = r.uniform(-1, 1), y[7] = r.uniform(-1, 1), y[5] = std::hypot(y[6], y[7]) + 0.3;
        }
    nt_scaling(f.q);
    const double e = 1e-7;
    double worst_map = 0, worst_block = 0;
    for (const Unit& u : f.q.units) {
        if (!u.friction) continue;
        const double* x = &f.q.y[u.off + 1];
        const double* z = &f.q.y[u.off + 5];
        double wz[3], wix[3];
        for (int i = 0; i < 3; ++i) {
            wz[i] = wix[i] = 0;
            for (int k = 0; k < 3; ++k) wz[i] += u.W[3 * i + k] * z[k], wix[i] += u.Wi[3 * i + k] * x[k];
            worst_map = std::max(worst_map, std::fabs(wz[i] - wix[i]) + std::fabs(wz[i] - u.lam[i]));
        }
        // W W⁻¹ = I
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
                double p = 0;
                for (int k = 0; k < 3; ++k) p += u.W[3 * i + k] * u.Wi[3 * k + j];
                worst_map = std::max(worst_map, std::fabs(p - (i == j ? 1 : 0)));
            }
        // The block's cone rows: the derivative of (W⁻¹x)∘(Wz) with W held.
        std::vector<double> D(64, 0.0);
        unit_block(u, &f.q.y[u.off], D.data(), 8, true);
        auto scaled = [&](const double* yv, double* out) {
            double a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
            for (int i = 0; i < 3; ++i)
                for (int k = 0; k < 3; ++k) a[i] += u.Wi[3 * i + k] * yv[1 + k], b[i] += u.W[3 * i + k] * yv[5 + k];
            out[0] = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
            out[1] = a[0] * b[1] + b[0] * a[1];
            out[2] = a[0] * b[2] + b[0] * a[2];
        };
        for (int c = 0; c < 8; ++c) {
            double yp[8], ym[8], fp[3], fm[3];
            for (int k = 0; k < 8; ++k) yp[k] = ym[k] = f.q.y[u.off + k];
            yp[c] += e, ym[c] -= e;
            scaled(yp, fp);
            scaled(ym, fm);
            for (int rr = 0; rr < 3; ++rr)
                worst_block = std::max(worst_block, std::fabs((fp[rr] - fm[rr]) / (2 * e) - D[8 * (5 + rr) + c]));
        }
    }
    CHECK(worst_map < 1e-9);
    CHECK(worst_block < 1e-6);
}

// The interior point's Newton solve (schur_complement, schur_solve): each unit's local rows are
// eliminated before the dense complement is formed (the slack and cone radius always, the slip cone
// when the friction pair is well inside its cone and the rows are plain). Against the system solved
// whole: (D − R Z) dY = fY − R y1 over every unit unknown, D the units' blocks (unit_block), R the
// rows that the bodies enter (r_φ by Rphi, r_σ by −Jt / V), Z the force columns through the tree
// (here arbitrary), and dT = y1 − Z dY.
TEST_CASE("contact units: the Schur solve with each unit's own rows eliminated first equals the whole system's solve",
          "[contact][jacobian]") {
    enum Case { inside, boundary, nt_rows };
    for (Case which : {inside, boundary, nt_rows}) {
        Fixture f;
        Inequalities& q = f.q;
        const BlockGraph& g = f.m->graph;
        testutil::Rng r(17 + which);
        for (double& v : q.y) v = r.uniform(0.2, 1.5);
        int sticking = 0, sliding = 0;
        for (Unit& u : q.units) {
            for (int side = 0; side < u.sides; ++side)
                for (int k = 0; k < 6; ++k) {
                    u.Rphi[side][k] = r.uniform();
                    if (u.friction) u.Jt[side][0][k] = r.uniform(), u.Jt[side][1][k] = r.uniform();
                }
            if (!u.friction) continue;
            double* y = &q.y[u.off];
            y[2] = r.uniform(-0.5, 0.5), y[3] = r.uniform(-0.5, 0.5);
            // (ψ, β) well inside (its slip cone eliminated with the unit) or 1e-9 from the boundary.
            y[1] = std::hypot(y[2], y[3]) * (which == inside ? 2.0 : 1.0) + (which == inside ? 0.1 : 1e-9);
            y[6] = r.uniform(-1, 1), y[7] = r.uniform(-1, 1), y[5] = std::hypot(y[6], y[7]) + 0.3;
            (which == inside ? sticking : sliding) += 1;
        }
        REQUIRE(sticking + sliding >= 4);
        if (which == nt_rows) nt_scaling(q);
        for (double& v : q.Z) v = r.uniform();
        for (double& v : q.t1) v = r.uniform();
        for (double& v : q.ry1) v = r.uniform();
        std::vector<double> fY(q.m), dY(q.m), dT(g.total_size);
        for (double& v : fY) v = r.uniform();
        schur_products(q);
        REQUIRE(schur_complement(g, q, which == nt_rows));
        schur_solve(q, fY.data(), dT.data(), dY.data());
        // The whole system, dense: D block by block, R (rows r_φ, r_σ by the tree's entries) and Z
        // (the tree's entries by the force columns) as full matrices, D − R Z.
        const int M = q.m, T = g.total_size;
        std::vector<double> A(static_cast<std::size_t>(M) * M, 0.0), b(fY);
        std::vector<double> Rm(static_cast<std::size_t>(M) * T, 0.0), Zm(static_cast<std::size_t>(T) * M, 0.0);
        std::vector<int> piv(M);
        for (const Unit& u : q.units) {
            unit_block(u, &q.y[u.off], &A[static_cast<std::size_t>(u.off) * M + u.off], M, which == nt_rows);
            for (int side = 0; side < u.sides; ++side) {
                if (u.body[side] < 0) continue;
                const int o = g.node_offset[u.body[side]];
                for (int k = 0; k < 6; ++k) {
                    Rm[static_cast<std::size_t>(u.off) * T + o + k] += u.Rphi[side][k];
                    if (u.friction)
                        for (int t = 0; t < 2; ++t) Rm[static_cast<std::size_t>(u.off + 2 + t) * T + o + k] -= u.Jt[side][t][k] / u.V;
                }
            }
            for (int rr = 0; rr < (u.friction ? 3 : 1); ++rr) b[rr == 0 ? u.off : u.off + 1 + rr] -= q.ry1[rr == 0 ? u.off : u.off + 1 + rr];
            const int* idx = &q.g_idx[q.g_off[u.comp]];
            const int len = q.g_off[u.comp + 1] - q.g_off[u.comp];
            for (int c = u.col; c < u.col + (u.friction ? 3 : 1); ++c)
                for (int e = 0; e < len; ++e) Zm[static_cast<std::size_t>(idx[e]) * M + q.col_var[c]] = q.Z[q.z_off[c] + e];
        }
        for (int r = 0; r < M; ++r)
            for (int c = 0; c < M; ++c) {
                double acc = 0;
                for (int e = 0; e < T; ++e) acc += Rm[static_cast<std::size_t>(r) * T + e] * Zm[static_cast<std::size_t>(e) * M + c];
                A[static_cast<std::size_t>(r) * M + c] -= acc;
            }
        REQUIRE(dense::lu_factor(M, A.data(), piv.data()));
        dense::lu_solve(M, A.data(), piv.data(), b.data());
        double worst = 0, scale = 0;
        for (int i = 0; i < M; ++i) worst = std::max(worst, std::fabs(dY[i] - b[i])), scale = std::max(scale, std::fabs(b[i]));
        CAPTURE(which, scale);
        CHECK(worst <= 1e-9 * scale);
        // dT = y1 − Z dY on each column's group.
        std::vector<double> t(q.t1);
        for (const Unit& u : q.units) {
            const int* idx = &q.g_idx[q.g_off[u.comp]];
            const int len = q.g_off[u.comp + 1] - q.g_off[u.comp];
            for (int c = u.col; c < u.col + (u.friction ? 3 : 1); ++c)
                for (int e = 0; e < len; ++e) t[idx[e]] -= b[q.col_var[c]] * q.Z[q.z_off[c] + e];
        }
        double worst_t = 0, scale_t = 0;
        for (int i = 0; i < g.total_size; ++i) worst_t = std::max(worst_t, std::fabs(dT[i] - t[i])), scale_t = std::max(scale_t, std::fabs(t[i]));
        CHECK(worst_t <= 1e-9 * scale_t);
        // Which units kept their slip cone in the complement: the sliding ones and every one with NT rows.
        int kept_cones = 0;
        for (const Unit& u : q.units) kept_cones += u.friction && !u.cone_local();
        CHECK(kept_cones == (which == inside ? 0 : sliding));
    }
}
