// A C++ host of the installed package: runs a Lua scene with noether::lua::run_script and checks
// its summary (the double pendulum of maximal-vi.md recipe 8: energy within [0, 0.364] J).
#include <cstdio>

#include "noether/lua.hpp"

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    noether::lua::ScriptOptions opt;
    opt.params["duration"] = "5";
    const noether::lua::ScriptResult r = noether::lua::run_script(argv[1], opt);
    if (r.exit_code != 0 || r.worlds.size() != 1) {
        std::fprintf(stderr, "cpp host: run failed: %s\n", r.error.c_str());
        return 1;
    }
    const noether::RunSummary& s = r.worlds[0];
    if (s.steps != 500 || s.energy_max_abs_dev > 0.37 || s.energy_max_abs_dev < 0.1 || s.max_violation > 1e-12) {
        std::fprintf(stderr, "cpp host: unexpected summary %s\n", s.to_json().c_str());
        return 1;
    }
    std::printf("cpp host: ok (%lld steps, largest energy deviation %.3g J)\n", s.steps, s.energy_max_abs_dev);
    return 0;
}
