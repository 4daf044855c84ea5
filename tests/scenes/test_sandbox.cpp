// The sandbox for untrusted scenes (noether run --sandbox DIR): every escape a probe tries is
// refused with a clear message, and an ordinary scene still runs, writing only inside DIR.
#include <catch2/catch.hpp>

#include <cstdio>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "noether_lua.h"
#include "scene_util.hpp"

using scenes::write_script;
using Catch::Matchers::Contains;

namespace {

std::string box() {
    const std::string d = std::string(NOETHER_BINARY_DIR) + "/tests/sandbox_dir";
    mkdir(d.c_str(), 0755);
    return d;
}

noether::lua::ScriptResult sandboxed(const std::string& path, double seconds = 20, std::size_t memory = 64u << 20) {
    noether::lua::ScriptOptions opt;
    opt.sandbox = true;
    opt.sandbox_dir = box();
    opt.sandbox_seconds = seconds;
    opt.sandbox_memory = memory;
    opt.lua_path.push_back(std::string(NOETHER_SOURCE_DIR) + "/scripts");
    return noether::lua::run_script(path, opt);
}

std::string refused(const std::string& name, const std::string& code) {
    const auto r = sandboxed(write_script(name, code));
    CHECK(r.exit_code == 2);
    return r.error;
}

bool exists(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0;
}

const char* kWorld =
    "local noether = require('noether')\n"
    "local w = noether.world{ dt = 0.01 }\n"
    "local b = w:body{ name = 'bob', mass = 1, inertia = {0.1, 0.1, 0.1}, position = {1, 0, 0} }\n"
    "w:joint{ name = 'j', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0}, axis = {0, 1, 0} }\n";

// A free body at a small step: long runs in C++ (the time-limit probes).
const char* kFreeBody =
    "local noether = require('noether')\n"
    "local w = noether.world{ dt = 1e-4 }\n"
    "local b = w:body{ name = 'b', mass = 1, inertia = {1, 1, 1} }\n";

}  // namespace

TEST_CASE("sandbox: the Lua escapes are closed", "[sandbox]") {
    const std::string pwned = std::string(NOETHER_BINARY_DIR) + "/tests/sandbox_pwned";
    std::remove(pwned.c_str());
    CHECK_THAT(refused("sb_exec.lua", "os.execute('touch " + pwned + "')\n"), Contains("field 'execute'"));
    CHECK_THAT(refused("sb_exit.lua", "os.exit(3)\n"), Contains("field 'exit'"));
    CHECK_THAT(refused("sb_io.lua", "io.open('" + pwned + "', 'w')\n"), Contains("global 'io'"));
    CHECK_THAT(refused("sb_popen.lua", "io.popen('true')\n"), Contains("global 'io'"));
    CHECK_THAT(refused("sb_debug.lua", "debug.getmetatable(1)\n"), Contains("global 'debug'"));
    CHECK_THAT(refused("sb_dofile.lua", "dofile('/etc/passwd')\n"), Contains("global 'dofile'"));
    CHECK_THAT(refused("sb_loadlib.lua", "package.loadlib('libc.so.6', 'system')\n"), Contains("field 'loadlib'"));
    CHECK_THAT(refused("sb_cmod.lua", "package.cpath = '/usr/lib/x86_64-linux-gnu/lua/5.4/?.so;/usr/local/lib/lua/5.4/?.so'\n"
                                      "require('lpeg')\n"),
               Contains("module 'lpeg' not found"));
    CHECK_THAT(refused("sb_binary.lua", "local f, e = load('\\27Lua\\84\\0')\nassert(f, e)\n"), Contains("binary chunk"));
    CHECK_THAT(refused("sb_dump.lua", "string.dump(print)\n"), Contains("field 'dump'"));
    CHECK_THAT(refused("sb_require_up.lua", "require('..secret')\n"), Contains("not found"));
    CHECK_FALSE(exists(pwned));
}

