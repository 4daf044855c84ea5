// Helpers for scene tests: run a script through the host API and read its CSV output.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "noether/lua.hpp"

namespace scenes {

inline std::string example(const std::string& name) {
    return std::string(NOETHER_SOURCE_DIR) + "/scripts/examples/" + name + ".lua";
}
inline std::string out_path(const std::string& name) { return std::string(NOETHER_BINARY_DIR) + "/tests/out_" + name; }

inline noether::lua::ScriptResult run(const std::string& script, std::map<std::string, std::string> params = {},
                                      std::map<std::string, std::string> options = {}) {
    noether::lua::ScriptOptions opt;
    opt.params = std::move(params);
    opt.integrator_options = std::move(options);  // as `noether run --option name=value`
    opt.lua_path.push_back(std::string(NOETHER_SOURCE_DIR) + "/scripts");
    return noether::lua::run_script(script, opt);
}

struct Csv {
    std::vector<std::string> header;
    std::vector<std::vector<double>> rows;
    int col(const std::string& name) const {
        for (std::size_t i = 0; i < header.size(); ++i)
            if (header[i] == name) return static_cast<int>(i);
        return -1;
    }
    std::vector<double> column(const std::string& name) const {
        const int c = col(name);
        std::vector<double> out;
        if (c < 0) return out;
        for (const auto& r : rows) out.push_back(r[c]);
        return out;
    }
};

inline Csv read_csv(const std::string& path) {
    Csv csv;
    std::ifstream f(path);
    std::string line;
    if (!std::getline(f, line)) return csv;
    std::stringstream hs(line);
    std::string cell;
    while (std::getline(hs, cell, ',')) csv.header.push_back(cell);
    while (std::getline(f, line)) {
        std::vector<double> row;
        std::stringstream ls(line);
        while (std::getline(ls, cell, ',')) row.push_back(std::stod(cell));
        csv.rows.push_back(row);
    }
    return csv;
}

// A one-link pendulum scene without its return (tests append what they probe).
inline const char* const kPendulum =
    "local noether = require('noether')\n"
    "local w = noether.world{ dt = 0.01 }\n"
    "local b = w:body{ name = 'bob', mass = 1, inertia = {0.1, 0.1, 0.1}, position = {1, 0, 0} }\n"
    "w:joint{ name = 'j', type = 'revolute', parent = w.world, child = b, anchor = {0, 0, 0}, axis = {0, 1, 0} }\n";

// Write a small script to a file and return its path.
// Written atomically: ctest runs the test cases of one file as parallel processes, and several
// write the same script (a reader must never see it truncated by another writer).
inline std::string write_script(const std::string& name, const std::string& text) {
    const std::string path = std::string(NOETHER_BINARY_DIR) + "/tests/" + name;
    const std::string tmp = path + ".tmp" + std::to_string(::getpid());
    {
        std::ofstream f(tmp);
        f << text;
    }
    std::rename(tmp.c_str(), path.c_str());
    return path;
}

// Run the noether command of this build (output discarded); its exit status, −1 if it did not exit.
inline int cli(const std::string& args) {
    const std::string cmd = std::string(NOETHER_BINARY_DIR) + "/bin/noether " + args + " >/dev/null 2>&1";
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// The same, returning what it wrote to standard error.
inline std::string cli_err(const std::string& args) {
    static int calls = 0;
    const std::string errf = std::string(NOETHER_BINARY_DIR) + "/tests/cli_err_" + std::to_string(::getpid()) + "_" +
                             std::to_string(++calls) + ".txt";
    const std::string cmd = std::string(NOETHER_BINARY_DIR) + "/bin/noether " + args + " >/dev/null 2>" + errf;
    (void)std::system(cmd.c_str());
    std::ifstream f(errf);
    std::stringstream ss;
    ss << f.rdbuf();
    std::remove(errf.c_str());
    return ss.str();
}

}  // namespace scenes
