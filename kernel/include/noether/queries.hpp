// noether/queries.hpp — kinematics and dynamics of a mechanism at given joint coordinates, for
// controllers and planners (docs/queries.md): forward kinematics, body and point Jacobians, the
// joint-space mass matrix, inverse dynamics (RNEA), gravity and bias forces, forward dynamics, the
// centre of mass and its Jacobian, momenta. Nothing here touches a Data: the run's state is never disturbed.
//
// Coordinates are those of Data::coord and Data::rate (Model::total_dofs of them, joints in
// declaration order, offsets included): q, q̇, q̈ and τ have n = total_dofs entries. Jacobians are
// row-major, world frame: a body's 6 × n Jacobian has the rows of its angular velocity then of the
// linear velocity of its centre of mass (MuJoCo's jacr over jacp). Mechanisms: trees of 1-DOF
// joints (revolute, prismatic, helical) and fixed joints on a fixed base; others are refused with a
// message naming the element (floating bases, ball joints and loops are not supported yet).
#pragma once

#include "noether/export.h"

#include <memory>
#include <vector>

#include "noether/math.hpp"
#include "noether/model.hpp"

namespace noether {

class NOETHER_API Kinematics {
public:
    // Throws UsageError for a mechanism it does not take (see above).
    explicit Kinematics(std::shared_ptr<const Model> model);
    ~Kinematics();
    Kinematics(const Kinematics&) = delete;
    Kinematics& operator=(const Kinematics&) = delete;

    int n() const;  // joint coordinates (Model::total_dofs)
    const Model& model() const { return *model_; }

    // World poses of every body at q (Model::nbodies() of them).
    void poses(const double* q, Pose* bodies);
    // The body's 6 × n Jacobian at q: rows ω (3), then the velocity of its centre of mass (3).
    void body_jacobian(const double* q, int body, double* J);
    // The 3 × n Jacobian of the world velocity of a point fixed in the body (body frame, from its CoM).
    void point_jacobian(const double* q, int body, const Vec3& point, double* J);
    // The joint-space mass matrix M(q) (n × n, row-major).
    void mass_matrix(const double* q, double* M);
    // τ = M(q) q̈ + C(q, q̇) q̇ + g(q): the joint forces that give the accelerations q̈ under gravity
    // (recursive Newton–Euler). Joint springs, dampers and inputs are not included.
    void inverse_dynamics(const double* q, const double* qdot, const double* qddot, double* tau);
    // The bias forces C(q, q̇) q̇ + g(q), and the gravity forces g(q) alone.
    void bias_forces(const double* q, const double* qdot, double* b);
    void gravity_forces(const double* q, double* g);
    // q̈ = M(q)⁻¹ (τ − C(q, q̇) q̇ − g(q)).
    void forward_dynamics(const double* q, const double* qdot, const double* tau, double* qddot);
    // The centre of mass of all bodies at q, and its 3 × n Jacobian.
    Vec3 center_of_mass(const double* q);
    void com_jacobian(const double* q, double* J);
    // Total linear momentum Σ m v and angular momentum about the world origin Σ (x × m v + R I Rᵀ ω)
    // at (q, q̇) — what the run's monitors report for the same state.
    void momentum(const double* q, const double* qdot, Vec3* linear, Vec3* angular);

private:
    struct Impl;
    std::shared_ptr<const Model> model_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace noether
