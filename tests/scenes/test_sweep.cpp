// Parameter sweeps: axes and members, running members on the pool (bit-identical for any thread
// count and to lone runs), shared Models, recorded values, member outputs, failures, the CLI.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "noether/sweep.hpp"
#include "scene_util.hpp"
#include "util.hpp"

using namespace noether::lua;
using Catch::Matchers::Contains;
using scenes::cli;
using scenes::cli_err;
using testutil::error_of;
using testutil::slurp;

namespace {

const char* kScene =
    "local noether = require('noether')\n"
    "local P = noether.params { dt = 0.01, mass = 1.0, damping = 0.0, integrator = 'vi-maximal', duration = 1, csv = '' }\n"
    "noether.sweep { grid = { mass = {1, 2}, damping = '0:0.2:3' } }\n"
    "local w = noether.world { dt = P.dt, integrator = P.integrator }\n"
    "local l1 = w:body{ name = 'l1', mass = P.mass, inertia = {0.01, 0.1, 0.1}, position = {0.5, 0, 0} }\n"
    "local l2 = w:body{ name = 'l2', mass = 1, inertia = {0.01, 0.1, 0.1}, position = {1.5, 0, 0} }\n"
    "w:joint{ name = 'j1', type = 'revolute', parent = w.world, child = l1, anchor = {0, 0, 0}, axis = {0, 1, 0},\n"
    "         damping = P.damping }\n"
    "w:joint{ name = 'j2', type = 'revolute', parent = l1, child = l2, anchor = {1, 0, 0}, axis = {0, 1, 0} }\n"
    "if P.csv ~= '' then w:output{ file = P.csv, channels = {'time', 'energy'} } end\n"
    "w:run{ duration = P.duration }\n"
    "noether.record{ final_angle = w:coord('j1'), tag = 'x' .. P.mass }\n"
    "return w\n";

std::string scene() { return scenes::write_script("sweep_scene.lua", kScene); }

SweepOptions options(int threads) {
    SweepOptions o;
    o.threads = threads;
    o.script.lua_path.push_back(std::string(NOETHER_SOURCE_DIR) + "/scripts");
    return o;
}

SweepPlan declared(const std::string& script) {
    ScriptOptions o;
    o.check_only = true;
    o.member = 0;
    const ScriptResult r = run_script(script, o);
    REQUIRE(r.exit_code == 0);
    return r.sweep;
}

std::string cell(const SweepRow& r, const std::string& name) {
    for (const SweepCell& c : r.cells)
        if (c.name == name) return c.text;
    return "<none>";
}

}  // namespace

TEST_CASE("sweep axes: lo:hi:n with exact ends, lists, ranges for samples, clear errors", "[sweep]") {
    const SweepAxis a = parse_axis("dt=0.001:0.02:8");
    CHECK(a.name == "dt");
    REQUIRE(a.values.size() == 8);
    CHECK(a.values.front() == "0.001");
    CHECK(a.values.back() == "0.02");
    CHECK(std::strtod(a.values[1].c_str(), nullptr) == 0.001 + 0.019 / 7);  // exact text of the double
    CHECK(parse_axis("integrator=vi-maximal,rk4").values == std::vector<std::string>{"vi-maximal", "rk4"});
    CHECK(parse_axis("csv=a:b").values == std::vector<std::string>{"a:b"});  // not numbers: a value
    const SweepAxis r = parse_axis("mass=0.5:2");
    CHECK((r.range && r.values.empty() && r.lo == 0.5 && r.hi == 2));
    CHECK(error_of([] { parse_axis("dt"); }) == "sweep axis 'dt': expected name=lo:hi:n or name=v1,v2,...");
    CHECK_THAT(error_of([] { parse_axis("dt=0:1:0"); }), Contains("from 1 to 1000000, got '0'"));
    CHECK_THAT(error_of([] { parse_axis("k=a,,b"); }), Contains("an empty value"));
    CHECK_THAT(error_of([] { parse_axis("k="); }), Contains("no values"));
}

