// `noether sweep`: a scene run once per parameter set on the TBB pool, one row per member; under
// mpirun (when built with MPI) the members are split across ranks and gathered on rank 0, which
// writes the same file a single process would.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>


#include "noether/lua.hpp"
#include "noether/sweep.hpp"

#ifdef NOETHER_WITH_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include "cli.hpp"
#include "noether/executor.hpp"

namespace noether_cli {

namespace {

using noether::lua::SweepRow;

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Ranks of an MPI launch as the launcher announces them (Open MPI, MPICH/Hydra, PMIx); 1 if none.
int launched_ranks() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
        const char* v = std::getenv(var);
        if (v && std::atoi(v) > 0) return std::atoi(v);
    }
    return 1;
}

// The MPI side: init/finalize and gathering the rows on rank 0. Without MPI: one rank.
struct Mpi {
    int rank = 0, size = 1;
    bool active = false;
#ifdef NOETHER_WITH_MPI
    Mpi() {
        if (launched_ranks() <= 1) return;
        int ok = 0;
        MPI_Initialized(&ok);
        if (!ok) MPI_Init(nullptr, nullptr);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        active = true;
    }
    ~Mpi() {
        if (active) MPI_Finalize();
    }
    // Every rank's rows on rank 0 (others get an empty vector).
    std::vector<SweepRow> gather(const std::vector<SweepRow>& mine) {
        if (!active) return mine;
        const std::string bytes = noether::lua::serialize_rows(mine);
        long long n = static_cast<long long>(bytes.size());
        std::vector<long long> sizes(size);
        MPI_Gather(&n, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        std::vector<SweepRow> all;
        if (rank != 0) {
            MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_CHAR, 0, 7, MPI_COMM_WORLD);
            return all;
        }
        all = mine;
        for (int r = 1; r < size; ++r) {
            std::string buf(static_cast<std::size_t>(sizes[r]), '\0');
            MPI_Recv(&buf[0], static_cast<int>(buf.size()), MPI_CHAR, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (SweepRow& row : noether::lua::deserialize_rows(buf)) all.push_back(std::move(row));
        }
        return all;
    }
#else
    std::vector<SweepRow> gather(const std::vector<SweepRow>& mine) { return mine; }
#endif
};

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int sweep_main(const std::vector<std::string>& args, Mpi& mpi) {
    noether::lua::ScriptOptions script_opt;
    noether::lua::SweepPlan cli_plan;
    noether::lua::SweepOptions sopt;
    std::string script, out, format;
    bool quiet = false, samples_given = false, seed_given = false;
    auto bad = [&](const std::string& msg) {
        if (mpi.rank == 0) std::fprintf(stderr, "noether sweep: %s\n", msg.c_str());
        return 2;
    };
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        std::string v;
        auto value = [&]() {
            if (i + 1 >= args.size()) return false;
            v = args[++i];
            return true;
        };
        auto integer = [&](long long lo, long long hi, long long& outv) {
            char* end = nullptr;
            errno = 0;
            const long long x = std::strtoll(v.c_str(), &end, 10);
            if (v.empty() || *end || errno || x < lo || x > hi) return false;
            outv = x;
            return true;
        };
        const bool takes_value = a == "--grid" || a == "--samples" || a == "--seed" || a == "--threads" || a == "--out" ||
                                 a == "--set" || a == "--sandbox" || a == "--time-limit" || a == "--format";
        if (takes_value && !value()) return bad(a + " needs a value");
        if (a == "--help" || a == "-h") {
            if (mpi.rank == 0)
                std::printf(
                    "usage: noether sweep SCRIPT [--grid name=lo:hi:n | --grid name=v1,v2,...]... [--samples N] [--seed S]\n"
                    "                     [--set name=value]... [--threads T] [--out FILE.csv|FILE.jsonl] [--format csv|jsonl]\n"
                    "                     [--quiet] [--timing] [--sandbox DIR] [--time-limit S]\n"
                    "  --grid        a swept parameter: lo:hi:n (n values, ends included) or a list; repeat for a\n"
                    "                grid (the first axis varies slowest); replaces the scene's noether.sweep{}\n"
                    "  --samples N   N random draws over the axes instead of the full grid (lo:hi: uniform), --seed S\n"
                    "  --set         a value for every member\n"
                    "  --threads T   worker threads (default: every core)\n"
                    "  --out FILE    one row per member: parameters, run summary, recorded values (default: stdout)\n"
                    "  --timing      add wall_s and us_per_step (the file then depends on the machine's load)\n"
                    "  --time-limit S  each member stops after S seconds of wall time (its row then says so);\n"
                    "                a member that never ends cannot hang the sweep\n"
                    "  --sandbox DIR   run every member sandboxed (docs/lua.md), 60 s each unless --time-limit\n"
                    "Under mpirun -n R the members are split across the ranks; rank 0 writes the file.\n");
            return 0;
        }
        long long n = 0;
        if (a == "--grid") {
            try {
                cli_plan.grid.push_back(noether::lua::parse_axis(v));
            } catch (const std::exception& e) {
                return bad(e.what());
            }
        } else if (a == "--samples") {
            if (!integer(1, noether::lua::kMaxSweepMembers, n))
                return bad("--samples must be an integer from 1 to " + std::to_string(noether::lua::kMaxSweepMembers) +
                           ", got '" + v + "'");
            cli_plan.samples = n;
            samples_given = true;
        } else if (a == "--seed") {
            if (!integer(0, 9223372036854775807LL, n)) return bad("--seed must be a non-negative integer, got '" + v + "'");
            cli_plan.seed = static_cast<std::uint64_t>(n);
            seed_given = true;
        } else if (a == "--threads") {
            if (!integer(0, 4096, n)) return bad("--threads must be an integer from 0 (every core) to 4096, got '" + v + "'");
            sopt.threads = static_cast<int>(n);
        } else if (a == "--out") {
            out = v;
        } else if (a == "--format") {
            if (v != "csv" && v != "jsonl") return bad("--format must be csv or jsonl, got '" + v + "'");
            format = v;
        } else if (a == "--set") {
            const std::size_t eq = v.find('=');
            if (eq == std::string::npos || eq == 0) return bad("--set expects name=value, got '" + v + "'");
            script_opt.params[v.substr(0, eq)] = v.substr(eq + 1);
        } else if (a == "--sandbox") {
            script_opt.sandbox = true;
            script_opt.sandbox_dir = v;
        } else if (a == "--time-limit") {
            char* end = nullptr;
            script_opt.sandbox_seconds = script_opt.time_limit = std::strtod(v.c_str(), &end);
            if (v.empty() || *end || !(script_opt.sandbox_seconds > 0))
                return bad("--time-limit must be a positive number of seconds, got '" + v + "'");
        } else if (a == "--quiet") {
            quiet = true;
        } else if (a == "--timing") {
            sopt.timing = true;
        } else if (!a.empty() && a[0] == '-') {
            return bad("unknown option '" + a + "' (noether sweep --help)");
        } else if (script.empty()) {
            script = a;
        } else {
            return bad("one script at a time (got '" + script + "' and '" + a + "')");
        }
    }
    if (script.empty()) return bad("which script? (noether sweep SCRIPT --grid name=values ...)");
    if (!out.empty())  // every rank refuses alike (no rank is left waiting in a gather)
        if (const std::string why = check_out(out, {script}); !why.empty()) return bad("--out: " + why);
    if (format.empty()) format = ends_with(out, ".jsonl") || ends_with(out, ".json") ? "jsonl" : "csv";
    const std::string dir = scripts_dir();
    if (!dir.empty()) script_opt.lua_path.push_back(dir);

