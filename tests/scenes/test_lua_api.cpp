// The Lua module and the `noether` command: argument errors with file:line, outputs written
// atomically, exit codes, save/restore, manual stepping, the C entry point.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sys/wait.h>

#include "noether_lua.h"
#include "noether_mjcf.h"
#include "noether_urdf.h"
#include "scene_util.hpp"

using scenes::read_csv;
using scenes::run;
using scenes::write_script;
using scenes::cli_err;
using scenes::cli;
using Catch::Matchers::Contains;

namespace {

const char* kHeader =
    "local noether = require('noether')\n"                                            // 1
    "local w = noether.world{ dt = 0.01 }\n"                                           // 2
    "local b = w:body{ name = 'bob', mass = 1, inertia = {0.1, 0.1, 0.1}, position = {1, 0, 0} }\n";  // 3

std::string error_of(const std::string& name, const std::string& body) {
    const auto r = run(write_script(name, std::string(kHeader) + body));
    CHECK(r.exit_code == 2);
    return r.error;
}

}  // namespace

TEST_CASE("argument errors name the script line, the element, the field and what was expected", "[lua]") {
    CHECK_THAT(error_of("e1.lua", "w:joint{ name = 'crank', type = 'revolute', parent = w.world, child = b, axis = 'up' }\n"),
               Contains("e1.lua:4: joint 'crank': field 'axis' must be a 3-vector, got string"));
    CHECK_THAT(error_of("e2.lua", "w:body{ name = 'x', mass = 1, inertia = {1, 1, 1}, colour = 'red' }\n"),
               Contains("e2.lua:4: body 'x': unknown field 'colour' (fields: name, mass, inertia"));
    CHECK_THAT(error_of("e3.lua", "w:body{ name = 'x', inertia = {1, 1, 1} }\n"),
               Contains("e3.lua:4: body 'x': field 'mass' is required"));
    CHECK_THAT(error_of("e4.lua", "w:joint{ name = 'j', type = 'spherical', parent = 'nope', child = b }\n"),
               Contains("e4.lua:4: joint 'j': field 'parent': no body named 'nope'"));
    CHECK_THAT(error_of("e5.lua", "w:body{ name = 'x', mass = 'heavy', inertia = {1, 1, 1} }\n"),
               Contains("e5.lua:4: body 'x': field 'mass' must be a number, got string"));
    CHECK_THAT(error_of("e6.lua", "w:body{ name = 'x', mass = 1, inertia = {1, 2} }\n"),
               Contains("e6.lua:4: body 'x': field 'inertia' must be 3 principal moments"));
    CHECK_THAT(error_of("e7.lua", "w:joint{ name = 'j', parent = w.world, child = b }\n"),
               Contains("e7.lua:4: joint 'j': field 'type' is required"));
    CHECK_THAT(error_of("e8.lua", "w:body{ name = 'bob', mass = 1, inertia = {1, 1, 1} }\n"),
               Contains("e8.lua:4: body 'bob': duplicate name (first defined at"));
}

TEST_CASE("model errors found at compile time carry the line of the element", "[lua]") {
    const std::string e = error_of("c1.lua",
                                   "w:body{ name = 'light', mass = -2, inertia = {1, 1, 1} }\n"
                                   "w:joint{ name = 'j', type = 'revolute', parent = w.world, child = b, axis = {0, 0, 0} }\n"
                                   "w:run{ duration = 1 }\n");
    CHECK_THAT(e, Contains("c1.lua:4: body 'light': mass must be positive and finite, got -2"));
    CHECK_THAT(e, Contains("c1.lua:5: joint 'j': field 'axis' must be a nonzero finite direction"));
    const std::string o = error_of("c2.lua", "w:output{ file = 'x.csv', channels = { 'ghost.position' } }\nw:run{ steps = 1 }\n");
    CHECK_THAT(o, Contains("c2.lua:4: output: channel 'ghost.position': no body named 'ghost'"));
    CHECK_THAT(error_of("c3.lua", "w:output{ file = 'x.csv', channels = { 'time', 'speed' } }\n"),
               Contains("c3.lua:4: output: unknown channel 'speed'"));
}

