// The `noether` command: a host like any other, built on the public API.
//
//   noether run SCRIPT [--set name=value]... [--option name=value]... [--summary-json FILE] [--quiet]
//               [--import-report] [--sandbox DIR] [--time-limit SECONDS] [--record FILE.nrec [--fps N]]
//   noether view FILE.nrec [-o FILE.html]
//   noether plot FILE.csv [-o FILE.png] [--channels a,b,...]
//   noether check SCRIPT [--set name=value]... [--option name=value]...
//   noether import FILE.urdf|FILE.xml [--base fixed|floating] [--simulate SECONDS] [--dt DT] [--integrator NAME]
//                  [--option name=value]... [--summary-json FILE] [--keyframe NAME] [--drop-armature]
//   noether sweep SCRIPT [--grid k=a:b:n | --grid k=v1,v2]... [--samples N] [--seed S] [--threads T] [--out F]
//   noether plugins [--json]     list every loaded plugin (kind, name, description, path)
//   noether version
//
// Exit status: 0 success, 1 simulation failed, 2 bad input.
#include <cmath>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <fstream>
#include <unistd.h>

#include "noether/lua.hpp"
#include "noether/noether.hpp"
#include "noether/run.hpp"
#include "noether/mjcf.hpp"
#include "noether/urdf.hpp"

#include "cli.hpp"
#include "noether/output_file.hpp"

std::string noether_cli::installed(const std::string& relative) {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return "";
    exe[n] = '\0';
    const std::string dir = exe;
    const std::string path = dir.substr(0, dir.rfind('/')) + "/../share/noether/" + relative;
    return access(path.c_str(), R_OK) == 0 ? path : "";
}

// Shared Lua helpers: installed next to the program, else the source tree of this build.
std::string noether_cli::scripts_dir() {
    if (!installed("scripts/lib/chains.lua").empty()) return installed("scripts");
#ifdef NOETHER_SCRIPTS_DIR
    return NOETHER_SCRIPTS_DIR;
#else
    return "";
#endif
}

std::string noether_cli::write_out(const std::string& path, const std::string& text) {
    return noether::write_file(path, text);
}

std::string noether_cli::check_out(const std::string& out, const std::vector<std::string>& inputs) {
    for (const std::string& in : inputs)
        if (noether::same_file(out, in)) return "cannot write '" + out + "': it is the input '" + in + "'";
    const std::string why = noether::output_problem(out);
    return why.empty() ? why : "cannot write '" + out + "': " + why;
}

