// Constraint primitives (maximal-vi.md §5): analytic Jacobians against central differences,
// with a body parent and the world, at random configurations; and the paper's G_q identity.
#include <catch2/catch.hpp>
#include <functional>

#include "util.hpp"

using namespace noether;
using testutil::MatX;

namespace {

using Prim = std::function<void(const Pose&, const Pose&, RowWriter&)>;

struct Result {
    double err_a = 0, err_b = 0;
};

// Compare the analytic Jacobians of a primitive with central differences (h = 1e-6).
Result fd_check(const Prim& prim, int rows, const Pose& a, const Pose& b, bool world) {
    MatX Ja(rows, 6), Jb(rows, 6), Fa(rows, 6), Fb(rows, 6);
    std::vector<double> g(rows), gp(rows), gm(rows);
    RowWriter w{g.data(), world ? nullptr : Ja.data(), Jb.data()};
    prim(a, b, w);
    REQUIRE(w.row == rows);
    const double h = 1e-6;
    for (int k = 0; k < 6; ++k) {
        for (int side = 0; side < 2; ++side) {
            if (side == 0 && world) continue;
            RowWriter wp{gp.data(), nullptr, nullptr}, wm{gm.data(), nullptr, nullptr};
            if (side == 0) {
                prim(testutil::perturb(a, k, h), b, wp);
                prim(testutil::perturb(a, k, -h), b, wm);
            } else {
                prim(a, testutil::perturb(b, k, h), wp);
                prim(a, testutil::perturb(b, k, -h), wm);
            }
            for (int r = 0; r < rows; ++r) (side ? Fb : Fa)(r, k) = (gp[r] - gm[r]) / (2 * h);
        }
    }
    Result out;
    if (!world) out.err_a = testutil::rel_err(Ja, Fa);
    out.err_b = testutil::rel_err(Jb, Fb);
    return out;
}

void check_primitive(const char* name, const Prim& prim, int rows) {
    testutil::Rng rng(std::hash<std::string>{}(name) & 0xffff);
    double worst = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const bool world = trial % 2 == 1;
        const Pose a = world ? Pose{} : rng.pose(2);
        const Pose b = rng.pose(2);
        const Result r = fd_check(prim, rows, a, b, world);
        worst = std::max({worst, r.err_a, r.err_b});
    }
    INFO(name << ": worst relative Jacobian error " << worst);
    CHECK(worst < 1e-6);
}

}  // namespace

TEST_CASE("primitive C (point coincidence) Jacobians", "[primitives]") {
    testutil::Rng r(1);
    const Vec3 pa = r.vec(), pb = r.vec();
    check_primitive("C", [&](const Pose& a, const Pose& b, RowWriter& w) { prim_point(a, b, pa, pb, w); }, 3);
}

TEST_CASE("primitive O (translational) Jacobians, ndof 0, 1, 2", "[primitives]") {
    testutil::Rng r(2);
    const Vec3 pa = r.vec(), pb = r.vec(), ax = r.unit();
    for (int ndof = 0; ndof < 3; ++ndof)
        check_primitive(("O" + std::to_string(ndof)).c_str(),
                        [&](const Pose& a, const Pose& b, RowWriter& w) { prim_translation(a, b, ndof, ax, pa, pb, w); },
                        3 - ndof);
}

TEST_CASE("primitive Rot (rotational) Jacobians, ndof 0, 1, 2", "[primitives]") {
    testutil::Rng r(3);
    const Vec3 ax = r.unit();
    const Quat qoff = r.quat();
    for (int ndof = 0; ndof < 3; ++ndof)
        check_primitive(("Rot" + std::to_string(ndof)).c_str(),
                        [&](const Pose& a, const Pose& b, RowWriter& w) { prim_rotation(a, b, ndof, ax, qoff, w); },
                        3 - ndof);
}

TEST_CASE("primitive SO (perpendicular axes) Jacobians", "[primitives]") {
    testutil::Rng r(4);
    const Vec3 u = r.unit(), v = r.unit();
    check_primitive("SO", [&](const Pose& a, const Pose& b, RowWriter& w) { prim_perpendicular(a, b, u, v, w); }, 1);
}