TEST_CASE("w:coupling{}: a geared pair from Lua, its force, and its errors with the script line", "[lua][couplings]") {
    // The bob hinged at the world origin and a rotor on the same axis turning 4 times as fast.
    const char* pair =
        "w:body{ name = 'rotor', mass = 0.1, inertia = {0.01, 0.01, 0.01} }\n"                                    // 4
        "w:joint{ name = 'j', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0}, axis = {0, 1, 0} }\n"  // 5
        "w:joint{ name = 'm', type = 'revolute', parent = w.world, child = 'rotor', anchor = {0, 0, 0}, axis = {0, 1, 0} }\n";  // 6
    const auto ok = run(write_script("cp0.lua", std::string(kHeader) + pair +
                                                    "w:coupling{ name = 'gear', joint = 'm', leader = 'j', ratio = 4 }\n"
                                                    "local worst = 0\n"
                                                    "for i = 1, 100 do w:step(); worst = math.max(worst, math.abs(w:coord('m') - 4 * w:coord('j'))) end\n"
                                                    "assert(worst < 1e-12, 'ratio error ' .. worst)\n"
                                                    "-- the rotor's torque: its inertia times its acceleration, against the fall\n"
                                                    "assert(w:coupling_force('gear') ~= 0, 'the gear carries torque')\n"
                                                    "assert(w:coord('j') > 0.1, 'the bob falls ' .. w:coord('j'))\n"));
    INFO(ok.error);
    CHECK(ok.exit_code == 0);
    // lower/upper: a range on m − j instead of the equality: the rotor, free on its bearing, stays within
    // 0.05 rad of the falling bob's angle (it is dragged along).
    const auto band = run(write_script("cp_range.lua", std::string(kHeader) + pair +
                                                           "w:coupling{ name = 'band', joint = 'm', leader = 'j', lower = -0.05, upper = 0.05 }\n"
                                                           "local lo, hi = 0, 0\n"
                                                           "for i = 1, 100 do w:step(); local v = w:coord('m') - w:coord('j')\n"
                                                           "  lo = math.min(lo, v); hi = math.max(hi, v) end\n"
                                                           "assert(lo >= -0.05 - 1e-9 and hi <= 0.05 + 1e-9, 'range ' .. lo .. ' ' .. hi)\n"
                                                           "assert(lo < -0.05 + 1e-6, 'the rotor lags onto its side: ' .. lo)\n"));
    INFO(band.error);
    CHECK(band.exit_code == 0);
    CHECK_THAT(error_of("cp1.lua", std::string(pair) + "w:coupling{ joint = 'm', leader = 'nope' }\n"),
               Contains("cp1.lua:7: coupling: field 'leader': no joint named 'nope'"));
    CHECK_THAT(error_of("cp2.lua", std::string(pair) + "w:coupling{ joint = 'm' }\n"),
               Contains("cp2.lua:7: coupling: field 'leader' is required (the joint it follows)"));
    CHECK_THAT(error_of("cp3.lua", std::string(pair) + "w:coupling{ joint = 'm', leader = 'j', gear = 3 }\n"),
               Contains("cp3.lua:7: coupling: unknown field 'gear' (fields: name, joint, leader, ratio, offset, dof, leader_dof, lower, upper, more)"));
    // more: further leaders — a differential m = 4 j + 2 m2 with a second free rotor m2.
    const std::string rotor2 = std::string(pair) +
                               "w:body{ name = 'rotor2', mass = 0.1, inertia = {0.01, 0.01, 0.01} }\n"
                               "w:joint{ name = 'm2', type = 'revolute', parent = w.world, child = 'rotor2', anchor = {0, 0, 0}, axis = {0, 1, 0} }\n";
    const auto diff = run(write_script("cp_more.lua", std::string(kHeader) + rotor2 +
                                                          "w:coupling{ name = 'diff', joint = 'm', leader = 'j', ratio = 4, more = { {joint = 'm2', ratio = 2} } }\n"
                                                          "local worst = 0\n"
                                                          "for i = 1, 100 do w:step(); worst = math.max(worst, math.abs(w:coord('m') - 4 * w:coord('j') - 2 * w:coord('m2'))) end\n"
                                                          "assert(worst < 1e-12, 'relation error ' .. worst)\n"
                                                          "assert(math.abs(w:coord('m2')) > 1e-3, 'the second rotor is dragged along ' .. w:coord('m2'))\n"));
    INFO(diff.error);
    CHECK(diff.exit_code == 0);
    CHECK_THAT(error_of("cp_more1.lua", rotor2 + "w:coupling{ joint = 'm', leader = 'j', more = { {joint = 'm2'} } }\n"),
               Contains("cp_more1.lua:9: coupling 'm/coupling' more[1]: field 'ratio' is required"));
    CHECK_THAT(error_of("cp_more2.lua", rotor2 + "w:coupling{ joint = 'm', leader = 'j', more = { {joint = 'm2', ratio = 1, gear = 2} } }\n"),
               Contains("cp_more2.lua:9: coupling 'm/coupling' more[1]: unknown field 'gear' (fields: joint, ratio, dof)"));
    CHECK_THAT(error_of("cp_more3.lua", rotor2 + "w:coupling{ joint = 'm', leader = 'j', more = 'm2' }\n"),
               Contains("cp_more3.lua:9: coupling 'm/coupling': field 'more'"));
    CHECK_THAT(error_of("cp4.lua", std::string(pair) + "w:coupling{ joint = 'm', leader = 'j', ratio = 0 }\nw:run{ steps = 1 }\n"),
               Contains("cp4.lua:7: coupling 'm/coupling': ratio must be finite and nonzero, got 0"));
    CHECK_THAT(error_of("cp5.lua", std::string(pair) + "w:coupling{ joint = 'm', leader = 'j', dof = 2 }\nw:run{ steps = 1 }\n"),
               Contains("cp5.lua:7: coupling 'm/coupling': joint 'm' has 1 coordinate, got coordinate index 1 (0-based)"));
    CHECK_THAT(error_of("cp6.lua", std::string(pair) + "w:coupling{ name = 'g', joint = 'm', leader = 'j' }\n"
                                                       "w:run{ steps = 1 }\nprint(w:coupling_force('h'))\n"),
               Contains("cp6.lua:9: coupling_force: no coupling named 'h' (couplings: g)"));
}

TEST_CASE("errors in callbacks, building after compiling, and --set parameters", "[lua]") {
    CHECK_THAT(error_of("b1.lua",
                        "w:joint{ name = 'j', type = 'spherical', parent = w.world, child = b, anchor = {0, 0, 0} }\n"
                        "w:on_step(function(w) local x = nil; return x.y end)\n"
                        "w:run{ steps = 3 }\n"),
               Contains("b1.lua:5:") && Contains("nil"));
    CHECK_THAT(error_of("b2.lua", "w:step()\nw:body{ name = 'late', mass = 1, inertia = {1, 1, 1} }\n"),
               Contains("b2.lua:5: body: the world is already compiled"));
    const auto r = run(write_script("p1.lua", "local noether = require('noether')\nlocal P = noether.params{ n = 3 }\n"),
                       {{"m", "4"}});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.error, Contains("--set m=4: the script has no parameter 'm' (its parameters: n)"));
    // Several parameters: listed sorted (the order of a Lua table changed from run to run).
    const auto rs = run(write_script("p1s.lua", "local noether = require('noether')\n"
                                                "local P = noether.params{ zeta = 1, alpha = 2, mid = 3, beta = 4 }\n"),
                        {{"m", "4"}});
    CHECK_THAT(rs.error, Contains("(its parameters: alpha, beta, mid, zeta)"));
    const auto r2 = run(write_script("p2.lua", "local noether = require('noether')\nlocal P = noether.params{ n = 3 }\n"),
                        {{"n", "three"}});
    CHECK_THAT(r2.error, Contains("--set n=three: parameter 'n' must be a number"));
    const auto r3 = run(write_script("p3.lua", std::string(kHeader)), {{"dt", "0.5"}});
    CHECK(r3.exit_code == 2);
    CHECK_THAT(r3.error, Contains("--set dt=0.5: the script never reads it"));
}

