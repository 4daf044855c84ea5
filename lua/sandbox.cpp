// The sandbox for untrusted scenes. What it protects against: a scene running programs or
// reading and writing files outside the sandbox directory through the Lua libraries (os, io,
// package loaders, binary chunks, debug) or through noether itself (outputs, save/restore
// files, URDF files, plugin directories — a plugin is native code), and a scene exhausting the
// Lua heap or running forever (also inside long runs). What it does not: memory taken by the
// mechanism itself (a scene may still build a very large model; the step guard max_steps and
// the time limit bound its running), and the trust placed in the plugins the host loads.
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "world.hpp"

namespace noether {
namespace lua {

namespace {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Heap {
    std::size_t used = 0, limit = 0;
};

void* limited_alloc(void* ud, void* ptr, std::size_t osize, std::size_t nsize) {
    Heap* h = static_cast<Heap*>(ud);
    const std::size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        std::free(ptr);
        h->used -= old;
        return nullptr;
    }
    if (nsize > old && h->used - old + nsize > h->limit) return nullptr;  // Lua raises "not enough memory"
    void* p = std::realloc(ptr, nsize);
    if (p) h->used = h->used - old + nsize;
    return p;
}

void time_hook(lua_State* L, lua_Debug*) {
    Context* ctx = try_context(L);
    if (ctx && ctx->deadline > 0 && now_s() > ctx->deadline)
        luaL_error(L, "sandbox: the script ran longer than its time limit of %f s", ctx->options.sandbox_seconds);
}

// require() in the sandbox: the noether module, and Lua *text* files from the script's
// directory, its parent and the shared scripts (searched here, not through package.path).
int sandbox_searcher(lua_State* L) {
    const char* name = luaL_checkstring(L, 1);
    lua_getfield(L, lua_upvalueindex(1), "n");
    const lua_Integer n = lua_tointeger(L, -1);
    lua_pop(L, 1);
    std::string rel = name;
    for (char& c : rel)
        if (c == '.') c = '/';
    if (rel.find("..") != std::string::npos || (!rel.empty() && rel[0] == '/')) {
        lua_pushfstring(L, "\n\tsandbox: module name '%s' is not allowed", name);
        return 1;
    }
    std::string tried;
    for (lua_Integer i = 1; i <= n; ++i) {
        lua_rawgeti(L, lua_upvalueindex(1), i);
        const std::string file = std::string(lua_tostring(L, -1)) + "/" + rel + ".lua";
        lua_pop(L, 1);
        if (access(file.c_str(), R_OK) != 0) {
            tried += "\n\tno file '" + file + "'";
            continue;
        }
        if (luaL_loadfilex(L, file.c_str(), "t") != LUA_OK) return lua_error(L);
        lua_pushstring(L, file.c_str());
        return 2;
    }
    lua_pushstring(L, tried.c_str());
    return 1;
}

// load() in the sandbox: text chunks only, in the given environment or the global one.
int sandbox_load(lua_State* L) {
    std::size_t len = 0;
    const char* code = luaL_checklstring(L, 1, &len);
    const char* chunkname = luaL_optstring(L, 2, "=(load)");
    if (luaL_loadbufferx(L, code, len, chunkname, "t") != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (!lua_isnoneornil(L, 4)) {
        lua_pushvalue(L, 4);
        if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
    }
    return 1;
}

std::string real_dir(const std::string& dir) {
    char buf[PATH_MAX];
    if (realpath(dir.c_str(), buf)) return buf;
    return "";
}

}  // namespace

lua_State* new_state(const ScriptOptions& options) {
    if (!options.sandbox) {
        lua_State* L = luaL_newstate();
        if (L) luaL_openlibs(L);
        return L;
    }
    // The heap record outlives the state: close_state() frees it after lua_close.
    Heap* heap = new Heap{0, options.sandbox_memory};
    lua_State* L = lua_newstate(limited_alloc, heap);
    if (!L) {
        delete heap;
        return nullptr;
    }
    // Safe libraries only.
    static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},         {LUA_LOADLIBNAME, luaopen_package},
                                    {LUA_COLIBNAME, luaopen_coroutine}, {LUA_TABLIBNAME, luaopen_table},
                                    {LUA_STRLIBNAME, luaopen_string},   {LUA_MATHLIBNAME, luaopen_math},
                                    {LUA_UTF8LIBNAME, luaopen_utf8},    {LUA_OSLIBNAME, luaopen_os},
                                    {nullptr, nullptr}};
    for (const luaL_Reg* lib = libs; lib->func; ++lib) {
        luaL_requiref(L, lib->name, lib->func, 1);
        lua_pop(L, 1);
    }
    // os: clock, time, date, difftime only.
    lua_newtable(L);
    lua_getglobal(L, "os");
    for (const char* f : {"clock", "time", "date", "difftime"}) {
        lua_getfield(L, -1, f);
        lua_setfield(L, -3, f);
    }
    lua_pop(L, 1);
    lua_setglobal(L, "os");
    // base: no files, no binary chunks.
    for (const char* f : {"dofile", "loadfile"}) {
        lua_pushnil(L);
        lua_setglobal(L, f);
    }
    lua_pushcfunction(L, sandbox_load);
    lua_setglobal(L, "load");
    // string.dump makes binary chunks; nothing may load them, but remove it anyway.
    lua_getglobal(L, "string");
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_pop(L, 1);
    // package: no C loaders, no loadlib; require searches preload and our text-only searcher.
    lua_getglobal(L, "package");
    lua_pushnil(L);
    lua_setfield(L, -2, "loadlib");
    lua_pushstring(L, "");
    lua_setfield(L, -2, "cpath");
    lua_createtable(L, 2, 0);
    lua_getfield(L, -2, "searchers");
    lua_rawgeti(L, -1, 1);  // the preload searcher
    lua_rawseti(L, -3, 1);
    lua_pop(L, 1);
    lua_createtable(L, 4, 1);  // directories for the text searcher
    int n = 0;
    for (const std::string& d : options.lua_path) {
        lua_pushstring(L, d.c_str());
        lua_rawseti(L, -2, ++n);
    }
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "n");
    lua_pushcclosure(L, sandbox_searcher, 1);
    lua_rawseti(L, -2, 2);
    lua_setfield(L, -2, "searchers");
    lua_pop(L, 1);
    lua_sethook(L, time_hook, LUA_MASKCOUNT, 100000);
    return L;
}

