// universal (Cardan): C(pa, pb) + SO(u, v): 4 rows, 2 DOF. u is fixed in the parent, v in the
// child, u ⟂ v at assembly. The relative rotation is Rot(u, θ1) · R0 · Rot(v, θ2): coordinates
// θ1 (about u, the parent's axis) and θ2 (about v, the child's axis).
#include <cmath>
#include <cstdio>

#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"

namespace {

using namespace noether;

void put_row(double* C, int row, const Vec3& th) {
    double* r = C + 6 * row;
    r[0] = r[1] = r[2] = 0;
    r[3] = th.x, r[4] = th.y, r[5] = th.z;
}

class Universal final : public JointModel {
public:
    Universal(const JointSetup& s, const Vec3& u, const Vec3& v) : pa_(s.pa()), pb_(s.pb()), u_(u), v_(v) {
        const Mat3 Rab = transpose(rotation(s.a0().q)) * rotation(s.b0().q);
        va0_ = Rab * v_;
        ub0_ = transpose(Rab) * u_;
    }
    int rows() const override { return 4; }
    int dofs() const override { return 2; }
    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        prim_point(a, b, pa_, pb_, w);
        prim_perpendicular(a, b, u_, v_, w);
    }
    void coordinates(const Pose& a, const Pose& b, const double* prev, double* c) const override {
        const Mat3 Rab = transpose(rotation(a.q)) * rotation(b.q);
        const Vec3 va = Rab * v_, ub = transpose(Rab) * u_;
        c[0] = std::atan2(dot(cross(u_, va0_), va), dot(va0_, va));
        c[1] = std::atan2(dot(cross(ub0_, v_), ub), dot(ub0_, ub));
        const double two_pi = 2 * M_PI;
        if (prev)
            for (int k = 0; k < 2; ++k) c[k] += two_pi * std::round((prev[k] - c[k]) / two_pi);
    }
    void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const override {
        const Mat3 Rab = transpose(rotation(a.q)) * rotation(b.q);
        const Vec3 va = Rab * v_, ub = transpose(Rab) * u_;
        // θ1 = atan2(w1·va, va0·va): dθ1 = t1·dva; dva = va × δa (parent turn), −Rab (v × δb) (child turn).
        const Vec3 w1 = cross(u_, va0_);
        const double y1 = dot(w1, va), x1 = dot(va0_, va);
        const Vec3 t1 = (x1 * w1 - y1 * va0_) / (x1 * x1 + y1 * y1);
        // θ2 = atan2(w2·ub, ub0·ub): dθ2 = t2·dub; dub = ub × δb (child turn), −Rabᵀ (u × δa) (parent turn).
        const Vec3 w2 = cross(ub0_, v_);
        const double y2 = dot(w2, ub), x2 = dot(ub0_, ub);
        const Vec3 t2 = (x2 * w2 - y2 * ub0_) / (x2 * x2 + y2 * y2);
        if (Ca) {
            put_row(Ca, 0, cross(t1, va));
            put_row(Ca, 1, cross(u_, Rab * t2));
        }
        if (Cb) {
            put_row(Cb, 0, cross(v_, transpose(Rab) * t1));
            put_row(Cb, 1, cross(t2, ub));
        }
    }
    const char* coordinate_name(int i) const override { return i == 0 ? "angle1" : "angle2"; }

private:
    Vec3 pa_, pb_, u_, v_, va0_, ub0_;
};

class UniversalType final : public JointType {
public:
    std::unique_ptr<JointModel> compile(JointSetup& s) const override {
        const Vec3 u = s.axis_a();
        const Vec3 v = s.axis2_b();
        if (s.failed()) return nullptr;
        const Vec3 v_in_a = rotate_inv(s.a0().q, rotate(s.b0().q, v));
        const double c = dot(u, v_in_a);
        if (std::fabs(c) > 1e-6) {
            char buf[160];
            std::snprintf(buf, sizeof buf,
                          "axes must be perpendicular at assembly, they are %.6g degrees apart (cos = %.3g)",
                          std::acos(std::fmax(-1.0, std::fmin(1.0, c))) * 180 / M_PI, c);
            s.error(buf);
            return nullptr;
        }
        return std::make_unique<Universal>(s, u, v);
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "universal", "Cardan joint: two perpendicular axes (4 rows, 2 DOF)", UniversalType)