TEST_CASE("outputs: CSV with a header, sampled every k steps, renamed only when complete", "[lua]") {
    const std::string csv = std::string(NOETHER_BINARY_DIR) + "/tests/out_every.csv";
    std::remove(csv.c_str());
    const auto r = run(write_script("o1.lua", std::string(kHeader) +
                                                  "w:joint{ name = 'j', type = 'spherical', parent = w.world, child = b, anchor = {0, 0, 0} }\n"
                                                  "w:output{ file = '" + csv + "', every = 5, channels = { 'time', 'bob.position', 'j.coord' } }\n"
                                                  "w:run{ steps = 20 }\n"));
    REQUIRE(r.exit_code == 0);
    const auto c = read_csv(csv);
    CHECK(c.header == std::vector<std::string>{"time", "bob.position.x", "bob.position.y", "bob.position.z", "j.coord.rx",
                                               "j.coord.ry", "j.coord.rz"});
    REQUIRE(c.rows.size() == 5);  // t = 0, 0.05, …, 0.2
    CHECK(c.rows[4][0] == Approx(0.2));
    // A failed run leaves the file under its temporary name and says so.
    const std::string bad = std::string(NOETHER_BINARY_DIR) + "/tests/out_failed.csv";
    std::remove(bad.c_str());
    std::remove((bad + ".part").c_str());
    const auto f = run(write_script("o2.lua",
                                    "local noether = require('noether')\n"
                                    "local w = noether.world{ dt = 1.5, max_substeps = 1 }\n"
                                    "local b = w:body{ name = 'bob', mass = 1, inertia = {0.1, 0.1, 0.1}, position = {1, 0, 0} }\n"
                                    "w:joint{ name = 'j', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0}, axis = {0, 1, 0} }\n"
                                    "w:output{ file = '" + bad + "', channels = { 'time' } }\n"
                                    "w:run{ steps = 50 }\n"));
    CHECK(f.exit_code == 1);
    REQUIRE(f.worlds.size() == 1);
    CHECK(f.worlds[0].failed_steps == 1);
    FILE* final_file = std::fopen(bad.c_str(), "r");
    CHECK(final_file == nullptr);
    FILE* part = std::fopen((bad + ".part").c_str(), "r");
    CHECK(part != nullptr);
    if (part) std::fclose(part);
    bool said = false;
    for (const auto& w : f.worlds[0].warnings) said |= w.find("is incomplete") != std::string::npos;
    CHECK(said);
}

TEST_CASE("manual stepping, monitors, save and restore from Lua are exact", "[lua]") {
    const auto r = run(write_script("s1.lua", std::string(kHeader) +
        "w:joint{ name = 'j', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0}, axis = {0, 1, 0} }\n"
        "assert(w:step(50))\n"
        "local snap = w:save()\n"
        "local t = w:time()\n"
        "w:step(50)\n"
        "local a = w:position(b)\n"
        "w:restore(snap)\n"
        "assert(w:time() == t, 'time restored')\n"
        "w:step(50)\n"
        "local c = w:position(b)\n"
        "assert(a[1] == c[1] and a[2] == c[2] and a[3] == c[3], 'bit-identical after restore')\n"
        "local m = w:monitors()\n"
        "assert(m.violation < 1e-12 and math.abs(m.energy) < 0.01, 'monitors')\n"
        "assert(math.abs(w:coord('j')) > 0.1, 'the pendulum moved')\n"));
    INFO(r.error);
    CHECK(r.exit_code == 0);
}

