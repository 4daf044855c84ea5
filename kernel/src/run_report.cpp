// Reports of a run: the summary as JSON and text, the block graph as text (noether check,
// the import report), and the JSON helpers they share.
#include "noether/run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "noether/advice.hpp"
#include "noether/limits.hpp"
#include "noether/sdk/dense.hpp"

namespace noether {

namespace {

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

// A number as a stream prints it (6 significant digits), for the graph text.
std::string fmt_number(double v) {
    std::ostringstream o;
    o << v;
    return o.str();
}

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
    std::snprintf(buf, sizeof buf, "  Newton iterations: mean %.2f, max %lld", newton_mean, newton_max);
    o << buf;
    if (factor_mean > 0) {  // (the methods that count them)
        std::snprintf(buf, sizeof buf, " (matrices factored: %.2f a step)", factor_mean);
        o << buf;
    }
    std::snprintf(buf, sizeof buf, "; subdivided steps %lld; failed steps %lld\n", subdivided_steps, failed_steps);
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
    if (m.limited_joints > 0) {
        o << "enforced limits (" << m.limited_joints << "):";
        for (const JointInfo& j : m.joints)
            if (j.limited) {
                o << " " << j.name;
                for (int k = 0; k < j.dofs; ++k)
                    if (std::isfinite(j.lower[k]) || std::isfinite(j.upper[k]) || j.dofs == 1)
                        o << (j.dofs > 1 ? " " + std::string(j.impl->coordinate_name(k)) : std::string()) << " [" << j.lower[k]
                          << ", " << j.upper[k] << "]";
            }
        o << "\n";
    }
    if (!m.contacts.empty()) {
        o << "contact points (" << m.contacts.size() << "):\n";
        for (const ContactInfo& c : m.contacts) {
            o << "  " << c.name << "  on " << m.bodies[c.body].name << ", ";
            if (c.radius > 0) o << "sphere r " << c.radius;
            else o << "point";
            o << " at (" << c.point.x << ", " << c.point.y << ", " << c.point.z << ") against ";
            if (c.other >= 0) o << m.bodies[c.other].name << "'s sphere r " << c.other_radius;
            else o << "n.y >= " << c.offset << ", n = (" << c.normal.x << ", " << c.normal.y << ", " << c.normal.z << ")";
            o << ", mu " << c.mu << "\n";
        }
    }
    if (!m.couplings.empty()) {
        auto coord = [&](int j, int k) {
            const JointInfo& ji = m.joints[j];
            return ji.dofs > 1 ? ji.name + "." + ji.impl->coordinate_name(k) : ji.name;
        };
        o << "couplings (" << m.couplings.size() << "):";
        for (const CouplingInfo& c : m.couplings) {
            std::string ends = coord(c.joint, c.dof) + (c.range ? " - " : " = ") + fmt_number(c.ratio) + " x " +
                               coord(c.leader, c.leader_dof);
            for (std::size_t t = 2; t < c.terms.size(); ++t)  // further leaders: coef = −ratio
                ends += (c.range ? " - " : " + ") + fmt_number(-c.terms[t].coef) + " x " + coord(c.terms[t].joint, c.terms[t].dof);
            const std::string off = c.offset != 0 ? (c.range ? " - " : " + ") + fmt_number(c.offset) : std::string();
            if (c.range) o << " " << c.name << " [" << fmt_number(c.lower) << " <= " << ends << off << " <= " << fmt_number(c.upper) << "]";
            else o << " " << c.name << " [" << ends << off << "]";
        }
        o << "\n";
    }
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
    const int nc = m.equality_couplings();  // a coupling with a range removes no degree of freedom
    const std::string coupled = nc > 0 ? " - " + std::to_string(nc) + " coupling" + (nc == 1 ? "" : "s") : std::string();
    if (rank >= 0 && rank < m.total_rows)
        o << "degrees of freedom: " << 6 * m.nbodies() - rank - nc << " (6 x " << m.nbodies() << " bodies - " << rank
          << " independent of the " << m.total_rows << " constraint rows at the initial configuration" << coupled << "; "
          << m.total_rows - rank << " loop-closure rows are redundant)\n";
    else {
        o << "degrees of freedom: " << m.dof() << " by counting (6 x " << m.nbodies() << " bodies - " << m.total_rows
          << " constraint rows" << coupled << ")";
        if (rank < 0) o << "; loop-closure rows may be redundant (the solver reports them when it runs)";
        o << "\n";
    }
    o << "integrator " << m.options.integrator << ", solver " << m.solver_name << ", dt " << m.options.dt << " s\n";
    return o.str();
}

std::string Run::graph_report() const {
    return graph_text(*model_) + step_advice_text(step_advice(*model_, *data_), model_->options.dt);
}

// The watch (run.hpp): warn once, naming the fastest body and joint, with a step that would do.
}  // namespace noether
