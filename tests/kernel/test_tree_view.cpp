// The tree view (noether/sdk/tree.hpp): parents-first links, fixed joints merged, screws and rest
// poses that reproduce the joint plugins' coordinates and constraints, the mass matrix and the
// articulated-body solve, and the refusals.
#include <catch2/catch.hpp>
#include <cstring>
#include <cstdio>
#include <limits>

#include "noether/sdk/tree.hpp"
#include "tree_util.hpp"
#include "util.hpp"

using namespace noether;
using namespace testutil;
using Catch::Matchers::Contains;

namespace {

// ‖Δv − ref‖ / ‖ref‖: Δv = (M + diag k)⁻¹ u by the articulated-body passes at q, ref by a dense LU.
double abi_error(const TreeView& t, const std::vector<double>& q, const MatX& M, const std::vector<double>& k,
                 const std::vector<double>& u) {
    const int nv = t.nv;
    std::vector<Frame> Tk(t.size());
    for (int i = 0; i < t.size(); ++i) Tk[i] = link_transform(t.links[i], &q[t.links[i].iq]);
    std::vector<double> dq(nv);
    TreeABI abi;
    tree_abi_setup(t, Tk.data(), k.data(), abi);
    tree_abi_solve(t, Tk.data(), abi, u.data(), dq.data());
    MatX Mk = M;
    for (int i = 0; i < nv; ++i) Mk(i, i) += k[i];
    const VecX ref = Mk.partialPivLu().solve(Eigen::Map<const VecX>(u.data(), nv));
    return (Eigen::Map<const VecX>(dq.data(), nv) - ref).norm() / ref.norm();
}

// A branched tree: every link kind, a fixed joint inside the tree, a body welded to the world
// with a child, and a joint whose spec direction is the reverse of the tree's.
//   world ─J1 rev─ B1 ─J2 pri─ B2 ─J5 rev (spec parent B5, child B2)─ B5
//                  B1 ─J3 fixed─ B3 ─J4 rev─ B4
//   world ─J6 fixed─ B6 ─J7 rev─ B7
Spec branched_spec(unsigned seed = 7) {
    Rng r(seed);
    Spec s;
    s.options.integrator = "none";
    for (int i = 1; i <= 7; ++i) {
        BodySpec& b = s.add_body("B" + std::to_string(i));
        b.mass = r.uniform(0.5, 2);
        const Mat3 R = rotation(r.quat());
        b.inertia = R * box_inertia(b.mass, r.uniform(0.2, 1), r.uniform(0.2, 1), r.uniform(0.2, 1)) * transpose(R);
        b.position = Vec3{0.7 * i, 0.1 * i, 0} + r.vec(0.2);
        b.orientation = r.quat();
    }
    auto joint = [&](const char* name, const char* type, const char* parent, const char* child, const Vec3& anchor) {
        JointSpec& j = s.add_joint(name, type, parent, child);
        j.anchor = anchor;
        if (std::string(type) != "fixed") j.axis = r.unit();
    };
    joint("J1", "revolute", "world", "B1", {0, 0, 0});
    joint("J2", "prismatic", "B1", "B2", {1, 0, 0});
    joint("J3", "fixed", "B1", "B3", {1.5, 0, 0});
    joint("J4", "revolute", "B3", "B4", {2.4, 0.3, 0.1});
    joint("J5", "revolute", "B5", "B2", {2.8, 0.2, -0.1});
    joint("J6", "fixed", "world", "B6", {4, 0, 0});
    joint("J7", "revolute", "B6", "B7", {4.5, 0.5, 0});
    return s;
}


}  // namespace

