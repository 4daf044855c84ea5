// The centre of mass and its 3 × n Jacobian (the mass-weighted CoM Jacobians of the bodies).
#include "impl.hpp"

namespace noether {

Vec3 Kinematics::center_of_mass(const double* q) {
    const Model& m = *model_;
    Impl& k = *impl_;
    queries::kinematics(m, q, k.t, k.qt, k.T, k.g, k.bodies);
    Vec3 c;
    double mass = 0;
    for (int b = 0; b < m.nbodies(); ++b) c += m.bodies[b].mass * k.bodies[b].x, mass += m.bodies[b].mass;
    return mass > 0 ? (1.0 / mass) * c : c;
}

void Kinematics::com_jacobian(const double* q, double* J) {
    const Model& m = *model_;
    const int n = m.total_dofs;
    std::fill(J, J + 3 * static_cast<std::size_t>(n), 0.0);
    std::vector<double>& Jb = impl_->Jb;  // a workspace: no allocation per call
    double mass = 0;
    for (int b = 0; b < m.nbodies(); ++b) mass += m.bodies[b].mass;
    for (int b = 0; b < m.nbodies(); ++b) {
        point_jacobian(q, b, Vec3{}, Jb.data());
        for (std::size_t e = 0; e < Jb.size(); ++e) J[e] += m.bodies[b].mass / mass * Jb[e];
    }
}

}  // namespace noether