TEST_CASE("w:linearize() from Lua equals central differences of w:step() (vi-galerkin)", "[lua][linearize]") {
    // The double pendulum with a damper; x = (q, q̇) in w:dofs() order, u = the joint torques.
    const auto r = run(write_script("lin.lua", R"(local noether = require('noether')
local w = noether.world{ dt = 0.01, integrator = 'vi-galerkin' }
local I = noether.inertia.box(1, 1, 0.1, 0.1)
local a = w:body{ name = 'a', mass = 1, inertia = I, position = {0.5, 0, 0} }
local b = w:body{ name = 'b', mass = 1, inertia = I, position = {1.5, 0, 0} }
w:joint{ name = 'j1', type = 'revolute', parent = w.world, child = a, anchor = {0, 0, 0}, axis = {0, 1, 0}, damping = 0.2 }
w:joint{ name = 'j2', type = 'revolute', parent = a, child = b, anchor = {1, 0, 0}, axis = {0, 1, 0} }
local names = w:dofs()
assert(#names == 2 and names[1] == 'j1' and names[2] == 'j2', 'dofs')
local x0, u0 = {0.4, -0.3, 1.1, -0.6}, {0.3, -0.1}
local function put(x, u)
  w:set_joint_state({x[1], x[2]}, {x[3], x[4]})
  w:set_actuation('j1', u[1]); w:set_actuation('j2', u[2])
end
local function next_state(x, u)
  put(x, u); assert(w:step(1))
  local q, qd = w:joint_state()
  return {q[1], q[2], qd[1], qd[2]}
end
put(x0, u0)
local L = w:linearize()
assert(L.n == 2 and #L.A == 4 and #L.A[1] == 4 and #L.B == 4 and #L.B[1] == 2, 'shapes')
assert(w:time() == 0, 'linearize does not step')
for k = 1, 4 do assert(math.abs(L.x[k] - x0[k]) < 1e-12, 'x') end
local x1 = next_state(x0, u0)
for k = 1, 4 do assert(math.abs(L.x_next[k] - x1[k]) < 1e-12, 'x_next') end
local e, worst, scale = 1e-4, 0, 0
for c = 1, 6 do
  local xp, xm, up, um = {table.unpack(x0)}, {table.unpack(x0)}, {table.unpack(u0)}, {table.unpack(u0)}
  if c <= 4 then xp[c] = xp[c] + e; xm[c] = xm[c] - e else up[c - 4] = up[c - 4] + e; um[c - 4] = um[c - 4] - e end
  local fp, fm = next_state(xp, up), next_state(xm, um)
  for r = 1, 4 do
    local an = c <= 4 and L.A[r][c] or L.B[r][c - 4]
    worst = math.max(worst, math.abs((fp[r] - fm[r]) / (2 * e) - an))
    scale = math.max(scale, math.abs(an))
  end
end
noether.record('worst', worst)
noether.record('scale', scale)
)"));
    INFO(r.error);
    REQUIRE(r.exit_code == 0);
    double worst = -1, scale = 0;
    for (const auto& x : r.records) {
        if (x.name == "worst") worst = std::stod(x.text);
        if (x.name == "scale") scale = std::stod(x.text);
    }
    INFO("max |[A B]| = " << scale << ", max |analytic − central differences| = " << worst);
    CHECK(scale > 0.5);
    CHECK(worst >= 0);
    CHECK(worst < 1e-6 * scale);
    // Misuse names the script line and the rule.
    CHECK_THAT(error_of("lin_bad1.lua", "w:joint{ name = 'j', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0}, axis = {0, 1, 0} }\n"
                                        "w:set_joint_state({1, 2}, {0})\n"),
               Contains("lin_bad1.lua:5: set_joint_state: q must have 1 values (one per joint DOF, in w:dofs() order), got 2"));
    CHECK_THAT(error_of("lin_bad2.lua", "w:joint{ name = 'j', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0}, axis = {0, 1, 0} }\n"
                                        "w:linearize()\n"),
               Contains("lin_bad2.lua:5: linearize: integrator 'vi-maximal' has no linearisation"));
}

TEST_CASE("the noether command: exit codes 0, 1, 2 and the summary JSON keys", "[lua][cli]") {
    const std::string ex = std::string(NOETHER_SOURCE_DIR) + "/scripts/examples/";
    const std::string json = std::string(NOETHER_BINARY_DIR) + "/tests/summary.json";
    CHECK(cli("run " + ex + "pendulum.lua --set duration=1 --quiet --summary-json " + json) == 0);
    std::ifstream f(json);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (const char* key : {"bodies", "joints", "loop_joints", "dof", "integrator", "solver", "dt", "steps", "sim_time",
                            "wall_s", "us_per_step", "energy_initial", "energy_final", "energy_max_abs_dev",
                            "energy_max_rel_dev", "max_violation", "newton_mean", "newton_max", "subdivided_steps",
                            "failed_steps", "floor_steps", "warnings"})
        CHECK_THAT(text, Contains(std::string("\"") + key + "\": "));
    CHECK_THAT(text, Contains("\"energy_max_rel_dev\": null"));  // E0 = 0
    CHECK_THAT(text, Contains("\"steps\": 100"));
    const std::string failing = write_script("fails.lua",
                                             "local noether = require('noether')\n"
                                             "local w = noether.world{ dt = 1.5, max_substeps = 1 }\n"
                                             "local b = w:body{ name = 'bob', mass = 1, inertia = {0.1, 0.1, 0.1}, position = {1, 0, 0} }\n"
                                             "w:joint{ name = 'j', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0}, axis = {0, 1, 0} }\n"
                                             "return w\n");
    CHECK(cli("run " + failing + " --set duration=60 --quiet") == 1);  // a step far too large fails
    CHECK(cli("run " + ex + "pendulum.lua --set nosuch=1") == 2);
    CHECK(cli("run /no/such/script.lua") == 2);
    CHECK(cli("check " + ex + "fourbar_chain.lua") == 0);
    CHECK(cli("frobnicate") == 2);
}

TEST_CASE("a script that returns its world is run by the host for --set duration", "[lua]") {
    const auto r = run(std::string(NOETHER_SOURCE_DIR) + "/scripts/examples/pendulum.lua", {{"duration", "0.5"}});
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.worlds.size() == 1);
    CHECK(r.worlds[0].steps == 50);
    CHECK(r.worlds[0].sim_time == Approx(0.5));
}

TEST_CASE("the C API runs the same script with the same result", "[lua][c-api]") {
    const std::string path = std::string(NOETHER_SOURCE_DIR) + "/scripts/examples/double_pendulum.lua";
    const char* set[] = {"duration=2"};
    char* json = nullptr;
    REQUIRE(noether_run_script(path.c_str(), 1, set, &json) == 0);
    REQUIRE(json);
    const std::string from_c = json;
    noether_free(json);
    const auto r = run(path, {{"duration", "2"}});
    REQUIRE(r.exit_code == 0);
    // Same energy trajectory (wall time differs).
    char buf[64];
    std::snprintf(buf, sizeof buf, "\"energy_final\": %.10g", r.worlds[0].energy_final);
    CHECK_THAT(from_c, Contains(buf));
    CHECK(noether_run_script("/no/such.lua", 0, nullptr, nullptr) == 2);
    CHECK_THAT(std::string(noether_script_error()), Contains("cannot open"));
}

TEST_CASE("a scene loaded by a C host runs its Lua controller at the host's steps", "[lua][c-api]") {
    // Before: noether_script_load dropped the scene's w:on_step controller and left a note in
    // noether_script_error() of a call that succeeded.
    const std::string dir = std::string(NOETHER_BINARY_DIR) + "/tests/";
    const std::string script = write_script(
        "c_host_pd.lua", std::string(scenes::kPendulum) +
                             "local P = noether.params{ csv = 'x.csv' }\n"
                             "w:on_step(function(w) w:set_actuation('j', -30 * (w:coord('j') - 0.4) - 3 * w:rate('j')) end)\n"
                             "w:output{ file = P.csv, every = 5, channels = { 'time', 'j.coord', 'j.rate' } }\n"
                             "return w\n");
    auto slurp = [](const std::string& path) {
        std::ifstream f(path);
        return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    };
    const std::string c_csv = dir + "c_host_pd_c.csv", cli_csv = dir + "c_host_pd_cli.csv";
    const std::string set_c = "csv=" + c_csv;
    const char* set[] = {set_c.c_str()};
    noether_run* run = noether_script_load(script.c_str(), 1, set, 0);
    REQUIRE(run);
    CHECK(std::string(noether_script_error()).empty());
    REQUIRE(noether_run_steps(run, 50) == NOETHER_OK);
    REQUIRE(noether_run_duration(run, 1.0) == NOETHER_OK);
    REQUIRE(noether_run_finish(run) == NOETHER_OK);
    noether_run_free(run);
    REQUIRE(cli("run " + script + " --set duration=1.5 --set csv=" + cli_csv + " --quiet") == 0);
    const std::string a = slurp(c_csv), b = slurp(cli_csv);
    CHECK(a.size() > 500);
    CHECK(a == b);  // byte for byte: the controller ran before every step, as under noether run
    // Held near 0.4 rad by the controller (it would swing down to -pi/2 and back without it).
    const scenes::Csv csv = scenes::read_csv(c_csv);
    CHECK(std::fabs(csv.rows.back()[1] - 0.4) < 0.3);

    // A Lua error in a callback fails the step call with the script's line; that step is not taken.
    const std::string bad = write_script("c_host_bad.lua", std::string(scenes::kPendulum) +
                                                               "w:on_step(function(w) if w:time() > 0.025 then error('gave up') end end)\n"
                                                               "return w\n");
    noether_run* r2 = noether_script_load(bad.c_str(), 0, nullptr, 0);
    REQUIRE(r2);
    CHECK(noether_run_steps(r2, 10) == NOETHER_BAD_INPUT);
    CHECK_THAT(std::string(noether_last_error()), Contains("c_host_bad.lua:5: gave up"));
    CHECK(noether_time(noether_run_data(r2)) == Approx(0.03).margin(1e-12));
    noether_run_free(r2);
}

TEST_CASE("the URDF importer's suggestions are worded in each host's own syntax", "[lua][c-api][cli][urdf]") {
    // Before: `noether import --base floating` of a robot with a massless root answered
    // `import with base = "fixed"` (Lua syntax) where the flag is `--base fixed`; so did C.
    const std::string urdf = write_script("massless_root.urdf", R"(<robot name="r">
  <link name="base"/>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/><limit lower="0.5" upper="1" effort="1" velocity="1"/></joint>
</robot>
)");
    const std::string cli_text = cli_err("import " + urdf + " --base floating");
    CHECK_THAT(cli_text, Contains("cannot be a floating base; use --base fixed"));
    CHECK_THAT(cli_text, !Contains("import setting") && !Contains("base = "));
    const std::string lua_text =
        error_of("massless_root.lua", "w:urdf{ file = '" + urdf + "', base = 'floating' }\n");
    CHECK_THAT(lua_text, Contains("cannot be a floating base; use w:urdf{ base = \"fixed\" }"));
    noether_spec* spec = noether_spec_new();
    CHECK(noether_spec_import_urdf(spec, urdf.c_str(), 0, nullptr) == NOETHER_BAD_INPUT);
    CHECK_THAT(std::string(noether_last_error()), Contains("cannot be a floating base; use fixed_base = 1"));
    noether_spec_free(spec);
    // A warning: the zero position is outside the limits [0.5, 1] (the joint starts at 0.5).
    const auto r = run(write_script("limit_start.lua", "local noether = require('noether')\n"
                                                       "local w = noether.world{ dt = 0.01 }\n"
                                                       "w:urdf{ file = '" + urdf + "', base = 'fixed' }\n"
                                                       "w:run{ steps = 1 }\n"));
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.worlds.size() == 1);
    std::string warnings;
    for (const std::string& x : r.worlds[0].warnings) warnings += x + "\n";
    CHECK_THAT(warnings, Contains("(give w:urdf{ positions = { j = ... } } inside them, or w:urdf{ limits = false })"));
}

TEST_CASE("the MJCF importer: w:mjcf, noether import and the C API, each suggesting in its own syntax", "[lua][c-api][cli][mjcf]") {
    const std::string xml = write_script("armature_arm.xml", R"(<mujoco model="arm">
  <option timestep="0.002"/>
  <worldbody>
    <body name="upper">
      <joint name="shoulder" axis="0 1 0" armature="0.05" range="-90 90"/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.03"/>
      <body name="lower" pos="0.4 0 0">
        <joint name="elbow" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.025"/>
        <site name="hand" pos="0.3 0 0"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="elbow" kp="20"/>
  </actuator>
  <keyframe>
    <key name="bent" qpos="0.3 -0.5"/>
  </keyframe>
</mujoco>
)");
    // A ball joint with armature is refused, suggesting drop_armature in each host's syntax.
    const std::string ball = write_script("ball_armature.xml", "<mujoco>\n<worldbody>\n<body name=\"b\">\n"
                                                               "<joint name=\"j\" type=\"ball\" armature=\"0.05\"/>\n"
                                                               "<geom size=\"0.1\" pos=\"0 0 -1\"/>\n</body>\n</worldbody>\n</mujoco>\n");
    CHECK_THAT(error_of("mjcf_arm.lua", "w:mjcf{ file = '" + ball + "' }\n"),
               Contains("mjcf_arm.lua:4: mjcf: ") && Contains("ball_armature.xml:4: <joint name='j'>: armature 0.05 on a ball joint") &&
                   Contains("w:mjcf{ drop_armature = true }"));
    const std::string cli_text = cli_err("import " + ball);
    CHECK_THAT(cli_text, Contains("ball_armature.xml:4") && Contains("--drop-armature"));
    noether_spec* spec = noether_spec_new();
    CHECK(noether_spec_import_mjcf(spec, ball.c_str(), nullptr, 0, nullptr) == NOETHER_BAD_INPUT);
    CHECK_THAT(std::string(noether_last_error()), Contains("ball_armature.xml:4") && Contains("drop_armature = 1"));
    REQUIRE(noether_spec_import_mjcf(spec, ball.c_str(), nullptr, 1, "r/") == NOETHER_OK);
    REQUIRE(noether_spec_import_mjcf(spec, xml.c_str(), "bent", 0, "a/") == NOETHER_OK);  // hinge armature: kept
    noether_spec_free(spec);
    // A start outside a range suggests the keyframe, in Lua's and the command line's words.
    const auto rk = run(write_script("mjcf_key.lua", "local noether = require('noether')\n"
                                                    "local w = noether.world{ dt = 0.002 }\n"
                                                    "w:mjcf{ file = '" + write_script("outside.xml", "<mujoco>\n<worldbody>\n<body name=\"b\">\n"
                                                    "<joint name=\"j\" range=\"10 20\"/>\n<geom size=\"0.1\" pos=\"0 0 -1\"/>\n"
                                                    "</body>\n</worldbody>\n<keyframe><key name=\"up\" qpos=\"0.2\"/></keyframe>\n</mujoco>\n") +
                                                    "' }\nw:run{ steps = 1 }\n"));
    REQUIRE(rk.exit_code == 0);
    std::string kw;
    for (const std::string& x : rk.worlds[0].warnings) kw += x + "\n";
    CHECK_THAT(kw, Contains("its start 0 (qpos0) is outside its range") && Contains("w:mjcf{ keyframe = \"up\" }"));
    // The result table: bodies and joints by MJCF name, sites as frames, the keyframe, the servo.
    const auto r = run(write_script("mjcf_table.lua", "local noether = require('noether')\n"
                                                      "local w = noether.world{ dt = 0.002 }\n"
                                                      "local m = w:mjcf{ file = '" + xml + "', keyframe = 'bent', drop_armature = true }\n"
                                                      "assert(m.nq == 2 and m.nv == 2 and m.servos == 1 and m.timestep == 0.002)\n"
                                                      "assert(m.frames.hand.body == 'lower' and m.keyframes[1] == 'bent')\n"
                                                      "assert(m.bodies.upper and m.joints.elbow)\n"
                                                      "assert(math.abs(w:coord('shoulder') - 0.3) < 1e-12)\n"
                                                      "w:run{ steps = 10 }\n"));
    INFO(r.error);
    REQUIRE(r.exit_code == 0);
    std::string warnings;
    for (const std::string& x : r.worlds[0].warnings) warnings += x + "\n";
    CHECK_THAT(warnings, Contains("armature left out (w:mjcf{ drop_armature = true })"));
    // noether import steps at the file's timestep and starts from the keyframe.
    const std::string outf = std::string(NOETHER_BINARY_DIR) + "/tests/mjcf_import_out.txt";
    CHECK(cli("import " + xml + " --keyframe bent --drop-armature --simulate 0.1 --summary-json " + outf + ".json") == 0);
    CHECK(std::system((std::string(NOETHER_BINARY_DIR) + "/bin/noether import " + xml +
                       " --keyframe bent --drop-armature --simulate 0.1 > " + outf).c_str()) == 0);
    std::ifstream of(outf);
    const std::string out((std::istreambuf_iterator<char>(of)), std::istreambuf_iterator<char>());
    CHECK_THAT(out, Contains("dt 0.002 s") && Contains("started from 'bent'") && Contains("simulated 0.1 s in 50 steps"));
}

TEST_CASE("noether check writes no output file", "[lua][cli]") {
    // Before: `noether check` of a scene with w:output replaced the file with a header and the
    // initial row (the results of an earlier run were lost).
    const std::string dir = std::string(NOETHER_BINARY_DIR) + "/tests/";
    const std::string csv = dir + "check_keeps.csv";
    {
        std::ofstream f(csv);
        f << "earlier results\n";
    }
    const std::string script = write_script("check_keeps.lua", std::string(scenes::kPendulum) +
                                                                   "w:output{ file = '" + csv + "', channels = { 'time', 'j.coord' } }\n"
                                                                   "return w\n");
    CHECK(cli("check " + script) == 0);
    std::ifstream f(csv);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK(text == "earlier results\n");
    std::ifstream part(csv + ".part");
    CHECK(!part.good());
    // The channels are still checked.
    const std::string bad = write_script("check_bad_channel.lua", std::string(scenes::kPendulum) +
                                                                      "w:output{ file = '" + csv + "', channels = { 'j.nope' } }\n"
                                                                      "return w\n");
    CHECK(cli("check " + bad) == 2);
}

TEST_CASE("building and compiling a chain scales linearly: 10,000 and 100,000 links", "[lua][scaling]") {
    // Issue 16, item 3: each w:body{} / w:joint{} scanned every earlier element for duplicate
    // names and known bodies, and the tree view grouped bodies by link with a scan per link:
    // O(n²), 86 s for `noether check` on the 100,000-link chain. Asserted as a ratio of two
    // sizes measured in one process (linear: ~10, quadratic: ~100), not as a time.
    const std::string script = write_script("scaling_chain.lua",
                                            "local noether = require('noether')\n"
                                            "local P = noether.params { n = 10 }\n"
                                            "local w = noether.world { dt = 0.01 }\n"
                                            "local prev = w.world\n"
                                            "for i = 1, P.n do\n"
                                            "  local b = w:body { name = 'l' .. i, mass = 1, inertia = { 0.1, 0.1, 0.1 },\n"
                                            "                     position = { i - 0.5, 0, 0 } }\n"
                                            "  w:joint { name = 'j' .. i, type = 'revolute', parent = prev, child = b,\n"
                                            "            anchor = { i - 1, 0, 0 }, axis = { 0, 1, 0 } }\n"
                                            "  prev = b\n"
                                            "end\n"
                                            "w:compile()\n"
                                            "return w\n");
    const auto seconds = [&](int n) {
        const auto t0 = std::chrono::steady_clock::now();
        const auto r = run(script, {{"n", std::to_string(n)}, {"duration", "0"}});
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        REQUIRE(r.exit_code == 0);
        REQUIRE(r.worlds.size() == 1);
        CHECK(r.worlds[0].bodies == n);
        return s;
    };
    double small = HUGE_VAL;
    for (int k = 0; k < 3; ++k) small = std::min(small, seconds(10000));  // the fastest of three
    const double large = seconds(100000);
    INFO("10,000 links: " << small << " s, 100,000 links: " << large << " s, ratio " << large / small);
    CHECK(large / small < 40);
}

TEST_CASE("bad contacts and limits: file:line, the element, the rule and the value (docs/contact.md)", "[lua][contact]") {
    // bob hangs at (1, 0, 0) (header): the ground z >= 0 is 0 below its centre.
    CHECK_THAT(error_of("k1.lua", "w:contact{ body = b, shape = 'sphere', radius = 0.1, position = {0, 0, 1}, mu = -0.2 }\n"
                                  "w:run{ steps = 1 }\n"),
               Contains("k1.lua:4: contact 'bob/contact1': friction coefficient mu must be non-negative and finite, got -0.2"));
    CHECK_THAT(error_of("k2.lua", "w:contact{ body = b, shape = 'sphere', radius = 0, position = {0, 0, 1} }\nw:run{ steps = 1 }\n"),
               Contains("k2.lua:4: contact 'bob/contact1': a sphere needs a radius > 0, got 0"));
    CHECK_THAT(error_of("k3.lua", "w:contact{ body = b, normal = {0, 0, 0}, offset = -1 }\nw:run{ steps = 1 }\n"),
               Contains("k3.lua:4: contact 'bob/contact1': the half-space normal must not be zero, got (0, 0, 0)"));
    CHECK_THAT(error_of("k4.lua", "w:contact{ body = 'ghost' }\n"),
               Contains("k4.lua:4: contact on body 'ghost': field 'body': no body named 'ghost'"));
    CHECK_THAT(error_of("k5.lua", "w:joint{ name = 'h', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0},"
                                  " axis = {0, 1, 0}, lower = 0.5, upper = -0.5 }\nw:run{ steps = 1 }\n"),
               Contains("k5.lua:4: joint 'h': limits must satisfy lower <= upper, got [0.5, -0.5]"));
    CHECK_THAT(error_of("k6.lua", "w:contact{ name = 'foot', body = b, shape = 'sphere', radius = 0.1, position = {0, 0, -0.05} }\n"
                                  "w:run{ steps = 1 }\n"),
               Contains("k6.lua:4: contact 'foot': starts in penetration: foot is 0.15 m inside (gap -0.15 m)"));
    CHECK_THAT(error_of("k7.lua", "w:joint{ name = 'h', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0},"
                                  " axis = {0, 1, 0}, lower = 0.2, upper = 0.5 }\nw:run{ steps = 1 }\n"),
               Contains("k7.lua:4: joint 'h': starts outside its limits: coordinate 0 not in [0.2, 0.5]"));
    CHECK_THAT(error_of("k8.lua", "w:joint{ name = 'ball', type = 'spherical', parent = w.world, child = b, anchor = {0, 0, 0},"
                                  " lower = -1, upper = 1 }\nw:run{ steps = 1 }\n"),
               Contains("k8.lua:4: joint 'ball': limits are enforced on joints of one degree of freedom"));
    CHECK_THAT(error_of("k9.lua", "w:contact{ body = b, shape = 'cone' }\n"),
               Contains("k9.lua:4: contact on body 'bob': field 'shape' must be \"point\", \"sphere\", \"capsule\" or \"box\", got \"cone\""));
    // An integrator that cannot take them refuses the scene, naming the element and who can.
    const auto r = run(write_script("k10.lua", "local noether = require('noether')\n"
                                               "local w = noether.world{ dt = 0.01, integrator = 'rk4' }\n"
                                               "local b = w:body{ name = 'bob', mass = 1, inertia = {0.1, 0.1, 0.1}, position = {0, 0, 1} }\n"
                                               "w:contact{ body = b, shape = 'sphere', radius = 0.1, mu = 0.5 }\n"
                                               "w:run{ steps = 1 }\n"));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.error, Contains("k10.lua:4: contact 'bob/contact1': integrator 'rk4' does not take contacts (integrators that do: vi-maximal)"));
}

