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
#include <initializer_list>
#include <sys/stat.h>
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
    if (ctx && past_deadline(*ctx)) {
        // Level 0 in a count hook is the running Lua function: its line, not the hook's.
        luaL_where(L, 0);
        lua_pushstring(L, time_limit_message(*ctx).c_str());
        lua_concat(L, 2);
        lua_error(L);
    }
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

namespace {

// require() in the sandbox, in place of the package library (which is never opened: its
// loaders, loadlib, searchpath and the real library tables in package.loaded are all ways out).
// Answers from the registry's loaded table (which holds only the sandbox's own tables), then
// the preload table (the noether module), then sandbox_searcher. Lua 5.4's semantics: the
// loader gets (name, extra); its result, or true, is recorded as loaded.
int sandbox_require(lua_State* L) {
    const char* name = luaL_checkstring(L, 1);
    lua_settop(L, 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);  // 2
    lua_getfield(L, 2, name);
    if (lua_toboolean(L, -1)) return 1;
    lua_pop(L, 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);  // 3
    if (lua_getfield(L, 3, name) == LUA_TFUNCTION) {
        lua_pushliteral(L, ":preload:");
    } else {
        lua_pop(L, 1);
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_pushcclosure(L, sandbox_searcher, 1);  // searcher(name) with the directories as upvalue
        lua_pushvalue(L, 1);
        lua_call(L, 1, 2);
        if (!lua_isfunction(L, -2)) {
            const char* tried = lua_tostring(L, -2);
            return luaL_error(L, "module '%s' not found:\n\tno field package.preload['%s']%s", name, name,
                              tried ? tried : "");
        }
    }
    // stack: loader, extra
    lua_pushvalue(L, 1);
    lua_insert(L, -2);  // loader, name, extra
    lua_pushvalue(L, -1);
    lua_insert(L, -4);  // extra, loader, name, extra
    lua_call(L, 2, 1);
    if (!lua_isnil(L, -1)) lua_setfield(L, 2, name);
    else lua_pop(L, 1);
    if (lua_getfield(L, 2, name) == LUA_TNIL) {
        lua_pushboolean(L, 1);
        lua_copy(L, -1, -2);
        lua_setfield(L, 2, name);
    }
    lua_rotate(L, -2, 1);  // value, extra
    return 2;
}

// Run a standard library's opener without registering it anywhere (no package.loaded entry,
// no global): its table is left on the stack.
void open_unregistered(lua_State* L, lua_CFunction opener) {
    lua_pushcfunction(L, opener);
    lua_call(L, 0, 1);
}

// Copy the named fields of the table at src into the table at dst (absolute indices).
void copy_fields(lua_State* L, int src, int dst, std::initializer_list<const char*> names) {
    for (const char* f : names) {
        lua_getfield(L, src, f);
        lua_setfield(L, dst, f);
    }
}

}  // namespace

