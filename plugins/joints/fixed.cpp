// fixed (weld): C(pa, pb) + Rot(0): 6 rows, no degrees of freedom.
#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"

namespace {

using namespace noether;

class Fixed final : public JointModel {
public:
    Fixed(const Vec3& pa, const Vec3& pb, const Quat& qoff) : pa_(pa), pb_(pb), qoff_(qoff) {}
    int rows() const override { return 6; }
    int dofs() const override { return 0; }
    void constraint(const Pose& a, const Pose& b, double* g, double* Ja, double* Jb) const override {
        RowWriter w{g, Ja, Jb};
        prim_point(a, b, pa_, pb_, w);
        prim_rotation(a, b, rot_, w);
    }
    void coordinates(const Pose&, const Pose&, const double*, double*) const override {}
    void coordinate_jacobian(const Pose&, const Pose&, double*, double*) const override {}
    const char* coordinate_name(int) const override { return ""; }

private:
    Vec3 pa_, pb_;
    Quat qoff_;
    RotationRows rot_ = rotation_rows(0, Vec3{0, 0, 1}, qoff_);
};

class FixedType final : public JointType {
public:
    std::unique_ptr<JointModel> compile(JointSetup& s) const override {
        return std::make_unique<Fixed>(s.pa(), s.pb(), s.qoff());
    }
};

}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "fixed", "weld: no relative motion (6 rows, 0 DOF)", FixedType)
