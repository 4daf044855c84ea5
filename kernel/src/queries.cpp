// Kinematics and dynamics queries on a tree of 1-DOF joints (noether/queries.hpp, docs/queries.md):
// the tree view of the Model (noether/sdk/tree.hpp) walked at given coordinates — link poses
// parents first, joint screws mapped to the world for the Jacobians, composite rigid bodies for
// the mass matrix, recursive Newton–Euler in link frames for inverse dynamics.
#include "noether/queries.hpp"

#include <cmath>
#include <string>

#include "noether/error.hpp"
#include "noether/sdk/dense.hpp"
#include "noether/sdk/tree.hpp"

namespace noether {

struct Kinematics::Impl {
    TreeView t;
    std::vector<double> qt;           // raw coordinates, tree order
    std::vector<Frame> T, g;          // link poses in the parent frame and in the world
    std::vector<Pose> bodies;         // body poses of the last kinematics
    std::vector<double> V, A, F;      // RNEA: 6 per link
    std::vector<double> M, Mt, rhs;   // n × n, tree order n × n, n
    std::vector<int> piv;
    const double* last_q = nullptr;   // (not a cache key: kinematics are recomputed every call)
};

Kinematics::Kinematics(std::shared_ptr<const Model> model) : model_(std::move(model)), impl_(std::make_unique<Impl>()) {
    if (!model_) throw UsageError("Kinematics: the model is null");
    const Model& m = *model_;
    std::vector<Diagnostic> errors;
    if (!build_tree_view(m, "the kinematics queries", impl_->t, errors)) {
        std::string what;
        for (const Diagnostic& d : errors) what += (what.empty() ? "" : "; ") + d.str();
        throw UsageError(what);
    }
    const TreeView& t = impl_->t;
    for (const TreeLink& l : t.links)
        if (l.type != TreeJoint::screw)
            throw UsageError(std::string("the kinematics queries take trees of 1-DOF joints on a fixed base; ") +
                             (l.type == TreeJoint::free ? "body '" + m.bodies[l.body].name + "' floats free"
                                                        : "joint '" + m.joints[l.joint].name + "' is a ball joint") +
                             " (not supported yet)");
    if (t.nv != m.total_dofs)
        throw UsageError("the kinematics queries: the tree has " + std::to_string(t.nv) + " coordinates, the model " +
                         std::to_string(m.total_dofs));
    const int n = t.size();
    impl_->qt.assign(n, 0.0);
    impl_->T.assign(n, Frame{});
    impl_->g.assign(n, Frame{});
    impl_->bodies.assign(m.nbodies(), Pose{});
    for (auto* v : {&impl_->V, &impl_->A, &impl_->F}) v->assign(6 * static_cast<std::size_t>(n), 0.0);
    impl_->M.assign(static_cast<std::size_t>(n) * n, 0.0);
    impl_->Mt.assign(static_cast<std::size_t>(n) * n, 0.0);
    impl_->rhs.assign(n, 0.0);
    impl_->piv.assign(n, 0);
}

Kinematics::~Kinematics() = default;

int Kinematics::n() const { return model_->total_dofs; }

namespace {

// Link poses (parent frame and world) and body poses at the Data-layout coordinates q.
void kinematics(const Model& m, const double* q, TreeView& t, std::vector<double>& qt, std::vector<Frame>& T,
                std::vector<Frame>& g, std::vector<Pose>& bodies) {
    for (int i = 0; i < t.size(); ++i) {
        const TreeLink& l = t.links[i];
        qt[l.iq] = q[l.dof] - tree_link_offset(m, l);
        T[i] = link_transform(l, qt[l.iq]);
        g[i] = l.parent >= 0 ? g[l.parent] * T[i] : T[i];
    }
    tree_body_poses(t, g.data(), nullptr, bodies.data());
}

// The world twist (about the world origin) of link j's joint screw.
void world_screw(const TreeLink& l, const Frame& gj, double* S) { ad_apply(gj, l.S, S); }

}  // namespace

void Kinematics::poses(const double* q, Pose* out) {
    Impl& k = *impl_;
    kinematics(*model_, q, k.t, k.qt, k.T, k.g, k.bodies);
    std::copy(k.bodies.begin(), k.bodies.end(), out);
}

void Kinematics::point_jacobian(const double* q, int body, const Vec3& point, double* J) {
    const Model& m = *model_;
    if (body < 0 || body >= m.nbodies())
        throw UsageError("point_jacobian: body index " + std::to_string(body) + " out of range (" +
                         std::to_string(m.nbodies()) + " bodies)");
    Impl& k = *impl_;
    kinematics(m, q, k.t, k.qt, k.T, k.g, k.bodies);
    const int n = m.total_dofs;
    std::fill(J, J + 3 * static_cast<std::size_t>(n), 0.0);
    const Vec3 p = k.bodies[body].x + rotate(k.bodies[body].q, point);
    for (int j = k.t.body_link[body]; j >= 0; j = k.t.links[j].parent) {
        double S[6];
        world_screw(k.t.links[j], k.g[j], S);
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
        world_screw(k.t.links[j], k.g[j], S);
        const int c = k.t.links[j].dof;
        J[c] = S[0], J[n + c] = S[1], J[2 * n + c] = S[2];
    }
}

void Kinematics::mass_matrix(const double* q, double* M) {
    const Model& m = *model_;
    Impl& k = *impl_;
    kinematics(m, q, k.t, k.qt, k.T, k.g, k.bodies);
    const int n = m.total_dofs;
    tree_mass_matrix(k.t, k.qt.data(), k.Mt.data());  // tree order (iv)
    for (const TreeLink& a : k.t.links)
        for (const TreeLink& b : k.t.links) M[static_cast<std::size_t>(a.dof) * n + b.dof] = k.Mt[static_cast<std::size_t>(a.iv) * n + b.iv];
}

void Kinematics::inverse_dynamics(const double* q, const double* qdot, const double* qddot, double* tau) {
    const Model& m = *model_;
    Impl& k = *impl_;
    kinematics(m, q, k.t, k.qt, k.T, k.g, k.bodies);
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
        if (l.parent < 0) continue;
        double w[6];
        wrench_to_parent(k.T[i], &k.F[6 * i], w);
        for (int c = 0; c < 6; ++c) k.F[6 * l.parent + c] += w[c];
    }
}

