// URDF import (tinyxml2).
//
// Frames: every URDF link has a frame; a joint's <origin> places the child link frame in the
// parent link frame at q = 0. A noether body is a group of links (a moving link and every link
// welded to it by fixed joints when lump_fixed is on); its origin is the group's centre of mass
// and its axes are those of the group's top link. Joints are emitted in body-frame style with
// explicit joint frames, so their meaning does not depend on the initial poses.
//
// Massless links: welded ones are lumped (they keep their names as frames). A link on a moving
// joint with zero mass but positive rotational inertia (a gear rotor) makes the translational
// block of a maximal-coordinate body singular; it is regularised with a small mass,
// 1e-3 × the mean mass of the file's massive links, and a warning. A moving link with neither
// mass nor inertia is an error that names it.
#include <array>
#include <tinyxml2.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <sstream>

#include "noether/urdf.hpp"

namespace noether {
namespace urdf {

namespace {

using tinyxml2::XMLElement;

struct Link {
    std::string name;
    int line = 0;
    bool inertial = false;
    double mass = 0;
    Vec3 com;      // in the link frame
    Quat com_q;    // inertial frame in the link frame
    Mat3 inertia;  // in the inertial frame
    std::vector<Shape> shapes;  // for the viewer: primitives of <visual> (else of <collision>), link frame
    const tinyxml2::XMLElement* xml = nullptr;  // the <link> element
    std::vector<Shape> collision;  // primitives of <collision>, link frame: read for contact links only
    std::vector<std::string> no_contact;  // <collision> geometry that cannot be a contact shape, with its line
    bool meshes_only = false;   // it has geometry, all meshes (drawn as the inertia box)
};

struct Joint {
    std::string name, type, parent, child;
    int line = 0;
    Pose origin;   // child link frame in the parent link frame
    Vec3 axis{1, 0, 0};
    bool has_limit = false;
    double lower = 0, upper = 0;
    double damping = 0, friction = 0;
    double effort = 0;  // <limit effort>, 0 if not given
    std::string mimic;           // <mimic joint>: this joint = multiplier · mimic + offset
    double mimic_multiplier = 1, mimic_offset = 0;
    int mimic_line = 0;
};

// A gear coupling (generalized_rbda's <coupling>): the joint of the successor link = ratio · the
// joint of the predecessor link.
struct Coupling {
    std::string name, predecessor, successor;
    double ratio = 1;
    int line = 0;
};

struct Loop {
    std::string name, type, tag, link1, link2;
    int line = 0;
    Pose frame1, frame2;  // joint frame in link1 / link2
    Vec3 axis{1, 0, 0};
};

class Parser {
public:
    explicit Parser(std::string file) : file_(std::move(file)) {}

    [[noreturn]] void fail(int line, const std::string& msg) const {
        throw ModelError({{Severity::error, Origin{file_, line, ""}, msg}});
    }

