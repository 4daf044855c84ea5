// Inverse dynamics by recursive Newton–Euler in link frames; the bias (Coriolis, centrifugal and
// gravity) and gravity forces are its special cases.
#include "impl.hpp"

namespace noether {

void Kinematics::inverse_dynamics(const double* q, const double* qdot, const double* qddot, double* tau) {
    const Model& m = *model_;
    Impl& k = *impl_;
    queries::kinematics(m, q, k.t, k.qt, k.T, k.g, k.bodies);
    const TreeView& t = k.t;
    const int nl = t.size();
    // Forward: link twists and accelerations in link frames; gravity as an upward acceleration of
    // the world.
    double V0[6] = {0, 0, 0, 0, 0, 0}, A0[6];
    set6(A0, Vec3{}, -1.0 * m.gravity);
    for (int i = 0; i < nl; ++i) {
        const TreeLink& l = t.links[i];
        const double* Vp = l.parent >= 0 ? &k.V[6 * l.parent] : V0;
        const double* Ap = l.parent >= 0 ? &k.A[6 * l.parent] : A0;
        double* Vi = &k.V[6 * i];
        double* Ai = &k.A[6 * i];
        twist_to_child(k.T[i], Vp, Vi);
        twist_to_child(k.T[i], Ap, Ai);
        const double qd = qdot ? qdot[l.dof] : 0.0, qdd = qddot ? qddot[l.dof] : 0.0;
        for (int c = 0; c < 6; ++c) Vi[c] += l.S[c] * qd;
        double adS[6];
        ad_twist(Vi, l.S, adS);
        for (int c = 0; c < 6; ++c) Ai[c] += l.S[c] * qdd + adS[c] * qd;
        // F = G A − ad(V)ᵀ G V, G = blkdiag(I, m 1) at the link's centre of mass.
        const Vec3 Iw = l.inertia * top(Vi), Ia = l.inertia * top(Ai);
        double GV[6], adD[6];
        set6(GV, Iw, l.mass * bot(Vi));
        adD_apply(GV, Vi, adD);
        set6(&k.F[6 * i], Ia - top(adD), l.mass * bot(Ai) - bot(adD));
    }
    // Backward: joint forces, and each link's wrench carried to its parent.
    for (int i = nl - 1; i >= 0; --i) {
        const TreeLink& l = t.links[i];
        tau[l.dof] = dot6(l.S, &k.F[6 * i]);
        if (qddot && l.joint >= 0) tau[l.dof] += m.joints[l.joint].armature[0] * qddot[l.dof];  // armature a q̈
        if (l.parent < 0) continue;
        double w[6];
        wrench_to_parent(k.T[i], &k.F[6 * i], w);
        for (int c = 0; c < 6; ++c) k.F[6 * l.parent + c] += w[c];
    }
}

void Kinematics::bias_forces(const double* q, const double* qdot, double* b) { inverse_dynamics(q, qdot, nullptr, b); }

void Kinematics::gravity_forces(const double* q, double* g) { inverse_dynamics(q, nullptr, nullptr, g); }

}  // namespace noether
