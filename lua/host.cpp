// Running a scene script from a host: summaries, output files, exit codes.
#include <lua.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "world.hpp"

namespace noether {
namespace lua {

namespace {

// Runs one Lua callback of a loaded scene's world (Scene::hooks) at the host's steps.
struct SceneHooks final : RunHooks {
    lua_State* L;
    World* w;
    std::mutex* lock;
    SceneHooks(lua_State* L_, World* w_, std::mutex* m) : L(L_), w(w_), lock(m) {}
    void before_step(Run&) override {
        if (w->on_step != LUA_NOREF) invoke(w->on_step);
    }
    void on_sample(Run&, int output) override {
        if (w->output_callback[output] != LUA_NOREF) invoke(w->output_callback[output]);
    }
    void invoke(int ref) {
        std::lock_guard<std::mutex> hold(*lock);
        Context* ctx = context(L);
        sandbox_start_clock(*ctx);  // each callback gets the script's time limit (if any) anew
        const int top = lua_gettop(L);
        lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
        lua_rawgeti(L, LUA_REGISTRYINDEX, w->self_ref);
        try {
            call(L, 1);
        } catch (const LuaFail& e) {
            lua_settop(L, top);
            throw ScriptError(e.what());
        }
    }
};

}  // namespace

struct Scene::Impl {
    lua_State* L = nullptr;
    std::mutex lock;
    std::vector<World*> worlds;
    std::vector<std::unique_ptr<SceneHooks>> hooks;  // per world, null without callbacks
    ~Impl() {
        if (L) close_state(L);
    }
};

Scene::Scene(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Scene::~Scene() = default;
int Scene::worlds() const { return static_cast<int>(impl_->worlds.size()); }
std::shared_ptr<Run> Scene::run(int i) { return std::shared_ptr<Run>(shared_from_this(), impl_->worlds.at(i)->run.get()); }
RunHooks* Scene::hooks(int i) { return impl_->hooks.at(i).get(); }
double Scene::duration(int i) const { return impl_->worlds.at(i)->duration; }

namespace {

ScriptResult run_chunk(const std::string* path, const std::string* code, const std::string& chunk_name,
                       const std::string& dir, const ScriptOptions& options_in,
                       std::shared_ptr<Scene>* scene_out = nullptr) {
    ScriptResult result;
    ScriptOptions options = options_in;
    // require() looks next to the script, in its parent (for lib.*) and in the shared scripts.
    options.lua_path.push_back(dir + "/..");
    options.lua_path.push_back(dir);
    lua_State* L = new_state(options);
    if (!L) {
        result.exit_code = 2;
        result.error = "cannot create a Lua state (out of memory)";
        return result;
    }
    open(L, options);
    if (scene_out) context(L)->live = true;
    if (options.member >= 0) {
        // A sweep member shares the process with the other members: os.exit would end them all
        // (and tear down the thread pool under them). It raises an error instead.
        lua_getglobal(L, "os");
        if (lua_istable(L, -1)) {
            lua_pushcfunction(L, [](lua_State* Ls) -> int {
                return luaL_error(Ls, "os.exit is not available in a sweep member (it would end every member of the sweep)");
            });
            lua_setfield(L, -2, "exit");
        }
        lua_pop(L, 1);
    }
    Context* ctx = context(L);
    sandbox_start_clock(*ctx);
    // aborted: the script raised an error; outputs of runs it had not finished stay .part.
    auto collect = [&](bool aborted) {
        result.sweep = ctx->sweep;
        result.records = ctx->records;
        for (const auto& w : ctx->worlds) {
            if (!w->run) {
                ++result.uncompiled;
                continue;
            }
            std::vector<std::string> notes;
            if (aborted) w->run->abort("the script stopped with an error");
            w->run->finish(&notes);
            RunSummary s = w->run->summary();
            if (ctx->options.check_only) s.graph = w->run->graph_report();  // before any step: the initial state
            for (const std::string& n : notes) s.warnings.push_back(n);
            for (std::string& w : s.warnings) w = lua_wording(w);  // the kernel's suggestions in Lua
            if (aborted)  // the error names the files it left unfinished (the README promises it)
                for (const std::string& n : notes) result.error += "\n  " + n;
            if (s.failed && result.exit_code == 0) {
                result.exit_code = 1;
                result.error = "the simulation failed: " + w->run->failure();
            }
            if (!w->run->outputs_ok() && result.exit_code == 0) {
                result.exit_code = 1;
                result.error = "outputs could not be written completely:";
                for (const std::string& n : notes) result.error += " " + n;
            }
            result.worlds.push_back(std::move(s));
        }
        bool ensembles_ok = true;
        const std::vector<std::string> notes = finish_ensembles(*ctx, aborted, &ensembles_ok);
        if (!ensembles_ok && result.exit_code == 0) {
            result.exit_code = 1;
            result.error = "outputs could not be written completely:";
            for (const std::string& n : notes) result.error += " " + n;
        }
        if (!notes.empty() && !result.worlds.empty())
            for (const std::string& n : notes) result.worlds.front().warnings.push_back("ensemble " + n);
    };
    const int loaded = path ? luaL_loadfilex(L, path->c_str(), "t")
                            : luaL_loadbufferx(L, code->data(), code->size(), ("=" + chunk_name).c_str(), "t");
    if (loaded != LUA_OK) {
        result.exit_code = 2;
        result.error = lua_tostring(L, -1);
        close_state(L);
        return result;
    }
    // The script raised an error: exit 2 with its message; its runs are stopped and collected.
    auto script_error = [&]() {
        result.exit_code = 2;
        result.error = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error";
        collect(true);
        close_state(L);
        return result;
    };
    if (lua_pcall(L, 0, 1, 0) != LUA_OK) return script_error();
    // Every --set value must have been read by noether.params (duration is the host's own).
    for (const auto& kv : options.params) {
        if (kv.first == "duration") continue;
        if (std::find(ctx->used_params.begin(), ctx->used_params.end(), kv.first) == ctx->used_params.end()) {
            result.exit_code = 2;
            result.error = "--set " + kv.first + "=" + kv.second + ": the script never reads it (declare it with "
                           "noether.params{ " + kv.first + " = <default> })";
            close_state(L);
            return result;
        }
    }
    // A script that returns its world without running it: run it for the duration.
    if (World* w = to_world(L, -1)) {
        if (!w->data || w->data->stats.steps == 0) {
            double T = w->duration >= 0 ? w->duration : 10.0;
            auto it = options.params.find("duration");
            if (it != options.params.end()) {
                char* end = nullptr;
                T = std::strtod(it->second.c_str(), &end);
                if (it->second.empty() || *end != '\0' || !(T >= 0)) {
                    result.exit_code = 2;
                    result.error = "--set duration=" + it->second + ": must be a non-negative number of seconds";
                    close_state(L);
                    return result;
                }
            }
            const int widx = lua_gettop(L);
            lua_pushcfunction(L, [](lua_State* Ls) -> int {
                World* ww = to_world(Ls, 1);
                const double T = lua_tonumber(Ls, 2);
                try {
                    ensure_compiled(Ls, *ww);
                    if (!context(Ls)->options.check_only)
                        run_steps(Ls, 1, *ww, ww->run->steps_for(T), context(Ls)->options.progress);
                } catch (const std::exception& e) {
                    lua_pushstring(Ls, e.what());
                    goto error;
                } catch (...) {
                    lua_pushstring(Ls, "error while running the world");
                    goto error;
                }
                return 0;
            error:
                return lua_error(Ls);
            });
            lua_pushvalue(L, widx);
            lua_pushnumber(L, T);
            if (lua_pcall(L, 2, 0, 0) != LUA_OK) return script_error();
        }
    }
    if (scene_out) {
        // A loaded scene: its worlds stay with their Lua state for the host to step.
        auto impl = std::make_unique<Scene::Impl>();
        for (const auto& w : ctx->worlds) {
            if (!w->run) {
                ++result.uncompiled;
                continue;
            }
            RunSummary s = w->run->summary();
            for (std::string& x : s.warnings) x = lua_wording(x);
            result.worlds.push_back(std::move(s));
            impl->worlds.push_back(w.get());
            int callbacks = w->on_step != LUA_NOREF;
            for (int c : w->output_callback) callbacks += c != LUA_NOREF;
            impl->hooks.push_back(callbacks ? std::make_unique<SceneHooks>(L, w.get(), &impl->lock) : nullptr);
        }
        result.sweep = ctx->sweep;
        result.records = ctx->records;
        ctx->deadline = 0;  // the host's own steps have no time limit; callbacks set theirs
        ctx->options.check_only = false;  // from now on a callback's w:step or e:step steps, as under noether run
        impl->L = L;
        *scene_out = std::make_shared<Scene>(std::move(impl));
        return result;
    }
    collect(false);
    close_state(L);
    return result;
}

std::string dir_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

ScriptResult run_script(const std::string& path, const ScriptOptions& options) {
    return run_chunk(&path, nullptr, path, dir_of(path), options);
}

std::shared_ptr<Scene> load_scene(const std::string& path, const ScriptOptions& options_in, ScriptResult* result) {
    ScriptOptions options = options_in;
    options.check_only = true;
    options.record.clear();
    std::shared_ptr<Scene> scene;
    ScriptResult r = run_chunk(&path, nullptr, path, dir_of(path), options, &scene);
    if (r.exit_code != 0) scene.reset();
    if (result) *result = std::move(r);
    return scene;
}

ScriptResult run_source(const std::string& code, const std::string& chunk_name, const std::string& dir,
                        const ScriptOptions& options) {
    return run_chunk(nullptr, &code, chunk_name, dir, options);
}

}  // namespace lua
}  // namespace noether