// Issue 31 item 1: require("os") answered the real os library from package.loaded. Every route a
// script has to a table is walked (globals, require of every standard library, package.loaded,
// the string metatable, load with an environment, the noether module, worlds and their
// metatables, coroutines' environments) and no unsafe function may be found under any key.
TEST_CASE("sandbox: no route reaches an unsafe library function", "[sandbox]") {
    const std::string pwned = std::string(NOETHER_BINARY_DIR) + "/tests/sandbox_pwned_require";
    std::remove(pwned.c_str());
    const std::string probe =
        "local unsafe = {}\n"
        "for _, k in ipairs{'execute','exit','getenv','rename','tmpname','setlocale','popen','open','lines',\n"
        "  'input','output','read','write','tmpfile','loadlib','searchpath','searchers','cpath','path','getregistry',\n"
        "  'sethook','gethook','getupvalue','setupvalue','upvaluejoin','getlocal','setlocal','getinfo','debug','io',\n"
        "  'dump','dofile','loadfile','config'} do unsafe[k] = true end\n"
        "local found, seen = {}, {}\n"
        "local function walk(label, v, depth)\n"
        "  if depth > 6 or seen[v] then return end\n"
        "  if type(v) == 'table' then\n"
        "    seen[v] = true\n"
        "    for k, x in pairs(v) do\n"
        "      if unsafe[k] then found[#found + 1] = label .. '.' .. tostring(k) end\n"
        "      walk(label .. '.' .. tostring(k), x, depth + 1)\n"
        "    end\n"
        "  end\n"
        "  local mt = getmetatable(v)\n"
        "  if type(mt) == 'table' then walk(label .. '<mt>', mt, depth + 1) end\n"
        "end\n"
        "walk('_G', _G, 0)\n"
        "walk('string-mt', getmetatable(''), 0)\n"
        "for _, m in ipairs{'os','io','debug','package','string','table','math','coroutine','utf8','_G'} do\n"
        "  local ok, v = pcall(require, m)\n"
        "  if ok then walk('require(' .. m .. ')', v, 0) end\n"
        "  if package and package.loaded then walk('package.loaded.' .. m, package.loaded[m], 0) end\n"
        "end\n"
        "local noether = require('noether')\n"
        "walk('noether', noether, 0)\n"
        "local w = noether.world{ dt = 0.01 }\n"
        "walk('world', w, 0)\n"
        "walk('load-env', load('return _ENV', '=x', 't', {})(), 0)\n"
        "walk('load-G', load('return _G')(), 0)\n"
        "local co = coroutine.create(function() return _ENV end)\n"
        "walk('coroutine', select(2, coroutine.resume(co)), 0)\n"
        "-- and the routes themselves: each must fail or hand back nothing that runs a program\n"
        "local os2 = require('os')\n"
        "assert(os2.execute == nil and os2.getenv == nil and os2.remove == nil and os.remove == nil)  -- table.remove is fine\n"
        "assert(package.searchpath == nil and package.loadlib == nil)\n"
        "assert(not pcall(require, 'io') and not pcall(require, 'debug'))\n"
        "assert(getmetatable('').__index.dump == nil)\n"
        "assert(load(string.char(27) .. 'Lua') == nil)\n"
        "if os2.execute then os2.execute('touch " + pwned + "') end\n"
        "assert(#found == 0, 'reachable: ' .. table.concat(found, ', '))\n"
        "assert(os.clock() >= 0 and os.time() > 0 and type(os.date('%Y')) == 'string')  -- the safe part stays\n";
    const auto r = sandboxed(write_script("sb_routes.lua", probe));
    INFO(r.error);
    CHECK(r.exit_code == 0);
    CHECK_FALSE(exists(pwned));
    // The same probes through require from a module file next to the script.
    CHECK_THAT(refused("sb_require_os.lua", "require('os').execute('touch " + pwned + "')\n"),
               Contains("attempt to call a nil value (field 'execute')"));
    CHECK_THAT(refused("sb_loaded_os.lua", "package.loaded.os.rename('a', 'b')\n"), Contains("field 'rename'"));
    CHECK_FALSE(exists(pwned));
}

