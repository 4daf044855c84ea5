// Hardening, round 3 (issue 31): writers that never replace what is not theirs, files refused
// before a run instead of after it, recordings the viewer cannot show, messages. Each case
// reproduces a finding and failed before its fix.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scene_util.hpp"

using scenes::kPendulum;
using scenes::write_script;
using Catch::Matchers::Contains;

namespace {

std::string tdir() { return std::string(NOETHER_BINARY_DIR) + "/tests"; }

bool exists(const std::string& p) {
    struct stat st;
    return lstat(p.c_str(), &st) == 0;
}

std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

struct Cli {
    int code;
    std::string err;
};
// The noether command of this build: exit status and standard error.
Cli cli(const std::string& args, const std::string& tag) {
    const std::string errf = tdir() + "/h3_" + tag + ".err";
    const std::string cmd = std::string(NOETHER_BINARY_DIR) + "/bin/noether " + args + " >/dev/null 2>" + errf;
    const int st = std::system(cmd.c_str());
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(errf)};
}

}  // namespace

TEST_CASE("cli: an output equal to an input is refused, the input left as it was", "[hardening3][cli]") {
    const std::string rec = tdir() + "/h3_same.nrec";
    const std::string script = write_script("h3_same.lua", std::string(kPendulum) + "return w\n");
    REQUIRE(cli("run " + script + " --set duration=0.05 --record " + rec, "same_rec").code == 0);
    const std::string before = slurp(rec);
    REQUIRE(before.size() > 12);
    const Cli v = cli("view " + rec + " -o " + rec, "same_view");
    CHECK(v.code == 2);  // was 0: the recording silently replaced by the page
    CHECK_THAT(v.err, Contains("is the input"));
    CHECK(slurp(rec) == before);
    const Cli r = cli("run " + script + " --summary-json " + script, "same_json");
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains("--summary-json") && Contains("is the input"));
    CHECK_THAT(slurp(script), Contains("return w"));
}

TEST_CASE("cli: --summary-json and --record that cannot be written are refused before the run", "[hardening3][cli]") {
    // The scene's own CSV is opened at compile time: no .part means the run never started.
    const std::string csv = tdir() + "/h3_early.csv";
    std::remove((csv + ".part").c_str());
    const std::string script = write_script(
        "h3_early.lua", std::string(kPendulum) + "w:output{ file = '" + csv + "', channels = {'time'} }\nreturn w\n");
    const Cli j = cli("run " + script + " --set duration=1 --summary-json " + tdir() + "/no_such_dir/s.json", "early_json");
    CHECK(j.code == 2);
    CHECK_THAT(j.err, Contains("--summary-json: cannot write") && Contains("no_such_dir") &&
                          Contains("No such file or directory"));
    CHECK_FALSE(exists(csv + ".part"));
    CHECK_FALSE(exists(csv));
    const Cli d = cli("run " + script + " --set duration=1 --record " + tdir(), "early_rec");
    CHECK(d.code == 2);
    CHECK_THAT(d.err, Contains("--record: cannot write") && Contains("is a directory"));
    CHECK_FALSE(exists(csv));
}

TEST_CASE("cli: a symbolic link named as an output is written through, not replaced", "[hardening3][cli]") {
    const std::string target = tdir() + "/h3_target.json", link = tdir() + "/h3_link.json";
    std::remove(link.c_str());
    { std::ofstream(target) << "old"; }
    REQUIRE(symlink(target.c_str(), link.c_str()) == 0);
    const std::string script = write_script("h3_link.lua", std::string(kPendulum) + "return w\n");
    CHECK(cli("run " + script + " --set duration=0.05 --summary-json " + link, "link").code == 0);
    struct stat st;
    REQUIRE(lstat(link.c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));  // was a regular file: the link replaced
    CHECK_THAT(slurp(target), Contains("\"steps\": 5"));
    // sweep --out through the same link
    const std::string swept = write_script(
        "h3_link_sweep.lua", "local noether = require('noether')\nlocal p = noether.params{ dt = 0.01 }\n"
                             "local w = noether.world{ dt = p.dt }\nw:body{ name = 'b', mass = 1, inertia = {1, 1, 1} }\n"
                             "return w\n");
    CHECK(cli("sweep " + swept + " --grid dt=0.01,0.02 --set duration=0.05 --out " + link, "link_sweep").code == 0);
    REQUIRE(lstat(link.c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));
    CHECK_THAT(slurp(target), Contains("member"));
}

