// Shared helpers for the tests: random poses, finite differences, small scene builders.
#pragma once

#include <Eigen/Dense>
#include <random>
#include <string>
#include <vector>

#include "noether/noether.hpp"

namespace testutil {

using namespace noether;
using MatX = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VecX = Eigen::VectorXd;

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

}  // namespace testutil
