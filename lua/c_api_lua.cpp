// C API: running Lua scenes from a C host.
#include <cstdlib>
#include <cstring>
#include <string>

#include "noether_lua.h"
#include "noether/sdk/c_bridge.hpp"
#include "noether/lua.hpp"

namespace {
thread_local std::string g_script_error;
}

namespace {
int run_script(const char* path, int nset, const char* const* set, const char* sandbox_dir, char** summary_json);
}

extern "C" {

int noether_run_script(const char* path, int nset, const char* const* set, char** summary_json) {
    return run_script(path, nset, set, nullptr, summary_json);
}

noether_run* noether_script_load(const char* path, int nset, const char* const* set, int world) {
    using noether::c_bridge::set_error;
    auto refuse = [](int status, const std::string& msg) -> noether_run* {
        g_script_error = msg;
        set_error(status, msg);
        return nullptr;
    };
    if (!path) return refuse(NOETHER_USAGE, "noether_script_load: path is NULL");
    noether::lua::ScriptOptions opt;
    for (int i = 0; i < nset; ++i) {
        const std::string kv = set && set[i] ? set[i] : "";
        const std::size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0)
            return refuse(NOETHER_BAD_INPUT, "noether_script_load: set[" + std::to_string(i) + "] = '" + kv +
                                                 "' is not name=value");
        opt.params[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    noether::lua::ScriptResult r;
    std::shared_ptr<noether::lua::Scene> scene;
    try {
        scene = noether::lua::load_scene(path, opt, &r);
    } catch (const std::exception& e) {
        return refuse(NOETHER_BAD_INPUT, e.what());
    }
    if (!scene) return refuse(NOETHER_BAD_INPUT, r.error);
    if (world < 0 || world >= scene->worlds())
        return refuse(NOETHER_BAD_INPUT, std::string(path) + ": the script makes " + std::to_string(scene->worlds()) +
                                             " world(s); there is no world " + std::to_string(world));
    // The run stays the scene's (the pointer keeps the scene and its Lua state alive); its Lua
    // callbacks run at noether_run_steps as under `noether run`.
    g_script_error.clear();
    set_error(NOETHER_OK, "");
    return noether::c_bridge::wrap_hosted_run(scene->run(world), scene->hooks(world));
}

int noether_run_script_sandboxed(const char* path, int nset, const char* const* set, const char* sandbox_dir,
                                 char** summary_json) {
    if (!sandbox_dir) return NOETHER_USAGE;
    return run_script(path, nset, set, sandbox_dir, summary_json);
}

}  // extern "C"

namespace {

int run_script(const char* path, int nset, const char* const* set, const char* sandbox_dir, char** summary_json) {
    if (summary_json) *summary_json = nullptr;
    if (!path) return NOETHER_USAGE;
    noether::lua::ScriptOptions opt;
    if (sandbox_dir) {
        opt.sandbox = true;
        opt.sandbox_dir = sandbox_dir;
    }
    for (int i = 0; i < nset; ++i) {
        const std::string kv = set && set[i] ? set[i] : "";
        const std::size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) return NOETHER_BAD_INPUT;
        opt.params[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    const noether::lua::ScriptResult r = noether::lua::run_script(path, opt);
    if (summary_json) {
        const std::string json = noether::lua::summaries_json(r.worlds);
        char* out = static_cast<char*>(std::malloc(json.size() + 1));
        if (out) std::memcpy(out, json.c_str(), json.size() + 1);
        *summary_json = out;
    }
    g_script_error = r.error;
    return r.exit_code;
}

}  // namespace

extern "C" {

const char* noether_script_error(void) { return g_script_error.c_str(); }

}  // extern "C"
