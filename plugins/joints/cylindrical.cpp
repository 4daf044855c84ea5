// cylindrical: O(1, axis) + Rot(1, axis): 4 rows, 2 DOF: angle about and displacement along axis.
#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"

namespace {

using namespace noether;

class Cylindrical final : public JointModel {
public:
    Cylindrical(const JointSetup& s, const Vec3& axis) : pa_(s.pa()), pb_(s.pb()), axis_(axis), qoff_(s.qoff()) {
        d0_ = s.frames_given() ? 0.0 : slide_displacement(s.a0(), s.b0(), axis_, pa_, pb_);
    }
    int rows() const override { return 4; }
    int dofs() const override { return 2; }
    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        prim_translation(a, b, sel_, pa_, pb_, w);
        prim_rotation(a, b, rot_, w);
    }
    void coordinates(const Pose& a, const Pose& b, const double* prev, double* c) const override {
        c[0] = hinge_angle(a, b, axis_, qoff_, prev);
        c[1] = slide_displacement(a, b, axis_, pa_, pb_) - d0_;
    }
    void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const override {
        hinge_angle_jacobian(a, b, axis_, qoff_, Ca, Cb);
        slide_displacement_jacobian(a, b, axis_, pb_, Ca ? Ca + 6 : nullptr, Cb + 6);
    }
    const char* coordinate_name(int i) const override { return i == 0 ? "angle" : "x"; }

private:
    Vec3 pa_, pb_, axis_;
    Quat qoff_;
    Selection sel_ = selection_rows(1, axis_);
    RotationRows rot_ = rotation_rows(1, axis_, qoff_);
    double d0_ = 0;
};

class CylindricalType final : public JointType {
public:
    std::unique_ptr<JointModel> compile(JointSetup& s) const override {
        const Vec3 axis = s.axis_a();
        if (s.failed()) return nullptr;
        return std::make_unique<Cylindrical>(s, axis);
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "cylindrical", "rotation about and sliding along one axis (4 rows, 2 DOF)",
               CylindricalType)
