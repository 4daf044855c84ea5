// Shared helpers for the tests: random poses, finite differences, small scene builders.
#pragma once

#include <Eigen/Dense>
#include <exception>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "noether/sdk/sdk.hpp"

namespace testutil {

using namespace noether;
using MatX = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VecX = Eigen::VectorXd;

// Every integrator plugin the project ships, in a fixed order (fuzz_state's inputs pick one by its
// index); test_data checks the list against the registry, so that a new one is not left out.
inline constexpr const char* kShippedIntegrators[] = {"vi-maximal", "vi-midpoint",     "riqn",      "vi-galerkin", "heun",
                                                      "rk4",        "dp45-projection", "rk4-joint", "dp45-joint"};
inline constexpr int kNumShippedIntegrators = sizeof kShippedIntegrators / sizeof kShippedIntegrators[0];

// The message of the exception f() throws ("" if none).
inline std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

// A whole file as a string ("" if it cannot be read).
inline std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct Rng {
    std::mt19937_64 gen;
    explicit Rng(unsigned seed = 12345) : gen(seed) {}
    double uniform(double lo = -1, double hi = 1) { return std::uniform_real_distribution<double>(lo, hi)(gen); }
    Vec3 vec(double scale = 1) { return {scale * uniform(), scale * uniform(), scale * uniform()}; }
    Vec3 unit() { return normalized(vec()); }
    Quat quat() {
        std::normal_distribution<double> n;
        return qnormalized(Quat{n(gen), n(gen), n(gen), n(gen)});
    }
    Pose pose(double scale = 1) { return {vec(scale), quat()}; }
};

// Perturb a pose in coordinate k of [x (3) | θ (3)] by h.
inline Pose perturb(const Pose& p, int k, double h) {
    Pose out = p;
    if (k < 3) out.x[k] += h;
    else {
        Vec3 d;
        d[k - 3] = h;
        out.q = oplus(p.q, d);
    }
    return out;
}

// Relative Frobenius error ‖A − B‖ / max(‖B‖, floor).
inline double rel_err(const MatX& A, const MatX& B, double floor = 1e-8) {
    return (A - B).norm() / std::max(B.norm(), floor);
}

// A JointModel compiled straight from a spec (no Model), for joint-level tests.
struct CompiledJoint {
    std::vector<Diagnostic> diags;
    std::unique_ptr<JointModel> joint;
};
inline CompiledJoint compile_joint(const JointSpec& js, bool world_parent, const Pose& a0, const Pose& b0) {
    CompiledJoint out;
    const JointType* type = Registry::global().joint(js.type);
    if (!type) {
        out.diags.push_back({Severity::error, {}, "no joint type " + js.type});
        return out;
    }
    JointSetup setup(js, world_parent, a0, b0);
    if (!setup.failed()) out.joint = type->compile(setup);
    out.diags = setup.diagnostics();
    return out;
}

// Box inertia about the CoM (sides lx, ly, lz).
inline Mat3 box_inertia(double m, double lx, double ly, double lz) {
    return Mat3::diag(m * (ly * ly + lz * lz) / 12, m * (lx * lx + lz * lz) / 12, m * (lx * lx + ly * ly) / 12);
}

// n-link pendulum of the benchmark: 1×0.1×0.1 m boxes of 1 kg along +x, joints at link ends,
// revolute axes y (or ball joints).
inline Spec chain_spec(int n, const std::string& joint = "revolute", const std::string& integrator = "none") {
    Spec s;
    s.options.integrator = integrator;
    for (int i = 0; i < n; ++i) {
        BodySpec& b = s.add_body("link" + std::to_string(i + 1));
        b.mass = 1;
        b.inertia = box_inertia(1, 1, 0.1, 0.1);
        b.position = {i + 0.5, 0, 0};
    }
    for (int i = 0; i < n; ++i) {
        JointSpec& j = s.add_joint("j" + std::to_string(i + 1), joint, i == 0 ? "world" : "link" + std::to_string(i),
                                   "link" + std::to_string(i + 1));
        j.anchor = Vec3{double(i), 0, 0};
        if (joint != "spherical") j.axis = Vec3{0, 1, 0};
    }
    return s;
}

// Recipe 8: the double pendulum (two 1 m boxes of 1 kg, hinges along y, horizontal at rest).
// A 1 kg, 1 m rod (0.05 m square section) hinged at one end about y, at rest along x: body 'rod',
// joint 'hinge' (I = 1/3 + 0.05²/12 kg m² about the hinge). Gravity −gravity along z.
inline Spec hinged_rod_spec(const char* integrator, double dt, double gravity) {
    Spec s;
    s.options.integrator = integrator;
    s.options.dt = dt;
    s.gravity = {0, 0, -gravity};
    BodySpec& b = s.add_body("rod");
    b.mass = 1;
    b.inertia = Mat3::diag(0.05 * 0.05 * 2 / 12.0, (1 + 0.05 * 0.05) / 12.0, (1 + 0.05 * 0.05) / 12.0);
    b.position = {0.5, 0, 0};
    JointSpec& j = s.add_joint("hinge", "revolute", "world", "rod");
    j.anchor = Vec3{0, 0, 0};
    j.axis = Vec3{0, 1, 0};
    return s;
}

inline Spec double_pendulum_spec(const std::string& solver = "auto") {
    Spec s = chain_spec(2, "revolute", "vi-maximal");
    s.options.solver = solver;
    return s;
}

// Three 1 m boxes L1 (0,0,0)→(1,0,0), L2 (1,0,0)→(1,0,−1), L3 (1,0,−1)→(2,0,−1); hinges along y
// at the world origin and the shared ends; L3's far end closed to the world at (2,0,−1) by
// `closure`: "point-on-line" along y (recipe 9, 1 DOF, no redundant rows) or "revolute"
// (the classic planar four-bar of four hinges: 3 of its 5 closure rows are redundant in 3-D).
inline Spec closed_loop_spec(const std::string& closure = "point-on-line", const std::string& solver = "auto") {
    Spec s;
    s.options.integrator = "vi-maximal";
    s.options.solver = solver;
    const Quat down = quat_from_axis_angle({0, 1, 0}, M_PI / 2);  // body x → world −z
    const Vec3 centers[3] = {{0.5, 0, 0}, {1, 0, -0.5}, {1.5, 0, -1}};
    for (int i = 0; i < 3; ++i) {
        BodySpec& b = s.add_body("L" + std::to_string(i + 1));
        b.mass = 1;
        b.inertia = box_inertia(1, 1, 0.1, 0.1);
        b.position = centers[i];
        if (i == 1) b.orientation = down;
    }
    const char* parents[3] = {"world", "L1", "L2"};
    const Vec3 anchors[3] = {{0, 0, 0}, {1, 0, 0}, {1, 0, -1}};
    for (int i = 0; i < 3; ++i) {
        JointSpec& j = s.add_joint("hinge" + std::to_string(i + 1), "revolute", parents[i], "L" + std::to_string(i + 1));
        j.anchor = anchors[i];
        j.axis = Vec3{0, 1, 0};
    }
    JointSpec& c = s.add_joint("closure", closure, "world", "L3");
    c.anchor = Vec3{2, 0, -1};
    c.axis = Vec3{0, 1, 0};
    return s;
}

// CIP §8 "articulated + contacts": the double pendulum hinged at (0, 0, 1.5) with point contacts
// (μ 0.5) at the free end of link 1 and both ends of link 2 (tests/contact, the saved-state fuzzer).
inline Spec falling_double_pendulum(const std::string& solver = "auto") {
    Spec s = double_pendulum_spec(solver);
    for (BodySpec& b : s.bodies) b.position.z += 1.5;
    for (JointSpec& j : s.joints) j.anchor->z += 1.5;
    for (auto [body, x] : {std::pair<const char*, double>{"link1", 0.5}, {"link2", -0.5}, {"link2", 0.5}}) {
        ContactSpec c;
        c.body = body;
        c.pose.x = {x, 0, 0};
        c.mu = 0.5;
        s.contacts.push_back(c);
    }
    return s;
}

// Paper 004's free rigid body: J = diag(1, 2, 3), ω = (0, 3, 4) (body frame), no gravity.
inline Spec free_body_spec() {
    Spec s;
    s.options.integrator = "vi-maximal";
    s.gravity = {0, 0, 0};
    BodySpec& b = s.add_body("body");
    b.mass = 1;
    b.inertia = Mat3::diag(1, 2, 3);
    b.angular_velocity = {0, 3, 4};
    b.angular_velocity_in_body = true;
    return s;
}

// A floating tree (no joint to the world, no gravity): a base with a plate welded on, a ball
// joint to an arm (spec direction arm → base, the reverse of the tree's) and a hinge to a tip.
inline Spec floating_tree_spec(unsigned seed = 12, const std::string& integrator = "none") {
    Rng r(seed);
    Spec s;
    s.options.integrator = integrator;
    s.gravity = {0, 0, 0};
    const char* names[4] = {"base", "arm", "tip", "plate"};
    const Vec3 at[4] = {{0, 0, 0}, {0.6, 0, 0.1}, {1.2, 0.1, 0}, {-0.2, 0.3, 0}};
    for (int i = 0; i < 4; ++i) {
        BodySpec& b = s.add_body(names[i]);
        b.mass = r.uniform(0.5, 2);
        const Mat3 R = rotation(r.quat());
        b.inertia = R * box_inertia(b.mass, r.uniform(0.2, 0.6), r.uniform(0.2, 0.6), r.uniform(0.2, 0.6)) * transpose(R);
        b.position = at[i] + r.vec(0.05);
        b.orientation = r.quat();
    }
    s.add_joint("ball", "spherical", "arm", "base").anchor = Vec3{0.3, 0, 0.05};
    JointSpec& h = s.add_joint("hinge", "revolute", "arm", "tip");
    h.anchor = Vec3{0.9, 0.05, 0.05};
    h.axis = r.unit();
    s.add_joint("weld", "fixed", "base", "plate").anchor = Vec3{-0.1, 0.15, 0};
    return s;
}

// Recipe 2: nine bodies, every joint type, a body-body loop and a second world joint.
inline Spec every_joint_spec(unsigned seed = 21) {
    Rng r(seed);
    Spec s;
    s.options.integrator = "vi-maximal";
    for (int i = 0; i < 9; ++i) {
        BodySpec& b = s.add_body("B" + std::to_string(i + 1));
        b.mass = r.uniform(0.5, 2);
        const Mat3 R = rotation(r.quat());
        b.inertia = R * box_inertia(b.mass, r.uniform(0.2, 1), r.uniform(0.2, 1), r.uniform(0.2, 1)) * transpose(R);
        b.position = Vec3{0.8 * i, 0, 0} + r.vec(0.3);
        b.orientation = r.quat();
        b.velocity = r.vec(0.5);
        b.angular_velocity = r.vec(1.0);
    }
    const char* types[] = {"revolute", "prismatic", "spherical", "universal", "cylindrical",
                           "planar",   "point-on-line", "fixed", "revolute"};
    for (int i = 0; i < 9; ++i) {
        JointSpec& j = s.add_joint("J" + std::to_string(i + 1), types[i], i == 0 ? "world" : "B" + std::to_string(i),
                                   "B" + std::to_string(i + 1));
        j.anchor = Vec3{0.8 * i - 0.4, 0, 0} + r.vec(0.2);
        const Vec3 axis = r.unit();
        j.axis = axis;
        if (std::string(types[i]) == "universal") {
            Vec3 e1, e2;
            orthonormal_basis(axis, e1, e2);
            j.axis2 = e1;
        }
    }
    JointSpec& loop = s.add_joint("loop", "spherical", "B9", "B3");
    loop.anchor = Vec3{4, 0.3, 0};
    JointSpec& w2 = s.add_joint("world2", "point-on-line", "world", "B9");
    w2.axis = r.unit();
    return s;
}

// The spec with a spring (stiffness, rest) and a damper on every DOF of every joint: implicit
// joint forces, unknowns of the variational integrators' steps.
inline Spec with_springs(Spec s, double stiffness = 3.0, double damping = 0.7) {
    auto m = compile(s);
    for (std::size_t j = 0; j < s.joints.size(); ++j) {
        const int dofs = m->joints[j].dofs;
        if (dofs == 0) continue;
        s.joints[j].stiffness.assign(dofs, stiffness);
        s.joints[j].damping.assign(dofs, damping * (1 + 0.1 * static_cast<double>(j)));
        s.joints[j].rest.assign(dofs, 0.05);
    }
    return s;
}

// Relative error of the integrator's analytic Newton matrix against central differences of its
// step residual, at random unknowns.
inline double newton_matrix_error(const Model& m, Data& d, Rng& r) {
    const BlockGraph& g = m.integrator->system_graph(m, d);
    VecX s(g.total_size), f(g.total_size), fp(g.total_size), fm(g.total_size);
    for (int i = 0; i < g.total_size; ++i) s[i] = r.uniform(-1, 1);
    BlockMatrix A(g);
    if (!m.integrator->step_system(m, d, s.data(), f.data(), &A)) return -1;
    MatX J(g.total_size, g.total_size), F(g.total_size, g.total_size);
    A.to_dense(g, J.data());
    const double h = 1e-6;
    for (int k = 0; k < g.total_size; ++k) {
        VecX sp = s, sm = s;
        sp[k] += h;
        sm[k] -= h;
        m.integrator->step_system(m, d, sp.data(), fp.data(), nullptr);
        m.integrator->step_system(m, d, sm.data(), fm.data(), nullptr);
        F.col(k) = (fp - fm) / (2 * h);
    }
    return rel_err(J, F);
}

}  // namespace testutil
