// The queries against MuJoCo 2.2.2 (Debian's libmujoco-dev, a test oracle only): the UR5 of the
// shared models loaded by noether's URDF importer and by MuJoCo's, the joint-space mass matrix
// (mj_fullM) and inverse dynamics (mj_rne) compared at random states.
#include <catch2/catch.hpp>

#include <mujoco/mujoco.h>

#include <cmath>
#include <cstdio>

#include "noether/noether.hpp"
#include "noether/urdf.hpp"
#include "util.hpp"

using namespace noether;

TEST_CASE("queries: the UR5's mass matrix and inverse dynamics equal MuJoCo's to 1e-9", "[queries][mujoco]") {
    const std::string path = std::string(NOETHER_SOURCE_DIR) + "/../shared/models/example-robot-data/robots/ur_description/urdf/ur5_robot.urdf";
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return;  // no shared models here
    std::fclose(f);
    Spec s;
    s.options.integrator = "none";
    urdf::Options o;
    o.fixed_base = true;
    o.limits = false;
    urdf::import(s, path, o);
    auto m = compile(s);
    Kinematics k(m);
    const int n = k.n();
    REQUIRE(n == 6);
    // MuJoCo would load the meshes of <visual> and <collision> (not in the shared models): drop them.
    std::string text = testutil::slurp(path);
    for (const char* tag : {"visual", "collision"}) {
        const std::string open = std::string("<") + tag, close = std::string("</") + tag + ">";
        for (std::size_t a = text.find(open); a != std::string::npos; a = text.find(open, a)) {
            const std::size_t b = text.find(close, a);
            REQUIRE(b != std::string::npos);
            text.erase(a, b + close.size() - a);
        }
    }
    const std::string stripped = std::string(NOETHER_BINARY_DIR) + "/tests/ur5_no_meshes.urdf";
    {
        std::FILE* out = std::fopen(stripped.c_str(), "w");
        REQUIRE(out);
        std::fwrite(text.data(), 1, text.size(), out);
        std::fclose(out);
    }
    char err[1000] = "";
    mjModel* mm = mj_loadXML(stripped.c_str(), nullptr, err, sizeof err);
    INFO(err);
    REQUIRE(mm);
    REQUIRE(mm->nv == 6);
    mjData* md = mj_makeData(mm);
    // The same joints in the same order (MuJoCo names them as the URDF does).
    for (int j = 0; j < n; ++j) CHECK(std::string(mj_id2name(mm, mjOBJ_JOINT, j)) == m->joints[j].name);
    testutil::Rng r(17);
    double worst_M = 0, worst_tau = 0, scale_M = 0, scale_tau = 0;
    for (int trial = 0; trial < 5; ++trial) {
        std::vector<double> q(n), qd(n), qdd(n), M(n * n), tau(n);
        for (int i = 0; i < n; ++i) q[i] = r.uniform(-2, 2), qd[i] = r.uniform(-1, 1), qdd[i] = r.uniform(-1, 1);
        k.mass_matrix(q.data(), M.data());
        k.inverse_dynamics(q.data(), qd.data(), qdd.data(), tau.data());
        for (int i = 0; i < n; ++i) md->qpos[i] = q[i], md->qvel[i] = qd[i], md->qacc[i] = qdd[i];
        mj_forward(mm, md);
        std::vector<mjtNum> Mmj(n * n);
        mj_fullM(mm, Mmj.data(), md->qM);
        for (int i = 0; i < n; ++i) md->qacc[i] = qdd[i];
        std::vector<mjtNum> res(n);
        mj_rne(mm, md, 1, res.data());
        for (int i = 0; i < n * n; ++i) worst_M = std::max(worst_M, std::fabs(M[i] - Mmj[i])), scale_M = std::max(scale_M, std::fabs(M[i]));
        for (int i = 0; i < n; ++i) worst_tau = std::max(worst_tau, std::fabs(tau[i] - res[i])), scale_tau = std::max(scale_tau, std::fabs(tau[i]));
    }
    INFO("mass matrix: largest difference " << worst_M << " of " << scale_M << "; inverse dynamics " << worst_tau << " of "
                                            << scale_tau);
    CHECK(worst_M <= 1e-9 * scale_M);
    CHECK(worst_tau <= 1e-9 * scale_tau);
    mj_deleteData(md);
    mj_deleteModel(mm);
}