TEST_CASE("sandbox: noether's own files stay inside the sandbox directory, no plugin directories", "[sandbox]") {
    CHECK_THAT(refused("sb_out.lua", std::string(kWorld) + "w:output{ file = '/tmp/noether_outside.csv', channels = {'time'} }\n"),
               Contains("sb_out.lua:5: sandbox: output file '/tmp/noether_outside.csv' is outside the sandbox directory"));
    CHECK_THAT(refused("sb_up.lua", std::string(kWorld) + "w:output{ file = '../escaped.csv', channels = {'time'} }\n"),
               Contains("is outside the sandbox directory"));
    CHECK_THAT(refused("sb_save.lua", std::string(kWorld) + "w:save_file('/tmp/noether_state.bin')\n"),
               Contains("sandbox: save_file path"));
    CHECK_THAT(refused("sb_restore.lua", std::string(kWorld) + "w:restore_file('/etc/passwd')\n"),
               Contains("sandbox: restore_file path"));
    CHECK_THAT(refused("sb_urdf.lua", std::string(kWorld) + "w:urdf{ file = '/etc/passwd' }\n"), Contains("sandbox: URDF file"));
    CHECK_THAT(refused("sb_mjcf.lua", std::string(kWorld) + "w:mjcf{ file = '/etc/passwd' }\n"), Contains("sandbox: MJCF file"));
    {
        // An MJCF file inside the sandbox may not include one outside it (the include is read by the
        // importer, not by the script: the sandbox's read rule is handed to it).
        std::FILE* f = std::fopen((box() + "/inc_escape.xml").c_str(), "w");
        REQUIRE(f);
        std::fputs("<mujoco>\n  <include file=\"/etc/passwd\"/>\n  <worldbody/>\n</mujoco>\n", f);
        std::fclose(f);
        CHECK_THAT(refused("sb_mjcf_inc.lua", std::string(kWorld) + "w:mjcf{ file = 'inc_escape.xml' }\n"),
                   Contains("inc_escape.xml:2: <include file='/etc/passwd'>: sandbox: included MJCF file '/etc/passwd' is outside the sandbox directory"));
    }
    {
        // Nor read a mesh file outside it (a body's inertia from a mesh geom).
        std::FILE* f = std::fopen((box() + "/mesh_escape.xml").c_str(), "w");
        REQUIRE(f);
        std::fputs("<mujoco>\n  <asset><mesh name=\"m\" file=\"/etc/passwd\"/></asset>\n  <worldbody><body name=\"b\">"
                   "<freejoint/><geom type=\"mesh\" mesh=\"m\"/></body></worldbody>\n</mujoco>\n", f);
        std::fclose(f);
        CHECK_THAT(refused("sb_mjcf_mesh.lua", std::string(kWorld) + "w:mjcf{ file = 'mesh_escape.xml' }\n"),
                   Contains("mesh_escape.xml:2") && Contains("mesh file '/etc/passwd': sandbox") &&
                       Contains("outside the sandbox directory"));
    }
    CHECK_THAT(refused("sb_plugins.lua", "local noether = require('noether')\nnoether.world{ plugin_dirs = {'/tmp'} }\n"),
               Contains("a scene may not name plugin directories"));
}

// Issue 31 item 2: a link planted in the sandbox directory (an unpacked scene archive can carry
// one) redirected outputs, recordings and save_file outside, and w:urdf / restore_file read
// through a link on the file name.
TEST_CASE("sandbox: a planted symbolic link never carries a write or a read outside", "[sandbox]") {
    const std::string outside = std::string(NOETHER_BINARY_DIR) + "/tests/sb_outside";
    mkdir(outside.c_str(), 0755);
    const std::string victim = outside + "/victim.txt";
    auto plant = [&](const std::string& name, const std::string& target) {
        const std::string p = box() + "/" + name;
        std::remove(p.c_str());
        REQUIRE(symlink(target.c_str(), p.c_str()) == 0);
    };
    auto victim_intact = [&]() {
        std::FILE* f = std::fopen(victim.c_str(), "rb");
        char buf[16] = {};
        const std::size_t n = f ? std::fread(buf, 1, sizeof buf, f) : 0;
        if (f) std::fclose(f);
        return std::string(buf, n) == "precious";
    };
    {
        std::FILE* f = std::fopen(victim.c_str(), "wb");
        std::fputs("precious", f);
        std::fclose(f);
    }
    // Under the temporaries' names: the links are removed, the files written inside.
    plant("lk.csv.part", victim);
    plant("lk.nrec.part", victim);
    plant("lk.bin.tmp", victim);
    std::remove((box() + "/lk.csv").c_str());
    const auto r = sandboxed(write_script("sb_link_tmp.lua", std::string(kWorld) +
                                                                "w:output{ file = 'lk.csv', channels = {'time'} }\n"
                                                                "w:record{ file = 'lk.nrec' }\n"
                                                                "w:run{ steps = 3 }\nw:save_file('lk.bin')\n"));
    INFO(r.error);
    CHECK(r.exit_code == 0);
    CHECK(victim_intact());
    CHECK(exists(box() + "/lk.csv"));
    // Under the files' own names: refused, nothing written.
    plant("lk2.csv", victim);
    CHECK_THAT(refused("sb_link_out.lua", std::string(kWorld) + "w:output{ file = 'lk2.csv', channels = {'time'} }\n"),
               Contains("sb_link_out.lua:5: sandbox: output file 'lk2.csv' is a symbolic link"));
    plant("lk2.bin", victim);
    CHECK_THAT(refused("sb_link_save.lua", std::string(kWorld) + "w:save_file('lk2.bin')\n"),
               Contains("save_file path 'lk2.bin' is a symbolic link"));
    CHECK(victim_intact());
    // Reads: a link to a file outside is outside.
    plant("lk.urdf", "/etc/hostname");
    CHECK_THAT(refused("sb_link_urdf.lua", std::string(kWorld) + "w:urdf{ file = 'lk.urdf' }\n"),
               Contains("URDF file 'lk.urdf' is outside the sandbox directory") && Contains("a link to '/etc/hostname'"));
    plant("lk.state", "/etc/hostname");
    CHECK_THAT(refused("sb_link_restore.lua", std::string(kWorld) + "w:restore_file('lk.state')\n"),
               Contains("restore_file path 'lk.state' is outside the sandbox directory"));
}