TEST_CASE("tree view: links parents first, fixed joints merged, welded bodies in the world", "[tree]") {
    auto m = compile(branched_spec());
    const TreeView t = view_of(*m);
    REQUIRE(t.size() == 5);  // J1, J2, J4, J5, J7 move links; J3 and J6 are welds
    for (int i = 0; i < t.size(); ++i) CHECK(t.links[i].parent < i);
    const int b1 = m->body_index("B1"), b3 = m->body_index("B3"), b6 = m->body_index("B6");
    CHECK(t.body_link[b3] == t.body_link[b1]);
    CHECK(t.body_link[b6] == -1);
    CHECK(t.links[t.body_link[m->body_index("B7")]].parent == -1);
    CHECK(t.links[t.body_link[m->body_index("B5")]].parent == t.body_link[m->body_index("B2")]);

    // The merged link B1 + B3 against the composite computed here: mass, CoM, inertia.
    const TreeLink& L = t.links[t.body_link[b1]];
    const BodyInfo& B1 = m->bodies[b1];
    const BodyInfo& B3 = m->bodies[b3];
    CHECK(L.mass == Approx(B1.mass + B3.mass).epsilon(1e-15));
    const Vec3 c = (B1.mass * B1.pose0.x + B3.mass * B3.pose0.x) / (B1.mass + B3.mass);  // world
    Mat3 Iw;  // composite inertia about c, world axes
    for (const BodyInfo* b : {&B1, &B3}) {
        const Mat3 R = rotation(b->pose0.q);
        const Vec3 d = b->pose0.x - c;
        Iw = Iw + R * b->inertia * transpose(R) + b->mass * (dot(d, d) * Mat3::identity() - outer(d, d));
    }
    const Mat3 R1 = rotation(B1.pose0.q);
    const Mat3 expect = transpose(R1) * Iw * R1;  // in B1's axes, the link axes
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) CHECK(L.inertia(a, b) == Approx(expect(a, b)).margin(1e-13));
    // The link frame sits at the composite CoM: B1's offset in it is its CoM minus the composite's.
    CHECK(norm(R1 * t.body_offset[b1].p - (B1.pose0.x - c)) < 1e-13);
}

TEST_CASE("tree view: poses from coordinates satisfy every joint and read back the plugins' coordinates", "[tree]") {
    auto m = compile(branched_spec());
    const TreeView t = view_of(*m);
    Data d(m);
    // At the initial coordinates the view reproduces the initial poses.
    std::vector<double> q(t.size());
    for (int i = 0; i < t.size(); ++i) q[i] = d.coord[t.links[i].dof];  // offsets are 0
    std::vector<Pose> p = poses_at(*m, t, q);
    for (int b = 0; b < m->nbodies(); ++b) {
        CHECK(norm(p[b].x - m->bodies[b].pose0.x) < 1e-12);
        const Quat e = conj(p[b].q) * m->bodies[b].pose0.q;
        CHECK(norm(e.vec()) < 1e-12);
    }
    Rng r(3);
    for (int trial = 0; trial < 20; ++trial) {
        for (int i = 0; i < t.size(); ++i) q[i] = r.uniform(-3, 3);
        p = poses_at(*m, t, q);
        int worst = -1;
        CHECK(max_violation(*m, p.data(), &worst) < 1e-12);
        // The joint plugins read the same coordinates (angles unwrapped next to q).
        for (int i = 0; i < t.size(); ++i) {
            const JointInfo& j = m->joints[t.links[i].joint];
            double c = 0;
            j.impl->coordinates(j.a >= 0 ? p[j.a] : Pose{}, p[j.b], &q[i], &c);
            CHECK(c == Approx(q[i]).margin(1e-12));
        }
        std::vector<double> back(t.size());
        tree_coordinates(t, p.data(), q.data(), back.data());
        for (int i = 0; i < t.size(); ++i) CHECK(back[i] == Approx(q[i]).margin(1e-12));
    }
}

