// Body and point Jacobians (world frame) in joint coordinates: each ancestor joint's screw mapped
// to the world, its rate's contribution to the angular velocity and to the point's velocity.
#include "impl.hpp"

namespace noether {

void Kinematics::point_jacobian(const double* q, int body, const Vec3& point, double* J) {
    const Model& m = *model_;
    if (body < 0 || body >= m.nbodies())
        throw UsageError("point_jacobian: body index " + std::to_string(body) + " out of range (" +
                         std::to_string(m.nbodies()) + " bodies)");
    Impl& k = *impl_;
    queries::kinematics(m, q, k.t, k.qt, k.T, k.g, k.bodies);
    const int n = m.total_dofs;
    std::fill(J, J + 3 * static_cast<std::size_t>(n), 0.0);
    const Vec3 p = k.bodies[body].x + rotate(k.bodies[body].q, point);
    for (int j = k.t.body_link[body]; j >= 0; j = k.t.links[j].parent) {
        double S[6];
        queries::world_screw(k.t.links[j], k.g[j], S);
        const Vec3 v = bot(S) + cross(top(S), p);
        const int c = k.t.links[j].dof;
        J[c] = v.x, J[n + c] = v.y, J[2 * n + c] = v.z;
    }
}

void Kinematics::body_jacobian(const double* q, int body, double* J) {
    const Model& m = *model_;
    const int n = m.total_dofs;
    point_jacobian(q, body, Vec3{}, J + 3 * static_cast<std::size_t>(n));  // the CoM's velocity (also checks body)
    std::fill(J, J + 3 * static_cast<std::size_t>(n), 0.0);
    Impl& k = *impl_;
    for (int j = k.t.body_link[body]; j >= 0; j = k.t.links[j].parent) {
        double S[6];
        queries::world_screw(k.t.links[j], k.g[j], S);
        const int c = k.t.links[j].dof;
        J[c] = S[0], J[n + c] = S[1], J[2 * n + c] = S[2];
    }
}

}  // namespace noether
