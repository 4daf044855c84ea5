// The kernel's run (noether/run.hpp) from C++ without Lua: a scene to CSV and a summary.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "noether/run.hpp"
#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;

namespace {

using testutil::slurp;

OutputSpec output(const std::string& file, int every, std::vector<std::string> channels) {
    OutputSpec o;
    o.file = file;
    o.every = every;
    o.channels = std::move(channels);
    return o;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

std::vector<std::vector<double>> rows(const std::string& csv) {
    std::vector<std::vector<double>> out;
    std::istringstream in(csv);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        std::vector<double> r;
        std::istringstream ls(line);
        std::string cell;
        while (std::getline(ls, cell, ',')) r.push_back(std::stod(cell));
        out.push_back(r);
    }
    return out;
}

}  // namespace

TEST_CASE("a C++ host runs a scene to CSV and a summary through noether::Run", "[run]") {
    const std::string csv = std::string(NOETHER_BINARY_DIR) + "/tests/run_cpp.csv";
    std::remove(csv.c_str());
    auto m = compile(testutil::double_pendulum_spec());
    Run run(m);
    run.add_output(output(csv, 10, {"time", "energy", "violation", "j1.coord", "link2.position"}));
    REQUIRE(run.steps(run.steps_for(2.0)));
    CHECK_FALSE(exists(csv));  // written under <file>.part until the run finishes
    run.finish();
    REQUIRE(exists(csv));
    const std::string text = slurp(csv);
    CHECK(text.rfind("time,energy,violation,j1.coord,link2.position.x,link2.position.y,link2.position.z\n", 0) == 0);
    const auto r = rows(text);
    REQUIRE(r.size() == 21);  // the initial state and every 10th of 200 steps
    CHECK(r[0][0] == 0.0);
    // The time column is step·dt exactly (issue 15: a running sum wrote 0.099999999999999992).
    for (std::size_t i = 0; i < r.size(); ++i) CHECK(r[i][0] == static_cast<double>(10 * i) * 0.01);
    CHECK(r[20][0] == 2.0);
    for (const auto& row : r) {
        CHECK(std::fabs(row[1]) < 0.37);  // energy bounded (maximal-vi.md recipe 8: E in [0, 0.364])
        CHECK(row[2] < 1e-12);            // joints do not drift
    }
    // The CSV is the Data: the last row holds the final state.
    CHECK(r[20][3] == run.data().coord[0]);
    CHECK(r[20][4] == run.data().pose[1].x.x);
    const RunSummary s = run.summary();
    CHECK(s.steps == 200);
    CHECK(s.bodies == 2);
    CHECK(s.integrator == "vi-maximal");
    CHECK(s.solver == "sparse-ldu");
    CHECK(s.energy_max_abs_dev < 0.37);
    CHECK(s.energy_max_abs_dev > 0.1);  // it did swing
    CHECK(s.max_violation < 1e-12);
    CHECK(s.newton_max <= 6);  // chord iterations included (vi-maximal's newton = "chord")
    CHECK(s.factor_mean >= 1);  // every step factors its Newton matrix at least once
    CHECK(s.factor_mean < 1.1);  // and, with the chord iterations, about once
    CHECK_FALSE(s.failed);
    const std::string json = s.to_json();
    CHECK_THAT(json, Contains("\"steps\": 200") && Contains("\"integrator\": \"vi-maximal\"") &&
                         Contains("\"energy_max_rel_dev\": null") && Contains("\"failed\": false") &&
                         Contains("\"factor_mean\": "));
    CHECK_THAT(s.to_text(), Contains("simulated 2 s in 200 steps"));
}

TEST_CASE("a failed run leaves its CSV as .part and says so, bad channels name the output", "[run]") {
    const std::string csv = std::string(NOETHER_BINARY_DIR) + "/tests/run_cpp_fail.csv";
    std::remove(csv.c_str());
    std::remove((csv + ".part").c_str());
    Spec s = testutil::chain_spec(3, "revolute", "vi-maximal");
    s.options.dt = 1.5;  // far too large
    s.options.max_substeps = 1;
    auto m = compile(s);
    Run run(m);
    OutputSpec bad = output(csv, 1, {"time", "link9.position"});
    bad.origin.file = "scene.lua";
    bad.origin.line = 7;
    CHECK_THROWS_WITH(run.add_output(bad), Contains("scene.lua:7: output: channel 'link9.position': no body named 'link9'"));
    CHECK_THROWS_WITH(run.add_output(output(csv, 1, {"time", "speed"})), Contains("unknown channel 'speed'"));
    run.add_output(output(csv, 1, {"time", "energy"}));
    CHECK_FALSE(run.steps(100));
    CHECK(run.failed());
    CHECK_THAT(run.failure(), Contains("the state is left at t ="));
    std::vector<std::string> notes;
    run.finish(&notes);
    REQUIRE(notes.size() == 1);
    CHECK_THAT(notes[0], Contains("is incomplete") && Contains(".part"));
    CHECK_FALSE(exists(csv));
    CHECK(exists(csv + ".part"));
    CHECK(run.summary().failed);
    CHECK(run.summary().failed_steps == 1);
}

TEST_CASE("hooks run before every step and when a hooked output samples", "[run]") {
    auto m = compile(testutil::chain_spec(2, "revolute", "vi-maximal"));
    struct Hooks : RunHooks {
        int before = 0, sampled = 0;
        void before_step(Run& r) override {
            ++before;
            r.data().actuation[0] = 0.5;  // a controller: constant torque on the shoulder
        }
        void on_sample(Run&, int output) override {
            CHECK(output == 0);
            ++sampled;
        }
    } hooks;
    Run run(m);
    OutputSpec o;
    o.every = 5;
    o.hook = true;
    run.add_output(o);
    REQUIRE(run.steps(50, &hooks));
    CHECK(hooks.before == 50);
    CHECK(hooks.sampled == 11);  // the initial state and every 5th step
    // The same run without the torque ends elsewhere: the hook's input reached the step.
    Run plain(m);
    REQUIRE(plain.steps(50));
    CHECK(std::fabs(plain.data().coord[0] - run.data().coord[0]) > 1e-3);
}

TEST_CASE("noether check's degrees of freedom count only independent constraint rows, whatever the integrator", "[run]") {
    // Issue 15: the planar four-bar of four hinges showed -2 "by counting" before it ran.
    for (const char* integrator : {"vi-maximal", "dp45-projection", "rk4"}) {
        Spec s = testutil::closed_loop_spec("revolute");
        s.options.integrator = integrator;
        const std::string text = graph_text(*compile(s));
        CHECK_THAT(text, Contains("degrees of freedom: 1 (6 x 3 bodies - 17 independent of the 20 constraint rows") &&
                             Contains("3 loop-closure rows are redundant"));
    }
    const std::string tree = graph_text(*compile(testutil::double_pendulum_spec()));
    CHECK_THAT(tree, Contains("degrees of freedom: 2 by counting (6 x 2 bodies - 10 constraint rows)\n"));
}
