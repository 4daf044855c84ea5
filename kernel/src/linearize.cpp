// noether::linearize (the step's linearisation by the Model's integrator) and
// noether::set_joint_state (a mechanism of 1-DOF joints put in a state given in joint space).
#include <cmath>
#include <string>
#include <vector>

#include "noether/data.hpp"
#include "noether/sdk/integrator.hpp"
#include "noether/model.hpp"
#include "noether/registry.hpp"
#include "noether/sdk/tree.hpp"

namespace noether {

StepStatus linearize(const Model& m, Data& d, Linearization& out) {
    if (&d.model() != &m) throw UsageError("linearize: the Data was made for another Model");
    if (!m.integrator) throw UsageError("linearize: the Model was compiled without an integrator");
    if (!d.integrator_state) throw UsageError("linearize: the Data has no integrator state");
    if (!m.integrator->has_linearization())
        throw UsageError("linearize: integrator '" + m.options.integrator +
                         "' has no linearisation of its step; integrators with one: " +
                         Registry::global().integrators_where([](const Integrator& i) { return i.has_linearization(); }) +
                         " (option 'integrator')");
    const int n = m.total_dofs;
    const std::size_t N = static_cast<std::size_t>(n);
    if (out.n != n || out.x.size() != 2 * N || out.x_next.size() != 2 * N || out.A.size() != 4 * N * N ||
        out.B.size() != 2 * N * N) {
        out.n = n;
        out.x.assign(2 * N, 0.0);
        out.x_next.assign(2 * N, 0.0);
        out.A.assign(4 * N * N, 0.0);
        out.B.assign(2 * N * N, 0.0);
    }
    return m.integrator->linearize(m, d, out);
}

void set_joint_state(const Model& m, Data& d, const double* coord, const double* rate) {
    if (&d.model() != &m) throw UsageError("set_joint_state: the Data was made for another Model");
    TreeView t;
    std::vector<Diagnostic> errors;
    if (!build_tree_view(m, "set_joint_state", t, errors) || !t.screws_only) {
        std::string msg = "set_joint_state: needs a tree of 1-DOF joints (revolute, prismatic, helical) and fixed joints";
        for (const Diagnostic& e : errors) msg += "; " + e.message;
        for (const TreeLink& l : t.links)
            if (l.type != TreeJoint::screw)
                msg += l.joint >= 0 ? "; joint '" + m.joints[l.joint].name + "' (" + m.joints[l.joint].type + ") is not"
                                    : "; body '" + m.bodies[l.body].name + "' floats free";
        throw UsageError(msg);
    }
    for (int k = 0; k < m.total_dofs; ++k)
        if (!std::isfinite(coord[k]) || !std::isfinite(rate[k])) {
            std::string name;
            for (const JointInfo& j : m.joints)
                if (k >= j.dof_offset && k < j.dof_offset + j.dofs) name = j.name;
            throw UsageError("set_joint_state: coordinate or rate " + std::to_string(k) + " (joint '" + name +
                             "') is not finite");
        }
    const int n = t.size();
    std::vector<double> q(n), qd(n);
    std::vector<Frame> g(n);
    std::vector<double> V(6 * static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        const TreeLink& l = t.links[i];
        const JointInfo& j = m.joints[l.joint];
        q[i] = coord[l.dof] - (j.offset.empty() ? 0.0 : j.offset[0]);
        qd[i] = rate[l.dof];
    }
    tree_link_poses(t, q.data(), g.data());
    std::vector<Pose> poses(m.nbodies());
    tree_body_poses(t, g.data(), d.pose.data(), poses.data());
    tree_link_twists(t, q.data(), qd.data(), reinterpret_cast<double(*)[6]>(V.data()));
    for (int b = 0; b < m.nbodies(); ++b) {
        d.pose[b] = poses[b];
        d.twist[b] = tree_body_twist(t, g.data(), reinterpret_cast<const double(*)[6]>(V.data()), b);
        d.twist_guess[b] = d.twist[b];
    }
    for (int k = 0; k < m.total_dofs; ++k) d.coord[k] = coord[k], d.rate[k] = rate[k];
}

}  // namespace noether
