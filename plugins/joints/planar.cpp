// planar: O(2, normal) + Rot(1, normal): 3 rows, 3 DOF. The child's anchor stays in the plane
// through the parent's anchor orthogonal to `axis` (the normal), and the child only turns about
// the normal. Coordinates: x, y along the in-plane directions e1, e2 of the parent frame, and the
// angle about the normal.
#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"

namespace {

using namespace noether;

class Planar final : public JointModel {
public:
    Planar(const JointSetup& s, const Vec3& n) : pa_(s.pa()), pb_(s.pb()), n_(n), qoff_(s.qoff()) {
        axis_basis(n_, e_[0], e_[1]);
        for (int k = 0; k < 2; ++k) d0_[k] = s.frames_given() ? 0.0 : slide_displacement(s.a0(), s.b0(), e_[k], pa_, pb_);
    }
    int rows() const override { return 3; }
    int dofs() const override { return 3; }
    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        prim_translation(a, b, sel_, pa_, pb_, w);
        prim_rotation(a, b, rot_, w);
    }
    void coordinates(const Pose& a, const Pose& b, const double* prev, double* c) const override {
        for (int k = 0; k < 2; ++k) c[k] = slide_displacement(a, b, e_[k], pa_, pb_) - d0_[k];
        c[2] = hinge_angle(a, b, n_, qoff_, prev ? prev + 2 : nullptr);
    }
    void coordinate_jacobian(const Pose& a, const Pose& b, double* Ca, double* Cb) const override {
        for (int k = 0; k < 2; ++k) slide_displacement_jacobian(a, b, e_[k], pb_, Ca ? Ca + 6 * k : nullptr, Cb + 6 * k);
        hinge_angle_jacobian(a, b, n_, qoff_, Ca ? Ca + 12 : nullptr, Cb + 12);
    }
    const char* coordinate_name(int i) const override { return i == 0 ? "x" : (i == 1 ? "y" : "angle"); }

private:
    Vec3 pa_, pb_, n_, e_[2];
    Quat qoff_;
    Selection sel_ = selection_rows(2, n_);
    RotationRows rot_ = rotation_rows(1, n_, qoff_);
    double d0_[2] = {0, 0};
};

class PlanarType final : public JointType {
public:
    std::unique_ptr<JointModel> compile(JointSetup& s) const override {
        const Vec3 n = s.axis_a("axis (the plane normal)");
        if (s.failed()) return nullptr;
        return std::make_unique<Planar>(s, n);
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "planar", "motion in a plane, turning about its normal (3 rows, 3 DOF)", PlanarType)