TEST_CASE("tree view: the mass matrix is the kinetic energy of the Model's bodies, the ABI solves it", "[tree]") {
    auto m = compile(branched_spec());
    const TreeView t = view_of(*m);
    const int n = t.size();
    Rng r(11);
    std::vector<double> q(n), qd(n);
    for (int i = 0; i < n; ++i) q[i] = r.uniform(-2, 2), qd[i] = r.uniform(-1, 1);
    // Filled with NaN first: every entry must be written, including the zeros between branches
    // (left unset, they made this test depend on whatever the heap held).
    MatX M = MatX::Constant(n, n, std::numeric_limits<double>::quiet_NaN());
    tree_mass_matrix(t, q.data(), M.data());
    CHECK(M.allFinite());
    CHECK((M - M.transpose()).norm() < 1e-14 * M.norm());
    // ½ q̇ᵀ M q̇ against the kinetic energy of every Model body, velocities by central differences
    // of the body poses (no twists, no composites).
    const double e = 1e-6;
    std::vector<double> qp(n), qm(n);
    for (int i = 0; i < n; ++i) qp[i] = q[i] + e * qd[i], qm[i] = q[i] - e * qd[i];
    const std::vector<Pose> P = poses_at(*m, t, qp), Q = poses_at(*m, t, qm), C = poses_at(*m, t, q);
    double T = 0;
    for (int b = 0; b < m->nbodies(); ++b) {
        const Vec3 v = (P[b].x - Q[b].x) / (2 * e);
        const Vec3 w = rotvec_from_quat(conj(Q[b].q) * P[b].q) / (2 * e);  // body frame
        T += 0.5 * m->bodies[b].mass * dot(v, v) + 0.5 * dot(w, m->bodies[b].inertia * w);
    }
    const Eigen::Map<const VecX> v(qd.data(), n);
    CHECK(0.5 * v.dot(M * v) == Approx(T).epsilon(1e-8));
    // ABI: (M + diag(k))⁻¹ u against the dense solve.
    std::vector<double> k(n), u(n);
    for (int i = 0; i < n; ++i) k[i] = r.uniform(0, 0.1), u[i] = r.uniform(-1, 1);
    CHECK(abi_error(t, q, M, k, u) < 1e-13);
}

TEST_CASE("tree view: the ABI matches the dense solve on a 10-link and a 32-link chain", "[tree]") {
    for (int n : {10, 32}) {
        auto m = compile(chain_spec(n));
        const TreeView t = view_of(*m);
        Rng r(5);
        std::vector<double> q(n), u(n);
        for (int i = 0; i < n; ++i) q[i] = r.uniform(-0.5, 0.5), u[i] = r.uniform(-1, 1);
        MatX M(n, n);
        tree_mass_matrix(t, q.data(), M.data());
        // riqn.md §5.2: the difference is the conditioning (cond ≈ 6e3 at n = 10, 1e6 at n = 32).
        const double tol = n == 10 ? 1e-12 : 1e-9;
        CHECK(abi_error(t, q, M, std::vector<double>(n, 0.0), u) < tol);
    }
}

TEST_CASE("tree view: loops and joints without a minimal description are refused, naming them", "[tree]") {
    auto errors_of = [](const Spec& s) {
        auto m = compile(s);
        TreeView t;
        std::vector<Diagnostic> errors;
        CHECK_FALSE(build_tree_view(*m, "riqn", t, errors));
        std::string all;
        for (const Diagnostic& d : errors) all += d.message + "\n";
        return all;
    };
    const std::string loop = errors_of(closed_loop_spec());
    CHECK_THAT(loop, Contains("joint 'closure' closes a kinematic loop"));
    CHECK_THAT(loop, Contains("vi-maximal"));
    Spec multi = chain_spec(3, "cylindrical");
    multi.joints[2].type = "planar";
    multi.joints[1].type = "spherical";
    multi.joints[1].axis.reset();
    const std::string two = errors_of(multi);
    CHECK_THAT(two, Contains("joint 'j1' (cylindrical, 2 degrees of freedom) gives no minimal-coordinate description"));
    CHECK_THAT(two, Contains("joint 'j3' (planar, 3 degrees of freedom) gives no minimal-coordinate description"));
    CHECK_THAT(two, Contains("takes revolute, prismatic, helical, spherical and fixed joints"));
    CHECK_THAT(two, !Contains("'j2'"));  // a ball joint is taken
}