namespace {

// The kernel names options in its suggestions as "option 'NAME' = VALUE" or "(option 'NAME')";
// `noether import` takes them as flags: --integrator NAME, --dt S, --option NAME=VALUE.
std::string cli_wording(const std::string& msg_in) {
    // The URDF importer's settings as `noether import` flags where it has one.
    const std::string msg = noether::reword_import_settings(msg_in, [](const std::string& name, const std::string& value) {
        if (name == "base") return "--base " + value;
        if (name == "limits" && value == "false") return std::string("--no-limits");
        if (name == "couplings" && value == "false") return std::string("--no-couplings");
        if (name == "contacts") return std::string("--ground");
        if (name == "drop_armature") return std::string("--drop-armature");
        if (name == "keyframe") return "--keyframe " + value;
        if (name == "positions")
            return "positions = { " + value + " = ... } in a Lua scene's w:urdf{} (noether import has no flag for it)";
        return name + " = " + value + " in a Lua scene's w:urdf{} (noether import has no flag for it)";
    });
    return noether::reword_options(msg, [](const std::string& name, const std::string& value) {
        return name == "integrator" || name == "dt" ? "--" + name + " " + value : "--option " + name + "=" + value;
    });
}

// The output files a command was given (flag, path; "" for none) can be written and are not its
// input; else the first problem is printed and false returned (exit 2 before any work).
bool outputs_writable(const std::string& cmd, std::initializer_list<std::pair<const char*, const std::string*>> outs,
                      const std::string& input) {
    for (const auto& [flag, path] : outs) {
        if (path->empty()) continue;
        const std::string why = noether_cli::check_out(*path, {input});
        if (!why.empty()) {
            std::fprintf(stderr, "noether %s: %s: %s\n", cmd.c_str(), flag, why.c_str());
            return false;
        }
    }
    return true;
}

void usage(FILE* out) {
    std::fprintf(out,
                 "usage: noether <command> [options]\n"
                 "commands:\n"
                 "  run SCRIPT [--set name=value]... [--option name=value]... [--summary-json FILE] [--quiet]\n"
                 "             [--import-report] [--sandbox DIR] [--time-limit SECONDS] [--record FILE.nrec [--fps N]]\n"
                 "                     run a Lua scene and print its summary; --set: the script's parameters\n"
                 "                     (noether.params), --option: integrator options of every world\n"
                 "                     (e.g. --option points=2 for vi-galerkin); --record: body poses of the\n"
                 "                     first world at N frames per simulated second (default 60) for `noether view`\n"
                 "  check SCRIPT [--set name=value]... [--option name=value]... [--sandbox DIR]\n"
                 "                     build and compile a scene without running it (the script is executed,\n"
                 "                     its steps are not); print its graph\n"
                 "  --sandbox DIR      for untrusted scenes: safe Lua libraries only, files written only below\n"
                 "                     DIR, no plugin directories, Lua heap and wall-time limits (docs/lua.md)\n"
                 "  --time-limit S     stop the script after S seconds of wall time, steps included (exit 2;\n"
                 "                     in the sandbox the limit, default 60 s, applies without it too)\n"
                 "  import FILE.urdf [--base fixed|floating] [--simulate SECONDS] [--dt DT] [--integrator NAME]\n"
                 "             [--option name=value]... [--summary-json FILE] [--record FILE.nrec]\n"
                 "             [--no-limits] [--no-couplings] [--ground [--mu MU]]\n"
                 "                     print the import report and the graph; with --simulate, let the robot\n"
                 "                     move under gravity and print the run summary. Joint limits are enforced\n"
                 "                     unless --no-limits; --ground stands the robot on the ground z = 0 with its\n"
                 "                     sphere, box and capsule <collision> shapes as contacts (friction MU, 1);\n"
                 "                     --no-couplings leaves <mimic> and <coupling> (MJCF: joint equalities)\n"
                 "                     out, for riqn (docs/couplings.md)\n"
                 "  import FILE.xml [--keyframe NAME] [--drop-armature] [--simulate SECONDS] [--dt DT] ...\n"
                 "                     the same for an MJCF (MuJoCo XML) model (docs/mjcf.md): it starts from\n"
                 "                     the keyframe NAME (else qpos0), steps at the file's timestep unless\n"
                 "                     --dt; --drop-armature leaves the joints' armature out (for integrators\n"
                 "                     other than vi-maximal and vi-midpoint)\n"
                 "  sweep SCRIPT [--grid name=lo:hi:n | --grid name=v1,v2,...]... [--samples N] [--seed S]\n"
                 "             [--set name=value]... [--threads T] [--out FILE.csv|FILE.jsonl] [--quiet] [--timing]\n"
                 "             [--sandbox DIR] [--time-limit S]\n"
                 "                     run the scene once per parameter set on every core (or the scene's\n"
                 "                     noether.sweep{}); one row per member; under mpirun the members are split\n"
                 "                     across ranks (docs/ensembles.md, Sweeps)\n"
                 "  view FILE.nrec [-o FILE.html]\n"
                 "                     one self-contained HTML page that plays a recording in the browser\n"
                 "                     (three.js inlined; docs/viewer.md)\n"
                 "  plot FILE.csv [-o FILE.png] [--channels a,b,...]\n"
                 "                     plot a run's CSV output against time (matplotlib; docs/viewer.md)\n"
                 "  plugins [--json]   list the loaded plugins (kind, name, description, path)\n"
                 "  version            print the version\n"
                 "  help               this text\n"
                 "environment: NOETHER_PLUGIN_PATH (':'-separated extra plugin directories)\n");
}

int cmd_plugins(const std::vector<std::string>& args) {
    bool json = false;
    for (const std::string& a : args) {
        if (a == "--json") json = true;
        else {
            std::fprintf(stderr, "noether plugins: unknown option '%s'\n", a.c_str());
            return 2;
        }
    }
    noether::Registry& reg = noether::Registry::global();
    const auto list = reg.list();
    if (json) {
        std::printf("{\"plugins\": [");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const auto& p = list[i];
            std::printf("%s\n  {\"kind\": \"%s\", \"name\": %s, \"description\": %s, \"path\": %s}", i ? "," : "",
                        noether::kind_name(p.kind), noether::json_quote(p.name).c_str(),
                        noether::json_quote(p.description).c_str(), noether::json_quote(p.path).c_str());
        }
        std::printf("\n], \"errors\": [");
        for (std::size_t i = 0; i < reg.errors().size(); ++i)
            std::printf("%s\n  %s", i ? "," : "", noether::json_quote(reg.errors()[i].what()).c_str());
        std::printf("\n]}\n");
    } else {
        std::printf("%-11s %-18s %s\n", "KIND", "NAME", "DESCRIPTION / PATH");
        for (const auto& p : list)
            std::printf("%-11s %-18s %s\n%31s%s\n", noether::kind_name(p.kind), p.name.c_str(), p.description.c_str(),
                        "", p.path.c_str());
        for (const auto& e : reg.errors()) std::fprintf(stderr, "warning: %s\n", e.what());
    }
    return 0;
}

