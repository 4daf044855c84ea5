// point-on-line: O(1, axis): 2 rows, 4 DOF. The child's anchor stays on the line through the
// parent's anchor along axis; rotation is free. Coordinates: displacement along the line and
// the rotation vector of the relative rotation (parent frame).
#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"

namespace {

using namespace noether;

class PointOnLine final : public JointModel {
public:
    PointOnLine(const JointSetup& s, const Vec3& axis) : pa_(s.pa()), pb_(s.pb()), axis_(axis), qoff_(s.qoff()) {
        d0_ = s.frames_given() ? 0.0 : slide_displacement(s.a0(), s.b0(), axis_, pa_, pb_);
    }
    int rows() const override { return 2; }
    int dofs() const override { return 4; }
    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        prim_translation(a, b, sel_, pa_, pb_, w);
    }
    void coordinates(const Pose& a, const Pose& b, const double*, double* c) const override {
        c[0] = slide_displacement(a, b, axis_, pa_, pb_) - d0_;
        const Vec3 rv = relative_rotvec(a, b, qoff_);
        c[1] = rv.x, c[2] = rv.y, c[3] = rv.z;
    }
    void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const override {
        slide_displacement_jacobian(a, b, axis_, pb_, Ca, Cb);
        relative_rotvec_jacobian(a, b, qoff_, Ca ? Ca + 6 : nullptr, Cb + 6);
    }
    const char* coordinate_name(int i) const override {
        static const char* names[4] = {"x", "rx", "ry", "rz"};
        return names[i];
    }

private:
    Vec3 pa_, pb_, axis_;
    Quat qoff_;
    Selection sel_ = selection_rows(1, axis_);
    double d0_ = 0;
};

class PointOnLineType final : public JointType {
public:
    std::unique_ptr<JointModel> compile(JointSetup& s) const override {
        const Vec3 axis = s.axis_a();
        if (s.failed()) return nullptr;
        return std::make_unique<PointOnLine>(s, axis);
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "point-on-line", "a point of the child on a line of the parent (2 rows, 4 DOF)",
               PointOnLineType)