TEST_CASE("tree view: a floating base is a free link, ball joints are 3-DOF links", "[tree]") {
    // A free body, and a floating tree: base — ball — arm — revolute — tip, a fixed weld on the base.
    {
        const Spec s = free_body_spec();
        auto m = compile(s);
        const TreeView t = view_of(*m);
        REQUIRE(t.size() == 1);
        CHECK(t.links[0].type == TreeJoint::free);
        CHECK(t.nq == 7);
        CHECK(t.nv == 6);
        CHECK_FALSE(t.screws_only);
    }
    Spec s = floating_tree_spec();
    auto m = compile(s);
    const TreeView t = view_of(*m);
    REQUIRE(t.size() == 3);
    CHECK(t.links[0].type == TreeJoint::free);
    CHECK(t.links[1].type == TreeJoint::ball);
    CHECK(t.links[2].type == TreeJoint::screw);
    CHECK(t.nq == 7 + 4 + 1);
    CHECK(t.nv == 6 + 3 + 1);
    CHECK(t.links[2].iq == 11);
    CHECK(t.links[2].iv == 9);
    CHECK(t.links[0].mass == Approx(m->bodies[0].mass + m->bodies[3].mass));
    // Coordinates from random poses of the links reproduce those poses, every joint satisfied.
    Rng r(3);
    for (int trial = 0; trial < 5; ++trial) {
        std::vector<double> q(t.nq), back(t.nq);
        const Quat Qb = r.quat(), Qj = r.quat();
        const double base[7] = {r.uniform(-1, 1), r.uniform(-1, 1), r.uniform(-1, 1), Qb.w, Qb.x, Qb.y, Qb.z};
        std::copy(base, base + 7, q.begin());
        q[7] = Qj.w, q[8] = Qj.x, q[9] = Qj.y, q[10] = Qj.z;
        q[11] = r.uniform(-3, 3);
        const std::vector<Pose> p = poses_at(*m, t, q);
        for (int j = 0; j < m->njoints(); ++j) {
            const JointInfo& ji = m->joints[j];
            std::vector<double> g(ji.rows);
            ji.impl->constraint(ji.a >= 0 ? p[ji.a] : Pose{}, p[ji.b], g.data(), nullptr, nullptr);
            for (double x : g) CHECK(std::fabs(x) < 1e-12);
        }
        tree_coordinates(t, p.data(), q.data(), back.data());
        for (int k = 0; k < t.nq; ++k) CHECK(back[k] == Approx(q[k]).margin(1e-12));
        // Retract and difference are inverse, and T(q ⊕ v) = T(q)·exp(S v) for each link.
        for (const TreeLink& l : t.links) {
            double v[6], qv[7], w[6];
            for (int k = 0; k < l.nv; ++k) v[k] = r.uniform(-0.8, 0.8);
            link_retract(l, &q[l.iq], v, qv);
            link_difference(l, &q[l.iq], qv, w);
            for (int k = 0; k < l.nv; ++k) CHECK(w[k] == Approx(v[k]).margin(1e-12));
            double Sv[6] = {0, 0, 0, 0, 0, 0};
            for (int c = 0; c < l.nv; ++c) {
                double sc[6];
                link_motion(l, c, sc);
                for (int k = 0; k < 6; ++k) Sv[k] += sc[k] * v[c];
            }
            const Frame a = link_transform(l, qv), b = link_transform(l, &q[l.iq]) * se3_exp(Sv);
            CHECK(norm(a.p - b.p) < 1e-12);
            for (int x = 0; x < 3; ++x)
                for (int y = 0; y < 3; ++y) CHECK(a.R(x, y) == Approx(b.R(x, y)).margin(1e-12));
        }
    }
}