    // The plan: the command line's grid, else what the scene declares (found by running it
    // without stepping). --samples / --seed apply to either.
    noether::lua::SweepPlan plan = cli_plan;
    if (cli_plan.grid.empty()) {
        noether::lua::ScriptOptions probe = script_opt;
        probe.check_only = true;
        probe.member = 0;
        const noether::lua::ScriptResult r = noether::lua::run_script(script, probe);
        if (r.exit_code == 2) return bad(r.error);
        if (!r.sweep.declared)
            return bad(script + " declares no sweep: give --grid name=values (or add noether.sweep{ grid = ... } to it)");
        plan = r.sweep;
        if (samples_given) plan.samples = cli_plan.samples;
        if (seed_given) plan.seed = cli_plan.seed;
    }
    std::vector<noether::lua::SweepParams> members;
    try {
        members = noether::lua::sweep_members(plan);
    } catch (const std::exception& e) {
        return bad(e.what());
    }
    for (const auto& p : members.front())
        if (script_opt.params.count(p.first)) return bad("parameter '" + p.first + "' is both swept and --set");
    // Every swept parameter must be one the scene reads: found by running it without stepping
    // as member 0, before any member runs (an axis named wrong failed every member after the
    // whole sweep had run).
    {
        noether::lua::ScriptOptions probe = script_opt;
        probe.check_only = true;
        probe.member = 0;
        for (const auto& p : members.front()) probe.params[p.first] = p.second;
        const noether::lua::ScriptResult r = noether::lua::run_script(script, probe);
        for (const auto& p : members.front())
            if (r.exit_code == 2 && r.error.find("--set " + p.first + "=") != std::string::npos)
                return bad("swept parameter '" + p.first + "': " + script + " never reads it (declare it with noether.params{ " +
                           p.first + " = <default> })");
    }

