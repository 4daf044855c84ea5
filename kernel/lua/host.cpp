// Running a scene script from a host: summaries, output files, exit codes.
#include <lua.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "world.hpp"

namespace noether {
namespace lua {

namespace {

std::string json_str(const std::string& s) {
    std::string o = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') o += '\\', o += c;
        else if (c == '\n') o += "\\n";
        else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            o += buf;
        } else o += c;
    }
    return o + "\"";
}

std::string json_num(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
}

std::string graph_text(const Model& m) {
    std::ostringstream o;
    const BlockGraph& g = m.graph;
    auto node = [&](int n) { return n < m.nbodies() ? m.bodies[n].name : m.joints[n - m.nbodies()].name; };
    o << "bodies (" << m.nbodies() << "):\n";
    for (const BodyInfo& b : m.bodies) o << "  " << b.name << "  mass " << b.mass << " kg\n";
    o << "joints (" << m.njoints() << "):\n";
    for (const JointInfo& j : m.joints)
        o << "  " << j.name << "  " << j.type << "  " << (j.a < 0 ? std::string("world") : m.bodies[j.a].name) << " -> "
          << m.bodies[j.b].name << "  (" << j.rows << " rows, " << j.dofs << " DOF)" << (j.loop ? "  [loop closure]" : "")
          << "\n";
    o << "loop closures (" << g.loop_joints.size() << "):";
    for (int j : g.loop_joints) o << " " << m.joints[j].name;
    o << "\nelimination order:";
    for (int n : g.order) o << " " << node(n);
    if (!g.loop_joints.empty()) o << " | loop node:";
    for (int j : g.loop_joints) o << " " << m.joints[j].name;
    o << "\ncomponents: " << g.roots.size() << " (";
    for (std::size_t c = 0; c < g.roots.size(); ++c)
        o << (c ? ", " : "") << "root " << node(g.roots[c]) << (g.floating[c] ? " floating" : "");
    o << ")\ndegrees of freedom: " << m.dof() << " by counting (6 x " << m.nbodies() << " bodies - " << m.total_rows
      << " constraint rows)";
    if (!g.loop_joints.empty()) o << "; loop-closure rows may be redundant (the solver reports them when it runs)";
    o << "\n";
    o << "integrator " << m.options.integrator << ", solver " << m.solver_name << ", dt " << m.options.dt << " s\n";
    return o.str();
}

}  // namespace

RunSummary summarize(const World& w) {
    RunSummary s;
    if (!w.model) return s;
    const Model& m = *w.model;
    const Data& d = *w.data;
    s.bodies = m.nbodies();
    s.joints = m.njoints();
    s.loop_joints = static_cast<int>(m.graph.loop_joints.size());
    // Degrees of freedom: 6 per body minus the independent constraint rows (the solver reports
    // closure rows it found dependent).
    s.dof = m.dof() + d.stats.redundant_rows;
    s.integrator = m.options.integrator;
    s.solver = m.solver_name;
    s.dt = m.options.dt;
    s.steps = d.stats.steps;
    s.sim_time = d.time;
    s.wall_s = w.wall;
    s.us_per_step = d.stats.steps ? 1e6 * w.wall / d.stats.steps : 0;
    s.energy_initial = w.e0;
    s.energy_final = w.e_final;
    s.energy_max_abs_dev = w.e_max_dev;
    s.energy_rel_defined = w.e0 != 0;
    s.energy_max_rel_dev = s.energy_rel_defined ? w.e_max_dev / std::fabs(w.e0) : 0;
    s.max_violation = w.v_max;
    s.worst_joint = w.worst_joint;
    s.newton_mean = d.stats.steps ? double(d.stats.newton_total) / d.stats.steps : 0;
    s.newton_max = d.stats.newton_max;
    s.subdivided_steps = d.stats.subdivided_steps;
    s.failed_steps = d.stats.failed_steps;
    s.internal_steps = d.stats.internal_steps;
    s.rejected_steps = d.stats.rejected_steps;
    s.failed = w.failed;
    for (const std::string& x : w.import_warnings) s.warnings.push_back(x);
    for (const Diagnostic& diag : m.warnings) s.warnings.push_back(diag.str());
    for (const Warning& x : d.warnings) s.warnings.push_back(x.message);
    s.graph = graph_text(m);
    return s;
}