TEST_CASE("tree view: with a free root and a ball joint, M is the kinetic energy and the ABI solves it", "[tree]") {
    auto m = compile(floating_tree_spec());
    const TreeView t = view_of(*m);
    const int nv = t.nv;
    Rng r(17);
    std::vector<double> q(t.nq), v(nv);
    for (const TreeLink& l : t.links) {
        std::vector<double> z(l.nq), w(l.nv);
        link_neutral(l, z.data());
        for (double& x : w) x = r.uniform(-1.5, 1.5);
        link_retract(l, z.data(), w.data(), &q[l.iq]);
    }
    for (double& x : v) x = r.uniform(-1, 1);
    MatX M = MatX::Constant(nv, nv, std::numeric_limits<double>::quiet_NaN());
    tree_mass_matrix(t, q.data(), M.data());
    REQUIRE(M.allFinite());
    CHECK((M - M.transpose()).norm() < 1e-14 * M.norm());
    // ½ vᵀ M v against the bodies' kinetic energy, velocities by central differences of the
    // body poses along q ⊕ ±e v.
    const double e = 1e-6;
    std::vector<double> qp(t.nq), qm(t.nq), ve(nv), vm(nv);
    for (int k = 0; k < nv; ++k) ve[k] = e * v[k], vm[k] = -e * v[k];
    for (const TreeLink& l : t.links) {
        link_retract(l, &q[l.iq], &ve[l.iv], &qp[l.iq]);
        link_retract(l, &q[l.iq], &vm[l.iv], &qm[l.iq]);
    }
    const std::vector<Pose> P = poses_at(*m, t, qp), Q = poses_at(*m, t, qm);
    double T = 0;
    for (int b = 0; b < m->nbodies(); ++b) {
        const Vec3 lin = (P[b].x - Q[b].x) / (2 * e);
        const Vec3 w = rotvec_from_quat(conj(Q[b].q) * P[b].q) / (2 * e);
        T += 0.5 * m->bodies[b].mass * dot(lin, lin) + 0.5 * dot(w, m->bodies[b].inertia * w);
    }
    const Eigen::Map<const VecX> vv(v.data(), nv);
    CHECK(0.5 * vv.dot(M * vv) == Approx(T).epsilon(1e-8));
    // The twists of tree_link_twists give the same energy.
    std::vector<double> V(6 * t.size());
    tree_link_twists(t, q.data(), v.data(), reinterpret_cast<double(*)[6]>(V.data()));
    double T2 = 0;
    for (int i = 0; i < t.size(); ++i) {
        const Vec3 w{V[6 * i], V[6 * i + 1], V[6 * i + 2]}, lin{V[6 * i + 3], V[6 * i + 4], V[6 * i + 5]};
        T2 += 0.5 * t.links[i].mass * dot(lin, lin) + 0.5 * dot(w, t.links[i].inertia * w);
    }
    CHECK(T2 == Approx(T).epsilon(1e-8));
    // From link transforms already at hand: the same twists bit for bit.
    std::vector<Frame> Tl(t.size());
    for (int i = 0; i < t.size(); ++i) Tl[i] = link_transform(t.links[i], &q[t.links[i].iq]);
    std::vector<double> V2(6 * t.size(), std::numeric_limits<double>::quiet_NaN());
    tree_link_twists(t, Tl.data(), v.data(), reinterpret_cast<double(*)[6]>(V2.data()));
    CHECK(std::memcmp(V.data(), V2.data(), sizeof(double) * V.size()) == 0);
    // ABI: (M + diag(k))⁻¹ u against the dense solve.
    std::vector<double> k(nv), u(nv);
    for (int i = 0; i < nv; ++i) k[i] = t.links.back().iv == i ? 0.05 : 0.0, u[i] = r.uniform(-1, 1);
    CHECK(abi_error(t, q, M, k, u) < 1e-12);
}