    // Whitespace-separated numbers: leading/trailing/multiple spaces and tabs, "0.", ".5", 1e-3.
    std::vector<double> numbers(const XMLElement* e, const char* attr, std::size_t expect, const std::string& who) const {
        const char* text = e->Attribute(attr);
        if (!text) fail(e->GetLineNum(), who + ": <" + e->Name() + "> is missing attribute '" + attr + "'");
        std::vector<double> out;
        const char* p = text;
        while (*p) {
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') ++p;
            if (!*p) break;
            char* end = nullptr;
            const double v = std::strtod(p, &end);
            if (end == p || (*end && *end != ' ' && *end != '\t' && *end != '\n' && *end != '\r')) {
                std::string bad(p);
                bad = bad.substr(0, bad.find_first_of(" \t\r\n"));
                fail(e->GetLineNum(), who + ": <" + e->Name() + " " + attr + "=\"" + text + "\">: '" + bad +
                                          "' is not a number");
            }
            if (!std::isfinite(v))
                fail(e->GetLineNum(), who + ": <" + e->Name() + " " + attr + "=\"" + text + "\">: values must be finite");
            out.push_back(v);
            p = end;
        }
        if (expect && out.size() != expect)
            fail(e->GetLineNum(), who + ": <" + e->Name() + " " + attr + "=\"" + text + "\">: expected " +
                                      std::to_string(expect) + " numbers, got " + std::to_string(out.size()));
        return out;
    }
    double number(const XMLElement* e, const char* attr, const std::string& who) const { return numbers(e, attr, 1, who)[0]; }
    double number_or(const XMLElement* e, const char* attr, double fallback, const std::string& who) const {
        return e->Attribute(attr) ? number(e, attr, who) : fallback;
    }
    std::string name_of(const XMLElement* e, const std::string& what) const {
        const char* n = e->Attribute("name");
        if (!n || !*n) fail(e->GetLineNum(), std::string("<") + e->Name() + ">: missing attribute 'name' (" + what + ")");
        return n;
    }
    // xyz/rpy given as attributes of the element itself (<link1 link xyz rpy/>).
    Pose inline_pose(const XMLElement* e, const std::string& who) const {
        Pose p;
        if (e->Attribute("xyz")) {
            const auto v = numbers(e, "xyz", 3, who);
            p.x = {v[0], v[1], v[2]};
        }
        if (e->Attribute("rpy")) {
            const auto v = numbers(e, "rpy", 3, who);
            for (double a : v)
                if (!(std::fabs(a) <= 1e6))  // beyond this an angle has lost its digits (ulp > 1e-10 rad)
                    fail(e->GetLineNum(), who + ": <" + e->Name() + " rpy=\"" + e->Attribute("rpy") +
                                              "\">: angles must be at most 1e6 rad in magnitude");
            p.q = quat_from_rpy(v[0], v[1], v[2]);
        }
        return p;
    }
    // <origin xyz rpy> (either may be absent); absent element → identity.
    Pose origin(const XMLElement* parent, const std::string& who, const char* tag = "origin") const {
        const XMLElement* o = parent->FirstChildElement(tag);
        return o ? inline_pose(o, who) : Pose{};
    }
    const std::string& file() const { return file_; }

private:
    std::string file_;
};

Pose compose(const Pose& a, const Pose& b) { return {a.x + rotate(a.q, b.x), a.q * b.q}; }

std::string fmt(double v) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

bool is_zero(const Mat3& I) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            if (I.m[i][j] != 0) return false;
    return true;
}

}  // namespace

Report import(Spec& spec, const std::string& path, const Options& opt) {
    Parser P(path);
    Report rep;
    rep.file = path;
    tinyxml2::XMLDocument doc;
    const tinyxml2::XMLError err = doc.LoadFile(path.c_str());
    if (err == tinyxml2::XML_ERROR_FILE_NOT_FOUND || err == tinyxml2::XML_ERROR_FILE_COULD_NOT_BE_OPENED)
        P.fail(0, "cannot open the URDF file");
    if (err != tinyxml2::XML_SUCCESS)
        P.fail(doc.ErrorLineNum(), std::string("not well-formed XML: ") + (doc.ErrorStr() ? doc.ErrorStr() : "parse error"));
    const XMLElement* robot = doc.RootElement();
    if (!robot || std::strcmp(robot->Name(), "robot") != 0)
        P.fail(robot ? robot->GetLineNum() : 0, std::string("the root element must be <robot>, got <") +
                                                    (robot ? robot->Name() : "nothing") + ">");
    rep.robot = robot->Attribute("name") ? robot->Attribute("name") : "";

    // ---- read every element -------------------------------------------------------------------
    std::vector<Link> links;
    std::vector<Joint> joints;
    std::vector<Loop> loops;
    std::vector<Coupling> couplings;
    std::map<std::string, int> link_id, joint_id;
    // Named materials of the robot (colours of the visuals).
    std::map<std::string, std::array<double, 4>> materials;
    auto read_color = [&](const XMLElement* mat, std::array<double, 4>& rgba, const std::string& who) {
        const XMLElement* c = mat ? mat->FirstChildElement("color") : nullptr;
        if (!c || !c->Attribute("rgba")) return false;
        const std::vector<double> v = P.numbers(c, "rgba", 4, who);
        for (int k = 0; k < 4; ++k) rgba[k] = std::min(1.0, std::max(0.0, v[k]));  // appearance only: clamped
        return true;
    };
    for (const XMLElement* e = robot->FirstChildElement("material"); e; e = e->NextSiblingElement("material")) {
        std::array<double, 4> rgba;
        if (e->Attribute("name") && read_color(e, rgba, std::string("<material name='") + e->Attribute("name") + "'>"))
            materials[e->Attribute("name")] = rgba;
    }
    // The primitives of a link's <visual> (or <collision>) elements, in the link frame.
    auto read_shapes = [&](const XMLElement* link, const char* tag, const std::string& who, int& meshes) {
        std::vector<Shape> out;
        for (const XMLElement* v = link->FirstChildElement(tag); v; v = v->NextSiblingElement(tag)) {
            const XMLElement* g = v->FirstChildElement("geometry");
            const XMLElement* p = g ? g->FirstChildElement() : nullptr;
            if (!p) continue;
            const std::string kind = p->Name();
            const std::string what = who + ": <" + tag + "><" + kind + ">";
            Shape sh;
            if (kind == "box") {
                const std::vector<double> sz = P.numbers(p, "size", 3, what);
                sh.size = {sz[0], sz[1], sz[2]};
            } else if (kind == "sphere") {
                sh.type = Shape::Type::sphere;
                sh.size.x = P.number(p, "radius", what);
            } else if (kind == "cylinder" || kind == "capsule") {
                sh.type = kind == "cylinder" ? Shape::Type::cylinder : Shape::Type::capsule;
                sh.size = {P.number(p, "radius", what), P.number(p, "length", what), 0};
            } else {
                if (kind == "mesh") ++meshes;
                continue;
            }
            const double sz[3] = {sh.size.x, sh.size.y, sh.size.z};
            for (int k = 0; k < (sh.type == Shape::Type::box ? 3 : sh.type == Shape::Type::sphere ? 1 : 2); ++k)
                if (!(sz[k] > 0) || !std::isfinite(sz[k]))
                    P.fail(p->GetLineNum(), what + ": sizes must be positive, got " + fmt(sz[k]));
            sh.pose = P.origin(v, what);
            std::array<double, 4> rgba;
            if (const XMLElement* mat = v->FirstChildElement("material")) {
                if (read_color(mat, rgba, what) ||
                    (mat->Attribute("name") && materials.count(mat->Attribute("name")) &&
                     (rgba = materials[mat->Attribute("name")], true)))
                    for (int k = 0; k < 4; ++k) sh.rgba[k] = rgba[k];
            }
            out.push_back(sh);
        }
        return out;
    };
    std::map<std::string, int> ignored_tags, ignored_attrs;
    std::map<std::string, int> nonstandard_dynamics;
    int geometry = 0, mimics = 0, limits = 0, mesh_links = 0;
    for (const XMLElement* e = robot->FirstChildElement(); e; e = e->NextSiblingElement()) {
        const std::string tag = e->Name();
        if (tag == "link") {
            Link l;
            l.name = P.name_of(e, "a link needs a name");
            l.line = e->GetLineNum();
            l.xml = e;
            const std::string who = "link '" + l.name + "'";
            if (link_id.count(l.name)) P.fail(l.line, who + ": defined twice (first at line " + std::to_string(links[link_id[l.name]].line) + ")");
            if (e->FirstChildElement("visual") || e->FirstChildElement("collision")) {
                ++geometry;
                int meshes = 0;
                l.shapes = read_shapes(e, "visual", who, meshes);
                if (l.shapes.empty()) l.shapes = read_shapes(e, "collision", who, meshes);
                l.meshes_only = l.shapes.empty() && meshes > 0;
                if (l.meshes_only) ++mesh_links;
            }
            if (const XMLElement* in = e->FirstChildElement("inertial")) {
                l.inertial = true;
                const Pose o = P.origin(in, who);
                l.com = o.x;
                l.com_q = o.q;
                const XMLElement* mass = in->FirstChildElement("mass");
                if (!mass) P.fail(in->GetLineNum(), who + ": <inertial> has no <mass>");
                l.mass = P.number(mass, "value", who);
                if (l.mass < 0) P.fail(mass->GetLineNum(), who + ": <mass value=\"" + fmt(l.mass) + "\"> must not be negative");
                if (const XMLElement* I = in->FirstChildElement("inertia")) {
                    const double ixx = P.number(I, "ixx", who), iyy = P.number(I, "iyy", who), izz = P.number(I, "izz", who);
                    const double ixy = P.number(I, "ixy", who), ixz = P.number(I, "ixz", who), iyz = P.number(I, "iyz", who);
                    l.inertia = Mat3::diag(ixx, iyy, izz);
                    l.inertia.m[0][1] = l.inertia.m[1][0] = ixy;
                    l.inertia.m[0][2] = l.inertia.m[2][0] = ixz;
                    l.inertia.m[1][2] = l.inertia.m[2][1] = iyz;
                } else {
                    P.fail(in->GetLineNum(), who + ": <inertial> has no <inertia>");
                }
            }
            rep.file_mass += l.mass;
            link_id[l.name] = static_cast<int>(links.size());
            links.push_back(l);
        } else if (tag == "joint") {
            Joint j;
            j.name = P.name_of(e, "a joint needs a name");
            j.line = e->GetLineNum();
            const std::string who = "joint '" + j.name + "'";
            if (joint_id.count(j.name)) P.fail(j.line, who + ": defined twice (first at line " + std::to_string(joints[joint_id[j.name]].line) + ")");
            const char* type = e->Attribute("type");
            if (!type) P.fail(j.line, who + ": missing attribute 'type'");
            j.type = type;
            static const std::set<std::string> known = {"revolute", "continuous", "prismatic", "fixed", "floating", "planar"};
            if (!known.count(j.type))
                P.fail(j.line, who + ": unknown joint type '" + j.type + "' (URDF types: revolute, continuous, prismatic, fixed, floating, planar)");
            const XMLElement* par = e->FirstChildElement("parent");
            const XMLElement* chi = e->FirstChildElement("child");
            if (!par || !par->Attribute("link")) P.fail(j.line, who + ": missing <parent link=\"...\">");
            if (!chi || !chi->Attribute("link")) P.fail(j.line, who + ": missing <child link=\"...\">");
            j.parent = par->Attribute("link");
            j.child = chi->Attribute("link");
            j.origin = P.origin(e, who);
            if (const XMLElement* ax = e->FirstChildElement("axis")) {
                const auto v = P.numbers(ax, "xyz", 3, who);
                j.axis = {v[0], v[1], v[2]};
                if (!(norm(j.axis) > 1e-12) && j.type != "fixed" && j.type != "floating")
                    P.fail(ax->GetLineNum(), who + ": <axis xyz=\"" + ax->Attribute("xyz") + "\"> must be a nonzero direction");
            }
            if (const XMLElement* lim = e->FirstChildElement("limit")) {
                j.effort = P.number_or(lim, "effort", 0, who);
                if (j.type == "revolute" || j.type == "prismatic") {
                    j.has_limit = lim->Attribute("lower") || lim->Attribute("upper");
                    j.lower = P.number_or(lim, "lower", 0, who);
                    j.upper = P.number_or(lim, "upper", 0, who);
                    if (j.has_limit) ++limits;
                }
            }
            if (const XMLElement* dyn = e->FirstChildElement("dynamics")) {
                j.damping = P.number_or(dyn, "damping", 0, who);
                j.friction = P.number_or(dyn, "friction", 0, who);
                for (const tinyxml2::XMLAttribute* a = dyn->FirstAttribute(); a; a = a->Next())
                    if (std::strcmp(a->Name(), "damping") && std::strcmp(a->Name(), "friction")) ++nonstandard_dynamics[a->Name()];
            }
            if (const XMLElement* mim = e->FirstChildElement("mimic")) {
                if (!mim->Attribute("joint")) P.fail(mim->GetLineNum(), who + ": <mimic> is missing attribute 'joint'");
                j.mimic = mim->Attribute("joint");
                j.mimic_multiplier = P.number_or(mim, "multiplier", 1, who);
                j.mimic_offset = P.number_or(mim, "offset", 0, who);
                j.mimic_line = mim->GetLineNum();
                ++mimics;
            }
            for (const tinyxml2::XMLAttribute* a = e->FirstAttribute(); a; a = a->Next())
                if (std::strcmp(a->Name(), "name") && std::strcmp(a->Name(), "type")) ++ignored_attrs[a->Name()];
            joint_id[j.name] = static_cast<int>(joints.size());
            joints.push_back(j);
        } else if (tag == "loop_joint" || tag == "loop") {
            Loop l;
            l.tag = tag;
            l.name = P.name_of(e, "a loop closure needs a name");
            l.line = e->GetLineNum();
            const std::string who = "<" + tag + " name='" + l.name + "'>";
            l.type = e->Attribute("type") ? e->Attribute("type") : "";
            const char* first = tag == "loop" ? "predecessor" : "link1";
            const char* second = tag == "loop" ? "successor" : "link2";
            const XMLElement* a = e->FirstChildElement(first);
            const XMLElement* b = e->FirstChildElement(second);
            if (!a || !a->Attribute("link")) P.fail(l.line, who + ": missing <" + first + " link=\"...\">");
            if (!b || !b->Attribute("link")) P.fail(l.line, who + ": missing <" + second + " link=\"...\">");
            l.link1 = a->Attribute("link");
            l.link2 = b->Attribute("link");
            l.frame1 = tag == "loop" ? P.origin(a, who) : P.inline_pose(a, who);
            l.frame2 = tag == "loop" ? P.origin(b, who) : P.inline_pose(b, who);
            if (const XMLElement* ax = e->FirstChildElement("axis")) {
                const auto v = P.numbers(ax, "xyz", 3, who);
                l.axis = {v[0], v[1], v[2]};
            }
            loops.push_back(l);
        } else if (tag == "coupling") {
            Coupling cp;
            cp.name = P.name_of(e, "a coupling needs a name");
            cp.line = e->GetLineNum();
            const std::string who = "<coupling name='" + cp.name + "'>";
            const XMLElement* a = e->FirstChildElement("predecessor");
            const XMLElement* b = e->FirstChildElement("successor");
            const XMLElement* r = e->FirstChildElement("ratio");
            if (!a || !a->Attribute("link")) P.fail(cp.line, who + ": missing <predecessor link=\"...\">");
            if (!b || !b->Attribute("link")) P.fail(cp.line, who + ": missing <successor link=\"...\">");
            if (!r) P.fail(cp.line, who + ": missing <ratio value=\"...\">");
            cp.predecessor = a->Attribute("link");
            cp.successor = b->Attribute("link");
            cp.ratio = P.numbers(r, "value", 1, who)[0];
            if (const char* t = e->Attribute("type"); t && std::strcmp(t, "rolling") != 0)
                P.fail(cp.line, who + ": type '" + t + "' is not supported (a gear coupling: no type, or \"rolling\")");
            couplings.push_back(cp);
        } else if (tag == "material") {
            ++ignored_tags["<material> (appearance only)"];
        } else if (tag == "gazebo" || tag == "transmission" || tag == "mujoco" || tag == "frame" ||
                   tag == "collision_filter_group" || tag == "drake") {
            ++ignored_tags["<" + tag + "> (simulator or tool extension)"];
        } else {
            ++ignored_tags["<" + tag + "> (unknown element)"];
        }
    }
    for (const auto& kv : ignored_tags) rep.ignored.push_back(kv.first + " x" + std::to_string(kv.second));
    for (const auto& kv : ignored_attrs)
        rep.ignored.push_back("joint attribute '" + kv.first + "' x" + std::to_string(kv.second) + " (not part of URDF)");
    for (const auto& kv : nonstandard_dynamics)
        rep.ignored.push_back("<dynamics " + kv.first + "=...> x" + std::to_string(kv.second) + " (not part of URDF)");
    if (geometry && !opt.contacts_all)
        rep.ignored.push_back("<visual>/<collision> geometry of " + std::to_string(geometry) +
                              " links: no contact" + (opt.contact_links.empty() ? " (import setting 'contacts' = true makes it one" : " but for the contact links (") +
                              "; primitives are drawn by the viewer" +
                              (mesh_links ? ", the " + std::to_string(mesh_links) + " links with only meshes as inertia boxes" : std::string()) +
                              ")");
    if (limits && !opt.limits)
        rep.ignored.push_back("joint limits of " + std::to_string(limits) + " joints: kept in the model, not enforced (import setting 'limits' = false)");
    for (const Joint& j : joints) {
        if (j.friction != 0)
            rep.ignored.push_back("joint '" + j.name + "' friction " + fmt(j.friction) + ": Coulomb friction is not modelled");
    }
    if (links.empty()) P.fail(robot->GetLineNum(), "robot '" + rep.robot + "' has no <link>");

    // ---- the tree -----------------------------------------------------------------------------
    const int nl = static_cast<int>(links.size());
    std::vector<int> parent_joint(nl, -1);
    std::vector<std::vector<int>> child_joints(nl);
    for (int k = 0; k < static_cast<int>(joints.size()); ++k) {
        const Joint& j = joints[k];
        const std::string who = "joint '" + j.name + "'";
        if (!link_id.count(j.parent)) P.fail(j.line, who + ": parent link '" + j.parent + "' not found");
        if (!link_id.count(j.child)) P.fail(j.line, who + ": child link '" + j.child + "' not found");
        const int c = link_id[j.child];
        if (j.parent == j.child) P.fail(j.line, who + ": parent and child are the same link '" + j.child + "'");
        if (parent_joint[c] >= 0)
            P.fail(j.line, who + ": link '" + j.child + "' already has parent joint '" + joints[parent_joint[c]].name + "' (line " +
                               std::to_string(joints[parent_joint[c]].line) + "); close loops with <loop_joint> or <loop>");
        parent_joint[c] = k;
        child_joints[link_id[j.parent]].push_back(k);
    }
    // Cycles: following parents from any link must end at a root. Each link is walked once (a
    // walk stops at a link known to reach a root): linear, where walking every link to the root
    // took 5.7 s on a 10,000-link chain. The link named is the first whose parents never end.
    std::vector<int> parent_link(nl, -1);
    for (int l = 0; l < nl; ++l)
        if (parent_joint[l] >= 0) parent_link[l] = link_id[joints[parent_joint[l]].parent];
    std::vector<char> walked(nl, 0);  // 1: on the current walk, 2: reaches a root
    std::vector<int> walk;
    for (int l = 0; l < nl; ++l) {
        walk.clear();
        int cur = l;
        for (; cur >= 0 && walked[cur] == 0; cur = parent_link[cur]) {
            walked[cur] = 1;
            walk.push_back(cur);
        }
        if (cur >= 0 && walked[cur] == 1) {
            const Joint& j = joints[parent_joint[l]];
            P.fail(j.line, "joint '" + j.name + "': the joints form a cycle through link '" + links[l].name +
                               "' (the tree part must be a tree; close loops with <loop_joint> or <loop>)");
        }
        for (int k : walk) walked[k] = 2;
    }
    std::vector<int> roots;
    for (int l = 0; l < nl; ++l)
        if (parent_joint[l] < 0) roots.push_back(l);
    if (roots.empty()) P.fail(robot->GetLineNum(), "no root link: every link is the child of a joint");
    if (roots.size() > 1) {
        std::string names;
        for (int r : roots) names += (names.empty() ? "'" : ", '") + links[r].name + "' (line " + std::to_string(links[r].line) + ")";
        P.fail(links[roots[1]].line, "several root links: " + names + "; a URDF robot is one tree");
    }
    const int root = roots[0];
    // ROS idiom: a root link named "world" is the world, whatever the requested base.
    Options o2 = opt;
    if (links[root].name == "world") {
        o2.fixed_base = true;
        rep.root_is_world = true;
        if (!opt.fixed_base)
            rep.warnings.push_back("the root link is named 'world' (fixed-base idiom): the robot is welded to the world; "
                                   "import setting 'base' = floating does not apply");
    }
    const Options& optr = o2;
    for (const auto& kv : opt.positions)
        if (!joint_id.count(kv.first))
            P.fail(robot->GetLineNum(), "initial position for joint '" + kv.first + "': no such joint in the file");
    // A joint that mimics another starts where the mimic puts it (unless given a position).
    for (const Joint& j : joints) {
        if (j.mimic.empty()) continue;
        const std::string who = "joint '" + j.name + "' <mimic joint='" + j.mimic + "'>";
        if (!joint_id.count(j.mimic)) P.fail(j.mimic_line, who + ": no joint named '" + j.mimic + "'");
        const Joint& leader = joints[joint_id[j.mimic]];
        if (!leader.mimic.empty())
            P.fail(j.mimic_line, who + ": joint '" + j.mimic + "' mimics '" + leader.mimic + "' itself; mimic the joint it follows");
        if (o2.positions.count(j.name)) continue;
        auto it = o2.positions.find(j.mimic);
        const double q = j.mimic_multiplier * (it == o2.positions.end() ? 0.0 : it->second) + j.mimic_offset;
        if (q != 0) o2.positions[j.name] = q;
    }
    // So does the joint above a gear <coupling>'s successor link (ratio × the predecessor's joint).
    for (const Coupling& cp : couplings) {
        if (!link_id.count(cp.predecessor) || !link_id.count(cp.successor)) continue;  // refused below, by name
        const int lj = parent_joint[link_id[cp.predecessor]], fj = parent_joint[link_id[cp.successor]];
        if (lj < 0 || fj < 0 || o2.positions.count(joints[fj].name)) continue;
        auto it = o2.positions.find(joints[lj].name);
        if (it != o2.positions.end() && it->second != 0) o2.positions[joints[fj].name] = cp.ratio * it->second;
    }
    // Enforced limits hold from the start: a joint whose zero (or given) position is outside them
    // starts at the nearest limit instead, and the report says so.
    if (opt.limits)
        for (const Joint& j : joints) {
            if (!j.has_limit || j.lower > j.upper) continue;
            auto it = o2.positions.find(j.name);
            const double q = it == o2.positions.end() ? 0.0 : it->second;
            if (q >= j.lower && q <= j.upper) continue;
            const double start = q < j.lower ? j.lower : j.upper;
            o2.positions[j.name] = start;
            rep.warnings.push_back("joint '" + j.name + "': " + (it == o2.positions.end() ? "its zero position" : "the given position " + fmt(q)) +
                                   " is outside its limits [" + fmt(j.lower) + ", " + fmt(j.upper) + "]: it starts at " + fmt(start) +
                                   " (give import setting 'positions' = " + j.name + " inside them, or import setting 'limits' = false)");
        }

    // World poses at q = 0, in tree order.
    std::vector<Pose> T(nl);
    std::vector<int> order;
    T[root] = {opt.position, qnormalized(opt.orientation)};
    // The motion of a joint at its initial position, in the joint frame.
    auto motion = [&](const Joint& j) {
        Pose mo;
        auto it = optr.positions.find(j.name);
        if (it == optr.positions.end()) return mo;
        if (j.type == "revolute" || j.type == "continuous") mo.q = quat_from_axis_angle(j.axis, it->second);
        else if (j.type == "prismatic") mo.x = it->second * normalized(j.axis);
        else P.fail(j.line, "joint '" + j.name + "': an initial position applies to revolute, continuous and prismatic joints, not " + j.type);
        return mo;
    };
    std::deque<int> queue{root};
    while (!queue.empty()) {
        const int l = queue.front();
        queue.pop_front();
        order.push_back(l);
        for (int k : child_joints[l]) {
            const int c = link_id[joints[k].child];
            T[c] = compose(compose(T[l], joints[k].origin), motion(joints[k]));
            queue.push_back(c);
        }
    }

    // ---- contacts: which links, and the placement on the ground -----------------------------------
    std::vector<char> contact_link(nl, opt.contacts_all ? 1 : 0);
    for (const std::string& name : opt.contact_links) {
        if (!link_id.count(name)) P.fail(robot->GetLineNum(), "contacts: no link named '" + name + "' in the file");
        contact_link[link_id[name]] = 1;
    }
    for (int l = 0; l < nl; ++l) {  // their <collision> primitives (the viewer may have drawn the <visual> ones)
        if (!contact_link[l]) continue;
        int meshes = 0;
        links[l].collision = read_shapes(links[l].xml, "collision", "link '" + links[l].name + "'", meshes);
        for (const XMLElement* c = links[l].xml->FirstChildElement("collision"); c; c = c->NextSiblingElement("collision")) {
            const XMLElement* g = c->FirstChildElement("geometry");
            const XMLElement* p = g ? g->FirstChildElement() : nullptr;
            const std::string kind = p ? p->Name() : "";
            if (p && kind != "box" && kind != "sphere" && kind != "capsule")
                links[l].no_contact.push_back("<" + kind + "> (line " + std::to_string(p->GetLineNum()) + ")");
        }
    }
    // The lowest point of a contact shape (link frame shape, link at world pose Tl) above z = 0.
    auto shape_height = [](const Pose& Tl, const Shape& sh) {
        const Pose w{Tl.x + rotate(Tl.q, sh.pose.x), Tl.q * sh.pose.q};
        if (sh.type == Shape::Type::sphere) return w.x.z - sh.size.x;
        if (sh.type == Shape::Type::capsule) {
            const Vec3 a = rotate(w.q, Vec3{0, 0, 0.5 * sh.size.y});
            return w.x.z - std::fabs(a.z) - sh.size.x;
        }
        double low = HUGE_VAL;
        for (int b = 0; b < 8; ++b) {
            const Vec3 c{(b & 1 ? 0.5 : -0.5) * sh.size.x, (b & 2 ? 0.5 : -0.5) * sh.size.y, (b & 4 ? 0.5 : -0.5) * sh.size.z};
            low = std::min(low, w.x.z + rotate(w.q, c).z);
        }
        return low;
    };
    auto contact_shape = [](const Shape& sh) { return sh.type != Shape::Type::cylinder; };
    if (opt.on_ground) {
        double low = HUGE_VAL;
        for (int l = 0; l < nl; ++l)
            if (contact_link[l])
                for (const Shape& sh : links[l].collision)
                    if (contact_shape(sh)) low = std::min(low, shape_height(T[l], sh));
        if (!std::isfinite(low))
            P.fail(robot->GetLineNum(), "on_ground: no contact shapes to put on the ground (name links with sphere, box or "
                                        "capsule <collision> elements in contacts)");
        for (Pose& t : T) t.x.z -= low;
        rep.lifted = -low;
    }

    // ---- groups (bodies) ------------------------------------------------------------------------
    const int WORLD = -1;
    std::vector<int> group(nl, -2);
    std::vector<int> group_top;  // top link of each group
    for (int l : order) {
        const int pj = parent_joint[l];
        if (pj < 0) {
            group[l] = optr.fixed_base ? WORLD : 0;
            if (!optr.fixed_base) group_top.push_back(l);
            continue;
        }
        const Joint& j = joints[pj];
        if (j.type == "fixed" && opt.lump_fixed) {
            group[l] = group[link_id[j.parent]];
        } else {
            group[l] = static_cast<int>(group_top.size());
            group_top.push_back(l);
        }
    }
    const int ng = static_cast<int>(group_top.size());
    double mean_mass = 0;
    int massive = 0;
    for (const Link& l : links)
        if (l.mass > 0) mean_mass += l.mass, ++massive;
    mean_mass = massive ? mean_mass / massive : 1.0;

    struct Body {
        double mass = 0;
        Vec3 com;
        Quat q;
        Mat3 inertia;  // body frame, about com
        bool used = true;
        bool regularised = false;
    };
    std::vector<Body> bodies(ng);
    for (int gi = 0; gi < ng; ++gi) {
        Body& B = bodies[gi];
        B.q = T[group_top[gi]].q;
        double m = 0;
        Vec3 c;
        for (int l = 0; l < nl; ++l)
            if (group[l] == gi && links[l].inertial) {
                m += links[l].mass;
                c += links[l].mass * (T[l].x + rotate(T[l].q, links[l].com));
            }
        B.mass = m;
        B.com = m > 0 ? c / m : T[group_top[gi]].x + rotate(T[group_top[gi]].q, links[group_top[gi]].com);
        // Inertia about the group's CoM in world axes, then into the body axes.
        Mat3 Iw;
        for (int l = 0; l < nl; ++l) {
            if (group[l] != gi || !links[l].inertial) continue;
            const Mat3 R = rotation(T[l].q * links[l].com_q);
            const Vec3 d = T[l].x + rotate(T[l].q, links[l].com) - B.com;
            Iw = Iw + R * links[l].inertia * transpose(R) + links[l].mass * (dot(d, d) * Mat3::identity() - outer(d, d));
        }
        const Mat3 Rb = rotation(B.q);
        B.inertia = transpose(Rb) * Iw * Rb;
    }

    // Which groups take part in a constraint (a non-floating joint or a loop)?
    std::vector<char> constrained(ng, 0);
    for (const Joint& j : joints) {
        if (j.type == "floating" || (j.type == "fixed" && opt.lump_fixed)) continue;
        for (const std::string& n : {j.parent, j.child})
            if (group[link_id[n]] >= 0) constrained[group[link_id[n]]] = 1;
    }
    for (const Loop& l : loops)
        for (const std::string& n : {l.link1, l.link2})
            if (link_id.count(n) && group[link_id[n]] >= 0) constrained[group[link_id[n]]] = 1;

    for (int gi = 0; gi < ng; ++gi) {
        Body& B = bodies[gi];
        const Link& top = links[group_top[gi]];
        if (B.mass > 0) continue;
        const bool has_inertia = !is_zero(B.inertia);
        if (!has_inertia && !constrained[gi]) {  // e.g. a massless root whose only child floats
            B.used = false;
            continue;
        }
        // A floating base needs mass whatever its inertia (regularising it would invent the
        // robot's translational inertia).
        if (gi == 0 && !optr.fixed_base)
            P.fail(top.line, "link '" + top.name + "': the root link (with the links welded to it) has no mass, so it "
                                 "cannot be a floating base; use import setting 'base' = fixed");
        if (!has_inertia) {
            const int pj = parent_joint[group_top[gi]];
            if (pj >= 0 && joints[pj].type == "fixed")  // lump_fixed = false: its own body
                P.fail(top.line, "link '" + top.name + "' has no mass and no inertia and is a body of its own (joint '" +
                                     joints[pj].name + "' is fixed and import setting 'lump_fixed' = false keeps it separate): a "
                                     "maximal-coordinate body needs both; give it an <inertial>, or use "
                                     "import setting 'lump_fixed' = true to merge it into its parent");
            P.fail(top.line, "link '" + top.name + "' has no mass and no inertia but moves (" +
                                 (pj >= 0 ? "joint '" + joints[pj].name + "' is " + joints[pj].type : std::string("it floats")) +
                                 "): a maximal-coordinate body needs both; give it an <inertial>, or attach it with a fixed joint");
        }
        B.mass = 1e-3 * mean_mass;
        B.regularised = true;
        rep.regularised_mass += B.mass;
        const int pj = parent_joint[group_top[gi]];
        rep.warnings.push_back("link '" + top.name + "': zero mass with rotational inertia on moving joint '" +
                               (pj >= 0 ? joints[pj].name : std::string("-")) + "'; regularised with mass " + fmt(B.mass) +
                               " kg (1e-3 x the mean link mass) so its translational block is not singular");
    }

    // ---- emit bodies --------------------------------------------------------------------------
    std::vector<std::string> body_name(ng);
    const std::string& pre = opt.prefix;
    for (int gi = 0; gi < ng; ++gi) {
        const Body& B = bodies[gi];
        const Link& top = links[group_top[gi]];
        body_name[gi] = pre + top.name;
        if (!B.used) continue;
        BodySpec b;
        b.name = body_name[gi];
        b.mass = B.mass;
        b.inertia = B.inertia;
        b.position = B.com;
        b.orientation = B.q;
        // The viewer's shapes of every link of the group, into the body frame (origin at the CoM).
        const Pose body_pose{B.com, B.q};
        for (int l = 0; l < nl; ++l) {
            if (group[l] != gi) continue;
            std::vector<Shape> shapes = links[l].shapes;
            if (links[l].meshes_only && links[l].inertial && links[l].mass > 0) {  // its inertia box, at its CoM
                Shape box = inertia_box(links[l].mass, links[l].inertia);
                box.pose = {links[l].com, links[l].com_q * box.pose.q};
                shapes.push_back(box);
            }
            for (const Shape& sh : shapes) {
                Shape s2 = sh;
                const Pose world{T[l].x + rotate(T[l].q, sh.pose.x), T[l].q * sh.pose.q};
                s2.pose = relative_pose(body_pose, world);
                b.shapes.push_back(s2);
            }
        }
        b.origin = {P.file(), top.line, "<link name='" + top.name + "'>"};
        b.velocity = opt.velocity + cross(opt.angular_velocity, B.com - opt.position);
        b.angular_velocity = opt.angular_velocity;
        spec.bodies.push_back(b);
        rep.bodies.push_back(b.name);
        rep.imported_mass += B.mass;
    }
    auto body_pose = [&](int gi) { return gi < 0 ? Pose{} : Pose{bodies[gi].com, bodies[gi].q}; };
    auto gname = [&](int gi) { return gi < 0 ? std::string("world") : body_name[gi]; };
    // Contacts: the contact links' <collision> primitives, in their body's frame.
    for (int l = 0; l < nl; ++l) {
        if (!contact_link[l]) continue;
        const std::string who = "link '" + links[l].name + "'";
        for (const std::string& g : links[l].no_contact)
            rep.ignored.push_back("contacts: " + who + ": <collision> " + g + " is not a contact shape (sphere, box, capsule)");
        int usable = 0;
        for (const Shape& sh : links[l].collision) usable += contact_shape(sh) ? 1 : 0;
        if (usable == 0) {
            if (!opt.contacts_all)
                rep.warnings.push_back("contacts: " + who + " has no sphere, box or capsule <collision>: no contact added");
            continue;
        }
        const int gi = group[l];
        if (gi < 0 || !bodies[gi].used) {
            rep.ignored.push_back("contacts: " + who + " is part of the world: its <collision> cannot touch the ground");
            continue;
        }
        int k = 0;
        for (const Shape& sh : links[l].collision) {
            if (!contact_shape(sh)) continue;
            ContactSpec c;
            c.name = pre + links[l].name + (usable > 1 ? "/" + std::to_string(++k) : std::string());
            c.body = body_name[gi];
            c.type = sh.type == Shape::Type::sphere ? ContactSpec::Type::sphere
                     : sh.type == Shape::Type::capsule ? ContactSpec::Type::capsule
                                                       : ContactSpec::Type::box;
            c.size = sh.size;
            c.pose = relative_pose(body_pose(gi), {T[l].x + rotate(T[l].q, sh.pose.x), T[l].q * sh.pose.q});
            c.mu = opt.mu;
            c.origin = {P.file(), links[l].line, "<link name='" + links[l].name + "'> <collision>"};
            spec.contacts.push_back(c);
            ++rep.contacts;
        }
    }
    for (int l = 0; l < nl; ++l)
        if (group[l] < 0) rep.world_mass += links[l].mass;
    for (int l = 0; l < nl; ++l) {
        const int gi = group[l];
        const Pose B = body_pose(gi);
        Frame f{gname(gi), relative_pose(B, T[l])};
        rep.frames[pre + links[l].name] = f;
        std::string what;
        if (gi >= 0 && !bodies[gi].used) what = "dropped: massless and unconstrained";
        else if (gi < 0)
            what = l == root ? (rep.root_is_world ? "is the world" : "welded to the world (fixed base)")
                             : "lumped into the world (welded to the fixed base)";
        else if (group_top[gi] == l) what = "body '" + body_name[gi] + "'" + (bodies[gi].regularised ? " (mass regularised)" : "");
        else what = "lumped into body '" + body_name[gi] + "' (kept as a frame)";
        rep.links.push_back({links[l].name, what});
    }

    // ---- emit joints --------------------------------------------------------------------------
    auto add_joint = [&](const std::string& name, const std::string& type, int gp, int gc, const Pose& Fw_parent,
                         const Pose& Fw_child, const Vec3& axis_joint, int line, const std::string& element) -> JointSpec& {
        const Pose BP = body_pose(gp), BC = body_pose(gc);
        JointSpec j;
        j.name = pre + name;
        j.type = type;
        j.parent = gname(gp);
        j.child = gname(gc);
        j.parent_anchor = rotate_inv(BP.q, Fw_parent.x - BP.x);
        j.child_anchor = rotate_inv(BC.q, Fw_child.x - BC.x);
        j.parent_frame = conj(BP.q) * Fw_parent.q;
        j.child_frame = conj(BC.q) * Fw_child.q;
        if (type != "spherical" && type != "fixed") j.parent_axis = rotate_inv(BP.q, rotate(Fw_parent.q, normalized(axis_joint)));
        j.origin = {P.file(), line, element};
        spec.joints.push_back(j);
        rep.joint_names.push_back(j.name);
        return spec.joints.back();
    };
    for (const Joint& j : joints) {
        const int gp = group[link_id[j.parent]], gc = group[link_id[j.child]];
        if (j.type == "fixed" && opt.lump_fixed) {
            rep.joints.push_back({j.name, "lumped (fixed)"});
            continue;
        }
        if (j.type == "floating") {
            rep.joints.push_back({j.name, "no constraint (floating)"});
            continue;
        }
        if (gp >= 0 && !bodies[gp].used) P.fail(j.line, "joint '" + j.name + "': parent link '" + j.parent + "' was dropped");
        // The joint frame on the parent: at the joint's origin; on the child: the child link frame
        // (they coincide at q = 0; an initial position moves the child).
        const Pose Tp = compose(T[link_id[j.parent]], j.origin);
        const Pose Tc = T[link_id[j.child]];
        const std::string type = j.type == "continuous" ? "revolute" : j.type;
        JointSpec& js = add_joint(j.name, type, gp, gc, Tp, Tc, j.axis, j.line, "<joint name='" + j.name + "'>");
        if (j.damping > 0) js.damping = {j.damping};
        else if (opt.damping > 0 && type != "fixed") js.damping = {opt.damping};
        if (j.has_limit) {
            js.lower = {j.lower};
            js.upper = {j.upper};
            js.limited = opt.limits;
            rep.limits_enforced += opt.limits ? 1 : 0;
        }
        if (opt.servo_kp > 0 && (type == "revolute" || type == "prismatic")) {
            js.servo.kind = ServoSpec::Kind::position;
            js.servo.kp = opt.servo_kp;
            js.servo.kv = opt.servo_kv;
            if (j.effort > 0) js.servo.effort_limit = j.effort;
            ++rep.servos;
        }
        rep.joints.push_back({j.name, type + " '" + js.name + "' (" + js.parent + " -> " + js.child + ")"});
    }
    for (const Loop& l : loops) {
        const std::string who = "<" + l.tag + " name='" + l.name + "'>";
        if (!link_id.count(l.link1)) P.fail(l.line, who + ": link '" + l.link1 + "' not found");
        if (!link_id.count(l.link2)) P.fail(l.line, who + ": link '" + l.link2 + "' not found");
        const int g1 = group[link_id[l.link1]], g2 = group[link_id[l.link2]];
        if (g1 == g2) P.fail(l.line, who + ": both links belong to the same body (they are welded together)");
        static const std::map<std::string, std::string> types = {
            {"continuous", "revolute"}, {"revolute", "revolute"}, {"prismatic", "prismatic"},
            {"fixed", "fixed"},         {"spherical", "spherical"}, {"ball", "spherical"}};
        auto it = types.find(l.type);
        if (it == types.end())
            P.fail(l.line, who + ": type '" + l.type + "' is not supported for loop closures (revolute, continuous, prismatic, fixed, spherical)");
        const Pose F1 = compose(T[link_id[l.link1]], l.frame1), F2 = compose(T[link_id[l.link2]], l.frame2);
        // The child of a joint must be a body: if link1 is welded to the world, swap the ends.
        Pose Fp = F1, Fc = F2;
        int gp = g1, gc = g2;
        if (g2 < 0) std::swap(Fp, Fc), std::swap(gp, gc);
        const Vec3 axis = l.axis;
        JointSpec& js = add_joint(l.name, it->second, gp, gc, Fp, Fc, axis, l.line, who);
        ++rep.loop_joints;
        const double gap = norm(F1.x - F2.x);
        rep.joints.push_back({l.name, "loop closure, " + it->second + " '" + js.name + "' (" + js.parent + " -> " + js.child +
                                          "), gap at q = 0: " + fmt(gap) + " m"});
    }
    // Couplings: <mimic> (this joint = multiplier · leader + offset) and <coupling> (the successor
    // link's joint = ratio · the predecessor link's). A coupled joint must be a moving joint.
    auto coupled = [&](const Joint& j, int line, const std::string& who) {
        if (j.type == "fixed" || j.type == "floating" || j.type == "planar")
            P.fail(line, who + ": joint '" + j.name + "' is " + j.type + "; couplings hold revolute, continuous and prismatic joints");
    };
    auto add_coupling = [&](const std::string& name, const Joint& follower, const Joint& leader, double ratio, double offset,
                            int line, const std::string& element) {
        if (!opt.couplings) {
            rep.ignored.push_back(element + ": " + pre + follower.name + " = " + fmt(ratio) + " × " + pre + leader.name +
                                  (offset != 0 ? " + " + fmt(offset) : std::string()) +
                                  " not enforced, the joints move freely (import setting 'couplings' = false)");
            return;
        }
        CouplingSpec cs;
        cs.name = pre + name;
        cs.joint = pre + follower.name;
        cs.leader = pre + leader.name;
        cs.ratio = ratio;
        cs.offset = offset;
        cs.origin = {P.file(), line, element};
        spec.couplings.push_back(cs);
        ++rep.couplings;
        rep.joints.push_back({name, "coupling '" + cs.name + "': " + cs.joint + " = " + fmt(ratio) + " × " + cs.leader +
                                        (offset != 0 ? " + " + fmt(offset) : std::string())});
    };
    for (const Joint& j : joints) {
        if (j.mimic.empty()) continue;
        const std::string who = "joint '" + j.name + "' <mimic joint='" + j.mimic + "'>";
        const Joint& leader = joints[joint_id[j.mimic]];
        coupled(j, j.mimic_line, who);
        coupled(leader, j.mimic_line, who);
        add_coupling(j.name + "/mimic", j, leader, j.mimic_multiplier, j.mimic_offset, j.mimic_line, "<mimic> of joint '" + j.name + "'");
    }
    for (const Coupling& cp : couplings) {
        const std::string who = "<coupling name='" + cp.name + "'>";
        for (const std::string* l : {&cp.predecessor, &cp.successor}) {
            if (!link_id.count(*l)) P.fail(cp.line, who + ": link '" + *l + "' not found");
            if (parent_joint[link_id[*l]] < 0)
                P.fail(cp.line, who + ": link '" + *l + "' is the root; a coupling ties the joints above two links");
        }
        const Joint& leader = joints[parent_joint[link_id[cp.predecessor]]];
        const Joint& follower = joints[parent_joint[link_id[cp.successor]]];
        if (&leader == &follower) P.fail(cp.line, who + ": predecessor and successor are the same link");
        coupled(leader, cp.line, who);
        coupled(follower, cp.line, who);
        add_coupling(cp.name, follower, leader, cp.ratio, 0.0, cp.line, who);
    }
    return rep;
}

std::string Report::to_text() const {
    std::ostringstream o;
    o << "robot '" << robot << "' from " << file << "\n";
    o << "  links (" << links.size() << "):\n";
    for (const Entry& e : links) o << "    " << e.name << ": " << e.mapped << "\n";
    o << "  joints (" << joints.size() << "):\n";
    for (const Entry& e : joints) o << "    " << e.name << ": " << e.mapped << "\n";
    o << "  bodies " << bodies.size() << ", joints " << joint_names.size() << " (" << loop_joints << " loop closure"
      << (loop_joints == 1 ? "" : "s") << ")";
    if (couplings > 0) o << ", couplings " << couplings;
    o << "\n";
    o << "  mass: file " << fmt(file_mass) << " kg, bodies " << fmt(imported_mass) << " kg";
    if (world_mass > 0) o << ", welded to the world " << fmt(world_mass) << " kg";
    if (regularised_mass > 0) o << " (including " << fmt(regularised_mass) << " kg of regularisation)";
    o << "\n";
    o << "  limits enforced: " << limits_enforced << " joint" << (limits_enforced == 1 ? "" : "s") << "; contacts: " << contacts;
    if (servos > 0) o << "; position servos: " << servos;
    if (lifted != 0) o << " (put on the ground: moved " << fmt(lifted) << " m up)";
    o << "\n";
    if (ignored.empty()) o << "  ignored: nothing\n";
    else {
        o << "  ignored (" << ignored.size() << "):\n";
        for (const std::string& s : ignored) o << "    " << s << "\n";
    }
    if (warnings.empty()) o << "  warnings: none\n";
    else {
        o << "  warnings (" << warnings.size() << "):\n";
        for (const std::string& s : warnings) o << "    " << s << "\n";
    }
    return o.str();
}

}  // namespace urdf
}  // namespace noether
