// Forward dynamics: q̈ = M⁻¹ (τ − C q̇ − g), the mass matrix factored by the SDK's dense LU.
#include "impl.hpp"
#include "noether/sdk/dense.hpp"

namespace noether {

void Kinematics::forward_dynamics(const double* q, const double* qdot, const double* tau, double* qddot) {
    const int n = model_->total_dofs;
    Impl& k = *impl_;
    bias_forces(q, qdot, k.rhs.data());
    for (int i = 0; i < n; ++i) qddot[i] = tau[i] - k.rhs[i];
    mass_matrix(q, k.M.data());
    if (!dense::lu_factor(n, k.M.data(), k.piv.data())) throw UsageError("forward_dynamics: the mass matrix is singular");
    dense::lu_solve(n, k.M.data(), k.piv.data(), qddot);
}

}  // namespace noether