// Issue 31 items 6 and 7: a 44-byte recording whose header says frame_floats = 2^62 divided by
// zero (exit 136); NaN frames, a duplicated key and a header that is not JSON were accepted (exit
// 0) and the page then failed. The files are the fuzz regression corpus of the recording reader.
TEST_CASE("view: damaged or hand-made recordings are refused or cut, never shown broken", "[hardening3][cli][view]") {
    const std::string d = std::string(NOETHER_SOURCE_DIR) + "/tests/fuzz/regressions/recording/";
    const std::string html = tdir() + "/h3_view.html";
    auto view = [&](const std::string& f) { return cli("view " + d + f + " -o " + html, "view_" + f); };
    const struct {
        const char* file;
        const char* says;
    } refused[] = {
        {"frame_floats_2p62.nrec", "the header's \"format\" must be \"noether-recording\""},  // was exit 136 (SIGFPE)
        {"frame_floats_2p62_formatted.nrec", "\"frame_floats\" is 4611686018427387904 but its 0 bodies need 3 + 7 x 0 = 3"},
        {"duplicate_frame_floats.nrec", "the header has the key \"frame_floats\" twice"},
        {"not_json.nrec", "the header is not JSON"},
        {"inf_frame0.nrec", "its first frame has a non-finite energy"},
    };
    for (const auto& c : refused) {
        const Cli v = view(c.file);
        INFO(c.file);
        CHECK(v.code == 2);
        CHECK_THAT(v.err, Contains(c.says));
    }
    // A non-finite value later on: the frames before it are shown, and the command says so.
    std::remove(html.c_str());
    const Cli nan2 = view("nan_frame2.nrec");
    CHECK(nan2.code == 0);
    CHECK_THAT(nan2.err, Contains("frame 2 has a non-finite body 0 pose; the 2 frames before it are shown"));
    CHECK(exists(html));
}

// Issue 31 item 8: dp45-projection at atol = rtol = 1e-300 failed mid-run with "non-finite value".
TEST_CASE("dp45-projection refuses a tolerance double precision cannot meet, before the run", "[hardening3][cli]") {
    const std::string dp = std::string(NOETHER_SOURCE_DIR) + "/scripts/examples/double_pendulum.lua";
    const Cli r = cli("run " + dp + " --set integrator=dp45-projection --option atol=1e-300 --option rtol=1e-300", "dp45_tol");
    CHECK(r.code == 2);  // was 1, "non-finite value"
    CHECK_THAT(r.err, Contains("option 'rtol' is 1e-300") && Contains("double precision"));
    // atol alone may be tiny: the error ratio no longer overflows
    const Cli ok = cli("run " + dp + " --set integrator=dp45-projection --set duration=0.2 --option atol=1e-300 --option rtol=1e-8",
                       "dp45_atol");
    CHECK(ok.code == 0);
}

// Issue 31 item 5: a sweep member that loops forever (without --sandbox) hung the whole sweep.
TEST_CASE("sweep --time-limit stops a member that never ends, the others finish", "[hardening3][cli][sweep]") {
    const std::string scene = write_script(
        "h3_forever.lua", "local noether = require('noether')\nlocal p = noether.params{ x = 1 }\n"
                          "if p.x > 1 then while true do end end\n"
                          "local w = noether.world{ dt = 0.01 }\nw:body{ name = 'b', mass = 1, inertia = {1, 1, 1} }\n"
                          "return w\n");
    const std::string out = tdir() + "/h3_forever.csv";
    std::remove(out.c_str());
    const Cli r = cli("sweep " + scene + " --grid x=1,2,0.5 --set duration=0.05 --time-limit 2 --out " + out, "forever");
    CHECK(r.code == 1);  // one member failed
    const std::string rows = slurp(out);
    CHECK_THAT(rows, Contains("the script ran longer than its time limit of 2"));
    CHECK(std::count(rows.begin(), rows.end(), '\n') == 4);  // header and three members
    // The same limit on a single run.
    const std::string spin = write_script("h3_spin.lua", "while true do end\n");
    const Cli s = cli("run " + spin + " --time-limit 0.3", "spin");
    CHECK(s.code == 2);
    CHECK_THAT(s.err, Contains("h3_spin.lua:1: the script ran longer than its time limit of 0.3"));
    // ... also inside one call of the string library's matcher (lua/pattern.cpp).
    const std::string pat = write_script("h3_pattern.lua", "print(('a'):rep(40):find(('a*'):rep(40) .. 'b'))\n");
    const Cli m = cli("run " + pat + " --time-limit 0.3", "pattern");
    CHECK(m.code == 2);
    CHECK_THAT(m.err, Contains("time limit of 0.3 s (in a string pattern match)"));
}
