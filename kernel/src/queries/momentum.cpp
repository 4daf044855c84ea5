// Total linear momentum and angular momentum about the world origin at (q, q̇).
#include "impl.hpp"

namespace noether {

void Kinematics::momentum(const double* q, const double* qdot, Vec3* linear, Vec3* angular) {
    const Model& m = *model_;
    Impl& k = *impl_;
    queries::kinematics(m, q, k.t, k.qt, k.T, k.g, k.bodies);
    Vec3 p, L;
    for (int b = 0; b < m.nbodies(); ++b) {
        // The body's world angular velocity and CoM velocity: its ancestors' screws times their rates.
        const Vec3 x = k.bodies[b].x;
        Vec3 w, v;
        for (int j = k.t.body_link[b]; j >= 0; j = k.t.links[j].parent) {
            double S[6];
            queries::world_screw(k.t.links[j], k.g[j], S);
            const double qd = qdot[k.t.links[j].dof];
            w += qd * top(S);
            v += qd * (bot(S) + cross(top(S), x));
        }
        const BodyInfo& body = m.bodies[b];
        const Quat& R = k.bodies[b].q;
        p += body.mass * v;
        L += cross(x, body.mass * v) + rotate(R, body.inertia * rotate(conj(R), w));
    }
    if (linear) *linear = p;
    if (angular) *angular = L;
}

}  // namespace noether