std::string RunSummary::to_json() const {
    std::ostringstream o;
    o << "{\"bodies\": " << bodies << ", \"joints\": " << joints << ", \"loop_joints\": " << loop_joints
      << ", \"dof\": " << dof << ", \"integrator\": " << json_str(integrator) << ", \"solver\": " << json_str(solver)
      << ", \"dt\": " << json_num(dt) << ", \"steps\": " << steps << ", \"sim_time\": " << json_num(sim_time)
      << ", \"wall_s\": " << json_num(wall_s) << ", \"us_per_step\": " << json_num(us_per_step)
      << ", \"energy_initial\": " << json_num(energy_initial) << ", \"energy_final\": " << json_num(energy_final)
      << ", \"energy_max_abs_dev\": " << json_num(energy_max_abs_dev)
      << ", \"energy_max_rel_dev\": " << (energy_rel_defined ? json_num(energy_max_rel_dev) : "null")
      << ", \"max_violation\": " << json_num(max_violation) << ", \"newton_mean\": " << json_num(newton_mean)
      << ", \"newton_max\": " << newton_max << ", \"subdivided_steps\": " << subdivided_steps
      << ", \"failed_steps\": " << failed_steps << ", \"internal_steps\": " << internal_steps
      << ", \"rejected_steps\": " << rejected_steps << ", \"warnings\": [";
    for (std::size_t i = 0; i < warnings.size(); ++i) o << (i ? ", " : "") << json_str(warnings[i]);
    o << "]}";
    return o.str();
}

std::string summaries_json(const std::vector<RunSummary>& worlds) {
    if (worlds.size() == 1) return worlds[0].to_json();
    std::string json = "[";
    for (std::size_t i = 0; i < worlds.size(); ++i) json += (i ? ", " : "") + worlds[i].to_json();
    return json + "]";
}

std::string RunSummary::to_text() const {
    char buf[512];
    std::ostringstream o;
    std::snprintf(buf, sizeof buf, "  bodies %d, joints %d (%d loop closure%s), degrees of freedom %d\n", bodies, joints,
                  loop_joints, loop_joints == 1 ? "" : "s", dof);
    o << buf;
    std::snprintf(buf, sizeof buf, "  integrator %s, solver %s, dt %g s\n", integrator.c_str(), solver.c_str(), dt);
    o << buf;
    std::snprintf(buf, sizeof buf, "  simulated %.6g s in %lld steps; wall %.3f s (%.2f us/step)\n", sim_time, steps,
                  wall_s, us_per_step);
    o << buf;
    std::snprintf(buf, sizeof buf, "  energy: initial %.8g J, final %.8g J, largest deviation %.3g J", energy_initial,
                  energy_final, energy_max_abs_dev);
    o << buf;
    if (energy_rel_defined) {
        std::snprintf(buf, sizeof buf, " (%.3g relative)", energy_max_rel_dev);
        o << buf;
    }
    std::snprintf(buf, sizeof buf, "\n  constraint violation: largest %.3g%s\n", max_violation,
                  worst_joint.empty() ? "" : (" (joint '" + worst_joint + "')").c_str());
    o << buf;
    std::snprintf(buf, sizeof buf, "  Newton iterations: mean %.2f, max %d; subdivided steps %lld; failed steps %lld\n",
                  newton_mean, newton_max, subdivided_steps, failed_steps);
    o << buf;
    if (internal_steps > 0) {
        std::snprintf(buf, sizeof buf, "  internal steps: %lld accepted, %lld rejected\n", internal_steps, rejected_steps);
        o << buf;
    }
    if (warnings.empty()) o << "  warnings: none\n";
    else {
        o << "  warnings (" << warnings.size() << "):\n";
        for (const std::string& w : warnings) o << "    " << w << "\n";
    }
    return o.str();
}

