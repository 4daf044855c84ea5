// Assembly: bring the initial configuration of a Spec onto the constraint manifold.
//
// Gauss–Newton on every joint row, each step the minimum-norm solution of J Δ = −g over the
// bodies' positions and body-frame rotations (complete orthogonal decomposition, so redundant
// rows are harmless), with step halving if the violation grows. Bodies that no joint touches
// do not move; a configuration that already satisfies the joints is not touched at all.
//
// Up to kDenseBodies bodies the Jacobian is dense (the decomposition above); beyond, it is sparse
// and the step is J^T y with (J J^T + mu I) y = -g (a sparse LDL^T with a fill-reducing
// ordering; mu, 1e-12 of the largest diagonal entry, keeps redundant rows harmless), so that
// memory and time grow linearly with a chain or tree (a dense 2,000-link Jacobian took 0.95 GB).
#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <Eigen/SparseCholesky>
#include <cmath>
#include <vector>

#include "noether/model.hpp"

namespace noether {

namespace {

constexpr int kDenseBodies = 100;

// g (and J: dense, or as triplets when T is given) at the poses; returns the largest |g|.
double evaluate(const Model& m, const std::vector<Pose>& poses, Eigen::VectorXd& g, Eigen::MatrixXd* J,
                std::vector<Eigen::Triplet<double>>* T = nullptr) {
    const int nb = m.nbodies();
    if (J) J->setZero(g.size(), 6 * nb);
    if (T) T->clear();
    double Ja[6 * kMaxJointRows], Jb[6 * kMaxJointRows];
    double worst = 0;
    for (const JointInfo& j : m.joints) {
        const Pose a = j.a >= 0 ? poses[j.a] : Pose{};
        const bool jac = J || T;
        j.impl->constraint(a, poses[j.b], &g[j.row_offset], jac && j.a >= 0 ? Ja : nullptr, jac ? Jb : nullptr);
        for (int r = 0; r < j.rows; ++r) {
            worst = std::max(worst, std::fabs(g[j.row_offset + r]));
            if (T) {
                for (int c = 0; c < 6; ++c) {
                    T->emplace_back(j.row_offset + r, 6 * j.b + c, Jb[6 * r + c]);
                    if (j.a >= 0) T->emplace_back(j.row_offset + r, 6 * j.a + c, Ja[6 * r + c]);
                }
            }
            if (!J) continue;
            for (int c = 0; c < 6; ++c) {
                (*J)(j.row_offset + r, 6 * j.b + c) += Jb[6 * r + c];
                if (j.a >= 0) (*J)(j.row_offset + r, 6 * j.a + c) += Ja[6 * r + c];
            }
        }
    }
    // Couplings: one row each after the joints' (their sides may share bodies: summed); a range is
    // not assembled onto (zero row).
    for (std::size_t k = 0; k < m.couplings.size(); ++k) {
        const CouplingInfo& c = m.couplings[k];
        const int r = m.total_rows + static_cast<int>(k);
        double G[2 * kMaxCouplingTerms][6] = {};
        g[r] = 0;
        if (!c.range) {
            g[r] = coupling_residual(m, c, poses.data(), nullptr, (J || T) ? G : nullptr);
            g[r] -= coupling_turns(m, c, g[r]);  // whole turns of the follower's angle are no violation
        }
        worst = std::max(worst, std::fabs(g[r]));
        if (!J && !T) continue;
        int body[2 * kMaxCouplingTerms];
        coupling_bodies(m, c, body);
        for (int side = 0; side < c.sides(); ++side) {
            const int b = body[side];
            if (b < 0) continue;
            for (int col = 0; col < 6; ++col) {
                if (T) T->emplace_back(r, 6 * b + col, G[side][col]);
                if (J) (*J)(r, 6 * b + col) += G[side][col];
            }
        }
    }
    return worst;
}

}  // namespace

AssemblyReport assemble(Spec& spec, double tolerance, int max_iterations) {
    Spec tmp = spec;
    tmp.options.integrator = "none";
    const std::shared_ptr<const Model> model = compile(tmp);
    const Model& m = *model;
    const int nb = m.nbodies();
    std::vector<Pose> poses(nb), start(nb);
    for (int i = 0; i < nb; ++i) poses[i] = start[i] = m.bodies[i].pose0;
    AssemblyReport rep;
    const int rows = m.total_rows + static_cast<int>(m.couplings.size());
    Eigen::VectorXd g(rows), gtry(rows);
    const bool dense = nb <= kDenseBodies;
    Eigen::MatrixXd J;
    std::vector<Eigen::Triplet<double>> T;
    Eigen::SparseMatrix<double> Js(rows, 6 * nb);
    auto linearise = [&]() {
        if (dense) return evaluate(m, poses, g, &J);
        const double worst = evaluate(m, poses, g, nullptr, &T);
        Js.setFromTriplets(T.begin(), T.end());  // duplicates (a joint's two sides on one body) are summed
        return worst;
    };
    Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt;
    auto gauss_newton_step = [&]() -> Eigen::VectorXd {
        if (dense) return J.completeOrthogonalDecomposition().solve(-g);
        Eigen::SparseMatrix<double> A = Js * Js.transpose();
        double dmax = 0;
        for (int k = 0; k < A.outerSize(); ++k) dmax = std::max(dmax, A.coeff(k, k));
        Eigen::SparseMatrix<double> I(A.rows(), A.cols());
        I.setIdentity();
        A += (1e-12 * std::max(dmax, 1.0)) * I;
        ldlt.compute(A);
        if (ldlt.info() != Eigen::Success) return Eigen::VectorXd::Zero(6 * nb);
        const Eigen::VectorXd y = ldlt.solve(-g);
        return Js.transpose() * y;
    };
    double v = linearise();
    rep.initial_violation = rep.final_violation = v;
    if (v <= tolerance || rows == 0) return rep;
    std::vector<Pose> trial(nb);
    for (int it = 1; it <= max_iterations && v > tolerance; ++it) {
        rep.iterations = it;
        const Eigen::VectorXd step = gauss_newton_step();
        double alpha = 1;
        double vt = v;
        for (int h = 0; h < 30; ++h, alpha *= 0.5) {
            for (int i = 0; i < nb; ++i) {
                trial[i].x = poses[i].x + alpha * Vec3{step[6 * i], step[6 * i + 1], step[6 * i + 2]};
                trial[i].q = oplus(poses[i].q, alpha * Vec3{step[6 * i + 3], step[6 * i + 4], step[6 * i + 5]});
            }
            vt = evaluate(m, trial, gtry, nullptr);
            if (vt < v) break;
        }
        if (!(vt < v)) break;  // no progress possible
        poses = trial;
        v = linearise();
    }
    rep.final_violation = v;
    rep.converged = v <= tolerance;
    for (int i = 0; i < nb; ++i) {
        const double move = norm(poses[i].x - start[i].x);
        const double rot = norm(rotvec_from_quat(conj(start[i].q) * poses[i].q));
        if (move > rep.largest_move) rep.largest_move = move, rep.moved_body = m.bodies[i].name;
        rep.largest_rotation = std::max(rep.largest_rotation, rot);
        spec.bodies[i].position = poses[i].x;
        spec.bodies[i].orientation = poses[i].q;
    }
    // A coupled joint keeps the meaning of its coordinates: one whose zero is its initial
    // configuration (no joint frames) gets the coordinates it has at the assembled poses as its
    // offset, so that the coupling holds in the recompiled Spec as it did here.
    for (const CouplingInfo& c : m.couplings)
        for (const CouplingInfo::Term& term : c.terms) {
            const JointInfo& j = m.joints[term.joint];
            JointSpec& js = spec.joints[term.joint];
            if (js.parent_frame || js.child_frame) continue;
            js.offset.assign(j.dofs, 0.0);
            joint_coordinates(j, j.a >= 0 ? poses[j.a] : Pose{}, poses[j.b], nullptr, js.offset.data());
        }
    return rep;
}

}  // namespace noether
