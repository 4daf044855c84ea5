// Every writer of noether goes through OutputFile (issue 31 items 2 and 3): a regular file is
// replaced atomically, anything else is written in place and never replaced, a link is written
// through (or refused where links are not followed), a planted temporary cannot redirect a write.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "noether/error.hpp"
#include "noether/output_file.hpp"

using Catch::Matchers::Contains;

namespace {

std::string dir() {
    const std::string d = std::string(NOETHER_BINARY_DIR) + "/tests/output_file";
    mkdir((std::string(NOETHER_BINARY_DIR) + "/tests").c_str(), 0755);
    mkdir(d.c_str(), 0755);
    return d;
}

std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

void put(const std::string& p, const std::string& text) {
    std::ofstream f(p, std::ios::binary);
    f << text;
}

mode_t lmode(const std::string& p) {
    struct stat st;
    return lstat(p.c_str(), &st) == 0 ? st.st_mode : 0;
}

}  // namespace

TEST_CASE("output file: a regular file is replaced whole, its temporary removed", "[output-file]") {
    const std::string p = dir() + "/plain.txt";
    put(p, "old");
    CHECK(noether::write_file(p, "new text") == "");
    CHECK(slurp(p) == "new text");
    CHECK(lmode(p + ".part") == 0);
}

TEST_CASE("output file: a FIFO is written in place, never replaced by a regular file", "[output-file]") {
    const std::string p = dir() + "/fifo";
    unlink(p.c_str());
    REQUIRE(mkfifo(p.c_str(), 0600) == 0);
    const int reader = ::open(p.c_str(), O_RDONLY | O_NONBLOCK);  // so that the writer's open does not wait
    REQUIRE(reader >= 0);
    CHECK(noether::write_file(p, "through the pipe") == "");
    char buf[64] = {};
    const ssize_t n = ::read(reader, buf, sizeof buf - 1);
    ::close(reader);
    CHECK(std::string(buf, n > 0 ? n : 0) == "through the pipe");
    CHECK(S_ISFIFO(lmode(p)));  // was renamed over by <fifo>.part: a regular file
    CHECK(lmode(p + ".part") == 0);
    CHECK(noether::output_problem(p) == "");
}

TEST_CASE("output file: a symbolic link is written through to its target, or refused when links are not followed",
          "[output-file]") {
    const std::string target = dir() + "/target.txt", link = dir() + "/link.txt";
    put(target, "old");
    unlink(link.c_str());
    REQUIRE(symlink(target.c_str(), link.c_str()) == 0);
    CHECK(noether::write_file(link, "through the link") == "");
    CHECK(S_ISLNK(lmode(link)));  // was replaced by a regular file, the target left as it was
    CHECK(slurp(target) == "through the link");
    CHECK_THAT(noether::write_file(link, "x", false), Contains("is a symbolic link"));
    // A dangling link: the write creates its target (and says beforehand that it can).
    const std::string nowhere = dir() + "/created_by_write.txt", dangling = dir() + "/dangling.txt";
    std::remove(nowhere.c_str());
    unlink(dangling.c_str());
    REQUIRE(symlink(nowhere.c_str(), dangling.c_str()) == 0);
    CHECK(noether::output_problem(dangling) == "");
    CHECK(noether::write_file(dangling, "created") == "");
    CHECK(S_ISLNK(lmode(dangling)));
    CHECK(slurp(nowhere) == "created");
    CHECK_THAT(noether::output_problem(link, false), Contains("symbolic link"));
    CHECK(slurp(target) == "through the link");
}

TEST_CASE("output file: a link planted under the temporary's name is removed, not written through", "[output-file]") {
    const std::string victim = dir() + "/victim.txt", p = dir() + "/out.csv";
    put(victim, "keep me");
    unlink(p.c_str());
    unlink((p + ".part").c_str());
    REQUIRE(symlink(victim.c_str(), (p + ".part").c_str()) == 0);
    noether::OutputFile f;
    f.open(p, ".part", false);
    std::fputs("mine", f.fp());
    CHECK(f.commit() == "");
    CHECK(slurp(victim) == "keep me");
    CHECK(slurp(p) == "mine");
}

TEST_CASE("output file: directories and missing directories are refused up front with the reason", "[output-file]") {
    CHECK_THAT(noether::output_problem(dir()), Contains("is a directory"));
    CHECK_THAT(noether::output_problem(dir() + "/nodir/x.json"), Contains("nodir") && Contains("No such file"));
    CHECK_THROWS_WITH(noether::OutputFile().open(dir() + "/nodir/x.csv"),
                      Contains("cannot write") && Contains("No such file or directory"));
    CHECK(noether::output_problem(dir() + "/fresh.json") == "");
    CHECK(noether::same_file(dir(), dir() + "/."));
    CHECK_FALSE(noether::same_file(dir() + "/plain.txt", dir() + "/absent"));
}
