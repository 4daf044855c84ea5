// `noether plot FILE.csv [-o FILE.png] [--channels a,b,...]`: runs the plotting module of the
// Python package (python/noether/plot.py, matplotlib) with Debian's python3 (docs/viewer.md).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli.hpp"

namespace {

// The plotting script: installed next to the program, else this build's source tree.
std::string plot_script() {
    if (std::string p = noether_cli::installed("plot.py"); !p.empty()) return p;
#ifdef NOETHER_PYTHON_DIR
    return std::string(NOETHER_PYTHON_DIR) + "/noether/plot.py";
#else
    return "";
#endif
}

}  // namespace

int noether_cli::cmd_plot(const std::vector<std::string>& args) {
    const std::string script = plot_script();
    if (script.empty() || access(script.c_str(), R_OK) != 0) {
        std::fprintf(stderr, "noether plot: the plotting module (noether/plot.py) is not installed\n");
        return 2;
    }
    // Debian's python3 carries matplotlib; another python3 first on PATH may not.
    std::string python = "python3";
    if (const char* e = std::getenv("NOETHER_PYTHON"); e && *e) python = e;
    else if (access("/usr/bin/python3", X_OK) == 0) python = "/usr/bin/python3";
    std::vector<std::string> argv_s = {python, script};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) {
        std::perror("noether plot: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[0], argv.data());
        std::fprintf(stderr, "noether plot: cannot run %s (install python3 and python3-matplotlib)\n", argv[0]);
        _exit(2);
    }
    int status = 0;
    pid_t r;
    while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    return r == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