TEST_CASE("sandbox: memory and time limits stop a runaway script", "[sandbox]") {
    const auto mem = sandboxed(write_script("sb_mem.lua", "local t = {}\nfor i = 1, 1e9 do t[i] = string.rep('x', 1e5) .. i end\n"),
                               20, 16u << 20);
    CHECK(mem.exit_code == 2);
    CHECK_THAT(mem.error, Contains("not enough memory"));
    const auto loop = sandboxed(write_script("sb_loop.lua", "while true do end\n"), 0.5);
    CHECK(loop.exit_code == 2);
    CHECK_THAT(loop.error, Contains("time limit"));
    // Long inside the steps, not in Lua: stopped between steps.
    const auto run = sandboxed(write_script("sb_steps.lua", std::string(kFreeBody) + "w:run{ duration = 5000 }\n"), 0.5);
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.error, Contains("time limit"));
    // An ensemble's steps run in C++ on worker threads: stopped between chunks of steps.
    const auto ens = sandboxed(
        write_script("sb_ens.lua", std::string(kFreeBody) + "w:ensemble{ members = 8 }:run{ duration = 5000 }\n"), 0.5);
    CHECK(ens.exit_code == 2);
    CHECK_THAT(ens.error, Contains("time limit"));
    // Members live on the C++ heap, outside the Lua memory limit: their number is capped.
    CHECK_THAT(refused("sb_ens_many.lua", std::string(kWorld) + "w:ensemble{ members = 1025 }\n"),
               Contains("sb_ens_many.lua:5: ensemble: field 'members' must be at most 1024, got 1025"));
}

// Issue 31 items 4 and 5: 500 ensembles of 1024 members reached 8 GB in 16 s under a 5 s limit
// (each w:ensemble is a few Lua instructions, so the count hook never fired), then bad_alloc
// ended the process; a 64 MiB body name spent seconds in C++.
TEST_CASE("sandbox: a budget for members and bodies, the time limit checked in every noether call", "[sandbox]") {
    const auto many = sandboxed(write_script("sb_ens_budget.lua", std::string(kWorld) +
                                                                     "for i = 1, 500 do w:ensemble{ members = 1024 } end\n"),
                                5);
    CHECK(many.exit_code == 2);
    CHECK_THAT(many.error, Contains("sb_ens_budget.lua:5: ensemble: sandbox: 4096 members were made already") &&
                               Contains("budget of 4096"));
    CHECK_THAT(refused("sb_bodies.lua", "local noether = require('noether')\nlocal w = noether.world{}\n"
                                        "for i = 1, 100001 do w:body{ name = 'b' .. i, mass = 1, inertia = {1, 1, 1} } end\n"),
               Contains("sb_bodies.lua:3: sandbox: 100000 bodies exist and 1 more would pass the script's budget"));
    // Contact points too (issue 33): a box is 8 of them.
    CHECK_THAT(refused("sb_contacts.lua", "local noether = require('noether')\nlocal w = noether.world{}\n"
                                          "local b = w:body{ name = 'b', mass = 1, inertia = {1, 1, 1}, position = {0, 0, 5} }\n"
                                          "for i = 1, 12501 do w:contact{ body = b, shape = 'box', size = {1, 1, 1} } end\n"),
               Contains("sb_contacts.lua:4: sandbox: 100000 contact points exist and 8 more would pass the script's budget"));
    CHECK_THAT(refused("sb_name.lua", "local noether = require('noether')\nlocal w = noether.world{}\n"
                                      "w:body{ name = string.rep('x', 5000), mass = 1, inertia = {1, 1, 1} }\n"),
               Contains("sb_name.lua:3: body: field 'name' is a string of 5000 bytes; the most a name takes is 4096"));
    // Long C++ work called from a handful of Lua instructions: a URDF imported again and again.
    {
        std::FILE* f = std::fopen((box() + "/chain1500.urdf").c_str(), "w");
        std::fprintf(f, "<robot name='c'>\n");
        for (int i = 0; i < 1500; ++i) {
            std::fprintf(f, "<link name='l%d'><inertial><mass value='1'/><inertia ixx='1e-3' iyy='1e-3' izz='1e-3' "
                            "ixy='0' ixz='0' iyz='0'/></inertial></link>\n", i);
            if (i)
                std::fprintf(f, "<joint name='j%d' type='revolute'><parent link='l%d'/><child link='l%d'/>"
                                "<origin xyz='0.1 0 0'/><axis xyz='0 1 0'/></joint>\n", i, i - 1, i);
        }
        std::fprintf(f, "</robot>\n");
        std::fclose(f);
    }
    const auto slow = sandboxed(write_script("sb_slow_calls.lua",
                                             "local noether = require('noether')\n"
                                             "for i = 1, 60 do noether.world{}:urdf{ file = 'chain1500.urdf' } end\n"),
                                0.3);
    CHECK(slow.exit_code == 2);
    CHECK_THAT(slow.error, Contains("time limit"));
}