void Kinematics::bias_forces(const double* q, const double* qdot, double* b) { inverse_dynamics(q, qdot, nullptr, b); }

void Kinematics::gravity_forces(const double* q, double* g) { inverse_dynamics(q, nullptr, nullptr, g); }

void Kinematics::forward_dynamics(const double* q, const double* qdot, const double* tau, double* qddot) {
    const int n = model_->total_dofs;
    Impl& k = *impl_;
    bias_forces(q, qdot, k.rhs.data());
    for (int i = 0; i < n; ++i) qddot[i] = tau[i] - k.rhs[i];
    mass_matrix(q, k.M.data());
    if (!dense::lu_factor(n, k.M.data(), k.piv.data())) throw UsageError("forward_dynamics: the mass matrix is singular");
    dense::lu_solve(n, k.M.data(), k.piv.data(), qddot);
}

Vec3 Kinematics::center_of_mass(const double* q) {
    const Model& m = *model_;
    Impl& k = *impl_;
    kinematics(m, q, k.t, k.qt, k.T, k.g, k.bodies);
    Vec3 c;
    double mass = 0;
    for (int b = 0; b < m.nbodies(); ++b) c += m.bodies[b].mass * k.bodies[b].x, mass += m.bodies[b].mass;
    return mass > 0 ? (1.0 / mass) * c : c;
}

void Kinematics::com_jacobian(const double* q, double* J) {
    const Model& m = *model_;
    const int n = m.total_dofs;
    std::fill(J, J + 3 * static_cast<std::size_t>(n), 0.0);
    std::vector<double> Jb(3 * static_cast<std::size_t>(n));
    double mass = 0;
    for (int b = 0; b < m.nbodies(); ++b) mass += m.bodies[b].mass;
    for (int b = 0; b < m.nbodies(); ++b) {
        point_jacobian(q, b, Vec3{}, Jb.data());
        for (std::size_t e = 0; e < Jb.size(); ++e) J[e] += m.bodies[b].mass / mass * Jb[e];
    }
}

void Kinematics::momentum(const double* q, const double* qdot, Vec3* linear, Vec3* angular) {
    const Model& m = *model_;
    Impl& k = *impl_;
    kinematics(m, q, k.t, k.qt, k.T, k.g, k.bodies);
    Vec3 p, L;
    for (int b = 0; b < m.nbodies(); ++b) {
        // The body's world angular velocity and CoM velocity: its ancestors' screws times their rates.
        const Vec3 x = k.bodies[b].x;
        Vec3 w, v;
        for (int j = k.t.body_link[b]; j >= 0; j = k.t.links[j].parent) {
            double S[6];
            world_screw(k.t.links[j], k.g[j], S);
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