int write_json(const std::string& path, const std::vector<noether::RunSummary>& worlds) {
    const std::string err = noether_cli::write_out(path, noether::summaries_json(worlds) + "\n");
    if (!err.empty()) {
        std::fprintf(stderr, "noether: --summary-json: %s\n", err.c_str());
        return 2;
    }
    return 0;
}

// `noether run` and `noether check`.
int cmd_script(const std::string& cmd, const std::vector<std::string>& args) {
    noether::lua::ScriptOptions opt;
    opt.check_only = cmd == "check";
    std::string script, summary_json;
    bool quiet = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "noether %s: %s needs a value\n", cmd.c_str(), a.c_str());
                std::exit(2);
            }
            return args[++i];
        };
        if (a == "--help" || a == "-h") {
            usage(stdout);
            std::exit(0);
        }
        if (a == "--set" || a == "--option") {  // script parameters; integrator options of every world
            const bool param = a == "--set";
            const std::string kv = value();
            const std::size_t eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) {
                std::fprintf(stderr, "noether %s: %s expects name=value%s, got '%s'\n", cmd.c_str(), a.c_str(),
                             param ? "" : " (an integrator option)", kv.c_str());
                return 2;
            }
            (param ? opt.params : opt.integrator_options)[kv.substr(0, eq)] = kv.substr(eq + 1);
        } else if (a == "--summary-json" && cmd == "run") {
            summary_json = value();
        } else if (a == "--quiet" && cmd == "run") {
            quiet = true;
        } else if (a == "--record" && cmd == "run") {
            opt.record = value();
        } else if (a == "--fps" && cmd == "run") {
            const std::string v = value();
            char* end = nullptr;
            opt.record_fps = std::strtod(v.c_str(), &end);
            if (v.empty() || *end || !(opt.record_fps > 0) || !std::isfinite(opt.record_fps)) {
                std::fprintf(stderr, "noether run: --fps must be a positive number of frames per simulated second, got '%s'\n",
                             v.c_str());
                return 2;
            }
        } else if (a == "--sandbox") {
            opt.sandbox = true;
            opt.sandbox_dir = value();
        } else if (a == "--time-limit") {
            char* end = nullptr;
            const std::string v = value();
            opt.sandbox_seconds = opt.time_limit = std::strtod(v.c_str(), &end);
            if (v.empty() || *end || !(opt.sandbox_seconds > 0)) {
                std::fprintf(stderr, "noether %s: --time-limit must be a positive number of seconds, got '%s'\n",
                             cmd.c_str(), v.c_str());
                return 2;
            }
        } else if (a == "--import-report") {
            opt.print_reports = true;
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "noether %s: unknown option '%s'\n", cmd.c_str(), a.c_str());
            return 2;
        } else if (script.empty()) {
            script = a;
        } else {
            std::fprintf(stderr, "noether %s: one script at a time (got '%s' and '%s')\n", cmd.c_str(), script.c_str(),
                         a.c_str());
            return 2;
        }
    }
    if (script.empty()) {
        std::fprintf(stderr, "noether %s: which script? (noether %s SCRIPT)\n", cmd.c_str(), cmd.c_str());
        return 2;
    }
    // Files written after the run are checked before it: a long run must not end in "cannot write".
    if (!outputs_writable(cmd, {{"--summary-json", &summary_json}, {"--record", &opt.record}}, script)) return 2;
    opt.progress = !quiet && isatty(2);
    const std::string dir = noether_cli::scripts_dir();
    if (!dir.empty()) opt.lua_path.push_back(dir);
    const noether::lua::ScriptResult r = noether::lua::run_script(script, opt);
    if (r.exit_code == 2) {
        std::fprintf(stderr, "noether: %s\n", r.error.c_str());
        return 2;
    }
    for (std::size_t i = 0; i < r.worlds.size(); ++i) {
        const auto& s = r.worlds[i];
        if (opt.check_only) {
            std::printf("%s", s.graph.c_str());
            for (const auto& w : s.warnings) std::printf("warning: %s\n", w.c_str());
        } else {
            std::printf("noether run %s%s\n%s", script.c_str(),
                        r.worlds.size() > 1 ? (" (world " + std::to_string(i + 1) + ")").c_str() : "",
                        s.to_text().c_str());
        }
    }
    if (r.worlds.empty() && r.uncompiled == 0) std::fprintf(stderr, "noether: warning: the script made no world\n");
    else if (r.uncompiled > 0)
        std::fprintf(stderr,
                     "noether: warning: %d world(s) of the script were never compiled or run (return the world, or "
                     "call w:run{} or w:compile())\n",
                     r.uncompiled);
    if (!summary_json.empty() && write_json(summary_json, r.worlds) != 0) return 2;
    if (r.exit_code == 1) {
        std::fprintf(stderr, "noether: %s\n", r.error.c_str());
        return 1;
    }
    return 0;
}

