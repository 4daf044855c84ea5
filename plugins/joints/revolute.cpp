// revolute (hinge): C(pa, pb) + Rot(1, axis): 5 rows, 1 DOF, the unwrapped angle about axis.
#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"

namespace {

using namespace noether;

class Revolute final : public JointModel {
public:
    Revolute(const JointSetup& s, const Vec3& axis)
        : pa_(s.pa()), pb_(s.pb()), axis_(axis), qoff_(s.qoff()), a0_(s.a0()), b0_(s.b0()) {}
    int rows() const override { return 5; }
    int dofs() const override { return 1; }
    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        prim_point(a, b, pa_, pb_, w);
        prim_rotation(a, b, rot_, w);
    }
    void coordinates(const Pose& a, const Pose& b, const double* prev, double* c) const override {
        c[0] = hinge_angle(a, b, axis_, qoff_, prev);
    }
    void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const override {
        hinge_angle_jacobian(a, b, axis_, qoff_, Ca, Cb);
    }
    void coordinate_state(const Pose& a, const Pose& b, const double* prev, double* c, double* Ca, double* Cb) const override {
        c[0] = hinge_angle_state(a, b, axis_, qoff_, rot_.Roff, prev, Ca, Cb);
    }
    const char* coordinate_name(int) const override { return "angle"; }
    bool minimal(MinimalJoint* out) const override {
        out->kind = MinimalJoint::Kind::revolute;
        out->axis = axis_;
        out->point = pa_;
        out->rest = relative_pose(a0_, b0_);
        return true;
    }

private:
    Vec3 pa_, pb_, axis_;
    Quat qoff_;
    RotationRows rot_ = rotation_rows(1, axis_, qoff_);
    Pose a0_, b0_;
};

class RevoluteType final : public JointType {
public:
    std::unique_ptr<JointModel> compile(JointSetup& s) const override {
        const Vec3 axis = s.axis_a();
        if (s.failed()) return nullptr;
        return std::make_unique<Revolute>(s, axis);
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "revolute", "hinge about an axis (5 rows, 1 DOF: angle)", RevoluteType)