lua_State* new_state(const ScriptOptions& options) {
    if (!options.sandbox) {
        lua_State* L = luaL_newstate();
        if (L) luaL_openlibs(L);
        if (L && options.time_limit > 0) {
            lua_sethook(L, time_hook, LUA_MASKCOUNT, 100000);
            lua_getglobal(L, LUA_STRLIBNAME);
            bound_patterns(L, -1);  // the table strings index too
            lua_pop(L, 1);
        }
        return L;
    }
    // The heap record outlives the state: close_state() frees it after lua_close.
    Heap* heap = new Heap{0, options.sandbox_memory};
    lua_State* L = lua_newstate(limited_alloc, heap);
    if (!L) {
        delete heap;
        return nullptr;
    }
    // The sandbox is built from an allow-list: each standard library is opened without being
    // registered, and the script's globals, its loaded-modules table and the string metatable
    // are fresh tables holding only the functions named here. Nothing unsafe is registered and
    // then removed, so no second reference to it (package.loaded, a metatable, the registry) can
    // survive. Absent by construction: io, os.execute/exit/getenv/remove/rename/tmpname/
    // setlocale, debug, dofile, loadfile, binary chunks, string.dump, the whole package library
    // (C loaders, loadlib, searchpath, package.path/cpath).
    const int top = lua_gettop(L);
    lua_newtable(L);  // the script's globals
    const int G = lua_gettop(L);
    lua_newtable(L);  // registry._LOADED: what require() answers
    const int loaded = lua_gettop(L);
    lua_pushvalue(L, loaded);
    lua_setfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_newtable(L);
    const int preload = lua_gettop(L);
    lua_pushvalue(L, preload);
    lua_setfield(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);

    // base: opened into the state's initial globals table, which is then dropped.
    open_unregistered(L, luaopen_base);
    copy_fields(L, lua_gettop(L), G,
                {"assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "print", "rawequal", "rawget",
                 "rawlen", "rawset", "select", "setmetatable", "tonumber", "tostring", "type", "xpcall",
                 "collectgarbage", "warn", "_VERSION"});
    lua_pop(L, 1);
    lua_pushvalue(L, G);
    lua_setfield(L, G, "_G");
    lua_pushcfunction(L, sandbox_load);
    lua_setfield(L, G, "load");
    lua_pushvalue(L, G);
    lua_setfield(L, loaded, "_G");

    struct Lib {
        const char* name;
        lua_CFunction open;
        std::initializer_list<const char*> fields;
    };
    const Lib libs[] = {
        {LUA_STRLIBNAME, luaopen_string,
         {"byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match", "rep", "reverse", "sub", "upper",
          "pack", "packsize", "unpack"}},
        {LUA_TABLIBNAME, luaopen_table, {"concat", "insert", "move", "pack", "remove", "sort", "unpack"}},
        {LUA_MATHLIBNAME, luaopen_math,
         {"abs", "ceil", "cos", "deg", "exp", "floor", "fmod", "log", "max", "min", "modf", "rad", "sin", "sqrt", "tan",
          "tointeger", "type", "ult", "random", "randomseed", "asin", "acos", "atan", "pi", "huge", "maxinteger",
          "mininteger"}},
        {LUA_COLIBNAME, luaopen_coroutine,
         {"create", "resume", "running", "status", "wrap", "yield", "isyieldable", "close"}},
        {LUA_UTF8LIBNAME, luaopen_utf8, {"char", "charpattern", "codes", "codepoint", "len", "offset"}},
        {LUA_OSLIBNAME, luaopen_os, {"clock", "time", "date", "difftime"}},
    };
    for (const Lib& lib : libs) {
        open_unregistered(L, lib.open);
        lua_newtable(L);
        copy_fields(L, lua_gettop(L) - 1, lua_gettop(L), lib.fields);
        lua_remove(L, -2);  // the library's own table: unreferenced from here on
        lua_pushvalue(L, -1);
        lua_setfield(L, loaded, lib.name);
        lua_setfield(L, G, lib.name);
    }
    // Pattern matching that the time limit can stop (one call of Lua's own can run for hours).
    lua_getfield(L, G, LUA_STRLIBNAME);
    bound_patterns(L, -1);
    lua_pop(L, 1);
    // Strings index the sandbox's string table, not the library's own (which has dump).
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_getfield(L, G, LUA_STRLIBNAME);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 2);

    // require: the noether module (preload) and Lua text files from the script's directories.
    lua_createtable(L, 4, 1);
    int n = 0;
    for (const std::string& d : options.lua_path) {
        lua_pushstring(L, d.c_str());
        lua_rawseti(L, -2, ++n);
    }
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "n");
    lua_pushcclosure(L, sandbox_require, 1);
    lua_setfield(L, G, "require");
    // package: only the two tables require() itself uses.
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, loaded);
    lua_setfield(L, -2, "loaded");
    lua_pushvalue(L, preload);
    lua_setfield(L, -2, "preload");
    lua_setfield(L, G, "package");

    lua_pushvalue(L, G);
    lua_rawseti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    lua_settop(L, top);
    lua_gc(L, LUA_GCCOLLECT);  // the libraries' own tables go now
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
    auto below = [](const std::string& p, const std::string& root) {
        return !root.empty() && !p.empty() && (p == root || p.compare(0, root.size() + 1, root + "/") == 0);
    };
    const bool named = !base.empty() && base != "." && base != "..";
    if (write) {
        // Written: the directory resolved, the file itself never a link (outputs, recordings and
        // save_file are opened without following links, their temporaries created exclusively).
        if (!(named && below(dir, box)))
            fail(L, "sandbox: %s '%s' is outside the sandbox directory '%s'", what, path, box);
        struct stat st;
        if (lstat((dir + "/" + base).c_str(), &st) == 0 && S_ISLNK(st.st_mode))
            fail(L, "sandbox: %s '%s' is a symbolic link; the sandbox writes no file through a link", what, path);
        return dir + "/" + base;
    }
    // Read: the whole path resolved, links included, and the file itself must lie below the
    // sandbox directory or the script's directories.
    char buf[PATH_MAX];
    const std::string file = named && realpath(full.c_str(), buf) ? std::string(buf) : std::string();
    bool ok = named && below(file.empty() ? dir : file, box);
    for (const std::string& d : ctx->options.lua_path)
        if (!ok && named && below(file.empty() ? dir : file, real_dir(d))) ok = true;
    if (!ok)
        fail(L, "sandbox: %s '%s' is outside the sandbox directory '%s' (and the script's directory)%s", what, path, box,
             !file.empty() && file != dir + "/" + base ? " (it is a link to '" + file + "')" : std::string());
    return file.empty() ? dir + "/" + base : file;
}

bool sandbox_follows_links(lua_State* L) { return !context(L)->options.sandbox; }

void sandbox_start_clock(Context& ctx) {
    double limit = ctx.options.sandbox ? ctx.options.sandbox_seconds : 0;
    if (ctx.options.time_limit > 0 && (limit <= 0 || ctx.options.time_limit < limit)) limit = ctx.options.time_limit;
    ctx.limit_seconds = limit;
    if (limit > 0) ctx.deadline = now_s() + limit;
}

bool past_deadline(const Context& ctx) { return ctx.deadline > 0 && now_s() > ctx.deadline; }

std::string time_limit_message(const Context& ctx) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%sthe script ran longer than its time limit of %g s", ctx.options.sandbox ? "sandbox: " : "",
                  ctx.limit_seconds);
    return buf;
}

void sandbox_check_time(lua_State* L) {
    const Context* ctx = context(L);
    if (past_deadline(*ctx)) throw LuaFail(time_limit_message(*ctx));
}

}  // namespace lua
}  // namespace noether
