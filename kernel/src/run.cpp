// The run loop of every host: the steps, outputs (channels, CSV rows, recordings) and tracking.
// The summary and graph texts are in run_report.cpp, the watch over a run in run_watch.cpp.
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

// "42 s", "3 min 5 s", "2 h 10 min".
std::string eta_text(double s) {
    char buf[48];
    if (!(s < 1e9)) return "unknown";
    if (s < 60) std::snprintf(buf, sizeof buf, "%.0f s", s);
    else if (s < 3600) std::snprintf(buf, sizeof buf, "%d min %d s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
    else std::snprintf(buf, sizeof buf, "%d h %d min", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
    return buf;
}

std::string g10(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}


}  // namespace

// ---- channels ----------------------------------------------------------------------------------

// The deepest penetration of the last step (0 when every gap is open) and the contacts carrying load.
double penetration(const Data& d) {
    double p = 0;
    for (const ContactResult& r : d.contact) p = std::max(p, -r.gap);
    return p;
}

int contacts_active(const Data& d) {
    int n = 0;
    for (const ContactResult& r : d.contact) n += r.active ? 1 : 0;
    return n;
}

const char* channel_names() {
    return "time, energy, kinetic, potential, momentum, angular_momentum, violation, newton, residual, substeps, "
           "contact_force, penetration, contacts_active, and <body>.position, <body>.orientation, <body>.velocity, "
           "<body>.angular_velocity, <joint>.coord, <joint>.rate, <joint>.limit_force, <contact>.gap, "
           "<contact>.normal_force, <contact>.friction, <contact>.point, <contact>.active";
}

bool parse_channel(const std::string& text, Channel& c) {
    static const std::pair<const char*, Channel::Kind> globals[] = {
        {"time", Channel::Kind::time},         {"energy", Channel::Kind::energy},
        {"kinetic", Channel::Kind::kinetic},   {"potential", Channel::Kind::potential},
        {"momentum", Channel::Kind::momentum}, {"angular_momentum", Channel::Kind::angular_momentum},
        {"violation", Channel::Kind::violation}, {"newton", Channel::Kind::newton},
        {"residual", Channel::Kind::residual}, {"substeps", Channel::Kind::substeps},
        {"contact_force", Channel::Kind::contact_force}, {"penetration", Channel::Kind::penetration},
        {"contacts_active", Channel::Kind::contacts_active}};
    static const std::pair<const char*, Channel::Kind> per[] = {
        {"position", Channel::Kind::position}, {"orientation", Channel::Kind::orientation},
        {"velocity", Channel::Kind::velocity}, {"angular_velocity", Channel::Kind::angular_velocity},
        {"coord", Channel::Kind::coord},       {"rate", Channel::Kind::rate},
        {"limit_force", Channel::Kind::limit_force}, {"gap", Channel::Kind::gap},
        {"normal_force", Channel::Kind::normal_force}, {"friction", Channel::Kind::friction},
        {"point", Channel::Kind::point},       {"active", Channel::Kind::active}};
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

// ---- the run -----------------------------------------------------------------------------------

Run::Run(std::shared_ptr<const Model> model) : model_(std::move(model)) {
    if (!model_) throw UsageError("Run: model is null");
    data_ = std::make_unique<Data>(model_);
    set_baseline(monitors(*model_, *data_));
    watch_.v_prev.resize(static_cast<std::size_t>(model_->nbodies()));
    for (const ForceInfo& f : model_->forces)  // constant forces do work: the watch's energy test is off
        if (norm(f.force) > 0 || norm(f.torque) > 0) watch_.passive = false;
}

// The start of the run's tracking: energy, violation and worst joint of the state `mon` was taken at.
void Run::set_baseline(const Monitors& mon) {
    e0_ = e_final_ = mon.total;
    v_max_ = mon.max_violation;
    worst_joint_ = mon.worst_joint >= 0 ? model_->joints[mon.worst_joint].name : std::string();
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
            const bool joint_channel =
                c.kind == Channel::Kind::coord || c.kind == Channel::Kind::rate || c.kind == Channel::Kind::limit_force;
            const bool contact_channel = c.kind == Channel::Kind::gap || c.kind == Channel::Kind::normal_force ||
                                         c.kind == Channel::Kind::friction || c.kind == Channel::Kind::point ||
                                         c.kind == Channel::Kind::active;
            if (contact_channel) {
                c.index = -1;
                for (std::size_t k = 0; k < m.contacts.size(); ++k)
                    if (m.contacts[k].name == c.element) c.index = static_cast<int>(k);
            } else {
                c.index = joint_channel ? m.joint_index(c.element) : m.body_index(c.element);
            }
            if (c.index < 0)
                throw UsageError(where + ": channel '" + c.text + "': no " +
                                 (contact_channel ? "contact point" : joint_channel ? "joint" : "body") + " named '" +
                                 c.element + "'" +
                                 (contact_channel && !m.contacts.empty() ? " (the first is '" + m.contacts[0].name + "')"
                                                                         : std::string()));
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
            case Channel::Kind::friction:
            case Channel::Kind::point:
                for (const char* s : {"x", "y", "z"}) col(c.text + "." + s);
                break;
            case Channel::Kind::orientation:
                for (const char* s : {"w", "x", "y", "z"}) col(c.text + "." + s);
                break;
            case Channel::Kind::coord:
            case Channel::Kind::rate:
            case Channel::Kind::limit_force: {
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
            case Channel::Kind::rate:
            case Channel::Kind::limit_force: {
                const JointInfo& j = m.joints[c.index];
                const std::vector<double>& src =
                    c.kind == Channel::Kind::coord ? d.coord : c.kind == Channel::Kind::rate ? d.rate : d.limit_force;
                for (int k = 0; k < j.dofs; ++k) put(src[j.dof_offset + k]);
                break;
            }
            case Channel::Kind::contact_force: {
                double f = 0;
                for (const ContactResult& r : d.contact) f += r.normal_force;
                put(f);
                break;
            }
            case Channel::Kind::penetration: put(penetration(d)); break;
            case Channel::Kind::contacts_active: put(contacts_active(d)); break;
            case Channel::Kind::gap: put(d.contact[c.index].gap); break;
            case Channel::Kind::normal_force: put(d.contact[c.index].normal_force); break;
            case Channel::Kind::friction: put3(d.contact[c.index].friction); break;
            case Channel::Kind::point: put3(d.contact[c.index].point); break;
            case Channel::Kind::active: put(d.contact[c.index].active ? 1 : 0); break;
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
                         std::to_string(max_steps_) + " (dt = " + g10(model_->options.dt) +
                         " s); if that is meant, raise the run's step limit (option 'max_steps')");
    if (failed_) return false;
    const Model& m = *model_;
    Data& d = *data_;
    if (!sampled_) {
        // The state the host set before the first step (set_joint_state, restore, poses) is the
        // run's start: the energy and violation baselines are taken here, not at construction.
        const Monitors mon = monitors(m, d);
        set_baseline(mon);
        if (d.step == 0) sample(true, &mon, hooks);
    }
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
        if (!d.contact.empty()) {
            penetration_max_ = std::max(penetration_max_, penetration(d));
            active_max_ = std::max<long long>(active_max_, contacts_active(d));
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
    s.factor_mean = d.stats.steps ? double(d.stats.factor_total) / d.stats.steps : 0;
    s.subdivided_steps = d.stats.subdivided_steps;
    s.failed_steps = d.stats.failed_steps;
    s.floor_steps = d.stats.floor_steps;
    s.internal_steps = d.stats.internal_steps;
    s.rejected_steps = d.stats.rejected_steps;
    s.projection_total = d.stats.projection_total;
    s.contacts = static_cast<long long>(m.contacts.size());
    s.limited_joints = m.limited_joints;
    s.penetration_max = penetration_max_;
    s.contacts_active_max = active_max_;
    s.failed = failed_;
    for (const std::string& x : notes_) s.warnings.push_back(x);
    for (const Diagnostic& diag : m.warnings) s.warnings.push_back(diag.str());
    for (const Warning& x : d.warnings) s.warnings.push_back(x.message);
    return s;
}

}  // namespace noether
