// Kinematics queries: the tree of a Model (checked: 1-DOF joints on a fixed base), its workspaces,
// and forward kinematics — every body's pose at given joint coordinates.
#include "impl.hpp"

namespace noether {

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
    impl_->Jb.assign(3 * static_cast<std::size_t>(m.total_dofs), 0.0);
}

Kinematics::~Kinematics() = default;

int Kinematics::n() const { return model_->total_dofs; }

void Kinematics::poses(const double* q, Pose* out) {
    Impl& k = *impl_;
    queries::kinematics(*model_, q, k.t, k.qt, k.T, k.g, k.bodies);
    std::copy(k.bodies.begin(), k.bodies.end(), out);
}

}  // namespace noether
