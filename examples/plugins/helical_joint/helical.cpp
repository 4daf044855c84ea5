// helical (screw) joint: rotation about an axis coupled to translation along it.
//
// Rows: the child's anchor stays on the parent's axis line (2), the child turns only about
// the axis (2), and the screw coupling d − pitch·θ = 0 (1): 5 rows, 1 DOF, the angle θ.
// Everything comes from the joint SDK in <noether/sdk/joint.hpp>.
#include <noether/sdk/joint.hpp>
#include <noether/sdk/plugin.hpp>

namespace {

using namespace noether;

class Helical final : public JointModel {
public:
    Helical(const JointSetup& s, const Vec3& axis, double pitch)
        : pa_(s.pa()), pb_(s.pb()), axis_(axis), qoff_(s.qoff()), pitch_(pitch), a0_(s.a0()), b0_(s.b0()) {
        d0_ = slide_displacement(s.a0(), s.b0(), axis_, pa_, pb_);
    }
    int rows() const override { return 5; }
    int dofs() const override { return 1; }

    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        prim_translation(a, b, 1, axis_, pa_, pb_, w);  // on the axis line
        prim_rotation(a, b, 1, axis_, qoff_, w);        // turning about the axis only
        // Screw coupling: the angle is unwrapped next to d / pitch, where the solution lies.
        const double d = slide_displacement(a, b, axis_, pa_, pb_) - d0_;
        const double near = d / pitch_;
        g[4] = d - pitch_ * hinge_angle(a, b, axis_, qoff_, &near);
        double Da[6], Db[6], Ta[6], Tb[6];
        slide_displacement_jacobian(a, b, axis_, pb_, Ja ? Da : nullptr, Db);
        hinge_angle_jacobian(a, b, axis_, qoff_, Ja ? Ta : nullptr, Tb);
        for (int k = 0; k < 6; ++k) {
            if (Ja) Ja[4 * 6 + k] = Da[k] - pitch_ * Ta[k];
            if (Jb) Jb[4 * 6 + k] = Db[k] - pitch_ * Tb[k];
        }
    }
    void coordinates(const Pose& a, const Pose& b, const double* prev, double* c) const override {
        c[0] = hinge_angle(a, b, axis_, qoff_, prev);
    }
    void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const override {
        hinge_angle_jacobian(a, b, axis_, qoff_, Ca, Cb);
    }
    const char* coordinate_name(int) const override { return "angle"; }
    bool minimal(MinimalJoint* out) const override {
        out->kind = MinimalJoint::Kind::helical;
        out->axis = axis_;
        out->point = pa_;
        out->pitch = pitch_;
        out->rest = relative_pose(a0_, b0_);
        return true;
    }

private:
    Vec3 pa_, pb_, axis_;
    Quat qoff_;
    double pitch_, d0_ = 0;
    Pose a0_, b0_;
};

class HelicalType final : public JointType {
public:
    std::vector<std::string> parameters() const override { return {"pitch"}; }
    std::unique_ptr<JointModel> compile(JointSetup& s) const override {
        const Vec3 axis = s.axis_a();
        const double pitch = s.number("pitch", 0.0);
        if (!s.has("pitch")) s.error("parameter 'pitch' (translation per radian, m/rad) is required");
        else if (pitch == 0) s.error("parameter 'pitch' must be nonzero (a zero pitch is a revolute joint)");
        if (s.failed()) return nullptr;
        return std::make_unique<Helical>(s, axis, pitch);
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "helical", "screw joint: rotation coupled to translation by a pitch (example plugin)",
               HelicalType)
