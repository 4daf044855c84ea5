// The tree view (noether/tree.hpp): parents-first links, fixed joints merged, screws and rest
// poses that reproduce the joint plugins' coordinates and constraints, the mass matrix and the
// articulated-body solve, and the refusals.
#include <catch2/catch.hpp>
#include <limits>

#include "noether/tree.hpp"
#include "util.hpp"

using namespace noether;
using namespace testutil;
using Catch::Matchers::Contains;

namespace {

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

TreeView view_of(const Model& m) {
    TreeView t;
    std::vector<Diagnostic> errors;
    REQUIRE(build_tree_view(m, "test", t, errors));
    REQUIRE(errors.empty());
    return t;
}

std::vector<Pose> body_poses(const Model& m, const TreeView& t, const std::vector<double>& q) {
    std::vector<Frame> g(t.size());
    std::vector<Pose> p(m.nbodies());
    tree_link_poses(t, q.data(), g.data());
    tree_body_poses(t, g.data(), nullptr, p.data());
    return p;
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
    std::vector<Pose> p = body_poses(*m, t, q);
    for (int b = 0; b < m->nbodies(); ++b) {
        CHECK(norm(p[b].x - m->bodies[b].pose0.x) < 1e-12);
        const Quat e = conj(p[b].q) * m->bodies[b].pose0.q;
        CHECK(norm(e.vec()) < 1e-12);
    }
    Rng r(3);
    for (int trial = 0; trial < 20; ++trial) {
        for (int i = 0; i < t.size(); ++i) q[i] = r.uniform(-3, 3);
        p = body_poses(*m, t, q);
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
    const std::vector<Pose> P = body_poses(*m, t, qp), Q = body_poses(*m, t, qm), C = body_poses(*m, t, q);
    double T = 0;
    for (int b = 0; b < m->nbodies(); ++b) {
        const Vec3 v = (P[b].x - Q[b].x) / (2 * e);
        const Vec3 w = rotvec_from_quat(conj(Q[b].q) * P[b].q) / (2 * e);  // body frame
        T += 0.5 * m->bodies[b].mass * dot(v, v) + 0.5 * dot(w, m->bodies[b].inertia * w);
    }
    const Eigen::Map<const VecX> v(qd.data(), n);
    CHECK(0.5 * v.dot(M * v) == Approx(T).epsilon(1e-8));
    // ABI: (M + diag(k))⁻¹ u against the dense solve.
    std::vector<Frame> Tk(n);
    for (int i = 0; i < n; ++i) Tk[i] = link_transform(t.links[i], q[i]);
    std::vector<double> k(n), u(n), dq(n);
    for (int i = 0; i < n; ++i) k[i] = r.uniform(0, 0.1), u[i] = r.uniform(-1, 1);
    TreeABI abi;
    tree_abi_setup(t, Tk.data(), k.data(), abi);
    tree_abi_solve(t, Tk.data(), abi, u.data(), dq.data());
    MatX Mk = M;
    for (int i = 0; i < n; ++i) Mk(i, i) += k[i];
    const VecX ref = Mk.partialPivLu().solve(Eigen::Map<const VecX>(u.data(), n));
    CHECK((Eigen::Map<const VecX>(dq.data(), n) - ref).norm() < 1e-13 * ref.norm());
}

TEST_CASE("tree view: the ABI matches the dense solve on a 10-link and a 32-link chain", "[tree]") {
    for (int n : {10, 32}) {
        auto m = compile(chain_spec(n));
        const TreeView t = view_of(*m);
        Rng r(5);
        std::vector<double> q(n), u(n), dq(n);
        for (int i = 0; i < n; ++i) q[i] = r.uniform(-0.5, 0.5), u[i] = r.uniform(-1, 1);
        MatX M(n, n);
        tree_mass_matrix(t, q.data(), M.data());
        std::vector<Frame> Tk(n);
        for (int i = 0; i < n; ++i) Tk[i] = link_transform(t.links[i], q[i]);
        TreeABI abi;
        tree_abi_setup(t, Tk.data(), nullptr, abi);
        tree_abi_solve(t, Tk.data(), abi, u.data(), dq.data());
        const VecX ref = M.partialPivLu().solve(Eigen::Map<const VecX>(u.data(), n));
        // riqn.md §5.2: the difference is the conditioning (cond ≈ 6e3 at n = 10, 1e6 at n = 32).
        const double tol = n == 10 ? 1e-12 : 1e-9;
        CHECK((Eigen::Map<const VecX>(dq.data(), n) - ref).norm() < tol * ref.norm());
    }
}

TEST_CASE("tree view: loops, multi-DOF joints and floating bodies are refused, naming them", "[tree]") {
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
    Spec ball = chain_spec(2, "spherical");
    const std::string multi = errors_of(ball);
    CHECK_THAT(multi, Contains("joint 'j1' (spherical) has 3 degrees of freedom"));
    CHECK_THAT(multi, Contains("joint 'j2' (spherical)"));
    Spec free = free_body_spec();
    free.options.integrator = "none";
    CHECK_THAT(errors_of(free), Contains("body 'body' has no joint path to the world"));
}
