// prismatic (slider): O(1, axis) + Rot(0): 5 rows, 1 DOF, the displacement along axis.
#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"

namespace {

using namespace noether;

class Prismatic final : public JointModel {
public:
    Prismatic(const JointSetup& s, const Vec3& axis)
        : pa_(s.pa()), pb_(s.pb()), axis_(axis), qoff_(s.qoff()), a0_(s.a0()), b0_(s.b0()) {
        d0_ = s.frames_given() ? 0.0 : slide_displacement(a0_, b0_, axis_, pa_, pb_);
    }
    int rows() const override { return 5; }
    int dofs() const override { return 1; }
    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        prim_translation(a, b, sel_, pa_, pb_, w);
        prim_rotation(a, b, rot_, w);
    }
    void coordinates(const Pose& a, const Pose& b, const double*, double* c) const override {
        c[0] = slide_displacement(a, b, axis_, pa_, pb_) - d0_;
    }
    void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const override {
        slide_displacement_jacobian(a, b, axis_, pb_, Ca, Cb);
    }
    const char* coordinate_name(int) const override { return "x"; }
    bool minimal(MinimalJoint* out) const override {
        out->kind = MinimalJoint::Kind::prismatic;
        out->axis = axis_;
        out->point = pa_;
        out->rest = relative_pose(a0_, b0_);
        return true;
    }

private:
    Vec3 pa_, pb_, axis_;
    Quat qoff_;
    Selection sel_ = selection_rows(1, axis_);
    RotationRows rot_ = rotation_rows(0, axis_, qoff_);
    Pose a0_, b0_;
    double d0_ = 0;
};

class PrismaticType final : public JointType {
public:
    std::unique_ptr<JointModel> compile(JointSetup& s) const override {
        const Vec3 axis = s.axis_a();
        if (s.failed()) return nullptr;
        return std::make_unique<Prismatic>(s, axis);
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "prismatic", "slider along an axis (5 rows, 1 DOF: displacement)", PrismaticType)
