// spherical (ball): C(pa, pb): 3 rows, 3 DOF; coordinates: rotation vector of the relative
// rotation in the parent frame (zero at the initial configuration).
#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"

namespace {

using namespace noether;

class Spherical final : public JointModel {
public:
    explicit Spherical(const JointSetup& s) : pa_(s.pa()), pb_(s.pb()), qoff_(s.qoff()) {}
    int rows() const override { return 3; }
    int dofs() const override { return 3; }
    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        prim_point(a, b, pa_, pb_, w);
    }
    void coordinates(const Pose& a, const Pose& b, const double*, double* c) const override {
        const Vec3 rv = relative_rotvec(a, b, qoff_);
        c[0] = rv.x, c[1] = rv.y, c[2] = rv.z;
    }
    void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const override {
        relative_rotvec_jacobian(a, b, qoff_, Ca, Cb);
    }
    const char* coordinate_name(int i) const override { return i == 0 ? "rx" : (i == 1 ? "ry" : "rz"); }
    // For minimal coordinates: the centre in the parent frame; at zero coordinates the relative
    // rotation is qoff and the centres coincide.
    bool minimal(MinimalJoint* out) const override {
        out->kind = MinimalJoint::Kind::spherical;
        out->point = pa_;
        out->rest = Pose{pa_ - rotate(qoff_, pb_), qoff_};
        return true;
    }

private:
    Vec3 pa_, pb_;
    Quat qoff_;
};

class SphericalType final : public JointType {
public:
    std::unique_ptr<JointModel> compile(JointSetup& s) const override { return std::make_unique<Spherical>(s); }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "spherical", "ball joint: points coincide (3 rows, 3 DOF: rotation vector)",
               SphericalType)