// `noether import`: the import report, the graph, and optionally a run under gravity.
int cmd_import(const std::vector<std::string>& args) {
    std::string file, base = "floating", summary_json, record, keyframe;
    double simulate = -1, dt = 0.005, mu = 1.0;
    bool limits = true, couplings = true, ground = false, dt_given = false, base_given = false, drop_armature = false;
    std::string integrator;
    std::map<std::string, double> extra;
    std::map<std::string, std::string> words;  // --option name=word (e.g. newton=exact)
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "noether import: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return args[++i];
        };
        auto number = [&](const std::string& v, const char* what) {
            char* end = nullptr;
            const double x = std::strtod(v.c_str(), &end);
            if (v.empty() || *end || !(x >= 0)) {
                std::fprintf(stderr, "noether import: %s must be a non-negative number, got '%s'\n", what, v.c_str());
                std::exit(2);
            }
            return x;
        };
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        }
        if (a == "--base") {
            base = value();
            base_given = true;
            if (base != "fixed" && base != "floating") {
                std::fprintf(stderr, "noether import: --base must be fixed or floating, got '%s'\n", base.c_str());
                return 2;
            }
        } else if (a == "--simulate") simulate = number(value(), "--simulate");
        else if (a == "--dt") dt = number(value(), "--dt"), dt_given = true;
        else if (a == "--keyframe") keyframe = value();
        else if (a == "--drop-armature") drop_armature = true;
        else if (a == "--integrator") integrator = value();
        else if (a == "--option") {
            const std::string kv = value();
            const std::size_t eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) {
                std::fprintf(stderr, "noether import: --option takes name=number or name=word, got '%s'\n", kv.c_str());
                return 2;
            }
            const std::string v = kv.substr(eq + 1);
            if (!v.empty() && std::isalpha(static_cast<unsigned char>(v[0]))) words[kv.substr(0, eq)] = v;
            else extra[kv.substr(0, eq)] = number(v, "--option");
        } else if (a == "--summary-json") summary_json = value();
        else if (a == "--record") record = value();
        else if (a == "--no-limits") limits = false;
        else if (a == "--no-couplings") couplings = false;
        else if (a == "--ground") ground = true;
        else if (a == "--mu") mu = number(value(), "--mu");
        else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "noether import: unknown option '%s'\n", a.c_str());
            return 2;
        } else if (file.empty()) file = a;
        else {
            std::fprintf(stderr, "noether import: one file at a time\n");
            return 2;
        }
    }
    if (file.empty()) {
        std::fprintf(stderr, "noether import: which file? (noether import FILE.urdf or FILE.xml)\n");
        return 2;
    }
    if (!(dt > 0)) {
        std::fprintf(stderr, "noether import: --dt must be positive, got %g\n", dt);
        return 2;
    }
    if (!outputs_writable("import", {{"--summary-json", &summary_json}, {"--record", &record}}, file)) return 2;
    // The importer and the kernel's run directly: no scene script in between.
    noether::Spec spec;
    spec.options.dt = dt;
    if (!integrator.empty()) spec.options.integrator = integrator;
    // A robot tried with --simulate gets accurate steps by default: bodies turning faster than
    // 0.1 rad per step are substepped (docs/integrators.md, "Energy on humanoids at dt = 0.005");
    // --option max_turn=0 turns it off. Lua worlds keep the option off unless they set it.
    const bool variational = spec.options.integrator == "vi-maximal" || spec.options.integrator == "vi-midpoint" ||
                             spec.options.integrator == "riqn" || spec.options.integrator == "vi-galerkin";
    if (variational && !extra.count("max_turn")) extra["max_turn"] = 0.1;
    for (const auto& [k, v] : extra) spec.options.extra[k] = v;
    for (const auto& [k, v] : words) spec.options.extra_lists[k] = {v};
    // URDF or MJCF, by the file's root element.
    const bool mjcf = noether::mjcf::is_mjcf(file);
    if (mjcf && (base_given || ground)) {
        std::fprintf(stderr, "noether import: %s is MJCF: %s applies to URDF files (an MJCF file says which bodies float, "
                             "and its planes are the ground)\n", file.c_str(), base_given ? "--base" : "--ground");
        return 2;
    }
    if (!mjcf && (!keyframe.empty() || drop_armature)) {
        std::fprintf(stderr, "noether import: %s applies to MJCF files\n", keyframe.empty() ? "--drop-armature" : "--keyframe");
        return 2;
    }
    noether::urdf::Options uo;
    uo.fixed_base = base == "fixed";
    uo.limits = limits;
    uo.couplings = couplings;
    uo.contacts_all = ground;  // every link's sphere, box and capsule <collision> against z = 0
    uo.on_ground = ground;
    uo.mu = mu;
    noether::mjcf::Options mo;
    mo.keyframe = keyframe;
    mo.limits = limits;
    mo.couplings = couplings;
    mo.drop_armature = drop_armature;
    std::string report_text, report_file;
    std::vector<std::string> warnings;
    std::shared_ptr<const noether::Model> model;
    try {
        if (mjcf) {
            const noether::mjcf::Report r = noether::mjcf::import(spec, file, mo);
            if (!dt_given && r.timestep > 0) spec.options.dt = r.timestep;  // the file's step unless --dt says otherwise
            report_text = r.to_text(), report_file = r.file, warnings = r.warnings;
        } else {
            const noether::urdf::Report r = noether::urdf::import(spec, file, uo);
            report_text = r.to_text(), report_file = r.file, warnings = r.warnings;
        }
        const noether::AssemblyReport a = noether::assemble(spec);
        if (!a.converged) {
            std::fprintf(stderr, "noether: %s: the joints cannot all be satisfied: the assembly stopped at violation %g\n",
                         file.c_str(), a.final_violation);
            return 2;
        }
        std::printf("%s", cli_wording(report_text).c_str());
        model = noether::compile(spec);
    } catch (const noether::Error& e) {
        std::fprintf(stderr, "noether: %s\n", cli_wording(e.what()).c_str());
        return 2;
    }
    noether::Run run(model);
    if (!record.empty()) {
        if (simulate < 0) {
            std::fprintf(stderr, "noether import: --record needs --simulate SECONDS\n");
            return 2;
        }
        noether::OutputSpec o;
        o.format = noether::OutputSpec::Format::recording;
        o.file = record;
        o.fps = 60;
        o.origin = {file, 0, ""};
        try {
            run.add_output(o);
        } catch (const noether::Error& e) {
            std::fprintf(stderr, "noether: %s\n", e.what());
            return 2;
        }
    }
    const std::string graph = run.graph_report();  // the advice of the initial state
    for (const std::string& w : warnings) run.add_note(report_file + ": " + cli_wording(w));
    run.set_progress(isatty(2));
    if (simulate >= 0) run.steps(run.steps_for(simulate));
    run.finish();
    noether::RunSummary s = run.summary();
    for (std::string& w : s.warnings) w = cli_wording(w);  // the kernel's suggestions as this command's flags
    std::printf("%s", graph.c_str());
    if (simulate >= 0) {
        std::string opts;
        for (const auto& [k, v] : extra) {
            char b[96];
            std::snprintf(b, sizeof b, "%s%s = %g", opts.empty() ? " (options: " : ", ", k.c_str(), v);
            opts += b;
        }
        for (const auto& [k, v] : words) opts += (opts.empty() ? " (options: " : ", ") + k + " = " + v;
        if (!opts.empty()) opts += ")";
        std::printf("noether import %s --simulate %g%s\n%s", file.c_str(), simulate, opts.c_str(), s.to_text().c_str());
    }
    if (!summary_json.empty() && write_json(summary_json, {s}) != 0) return 2;
    if (run.failed()) {
        std::fprintf(stderr, "noether: the simulation failed: %s\n", run.failure().c_str());
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const std::string cmd = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    try {
        if (cmd == "plugins") return cmd_plugins(args);
        if (cmd == "run" || cmd == "check") return cmd_script(cmd, args);
        if (cmd == "import") return cmd_import(args);
        if (cmd == "sweep") return noether_cli::cmd_sweep(args);
        if (cmd == "view") return noether_cli::cmd_view(args);
        if (cmd == "plot") return noether_cli::cmd_plot(args);
        if (cmd == "version" || cmd == "--version") {
            std::printf("noether %s\nMPI: %s\n", noether::version(), noether_cli::mpi_description().c_str());
            return 0;
        }
        if (cmd == "help" || cmd == "--help" || cmd == "-h") {
            usage(stdout);
            return 0;
        }
        std::fprintf(stderr, "noether: unknown command '%s'\n", cmd.c_str());
        usage(stderr);
        return 2;
    } catch (const noether::Error& e) {
        std::fprintf(stderr, "noether: %s\n", e.what());
        return 2;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "noether: out of memory (the scene or its inputs are too large for this machine)\n");
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "noether: %s\n", e.what());
        return 2;
    }
}