// Issue 31 item 5: one call of Lua's own matcher (exponential backtracking) ran 30 s under a 5 s
// limit. The sandbox's find/match/gmatch/gsub check the deadline while they match, and must
// give every result and message the stock library gives.
TEST_CASE("sandbox: pattern matching stops at the time limit and agrees with Lua's own", "[sandbox][patterns]") {
    const auto slow = sandboxed(write_script("sb_pattern.lua", "local s = ('a'):rep(40)\n"
                                                               "return s:find(('a*'):rep(40) .. 'b')\n"),
                                0.5);
    CHECK(slow.exit_code == 2);
    CHECK_THAT(slow.error, Contains("time limit of 0.5 s (in a string pattern match)"));
    // The same through string.gsub and string.gmatch.
    CHECK_THAT(sandboxed(write_script("sb_pattern2.lua", "string.gsub(('a'):rep(40), ('a*'):rep(40) .. 'b', '')\n"), 0.5).error,
               Contains("time limit"));
    CHECK_THAT(sandboxed(write_script("sb_pattern3.lua", "for x in ('a'):rep(40):gmatch(('a*'):rep(40) .. 'b') do end\n"), 0.5).error,
               Contains("time limit"));
    // Every case of pattern_cases.lua, stock library against the sandbox's.
    const std::string cases = std::string(NOETHER_SOURCE_DIR) + "/tests/scenes/lua/pattern_cases.lua";
    noether::lua::ScriptOptions stock;
    const auto a = noether::lua::run_script(cases, stock);
    const auto b = sandboxed(cases, 60, 256u << 20);
    INFO(a.error << b.error);
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    REQUIRE(a.records.size() == 2);
    REQUIRE(b.records.size() == 2);
    CHECK(std::stoi(a.records[0].text) > 10000);
    CHECK(a.records[0].text == b.records[0].text);
    // Line by line, so that a difference is shown where it is.
    std::istringstream la(a.records[1].text), lb(b.records[1].text);
    std::string x, y;
    int differ = 0;
    while (std::getline(la, x) && std::getline(lb, y))
        if (x != y && ++differ <= 10) CHECK(x == y);
    CHECK(differ == 0);
}

TEST_CASE("sandbox: an ordinary scene runs, with its library, and writes inside the directory", "[sandbox]") {
    const std::string csv = box() + "/dp.csv";
    std::remove(csv.c_str());
    noether::lua::ScriptOptions opt;
    opt.sandbox = true;
    opt.sandbox_dir = box();
    opt.params = {{"duration", "1"}, {"csv", "dp.csv"}};
    opt.lua_path.push_back(std::string(NOETHER_SOURCE_DIR) + "/scripts");
    const auto r = noether::lua::run_script(std::string(NOETHER_SOURCE_DIR) + "/scripts/examples/double_pendulum.lua", opt);
    INFO(r.error);
    REQUIRE(r.exit_code == 0);
    CHECK(r.worlds[0].steps == 100);
    CHECK(exists(csv));  // relative output paths are relative to the sandbox directory
}

TEST_CASE("sandbox: the C API runs a scene sandboxed", "[sandbox][c-api]") {
    const std::string probe = write_script("sb_c.lua", "os.execute('true')\n");
    CHECK(noether_run_script_sandboxed(probe.c_str(), 0, nullptr, box().c_str(), nullptr) == 2);
    CHECK_THAT(std::string(noether_script_error()), Contains("field 'execute'"));
    CHECK(noether_run_script_sandboxed(probe.c_str(), 0, nullptr, nullptr, nullptr) == NOETHER_USAGE);
}
