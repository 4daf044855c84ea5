// The joint-space mass matrix by composite rigid bodies (tree order, permuted to the Data layout),
// with the joints' armature on the diagonal.
#include "impl.hpp"

namespace noether {

void Kinematics::mass_matrix(const double* q, double* M) {
    const Model& m = *model_;
    Impl& k = *impl_;
    queries::kinematics(m, q, k.t, k.qt, k.T, k.g, k.bodies);
    const int n = m.total_dofs;
    tree_mass_matrix(k.t, k.qt.data(), k.Mt.data());  // tree order (iv)
    for (const TreeLink& a : k.t.links)
        for (const TreeLink& b : k.t.links) M[static_cast<std::size_t>(a.dof) * n + b.dof] = k.Mt[static_cast<std::size_t>(a.iv) * n + b.iv];
    for (const TreeLink& l : k.t.links)  // armature: an inertia on the coordinate itself
        if (l.joint >= 0) M[static_cast<std::size_t>(l.dof) * n + l.dof] += m.joints[l.joint].armature[0];
}

}  // namespace noether
