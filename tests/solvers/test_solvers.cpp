// Linear solvers on Newton matrices of real mechanisms: all four agree; loops; redundancy.
#include <catch2/catch.hpp>

#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;
using testutil::VecX;

namespace {

// The Newton matrix and residual of the first step of a scene, at a perturbed warm start.
struct System {
    std::shared_ptr<const Model> m;
    std::unique_ptr<Data> d;
    const BlockGraph* g = nullptr;  // the graph of the step's unknowns (the integrator's)
    BlockMatrix A;
    VecX f;
};

System newton_system(const Spec& spec, unsigned seed) {
    System sys;
    sys.m = compile(spec);
    sys.d = std::make_unique<Data>(sys.m);
    sys.g = &sys.m->integrator->system_graph(*sys.m, *sys.d);
    const BlockGraph& g = *sys.g;
    testutil::Rng r(seed);
    VecX s(g.total_size);
    for (int i = 0; i < g.total_size; ++i) s[i] = r.uniform(-1, 1);
    sys.f.resize(g.total_size);
    sys.A = BlockMatrix(g);
    REQUIRE(sys.m->integrator->step_system(*sys.m, *sys.d, s.data(), sys.f.data(), &sys.A));
    return sys;
}

VecX solve_with(const System& sys, const std::string& name) {
    const Solver* solver = Registry::global().solver(name);
    REQUIRE(solver);
    auto ws = solver->create(*sys.m, *sys.g);
    REQUIRE(solver->factor(*sys.g, sys.A, *ws));
    VecX x = sys.f;
    solver->solve(*sys.g, *ws, x.data());
    return x;
}

VecX dense_reference(const System& sys) {
    const int n = sys.g->total_size;
    testutil::MatX D(n, n);
    sys.A.to_dense(*sys.g, D.data());
    return D.fullPivLu().solve(sys.f);
}

// Each named solver's solution within 1e-12 (relative) of a full-pivoting dense solve.
void check_agree(const System& sys, std::initializer_list<const char*> names) {
    const VecX ref = dense_reference(sys);
    for (const char* name : names) {
        const VecX x = solve_with(sys, name);
        const double rel = (x - ref).norm() / ref.norm();
        INFO(name << ": relative difference to a full-pivoting dense solve " << rel);
        CHECK(rel < 1e-12);
    }
}

// Bodies alternating `light` and 1e6 kg (boxes 1×0.1×0.1 m), the first one light.
void alternate_masses(Spec& s, double light) {
    for (std::size_t i = 0; i < s.bodies.size(); ++i) {
        const double m = i % 2 == 0 ? light : 1e6;
        s.bodies[i].mass = m;
        s.bodies[i].inertia = testutil::box_inertia(m, 1, 0.1, 0.1);
    }
}

}  // namespace

TEST_CASE("all four solvers agree on a tree with every joint type", "[solvers]") {
    Spec spec = testutil::every_joint_spec();
    spec.joints.resize(9);  // drop the loop joints: a tree
    spec.options.solver = "sparse-ldu";
    check_agree(newton_system(spec, 3), {"sparse-ldu", "dense-loop", "schur", "dense-lu"});
}

TEST_CASE("all four solvers agree with implicit springs and dampers (larger joint nodes)", "[solvers][springs]") {
    Spec spec = testutil::with_springs(testutil::every_joint_spec());
    spec.joints.resize(9);
    spec.options.solver = "sparse-ldu";
    const System sys = newton_system(spec, 5);
    REQUIRE(sys.g->total_size > sys.m->graph.total_size);
    check_agree(sys, {"sparse-ldu", "dense-loop", "schur", "dense-lu"});
    // with the loops: the loop node holds the loop joints' force rows too
    check_agree(newton_system(testutil::with_springs(testutil::every_joint_spec()), 6), {"dense-loop", "schur", "dense-lu"});
}

TEST_CASE("dense-loop, schur and dense-lu agree on a mechanism with a body-body loop and a second world joint", "[solvers]") {
    const System sys = newton_system(testutil::every_joint_spec(), 4);
    REQUIRE(sys.g->loop_joints.size() == 2);
    REQUIRE(sys.m->solver_name == "dense-loop");
    const VecX ref = solve_with(sys, "dense-lu");
    for (const char* name : {"dense-loop", "schur"}) {
        const VecX x = solve_with(sys, name);
        const double rel = (x - ref).norm() / ref.norm();
        INFO(name << ": relative difference to dense-lu " << rel);
        CHECK(rel < 1e-12);
    }
    // And the residual of the solution is at round-off.
    const int n = sys.g->total_size;
    testutil::MatX D(n, n);
    sys.A.to_dense(*sys.g, D.data());
    const VecX x = solve_with(sys, "dense-loop");
    CHECK((D * x - sys.f).norm() / sys.f.norm() < 1e-12);
}

