// Scenes and commands that import the shared robot models (skipped without NOETHER_MODELS_DIR).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../scenes/scene_util.hpp"
#include "models_util.hpp"
#include "noether/urdf.hpp"

using Catch::Matchers::Contains;
using scenes::example;
using scenes::out_path;
using scenes::read_csv;
using scenes::run;

namespace {


}  // namespace

TEST_CASE("atlas_fall.lua: a tumbling Atlas, damping removes energy and gravity alone changes momentum", "[models][scenes]") {
    if (!models::available()) return;
    const std::string csv = out_path("atlas.csv");
    const auto r = run(example("atlas_fall"), {{"csv", csv}});
    INFO(r.error);
    REQUIRE(r.exit_code == 0);
    const auto& s = r.worlds[0];
    CHECK(s.bodies == 31);
    CHECK(s.dof == 36);
    CHECK(s.max_violation < 1e-9);
    CHECK(s.failed_steps == 0);
    const auto c = read_csv(csv);
    const auto E = c.column("energy"), t = c.column("time"), pz = c.column("momentum.z");
    // Energy never increases by more than round-off (damping only dissipates; gravity conserves).
    double rise = 0;
    for (std::size_t i = 1; i < E.size(); ++i) rise = std::max(rise, E[i] - E[i - 1]);
    CHECK(rise < 1e-6 * std::fabs(E[0]));
    CHECK(E.back() < E.front() - 0.5);
    // dP/dt = M g exactly (no other external force): total mass from the file.
    noether::Spec spec;
    const double M = noether::urdf::import(spec, models::dir() + "/ConstrainedDynamics.jl/examples/examples_files/atlas.urdf", {})
                         .imported_mass;
    CHECK(M == Approx(175.118).epsilon(1e-5));  // the manifest's rounded total
    CHECK((pz.back() - pz.front()) / (t.back() - t.front()) == Approx(-9.81 * M).epsilon(1e-9));
}

TEST_CASE("ur5_pd.lua: the Lua PD controllers bring the UR5 to its target pose", "[models][scenes]") {
    if (!models::available()) return;
    const std::string csv = out_path("ur5.csv");
    const auto r = run(example("ur5_pd"), {{"csv", csv}});
    INFO(r.error);
    REQUIRE(r.exit_code == 0);
    CHECK(r.worlds[0].max_violation < 1e-12);
    const auto c = read_csv(csv);
    const double target[] = {0.5, -1.0, 1.2, -0.5, 0.3, 0.2};
    const char* names[] = {"shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"};
    for (int i = 0; i < 6; ++i) {
        INFO(names[i]);
        const double q = c.column(std::string(names[i]) + ".coord").back();
        CHECK(std::fabs(q - target[i]) < 0.1);
    }
}

TEST_CASE("two_robots.lua: UR5 and A1 side by side with prefixes", "[models][scenes]") {
    if (!models::available()) return;
    const auto r = run(example("two_robots"));
    INFO(r.error);
    REQUIRE(r.exit_code == 0);
    CHECK(r.worlds[0].bodies == 18);
    CHECK(r.worlds[0].joints == 18);
    CHECK(r.worlds[0].max_violation < 1e-9);
    // Importing the same robot twice without a new prefix is refused, naming the clash.
    const std::string again = scenes::write_script("twice.lua",
        "local noether = require('noether')\n"
        "local models = require('lib.models')\n"
        "local w = noether.world{}\n"
        "local f = models.path('example-robot-data/robots/ur_description/urdf/ur5_robot.urdf')\n"
        "w:urdf{ file = f, base = 'fixed' }\n"
        "w:urdf{ file = f, base = 'fixed' }\n");
    const auto t = run(again);
    CHECK(t.exit_code == 2);
    CHECK_THAT(t.error, Contains("twice.lua:6: urdf") && Contains("already exists (use a different 'prefix')"));
}

TEST_CASE("noether import prints the report and runs the robot", "[models][cli]") {
    if (!models::available()) return;
    const std::string json = out_path("import.json");
    const std::string cmd = std::string(NOETHER_BINARY_DIR) + "/bin/noether import " + models::dir() +
                            "/ConstrainedDynamics.jl/examples/examples_files/atlas.urdf --simulate 0.5 --summary-json " + json +
                            " > " + out_path("import.txt") + " 2>&1";
    const int st = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(st));
    CHECK(WEXITSTATUS(st) == 0);
    std::ifstream f(out_path("import.txt"));
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK_THAT(text, Contains("robot 'atlas'") && Contains("l_foot: body 'l_foot'") && Contains("<transmission>") &&
                         Contains("elimination order:") && Contains("simulated 0.5 s in 100 steps"));
    std::ifstream j(json);
    const std::string js((std::istreambuf_iterator<char>(j)), std::istreambuf_iterator<char>());
    CHECK_THAT(js, Contains("\"bodies\": 31") && Contains("\"failed_steps\": 0"));
    const std::string bad = std::string(NOETHER_BINARY_DIR) + "/bin/noether import /no/such.urdf > /dev/null 2>&1";
    const int b = std::system(bad.c_str());
    CHECK(WEXITSTATUS(b) == 2);
}