TEST_CASE("queries from Lua: Jacobians, mass matrix and dynamics at the current state (docs/queries.md)", "[lua][queries]") {
    const auto r = run(write_script("q1.lua", R"(
local noether = require('noether')
local w = noether.world{ dt = 0.01 }
local box = noether.inertia.box(1, 1, 0.1, 0.1)
local a = w:body{ name = 'a', mass = 1, inertia = box, position = {0.5, 0, 0} }
local b = w:body{ name = 'b', mass = 1, inertia = box, position = {1.5, 0, 0} }
w:joint{ name = 'j1', type = 'revolute', parent = w.world, child = a, anchor = {0, 0, 0}, axis = {0, 1, 0} }
w:joint{ name = 'j2', type = 'revolute', parent = a, child = b, anchor = {1, 0, 0}, axis = {0, 1, 0} }
w:step(5)
local J = w:jacobian(b)
assert(#J == 6 and #J[1] == 2, 'a 6 x 2 Jacobian')
local M = w:mass_matrix()
assert(math.abs(M[1][2] - M[2][1]) < 1e-14, 'symmetric')
local qdd = w:forward_dynamics({0.3, -0.2})
local tau = w:inverse_dynamics(qdd)
assert(math.abs(tau[1] - 0.3) < 1e-10 and math.abs(tau[2] + 0.2) < 1e-10, 'inverse undoes forward')
-- The tip's Jacobian times the joint rates is the tip's velocity (both hinges about y).
local Jp = w:jacobian(b, {0.5, 0, 0})
local q, qd = w:joint_state()
local v = { Jp[1][1] * qd[1] + Jp[1][2] * qd[2], Jp[3][1] * qd[1] + Jp[3][2] * qd[2] }
assert(math.abs(Jp[2][1]) < 1e-14, 'no motion along y')
local g = w:gravity_forces()
local c = w:center_of_mass()
local Jc = w:com_jacobian()
assert(#Jc == 3 and #g == 2 and #c == 3)
w:set_joint_state({0.4, -0.3}, {0.2, 0.1})  -- the bodies' twists from q̇ (after steps they are the step's)
local p, Lm = w:momentum()
local mon = w:monitors()
for a = 1, 3 do  -- (vi-maximal's monitor is its discrete momentum: O((h w)^2) from the continuous one)
  assert(math.abs(p[a] - mon.momentum[a]) < 1e-12 and math.abs(Lm[a] - mon.angular_momentum[a]) < 1e-6, 'momenta = monitors')
end
assert(math.abs(Lm[2]) > 0.01, 'it moves')
print(string.format('ok %.6f %.6f', M[1][1], tau[1]))
)"));
    INFO(r.error);
    CHECK(r.exit_code == 0);
    CHECK_THAT(error_of("q2.lua", "w:joint{ name = 'h', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0},"
                                  " axis = {0, 1, 0} }\nw:inverse_dynamics({1, 2})\n"),
               Contains("q2.lua:5: inverse_dynamics: qdd must have 1 numbers (one per joint coordinate), got 2"));
    CHECK_THAT(error_of("q3.lua", "w:jacobian(b)\n"), Contains("q3.lua:4: jacobian: the kinematics queries take trees of 1-DOF joints "
                                                              "on a fixed base; body 'bob' floats free"));
}

TEST_CASE("servos from Lua: declaration and input errors name the line, the joint and the value", "[lua][servos]") {
    const std::string hinge = "w:joint{ name = 'hinge', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0}, axis = {0, 1, 0} }\n";
    CHECK_THAT(error_of("s1.lua", hinge + "w:servo{ joint = 'hinge', kp = -1 }\nw:run{ steps = 1 }\n"),
               Contains("s1.lua:5: joint 'hinge': position servo: kp must be positive and finite, got -1"));
    CHECK_THAT(error_of("s2.lua", hinge + "w:servo{ joint = 'knee', kp = 1 }\n"),
               Contains("s2.lua:5: servo on joint 'knee': no joint named 'knee'"));
    CHECK_THAT(error_of("s3.lua", hinge + "w:servo{ joint = 'hinge', kv = 1 }\n"),
               Contains("s3.lua:5: servo on joint 'hinge': field 'kp' is required for a position servo"));
    CHECK_THAT(error_of("s4.lua", "w:joint{ name = 'ball', type = 'spherical', parent = w.world, child = b, anchor = {0, 0, 0} }\n"
                                  "w:servo{ joint = 'ball', kp = 1 }\nw:run{ steps = 1 }\n"),
               Contains("s4.lua:5: joint 'ball': position servo: servos drive joints of one degree of freedom"));
    CHECK_THAT(error_of("s5.lua", hinge + "w:servo{ joint = 'hinge', kp = 10 }\nw:step()\nw:set_target('hinge', 0/0)\n"),
               Contains("s5.lua:7: set_target: joint 'hinge': the target position must be finite"));
    CHECK_THAT(error_of("s6.lua", hinge + "w:servo{ joint = 'hinge', kp = 10 }\nw:step()\nw:set_servo('hinge', { kv = -3 })\n"),
               Contains("s6.lua:7: set_servo: joint 'hinge': kv must be non-negative, got -3"));
    CHECK_THAT(error_of("s7.lua", hinge + "w:step()\nw:set_target('hinge', 0.1)\n"),
               Contains("s7.lua:6: set_target: joint 'hinge' has no servo (declare one: w:servo{ joint = \"hinge\""));
    // a velocity servo takes its one target as a velocity (stiff: kv·dt/I = 9, against gravity)
    const auto r = run(write_script("s8.lua", std::string(kHeader) + hinge +
                                                  "w:servo{ joint = 'hinge', type = 'velocity', kv = 1000 }\n"
                                                  "w:set_target('hinge', 2)\nw:run{ steps = 300 }\n"
                                                  "assert(math.abs(w:rate('hinge') - 2) < 0.011, w:rate('hinge'))  -- gravity's torque / kv at most\n"));
    INFO(r.error);
    CHECK(r.exit_code == 0);
}
