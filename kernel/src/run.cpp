// The run loop of every host: outputs, the atomic CSV writer, tracking and the summary.
#include "noether/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "noether/advice.hpp"
#include "noether/sdk/dense.hpp"
#include "noether/limits.hpp"
#include "noether/sdk/integrator.hpp"
#include "recording.hpp"

namespace noether {

namespace {

// The watch's thresholds (docs/integrators.md, "Never a silent blow-up").
constexpr double kWatchTurn = 0.4;     // rad per step
constexpr double kWatchEnergy = 0.05;  // growth as a fraction of max(|E0|, largest kinetic energy)
constexpr long long kWatchWindow = 200;
constexpr double kWatchShare = 0.1;

// Down to two significant digits (a step to suggest).
double round_down(double x) {
    if (!(x > 0) || !std::isfinite(x)) return x;
    const double p = std::pow(10.0, std::floor(std::log10(x)) - 1);
    return std::floor(x / p) * p;
}

// "42 s", "3 min 5 s", "2 h 10 min".
std::string eta_text(double s) {
    char buf[48];
    if (!(s < 1e9)) return "unknown";
    if (s < 60) std::snprintf(buf, sizeof buf, "%.0f s", s);
    else if (s < 3600) std::snprintf(buf, sizeof buf, "%d min %d s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
    else std::snprintf(buf, sizeof buf, "%d h %d min", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
    return buf;
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}


std::string json_num(double v) {
    if (!std::isfinite(v)) return "null";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
}

// JSON value of one summary field, by its type in NOETHER_SUMMARY_FIELDS.
std::string json_value_I(long long v) { return std::to_string(v); }
std::string json_value_D(double v) { return json_num(v); }
std::string json_value_DN(double v) { return json_num(v); }
std::string json_value_S(const std::string& v) { return json_quote(v); }
std::string json_value_B(bool v) { return v ? "true" : "false"; }

}  // namespace

std::string json_quote(const std::string& s) {
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

// ---- channels ----------------------------------------------------------------------------------

const char* channel_names() {
    return "time, energy, kinetic, potential, momentum, angular_momentum, violation, newton, residual, substeps, "
           "and <body>.position, <body>.orientation, <body>.velocity, <body>.angular_velocity, <joint>.coord, "
           "<joint>.rate";
}

bool parse_channel(const std::string& text, Channel& c) {
    static const std::pair<const char*, Channel::Kind> globals[] = {
        {"time", Channel::Kind::time},         {"energy", Channel::Kind::energy},
        {"kinetic", Channel::Kind::kinetic},   {"potential", Channel::Kind::potential},
        {"momentum", Channel::Kind::momentum}, {"angular_momentum", Channel::Kind::angular_momentum},
        {"violation", Channel::Kind::violation}, {"newton", Channel::Kind::newton},
        {"residual", Channel::Kind::residual}, {"substeps", Channel::Kind::substeps}};
    static const std::pair<const char*, Channel::Kind> per[] = {
        {"position", Channel::Kind::position}, {"orientation", Channel::Kind::orientation},
        {"velocity", Channel::Kind::velocity}, {"angular_velocity", Channel::Kind::angular_velocity},
        {"coord", Channel::Kind::coord},       {"rate", Channel::Kind::rate}};
    c = Channel{};
    c.text = text;
    for (const auto& g : globals)
        if (text == g.first) {
            c.kind = g.second;
            return true;
        }
    const std::size_t dot = text.rfind('.');
    if (dot == std::string::npos || dot == 0) return false;
    const std::string what = text.substr(dot + 1);
    for (const auto& p : per)
        if (what == p.first) {
            c.kind = p.second;
            c.element = text.substr(0, dot);
            return true;
        }
    return false;
}

// ---- summary -----------------------------------------------------------------------------------

std::string RunSummary::to_json() const {
    std::ostringstream o;
    o << "{";
#define NOETHER_X(type, name) o << "\"" #name "\": " << json_value_##type(name) << ", ";
    NOETHER_SUMMARY_FIELDS(NOETHER_X)
#undef NOETHER_X
    o << "\"warnings\": [";
    for (std::size_t i = 0; i < warnings.size(); ++i) o << (i ? ", " : "") << json_quote(warnings[i]);
    o << "]}";
    return o.str();
}

std::string summaries_json(const std::vector<RunSummary>& runs) {
    if (runs.size() == 1) return runs[0].to_json();
    std::string json = "[";
    for (std::size_t i = 0; i < runs.size(); ++i) json += (i ? ", " : "") + runs[i].to_json();
    return json + "]";
}

std::string RunSummary::to_text() const {
    char buf[512];
    std::ostringstream o;
    std::snprintf(buf, sizeof buf, "  bodies %lld, joints %lld (%lld loop closure%s), degrees of freedom %lld\n", bodies,
                  joints, loop_joints, loop_joints == 1 ? "" : "s", dof);
    o << buf;
    std::snprintf(buf, sizeof buf, "  integrator %s, solver %s, dt %g s\n", integrator.c_str(), solver.c_str(), dt);
    o << buf;
    std::snprintf(buf, sizeof buf, "  simulated %.6g s in %lld steps; wall %.3f s (%.2f us/step)\n", sim_time, steps,
                  wall_s, us_per_step);
    o << buf;
    std::snprintf(buf, sizeof buf, "  energy: initial %.8g J, final %.8g J, largest deviation %.3g J", energy_initial,
                  energy_final, energy_max_abs_dev);
    o << buf;
    if (std::isfinite(energy_max_rel_dev)) {
        std::snprintf(buf, sizeof buf, " (%.3g relative)", energy_max_rel_dev);
        o << buf;
    }
    std::snprintf(buf, sizeof buf, "\n  constraint violation: largest %.3g%s\n", max_violation,
                  worst_joint.empty() ? "" : (" (joint '" + worst_joint + "')").c_str());
    o << buf;
    std::snprintf(buf, sizeof buf, "  Newton iterations: mean %.2f, max %lld; subdivided steps %lld; failed steps %lld\n",
                  newton_mean, newton_max, subdivided_steps, failed_steps);
    o << buf;
    if (floor_steps > 0) {
        std::snprintf(buf, sizeof buf, "  steps accepted at Newton's floor above the tolerance: %lld\n", floor_steps);
        o << buf;
    }
    if (internal_steps > 0) {
        std::snprintf(buf, sizeof buf, "  internal steps: %lld accepted, %lld rejected; projection iterations %lld\n",
                      internal_steps, rejected_steps, projection_total);
        o << buf;
    }
    if (warnings.empty()) o << "  warnings: none\n";
    else {
        o << "  warnings (" << warnings.size() << "):\n";
        for (const std::string& w : warnings) o << "    " << w << "\n";
    }
    return o.str();
}

// Rank of the joint constraint Jacobian at the initial configuration, for the degrees of
// freedom of a mechanism with loops (closure rows can be redundant: a planar four-bar of hinges
// has 3). −1 when the matrix is too large for a dense factorisation here.
int constraint_rank(const Model& m) {
    const int rows = m.total_rows, cols = 6 * m.nbodies(), n = std::max(rows, cols);
    if (n > 240) return -1;
    std::vector<double> A(static_cast<std::size_t>(n) * n, 0.0);  // J padded with zeros: same rank
    double g[kMaxJointRows], Ja[6 * kMaxJointRows], Jb[6 * kMaxJointRows];
    for (const JointInfo& ji : m.joints) {
        const Pose a = ji.a >= 0 ? m.bodies[ji.a].pose0 : Pose{};
        ji.impl->constraint(a, m.bodies[ji.b].pose0, g, ji.a >= 0 ? Ja : nullptr, Jb);
        for (int r = 0; r < ji.rows; ++r)
            for (int c = 0; c < 6; ++c) {
                double* row = &A[static_cast<std::size_t>(ji.row_offset + r) * n];
                if (ji.a >= 0) row[6 * ji.a + c] += Ja[6 * r + c];
                row[6 * ji.b + c] += Jb[6 * r + c];
            }
    }
    dense::RankRevealingQR qr;
    qr.reserve(n);
    return qr.factor(A.data());
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
    o << ")\n";
    const int rank = g.loop_joints.empty() ? m.total_rows : constraint_rank(m);
    if (rank >= 0 && rank < m.total_rows)
        o << "degrees of freedom: " << 6 * m.nbodies() - rank << " (6 x " << m.nbodies() << " bodies - " << rank
          << " independent of the " << m.total_rows << " constraint rows at the initial configuration; "
          << m.total_rows - rank << " loop-closure rows are redundant)\n";
    else {
        o << "degrees of freedom: " << m.dof() << " by counting (6 x " << m.nbodies() << " bodies - " << m.total_rows
          << " constraint rows)";
        if (rank < 0) o << "; loop-closure rows may be redundant (the solver reports them when it runs)";
        o << "\n";
    }
    o << "integrator " << m.options.integrator << ", solver " << m.solver_name << ", dt " << m.options.dt << " s\n";
    return o.str();
}

// ---- the run -----------------------------------------------------------------------------------

Run::Run(std::shared_ptr<const Model> model) : model_(std::move(model)) {
    if (!model_) throw UsageError("Run: model is null");
    data_ = std::make_unique<Data>(model_);
    const Monitors mon = monitors(*model_, *data_);
    e0_ = e_final_ = mon.total;
    v_max_ = mon.max_violation;
    if (mon.worst_joint >= 0) worst_joint_ = model_->joints[mon.worst_joint].name;
    for (const ForceInfo& f : model_->forces)  // constant forces do work: the watch's energy test is off
        if (norm(f.force) > 0 || norm(f.torque) > 0) watch_.passive = false;
}

Run::~Run() = default;  // an output never finished is closed by its OutputFile: the partial file stays as <file>.part

int Run::add_output(const OutputSpec& spec) {
    const Model& m = *model_;
    const std::string where = spec.origin.str().empty() ? std::string("output") : spec.origin.str() + ": output";
    if (sampled_) throw UsageError(where + ": outputs must be added before the first step");
    if (spec.every < 1) throw UsageError(where + ": 'every' must be at least 1, got " + std::to_string(spec.every));
    const bool recording = spec.format == OutputSpec::Format::recording;
    if (recording && spec.file.empty()) throw UsageError(where + ": a recording needs a file");
    if (!recording && !spec.file.empty() && spec.channels.empty()) throw UsageError(where + ": a file needs channels");
    if (!(spec.fps >= 0) || !std::isfinite(spec.fps))
    {
        char v[32];
        std::snprintf(v, sizeof v, "%g", spec.fps);  // nan, inf, -1 (json_num wrote NaN as "null")
        throw UsageError(where + ": 'fps' must be a positive number (0: sample by 'every'), got " + v);
    }
    Output o;
    o.spec = spec;
    if (spec.fps > 0) {
        const double every = std::round(1 / (spec.fps * m.options.dt));
        o.spec.every = every < 1 ? 1 : every > 1e9 ? 1000000000 : static_cast<int>(every);
    }
    for (const std::string& text : spec.channels) {
        Channel c;
        if (!parse_channel(text, c))
            throw UsageError(where + ": unknown channel '" + text + "' (channels: " + channel_names() + ")");
        if (!c.element.empty()) {
            const bool joint_channel = c.kind == Channel::Kind::coord || c.kind == Channel::Kind::rate;
            c.index = joint_channel ? m.joint_index(c.element) : m.body_index(c.element);
            if (c.index < 0)
                throw UsageError(where + ": channel '" + c.text + "': no " + (joint_channel ? "joint" : "body") +
                                 " named '" + c.element + "'");
        }
        o.channels.push_back(c);
    }
    if (!spec.file.empty()) {
        try {
            o.file.open(spec.file, ".part", spec.follow_links);
        } catch (const UsageError& e) {
            throw UsageError(where + ": " + e.what());
        }
        o.fp = o.file.fp();
        if (recording) {
            o.frame.assign(static_cast<std::size_t>(detail::recording_frame_floats(m)), 0.0f);
            detail::write_recording_header(o.fp, detail::recording_header(m, o.spec.every, spec.origin.str()));
        } else {
            write_header(o);
        }
    }
    outputs_.push_back(std::move(o));
    return static_cast<int>(outputs_.size()) - 1;
}

void Run::write_header(Output& o) {
    const Model& m = *model_;
    std::string h;
    auto col = [&](const std::string& s) { h += (h.empty() ? "" : ",") + s; };
    for (const Channel& c : o.channels) {
        switch (c.kind) {
            case Channel::Kind::momentum:
            case Channel::Kind::angular_momentum:
            case Channel::Kind::position:
            case Channel::Kind::velocity:
            case Channel::Kind::angular_velocity:
                for (const char* s : {"x", "y", "z"}) col(c.text + "." + s);
                break;
            case Channel::Kind::orientation:
                for (const char* s : {"w", "x", "y", "z"}) col(c.text + "." + s);
                break;
            case Channel::Kind::coord:
            case Channel::Kind::rate: {
                const JointInfo& j = m.joints[c.index];
                if (j.dofs == 1) col(c.text);
                else
                    for (int k = 0; k < j.dofs; ++k) col(c.text + "." + j.impl->coordinate_name(k));
                break;
            }
            default: col(c.text);
        }
    }
    std::fprintf(o.fp, "%s\n", h.c_str());
}

void Run::write_row(Output& o, const Monitors& mon) {
    const Model& m = *model_;
    const Data& d = *data_;
    if (o.spec.format == OutputSpec::Format::recording) {
        detail::recording_frame(m, d, mon, o.frame.data());
        std::fwrite(o.frame.data(), sizeof(float), o.frame.size(), o.fp);
        return;
    }
    bool first = true;
    auto put = [&](double v) {
        std::fprintf(o.fp, first ? "%.17g" : ",%.17g", v);
        first = false;
    };
    auto put3 = [&](const Vec3& v) { put(v.x), put(v.y), put(v.z); };
    for (const Channel& c : o.channels) {
        switch (c.kind) {
            case Channel::Kind::time: put(d.time); break;
            case Channel::Kind::energy: put(mon.total); break;
            case Channel::Kind::kinetic: put(mon.kinetic); break;
            case Channel::Kind::potential: put(mon.potential); break;
            case Channel::Kind::momentum: put3(mon.momentum); break;
            case Channel::Kind::angular_momentum: put3(mon.angular_momentum); break;
            case Channel::Kind::violation: put(mon.max_violation); break;
            case Channel::Kind::newton: put(d.last.iterations); break;
            case Channel::Kind::residual: put(d.last.residual); break;
            case Channel::Kind::substeps: put(d.last.substeps); break;
            case Channel::Kind::position: put3(d.pose[c.index].x); break;
            case Channel::Kind::orientation: {
                const Quat& q = d.pose[c.index].q;
                put(q.w), put(q.x), put(q.y), put(q.z);
                break;
            }
            case Channel::Kind::velocity: put3(d.twist[c.index].v); break;
            case Channel::Kind::angular_velocity: put3(rotate(d.pose[c.index].q, d.twist[c.index].w)); break;
            case Channel::Kind::coord:
            case Channel::Kind::rate: {
                const JointInfo& j = m.joints[c.index];
                const std::vector<double>& src = c.kind == Channel::Kind::coord ? d.coord : d.rate;
                for (int k = 0; k < j.dofs; ++k) put(src[j.dof_offset + k]);
                break;
            }
        }
    }
    std::fputc('\n', o.fp);
}

// `known`: the monitors of the current state if the caller has them (else computed when needed).
void Run::sample(bool force, const Monitors* known, RunHooks* hooks) {
    sampled_ = true;
    const Data& d = *data_;
    bool have_mon = known != nullptr;
    Monitors mon = known ? *known : Monitors{};
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
        Output& o = outputs_[i];
        if (!force && d.step % o.spec.every != 0) continue;
        if (o.fp) {
            if (!have_mon) mon = monitors(*model_, d), have_mon = true;
            write_row(o, mon);
        }
        if (o.spec.hook && hooks) hooks->on_sample(*this, static_cast<int>(i));
    }
}

long long Run::steps_for(double seconds) const {
    const double n = seconds / model_->options.dt;
    if (!(n >= 0) || n > 9e15) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "a duration of %g s at dt = %g s is not a number of steps this run can take",
                      seconds, model_->options.dt);
        throw UsageError(buf);
    }
    return std::llround(n);
}

bool Run::steps(long long n, RunHooks* hooks) {
    if (finished_) throw UsageError("Run::steps: the run is finished");
    if (n < 0) throw UsageError("Run::steps: the number of steps must be non-negative, got " + std::to_string(n));
    if (n > max_steps_)
        throw UsageError("the run would take " + std::to_string(n) + " steps, more than the limit of " +
                         std::to_string(max_steps_) + " (dt = " + json_num(model_->options.dt) +
                         " s); if that is meant, raise the limit (noether.world{ max_steps = ... })");
    if (failed_) return false;
    const Model& m = *model_;
    Data& d = *data_;
    if (!sampled_ && d.step == 0) sample(true, nullptr, hooks);
    sampled_ = true;
    const double t_start = now_s();
    double last_print = t_start;
    bool printed = false;
    const double t_end = d.time + n * m.options.dt;
    const bool tty = progress_ && isatty(2);
    for (long long k = 0; k < n; ++k) {
        if (hooks) hooks->before_step(*this);
        const double t0 = now_s();
        const StepStatus st = step(m, d);
        wall_ += now_s() - t0;
        if (st != StepStatus::ok) {
            failed_ = true;
            failure_ = d.warnings.empty() ? status_name(st) : d.warnings.back().message;
            break;
        }
        const Monitors mon = monitors(m, d);
        e_final_ = mon.total;
        e_max_dev_ = std::max(e_max_dev_, std::fabs(mon.total - e0_));
        if (mon.max_violation > v_max_) {
            v_max_ = mon.max_violation;
            if (mon.worst_joint >= 0) worst_joint_ = m.joints[mon.worst_joint].name;
        }
        sample(false, &mon, hooks);
        watch(mon);
        if (tty) {
            const double t = now_s();
            if (t - t_start > 1.0 && t - last_print > 0.25) {
                const double rate = (k + 1) / (t - t_start);  // steps per wall second in this call
                const double eta = (n - k - 1) / rate;
                std::fprintf(stderr, "\rnoether: t = %.3f / %.3f s (%3.0f%%), %.0f steps/s, ETA %s   ", d.time, t_end,
                             100.0 * (k + 1) / n, rate, eta_text(eta).c_str());
                last_print = t;
                printed = true;
            }
        }
    }
    if (printed) std::fprintf(stderr, "\n");
    return !failed_;
}

std::string Run::graph_report() const {
    return graph_text(*model_) + step_advice_text(step_advice(*model_, *data_), model_->options.dt);
}

// The watch (run.hpp): warn once, naming the fastest body and joint, with a step that would do.
void Run::watch(const Monitors& mon) {
    const Model& m = *model_;
    Data& d = *data_;
    if (m.integrator->scheme() == Integrator::Scheme::adaptive) return;  // it controls its own error
    const double dt = m.options.dt;
    Watch& w = watch_;
    if (w.passive) {  // inputs the host sets (constant forces: the constructor)
        for (double u : d.actuation)
            if (u != 0) w.passive = false;
        for (int b = 0; b < m.nbodies() && w.passive; ++b)
            if (norm(d.applied_force[b]) > 0 || norm(d.applied_torque[b]) > 0) w.passive = false;
    }
    w.kinetic_max = std::max(w.kinetic_max, mon.kinetic);
    // The body turning fastest (−1: nothing turns).
    auto fastest_body = [&](double& rate) {
        int body = -1;
        rate = 0;
        for (int b = 0; b < m.nbodies(); ++b) {
            const double r = norm(d.twist[b].w);
            if (r > rate) rate = r, body = b;
        }
        return body;
    };
    // What to name: that body and the joint coordinate moving fastest at it.
    auto fastest = [&](double& rate, int& body, int& joint, double& jrate) {
        body = fastest_body(rate), joint = -1, jrate = 0;
        for (int j = 0; j < m.njoints(); ++j) {
            const JointInfo& ji = m.joints[j];
            if (ji.a != body && ji.b != body) continue;
            for (int k = 0; k < ji.dofs; ++k)
                if (std::fabs(d.rate[ji.dof_offset + k]) > jrate) jrate = std::fabs(d.rate[ji.dof_offset + k]), joint = j;
        }
    };
    auto warn = [&](const char* key, const std::string& what) {
        double rate;
        int body, joint;
        double jrate;
        fastest(rate, body, joint, jrate);
        char buf[800];
        int k = std::snprintf(buf, sizeof buf, "step %lld (t = %.6g s): %s", static_cast<long long>(d.step), d.time,
                              what.c_str());
        if (body < 0 && k > 0 && k < static_cast<int>(sizeof buf))  // nothing turns: no rate to go by
            std::snprintf(buf + k, sizeof buf - k, "; try a smaller dt or integrator dp45-projection");
        if (body >= 0 && k > 0 && k < static_cast<int>(sizeof buf)) {
            k += std::snprintf(buf + k, sizeof buf - k, "; fastest body '%s' at %.4g rad/s (%.2g rad per step)",
                               m.bodies[body].name.c_str(), rate, rate * dt);
            if (joint >= 0 && k > 0 && k < static_cast<int>(sizeof buf))
                k += std::snprintf(buf + k, sizeof buf - k, ", joint '%s' at %.4g", m.joints[joint].name.c_str(), jrate);
            const auto names = m.integrator->option_names();
            const bool turn_option = std::find(names.begin(), names.end(), "max_turn") != names.end();
            if (k > 0 && k < static_cast<int>(sizeof buf))
                std::snprintf(buf + k, sizeof buf - k,
                              "; for about 1%% energy keep bodies below %.2g rad per step: %sdt <= %.2g s at the "
                              "present rates, or integrator dp45-projection",
                              kAdviceTurn, turn_option ? "options { max_turn = 0.1 } (substeps where needed), " : "",
                              round_down(kAdviceTurn / rate));
        }
        d.warn_once(key, buf);
    };
    // 1. A body turning more than kWatchTurn per step.
    if (!d.warned("watch/turn")) {
        double rate;
        fastest_body(rate);
        const double h = dt / std::max(1, d.last.substeps);  // the step it took (substeps of max_turn)
        if (rate * h > kWatchTurn) {
            char what[160];
            std::snprintf(what, sizeof what, "a body turns %.2g rad per step (more than %.2g: the energy error grows)",
                          rate * h, kWatchTurn);
            warn("watch/turn", what);
        }
    }
    // 2. Energy growing with no input doing work (springs are in E; dampers only remove).
    const double scale = std::max(std::fabs(e0_), w.kinetic_max);
    if (w.passive && scale > 0 && !d.warned("watch/energy") && mon.total - e0_ > kWatchEnergy * scale) {
        char what[200];
        std::snprintf(what, sizeof what, "the energy grew from %.6g J to %.6g J with no input doing work", e0_,
                      mon.total);
        warn("watch/energy", what);
    }
    // 3. A growing share of subdivided steps, window by window.
    const long long in_window = d.stats.steps - w.window_start;
    if (in_window >= kWatchWindow) {
        const double share = double(d.stats.subdivided_steps - w.window_subdivided) / double(in_window);
        if (share >= kWatchShare && share > w.last_share && !d.warned("watch/subdivided")) {
            char what[200];
            std::snprintf(what, sizeof what, "%.0f%% of the last %lld steps needed substeps (%.0f%% before)",
                          100 * share, in_window, 100 * w.last_share);
            warn("watch/subdivided", what);
        }
        w.last_share = share;
        w.window_start = d.stats.steps;
        w.window_subdivided = d.stats.subdivided_steps;
    }
}

void Run::abort(const std::string& why) {
    if (failed_ || finished_) return;
    failed_ = true;
    failure_ = why;
}

void Run::finish(std::vector<std::string>* notes) {
    if (finished_) return;
    for (Output& o : outputs_) {
        if (!o.fp) continue;
        // A recording of a run that never stepped (e.g. a world whose ensemble did the running):
        // its one frame, the initial state, and a note that says so.
        if (o.spec.format == OutputSpec::Format::recording && !sampled_) {
            write_row(o, monitors(*model_, *data_));
            if (notes)
                notes->push_back("recording '" + o.spec.file + "' holds only the initial state: this world was never stepped");
        }
        o.fp = nullptr;
        const std::string& file = o.spec.file;
        if (failed_) {
            o.file.close();
            if (notes)
                notes->push_back("output '" + file + "' is incomplete (the run stopped at t = " +
                                 std::to_string(data_->time) + " s)" +
                                 (o.file.in_place() ? std::string() : "; it was left as '" + o.file.writing() + "'"));
            continue;
        }
        const std::string err = o.file.commit();
        if (!err.empty()) {
            outputs_ok_ = false;
            if (notes) notes->push_back("output '" + file + "': " + err);
        }
    }
    finished_ = true;
}

RunSummary Run::summary() const {
    RunSummary s;
    const Model& m = *model_;
    const Data& d = *data_;
    s.bodies = m.nbodies();
    s.joints = m.njoints();
    s.loop_joints = static_cast<long long>(m.graph.loop_joints.size());
    // Degrees of freedom: 6 per body minus the independent constraint rows (the solver reports
    // closure rows it found dependent).
    s.dof = m.dof() + d.stats.redundant_rows;
    s.integrator = m.options.integrator;
    s.solver = m.solver_name;
    s.dt = m.options.dt;
    s.steps = d.stats.steps;
    s.sim_time = d.time;
    s.wall_s = wall_;
    s.us_per_step = d.stats.steps ? 1e6 * wall_ / d.stats.steps : 0;
    s.energy_initial = e0_;
    s.energy_final = e_final_;
    s.energy_max_abs_dev = e_max_dev_;
    s.energy_max_rel_dev = e0_ != 0 ? e_max_dev_ / std::fabs(e0_) : std::nan("");
    s.max_violation = v_max_;
    s.worst_joint = worst_joint_;
    s.newton_mean = d.stats.steps ? double(d.stats.newton_total) / d.stats.steps : 0;
    s.newton_max = d.stats.newton_max;
    s.subdivided_steps = d.stats.subdivided_steps;
    s.failed_steps = d.stats.failed_steps;
    s.floor_steps = d.stats.floor_steps;
    s.internal_steps = d.stats.internal_steps;
    s.rejected_steps = d.stats.rejected_steps;
    s.projection_total = d.stats.projection_total;
    s.failed = failed_;
    for (const std::string& x : notes_) s.warnings.push_back(x);
    for (const Diagnostic& diag : m.warnings) s.warnings.push_back(diag.str());
    for (const Warning& x : d.warnings) s.warnings.push_back(x.message);
    return s;
}

}  // namespace noether
