// Parameter sweeps: the members of a plan, running them on a oneTBB pool, their rows as CSV or
// JSON lines, and rows as bytes for gathering them across MPI ranks.
#include "noether/executor.hpp"
#include "noether/sweep.hpp"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>


#include "world.hpp"

namespace noether {
namespace lua {

namespace {

bool parse_double(const std::string& s, double& out) {
    if (s.empty()) return false;
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return *end == '\0' && std::isfinite(out);
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t at = s.find(sep, start);
        out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos) break;
        start = at + 1;
    }
    return out;
}

// splitmix64: a fixed, portable generator (member i's draws depend on the seed and i only).
std::uint64_t mix(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
double uniform(std::uint64_t seed, long long member, std::size_t axis) {
    const std::uint64_t h = mix(mix(seed) ^ mix(static_cast<std::uint64_t>(member) * 0x100000001B3ull + axis + 1));
    return static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
}

// A parameter or cell as JSON: numbers and booleans bare, the rest quoted.
std::string json_value(const std::string& text, char type) {
    if (type == '0') return "null";
    if (type == 'n' || type == 'b') return text;
    return json_quote(text);
}

char param_type(const std::string& v) {
    double x;
    if (parse_double(v, x)) return 'n';
    if (v == "true" || v == "false") return 'b';
    return 's';
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

// Column names in order of first appearance.
struct Columns {
    std::vector<std::string> params, cells;
    explicit Columns(const std::vector<SweepRow>& rows) {
        auto add = [](std::vector<std::string>& v, const std::string& n) {
            for (const std::string& x : v)
                if (x == n) return;
            v.push_back(n);
        };
        for (const SweepRow& r : rows) {
            for (const auto& p : r.params) add(params, p.first);
            for (const SweepCell& c : r.cells) add(cells, c.name);
        }
    }
};

void summary_cells(const RunSummary& s, const std::string& prefix, bool timing, std::vector<SweepCell>& out) {
    auto num = [&](const char* name, double v) {
        if (!timing && (std::strcmp(name, "wall_s") == 0 || std::strcmp(name, "us_per_step") == 0)) return;
        out.push_back({prefix + name, std::isfinite(v) ? exact_str(v) : "", std::isfinite(v) ? 'n' : '0'});
    };
    auto cell_I = [&](const char* name, long long v) { out.push_back({prefix + name, std::to_string(v), 'n'}); };
    auto cell_D = num;
    auto cell_DN = num;
    auto cell_S = [&](const char* name, const std::string& v) { out.push_back({prefix + name, v, 's'}); };
    auto cell_B = [&](const char* name, bool v) { out.push_back({prefix + name, v ? "true" : "false", 'b'}); };
#define NOETHER_X(type, name) cell_##type(#name, s.name);
    NOETHER_SUMMARY_FIELDS(NOETHER_X)
#undef NOETHER_X
}

}  // namespace

SweepAxis parse_axis(const std::string& text) {
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        throw UsageError("sweep axis '" + text + "': expected name=lo:hi:n or name=v1,v2,...");
    SweepAxis a;
    a.name = text.substr(0, eq);
    const std::string spec = text.substr(eq + 1);
    const std::vector<std::string> parts = split(spec, ':');
    double lo, hi;
    if ((parts.size() == 2 || parts.size() == 3) && parse_double(parts[0], lo) && parse_double(parts[1], hi)) {
        a.range = true;
        a.lo = lo;
        a.hi = hi;
        if (parts.size() == 3) {
            char* end = nullptr;
            const long n = std::strtol(parts[2].c_str(), &end, 10);
            if (parts[2].empty() || *end != '\0' || n < 1 || n > 1000000)
                throw UsageError("sweep axis '" + text + "': the number of values n in lo:hi:n must be an integer from 1 to "
                                 "1000000, got '" + parts[2] + "'");
            for (long i = 0; i < n; ++i) {
                const double v = n == 1 ? lo : i == n - 1 ? hi : lo + (hi - lo) * static_cast<double>(i) / (n - 1);
                a.values.push_back(exact_str(v));
            }
        }
        return a;
    }
    if (spec.empty()) throw UsageError("sweep axis '" + text + "': no values after '='");
    // lo:hi[:n] whose bounds are not finite numbers ("nan:0.01:3"): refused, not taken as one
    // value named "nan:0.01:3" that every member would then fail on.
    // (A list value may hold ':' itself, as a file name does: only bounds written as numbers count.)
    if (spec.find(',') == std::string::npos && (parts.size() == 2 || parts.size() == 3)) {
        auto numeric = [](const std::string& t) {
            char* end = nullptr;
            std::strtod(t.c_str(), &end);
            return !t.empty() && *end == '\0';
        };
        if (numeric(parts[0]) && numeric(parts[1]))
            for (int k = 0; k < 2; ++k)
                if (!parse_double(parts[k], lo))
                    throw UsageError("sweep axis '" + text + "': the bounds of lo:hi" + (parts.size() == 3 ? ":n" : "") +
                                     " must be finite numbers, got '" + parts[k] + "'");
    }
    a.values = split(spec, ',');
    for (const std::string& v : a.values)
        if (v.empty()) throw UsageError("sweep axis '" + text + "': an empty value in the list");
    return a;
}

std::vector<SweepParams> sweep_members(const SweepPlan& plan) {
    std::vector<SweepParams> out;
    if (!plan.list.empty()) {
        if (!plan.grid.empty()) throw UsageError("sweep: give either a grid or a list of members, not both");
        return plan.list;
    }
    if (plan.grid.empty()) throw UsageError("sweep: nothing to sweep (give --grid name=values, or declare noether.sweep{} in the scene)");
    for (std::size_t i = 0; i < plan.grid.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (plan.grid[i].name == plan.grid[j].name)
                throw UsageError("sweep: parameter '" + plan.grid[i].name + "' is swept twice");
    if (plan.samples > kMaxSweepMembers)
        throw UsageError("sweep: " + std::to_string(plan.samples) + " samples; a sweep runs at most " +
                         std::to_string(kMaxSweepMembers) + " members (each one's row is kept until the file is written)");
    if (plan.samples > 0) {
        for (long long m = 0; m < plan.samples; ++m) {
            SweepParams p;
            for (std::size_t k = 0; k < plan.grid.size(); ++k) {
                const SweepAxis& a = plan.grid[k];
                const double u = uniform(plan.seed, m, k);
                if (a.range) {
                    p.emplace_back(a.name, exact_str(a.lo + (a.hi - a.lo) * u));
                } else {
                    std::size_t idx = static_cast<std::size_t>(u * static_cast<double>(a.values.size()));
                    if (idx >= a.values.size()) idx = a.values.size() - 1;
                    p.emplace_back(a.name, a.values[idx]);
                }
            }
            out.push_back(std::move(p));
        }
        return out;
    }
    long double total = 1;
    for (const SweepAxis& a : plan.grid) {
        if (a.values.empty())
            throw UsageError("sweep: grid axis '" + a.name + "' is a range lo:hi without a number of values (write lo:hi:n; "
                             "lo:hi alone is for --samples)");
        total *= a.values.size();
    }
    if (total > kMaxSweepMembers)
        throw UsageError("sweep: the grid has " + std::to_string(static_cast<long long>(total)) + " members; a sweep runs at most " +
                         std::to_string(kMaxSweepMembers) + " (each one's row is kept until the file is written: split "
                         "the grid, or draw --samples)");
    std::vector<std::size_t> idx(plan.grid.size(), 0);
    for (;;) {
        SweepParams p;
        for (std::size_t k = 0; k < plan.grid.size(); ++k) p.emplace_back(plan.grid[k].name, plan.grid[k].values[idx[k]]);
        out.push_back(std::move(p));
        // Odometer: the last axis fastest.
        std::size_t k = plan.grid.size();
        while (k > 0) {
            --k;
            if (++idx[k] < plan.grid[k].values.size()) break;
            idx[k] = 0;
            if (k == 0) return out;
        }
    }
}

std::vector<SweepRow> run_sweep(const std::string& script, const std::vector<SweepParams>& members,
                                const SweepOptions& options) {
    std::vector<int> which = options.only;
    if (which.empty())
        for (int i = 0; i < static_cast<int>(members.size()); ++i) which.push_back(i);
    for (int i : which)
        if (i < 0 || i >= static_cast<int>(members.size()))
            throw UsageError("run_sweep: member " + std::to_string(i) + " out of range");
    std::vector<SweepRow> rows(which.size());
    std::shared_ptr<ModelCache> cache = options.script.model_cache ? options.script.model_cache : std::make_shared<ModelCache>();
    std::mutex mu;
    int done = 0;
    auto one = [&](std::size_t slot) {
        SweepRow& row = rows[slot];
        row.member = which[slot];
        row.params = members[row.member];
        ScriptOptions o = options.script;
        for (const auto& kv : row.params) o.params[kv.first] = kv.second;
        o.member = row.member;
        o.progress = false;
        o.check_only = false;
        o.model_cache = cache;
        ScriptResult r;
        try {
            r = run_script(script, o);
        } catch (const std::exception& e) {
            r.exit_code = 2;
            r.error = e.what();
        }
        row.exit_code = r.exit_code;
        row.error = r.error;
        for (std::size_t w = 0; w < r.worlds.size(); ++w) {
            summary_cells(r.worlds[w], w == 0 ? "" : "w" + std::to_string(w + 1) + ".", options.timing, row.cells);
            for (const std::string& x : r.worlds[w].warnings) row.warnings += (row.warnings.empty() ? "" : " | ") + x;
        }
        // A summary key that is also a swept parameter (dt, integrator): "summary.<key>".
        for (SweepCell& c : row.cells)
            for (const auto& kv : row.params)
                if (c.name == kv.first) c.name = "summary." + c.name;
        // Recorded values; one named like a parameter as "record.<name>".
        for (const Recorded& x : r.records) {
            std::string name = x.name;
            for (const auto& kv : row.params)
                if (name == kv.first) name = "record." + name;
            row.cells.push_back({name, x.text, x.number ? 'n' : 's'});
        }
        if (options.progress) {
            std::lock_guard<std::mutex> lock(mu);
            options.progress(++done, static_cast<int>(rows.size()));
        }
    };
    // The members on the executor ensembles use (noether/executor.hpp): one scheduling path.
    tbb_executor(options.threads)(static_cast<int>(rows.size()), [&](int i) { one(static_cast<std::size_t>(i)); });
    return rows;
}

std::string sweep_csv(const std::vector<SweepRow>& rows) {
    const Columns cols(rows);
    std::string out = "member";
    for (const std::string& p : cols.params) out += "," + csv_field(p);
    for (const std::string& c : cols.cells) out += "," + csv_field(c);
    out += ",exit_code,error,warnings\n";
    for (const SweepRow& r : rows) {
        out += std::to_string(r.member);
        for (const std::string& p : cols.params) {
            out += ",";
            for (const auto& kv : r.params)
                if (kv.first == p) out += csv_field(kv.second);
        }
        for (const std::string& c : cols.cells) {
            out += ",";
            for (const SweepCell& x : r.cells)
                if (x.name == c) {
                    out += csv_field(x.text);
                    break;
                }
        }
        out += "," + std::to_string(r.exit_code) + "," + csv_field(r.error) + "," + csv_field(r.warnings) + "\n";
    }
    return out;
}

std::string sweep_jsonl(const std::vector<SweepRow>& rows) {
    std::string out;
    for (const SweepRow& r : rows) {
        out += "{\"member\": " + std::to_string(r.member);
        for (const auto& kv : r.params) out += ", " + json_quote(kv.first) + ": " + json_value(kv.second, param_type(kv.second));
        for (const SweepCell& c : r.cells) out += ", " + json_quote(c.name) + ": " + json_value(c.text, c.type);
        out += ", \"exit_code\": " + std::to_string(r.exit_code) + ", \"error\": " + json_quote(r.error) +
               ", \"warnings\": " + json_quote(r.warnings) + "}\n";
    }
    return out;
}

// ---- rows as bytes --------------------------------------------------------------------------

namespace {
void put_str(std::string& out, const std::string& s) {
    const std::uint64_t n = s.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out += s;
}
void put_int(std::string& out, std::int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

struct Reader {
    const std::string& b;
    std::size_t at = 0;
    std::int64_t i() {
        std::int64_t v;
        if (b.size() - at < sizeof v) throw UsageError("sweep rows: truncated data");
        std::memcpy(&v, b.data() + at, sizeof v);
        at += sizeof v;
        return v;
    }
    std::string s() {
        const std::int64_t n = i();
        if (n < 0 || static_cast<std::uint64_t>(n) > b.size() - at) throw UsageError("sweep rows: truncated data");
        std::string out = b.substr(at, static_cast<std::size_t>(n));
        at += static_cast<std::size_t>(n);
        return out;
    }
};
}  // namespace

std::string serialize_rows(const std::vector<SweepRow>& rows) {
    std::string out;
    put_int(out, static_cast<std::int64_t>(rows.size()));
    for (const SweepRow& r : rows) {
        put_int(out, r.member);
        put_int(out, r.exit_code);
        put_str(out, r.error);
        put_str(out, r.warnings);
        put_int(out, static_cast<std::int64_t>(r.params.size()));
        for (const auto& kv : r.params) put_str(out, kv.first), put_str(out, kv.second);
        put_int(out, static_cast<std::int64_t>(r.cells.size()));
        for (const SweepCell& c : r.cells) put_str(out, c.name), put_str(out, c.text), put_int(out, c.type);
    }
    return out;
}

std::vector<SweepRow> deserialize_rows(const std::string& bytes) {
    Reader rd{bytes};
    const std::int64_t n = rd.i();
    if (n < 0 || n > static_cast<std::int64_t>(bytes.size())) throw UsageError("sweep rows: bad row count");
    std::vector<SweepRow> rows(static_cast<std::size_t>(n));
    for (SweepRow& r : rows) {
        r.member = static_cast<int>(rd.i());
        r.exit_code = static_cast<int>(rd.i());
        r.error = rd.s();
        r.warnings = rd.s();
        const std::int64_t np = rd.i();
        if (np < 0 || np > static_cast<std::int64_t>(bytes.size())) throw UsageError("sweep rows: bad parameter count");
        for (std::int64_t k = 0; k < np; ++k) {
            std::string a = rd.s();
            r.params.emplace_back(std::move(a), rd.s());
        }
        const std::int64_t nc = rd.i();
        if (nc < 0 || nc > static_cast<std::int64_t>(bytes.size())) throw UsageError("sweep rows: bad cell count");
        for (std::int64_t k = 0; k < nc; ++k) {
            SweepCell c;
            c.name = rd.s();
            c.text = rd.s();
            c.type = static_cast<char>(rd.i());
            r.cells.push_back(std::move(c));
        }
    }
    if (rd.at != bytes.size()) throw UsageError("sweep rows: trailing data");
    return rows;
}

}  // namespace lua
}  // namespace noether