TEST_CASE("tree view: a screw link's transform multiplied out equals exp(A q) M", "[tree]") {
    // link_transform evaluates T(q) = exp(A q) · M as T0 + cos q Tc + sin q Ts (+ q pq): revolute
    // and prismatic links, spec directions both ways (branched_spec), angles well past 2π (the
    // helical joint: test_helical).
    auto m = compile(branched_spec());
    const TreeView t = view_of(*m);
    int turning = 0, sliding = 0;
    for (const TreeLink& l : t.links) {
        if (l.type != TreeJoint::screw) continue;
        (l.turns ? turning : sliding)++;
        INFO("link of joint '" << m->joints[l.joint].name << "'");
        CHECK(screw_transform_error(l) < 1e-14);
    }
    CHECK(turning == 4);  // J1, J4, J5, J7
    CHECK(sliding == 1);  // J2
    // A link whose A and M a plugin changes takes them up after link_set_screw.
    TreeLink l = t.links[0];
    l.M = Frame{rotation(Rng(9).quat()), Vec3{0.2, -0.4, 0.7}};
    l.A[3] += 0.3;  // a pitch along the axis, and an offset of it
    l.A[4] -= 0.2;
    CHECK(screw_transform_error(l) > 1e-3);  // the stale coefficients
    link_set_screw(l);
    CHECK(screw_transform_error(l) < 1e-14);
}

TEST_CASE("tree view: rebased to a point, poses come out relative to it and motions keep their precision far out",
          "[tree]") {
    // At the origin: a view moved to c gives every body pose moved by −c and reads the same
    // coordinates back from poses given relative to c.
    auto m = compile(branched_spec());
    const TreeView t = view_of(*m);
    TreeView tc = t;
    const Vec3 c{100.25, -3, 7.5};
    tree_rebase(tc, c);
    Rng r(5);
    std::vector<double> q(t.size()), back(t.size());
    for (int trial = 0; trial < 10; ++trial) {
        for (int i = 0; i < t.size(); ++i) q[i] = r.uniform(-3, 3);
        const std::vector<Pose> p = poses_at(*m, t, q), pc = poses_at(*m, tc, q);
        for (int b = 0; b < m->nbodies(); ++b) {
            CHECK(norm(pc[b].x - (p[b].x - c)) < 1e-12);
            CHECK(norm((conj(p[b].q) * pc[b].q).vec()) < 1e-14);
        }
        tree_coordinates(tc, pc.data(), q.data(), back.data());
        for (int i = 0; i < t.size(); ++i) CHECK(back[i] == Approx(q[i]).margin(1e-12));
    }
    // Near the origin tree_rebase_far leaves the view alone.
    TreeView tn = t;
    const TreeOrigin none = tree_rebase_far(*m, tn);
    CHECK_FALSE(none.moved);
    CHECK((none.c.x == 0 && none.c.y == 0 && none.c.z == 0));
    CHECK(tn.links[0].M.p.x == t.links[0].M.p.x);
    // 200 km out: the motion of a root link over a small step, T(q)⁻¹ T(q + δ), as at the origin
    // to 1e-13 in the rebased view (at 200 km a position rounds to 3e-11 m: the view as built gets
    // that motion wrong by ~5e-11; measured 2e-14 and 4.7e-11).
    Spec far = branched_spec();
    const Vec3 off{2e5, -1e5, 5e4};
    for (BodySpec& b : far.bodies) b.position = b.position + off;
    for (JointSpec& j : far.joints) *j.anchor = *j.anchor + off;
    auto mf = compile(far);
    TreeView tf = view_of(*mf);
    const TreeView tf_raw = tf;
    const TreeOrigin o = tree_rebase_far(*mf, tf);
    CHECK(o.moved);
    CHECK(norm(o.c - off) < 10);
    double gap = 0, gap_raw = 0;
    for (int i = 0; i < t.size(); ++i) {
        if (t.links[i].parent >= 0 || t.links[i].type != TreeJoint::screw) continue;
        for (double q0 : {-2.0, 0.3, 1.7}) {
            const double dq = 1e-3;
            auto motion = [&](const TreeLink& l) { return inverse(link_transform(l, q0)) * link_transform(l, q0 + dq); };
            const Frame a = motion(t.links[i]), b = motion(tf.links[i]), braw = motion(tf_raw.links[i]);
            gap = std::max(gap, norm(a.p - b.p));
            gap_raw = std::max(gap_raw, norm(a.p - braw.p));
        }
    }
    std::printf("rebase: motion gap %.3g (as built %.3g)\n", gap, gap_raw);
    CHECK(gap < 1e-13);
    CHECK(gap_raw > 1e-12);  // (what the rebase is for)
    // A free root: nothing of it in the view changes (its coordinates, its pose, are the caller's);
    // far out the point is its body's initial position.
    Spec fl = floating_tree_spec();
    auto mfl = compile(fl);
    TreeView tfl = view_of(*mfl);
    const Frame M0 = tfl.links[0].M;
    tree_rebase(tfl, c);
    CHECK(tfl.links[0].M.p.x == M0.p.x);
    const TreeOrigin z = tree_rebase_far(*mfl, tfl);
    CHECK_FALSE(z.moved);
    CHECK((z.c.x == 0 && z.c.y == 0 && z.c.z == 0));
    for (BodySpec& b : fl.bodies) b.position = b.position + off;
    for (JointSpec& j : fl.joints)
        if (j.anchor) *j.anchor = *j.anchor + off;
    auto mflf = compile(fl);
    TreeView tflf = view_of(*mflf);
    const TreeOrigin zf = tree_rebase_far(*mflf, tflf);
    CHECK(zf.moved);
    CHECK(norm(zf.c - mflf->bodies[tflf.links[0].body].pose0.x) == 0);
}

