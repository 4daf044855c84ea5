// Hardening (issue: no crash from any script; failures that say so). Each case reproduces a
// finding that crashed the process or passed silently before its fix.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "scene_util.hpp"
#include "util.hpp"

using scenes::run;
using scenes::kPendulum;
using scenes::write_script;
using Catch::Matchers::Contains;

namespace {

bool exists(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("state access before the first step works (it dereferenced a null Data)", "[hardening]") {
    const auto r = run(write_script("h_before.lua", std::string(kPendulum) +
                                                        "local p = w:position('bob')\n"
                                                        "assert(p[1] == 1 and p[3] == 0, 'initial position')\n"
                                                        "assert(w:orientation('bob')[1] == 1)\n"
                                                        "assert(w:velocity('bob')[1] == 0)\n"
                                                        "assert(w:coord('j') == 0 and w:rate('j') == 0)\n"
                                                        "w:run{ steps = 10 }\n"));
    INFO(r.error);
    CHECK(r.exit_code == 0);
}

TEST_CASE("a script calling __gc by hand cannot free what the host uses", "[hardening]") {
    // The metatable is protected; through the debug library the finalizer only detaches.
    const auto a = run(write_script("h_gc1.lua", std::string(kPendulum) +
                                                     "assert(getmetatable(w) == 'noether.World', 'protected metatable')\n"
                                                     "w:run{ steps = 5 }\n"));
    INFO(a.error);
    CHECK(a.exit_code == 0);
    const auto b = run(write_script("h_gc2.lua", std::string(kPendulum) +
                                                     "w:run{ steps = 5 }\n"
                                                     "debug.getmetatable(w).__gc(w)\n"
                                                     "collectgarbage()\n"
                                                     "w:step()\n"));
    CHECK(b.exit_code == 2);
    CHECK_THAT(b.error, Contains("h_gc2.lua:8:") && Contains("already collected"));
    // the host still reads the world's summary safely
    REQUIRE(b.worlds.size() == 1);
    CHECK(b.worlds[0].steps == 5);
}

TEST_CASE("integer fields are range-checked, never truncated", "[hardening]") {
    const auto a = run(write_script("h_int1.lua", std::string(kPendulum) + "w:output{ every = 4294967296, callback = function() end }\n"));
    CHECK(a.exit_code == 2);  // was SIGFPE: every truncated to 0, then a modulo by zero
    CHECK_THAT(a.error, Contains("field 'every' must be at most 2147483647, got 4294967296"));
    const auto b = run(write_script("h_int2.lua", "local noether = require('noether')\n"
                                                  "local w = noether.world{ max_substeps = 2^32 + 5 }\n"));
    CHECK(b.exit_code == 2);  // was silently 5
    CHECK_THAT(b.error, Contains("field 'max_substeps' must be at most 2147483647, got 4294967301"));
    const auto c = run(write_script("h_int3.lua", "local noether = require('noether')\n"
                                                  "local w = noether.world{ max_iterations = 2.5 }\n"));
    CHECK(c.exit_code == 2);
    CHECK_THAT(c.error, Contains("field 'max_iterations' must be an integer, got 2.5"));
}

TEST_CASE("numbers: strings are not numbers, overflowing vectors and durations are refused", "[hardening]") {
    const auto a = run(write_script("h_num1.lua", "local noether = require('noether')\nlocal w = noether.world{ dt = '0.5' }\n"));
    CHECK(a.exit_code == 2);
    CHECK_THAT(a.error, Contains("h_num1.lua:2: noether.world: field 'dt' must be a number, got string"));
    const auto b = run(write_script("h_num2.lua", "local noether = require('noether')\n"
                                                  "local w = noether.world{ dt = 0.01 }\n"
                                                  "local b = w:body{ name = 'bob', mass = 1, inertia = {1, 1, 1}, velocity = {1e300, 1e300, 0} }\n"));
    CHECK(b.exit_code == 2);
    CHECK_THAT(b.error, Contains("field 'velocity' is too large"));
    const auto c = run(write_script("h_num3.lua", "local noether = require('noether')\n"
                                                  "local w = noether.world{ dt = 0.01 }\n"
                                                  "local b = w:body{ name = 'bob', mass = 1, inertia = {1, 1, 1}, position = {'1', 0, 0} }\n"));
    CHECK(c.exit_code == 2);
    CHECK_THAT(c.error, Contains("field 'position' must be a 3-vector"));
    const auto d = run(write_script("h_num4.lua", std::string(kPendulum) + "w:run{ duration = 1e300 }\n"));
    CHECK(d.exit_code == 2);  // ran 0 steps and exited 0
    CHECK_THAT(d.error, Contains("field 'duration' = ") && Contains("is too long"));
}

TEST_CASE("a run of more than 1e8 steps is refused unless the world raises its limit", "[hardening]") {
    const auto a = run(write_script("h_steps1.lua", "local noether = require('noether')\n"
                                                    "local w = noether.world{ dt = 1e-12 }\n"
                                                    "local b = w:body{ name = 'bob', mass = 1, inertia = {1, 1, 1} }\n"
                                                    "w:run{ duration = 10 }\n"));
    CHECK(a.exit_code == 2);
    CHECK_THAT(a.error, Contains("h_steps1.lua:4:") && Contains("10000000000000 steps, more than the limit of 100000000") &&
                            Contains("max_steps"));
    // The kernel names the option; the scene's author reads it in Lua (issue 32 item 6).
    CHECK_THAT(a.error, Contains("raise the run's step limit (noether.world{ max_steps = ... })") &&
                            !Contains("option 'max_steps'"));
    const auto b = run(write_script("h_steps2.lua", "local noether = require('noether')\n"
                                                    "local w = noether.world{ dt = 0.01, max_steps = 10 }\n"
                                                    "local b = w:body{ name = 'bob', mass = 1, inertia = {1, 1, 1} }\n"
                                                    "w:run{ steps = 11 }\n"));
    CHECK(b.exit_code == 2);
    CHECK_THAT(b.error, Contains("more than the limit of 10"));
}

TEST_CASE("a script error mid-run leaves the CSV as .part, an unwritable output fails the run", "[hardening]") {
    const std::string csv = std::string(NOETHER_BINARY_DIR) + "/tests/h_abort.csv";
    std::remove(csv.c_str());
    std::remove((csv + ".part").c_str());
    const auto a = run(write_script("h_abort.lua", std::string(kPendulum) +
                                                       "w:output{ file = '" + csv + "', channels = { 'time' } }\n"
                                                       "w:run{ steps = 10 }\n"
                                                       "error('the script breaks here')\n"));
    CHECK(a.exit_code == 2);
    CHECK_THAT(a.error, Contains("the script breaks here"));
    CHECK_FALSE(exists(csv));  // was renamed to its final name
    CHECK(exists(csv + ".part"));
    // Issue 31 item 8: the error names the file it left unfinished.
    CHECK_THAT(a.error, Contains("it was left as '" + csv + ".part'"));
    // The output path is a directory: refused when the output is opened, before any step (it
    // was found only by the rename after the run).
    const std::string dir = std::string(NOETHER_BINARY_DIR) + "/tests/h_outdir.csv";
    mkdir(dir.c_str(), 0755);
    const auto b = run(write_script("h_dir.lua", std::string(kPendulum) + "w:output{ file = '" + dir +
                                                     "', channels = { 'time' } }\nw:run{ steps = 10 }\n"));
    CHECK(b.exit_code == 2);
    CHECK_THAT(b.error, Contains("h_outdir.csv") && Contains("it is a directory"));
}

TEST_CASE("rk4 and heun fail loudly when they diverge instead of reporting success", "[hardening]") {
    for (const char* integ : {"rk4", "heun"}) {
        INFO(integ);
        noether::Spec s = testutil::chain_spec(3, "revolute", integ);
        s.options.dt = 10;  // was: energy 5.5e9 J, joints 4.5e6 m apart, exit 0
        auto m = noether::compile(s);
        noether::Data d(m);
        noether::StepStatus st = noether::StepStatus::ok;
        int k = 0;
        for (; k < 100 && st == noether::StepStatus::ok; ++k) st = noether::step(*m, d);
        CHECK((st == noether::StepStatus::diverged || st == noether::StepStatus::non_finite));
        CHECK(d.stats.failed_steps == 1);
        CHECK(noether::max_violation(*m, d.pose.data(), nullptr) < 10 * (1 + 2.5));
        CHECK_THAT(d.warnings.back().message, Contains("the state is left at t ="));
    }
}

TEST_CASE("restore refuses a state with non-finite values", "[hardening]") {
    auto m = noether::compile(testutil::chain_spec(2, "revolute", "vi-maximal"));
    noether::Data d(m);
    noether::step(*m, d);
    std::string bytes = d.save();
    // Overwrite the first pose's x with NaN (after magic, format, fingerprint, time, step, the
    // host-edit flag, count).
    const double nan = std::nan("");
    std::memcpy(&bytes[8 + 4 + 8 + 8 + 8 + 1 + 8], &nan, sizeof nan);
    noether::Data e(m);
    CHECK_THROWS_WITH(e.restore(bytes), Contains("non-finite pose"));
    CHECK(e.step == 0);  // unchanged
}

TEST_CASE("errors in world options name the script line of the world", "[hardening]") {
    const auto a = run(write_script("h_opt1.lua", "local noether = require('noether')\n"
                                                  "local w = noether.world{ dt = 0.01, integrator = 'vi-maxiaml' }\n"
                                                  "local b = w:body{ name = 'b', mass = 1, inertia = {1, 1, 1} }\n"
                                                  "w:run{ steps = 1 }\n"));
    CHECK(a.exit_code == 2);
    CHECK_THAT(a.error, Contains("h_opt1.lua:2: options: unknown integrator 'vi-maxiaml'"));
    const auto b = run(write_script("h_opt2.lua", "local noether = require('noether')\n"
                                                  "local w = noether.world{ dt = 0.01, integrator = 'dp45-projection',\n"
                                                  "                         options = { atol = -1 } }\n"
                                                  "local b = w:body{ name = 'b', mass = 1, inertia = {1, 1, 1} }\n"
                                                  "w:run{ steps = 1 }\n"));
    CHECK(b.exit_code == 2);
    CHECK_THAT(b.error, Contains("h_opt2.lua:2: options: dp45-projection option 'atol' must be positive"));
    // A one-word option (riqn's newton = "exact") is a string; a wrong word is named.
    const char* riqn_scene = "local noether = require('noether')\n"
                             "local w = noether.world{ dt = 0.01, integrator = 'riqn', options = { newton = '%s' } }\n"
                             "local b = w:body{ name = 'b', mass = 1, inertia = {1, 1, 1}, position = {1, 0, 0} }\n"
                             "w:joint{ name = 'j', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0},\n"
                             "         axis = {0, 1, 0} }\n"
                             "w:run{ steps = 10 }\n";
    char text[640];
    std::snprintf(text, sizeof text, riqn_scene, "exact");
    const auto c = run(write_script("h_opt3.lua", text));
    INFO(c.error);
    CHECK(c.exit_code == 0);
    std::snprintf(text, sizeof text, riqn_scene, "quick");
    const auto d = run(write_script("h_opt4.lua", text));
    CHECK(d.exit_code == 2);
    CHECK_THAT(d.error, Contains("h_opt4.lua:2: options: riqn option 'newton' must be one of 'riqn', 'exact', 'dense', got 'quick'"));
}

TEST_CASE("the command: --help of a subcommand, import --dt 0, worlds never run", "[hardening][cli]") {
    const std::string bin = std::string(NOETHER_BINARY_DIR) + "/bin/noether ";
    auto status = [](const std::string& cmd) {
        const int st = std::system((cmd + " >/dev/null 2>&1").c_str());
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    };
    auto output = [](const std::string& cmd) {
        std::string out;
        if (FILE* p = popen((cmd + " 2>&1").c_str(), "r")) {
            char buf[512];
            while (std::fgets(buf, sizeof buf, p)) out += buf;
            pclose(p);
        }
        return out;
    };
    CHECK(status(bin + "import --help") == 0);  // was an error
    CHECK(status(bin + "run --help") == 0);
    const std::string urdf = std::string(NOETHER_SOURCE_DIR) + "/tests/fuzz/seeds/urdf/slider.urdf";
    const std::string dt0 = output(bin + "import " + urdf + " --dt 0 --simulate 1");
    CHECK_THAT(dt0, Contains("--dt must be positive"));  // was an internal chunk name
    const std::string lazy = write_script("h_lazy.lua", "local noether = require('noether')\n"
                                                        "local w = noether.world{}\n"
                                                        "w:body{ name = 'b', mass = 1, inertia = {1, 1, 1} }\n");
    CHECK_THAT(output(bin + "run " + lazy), Contains("1 world(s) of the script were never compiled or run"));
}

TEST_CASE("URDF errors from a scene carry the script line, a missing file says where it looked", "[hardening]") {
    const auto a = run(write_script("h_urdf1.lua", "local noether = require('noether')\n"
                                                   "local w = noether.world{}\n"
                                                   "w:urdf{ file = 'no_such_robot.urdf' }\n"));
    CHECK(a.exit_code == 2);
    CHECK_THAT(a.error, Contains("h_urdf1.lua:3: urdf 'no_such_robot.urdf': cannot open the file (relative paths are "
                                 "relative to the working directory") && Contains("noether.here('no_such_robot.urdf')"));
    const std::string urdf = std::string(NOETHER_SOURCE_DIR) + "/tests/fuzz/seeds/urdf/slider.urdf";
    const auto b = run(write_script("h_urdf2.lua", "local noether = require('noether')\n"
                                                   "local w = noether.world{}\n"
                                                   "w:urdf{ file = '" + urdf + "', base = 'fixed', positions = { knee = 1 } }\n"));
    CHECK(b.exit_code == 2);
    CHECK_THAT(b.error, Contains("h_urdf2.lua:3: urdf: ") && Contains("initial position for joint 'knee': no such joint"));
}

TEST_CASE("one rule for paths: relative to the working directory, noether.here for files next to the script",
          "[hardening]") {
    char cwd[4096];
    REQUIRE(getcwd(cwd, sizeof cwd));
    const std::string out = std::string(cwd) + "/h_paths_out.csv";
    std::remove(out.c_str());
    // The scene lives in another directory than the working directory.
    const std::string dir = std::string(NOETHER_BINARY_DIR) + "/tests/h_paths";
    mkdir(dir.c_str(), 0755);
    const std::string urdf = std::string(NOETHER_SOURCE_DIR) + "/tests/fuzz/seeds/urdf/slider.urdf";
    {
        std::ifstream in(urdf);
        std::ofstream copy(dir + "/robot.urdf");
        copy << in.rdbuf();
    }
    std::ofstream(dir + "/scene.lua") << "local noether = require('noether')\n"
                                         "local w = noether.world{}\n"
                                         "w:urdf{ file = noether.here('robot.urdf'), base = 'fixed' }\n"
                                         "w:output{ file = 'h_paths_out.csv', channels = { 'time' } }\n"
                                         "w:run{ steps = 3 }\n";
    const auto a = run(dir + "/scene.lua");
    INFO(a.error);
    CHECK(a.exit_code == 0);
    CHECK(exists(out));  // the output is relative to the working directory, not to the script
    CHECK_FALSE(exists(dir + "/h_paths_out.csv"));
    std::remove(out.c_str());
    // Without noether.here the URDF is looked for in the working directory (where it is not).
    std::ofstream(dir + "/scene2.lua") << "local noether = require('noether')\n"
                                          "local w = noether.world{}\n"
                                          "w:urdf{ file = 'robot.urdf', base = 'fixed' }\n";
    const auto b = run(dir + "/scene2.lua");
    CHECK(b.exit_code == 2);
    CHECK_THAT(b.error, Contains("relative to the working directory"));
}

namespace {

// Issue 14, item 13: a damped rhombus four-bar (all links 1 m, ground pivots 1 m apart straight
// below each other) that settles folded flat, crank at 90° — a singular pose of the loop. Its
// plane is tilted by `angle` about (1, 2, 3) so that no row of it is exactly zero.
const char* kFoldedFourBar = R"(local noether = require('noether')
local P = noether.params { dt = 0.01, duration = 30, integrator = 'vi-maximal', solver = 'dense-loop', damping = 0.5, angle = 0 }
local w = noether.world { dt = P.dt, duration = P.duration, integrator = P.integrator, solver = P.solver }
local n = { 1 / math.sqrt(14), 2 / math.sqrt(14), 3 / math.sqrt(14) }
local c, s = math.cos(P.angle / 2), math.sin(P.angle / 2)
local Q = { c, n[1] * s, n[2] * s, n[3] * s }
local function qmul(a, b)
  return { a[1]*b[1] - a[2]*b[2] - a[3]*b[3] - a[4]*b[4], a[1]*b[2] + a[2]*b[1] + a[3]*b[4] - a[4]*b[3],
           a[1]*b[3] - a[2]*b[4] + a[3]*b[1] + a[4]*b[2], a[1]*b[4] + a[2]*b[3] - a[3]*b[2] + a[4]*b[1] }
end
local function rot(v)
  local r = qmul(qmul(Q, { 0, v[1], v[2], v[3] }), { Q[1], -Q[2], -Q[3], -Q[4] })
  return { r[2], r[3], r[4] }
end
local box = noether.inertia.box(1, 1, 0.1, 0.1)
local crank = w:body { name = 'crank', mass = 1, inertia = box, position = rot { 0.5, 0, 0 }, orientation = Q }
local coupler = w:body { name = 'coupler', mass = 1, inertia = box, position = rot { 1, 0, -0.5 },
                         orientation = qmul(Q, { math.sqrt(0.5), 0, math.sqrt(0.5), 0 }) }
local rocker = w:body { name = 'rocker', mass = 1, inertia = box, position = rot { 0.5, 0, -1 }, orientation = Q }
local y, d = rot { 0, 1, 0 }, P.damping
w:joint { name = 'ground_crank', type = 'revolute', parent = w.world, child = crank, anchor = rot { 0, 0, 0 }, axis = y, damping = d }
w:joint { name = 'crank_coupler', type = 'revolute', parent = crank, child = coupler, anchor = rot { 1, 0, 0 }, axis = y, damping = d }
w:joint { name = 'coupler_rocker', type = 'revolute', parent = coupler, child = rocker, anchor = rot { 1, 0, -1 }, axis = y, damping = d }
w:joint { name = 'rocker_ground', type = 'revolute', parent = w.world, child = rocker, anchor = rot { 0, 0, -1 }, axis = y, damping = d }
return w
)";

}  // namespace

TEST_CASE("a damped four-bar settles into its folded singular pose with every loop integrator", "[hardening][singular]") {
    const std::string script = write_script("h_fold.lua", kFoldedFourBar);
    // Before: vi-maximal failed at t = 4.38 s (damping 0.5) and 2.38 s (2), vi-midpoint at 3.7 s,
    // dp45-projection at 3.46 s: Newton or the projection stalled at the folded pose.
    struct Case {
        const char* integrator;
        const char* damping;
    };
    for (const Case& c : {Case{"vi-maximal", "0.5"}, Case{"vi-maximal", "2"}, Case{"vi-midpoint", "2"},
                          Case{"dp45-projection", "0.5"}}) {
        INFO(c.integrator << ", damping " << c.damping);
        const auto r = run(script, {{"integrator", c.integrator}, {"damping", c.damping}});
        REQUIRE(r.exit_code == 0);
        REQUIRE(r.worlds.size() == 1);
        const auto& s = r.worlds[0];
        CHECK(s.failed_steps == 0);
        CHECK(s.sim_time == Approx(30));
        // It did fold: all three links hang straight down (−3.5 m·g·kg; it started at −1.5).
        CHECK(s.energy_final == Approx(-3.5 * 9.81).margin(1e-3));
        // Within the tolerance 1e-10, or within 10x of it at Newton's floor — and then said so.
        CHECK(s.max_violation < (s.floor_steps > 0 ? 1e-9 : 1e-10));
        bool said = false;
        for (const auto& w : s.warnings) said |= w.find("Newton stopped at residual") != std::string::npos;
        CHECK(said == (s.floor_steps > 0));
    }
}

TEST_CASE("a stalled step is never committed with its joints violated (dense-lu at the folded pose)", "[hardening][singular]") {
    // Tilted plane, light damping, dense-lu: Newton stalls at the round-off floor of the large
    // terms. Accepting that floor without checking the joint rows committed violations of
    // 2.1e-9 (20x the tolerance) silently; now such a step is subdivided and meets 1e-10.
    const auto r = run(write_script("h_fold.lua", kFoldedFourBar),
                       {{"solver", "dense-lu"}, {"damping", "0.1"}, {"angle", "0.7"}});
    REQUIRE(r.exit_code == 0);
    const auto& s = r.worlds[0];
    CHECK(s.failed_steps == 0);
    CHECK(s.max_violation < 1e-10);
    CHECK(s.energy_final < -32);  // on its way to the fold (−34.3 J), from −14.7 J
}

// The planar four-bar's rows are redundant (four hinges in one plane: 20 rows on 18 body
// coordinates). schur refuses them and dense-lu cannot factor them (under vi-midpoint its pivot
// vanishes exactly at the first step): the step fails, and its warning now says why and what to
// use (it said "singular system", "not converged … last residual 45.3" or, under the explicit
// methods, "non-finite value" and no more: the solver's own reason, naming the joints, went
// unshown). dense-loop takes them.
TEST_CASE("a solver that cannot factor the step's matrix says why in the failure's warning", "[hardening][singular]") {
    const std::string script = write_script("h_fold.lua", kFoldedFourBar);
    struct Case {
        const char* integrator;
        const char* solver;
        const char* says;
    };
    for (const Case& c :
         {Case{"vi-maximal", "schur",
               "; solver 'schur': redundant constraint rows (3 dependent) in the loop closure joint(s) 'rocker_ground'; the "
               "Schur complement needs independent rows: use solver 'dense-loop'"},
          Case{"vi-midpoint", "schur", "; solver 'schur': redundant constraint rows ("},
          Case{"vi-midpoint", "dense-lu",
               "; solver 'dense-lu': the matrix is singular (as redundant constraint rows make it: a loop of hinges "
               "in one plane has them, and dense-lu takes none; solver 'dense-loop' does)"},
          // The explicit methods factor the same matrix for their accelerations (they said
          // "non-finite value" and no more).
          Case{"rk4", "schur", "singular system at dt = 0.01 s; the state is left at t = 0 s; solver 'schur': redundant "
                               "constraint rows (3 dependent)"},
          Case{"dp45-projection", "dense-lu", "singular system at dt = 0.01 s; the state is left at t = 0 s; solver "
                                              "'dense-lu': the matrix is singular"}}) {
        INFO(c.integrator << " with " << c.solver);
        const auto r = run(script, {{"integrator", c.integrator}, {"solver", c.solver}, {"duration", "0.1"}});
        CHECK(r.exit_code == 1);  // the simulation failed, and the error says so with the same text
        CHECK_THAT(r.error, Contains(c.says));
        REQUIRE(r.worlds.size() == 1);
        const auto& s = r.worlds[0];
        CHECK(s.failed_steps == 1);
        std::string all;
        for (const auto& w : s.warnings) all += w + "\n";
        INFO(all);
        CHECK_THAT(all, Contains("step 1 (t = 0.01 s): ") && Contains(c.says));
        const auto ok = run(script, {{"integrator", c.integrator}, {"solver", "dense-loop"}, {"duration", "0.1"}});
        REQUIRE(ok.worlds.size() == 1);
        CHECK(ok.worlds[0].failed_steps == 0);
    }
}
