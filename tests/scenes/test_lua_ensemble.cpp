// Ensembles from Lua (w:ensemble{}): members equal lone runs bit for bit for any thread count,
// per-member numbers (m:vary), a Lua controller, failures that stop one member, outputs per
// member, and misuse refused with the script line.
#include <catch2/catch.hpp>

#include <cstdio>
#include <sys/stat.h>

#include "scene_util.hpp"
#include "util.hpp"

using Catch::Matchers::Contains;
using scenes::run;
using scenes::write_script;

namespace {

// Two hinged boxes; link b's mass and j1's damping are the member's numbers.
const char* kScene = R"(local noether = require('noether')
local function build(dt, mb, damping)
  local w = noether.world{ gravity = {0, 0, -9.81}, dt = dt }
  local a = w:body{ name = 'a', mass = 1, inertia = noether.inertia.box(1, 1, 0.1, 0.1), position = {0.5, 0, 0} }
  local b = w:body{ name = 'b', mass = mb, inertia = noether.inertia.box(mb, 1, 0.1, 0.1), position = {1.5, 0, 0} }
  w:joint{ name = 'j1', type = 'revolute', parent = w.world, child = a, anchor = {0, 0, 0}, axis = {0, 1, 0}, damping = damping }
  w:joint{ name = 'j2', type = 'revolute', parent = a, child = b, anchor = {1, 0, 0}, axis = {0, 1, 0} }
  return w
end
local function numbers(i) return (i % 2 == 0) and 0.005 or 0.01, 1 + 0.25 * i, 0.1 * i end
local function torque(rate, i, t) return -0.3 * rate + 0.01 * i + 0.2 * math.sin(3 * t) end
)";

std::string str(const noether::lua::ScriptResult& r, const std::string& name) {
    for (const auto& x : r.records)
        if (x.name == name) return x.text;
    return "<not recorded>";
}