TEST_CASE("sparse-ldu refuses a model with loops and suggests dense-loop", "[solvers]") {
    Spec s = testutil::closed_loop_spec("point-on-line", "sparse-ldu");
    try {
        compile(s);
        FAIL("accepted");
    } catch (const ModelError& e) {
        CHECK_THAT(e.what(), Contains("solver 'sparse-ldu': handles tree-structured mechanisms only") &&
                                 Contains("'closure'") && Contains("use solver 'dense-loop'"));
    }
    // 'auto' picks dense-loop for loops and sparse-ldu for trees.
    CHECK(compile(testutil::closed_loop_spec("point-on-line", "auto"))->solver_name == "dense-loop");
    CHECK(compile(testutil::double_pendulum_spec())->solver_name == "sparse-ldu");
}

TEST_CASE("dense-loop gives minimum-norm multipliers for redundant closure rows", "[solvers]") {
    // Planar four-bar of four hinges: 3 of the 5 closure rows are redundant in 3-D.
    const System sys = newton_system(testutil::closed_loop_spec("revolute"), 5);
    const Solver* solver = Registry::global().solver("dense-loop");
    auto ws = solver->create(*sys.m, *sys.g);
    REQUIRE(solver->factor(*sys.g, sys.A, *ws));
    REQUIRE(ws->redundant_joints == std::vector<int>{3});
    VecX x = sys.f;
    solver->solve(*sys.g, *ws, x.data());
    const int n = sys.g->total_size;
    testutil::MatX D(n, n);
    sys.A.to_dense(*sys.g, D.data());
    // A real step's right-hand side is consistent: project f onto range(D), then solve.
    Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(D);
    const VecX fc = D * cod.solve(sys.f);
    VecX y = fc;
    solver->solve(*sys.g, *ws, y.data());
    CHECK((D * y - fc).norm() / fc.norm() < 1e-9);
    // Every solution is y + N t (N: null space of D). The loop multipliers are the
    // minimum-norm ones: y_loop ⟂ the loop rows of N.
    Eigen::FullPivLU<Eigen::MatrixXd> lu(D);
    lu.setThreshold(1e-10);
    const Eigen::MatrixXd N = lu.kernel();
    REQUIRE(N.cols() == 3);
    const int off = sys.g->node_offset[sys.m->nbodies() + 3];
    const VecX yl = y.segment(off, 5);
    const Eigen::MatrixXd Nl = N.block(off, 0, 5, N.cols());
    INFO("loop multipliers " << yl.transpose() << ", N_loop^T y_loop = " << (Nl.transpose() * yl).transpose());
    CHECK((Nl.transpose() * yl).norm() < 1e-8 * (1 + yl.norm()) * Nl.norm());
}

TEST_CASE("schur refuses redundant closure rows and names the joint", "[solvers]") {
    const System sys = newton_system(testutil::closed_loop_spec("revolute"), 6);
    const Solver* solver = Registry::global().solver("schur");
    auto ws = solver->create(*sys.m, *sys.g);
    REQUIRE_FALSE(solver->factor(*sys.g, sys.A, *ws));
    CHECK_THAT(ws->error, Contains("redundant constraint rows") && Contains("'closure'") && Contains("use solver 'dense-loop'"));
}

TEST_CASE("sparse-ldu solves chains of bodies 1e4 to 1e18 apart in mass like dense-lu", "[solvers]") {
    // Issue 14, item 14: light and 1e6-kg links alternating failed as "singular system" (1e-12 kg)
    // or "not converged" (1e-4 to 1e-10 kg) under sparse-ldu while dense-lu ran them.
    for (double light : {1e-2, 1e-4, 1e-8, 1e-12}) {
        Spec s = testutil::chain_spec(6, "revolute", "vi-maximal");
        alternate_masses(s, light);
        s.options.dt = 0.01;
        std::vector<Pose> end[4];
        int k = 0;
        for (const char* solver : {"dense-lu", "sparse-ldu", "dense-loop", "schur"}) {
            INFO("light " << light << " kg, solver " << solver);
            s.options.solver = solver;
            auto m = compile(s);
            Data d(m);
            StepStatus st = StepStatus::ok;
            for (int i = 0; i < 100 && st == StepStatus::ok; ++i) st = step(*m, d);
            CHECK(st == StepStatus::ok);
            CHECK(d.stats.subdivided_steps == 0);
            end[k] = d.pose;
            for (int b = 0; b < 6; ++b) CHECK(norm(end[k][b].x - end[0][b].x) < 1e-9);
            ++k;
        }
    }
}

