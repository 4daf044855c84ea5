// compile(spec) → Model: validate every element, resolve plugin types, build the block graph.
//
// Every problem is collected (not just the first) and names the element, its origin, the
// rule and the offending value. Errors make compile() throw ModelError; warnings are kept
// in Model::warnings.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "noether/sdk/integrator.hpp"
#include "noether/model.hpp"
#include "noether/registry.hpp"
#include "noether/sdk/solver.hpp"

#include "fnv.hpp"
#include "sym3.hpp"

namespace noether {

namespace {

std::string num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

std::string vec(const Vec3& v) { return "(" + num(v.x) + ", " + num(v.y) + ", " + num(v.z) + ")"; }

std::string list_names(const std::vector<std::string>& names) {
    if (names.empty()) return "none are loaded";
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

using detail::sym_eigenvalues;
using detail::fnv;
std::uint64_t fnv(std::uint64_t h, const std::string& s) { return fnv(fnv(h, s.data(), s.size()), "\0", 1); }
std::uint64_t fnv(std::uint64_t h, int v) { return fnv(h, &v, sizeof v); }

class Checker {
public:
    std::vector<Diagnostic> diags;
    void error(const Origin& o, const std::string& msg) { diags.push_back({Severity::error, o, msg}); }
    void warning(const Origin& o, const std::string& msg) { diags.push_back({Severity::warning, o, msg}); }
    bool has_errors() const {
        return std::any_of(diags.begin(), diags.end(), [](const Diagnostic& d) { return d.severity == Severity::error; });
    }
};

void check_mass(double mass, const Origin& o, const std::string& who, Checker& c) {
    if (!(std::isfinite(mass) && mass > 0)) c.error(o, who + ": mass must be positive and finite, got " + num(mass));
}

// Inertia: finite, symmetric, positive definite (errors); triangle inequality (warning).
void check_inertia(const Mat3& I, const Origin& o, const std::string& who, Checker& c) {
    bool finite = true;
    double scale = 0;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            finite &= std::isfinite(I.m[i][j]);
            scale = std::max(scale, std::fabs(I.m[i][j]));
        }
    if (!finite) {
        c.error(o, who + ": inertia must be finite");
        return;
    }
    double asym = 0;
    for (int i = 0; i < 3; ++i)
        for (int j = i + 1; j < 3; ++j) asym = std::max(asym, std::fabs(I.m[i][j] - I.m[j][i]));
    if (asym > 1e-9 * std::max(scale, 1e-300)) {
        c.error(o, who + ": inertia must be symmetric, got I[i][j] − I[j][i] = " + num(asym));
        return;
    }
    double ev[3];
    sym_eigenvalues(I, ev);
    if (!(ev[0] > 0)) {
        c.error(o, who + ": inertia must be positive definite, smallest principal moment is " + num(ev[0]) + " kg m²");
        return;
    }
    const double tol = 1e-9 * ev[2];
    if (ev[0] + ev[1] < ev[2] - tol)
        c.warning(o, who + ": principal moments (" + num(ev[0]) + ", " + num(ev[1]) + ", " + num(ev[2]) +
                         ") violate the triangle inequality (no rigid body has them; kept as given)");
    if (ev[0] < 1e-9 * ev[2])
        c.warning(o, who + ": inertia is nearly singular (principal moments " + num(ev[0]) + " … " + num(ev[2]) + ")");
}

}  // namespace

const char* shape_type_name(Shape::Type t) {
    switch (t) {
        case Shape::Type::box: return "box";
        case Shape::Type::sphere: return "sphere";
        case Shape::Type::cylinder: return "cylinder";
        case Shape::Type::capsule: return "capsule";
        case Shape::Type::mesh: return "mesh";
    }
    return "?";
}

void contact_points(const ContactSpec& cs, std::vector<Vec3>& pts, double& radius) {
    pts.clear();
    radius = 0;
    if (cs.type == ContactSpec::Type::box) {
        for (int b = 0; b < 8; ++b) {
            const Vec3 corner{(b & 1 ? 0.5 : -0.5) * cs.size.x, (b & 2 ? 0.5 : -0.5) * cs.size.y, (b & 4 ? 0.5 : -0.5) * cs.size.z};
            pts.push_back(cs.pose.x + rotate(cs.pose.q, corner));
        }
    } else if (cs.type == ContactSpec::Type::capsule) {
        radius = cs.size.x;
        for (double e : {-0.5, 0.5}) pts.push_back(cs.pose.x + rotate(cs.pose.q, Vec3{0, 0, e * cs.size.y}));
    } else {
        radius = cs.type == ContactSpec::Type::sphere ? cs.size.x : 0.0;
        pts.push_back(cs.pose.x);
    }
}

const char* contact_type_name(ContactSpec::Type t) {
    switch (t) {
        case ContactSpec::Type::point: return "point";
        case ContactSpec::Type::sphere: return "sphere";
        case ContactSpec::Type::capsule: return "capsule";
        case ContactSpec::Type::box: return "box";
    }
    return "?";
}

namespace {

void check_body(const BodySpec& b, Checker& c, BodyInfo& out) {
    const std::string who = "body '" + b.name + "'";
    out.name = b.name;
    out.origin = b.origin;
    out.mass = b.mass;
    out.inertia = b.inertia;
    check_mass(b.mass, b.origin, who, c);
    check_inertia(b.inertia, b.origin, who, c);
    if (!isfinite(b.position)) c.error(b.origin, who + ": position must be finite, got " + vec(b.position));
    if (!isfinite(b.velocity)) c.error(b.origin, who + ": velocity must be finite, got " + vec(b.velocity));
    if (!isfinite(b.angular_velocity))
        c.error(b.origin, who + ": angular_velocity must be finite, got " + vec(b.angular_velocity));
    const double qn = qnorm(b.orientation);
    Quat q = b.orientation;
    if (!isfinite(q) || !(qn > 1e-12)) {
        c.error(b.origin, who + ": orientation must be a nonzero finite quaternion");
        q = Quat{};
    } else {
        if (std::fabs(qn - 1) > 1e-6)
            c.warning(b.origin, who + ": orientation quaternion has norm " + num(qn) + "; normalised");
        q = qnormalized(q);
    }
    out.pose0 = {b.position, q};
    for (std::size_t i = 0; i < b.shapes.size(); ++i) {
        const Shape& sh = b.shapes[i];
        const std::string what = who + ": shape " + std::to_string(i + 1) + " (" + shape_type_name(sh.type) + ")";
        const int nsize = sh.type == Shape::Type::box ? 3 : sh.type == Shape::Type::sphere ? 1 : sh.type == Shape::Type::mesh ? 0 : 2;
        const double sz[3] = {sh.size.x, sh.size.y, sh.size.z};
        bool ok = true;
        if (sh.type == Shape::Type::mesh) {  // triangles with indices in range, finite vertices
            const MeshData* md = sh.mesh.get();
            std::string bad;
            if (!md || md->triangles.empty() || md->triangles.size() % 3 != 0 || md->vertices.size() % 3 != 0)
                bad = "needs vertices (3 numbers each) and triangles (3 indices each), got " +
                      (md ? std::to_string(md->vertices.size()) + " vertex and " + std::to_string(md->triangles.size()) + " index numbers"
                          : std::string("none"));
            else {
                for (float v : md->vertices)
                    if (!std::isfinite(v)) {
                        bad = "a vertex is not finite";
                        break;
                    }
                const std::size_t nv = md->vertices.size() / 3;
                for (std::uint32_t t : md->triangles)
                    if (t >= nv) {
                        bad = "triangle index " + std::to_string(t) + " beyond its " + std::to_string(nv) + " vertices";
                        break;
                    }
            }
            if (!bad.empty()) c.error(b.origin, what + (md && !md->source.empty() ? " from " + md->source : std::string()) + ": " + bad);
        }
        for (int k = 0; k < nsize; ++k)  // a capsule may have length 0 (a sphere)
            if (!(std::isfinite(sz[k]) && (sz[k] > 0 || (k == 1 && sh.type == Shape::Type::capsule && sz[k] == 0))))
                ok = false;
        if (!ok)
            c.error(b.origin, what + ": size must be positive and finite (" +
                                  (sh.type == Shape::Type::box      ? "edge lengths x, y, z"
                                   : sh.type == Shape::Type::sphere ? "radius"
                                                                    : "radius, length") +
                                  "), got " + vec(sh.size));
        if (!isfinite(sh.pose.x)) c.error(b.origin, what + ": position must be finite, got " + vec(sh.pose.x));
        const double sn = qnorm(sh.pose.q);
        if (!isfinite(sh.pose.q) || !(sn > 1e-12)) c.error(b.origin, what + ": orientation must be a nonzero finite quaternion");
        for (double x : sh.rgba)
            if (!(x >= 0 && x <= 1)) {
                c.error(b.origin, what + ": colour components must be in [0, 1], got " + num(x));
                break;
            }
        Shape checked = sh;
        if (sn > 1e-12 && isfinite(sh.pose.q)) checked.pose.q = qnormalized(sh.pose.q);
        out.shapes.push_back(checked);
    }
    out.twist0.v = b.velocity;
    out.twist0.w = b.angular_velocity_in_body ? b.angular_velocity : rotate_inv(q, b.angular_velocity);
}

// Expand a per-DOF list: empty → fill, one value → broadcast, dofs values → as is.
bool per_dof(const std::vector<double>& in, int dofs, double fill, std::vector<double>& out) {
    if (in.empty()) {
        out.assign(dofs, fill);
        return true;
    }
    if (in.size() == 1) {
        out.assign(dofs, in[0]);
        return true;
    }
    if (static_cast<int>(in.size()) == dofs) {
        out = in;
        return true;
    }
    return false;
}


// Contacts: every declaration checked and expanded into contact points (a box into its 8
// corners, a capsule into its 2 end spheres). A point that starts inside what it touches (deeper
// than 1e-9 m) is refused with its depth: the step resolves nothing, it only keeps gaps open.
void compile_contacts(const Spec& spec, const std::map<std::string, int>& body_ids, Model& m, Checker& c) {
    std::map<std::string, int> per_body;
    std::set<std::string> names;
    for (std::size_t k = 0; k < spec.contacts.size(); ++k) {
        const ContactSpec& cs = spec.contacts[k];
        std::string who = cs.name.empty() ? "contact on body '" + cs.body + "'" : "contact '" + cs.name + "'";
        auto it = body_ids.find(cs.body);
        if (it == body_ids.end()) {
            c.error(cs.origin, who + ": body '" + cs.body + "' not found");
            continue;
        }
        const std::string name = cs.name.empty() ? cs.body + "/contact" + std::to_string(++per_body[cs.body]) : cs.name;
        if (!names.insert(name).second) {
            c.error(cs.origin, who + ": duplicate contact name '" + name + "'");
            continue;
        }
        who = "contact '" + name + "'";
        if (!(std::isfinite(cs.mu) && cs.mu >= 0)) {
            c.error(cs.origin, who + ": friction coefficient mu must be non-negative and finite, got " + num(cs.mu));
            continue;
        }
        if (!isfinite(cs.size) || !isfinite(cs.pose.x) || !isfinite(cs.pose.q) || !isfinite(cs.normal) ||
            !std::isfinite(cs.offset) || !isfinite(cs.other_position) || !std::isfinite(cs.other_radius)) {
            c.error(cs.origin, who + ": size, position, orientation, normal, offset and the other sphere must be finite");
            continue;
        }
        const bool sphere = cs.type == ContactSpec::Type::sphere, capsule = cs.type == ContactSpec::Type::capsule;
        const bool box = cs.type == ContactSpec::Type::box;
        if ((sphere || capsule) && !(cs.size.x > 0)) {
            c.error(cs.origin, who + ": a " + contact_type_name(cs.type) + " needs a radius > 0, got " + num(cs.size.x));
            continue;
        }
        if (capsule && !(cs.size.y >= 0)) {
            c.error(cs.origin, who + ": a capsule needs a length >= 0, got " + num(cs.size.y));
            continue;
        }
        if (box && !(cs.size.x >= 0 && cs.size.y >= 0 && cs.size.z >= 0)) {
            c.error(cs.origin, who + ": a box needs edge lengths >= 0, got " + vec(cs.size));
            continue;
        }
        ContactInfo base;
        base.decl = static_cast<int>(k);
        base.body = it->second;
        base.mu = cs.mu;
        base.origin = cs.origin;
        if (!cs.other.empty() && cs.other != "world") {
            auto ot = body_ids.find(cs.other);
            if (ot == body_ids.end()) {
                c.error(cs.origin, who + ": other body '" + cs.other + "' not found");
                continue;
            }
            if (!sphere) {
                c.error(cs.origin, who + ": a contact between two bodies is sphere against sphere; got a " +
                                       contact_type_name(cs.type) + " on '" + cs.body + "'");
                continue;
            }
            if (!(cs.other_radius > 0)) {
                c.error(cs.origin, who + ": the other body's sphere needs a radius > 0, got " + num(cs.other_radius));
                continue;
            }
            if (ot->second == base.body) {
                c.error(cs.origin, who + ": a body cannot touch itself ('" + cs.body + "' twice)");
                continue;
            }
            base.other = ot->second;
            base.other_point = cs.other_position;
            base.other_radius = cs.other_radius;
        } else {
            const double nn = norm(cs.normal);
            if (!(nn > 1e-12)) {
                c.error(cs.origin, who + ": the half-space normal must not be zero, got " + vec(cs.normal));
                continue;
            }
            base.normal = (1.0 / nn) * cs.normal;
            base.offset = cs.offset / nn;
        }
        // The contact points in the body frame.
        std::vector<Vec3> pts;
        double radius = 0;
        contact_points(cs, pts, radius);
        bool ok = true;
        for (std::size_t p = 0; p < pts.size() && ok; ++p) {
            ContactInfo ci = base;
            ci.name = pts.size() == 1 ? name : name + "/" + std::to_string(p + 1);
            ci.point = pts[p];
            ci.radius = radius;
            // Start: the gap at the initial poses.
            const Pose& P = m.bodies[ci.body].pose0;
            const Vec3 centre = P.x + rotate(P.q, ci.point);
            double gap;
            if (ci.other < 0) {
                gap = dot(ci.normal, centre) - ci.offset - ci.radius;
            } else {
                const Pose& Q = m.bodies[ci.other].pose0;
                gap = norm(centre - (Q.x + rotate(Q.q, ci.other_point))) - ci.radius - ci.other_radius;
            }
            if (!(gap >= -1e-9)) {
                c.error(cs.origin, who + ": starts in penetration: " + ci.name + " is " + num(-gap) +
                                       " m inside (gap " + num(gap) + " m); move the body out by at least that much");
                ok = false;
            }
            m.contacts.push_back(ci);
        }
    }
}

// A Model with contacts or enforced limits for an integrator that cannot take them: one error per
// kind, naming the first element and the integrators that can.
void refuse_inequalities(const Model& m, const Registry& reg, Checker& c) {
    const std::string can = reg.integrators_where([](const Integrator& i) { return i.takes_inequalities(); });
    const std::string integ = m.options.integrator;
    if (!m.contacts.empty()) {
        const ContactInfo& ci = m.contacts.front();
        c.error(ci.origin, "contact '" + ci.name + "': integrator '" + integ +
                               "' does not take contacts (integrators that do: " + can + ")");
    }
    for (const JointInfo& j : m.joints)
        if (j.limited) {
            c.error(j.origin, "joint '" + j.name + "': integrator '" + integ + "' does not enforce joint limits " +
                                  "(integrators that do: " + can + "; or leave the limits unenforced)");
            break;
        }
}

// Coordinate k of a joint is an angle about an axis or a displacement along one (limits and couplings
// take those), not a component of a rotation vector (spherical, point-on-line: "rx", "ry", "rz").
bool scalar_coordinate(const JointModel& j, int k) {
    const char* n = j.coordinate_name(k);
    return !(n[0] == 'r' && (n[1] == 'x' || n[1] == 'y' || n[1] == 'z') && n[2] == 0);
}

// Couplings (CouplingSpec, docs/couplings.md) checked into Model::couplings; one that the initial
// configuration violates is refused (the step holds a coupling, it does not restore it).
void compile_couplings(const Spec& spec, const std::map<std::string, int>& joint_ids, bool joints_ok, Model& m,
                       Checker& c) {
    for (const CouplingSpec& cs : spec.couplings) {
        CouplingInfo ci;
        ci.name = cs.name.empty() ? cs.joint + "/coupling" : cs.name;
        ci.ratio = cs.ratio;
        ci.offset = cs.offset;
        ci.dof = cs.dof;
        ci.leader_dof = cs.leader_dof;
        ci.range = cs.range;
        ci.lower = cs.lower;
        ci.upper = cs.upper;
        ci.origin = cs.origin;
        const std::string who = "coupling '" + ci.name + "'";
        bool ok = true;
        auto fail = [&](const std::string& msg) {
            c.error(cs.origin, who + ": " + msg);
            ok = false;
        };
        for (const CouplingInfo& other : m.couplings)
            if (other.name == ci.name) fail("duplicate name (first defined at " + other.origin.str() + ")");
        auto resolve = [&](const std::string& name, int dof, const char* field, int& out) {
            const auto it = joint_ids.find(name);
            if (it == joint_ids.end()) {
                fail(std::string("field '") + field + "': joint '" + name + "' not found");
                return;
            }
            out = it->second;
            const JointInfo& j = m.joints[out];
            if (!j.impl) return;  // the joint's own error is reported
            if (dof < 0 || dof >= j.dofs)
                fail(std::string("joint '") + name + "' has " + std::to_string(j.dofs) + " coordinate" +
                     (j.dofs == 1 ? "" : "s") + ", got coordinate index " + std::to_string(dof) + " (0-based)");
            else if (!scalar_coordinate(*j.impl, dof))
                fail(std::string("field '") + field + "': coordinate '" + j.impl->coordinate_name(dof) + "' of joint '" + name +
                     "' (" + j.type + ") is a rotation-vector component, not an angle about a fixed axis, and cannot be coupled");
        };
        resolve(cs.joint, cs.dof, "joint", ci.joint);
        resolve(cs.leader, cs.leader_dof, "leader", ci.leader);
        ci.terms.push_back({ci.joint, cs.dof, 1.0});
        ci.terms.push_back({ci.leader, cs.leader_dof, -cs.ratio});
        if (!std::isfinite(cs.ratio) || cs.ratio == 0) fail("ratio must be finite and nonzero, got " + num(cs.ratio));
        if (cs.more.size() > static_cast<std::size_t>(kMaxCouplingTerms - 2))
            fail("relates " + std::to_string(cs.more.size() + 2) + " coordinates; a coupling takes at most " +
                 std::to_string(kMaxCouplingTerms) + " (the follower, the leader and " + std::to_string(kMaxCouplingTerms - 2) +
                 " further leaders)");
        for (std::size_t k = 0; k < cs.more.size() && k < static_cast<std::size_t>(kMaxCouplingTerms - 2); ++k) {
            const CouplingSpec::Leader& l = cs.more[k];
            const std::string field = "more[" + std::to_string(k + 1) + "]";  // 1-based, as Lua lists it
            CouplingInfo::Term term{-1, l.dof, -l.ratio};
            resolve(l.joint, l.dof, field.c_str(), term.joint);
            if (!std::isfinite(l.ratio) || l.ratio == 0)
                fail("field '" + field + "': ratio must be finite and nonzero, got " + num(l.ratio));
            ci.terms.push_back(term);
        }
        for (std::size_t t = 1; ok && t < ci.terms.size(); ++t)
            for (std::size_t u = 0; u < t; ++u)
                if (ci.terms[t].joint == ci.terms[u].joint && ci.terms[t].dof == ci.terms[u].dof) {
                    const std::string jn = m.joints[ci.terms[t].joint].name;
                    fail(u == 0 && t == 1 ? "joint and leader are the same coordinate ('" + jn + "')"
                                          : "coordinate " + std::to_string(ci.terms[t].dof) + " of joint '" + jn + "' appears twice");
                    break;
                }
        if (!std::isfinite(cs.offset)) fail("offset must be finite, got " + num(cs.offset));
        if (cs.range && (std::isnan(cs.lower) || std::isnan(cs.upper) || cs.lower > cs.upper ||
                         (!std::isfinite(cs.lower) && !std::isfinite(cs.upper)) || cs.lower == INFINITY || cs.upper == -INFINITY))
            fail("a range needs lower <= upper with at least one side finite, got [" + num(cs.lower) + ", " + num(cs.upper) + "]");
        m.couplings.push_back(ci);
        bool impls = true;
        for (const CouplingInfo::Term& term : ci.terms) impls = impls && term.joint >= 0 && m.joints[term.joint].impl;
        if (!ok || !joints_ok || !impls) continue;
        std::vector<Pose> pose(m.nbodies());
        for (int b = 0; b < m.nbodies(); ++b) pose[b] = m.bodies[b].pose0;
        double phi = coupling_residual(m, ci, pose.data(), nullptr, nullptr);
        // A follower angle beyond ±π reads from the poses as its value less whole turns: those turns
        // go into the joint's offset, so that its coordinate reports (and steps from) the full angle.
        if (const double turns = ci.range ? 0.0 : coupling_turns(m, ci, phi); turns != 0 && std::fabs(phi - turns) <= 1e-9) {
            m.joints[ci.joint].offset[ci.dof] -= turns;
            phi -= turns;
        }
        if (spec.options.integrator == "none") continue;
        auto further = [&](const char* sign) {  // the further leaders' terms, for the messages
            std::string out;
            for (const CouplingSpec::Leader& l : cs.more) out += sign + num(l.ratio) + " × " + l.joint;
            return out;
        };
        if (ci.range) {
            if (!(phi >= ci.lower - 1e-9 && phi <= ci.upper + 1e-9))
                c.error(cs.origin, who + ": starts outside its range: " + cs.joint + " − " + num(cs.ratio) + " × " + cs.leader +
                                       further(" − ") + (cs.offset != 0 ? " − " + num(cs.offset) : std::string()) + " = " + num(phi) +
                                       " not in [" + num(cs.lower) + ", " + num(cs.upper) +
                                       "]; start the joints inside it (their initial positions)");
        } else if (!(std::fabs(phi) <= 1e-9))
            c.error(cs.origin, who + ": the initial configuration violates it by " + num(phi) + " (" + cs.joint +
                                   " must equal " + num(cs.ratio) + " × " + cs.leader + further(" + ") + " + " + num(cs.offset) +
                                   "); start the joints on it (their initial positions) or assemble the world first");
    }
}

// Every coordinate (raw + offset) of a joint at the bodies' initial poses.
void initial_coordinates(const Model& m, const JointInfo& j, double* q) {
    joint_coordinates(j, j.a >= 0 ? m.bodies[j.a].pose0 : Pose{}, m.bodies[j.b].pose0, nullptr, q);
}

// The coordinate (raw + offset) of a 1-DOF joint at the bodies' initial poses.
double initial_coordinate(const Model& m, const JointInfo& j) {
    double q[kMaxJointDofs];
    initial_coordinates(m, j, q);
    return q[0];
}

// The servo of a joint (JointSpec::servo, docs/servos.md) checked into its JointInfo; a default
// target is left NaN for the caller to resolve at the initial configuration.
template <class Fail>
void compile_servo(const JointSpec& js, JointInfo& ji, Fail&& fail) {
    const ServoSpec& s = js.servo;
    if (s.kind == ServoSpec::Kind::none) return;
    const char* kind = s.kind == ServoSpec::Kind::position ? "position servo" : "velocity servo";
    if (ji.dofs != 1) {
        fail(std::string(kind) + ": servos drive joints of one degree of freedom (revolute, prismatic, helical); type '" +
             js.type + "' has " + std::to_string(ji.dofs));
        return;
    }
    auto gain = [&](double v, const char* name, bool positive) {
        if (std::isfinite(v) && (positive ? v > 0 : v >= 0)) return true;
        fail(std::string(kind) + ": " + name + " must be " + (positive ? "positive" : "non-negative") +
             " and finite, got " + num(v));
        return false;
    };
    bool ok = true;
    if (s.kind == ServoSpec::Kind::position) {
        ok = gain(s.kp, "kp", true) && ok;
        ok = gain(s.kv, "kv", false) && ok;
    } else {
        if (s.kp != 0) {
            fail("velocity servo: has no kp (a velocity servo is kv (target_velocity − rate)); got kp = " + num(s.kp) +
                 "; use a position servo for a stiffness");
            ok = false;
        }
        ok = gain(s.kv, "kv", true) && ok;
    }
    if (s.target && !std::isfinite(*s.target)) {
        fail(std::string(kind) + ": target must be finite, got " + num(*s.target));
        ok = false;
    }
    if (!std::isfinite(s.target_velocity)) {
        fail(std::string(kind) + ": target_velocity must be finite, got " + num(s.target_velocity));
        ok = false;
    }
    if (!(s.effort_limit > 0)) {
        fail(std::string(kind) + ": effort_limit must be positive (inf: none), got " + num(s.effort_limit));
        ok = false;
    }
    if (!ok) return;
    ji.servo = s.kind;
    ji.servo_kp = s.kp;
    ji.servo_kv = s.kv;
    ji.servo_target = s.kind == ServoSpec::Kind::position ? (s.target ? *s.target : NAN) : 0.0;
    ji.servo_target_velocity = s.target_velocity;
    ji.effort_limit = s.effort_limit;
    ji.has_force_element = true;
}

}  // namespace

int Model::body_index(const std::string& name) const {
    for (int i = 0; i < nbodies(); ++i)
        if (bodies[i].name == name) return i;
    return -1;
}

int Model::joint_index(const std::string& name) const {
    for (int i = 0; i < njoints(); ++i)
        if (joints[i].name == name) return i;
    return -1;
}

std::shared_ptr<const Model> compile(const Spec& spec) {
    Registry& reg = Registry::global();
    Checker c;
    auto model = std::make_shared<Model>();
    Model& m = *model;
    const Origin none = spec.origin;  // options and world-level errors: where the world was declared

    for (const std::string& dir : spec.plugin_dirs)
        for (const PluginError& e : reg.load_directory(dir)) c.error(none, e.what());

    // World, options.
    m.origin = spec.origin;
    m.gravity = spec.gravity;
    m.options = spec.options;
    if (!isfinite(spec.gravity)) c.error(none, "world: gravity must be finite, got " + vec(spec.gravity));
    const Options& o = spec.options;
    if (!(std::isfinite(o.dt) && o.dt > 0)) c.error(none, "options: dt must be positive and finite, got " + num(o.dt));
    if (!(std::isfinite(o.tolerance) && o.tolerance > 0))
        c.error(none, "options: tolerance must be positive, got " + num(o.tolerance));
    if (o.max_iterations < 1)
        c.error(none, "options: max_iterations must be at least 1, got " + std::to_string(o.max_iterations));
    if (o.max_halvings < 0)
        c.error(none, "options: max_halvings must be 0 or more, got " + std::to_string(o.max_halvings));
    if (o.max_substeps < 1)
        c.error(none, "options: max_substeps must be at least 1, got " + std::to_string(o.max_substeps));

    // Bodies.
    std::map<std::string, int> body_ids;
    m.bodies.resize(spec.bodies.size());
    for (std::size_t i = 0; i < spec.bodies.size(); ++i) {
        const BodySpec& b = spec.bodies[i];
        if (b.name.empty()) c.error(b.origin, "body #" + std::to_string(i + 1) + ": name must not be empty");
        else if (b.name == "world") c.error(b.origin, "body 'world': the name 'world' is reserved for the fixed world");
        else if (body_ids.count(b.name))
            c.error(b.origin, "body '" + b.name + "': duplicate name (first defined at " +
                                  spec.bodies[body_ids[b.name]].origin.str() + ")");
        else body_ids[b.name] = static_cast<int>(i);
        check_body(b, c, m.bodies[i]);
    }

    // Joints.
    std::map<std::string, int> joint_ids;
    bool joints_ok = true;
    m.joints.resize(spec.joints.size());
    for (std::size_t i = 0; i < spec.joints.size(); ++i) {
        const JointSpec& js = spec.joints[i];
        JointInfo& ji = m.joints[i];
        ji.name = js.name;
        ji.type = js.type;
        ji.origin = js.origin;
        const std::string who = "joint '" + js.name + "'";
        bool ok = true;
        auto fail = [&](const std::string& msg) {
            c.error(js.origin, who + ": " + msg);
            ok = false;
        };
        if (js.name.empty()) {
            c.error(js.origin, "joint #" + std::to_string(i + 1) + ": name must not be empty");
            ok = false;
        } else if (joint_ids.count(js.name)) {
            fail("duplicate name (first defined at " + spec.joints[joint_ids[js.name]].origin.str() + ")");
        } else {
            joint_ids[js.name] = static_cast<int>(i);
        }
        // Endpoints.
        if (js.parent.empty() || js.parent == "world") ji.a = -1;
        else if (body_ids.count(js.parent)) ji.a = body_ids[js.parent];
        else fail("parent body '" + js.parent + "' not found");
        if (js.child.empty()) fail("child body is required");
        else if (js.child == "world") fail("child must be a body, not the world (make the world the parent)");
        else if (body_ids.count(js.child)) ji.b = body_ids[js.child];
        else fail("child body '" + js.child + "' not found");
        if (ok && ji.a == ji.b) fail("joint from body '" + js.child + "' to itself");
        // Type.
        const JointType* type = reg.joint(js.type);
        if (!type) {
            std::string refused;
            for (const PluginError& e : reg.errors()) refused += std::string("; ") + e.what();
            fail("unknown joint type '" + js.type + "' (known types: " + list_names(reg.names(PluginKind::joint)) + ")" +
                 (refused.empty() ? std::string() : "; plugins that could not be loaded" + refused));
        }
        if (type) {
            const std::vector<std::string> accepted = type->parameters();
            for (const auto& kv : js.params)
                if (std::find(accepted.begin(), accepted.end(), kv.first) == accepted.end())
                    fail("unknown parameter '" + kv.first + "' for type '" + js.type + "' (accepted: " +
                         (accepted.empty() ? std::string("none") : list_names(accepted)) + ")");
        }
        if (!ok || !type) {
            joints_ok = false;
            continue;
        }
        // Compile through the plugin.
        const Pose a0 = ji.a >= 0 ? m.bodies[ji.a].pose0 : Pose{};
        const Pose b0 = m.bodies[ji.b].pose0;
        JointSetup setup(js, ji.a < 0, a0, b0);
        std::unique_ptr<JointModel> impl;
        if (!setup.failed()) {
            try {
                impl = type->compile(setup);
            } catch (const std::exception& e) {
                fail("type '" + js.type + "' failed to build the joint: " + e.what());
            } catch (...) {
                fail("type '" + js.type + "' failed to build the joint (an exception of unknown type)");
            }
        }
        for (Diagnostic& d : setup.diagnostics()) c.diags.push_back(d);
        if (setup.failed() || !impl) {
            if (!setup.failed()) fail("type '" + js.type + "' could not build the joint");
            joints_ok = false;
            continue;
        }
        ji.rows = impl->rows();
        ji.dofs = impl->dofs();
        if (ji.rows < 0 || ji.rows > kMaxJointRows || ji.dofs < 0 || ji.dofs > kMaxJointDofs) {
            fail("type '" + js.type + "' reports " + std::to_string(ji.rows) + " rows and " + std::to_string(ji.dofs) +
                 " DOFs (allowed: 0–" + std::to_string(kMaxJointRows) + " rows, 0–" + std::to_string(kMaxJointDofs) +
                 " DOFs)");
            joints_ok = false;
            continue;
        }
        ji.impl = std::shared_ptr<const JointModel>(std::move(impl));
        // For the viewer: anchor and axis in the child frame.
        ji.anchor_b = setup.pb();
        if (setup.has_axis()) ji.axis_b = rotate_inv(b0.q, rotate(a0.q, setup.axis_a()));
        // Joint-space force elements.
        auto dof_list = [&](const std::vector<double>& in, const char* field, double fill, bool nonneg,
                            std::vector<double>& out) {
            if (!per_dof(in, ji.dofs, fill, out)) {
                out.assign(ji.dofs, fill);
                fail(std::string("field '") + field + "' needs 1 or " + std::to_string(ji.dofs) + " values (one per DOF), got " +
                     std::to_string(in.size()));
                return;
            }
            for (double v : out)
                if (!std::isfinite(v) || (nonneg && v < 0)) {
                    fail(std::string("field '") + field + "' must be " + (nonneg ? "non-negative and " : "") +
                         "finite, got " + num(v));
                    return;
                }
        };
        if (ji.dofs == 0 && (!js.stiffness.empty() || !js.damping.empty() || !js.rest.empty() || !js.offset.empty() ||
                             !js.armature.empty()))
            fail("type '" + js.type + "' has no degrees of freedom: stiffness, damping, rest, offset and armature do not apply");
        dof_list(js.stiffness, "stiffness", 0, true, ji.stiffness);
        dof_list(js.damping, "damping", 0, true, ji.damping);
        dof_list(js.offset, "offset", 0, false, ji.offset);
        // The rest position defaults to the initial coordinates (the offsets).
        if (js.rest.empty()) ji.rest = ji.offset;
        else dof_list(js.rest, "rest", 0, false, ji.rest);
        dof_list(js.armature, "armature", 0, true, ji.armature);
        if (!js.armature.empty() && js.type == "spherical")
            fail("field 'armature' does not apply to a spherical joint (its coordinates are a rotation vector, not angles "
                 "about fixed axes)");
        for (int k = 0; k < ji.dofs; ++k)
            if (ji.stiffness[k] != 0 || ji.damping[k] != 0 || ji.armature[k] != 0) ji.has_force_element = true;
        // Limits (kept for output and later enforcement).
        auto limit_list = [&](const std::vector<double>& in, const char* field, double fill, std::vector<double>& out) {
            if (!per_dof(in, ji.dofs, fill, out)) {
                out.assign(ji.dofs, fill);
                fail(std::string("field '") + field + "' needs 1 or " + std::to_string(ji.dofs) + " values, got " +
                     std::to_string(in.size()));
            }
        };
        limit_list(js.lower, "lower", -HUGE_VAL, ji.lower);
        limit_list(js.upper, "upper", HUGE_VAL, ji.upper);
        for (int k = 0; k < ji.dofs; ++k)
            if (std::isnan(ji.lower[k]) || std::isnan(ji.upper[k]) || ji.lower[k] > ji.upper[k])
                fail("limits must satisfy lower <= upper, got [" + num(ji.lower[k]) + ", " + num(ji.upper[k]) + "]");
        bool bounded = false;
        for (int k = 0; k < ji.dofs; ++k) bounded |= std::isfinite(ji.lower[k]) || std::isfinite(ji.upper[k]);
        if (js.limited && ji.impl) {
            for (int k = 0; k < ji.dofs; ++k)
                if (!scalar_coordinate(*ji.impl, k) && (std::isfinite(ji.lower[k]) || std::isfinite(ji.upper[k]))) {
                    fail("limits are enforced on joints of one degree of freedom and on coordinates that are angles or "
                         "displacements (compound, universal, cylindrical, planar joints); coordinate '" +
                         std::string(ji.impl->coordinate_name(k)) + "' of type '" + js.type +
                         "' is a rotation-vector component");
                    bounded = false;
                    break;
                }
            ji.limited = bounded;
        }
        compile_servo(js, ji, [&](const std::string& msg) {
            c.error(js.servo.origin.empty() ? js.origin : js.servo.origin, who + ": " + msg);
            ok = false;
        });
        if (!ok) joints_ok = false;
    }

    // Constant forces.
    for (const ForceSpec& f : spec.forces) {
        ForceInfo fi;
        auto it = body_ids.find(f.body);
        if (it == body_ids.end()) {
            c.error(f.origin, "force: body '" + f.body + "' not found");
            continue;
        }
        if (!isfinite(f.force) || !isfinite(f.torque) || (f.point && !isfinite(*f.point))) {
            c.error(f.origin, "force on body '" + f.body + "': force, torque and point must be finite");
            continue;
        }
        fi.body = it->second;
        fi.force = f.force;
        fi.torque = f.torque;
        fi.body_frame = f.body_frame;
        fi.has_point = f.point.has_value();
        if (f.point) fi.point = *f.point;
        m.forces.push_back(fi);
    }

    compile_contacts(spec, body_ids, m, c);
    // Before the servos' targets and the limits' start check: a follower's whole turns go into its offset.
    compile_couplings(spec, joint_ids, joints_ok, m, c);  // integrator "none" (assembly, queries): may start off them
    for (JointInfo& j : m.joints) {
        if (j.servo == ServoSpec::Kind::none || !j.impl) continue;
        ++m.servos;
        if (!std::isnan(j.servo_target)) continue;
        j.servo_target = initial_coordinate(m, j);  // a position servo's default: it holds the initial pose
    }
    for (const JointInfo& j : m.joints) {
        if (!j.limited || !j.impl) continue;
        ++m.limited_joints;
        // A joint that starts outside its limits is refused (the step keeps limits, it does not restore them).
        double q[kMaxJointDofs];
        initial_coordinates(m, j, q);
        for (int k = 0; k < j.dofs; ++k) {
            if (q[k] >= j.lower[k] - 1e-9 && q[k] <= j.upper[k] + 1e-9) continue;
            c.error(j.origin, "joint '" + j.name + "': starts outside its limits: coordinate " +
                                  (j.dofs > 1 ? std::string(j.impl->coordinate_name(k)) + " " : std::string()) + num(q[k]) +
                                  " not in [" + num(j.lower[k]) + ", " + num(j.upper[k]) +
                                  "]; start it inside (an initial position) or leave the limits unenforced");
            break;
        }
    }


    // Block graph.
    if (joints_ok && !c.has_errors()) {
        std::vector<int> ja, jb, rows;
        int roff = 0, doff = 0;
        for (JointInfo& j : m.joints) {
            ja.push_back(j.a);
            jb.push_back(j.b);
            rows.push_back(j.rows);
            j.row_offset = roff;
            j.dof_offset = doff;
            roff += j.rows;
            doff += j.dofs;
        }
        m.total_rows = roff;
        m.total_dofs = doff;
        m.graph = build_block_graph(m.nbodies(), ja, jb, rows);
        for (int j : m.graph.loop_joints) m.joints[j].loop = true;
    }

    // Integrator and solver.
    if (o.integrator != "none") {
        m.integrator = reg.integrator(o.integrator);
        if (!m.integrator)
            c.error(none, "options: unknown integrator '" + o.integrator + "' (known integrators: " +
                              list_names(reg.names(PluginKind::integrator)) + ")");
    }
    m.solver_name = o.solver;
    if ((o.solver == "auto" || o.solver.empty()) && !c.has_errors()) {
        // The supported solver with the highest preference (names() is sorted: ties by name).
        int best = 0;
        m.solver_name.clear();
        for (const std::string& name : reg.names(PluginKind::solver)) {
            const Solver* s = reg.solver(name);
            if (!s->unsupported(m).empty()) continue;
            const int p = s->preference(m);
            if (m.solver_name.empty() || p > best) m.solver_name = name, best = p;
        }
        if (m.solver_name.empty()) {
            c.error(none, "options: solver 'auto': no loaded solver supports this model (known solvers: " +
                              list_names(reg.names(PluginKind::solver)) + ")");
            m.solver_name = "auto";
        }
    }
    if (o.integrator != "none" && m.solver_name != "auto") {
        m.solver = reg.solver(m.solver_name);
        if (!m.solver)
            c.error(none, "options: unknown solver '" + m.solver_name + "' (known solvers: " +
                              list_names(reg.names(PluginKind::solver)) + ")");
    }
    if (!c.has_errors()) {
        if (m.solver) {
            const std::string why = m.solver->unsupported(m);
            if (!why.empty()) c.error(none, "options: solver '" + m.solver_name + "': " + why);
        }
        if (m.integrator) {
            const std::vector<std::string> names = m.integrator->option_names();
            auto known = [&](const std::string& k) { return std::find(names.begin(), names.end(), k) != names.end(); };
            for (const auto& kv : o.extra)
                if (!known(kv.first))
                    c.error(none, "options: '" + kv.first + "' is not an option of integrator '" + o.integrator +
                                      "' (its options: " + (names.empty() ? std::string("none") : list_names(names)) + ")");
            for (const auto& kv : o.extra_lists)
                if (!known(kv.first))
                    c.error(none, "options: '" + kv.first + "' is not an option of integrator '" + o.integrator +
                                      "' (its options: " + (names.empty() ? std::string("none") : list_names(names)) + ")");
            if (!c.has_errors()) m.integrator->check(m, c.diags);
            if (m.has_inequalities() && !m.integrator->takes_inequalities()) refuse_inequalities(m, reg, c);
            if (!m.couplings.empty() && !m.integrator->takes_couplings()) {
                const CouplingInfo& ci = m.couplings.front();
                c.error(ci.origin, "coupling '" + ci.name + "': integrator '" + o.integrator +
                                       "' does not take couplings between joints (integrators that do: " +
                                       reg.integrators_where([](const Integrator& i) { return i.takes_couplings(); }) + ")");
            } else if (!m.integrator->takes_inequalities()) {
                for (const CouplingInfo& ci : m.couplings)
                    if (ci.range) {
                        c.error(ci.origin, "coupling '" + ci.name + "': a range is an inequality, and integrator '" +
                                               o.integrator + "' does not take inequalities (integrators that do: " +
                                               reg.integrators_where([](const Integrator& i) { return i.takes_inequalities(); }) +
                                               "; or leave the range out)");
                        break;
                    }
            }
        }
    }

    if (c.has_errors()) throw ModelError(c.diags);
    for (const Diagnostic& d : c.diags) m.warnings.push_back(d);

    // Structure fingerprint (checked when a saved Data is restored).
    std::uint64_t h = detail::kFnvOffset;
    h = fnv(h, m.nbodies());
    h = fnv(h, m.njoints());
    for (const BodyInfo& b : m.bodies) h = fnv(h, b.name);
    for (const JointInfo& j : m.joints) {
        h = fnv(fnv(fnv(h, j.name), j.type), j.rows);
        h = fnv(fnv(fnv(h, j.dofs), j.a), j.b);
        if (j.limited) h = fnv(h, "limited");
    }
    if (!m.contacts.empty()) {
        h = fnv(h, static_cast<int>(m.contacts.size()));
        for (const ContactInfo& ci : m.contacts) h = fnv(fnv(fnv(h, ci.name), ci.body), ci.other);
    }
    for (const CouplingInfo& ci : m.couplings) {
        h = fnv(fnv(fnv(h, ci.name), ci.joint), ci.leader);
        for (std::size_t t = 2; t < ci.terms.size(); ++t) h = fnv(h, ci.terms[t].joint);
    }
    m.fingerprint = h;
    return model;
}

// ---- ModelVariation -----------------------------------------------------------------------

namespace {
enum VaryKind { kDt = 1, kGravity, kMass, kInertia, kVelocity, kAngularVelocity, kDamping, kStiffness, kRest };
struct VaryKey {
    const char* suffix;
    VaryKind kind;
    bool body;
};
const VaryKey kElementKeys[] = {{"mass", kMass, true},
                                {"inertia", kInertia, true},
                                {"velocity", kVelocity, true},
                                {"angular_velocity", kAngularVelocity, true},
                                {"damping", kDamping, false},
                                {"stiffness", kStiffness, false},
                                {"rest", kRest, false}};
}  // namespace

const char* ModelVariation::keys() {
    return "dt, gravity, <body>.mass, <body>.inertia, <body>.velocity, <body>.angular_velocity, <joint>.damping, "
           "<joint>.stiffness, <joint>.rest";
}

ModelVariation::ModelVariation(std::shared_ptr<const Model> base) : base_(std::move(base)) {
    if (!base_) throw UsageError("ModelVariation: no base Model");
}

void ModelVariation::set(const std::string& key, const std::vector<double>& values) {
    const Model& m = *base_;
    Change c;
    c.key = key;
    c.values = values;
    auto count = [&](std::size_t n, const char* what) {
        if (values.size() != n)
            throw UsageError("variation '" + key + "': expects " + what + ", got " + std::to_string(values.size()) +
                             " value(s)");
    };
    if (key == "dt") {
        c.kind = kDt;
        count(1, "1 value");
    } else if (key == "gravity") {
        c.kind = kGravity;
        count(3, "3 values");
    } else {
        const std::size_t dot = key.rfind('.');
        const std::string element = dot == std::string::npos ? std::string() : key.substr(0, dot);
        const std::string suffix = dot == std::string::npos ? key : key.substr(dot + 1);
        const VaryKey* k = nullptr;
        for (const VaryKey& e : kElementKeys)
            if (suffix == e.suffix) k = &e;
        if (!k || element.empty())
            throw UsageError("variation '" + key + "': not a parameter that can vary without recompiling (keys: " +
                             keys() + ")");
        c.kind = k->kind;
        if (k->body) {
            c.index = m.body_index(element);
            if (c.index < 0) throw UsageError("variation '" + key + "': no body named '" + element + "'");
            if (k->kind == kInertia) {
                if (values.size() != 3 && values.size() != 6 && values.size() != 9)
                    count(3, "3 (diagonal), 6 (xx yy zz xy xz yz) or 9 values");
            } else if (k->kind == kMass) {
                count(1, "1 value");
            } else {
                count(3, "3 values");
            }
        } else {
            c.index = m.joint_index(element);
            if (c.index < 0) throw UsageError("variation '" + key + "': no joint named '" + element + "'");
            const int dofs = m.joints[c.index].dofs;
            if (dofs == 0)
                throw UsageError("variation '" + key + "': joint '" + element + "' (type '" + m.joints[c.index].type +
                                 "') has no degrees of freedom");
            if (values.size() != 1 && static_cast<int>(values.size()) != dofs)
                count(static_cast<std::size_t>(dofs), ("1 or " + std::to_string(dofs) + " values (one per DOF)").c_str());
        }
    }
    changes_.push_back(std::move(c));
}

std::shared_ptr<const Model> ModelVariation::build() const {
    if (changes_.empty()) return base_;
    auto model = std::make_shared<Model>(*base_);
    Model& m = *model;
    Checker c;
    std::vector<bool> body_changed(m.bodies.size(), false);
    for (const Change& ch : changes_) {
        const std::vector<double>& v = ch.values;
        const std::string who = "variation '" + ch.key + "'";
        switch (ch.kind) {
        case kDt:
            if (!(std::isfinite(v[0]) && v[0] > 0)) c.error(m.origin, who + ": dt must be positive and finite, got " + num(v[0]));
            m.options.dt = v[0];
            break;
        case kGravity:
            m.gravity = {v[0], v[1], v[2]};
            if (!isfinite(m.gravity)) c.error(m.origin, who + ": gravity must be finite, got " + vec(m.gravity));
            break;
        case kMass:
            m.bodies[ch.index].mass = v[0];
            body_changed[ch.index] = true;
            break;
        case kInertia: {
            Mat3 I;
            if (v.size() == 9) {
                for (int i = 0; i < 3; ++i)
                    for (int j = 0; j < 3; ++j) I.m[i][j] = v[3 * i + j];
            } else {
                I = Mat3::diag(v[0], v[1], v[2]);
                if (v.size() == 6) {
                    I.m[0][1] = I.m[1][0] = v[3];
                    I.m[0][2] = I.m[2][0] = v[4];
                    I.m[1][2] = I.m[2][1] = v[5];
                }
            }
            m.bodies[ch.index].inertia = I;
            body_changed[ch.index] = true;
            break;
        }
        case kVelocity:
        case kAngularVelocity: {
            const Vec3 x{v[0], v[1], v[2]};
            BodyInfo& b = m.bodies[ch.index];
            if (!isfinite(x)) c.error(b.origin, "body '" + b.name + "': " + who + " must be finite, got " + vec(x));
            if (ch.kind == kVelocity) b.twist0.v = x;
            else b.twist0.w = rotate_inv(b.pose0.q, x);
            break;
        }
        default: {
            JointInfo& j = m.joints[ch.index];
            std::vector<double>& out = ch.kind == kDamping ? j.damping : ch.kind == kStiffness ? j.stiffness : j.rest;
            out = v.size() == 1 ? std::vector<double>(j.dofs, v[0]) : v;
            const bool nonneg = ch.kind != kRest;
            for (double x : out)
                if (!std::isfinite(x) || (nonneg && x < 0)) {
                    c.error(j.origin, "joint '" + j.name + "': " + who + " must be " +
                                          (nonneg ? "non-negative and " : "") + "finite, got " + num(x));
                    break;
                }
            j.has_force_element = j.servo != ServoSpec::Kind::none;  // (a servo keeps its joint's force rows)
            for (int k = 0; k < j.dofs; ++k)
                if (j.stiffness[k] != 0 || j.damping[k] != 0 || j.armature[k] != 0) j.has_force_element = true;
        }
        }
    }
    for (std::size_t i = 0; i < m.bodies.size(); ++i)
        if (body_changed[i]) {
            const BodyInfo& b = m.bodies[i];
            const std::string who = "body '" + b.name + "'";
            check_mass(b.mass, b.origin, who, c);
            check_inertia(b.inertia, b.origin, who, c);
        }
    if (!c.has_errors() && m.integrator) m.integrator->check(m, c.diags);
    if (c.has_errors()) throw ModelError(c.diags);
    // Warnings: the base's, plus the new ones (a message already there is not repeated).
    for (const Diagnostic& d : c.diags) {
        const bool seen = std::any_of(m.warnings.begin(), m.warnings.end(), [&](const Diagnostic& w) {
            return w.message == d.message && w.origin.str() == d.origin.str();
        });
        if (!seen) m.warnings.push_back(d);
    }
    return model;
}

// ---- ModelCache -----------------------------------------------------------------------------

namespace {

// Everything of a Spec except the numbers a ModelVariation changes, as bytes.
struct KeyWriter {
    std::string out;
    void raw(const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
    void d(double v) { raw(&v, sizeof v); }
    void i(long long v) { raw(&v, sizeof v); }
    void s(const std::string& v) {
        i(static_cast<long long>(v.size()));
        out += v;
    }
    void v3(const Vec3& v) { d(v.x), d(v.y), d(v.z); }
    void q(const Quat& v) { d(v.w), d(v.x), d(v.y), d(v.z); }
    void ov(const std::optional<Vec3>& v) {
        i(v.has_value());
        if (v) v3(*v);
    }
    void oq(const std::optional<Quat>& v) {
        i(v.has_value());
        if (v) q(*v);
    }
    void list(const std::vector<double>& v) {
        i(static_cast<long long>(v.size()));
        for (double x : v) d(x);
    }
    void origin(const Origin& o) { s(o.file), i(o.line), s(o.element); }
};

std::string structure_key(const Spec& spec) {
    KeyWriter k;
    k.origin(spec.origin);
    k.i(static_cast<long long>(spec.plugin_dirs.size()));
    for (const std::string& d : spec.plugin_dirs) k.s(d);
    const Options& o = spec.options;
    k.s(o.integrator), k.s(o.solver), k.d(o.tolerance), k.i(o.max_iterations), k.i(o.max_halvings), k.i(o.max_substeps);
    k.i(static_cast<long long>(o.extra.size()));
    for (const auto& kv : o.extra) k.s(kv.first), k.d(kv.second);
    k.i(static_cast<long long>(o.extra_lists.size()));
    for (const auto& kv : o.extra_lists) {
        k.s(kv.first);
        k.i(static_cast<long long>(kv.second.size()));
        for (const std::string& x : kv.second) k.s(x);
    }
    k.i(static_cast<long long>(spec.bodies.size()));
    for (const BodySpec& b : spec.bodies) {
        k.s(b.name), k.v3(b.position), k.q(b.orientation), k.i(b.angular_velocity_in_body), k.origin(b.origin);
        if (b.angular_velocity_in_body) k.v3(b.angular_velocity);  // varied in the world frame only
    }
    k.i(static_cast<long long>(spec.joints.size()));
    for (const JointSpec& j : spec.joints) {
        k.s(j.name), k.s(j.type), k.s(j.parent), k.s(j.child);
        k.ov(j.anchor), k.ov(j.axis), k.ov(j.axis2), k.ov(j.parent_anchor), k.ov(j.child_anchor), k.ov(j.parent_axis),
            k.ov(j.child_axis), k.oq(j.parent_frame), k.oq(j.child_frame);
        k.list(j.offset), k.list(j.lower), k.list(j.upper);
        k.i(static_cast<long long>(j.params.size()));
        for (const auto& kv : j.params) k.s(kv.first), k.list(kv.second);
        k.origin(j.origin);
    }
    k.i(static_cast<long long>(spec.forces.size()));
    for (const ForceSpec& f : spec.forces) {
        k.s(f.body), k.v3(f.force), k.v3(f.torque), k.i(f.body_frame), k.ov(f.point), k.origin(f.origin);
    }
    return k.out;
}

bool same(const Vec3& a, const Vec3& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }

// The variation that turns the Model of `base` into the Model of `spec` (same structure key).
std::shared_ptr<const Model> vary_to(const std::shared_ptr<const Model>& model, const Spec& base, const Spec& spec) {
    ModelVariation v(model);
    if (!same(spec.gravity, base.gravity)) v.set("gravity", {spec.gravity.x, spec.gravity.y, spec.gravity.z});
    if (spec.options.dt != base.options.dt) v.set("dt", {spec.options.dt});
    for (std::size_t i = 0; i < spec.bodies.size(); ++i) {
        const BodySpec& a = base.bodies[i];
        const BodySpec& b = spec.bodies[i];
        if (b.mass != a.mass) v.set(b.name + ".mass", {b.mass});
        bool inertia_differs = false;
        std::vector<double> I(9);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) {
                I[3 * r + c] = b.inertia.m[r][c];
                inertia_differs |= b.inertia.m[r][c] != a.inertia.m[r][c];
            }
        if (inertia_differs) v.set(b.name + ".inertia", I);
        if (!same(b.velocity, a.velocity)) v.set(b.name + ".velocity", {b.velocity.x, b.velocity.y, b.velocity.z});
        if (!same(b.angular_velocity, a.angular_velocity))
            v.set(b.name + ".angular_velocity", {b.angular_velocity.x, b.angular_velocity.y, b.angular_velocity.z});
    }
    for (std::size_t j = 0; j < spec.joints.size(); ++j) {
        const JointSpec& a = base.joints[j];
        const JointSpec& b = spec.joints[j];
        auto list = [&](const std::vector<double>& x, const std::vector<double>& fill) {
            return x.empty() ? fill : x;
        };
        if (b.damping != a.damping) v.set(b.name + ".damping", list(b.damping, {0.0}));
        if (b.stiffness != a.stiffness) v.set(b.name + ".stiffness", list(b.stiffness, {0.0}));
        if (b.rest != a.rest) v.set(b.name + ".rest", list(b.rest, model->joints[j].offset));
    }
    return v.build();
}

}  // namespace

struct ModelCache::Impl {
    struct Entry {
        Spec base;
        std::shared_ptr<const Model> model;
    };
    // One future per structure: the first Spec of a structure compiles it, Specs of the same
    // structure arriving meanwhile wait for that compile instead of compiling again. A null
    // entry: that compile failed (the waiters compile their own Spec).
    using Future = std::shared_future<std::shared_ptr<const Entry>>;
    mutable std::mutex mu;
    std::map<std::string, Future> entries;
    int compiles = 0, variations = 0;
};

ModelCache::ModelCache() : impl_(std::make_unique<Impl>()) {}
ModelCache::~ModelCache() = default;

std::shared_ptr<const Model> ModelCache::compile(const Spec& spec) {
    const std::string key = structure_key(spec);
    std::promise<std::shared_ptr<const Impl::Entry>> promise;
    Impl::Future future;
    bool first = false;
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        auto it = impl_->entries.find(key);
        if (it == impl_->entries.end()) {
            future = promise.get_future().share();
            impl_->entries.emplace(key, future);
            first = true;
        } else {
            future = it->second;
        }
    }
    if (first) {
        std::shared_ptr<const Model> m;
        try {
            m = noether::compile(spec);
        } catch (...) {
            {
                std::lock_guard<std::mutex> lock(impl_->mu);
                impl_->entries.erase(key);
            }
            promise.set_value(nullptr);
            throw;
        }
        promise.set_value(std::make_shared<const Impl::Entry>(Impl::Entry{spec, m}));
        std::lock_guard<std::mutex> lock(impl_->mu);
        ++impl_->compiles;
        return m;
    }
    if (const std::shared_ptr<const Impl::Entry> hit = future.get()) {
        try {
            auto m = vary_to(hit->model, hit->base, spec);
            std::lock_guard<std::mutex> lock(impl_->mu);
            ++impl_->variations;
            return m;
        } catch (const Error&) {
            // A number the variation refuses: compile() reports it in its own words.
        }
    }
    auto m = noether::compile(spec);
    std::lock_guard<std::mutex> lock(impl_->mu);
    ++impl_->compiles;
    return m;
}

int ModelCache::compiles() const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    return impl_->compiles;
}

int ModelCache::variations() const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    return impl_->variations;
}

int ModelCache::size() const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    return static_cast<int>(impl_->entries.size());
}

}  // namespace noether