TEST_CASE("tree view: add_congruence_ad adds Xᵀ I X for X = Ad_{T⁻¹}, its diagonal blocks exactly symmetric",
          "[tree]") {
    // Against the 6×6 products of the matrix itself (ad_inv_matrix, add_congruence) for random
    // rotations, offsets up to 3 m and symmetric I (an articulated inertia: not a rigid body's), added
    // onto a P that is not zero. A sign or a transposed block in the rotation or the carry along p
    // fails by O(1); the symmetric mirroring must hold to the bit.
    Rng r(41);
    double worst = 0;
    for (int trial = 0; trial < 200; ++trial) {
        const Frame T{rotation(r.quat()), r.vec(3.0)};
        double I[36], P[36], Pref[36], X[36];
        for (int a = 0; a < 6; ++a)
            for (int b = a; b < 6; ++b) I[6 * a + b] = I[6 * b + a] = r.uniform(-2, 2) + (a == b ? 5.0 : 0.0);
        for (int k = 0; k < 36; ++k) P[k] = Pref[k] = r.uniform(-1, 1);
        ad_inv_matrix(T, X);
        add_congruence(X, I, X, Pref);
        add_congruence_ad(T, I, P);
        double scale = 0, err = 0;
        for (int k = 0; k < 36; ++k) scale = std::max(scale, std::fabs(Pref[k])), err = std::max(err, std::fabs(P[k] - Pref[k]));
        worst = std::max(worst, err / scale);
        double Q[36] = {};
        add_congruence_ad(T, I, Q);
        for (int a = 0; a < 6; ++a)
            for (int b = 0; b < 6; ++b) REQUIRE(Q[6 * a + b] == Q[6 * b + a]);
    }
    INFO("largest relative difference " << worst);
    CHECK(worst < 1e-14);
}
