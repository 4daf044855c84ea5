// Fuzz target: Lua text run as a scene in the sandbox (small heap and time limits). Every input
// must end in a result or an error message, never a crash or an escape.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "noether/lua.hpp"

#ifndef NOETHER_SCRIPTS_DIR
#define NOETHER_SCRIPTS_DIR "scripts"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 16 * 1024) return 0;
    static const std::string box = [] {
        const std::string d = "/tmp/noether_fuzz_lua_" + std::to_string(getpid());
        mkdir(d.c_str(), 0700);
        return d;
    }();
    noether::lua::ScriptOptions opt;
    opt.sandbox = true;
    opt.sandbox_dir = box;
    opt.sandbox_memory = 32u << 20;
    opt.sandbox_seconds = 2;
    opt.lua_path.push_back(NOETHER_SCRIPTS_DIR);
    const std::string code(reinterpret_cast<const char*>(data), size);
    noether::lua::run_source(code, "fuzz.lua", box, opt);
    return 0;
}