TEST_CASE("sweep members: grid order, random samples that any split of the members draws alike", "[sweep]") {
    SweepPlan p;
    p.grid = {parse_axis("dt=0.001:0.02:8"), parse_axis("integrator=vi-maximal,vi-midpoint,rk4")};
    const auto m = sweep_members(p);
    REQUIRE(m.size() == 24);
    CHECK(m[0] == SweepParams{{"dt", "0.001"}, {"integrator", "vi-maximal"}});
    CHECK(m[1] == SweepParams{{"dt", "0.001"}, {"integrator", "vi-midpoint"}});
    CHECK(m[23] == SweepParams{{"dt", "0.02"}, {"integrator", "rk4"}});

    SweepPlan s;
    s.grid = {parse_axis("mass=0.5:2"), parse_axis("integrator=a,b,c")};
    s.samples = 300;
    s.seed = 7;
    const auto draws = sweep_members(s);
    REQUIRE(draws.size() == 300);
    double lo = 1e9, hi = -1e9;
    int counts[3] = {0, 0, 0};
    for (const auto& d : draws) {
        const double v = std::strtod(d[0].second.c_str(), nullptr);
        lo = std::min(lo, v), hi = std::max(hi, v);
        counts[d[1].second[0] - 'a']++;
    }
    CHECK(lo >= 0.5);
    CHECK(hi < 2);
    CHECK(hi - lo > 1.4);  // spread over the range
    for (int c : counts) CHECK(c > 70);
    s.samples = 10;
    const auto fewer = sweep_members(s);
    for (int i = 0; i < 10; ++i) CHECK(fewer[i] == draws[i]);  // member i's draw depends on (seed, i) only
    s.seed = 8;
    CHECK(sweep_members(s)[0] != draws[0]);

    SweepPlan bad;
    bad.grid = {parse_axis("mass=0.5:2")};
    CHECK_THAT(error_of([&] { sweep_members(bad); }), Contains("lo:hi alone is for --samples"));
    bad.grid = {parse_axis("a=1,2"), parse_axis("a=3")};
    CHECK_THAT(error_of([&] { sweep_members(bad); }), Contains("parameter 'a' is swept twice"));
    CHECK_THAT(error_of([] { sweep_members(SweepPlan{}); }), Contains("nothing to sweep"));
}

TEST_CASE("a sweep gives the same rows for 1, 2 and 8 threads, each equal to the member run alone", "[sweep]") {
    const std::string script = scene();
    const SweepPlan plan = declared(script);
    REQUIRE(plan.declared);
    REQUIRE(plan.grid.size() == 2);
    CHECK(plan.grid[0].name == "damping");  // axes in the order of their names
    const auto members = sweep_members(plan);
    REQUIRE(members.size() == 6);
    std::vector<std::string> csv;
    for (int threads : {1, 2, 8}) csv.push_back(sweep_csv(run_sweep(script, members, options(threads))));
    CHECK(csv[0] == csv[1]);
    CHECK(csv[0] == csv[2]);

    auto opt = options(2);
    opt.script.model_cache = std::make_shared<noether::ModelCache>();
    const auto rows = run_sweep(script, members, opt);
    CHECK(sweep_csv(rows) == csv[0]);
    // One structure: compiled once, the other five members are variations of it.
    CHECK(opt.script.model_cache->compiles() == 1);
    CHECK(opt.script.model_cache->variations() == 5);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        INFO("member " << i);
        CHECK(rows[i].exit_code == 0);
        std::map<std::string, std::string> params(members[i].begin(), members[i].end());
        const ScriptResult alone = scenes::run(script, params);
        REQUIRE(alone.worlds.size() == 1);
        CHECK(std::strtod(cell(rows[i], "energy_final").c_str(), nullptr) == alone.worlds[0].energy_final);
        CHECK(std::strtod(cell(rows[i], "energy_max_abs_dev").c_str(), nullptr) == alone.worlds[0].energy_max_abs_dev);
        REQUIRE(alone.records.size() == 2);
        CHECK(cell(rows[i], "final_angle") == alone.records[0].text);
        CHECK(cell(rows[i], "tag") == "x" + params["mass"]);
    }
    // Damping removes energy: the members differ as physics says they should.
    CHECK(std::strtod(cell(rows[0], "energy_final").c_str(), nullptr) >
          std::strtod(cell(rows[4], "energy_final").c_str(), nullptr));
    // Header: member, parameters, summary keys, records, status.
    CHECK_THAT(csv[0].substr(0, csv[0].find('\n')),
               Contains("member,damping,mass,bodies,") && Contains(",final_angle,tag,exit_code,error,warnings"));
    // JSON lines: one object per member, parameters as numbers.
    const std::string jl = sweep_jsonl(rows);
    CHECK(std::count(jl.begin(), jl.end(), '\n') == 6);
    CHECK_THAT(jl, Contains("{\"member\": 0, \"damping\": 0, \"mass\": 1, \"bodies\": 2,"));
    // Rows survive the trip to bytes (MPI gathering) exactly.
    CHECK(sweep_csv(deserialize_rows(serialize_rows(rows))) == csv[0]);
    const std::string bytes = serialize_rows(rows);
    CHECK_THAT(error_of([&] { deserialize_rows(bytes.substr(0, bytes.size() - 3)); }), Contains("truncated"));
}