TEST_CASE("paper's rotational gradient: (dg/dq) L(q) V^T = 2 dg/dtheta", "[primitives]") {
    // ∂g/∂q is the plain derivative of the formulas in the four quaternion entries.
    testutil::Rng r(5);
    const Vec3 pa = r.vec(), pb = r.vec(), ax = r.unit();
    const Quat qoff = r.quat();
    const Prim prims[] = {
        [&](const Pose& a, const Pose& b, RowWriter& w) { prim_point(a, b, pa, pb, w); },
        [&](const Pose& a, const Pose& b, RowWriter& w) { prim_rotation(a, b, 1, ax, qoff, w); },
        [&](const Pose& a, const Pose& b, RowWriter& w) { prim_translation(a, b, 1, ax, pa, pb, w); },
    };
    const int rows[] = {3, 2, 2};
    double worst = 0;
    for (int p = 0; p < 3; ++p) {
        const Pose a = r.pose(), b = r.pose();
        const int m = rows[p];
        MatX Jb(m, 6), dgdq(m, 4);
        std::vector<double> g(m), gp(m), gm(m);
        RowWriter w{g.data(), nullptr, Jb.data()};
        prims[p](a, b, w);
        const double h = 1e-6;
        for (int k = 0; k < 4; ++k) {
            Pose bp = b, bm = b;
            double* qp[4] = {&bp.q.w, &bp.q.x, &bp.q.y, &bp.q.z};
            double* qm[4] = {&bm.q.w, &bm.q.x, &bm.q.y, &bm.q.z};
            *qp[k] += h;
            *qm[k] -= h;
            RowWriter wp{gp.data(), nullptr, nullptr}, wm{gm.data(), nullptr, nullptr};
            prims[p](a, bp, wp);
            prims[p](a, bm, wm);
            for (int i = 0; i < m; ++i) dgdq(i, k) = (gp[i] - gm[i]) / (2 * h);
        }
        const Quat& q = b.q;
        Eigen::Matrix<double, 4, 3> LVt;
        LVt << -q.x, -q.y, -q.z,  //
            q.w, -q.z, q.y,       //
            q.z, q.w, -q.x,       //
            -q.y, q.x, q.w;
        const MatX Gq = dgdq * LVt;
        const MatX twice = 2.0 * Jb.rightCols(3);
        worst = std::max(worst, testutil::rel_err(Gq, twice));
    }
    INFO("worst relative error " << worst);
    CHECK(worst < 1e-6);
}

TEST_CASE("hinge angle and slide displacement Jacobians are exact away from the joint manifold", "[primitives]") {
    testutil::Rng r(6);
    const Vec3 ax = r.unit(), pa = r.vec(), pb = r.vec();
    const Quat qoff = r.quat();
    double worst = 0;
    for (int trial = 0; trial < 20; ++trial) {
        const Pose a = r.pose(), b = r.pose();
        double Ca[6], Cb[6], Sa[6], Sb[6];
        hinge_angle_jacobian(a, b, ax, qoff, Ca, Cb);
        slide_displacement_jacobian(a, b, ax, pb, Sa, Sb);
        const double h = 1e-6;
        const double c0 = hinge_angle(a, b, ax, qoff, nullptr);
        for (int k = 0; k < 6; ++k) {
            auto ang = [&](const Pose& pa_, const Pose& pb_) { return hinge_angle(pa_, pb_, ax, qoff, &c0); };
            auto sl = [&](const Pose& pa_, const Pose& pb_) { return slide_displacement(pa_, pb_, ax, pa, pb); };
            const double fa = (ang(testutil::perturb(a, k, h), b) - ang(testutil::perturb(a, k, -h), b)) / (2 * h);
            const double fb = (ang(a, testutil::perturb(b, k, h)) - ang(a, testutil::perturb(b, k, -h))) / (2 * h);
            const double sa = (sl(testutil::perturb(a, k, h), b) - sl(testutil::perturb(a, k, -h), b)) / (2 * h);
            const double sb = (sl(a, testutil::perturb(b, k, h)) - sl(a, testutil::perturb(b, k, -h))) / (2 * h);
            worst = std::max({worst, std::fabs(fa - Ca[k]), std::fabs(fb - Cb[k]), std::fabs(sa - Sa[k]),
                              std::fabs(sb - Sb[k])});
        }
    }
    INFO("worst absolute error " << worst);
    CHECK(worst < 1e-7);
}