void finish_outputs(World& w, std::vector<std::string>* notes) {
    for (Output& o : w.outputs) {
        if (!o.fp) continue;
        const bool ok = std::fclose(o.fp) == 0;
        o.fp = nullptr;
        if (!ok) {
            if (notes) notes->push_back("output '" + o.file + "': writing failed; the partial file is '" + o.tmp + "'");
            continue;
        }
        if (w.failed) {
            if (notes)
                notes->push_back("output '" + o.file + "' is incomplete (the run failed at t = " +
                                 std::to_string(w.data->time) + " s); it was left as '" + o.tmp + "'");
            continue;
        }
        if (std::rename(o.tmp.c_str(), o.file.c_str()) != 0) {
            if (notes) notes->push_back("output '" + o.file + "': cannot rename '" + o.tmp + "'");
        }
    }
    w.finished = true;
}

namespace {

ScriptResult run_chunk(const std::string* path, const std::string* code, const std::string& chunk_name,
                       const std::string& dir, const ScriptOptions& options_in) {
    ScriptResult result;
    ScriptOptions options = options_in;
    // require() looks next to the script, in its parent (for lib.*) and in the shared scripts.
    options.lua_path.push_back(dir + "/..");
    options.lua_path.push_back(dir);
    lua_State* L = luaL_newstate();
    if (!L) {
        result.exit_code = 2;
        result.error = "cannot create a Lua state (out of memory)";
        return result;
    }
    luaL_openlibs(L);
    open(L, options);
    Context* ctx = context(L);
    auto collect = [&]() {
        for (World* w : ctx->worlds) {
            if (!w->model) continue;
            std::vector<std::string> notes;
            if (!w->finished) finish_outputs(*w, &notes);
            RunSummary s = summarize(*w);
            for (std::string& n : notes) s.warnings.push_back(std::move(n));
            if (s.failed && result.exit_code == 0) {
                result.exit_code = 1;
                result.error = "the simulation failed: " + w->failure;
            }
            result.worlds.push_back(std::move(s));
        }
    };
    const int loaded = path ? luaL_loadfilex(L, path->c_str(), "t")
                            : luaL_loadbufferx(L, code->data(), code->size(), ("=" + chunk_name).c_str(), "t");
    if (loaded != LUA_OK) {
        result.exit_code = 2;
        result.error = lua_tostring(L, -1);
        lua_close(L);
        return result;
    }
    if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
        result.exit_code = 2;
        result.error = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error";
        collect();
        result.exit_code = 2;
        lua_close(L);
        return result;
    }
    // Every --set value must have been read by noether.params (duration is the host's own).
    for (const auto& kv : options.params) {
        if (kv.first == "duration") continue;
        if (std::find(ctx->used_params.begin(), ctx->used_params.end(), kv.first) == ctx->used_params.end()) {
            result.exit_code = 2;
            result.error = "--set " + kv.first + "=" + kv.second + ": the script never reads it (declare it with "
                           "noether.params{ " + kv.first + " = <default> })";
            lua_close(L);
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
                    lua_close(L);
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
                        run_steps(Ls, 1, *ww, std::llround(T / ww->model->options.dt), context(Ls)->options.progress);
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
            if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
                result.error = lua_tostring(L, -1) ? lua_tostring(L, -1) : "error";
                collect();
                result.exit_code = 2;
                lua_close(L);
                return result;
            }
        }
    }
    collect();
    lua_close(L);
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

ScriptResult run_source(const std::string& code, const std::string& chunk_name, const std::string& dir,
                        const ScriptOptions& options) {
    return run_chunk(nullptr, &code, chunk_name, dir, options);
}

}  // namespace lua
}  // namespace noether