void close_state(lua_State* L) {
    void* ud = nullptr;
    const lua_Alloc f = lua_getallocf(L, &ud);
    lua_close(L);
    if (f == limited_alloc) delete static_cast<Heap*>(ud);
}

std::string sandbox_path(lua_State* L, const std::string& path, bool write, const char* what) {
    Context* ctx = context(L);
    if (!ctx->options.sandbox) return path;
    const std::string box = real_dir(ctx->options.sandbox_dir);
    if (box.empty()) fail(L, "sandbox: the sandbox directory '%s' does not exist", ctx->options.sandbox_dir);
    // A relative path is relative to the sandbox directory.
    const std::string full = !path.empty() && path[0] == '/' ? path : box + "/" + path;
    const std::size_t slash = full.rfind('/');
    const std::string dir = real_dir(slash == 0 ? "/" : full.substr(0, slash));
    std::string base = full.substr(slash + 1);
    auto below = [&](const std::string& root) {
        return !root.empty() && !dir.empty() && (dir == root || dir.compare(0, root.size() + 1, root + "/") == 0);
    };
    bool ok = below(box) && !base.empty() && base != "." && base != "..";
    if (!ok && !write) {
        for (const std::string& d : ctx->options.lua_path)
            if (below(real_dir(d))) ok = !base.empty();
    }
    if (!ok)
        fail(L, "sandbox: %s '%s' is outside the sandbox directory '%s'%s", what, path, box,
             write ? "" : " (and the script's directory)");
    return dir + "/" + base;
}

void sandbox_start_clock(Context& ctx) {
    if (ctx.options.sandbox) ctx.deadline = now_s() + ctx.options.sandbox_seconds;
}

void sandbox_check_time(lua_State* L) {
    Context* ctx = context(L);
    if (ctx->deadline > 0 && now_s() > ctx->deadline) {
        char buf[128];
        std::snprintf(buf, sizeof buf, "sandbox: the script ran longer than its time limit of %g s",
                      ctx->options.sandbox_seconds);
        throw LuaFail(buf);
    }
}

}  // namespace lua
}  // namespace noether