TEST_CASE("sweep members that fail are rows with their error, the others complete", "[sweep]") {
    const std::string script = scene();
    SweepPlan p;
    p.grid = {parse_axis("integrator=vi-maximal,nope,heun"), parse_axis("dt=0.01,0.3"), parse_axis("duration=3")};
    const auto rows = run_sweep(script, sweep_members(p), options(2));
    REQUIRE(rows.size() == 6);
    CHECK(rows[0].exit_code == 0);
    CHECK(rows[1].exit_code == 0);  // the VI takes dt = 0.3
    CHECK(rows[2].exit_code == 2);
    CHECK_THAT(rows[2].error, Contains("unknown integrator 'nope'"));
    CHECK(rows[5].exit_code == 1);  // heun at dt = 0.3 leaves the joints apart
    CHECK_THAT(rows[5].error, Contains("the simulation failed"));
    CHECK(cell(rows[5], "failed") == "true");
    CHECK(rows[4].exit_code == 0);
    // os.exit in a member would end every member: it is an error of that member.
    const std::string quits = scenes::write_script(
        "sweep_quit.lua", "local noether = require('noether')\nlocal P = noether.params{ k = 0 }\n"
                          "if P.k == 1 then os.exit(3) end\nnoether.record('k', P.k)\n");
    SweepPlan q;
    q.grid = {parse_axis("k=0,1,2")};
    const auto qrows = run_sweep(quits, sweep_members(q), options(2));
    CHECK(qrows[0].exit_code == 0);
    CHECK(qrows[1].exit_code == 2);
    CHECK_THAT(qrows[1].error, Contains("sweep_quit.lua:3: os.exit is not available in a sweep member"));
    CHECK(cell(qrows[2], "record.k") == "2");  // named like a parameter
}

TEST_CASE("sweep members write only files that name them ({member})", "[sweep]") {
    const std::string script = scene();
    const std::string dir = std::string(NOETHER_BINARY_DIR) + "/tests/";
    std::remove((dir + "sweep_plain.csv").c_str());
    SweepPlan p;
    p.grid = {parse_axis("mass=1,2"), parse_axis("csv=" + dir + "sweep_plain.csv," + dir + "sweep_m{member}.csv")};
    const auto rows = run_sweep(script, sweep_members(p), options(2));
    REQUIRE(rows.size() == 4);
    for (const auto& r : rows) CHECK(r.exit_code == 0);
    CHECK_THAT(rows[0].warnings, Contains("not written by sweep member 0") && Contains("put {member} in the name"));
    CHECK(access((dir + "sweep_plain.csv").c_str(), F_OK) != 0);
    for (int m : {1, 3}) {
        const auto csv = scenes::read_csv(dir + "sweep_m" + std::to_string(m) + ".csv");
        CHECK(csv.rows.size() == 101);
    }
}