TEST_CASE("dense-loop and schur solve a closed chain of links 1e-8 and 1e6 kg like dense-lu", "[solvers]") {
    // Issue 14, item 14, for the loop solvers: with the light and heavy links alternating, their
    // tree part (dense-loop) and Schur complement (schur) lost the light links to round-off
    // ("not converged", or trajectories metres from dense-lu's).
    for (double light : {1e-4, 1e-8}) {
        // Independent closure rows: dense-lu is the reference.
        Spec s = testutil::closed_loop_spec("point-on-line");
        alternate_masses(s, light);
        std::vector<Pose> ref;
        for (const char* solver : {"dense-lu", "dense-loop", "schur"}) {
            INFO("light " << light << " kg, solver " << solver);
            s.options.solver = solver;
            auto m = compile(s);
            Data d(m);
            StepStatus st = StepStatus::ok;
            for (int i = 0; i < 100 && st == StepStatus::ok; ++i) st = step(*m, d);
            INFO((d.warnings.empty() ? std::string() : d.warnings.back().message));
            CHECK(st == StepStatus::ok);
            CHECK(d.stats.subdivided_steps == 0);
            CHECK(max_violation(*m, d.pose.data(), nullptr) < 1e-10);
            if (ref.empty()) ref = d.pose;
            for (std::size_t b = 0; b < ref.size(); ++b) CHECK(norm(d.pose[b].x - ref[b].x) < 1e-8);
        }
        // Redundant closure rows (a hinge closes the planar loop) are still found and refused by
        // schur, whatever the masses.
        Spec r = testutil::closed_loop_spec("revolute", "schur");
        alternate_masses(r, light);
        const System sys = newton_system(r, 7);
        auto ws = Registry::global().solver("schur")->create(*sys.m, *sys.g);
        CHECK_FALSE(Registry::global().solver("schur")->factor(*sys.g, sys.A, *ws));
        CHECK_THAT(ws->error, Contains("redundant constraint rows") && Contains("'closure'"));
    }
}

// ---- the SDK's dense routines (noether/sdk/dense.hpp) -----------------------------------------

TEST_CASE("dense::lu_factor solves a pivoting system and refuses a pivot at or below min_pivot", "[solvers][dense]") {
    // A needs a row swap at the first step (A[0][0] = 0).
    const double A0[9] = {0, 2, 1, 4, 1, -1, 2, -3, 5};
    const double x_true[3] = {1.5, -0.25, 2};
    double b[3];
    for (int i = 0; i < 3; ++i) b[i] = A0[3 * i] * x_true[0] + A0[3 * i + 1] * x_true[1] + A0[3 * i + 2] * x_true[2];
    double A[9];
    int piv[3];
    std::copy(A0, A0 + 9, A);
    REQUIRE(dense::lu_factor(3, A, piv));
    dense::lu_solve(3, A, piv, b);
    for (int i = 0; i < 3; ++i) CHECK(b[i] == Approx(x_true[i]).margin(1e-14));
    // The same matrix with its third row nearly the sum of the first two: the last pivot is
    // ~1e-13 of the largest entry. Accepted by default, refused under a floor of 1e-12 · max|A|.
    double S[9] = {0, 2, 1, 4, 1, -1, 4, 3, 1e-13};
    double S2[9];
    std::copy(S, S + 9, S2);
    CHECK(dense::lu_factor(3, S, piv));
    CHECK_FALSE(dense::lu_factor(3, S2, piv, 1e-12 * dense::max_abs(9, S2)));
}

TEST_CASE("dense::solve_rank_revealing gives a basic solution of a redundant system and its rank", "[solvers][dense]") {
    // Rows 0 and 2 are the same constraint twice (consistent right-hand side): rank 2.
    double A[9] = {1, 2, 0, 0, 1, 1, 1, 2, 0};
    double b[3] = {5, 3, 5};
    double x[3], y[3];
    int rp[3], cp[3];
    const double A0[9] = {1, 2, 0, 0, 1, 1, 1, 2, 0};
    const double b0[3] = {5, 3, 5};
    CHECK(dense::solve_rank_revealing(3, A, b, x, rp, cp, y, 1e-11) == 2);
    for (int i = 0; i < 3; ++i)
        CHECK(A0[3 * i] * x[0] + A0[3 * i + 1] * x[1] + A0[3 * i + 2] * x[2] == Approx(b0[i]).margin(1e-13));
    int zeros = 0;  // a basic solution: one unknown of the three is left at zero
    for (double v : x) zeros += v == 0.0;
    CHECK(zeros == 1);
    // Full rank: the exact solution.
    double B[4] = {2, 1, 1, 3}, c[2] = {3, 5}, z[2], w[2];
    int rq[2], cq[2];
    CHECK(dense::solve_rank_revealing(2, B, c, z, rq, cq, w, 1e-11) == 2);
    CHECK(z[0] == Approx(0.8).margin(1e-15));
    CHECK(z[1] == Approx(1.4).margin(1e-15));
}