    // This rank's share: members i with i mod R = rank (a round robin balances cheap and costly members).
    for (int i = mpi.rank; i < static_cast<int>(members.size()); i += mpi.size) sopt.only.push_back(i);
    sopt.script = script_opt;
    const int total = static_cast<int>(members.size());
    const int threads = sopt.threads > 0 ? sopt.threads : noether::default_concurrency();
    const double t0 = now_s();
    const bool tty = !quiet && mpi.rank == 0 && isatty(2);
    double last_print = 0;
    if (tty)
        sopt.progress = [&](int done, int mine) {
            const double t = now_s();
            if (done < mine && t - last_print < 0.25) return;
            last_print = t;
            const double rate = done / std::max(1e-9, t - t0);
            std::fprintf(stderr, "\rnoether sweep: %d/%d members%s, %.2f members/s, ETA %.0f s   ", done, mine,
                         mpi.size > 1 ? " on rank 0" : "", rate, (mine - done) / std::max(rate, 1e-9));
            if (done == mine) std::fprintf(stderr, "\n");
        };
    const std::vector<SweepRow> mine = noether::lua::run_sweep(script, members, sopt);
    std::vector<SweepRow> rows = mpi.gather(mine);
    if (mpi.rank != 0) return 0;

    std::vector<SweepRow> ordered(rows.size());
    for (SweepRow& r : rows) ordered[r.member] = std::move(r);
    const std::string text = format == "jsonl" ? noether::lua::sweep_jsonl(ordered) : noether::lua::sweep_csv(ordered);
    int code = 0;
    if (out.empty()) {
        std::fwrite(text.data(), 1, text.size(), stdout);
    } else if (const std::string err = write_out(out, text); !err.empty()) {
        std::fprintf(stderr, "noether sweep: --out: %s (nothing was written)\n", err.c_str());
        code = 1;
    }
    int failed = 0;
    std::string first;
    for (const SweepRow& r : ordered)
        if (r.exit_code != 0) {
            if (++failed == 1) first = "member " + std::to_string(r.member) + ": " + r.error;
        }
    if (!quiet || failed)
        std::fprintf(stderr, "noether sweep: %d members in %.2f s on %d thread%s%s%s%s\n", total, now_s() - t0, threads,
                     threads == 1 ? "" : "s", mpi.size > 1 ? (" x " + std::to_string(mpi.size) + " ranks").c_str() : "",
                     out.empty() ? "" : " -> ", out.c_str());
    if (failed) {
        std::fprintf(stderr, "noether sweep: %d of %d members failed (exit_code and error columns); first: %s\n", failed,
                     total, first.c_str());
        code = std::max(code, 1);
    }
    return code;
}

}  // namespace

std::string mpi_description() {
#ifdef NOETHER_WITH_MPI
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
    return "compiled in (MPI " + std::to_string(major) + "." + std::to_string(minor) + "; noether sweep under mpirun)";
#else
    return "not compiled in (install libopenmpi-dev and rebuild for noether sweep under mpirun)";
#endif
}

int cmd_sweep(const std::vector<std::string>& args) {
#ifndef NOETHER_WITH_MPI
    if (launched_ranks() > 1) {
        std::fprintf(stderr,
                     "noether sweep: started as one of %d MPI ranks, but this noether was built without MPI (every rank "
                     "would run the whole sweep); install libopenmpi-dev and rebuild, or run without mpirun\n",
                     launched_ranks());
        return 2;
    }
#endif
    Mpi mpi;
    const int code = sweep_main(args, mpi);
    return mpi.rank == 0 ? code : 0;
}

}  // namespace noether_cli