TEST_CASE("noether.sweep and noether.record check their arguments", "[sweep]") {
    auto err = [](const std::string& name, const std::string& body) {
        const auto r = scenes::run(scenes::write_script(name, "local noether = require('noether')\n" + body));
        CHECK(r.exit_code == 2);
        return r.error;
    };
    CHECK_THAT(err("sw1.lua", "noether.sweep{ grid = { a = {1} } }\nnoether.sweep{ grid = { a = {2} } }\n"),
               Contains("sw1.lua:3: noether.sweep: declared twice"));
    CHECK_THAT(err("sw2.lua", "noether.sweep{ grid = { a = {1} }, list = { {a = 1} } }\n"),
               Contains("give either 'grid' or 'list'"));
    CHECK_THAT(err("sw3.lua", "noether.sweep{ samples = 4 }\n"), Contains("'samples' needs a 'grid'"));
    CHECK_THAT(err("sw4.lua", "noether.sweep{ grid = { a = { {} } } }\n"),
               Contains("grid 'a': values are numbers, strings or booleans, got a table"));
    CHECK_THAT(err("sw5.lua", "noether.sweep{ grid = { a = '1:2:x' } }\n"), Contains("from 1 to 1000000"));
    CHECK_THAT(err("sw6.lua", "noether.record('x', {})\n"), Contains("'x' must be a number, a string or a boolean"));
    CHECK_THAT(err("sw7.lua", "noether.sweep{ grid = {}, colour = 1 }\n"), Contains("unknown field 'colour'"));
    // A list declaration: members as given.
    const auto r = scenes::run(scenes::write_script(
        "sw8.lua", "local noether = require('noether')\nnoether.sweep{ list = { {b = 2, a = 'x'}, {a = 'y'} } }\n"
                   "noether.record('k', 1.5)\nnoether.record('k', 2)\n"));
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.sweep.list.size() == 2);
    CHECK(r.sweep.list[0] == SweepParams{{"a", "x"}, {"b", "2"}});
    REQUIRE(r.records.size() == 1);  // recorded again: replaced
    CHECK(r.records[0].text == "2");
}

TEST_CASE("noether sweep on the command line: rows, formats and errors", "[sweep][cli]") {
    const std::string out = std::string(NOETHER_BINARY_DIR) + "/tests/sweep_cli.csv";
    std::remove(out.c_str());
    CHECK(cli("sweep " + scenes::example("double_pendulum") +
              " --grid dt=0.001:0.02:8 --grid integrator=vi-maximal,vi-midpoint,rk4 --set duration=2 --threads 2 --out " +
              out) == 0);
    const std::string text = slurp(out);
    CHECK(std::count(text.begin(), text.end(), '\n') == 25);
    CHECK_THAT(text, Contains("\n23,0.02,rk4,"));
    // The scene's own declaration, as JSON lines.
    const std::string jl = std::string(NOETHER_BINARY_DIR) + "/tests/sweep_cli.jsonl";
    CHECK(cli("sweep " + scene() + " --quiet --out " + jl) == 0);
    const std::string jtext = slurp(jl);
    CHECK(std::count(jtext.begin(), jtext.end(), '\n') == 6);
    CHECK(cli("sweep " + scene() + " --samples 3 --seed 2 --grid mass=1:2 --out " + jl) == 0);
    const std::string j3 = slurp(jl);
    CHECK(std::count(j3.begin(), j3.end(), '\n') == 3);
    // Errors: exit 2, nothing written.
    CHECK(cli("sweep " + scenes::example("pendulum") + " --out " + out + ".x") == 2);  // declares no sweep
    CHECK(access((out + ".x").c_str(), F_OK) != 0);
    CHECK(cli("sweep " + scene() + " --grid mass=1,2 --set mass=3") == 2);
    CHECK(cli("sweep " + scene() + " --grid mass") == 2);
    // Issue 31 item 8: an axis the scene does not read, or bounds that are not numbers, are refused
    // before any member runs (every member failed after the sweep had run, exit 1).
    std::remove((out + ".y").c_str());
    CHECK(cli("sweep " + scene() + " --grid nosuch=1,2 --out " + out + ".y") == 2);
    CHECK(access((out + ".y").c_str(), F_OK) != 0);
    CHECK_THAT(cli_err("sweep " + scene() + " --grid nosuch=1,2"), Contains("swept parameter 'nosuch'") &&
                                                                      Contains("never reads it"));
    CHECK_THAT(cli_err("sweep " + scene() + " --grid mass=nan:2:3"),
               Contains("sweep axis 'mass=nan:2:3': the bounds of lo:hi:n must be finite numbers, got 'nan'"));
    CHECK(cli("sweep " + scene() + " --grid mass=1:inf:3") == 2);
    CHECK_THAT(cli_err("sweep " + scene() + " --grid mass=1:2:1000 --grid g=1:2:1001"),
               Contains("the grid has 1001000 members; a sweep runs at most 1000000"));
    CHECK(cli("sweep " + scene() + " --threads -1") == 2);
    CHECK(cli("sweep " + scene() + " --out /nonexistent/dir/x.csv") == 2);  // refused before the members run (issue 31)
}