bool exists(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("a Lua ensemble: every member equals its lone run bit for bit, for 1, 2 and 8 threads", "[lua][ensemble]") {
    const std::string script = write_script("ens_lone.lua", std::string(kScene) + R"(
local P = noether.params{ threads = 1 }
local K, N = 6, 150
local e = build(0.01, 1, 0):ensemble{ members = K, threads = P.threads }
assert(e:size() == K and e:threads() == P.threads)
for i = 1, K do
  local dt, mb, d = numbers(i)
  e:member(i):vary{ dt = dt, ['b.mass'] = mb, ['b.inertia'] = noether.inertia.box(mb, 1, 0.1, 0.1), ['j1.damping'] = d }
end
e:controller(function(m, i) m:set_actuation('j2', torque(m:rate('j2'), i, m:time())) end)
assert(e:steps(N) == K, 'no member failed')
noether.record('hash', e:hash())
local agree = 0
for i = 1, K do
  local lone = build(numbers(i))
  lone:on_step(function(w) w:set_actuation('j2', torque(w:rate('j2'), i, w:time())) end)
  lone:run{ steps = N }
  local m = e:member(i)
  if lone:save() == m:save() then agree = agree + 1 end
  assert(m:coord('j2') == lone:coord('j2') and m:time() == lone:time())
end
noether.record('agree', agree)
-- without a controller the members step in one parallel call per chunk: the same bits as lone runs
local f = build(0.01, 1, 0):ensemble{ members = 3, threads = P.threads }
f:member(2):vary{ gravity = {0, 0, -1.62} }
f:run{ duration = 1 }
noether.record('hash_free', f:hash())
noether.record('member2_moves_less', math.abs(f:member(2):coord('j1')) < math.abs(f:member(1):coord('j1')))
noether.record('member1_is_member3', f:member(1):save() == f:member(3):save())
)");
    std::string hash, hash_free;
    for (const char* threads : {"1", "2", "8"}) {
        const auto r = run(script, {{"threads", threads}});
        INFO(threads << " threads: " << r.error);
        REQUIRE(r.exit_code == 0);
        CHECK(str(r, "agree") == "6");
        CHECK(str(r, "member2_moves_less") == "true");
        CHECK(str(r, "member1_is_member3") == "true");
        REQUIRE(str(r, "hash").size() == 16);
        if (hash.empty()) {
            hash = str(r, "hash");
            hash_free = str(r, "hash_free");
        }
        CHECK(str(r, "hash") == hash);
        CHECK(str(r, "hash_free") == hash_free);
    }
    CHECK(hash != hash_free);
}

TEST_CASE("a Lua ensemble: a failing member stops with when and why, the others go on", "[lua][ensemble]") {
    const auto r = run(write_script("ens_fail.lua", std::string(kScene) + R"(
local e = build(0.01, 1, 0):ensemble{ members = 3, threads = 2 }
e:controller(function(m, i)
  if i == 2 and m:time() >= 0.5 then error('sensor lost') end
end)
noether.record('running', e:run{ duration = 1 })
local msg, t, step = e:member(2):failure()
noether.record('msg', msg)
noether.record('t', t)
noether.record('step', step)
noether.record('failed2', e:member(2):failed())
noether.record('failed1', e:member(1):failed())
noether.record('time1', e:member(1):time())
noether.record('time2', e:member(2):time())
noether.record('failures', e:failures())
noether.record('summary_failed', e:member(2):summary().failed)
noether.record('one_is_three', e:member(1):save() == e:member(3):save())
)"));
    INFO(r.error);
    REQUIRE(r.exit_code == 0);  // a member's failure is the script's to handle, not the script's failure
    CHECK(str(r, "running") == "2");
    CHECK_THAT(str(r, "msg"), Contains("the controller failed: ") && Contains("ens_fail.lua:15: sensor lost"));
    CHECK(std::stod(str(r, "t")) == Approx(0.5).margin(1e-12));
    CHECK(str(r, "step") == "50");
    CHECK(str(r, "failed2") == "true");
    CHECK(str(r, "failed1") == "false");
    CHECK(std::stod(str(r, "time1")) == Approx(1.0).margin(1e-12));
    CHECK(std::stod(str(r, "time2")) == Approx(0.5).margin(1e-12));
    CHECK(str(r, "failures") == "1");
    CHECK(str(r, "summary_failed") == "true");
    CHECK(str(r, "one_is_three") == "true");
}

TEST_CASE("a Lua ensemble: misuse is refused with the script line, the element and the value", "[lua][ensemble]") {
    const std::string head = std::string(kScene) + "local e = build(0.01, 1, 0):ensemble{ members = 2 }\n";
    const int line = 13;  // the line after head
    struct Case {
        const char* code;
        const char* message;
    };
    const Case cases[] = {
        {"build(0.01, 1, 0):ensemble{}", "ensemble: field 'members' is required"},
        {"build(0.01, 1, 0):ensemble{ members = 0 }", "field 'members' must be at least 1, got 0"},
        {"build(0.01, 1, 0):ensemble{ members = 2^40 }", "field 'members' must be at most 100000"},
        {"build(0.01, 1, 0):ensemble{ members = 2, cores = 2 }", "unknown field 'cores' (fields: members, threads)"},
        {"e:member(3)", "member: member 3 out of range (1 … 2)"},
        {"e:member(1.5)", "member: expected a member number (1 … 2), got number"},
        {"e:member(1):vary{ ['b.mass'] = -1 }", "ens_bad.lua:5: body 'b': mass must be positive and finite, got -1"},
        {"e:member(2):vary{ ['c.mass'] = 1 }", "vary: member 2: variation 'c.mass': no body named 'c'"},
        {"e:member(2):vary{ ['j1.damping'] = 'x' }", "vary: member 2: 'j1.damping': expected a number or a list of numbers, got string"},
        {"e:steps(1); e:member(1):vary{ dt = 0.1 }", "vary: member 1 has already stepped (vary a member before its first step)"},
        {"e:controller(42)", "controller: expected a function(m, i) or nil, got number"},
        {"e:steps(-1)", "steps: the number of steps must be non-negative, got -1"},
        {"e:threads(-1)", "threads: the thread count must be 0 (every core) … 1024, got -1"},
        {"e:member(1):set_actuation('j1', 1/0)", "set_actuation: joint 'j1': values must be finite"},
        {"e:member(1):coord('nope')", "coord: no joint named 'nope'"},
        {"e:member(1):output{ file = 'ens_same.csv', channels = {'time'} }; e:member(2):output{ file = 'ens_same.csv', "
         "channels = {'time'} }",
         "output: member 2: file 'ens_same.csv' is already written by this ensemble (give each member its own file)"},
        {"e:member(1):output{ file = 'x.csv' }", "output: field 'channels' is required with 'file'"},
        {"e:member(1):output{ channels = {'time'}, callback = print }", "output: unknown field 'callback'"},
        {"debug.getmetatable(e).__gc(e); e:steps(1)", "this ensemble was already collected (its __gc ran)"},
        {"local m = e:member(1); debug.getmetatable(e).__gc(e); m:time()", "this member's ensemble was already collected"},
        {"e.steps(nil, 1)", "expected an ensemble (call methods as e:name(...)), got nil"},
    };
    int k = 0;
    for (const Case& c : cases) {
        const auto r = run(write_script("ens_bad.lua", head + c.code + "\n"));
        INFO("case " << k++ << ": " << c.code << "\n -> " << r.error);
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.error, Contains("ens_bad.lua:" + std::to_string(line) + ":") && Contains(c.message));
    }
    // a controller that steps its own ensemble fails its members, not the process
    const auto s = run(write_script("ens_reenter.lua", head + R"(
e:controller(function(m, i) e:steps(1) end)
noether.record('running', e:steps(3))
noether.record('msg', (e:member(1):failure()))
)"));
    INFO(s.error);
    REQUIRE(s.exit_code == 0);
    CHECK(str(s, "running") == "0");
    CHECK_THAT(str(s, "msg"), Contains("steps: not from the ensemble's controller (the ensemble is stepping)"));
    // the metatables are protected
    const auto t = run(write_script("ens_meta.lua", head + R"(
assert(getmetatable(e) == 'noether.Ensemble')
assert(getmetatable(e:member(1)) == 'noether.EnsembleMember')
assert(e:member(2) == e:member(2), 'one view per member')
assert(not pcall(setmetatable, e, {}))
)"));
    INFO(t.error);
    CHECK(t.exit_code == 0);
}

TEST_CASE("a Lua ensemble: each member writes its own CSV, kept across vary, and a script error leaves them partial",
          "[lua][ensemble]") {
    const std::string dir = std::string(NOETHER_BINARY_DIR) + "/tests/";
    for (int i = 1; i <= 3; ++i) {
        std::remove((dir + "ens_out" + std::to_string(i) + ".csv").c_str());
        std::remove((dir + "ens_out" + std::to_string(i) + ".csv.part").c_str());
    }
    const std::string body = std::string(kScene) + R"(
local P = noether.params{ fail = 0 }
local e = build(0.01, 1, 0):ensemble{ members = 3 }
for i = 1, 3 do
  e:member(i):output{ file = ')" + dir + R"(ens_out' .. i .. '.csv', every = 10, channels = {'time', 'j1.coord'} }
end
e:member(3):vary{ ['b.mass'] = 4 }  -- a fresh run for member 3: its output comes along
e:steps(100)
if P.fail == 1 then error('stop here') end
)";
    const auto ok = run(write_script("ens_out.lua", body));
    INFO(ok.error);
    REQUIRE(ok.exit_code == 0);
    const auto c1 = scenes::read_csv(dir + "ens_out1.csv");
    const auto c3 = scenes::read_csv(dir + "ens_out3.csv");
    REQUIRE(c1.rows.size() == 11);  // t = 0, 0.1, …, 1.0
    REQUIRE(c3.rows.size() == 11);
    CHECK(c1.rows.back()[0] == Approx(1.0));
    CHECK(c1.rows.back()[1] != c3.rows.back()[1]);  // member 3 is heavier at the tip
    CHECK(c1.column("j1.coord") == scenes::read_csv(dir + "ens_out2.csv").column("j1.coord"));
    for (int i = 1; i <= 3; ++i) std::remove((dir + "ens_out" + std::to_string(i) + ".csv").c_str());
    const auto bad = run(write_script("ens_out.lua", body), {{"fail", "1"}});
    CHECK(bad.exit_code == 2);
    CHECK_FALSE(exists(dir + "ens_out1.csv"));
    CHECK(exists(dir + "ens_out1.csv.part"));
    REQUIRE(bad.worlds.size() >= 1);
    std::string warnings;
    for (const auto& w : bad.worlds)
        for (const auto& x : w.warnings) warnings += x + "\n";
    CHECK_THAT(warnings, Contains("ensemble member 1: output") && Contains("ens_out1.csv.part"));
}
