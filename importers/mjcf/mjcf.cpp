// MJCF import (tinyxml2). docs/mjcf.md lists what is read, mapped, reported and refused.
//
// The model is read into MJCF bodies (each with its frame in its parent at qpos0, its joints,
// geoms, sites and inertia), then grouped as the URDF importer groups links: a body with a joint
// starts a noether body, a body without one is merged into its parent's (the world's, if it hangs
// from the world). Joint frames come from the pose the file is written in (qpos0, where hinge and
// slide coordinates equal their `ref`); the bodies start at the keyframe's pose when one is chosen.
#include <sys/stat.h>
#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <tinyxml2.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <sstream>

#include "noether/mjcf.hpp"

namespace noether {
namespace mjcf {

namespace {

using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;

constexpr double kPi = 3.14159265358979323846;

std::string fmt(double v) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

Pose compose(const Pose& a, const Pose& b) { return {a.x + rotate(a.q, b.x), a.q * b.q}; }

// A class of <default>: its parent and the element it gives for each tag.
struct DefaultClass {
    std::string name;
    int parent = -1;
    std::map<std::string, const XMLElement*> element;
};

struct Geom {
    const XMLElement* xml = nullptr;
    std::string name, type;
    int cls = 0;
    Vec3 size;           // MJCF half-sizes
    Pose pose;           // in the body frame
    double mass = 0;     // computed (mass or density × volume)
    Mat3 inertia;        // about its centre of mass, geom axes
    Vec3 com;            // its centre of mass in the geom frame (a mesh's; primitives: the origin)
    std::string mesh;    // a mesh geom's mesh
    bool mass_given = false;  // a mesh geom's mass attribute (else density × its volume)
    double density = 1000;
    bool has_inertia = false;
    int contype = 1, conaffinity = 1, condim = 3, group = 0;
    double friction = 1;
    double rgba[4] = {0.5, 0.5, 0.5, 1};
};

struct Joint {
    const XMLElement* xml = nullptr;
    std::string name, type;  // hinge, slide, ball, free
    Vec3 pos, axis{0, 0, 1};
    bool limited = false;
    double lower = 0, upper = 0;
    double ref = 0, springref = 0, stiffness = 0, damping = 0, armature = 0, frictionloss = 0;
    int qadr = 0, dadr = 0;  // address in qpos / qvel
};

struct Site {
    std::string name;
    Pose pose;
};

struct Body {
    const XMLElement* xml = nullptr;
    std::string name;
    int parent = -1;     // -1 for the world (index 0)
    int childclass = 0;  // the class its children use by default
    Pose local;          // in the parent's frame, as written
    std::vector<Joint> joints;
    std::vector<Geom> geoms;
    std::vector<Site> sites;
    bool inertial = false;
    double mass = 0;
    Vec3 com;            // body frame
    Mat3 inertia;        // about com, body axes
};

class Reader {
public:
    Reader(const std::string& path, const Options& opt, Report& rep) : opt_(opt), rep_(rep) { main_file_ = path; }

    [[noreturn]] void fail(const XMLElement* e, const std::string& msg) const {
        throw ModelError({{Severity::error, Origin{file_of(e), e ? e->GetLineNum() : 0, ""}, msg}});
    }
    [[noreturn]] void fail_file(const std::string& file, int line, const std::string& msg) const {
        throw ModelError({{Severity::error, Origin{file, line, ""}, msg}});
    }
    std::string file_of(const XMLElement* e) const {
        if (!e) return main_file_;
        auto it = doc_file_.find(e->GetDocument());
        return it == doc_file_.end() ? main_file_ : it->second;
    }
    std::string where(const XMLElement* e) const { return file_of(e) + ":" + std::to_string(e->GetLineNum()); }
    // "<joint name='knee'>" or "<joint> (line 12)".
    std::string who(const XMLElement* e) const {
        const char* n = e->Attribute("name");
        if (n && *n) return std::string("<") + e->Name() + " name='" + n + "'>";
        return std::string("<") + e->Name() + "> (line " + std::to_string(e->GetLineNum()) + ")";
    }

    const XMLElement* load(const std::string& path, const XMLElement* from) {
        struct stat st;
        if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {  // a device or a pipe could block or never end
            if (from) fail(from, "<include file='" + std::string(from->Attribute("file")) + "'>: '" + path + "' is not a regular file");
            fail_file(path, 0, "not a regular file");
        }
        if (!from) included_files_.insert(path);
        auto doc = std::make_unique<XMLDocument>();
        const tinyxml2::XMLError err = doc->LoadFile(path.c_str());
        if (err == tinyxml2::XML_ERROR_FILE_NOT_FOUND || err == tinyxml2::XML_ERROR_FILE_COULD_NOT_BE_OPENED) {
            if (from) fail(from, "<include file='" + std::string(from->Attribute("file")) + "'>: cannot open '" + path + "'");
            fail_file(path, 0, "cannot open the MJCF file");
        }
        if (err != tinyxml2::XML_SUCCESS)
            fail_file(path, doc->ErrorLineNum(), std::string("not well-formed XML: ") + (doc->ErrorStr() ? doc->ErrorStr() : "parse error"));
        const XMLElement* root = doc->RootElement();
        if (!root || std::strcmp(root->Name(), "mujoco") != 0)
            fail_file(path, root ? root->GetLineNum() : 0,
                      std::string(from ? "an included file's" : "the") + " root element must be <mujoco>, got <" +
                          (root ? root->Name() : "nothing") + ">");
        doc_file_[doc.get()] = path;
        docs_.push_back(std::move(doc));
        return root;
    }

    // The children of e, with every <include> replaced by the children of the file it names
    // (relative to the directory of the including file), recursively; a file included twice is refused.
    std::vector<const XMLElement*> children(const XMLElement* e) {
        std::vector<const XMLElement*> out;
        for (const XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) {
            if (std::strcmp(c->Name(), "include") != 0) {
                out.push_back(c);
                continue;
            }
            const char* f = c->Attribute("file");
            if (!f || !*f) fail(c, "<include>: missing attribute 'file'");
            auto cached = included_.find(c);
            const XMLElement* root = nullptr;
            if (cached != included_.end()) root = cached->second;
            else {
                std::string path = f;
                const std::string from = file_of(c);
                if (path[0] != '/' && from.find('/') != std::string::npos) path = from.substr(0, from.rfind('/') + 1) + path;
                if (opt_.include_problem) {
                    const std::string why = opt_.include_problem(path);
                    if (!why.empty()) fail(c, "<include file='" + std::string(f) + "'>: " + why);
                }
                if (!included_files_.insert(path).second) fail(c, "<include file='" + std::string(f) + "'>: '" + path + "' is already part of the model");
                if (included_files_.size() > 100) fail(c, "<include>: more than 100 included files");
                root = load(path, c);
                included_[c] = root;
            }
            for (const XMLElement* k : children(root)) out.push_back(k);
        }
        return out;
    }

    // ---- numbers and attributes ---------------------------------------------------------------
    std::vector<double> parse_numbers(const XMLElement* e, const char* attr, const char* text, std::size_t min_n,
                                      std::size_t max_n) const {
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
                fail(e, who(e) + ": " + attr + "=\"" + text + "\": '" + bad + "' is not a number");
            }
            if (!std::isfinite(v)) fail(e, who(e) + ": " + attr + "=\"" + text + "\": values must be finite");
            out.push_back(v);
            p = end;
        }
        if (out.size() < min_n || out.size() > max_n)
            fail(e, who(e) + ": " + attr + "=\"" + text + "\": expected " +
                        (min_n == max_n ? std::to_string(min_n) : std::to_string(min_n) + " to " + std::to_string(max_n)) +
                        " numbers, got " + std::to_string(out.size()));
        return out;
    }

    // The attribute as the element or its class chain gives it (nullptr: nowhere). `tag` is the
    // element's tag in <default> (the same as its own, except for <freejoint>).
    const char* attr(const XMLElement* e, const char* name, int cls, const char* tag = nullptr) const {
        if (const char* v = e->Attribute(name)) return v;
        const std::string t = tag ? tag : e->Name();
        for (int c = cls; c >= 0; c = classes_[c].parent) {
            auto it = classes_[c].element.find(t);
            if (it != classes_[c].element.end())
                if (const char* v = it->second->Attribute(name)) return v;
        }
        return nullptr;
    }
    // Where the attribute came from (for messages): the element or the <default> element.
    const XMLElement* attr_source(const XMLElement* e, const char* name, int cls, const char* tag = nullptr) const {
        if (e->Attribute(name)) return e;
        const std::string t = tag ? tag : e->Name();
        for (int c = cls; c >= 0; c = classes_[c].parent) {
            auto it = classes_[c].element.find(t);
            if (it != classes_[c].element.end() && it->second->Attribute(name)) return it->second;
        }
        return e;
    }
    std::vector<double> nums(const XMLElement* e, const char* name, int cls, std::size_t min_n, std::size_t max_n,
                             std::vector<double> fallback, const char* tag = nullptr) const {
        const char* v = attr(e, name, cls, tag);
        if (!v) {
            if (fallback.empty() && min_n > 0) fail(e, who(e) + ": missing attribute '" + name + "'");  // required
            return fallback;
        }
        return parse_numbers(attr_source(e, name, cls, tag), name, v, min_n, max_n);
    }
    double num(const XMLElement* e, const char* name, int cls, double fallback, const char* tag = nullptr) const {
        return nums(e, name, cls, 1, 1, {fallback}, tag)[0];
    }
    std::string str(const XMLElement* e, const char* name, int cls, const std::string& fallback, const char* tag = nullptr) const {
        const char* v = attr(e, name, cls, tag);
        return v ? v : fallback;
    }
    // true/false (MuJoCo's keywords); "auto" is returned as -1.
    int tristate(const XMLElement* e, const char* name, int cls, int fallback, const char* tag = nullptr) const {
        const char* v = attr(e, name, cls, tag);
        if (!v) return fallback;
        if (!std::strcmp(v, "true")) return 1;
        if (!std::strcmp(v, "false")) return 0;
        if (!std::strcmp(v, "auto")) return -1;
        fail(attr_source(e, name, cls, tag), who(e) + ": " + name + "=\"" + v + "\" must be true, false or auto");
    }

    // The class an element uses: its own class="", else the enclosing body's childclass.
    int class_of(const XMLElement* e, int inherited) const {
        const char* c = e->Attribute("class");
        if (!c) return inherited;
        auto it = class_id_.find(c);
        if (it == class_id_.end()) fail(e, who(e) + ": class '" + std::string(c) + "' is not defined in <default>");
        return it->second;
    }

    // ---- orientation -----------------------------------------------------------------------------
    Quat axis_angle(const Vec3& axis, double angle) const { return quat_from_axis_angle(normalized(axis), angle); }
    // MuJoCo's frame alternatives (quat, axisangle, euler, xyaxes, zaxis); at most one may be given.
    Quat orientation(const XMLElement* e, int cls, const char* tag = nullptr) const {
        static const char* forms[] = {"quat", "axisangle", "euler", "xyaxes", "zaxis"};
        const char* given = nullptr;
        for (const char* f : forms)
            if (e->Attribute(f)) {
                if (given) fail(e, who(e) + ": both " + given + " and " + f + " are given; an orientation takes one of them");
                given = f;
            }
        if (!given)  // from the class (geoms and sites may take one there)
            for (const char* f : forms)
                if (attr(e, f, cls, tag)) {
                    given = f;
                    break;
                }
        if (!given) return Quat{};
        const XMLElement* src = attr_source(e, given, cls, tag);
        const std::string g = given;
        if (g == "quat") {
            const auto v = nums(e, "quat", cls, 4, 4, {}, tag);
            const Quat q{v[0], v[1], v[2], v[3]};
            if (!(qnorm(q) > 1e-14)) fail(src, who(e) + ": quat has zero norm");
            return qnormalized(q);
        }
        if (g == "axisangle") {
            const auto v = nums(e, "axisangle", cls, 4, 4, {}, tag);
            const Vec3 a{v[0], v[1], v[2]};
            if (!(norm(a) > 1e-14)) fail(src, who(e) + ": axisangle has a zero axis");
            return axis_angle(a, v[3] * angle_scale_);
        }
        if (g == "euler") {
            const auto v = nums(e, "euler", cls, 3, 3, {}, tag);
            Quat q;
            for (int i = 0; i < 3; ++i) {
                const char c = eulerseq_[i];
                const int k = (c == 'x' || c == 'X') ? 0 : (c == 'y' || c == 'Y') ? 1 : 2;
                const Vec3 ax{k == 0 ? 1.0 : 0.0, k == 1 ? 1.0 : 0.0, k == 2 ? 1.0 : 0.0};
                const Quat r = quat_from_axis_angle(ax, v[i] * angle_scale_);
                q = (c >= 'a') ? q * r : r * q;  // lower case: about the rotated axes; upper case: fixed axes
            }
            return q;
        }
        if (g == "xyaxes") {
            const auto v = nums(e, "xyaxes", cls, 6, 6, {}, tag);
            Vec3 x{v[0], v[1], v[2]}, y{v[3], v[4], v[5]};
            if (!(norm(x) > 1e-14)) fail(src, who(e) + ": xyaxes has a zero x axis");
            x = normalized(x);
            y = y - dot(x, y) * x;
            if (!(norm(y) > 1e-14)) fail(src, who(e) + ": xyaxes: the y axis is parallel to the x axis");
            y = normalized(y);
            const Vec3 z = cross(x, y);
            Mat3 R;
            for (int i = 0; i < 3; ++i) {
                const double xv[3] = {x.x, x.y, x.z}, yv[3] = {y.x, y.y, y.z}, zv[3] = {z.x, z.y, z.z};
                R.m[i][0] = xv[i];
                R.m[i][1] = yv[i];
                R.m[i][2] = zv[i];
            }
            return qnormalized(quat_from_matrix(R));
        }
        const auto v = nums(e, "zaxis", cls, 3, 3, {}, tag);
        const Vec3 z{v[0], v[1], v[2]};
        if (!(norm(z) > 1e-14)) fail(src, who(e) + ": zaxis is zero");
        return z_to_quat(normalized(z));
    }
    // The shortest rotation taking (0, 0, 1) to the unit vector z.
    static Quat z_to_quat(const Vec3& z) {
        const Vec3 a = cross(Vec3{0, 0, 1}, z);
        const double s = norm(a);
        if (s < 1e-14) return z.z >= 0 ? Quat{} : Quat{0, 1, 0, 0};
        return quat_from_axis_angle(a / s, std::atan2(s, z.z));
    }

    // ---- the file's sections ------------------------------------------------------------------
    void read_defaults(const XMLElement* d, int parent) {
        const char* cname = d->Attribute("class");
        std::string name = cname ? cname : (parent < 0 ? "main" : "");
        if (name.empty()) fail(d, "<default>: a nested <default> needs a class name");
        if (class_id_.count(name)) {
            if (parent < 0 && name == "main") {  // a second top-level <default>: it adds to main
                for (const XMLElement* c : children(d)) read_default_child(c, class_id_["main"]);
                return;
            }
            fail(d, "<default class='" + name + "'>: the class is defined twice");
        }
        const int id = static_cast<int>(classes_.size());
        classes_.push_back({name, parent, {}});
        class_id_[name] = id;
        for (const XMLElement* c : children(d)) read_default_child(c, id);
    }
    void read_default_child(const XMLElement* c, int id) {
        const std::string t = c->Name();
        if (t == "default") {
            read_defaults(c, id);
            return;
        }
        if (classes_[id].element.count(t)) fail(c, "<default class='" + classes_[id].name + "'>: <" + t + "> is given twice");
        classes_[id].element[t] = c;
    }

    void note_ignored(const XMLElement* e, const std::string& why) {
        rep_.ignored.push_back(where(e) + ": " + who(e) + ": " + why);
    }
    // Attributes of e that nothing reads, reported in one line per element.
    void report_attributes(const XMLElement* e, std::initializer_list<const char*> known, const char* why = "not used") {
        std::string extra;
        for (const tinyxml2::XMLAttribute* a = e->FirstAttribute(); a; a = a->Next()) {
            bool k = false;
            for (const char* n : known) k = k || !std::strcmp(n, a->Name());
            if (!k) extra += (extra.empty() ? "" : ", ") + std::string(a->Name());
        }
        if (!extra.empty()) rep_.ignored.push_back(where(e) + ": " + who(e) + ": " + extra + ": " + why);
    }

    void read_compiler(const XMLElement* c) {
        // What is read below; the rest (mesh and texture paths, mesh processing, threads: nothing
        // here reads meshes) is reported.
        report_attributes(c, {"angle", "eulerseq", "autolimits", "inertiafromgeom", "settotalmass", "coordinate", "boundmass",
                              "boundinertia", "balanceinertia", "inertiagrouprange", "meshdir", "assetdir"},
                          "not used (meshes are read for their volume only)");
        if (const char* d = c->Attribute("meshdir")) meshdir_ = d;
        if (const char* d = c->Attribute("assetdir")) assetdir_ = d;
        if (c->Attribute("inertiagrouprange")) {  // which geoms give inertia: every group (0 5, the default) is what is computed
            const auto r = nums(c, "inertiagrouprange", -1, 2, 2, {});
            if (!(r[0] <= 0 && r[1] >= 5))
                fail(c, "<compiler inertiagrouprange>: leaves geom groups out of the bodies' inertia; not supported");
        }
        if (const char* a = c->Attribute("angle")) {
            if (!std::strcmp(a, "degree")) angle_scale_ = kPi / 180;
            else if (!std::strcmp(a, "radian")) angle_scale_ = 1;
            else fail(c, "<compiler angle=\"" + std::string(a) + "\">: must be degree or radian");
        }
        if (const char* s = c->Attribute("eulerseq")) {
            const std::string v = s;
            if (v.size() != 3 || v.find_first_not_of("xyzXYZ") != std::string::npos)
                fail(c, "<compiler eulerseq=\"" + v + "\">: must be three of x, y, z, X, Y, Z");
            eulerseq_ = v;
        }
        if (c->Attribute("autolimits")) autolimits_ = tristate(c, "autolimits", -1, 1) == 1;
        if (c->Attribute("inertiafromgeom")) inertiafromgeom_ = tristate(c, "inertiafromgeom", -1, -1);
        if (c->Attribute("settotalmass")) settotalmass_ = num(c, "settotalmass", -1, -1);
        if (const char* co = c->Attribute("coordinate"))
            if (std::strcmp(co, "local") != 0)
                fail(c, "<compiler coordinate=\"" + std::string(co) + "\">: only local coordinates are supported (as in MuJoCo 2.3 and later)");
        for (const char* a : {"boundmass", "boundinertia", "balanceinertia"})
            if (c->Attribute(a)) fail(c, std::string("<compiler ") + a + ">: changes the masses and inertias of the bodies; not supported");
    }

    void read_option(const XMLElement* o, Spec& spec) {
        report_attributes(o, {"timestep", "gravity"}, "not used (noether's own integrators and constraint model)");
        if (o->Attribute("timestep")) {
            rep_.timestep = num(o, "timestep", -1, 0);
            if (!(rep_.timestep > 0)) fail(o, "<option timestep=\"" + std::string(o->Attribute("timestep")) + "\">: must be positive");
        }
        if (o->Attribute("gravity")) {
            const auto g = nums(o, "gravity", -1, 3, 3, {});
            spec.gravity = {g[0], g[1], g[2]};
        }
        for (const XMLElement* f : children(o)) {
            if (std::strcmp(f->Name(), "flag") != 0) {
                note_ignored(f, "not used");
                continue;
            }
            if (const char* c = f->Attribute("contact")) contact_disabled_ = !std::strcmp(c, "disable");
            if (const char* g = f->Attribute("gravity"))
                if (!std::strcmp(g, "disable")) spec.gravity = {0, 0, 0};
            report_attributes(f, {"contact", "gravity"}, "not used");
        }
    }

    void read_assets(const XMLElement* a) {
        for (const XMLElement* e : children(a)) {
            const std::string t = e->Name();
            if (t == "mesh") {
                std::string name = e->Attribute("name") ? e->Attribute("name") : "";
                const char* f = e->Attribute("file");
                if (name.empty() && f) {  // MuJoCo names an unnamed mesh after its file, without the extension
                    name = f;
                    name = name.substr(name.find_last_of('/') + 1);
                    name = name.substr(0, name.rfind('.'));
                }
                meshes_.insert(name);
                MeshAsset& ma = mesh_assets_[name];
                ma.xml = e;
                ma.file = f ? f : "";
                if (e->Attribute("scale")) {
                    const auto sc = parse_numbers(e, "scale", e->Attribute("scale"), 3, 3);
                    ma.scale = {sc[0], sc[1], sc[2]};
                }
            } else if (t == "material") {
                if (e->Attribute("name") && e->Attribute("rgba")) {
                    const auto v = parse_numbers(e, "rgba", e->Attribute("rgba"), 4, 4);
                    materials_[e->Attribute("name")] = {v[0], v[1], v[2], v[3]};
                }
            } else if (t != "texture") {
                note_ignored(e, "not used");
            }
        }
    }

    // ---- bodies -------------------------------------------------------------------------------
    void read_geom(const XMLElement* g, int cls, Body& b) {
        Geom G;
        G.xml = g;
        G.cls = class_of(g, cls);
        const int c = G.cls;
        G.name = g->Attribute("name") ? g->Attribute("name") : "";
        G.type = str(g, "type", c, "sphere");
        static const std::set<std::string> types = {"plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf"};
        if (!types.count(G.type)) fail(attr_source(g, "type", c), who(g) + ": type '" + G.type + "' is not a geom type");
        const auto sz = nums(g, "size", c, 1, 3, {0, 0, 0});
        double s[3] = {0, 0, 0};
        for (std::size_t i = 0; i < sz.size(); ++i) s[i] = sz[i];
        G.pose.x = [&] {
            const auto p = nums(g, "pos", c, 3, 3, {0, 0, 0});
            return Vec3{p[0], p[1], p[2]};
        }();
        G.pose.q = orientation(g, c);
        if (attr(g, "fromto", c)) {
            if (G.type != "capsule" && G.type != "cylinder" && G.type != "box" && G.type != "ellipsoid")
                fail(attr_source(g, "fromto", c), who(g) + ": fromto applies to capsule, cylinder, box and ellipsoid geoms, not " + G.type);
            const auto f = nums(g, "fromto", c, 6, 6, {});
            const Vec3 a{f[0], f[1], f[2]}, d = Vec3{f[3], f[4], f[5]} - a;
            if (!(norm(d) > 1e-14)) fail(attr_source(g, "fromto", c), who(g) + ": fromto has zero length");
            G.pose.x = a + 0.5 * d;
            G.pose.q = z_to_quat(normalized(d));
            if (G.type == "capsule" || G.type == "cylinder") s[1] = 0.5 * norm(d);
            else s[1] = s[0], s[2] = 0.5 * norm(d);  // box, ellipsoid: x and y half-sizes size[0] (as MuJoCo 2.2.2)
        }
        G.size = {s[0], s[1], s[2]};
        const int need = G.type == "sphere" ? 1 : (G.type == "capsule" || G.type == "cylinder") ? 2
                         : (G.type == "box" || G.type == "ellipsoid") ? 3 : 0;
        for (int i = 0; i < need; ++i)
            if (!(s[i] > 0)) fail(attr_source(g, "size", c), who(g) + ": a " + G.type + " needs " + std::to_string(need) +
                                                                 " positive size value" + (need > 1 ? "s" : "") + ", got size " + fmt(s[i]) +
                                                                 " at position " + std::to_string(i + 1));
        G.contype = static_cast<int>(num(g, "contype", c, 1));
        G.conaffinity = static_cast<int>(num(g, "conaffinity", c, 1));
        G.condim = static_cast<int>(num(g, "condim", c, 3));
        G.group = static_cast<int>(num(g, "group", c, 0));
        G.friction = nums(g, "friction", c, 1, 3, {1})[0];
        if (G.friction < 0) fail(attr_source(g, "friction", c), who(g) + ": friction must be non-negative");
        if (const char* m = attr(g, "material", c)) {
            auto it = materials_.find(m);
            if (it != materials_.end())
                for (int i = 0; i < 4; ++i) G.rgba[i] = it->second[i];
        }
        if (attr(g, "rgba", c)) {
            const auto v = nums(g, "rgba", c, 4, 4, {});
            for (int i = 0; i < 4; ++i) G.rgba[i] = std::min(1.0, std::max(0.0, v[i]));
        }
        // Mass and inertia as MuJoCo takes them: mass="" wins over density (default 1000).
        double V = 0;
        Vec3 Id;  // principal inertia per unit mass
        const double r = s[0];
        if (G.type == "sphere") {
            V = 4.0 / 3.0 * kPi * r * r * r;
            Id = {0.4 * r * r, 0.4 * r * r, 0.4 * r * r};
        } else if (G.type == "capsule") {
            const double h = 2 * s[1];
            const double Vc = kPi * r * r * h, Vs = 4.0 / 3.0 * kPi * r * r * r;
            V = Vc + Vs;
            // cylinder plus two half-spheres, each about the capsule's centre
            const double Ixy = Vc * (h * h / 12 + r * r / 4) + Vs * (0.4 * r * r + h * h / 4 + 3 * h * r / 8);
            const double Iz = Vc * r * r / 2 + Vs * 0.4 * r * r;
            Id = {Ixy / V, Ixy / V, Iz / V};
        } else if (G.type == "cylinder") {
            const double h = 2 * s[1];
            V = kPi * r * r * h;
            Id = {(3 * r * r + h * h) / 12, (3 * r * r + h * h) / 12, r * r / 2};
        } else if (G.type == "box") {
            V = 8 * s[0] * s[1] * s[2];
            Id = {(s[1] * s[1] + s[2] * s[2]) / 3, (s[0] * s[0] + s[2] * s[2]) / 3, (s[0] * s[0] + s[1] * s[1]) / 3};
        } else if (G.type == "ellipsoid") {
            V = 4.0 / 3.0 * kPi * s[0] * s[1] * s[2];
            Id = {(s[1] * s[1] + s[2] * s[2]) / 5, (s[0] * s[0] + s[2] * s[2]) / 5, (s[0] * s[0] + s[1] * s[1]) / 5};
        }
        if (V > 0) {
            G.has_inertia = true;
            if (attr(g, "mass", c)) {
                G.mass = num(g, "mass", c, 0);
                if (G.mass < 0) fail(attr_source(g, "mass", c), who(g) + ": mass must be non-negative, got " + fmt(G.mass));
            } else {
                const double density = num(g, "density", c, 1000);
                if (density < 0) fail(attr_source(g, "density", c), who(g) + ": density must be non-negative, got " + fmt(density));
                G.mass = density * V;
            }
            G.inertia = Mat3{};
            G.inertia.m[0][0] = G.mass * Id.x;
            G.inertia.m[1][1] = G.mass * Id.y;
            G.inertia.m[2][2] = G.mass * Id.z;
        }
        if (G.type == "mesh") {
            const std::string m = str(g, "mesh", c, "");
            if (m.empty()) fail(g, who(g) + ": a mesh geom needs attribute 'mesh'");
            if (!meshes_.count(m)) fail(g, who(g) + ": mesh '" + m + "' is not defined in <asset>");
            G.mesh = m;  // its volume is read only if its body's inertia comes from its geoms
            if (attr(g, "mass", c)) {
                G.mass_given = true;
                G.mass = num(g, "mass", c, 0);
                if (G.mass < 0) fail(attr_source(g, "mass", c), who(g) + ": mass must be non-negative, got " + fmt(G.mass));
            } else {
                G.density = num(g, "density", c, 1000);
                if (G.density < 0) fail(attr_source(g, "density", c), who(g) + ": density must be non-negative, got " + fmt(G.density));
            }
        }
        static const std::set<std::string> used = {"name", "class", "type", "size", "pos", "quat", "axisangle", "euler", "xyaxes",
                                                   "zaxis", "fromto", "contype", "conaffinity", "condim", "group", "friction",
                                                   "material", "rgba", "mass", "density", "mesh"};
        for (const tinyxml2::XMLAttribute* a = g->FirstAttribute(); a; a = a->Next())
            if (!used.count(a->Name())) ++geom_attrs_[a->Name()];
        b.geoms.push_back(G);
    }

    Joint read_joint(const XMLElement* j, int cls, bool free_element) {
        Joint J;
        J.xml = j;
        const int c = class_of(j, cls);
        const char* tag = free_element ? "joint" : nullptr;  // <freejoint> takes nothing from <default>
        J.name = j->Attribute("name") ? j->Attribute("name") : "";
        if (free_element) {
            J.type = "free";
            report_attributes(j, {"name", "group"});
            return J;
        }
        J.type = str(j, "type", c, "hinge", tag);
        if (J.type != "hinge" && J.type != "slide" && J.type != "ball" && J.type != "free")
            fail(attr_source(j, "type", c), who(j) + ": type '" + J.type + "' is not a joint type (hinge, slide, ball, free)");
        const auto p = nums(j, "pos", c, 3, 3, {0, 0, 0});
        J.pos = {p[0], p[1], p[2]};
        const auto a = nums(j, "axis", c, 3, 3, {0, 0, 1});
        J.axis = {a[0], a[1], a[2]};
        if (J.type == "hinge" || J.type == "slide") {
            if (!(norm(J.axis) > 1e-14)) fail(attr_source(j, "axis", c), who(j) + ": axis is zero");
            J.axis = normalized(J.axis);
        }
        const double ascale = J.type == "hinge" ? angle_scale_ : 1.0;
        const bool has_range = attr(j, "range", c) != nullptr;
        const auto range = nums(j, "range", c, 2, 2, {0, 0});
        const int lim = tristate(j, "limited", c, -1);
        J.limited = lim == 1 || (lim == -1 && autolimits_ && has_range);
        if (lim == 1 && !has_range) fail(j, who(j) + ": limited=\"true\" needs a range");
        if (J.limited && J.type != "ball" && !(range[0] < range[1]))
            fail(attr_source(j, "range", c), who(j) + ": range [" + fmt(range[0]) + ", " + fmt(range[1]) + "]: the lower bound must be below the upper");
        if (J.type == "ball") {
            if (J.limited && range[0] != 0)  // MuJoCo's rule: a ball's range is (0, largest angle)
                fail(attr_source(j, "range", c), who(j) + ": range [" + fmt(range[0]) + ", " + fmt(range[1]) +
                                                     "] on a ball joint: the first value must be 0 (the second is the largest angle)");
            J.lower = 0, J.upper = range[1] * angle_scale_;
        } else {
            J.lower = range[0] * ascale, J.upper = range[1] * ascale;
        }
        J.ref = num(j, "ref", c, 0) * ascale;
        J.springref = num(j, "springref", c, 0) * ascale;
        J.stiffness = num(j, "stiffness", c, 0);
        J.damping = num(j, "damping", c, 0);
        J.armature = num(j, "armature", c, 0);
        J.frictionloss = num(j, "frictionloss", c, 0);
        for (double* v : {&J.stiffness, &J.damping, &J.armature, &J.frictionloss})
            if (*v < 0) fail(j, who(j) + ": stiffness, damping, armature and frictionloss must be non-negative, got " + fmt(*v));
        if ((J.type == "ball" || J.type == "free") && (J.ref != 0 || J.springref != 0))
            fail(j, who(j) + ": ref and springref apply to hinge and slide joints");
        static const std::set<std::string> used = {"name", "class", "type", "pos", "axis", "range", "limited", "ref", "springref",
                                                   "stiffness", "damping", "armature", "frictionloss"};
        for (const tinyxml2::XMLAttribute* at = j->FirstAttribute(); at; at = at->Next())
            if (!used.count(at->Name())) ++joint_attrs_[at->Name()];
        return J;
    }

    void read_inertial(const XMLElement* e, Body& b) {
        b.inertial = true;
        report_attributes(e, {"mass", "pos", "quat", "axisangle", "euler", "xyaxes", "zaxis", "diaginertia", "fullinertia"});
        const std::string wb = "body '" + b.name + "'";
        if (!e->Attribute("mass")) fail(e, wb + ": <inertial> needs attribute 'mass'");
        if (!e->Attribute("pos")) fail(e, wb + ": <inertial> needs attribute 'pos'");
        b.mass = num(e, "mass", -1, 0);
        if (b.mass < 0) fail(e, wb + ": <inertial mass=\"" + fmt(b.mass) + "\">: mass must be non-negative");
        const auto p = nums(e, "pos", -1, 3, 3, {});
        b.com = {p[0], p[1], p[2]};
        const Quat q = orientation(e, -1);
        Mat3 I;
        if (e->Attribute("diaginertia") && e->Attribute("fullinertia"))
            fail(e, wb + ": <inertial> takes diaginertia or fullinertia, not both");
        if (e->Attribute("fullinertia")) {
            const auto v = nums(e, "fullinertia", -1, 6, 6, {});
            const double f[3][3] = {{v[0], v[3], v[4]}, {v[3], v[1], v[5]}, {v[4], v[5], v[2]}};
            for (int i = 0; i < 3; ++i)
                for (int k = 0; k < 3; ++k) I.m[i][k] = f[i][k];
        } else if (e->Attribute("diaginertia")) {
            const auto v = nums(e, "diaginertia", -1, 3, 3, {});
            I = Mat3{};
            for (int i = 0; i < 3; ++i) I.m[i][i] = v[i];
        } else {
            fail(e, wb + ": <inertial> needs diaginertia or fullinertia");
        }
        // MuJoCo's rule: positive-definite principal moments satisfying the triangle inequality.
        const double d0 = I.m[0][0], d1 = I.m[1][1], d2 = I.m[2][2];
        if (d0 < 0 || d1 < 0 || d2 < 0) fail(e, wb + ": <inertial>: the moments of inertia must be non-negative");
        const Mat3 R = rotation(q);
        b.inertia = R * I * transpose(R);
    }

    // The position in qpos order of the hinge or slide joint `name` (element e names it).
    std::size_t joint_number(const XMLElement* e, const char* name, const std::vector<std::pair<int, int>>& joint_list) const {
        for (std::size_t n = 0; n < joint_list.size(); ++n) {
            const Joint& j = bodies_[joint_list[n].first].joints[joint_list[n].second];
            if (j.name != name) continue;
            if (j.type != "hinge" && j.type != "slide")
                fail(e, who(e) + ": joint '" + name + "' is a " + j.type + " joint; only hinge and slide joints can be coupled");
            return n;
        }
        fail(e, who(e) + ": no joint named '" + name + "'");
    }

    // A coupling declared by element e between coordinate dof1 of spec joint j1 (the follower) and dof2 of
    // j2, added to the spec and counted; the caller sets its offset or range.
    CouplingSpec& add_coupling(Spec& spec, const XMLElement* e, const std::string& name, int j1, int dof1, int j2, int dof2,
                               double ratio) {
        CouplingSpec cs;
        cs.name = opt_.prefix + name;
        cs.joint = spec.joints[j1].name;
        cs.dof = dof1;
        cs.leader = spec.joints[j2].name;
        cs.leader_dof = dof2;
        cs.ratio = ratio;
        cs.origin = {file_of(e), e->GetLineNum(), who(e)};
        spec.couplings.push_back(cs);
        ++rep_.couplings;
        return spec.couplings.back();
    }

    // A linear combination Σ coef_i q_i as (qpos number, coef) terms.
    using Terms = std::vector<std::pair<std::size_t, double>>;
    // coef · q_n added to it: summed into q_n's term if it has one.
    static void add_term(Terms& terms, std::size_t n, double coef) {
        for (auto& term : terms)
            if (term.first == n) {
                term.second += coef;
                return;
            }
        terms.push_back({n, coef});
    }
    static void drop_zero_terms(Terms& terms) {
        terms.erase(std::remove_if(terms.begin(), terms.end(), [](const auto& term) { return term.second == 0; }), terms.end());
    }

    // A fixed tendon's length Σ coef_i q_i: a joint listed twice summed, zero coefficients dropped.
    Terms tendon_terms(const XMLElement* t, int cls, const std::vector<std::pair<int, int>>& joint_list) {
        Terms terms;
        for (const XMLElement* c : children(t)) {
            if (std::strcmp(c->Name(), "joint") != 0) fail(c, who(c) + ": a fixed tendon holds <joint> elements");
            if (!c->Attribute("joint")) fail(c, who(c) + ": missing attribute 'joint'");
            const double coef = nums(c, "coef", class_of(c, cls), 1, 1, {})[0];
            add_term(terms, joint_number(c, c->Attribute("joint"), joint_list), coef);
        }
        drop_zero_terms(terms);
        return terms;
    }

    // The joint named by qpos number n (for reports).
    const Joint& joint_at(std::size_t n, const std::vector<std::pair<int, int>>& joint_list) const {
        return bodies_[joint_list[n].first].joints[joint_list[n].second];
    }

    // A linear relation Σ c_i q_i (=, or within [lo, hi] / c_1 after division) over 2 to
    // kMaxCouplingTerms coordinates as a coupling of the first on the others: q_1 = Σ (−c_i/c_1) q_i + …,
    // added with the caller's offset or range; `what` names the relation for the refusals.
    CouplingSpec& add_linear_coupling(Spec& spec, const XMLElement* e, const std::string& name, const Terms& terms,
                                      const std::string& what,
                                      const std::vector<int>& spec_index, const std::vector<int>& spec_dof) {
        if (terms.size() < 2)
            fail(e, who(e) + ": " + what + " over " + std::to_string(terms.size()) +
                        " joint (with a nonzero coefficient) holds or limits that joint alone; not supported (use the joint's range, "
                        "or make its body part of its parent)");
        if (terms.size() > static_cast<std::size_t>(kMaxCouplingTerms))
            fail(e, who(e) + ": " + what + " over " + std::to_string(terms.size()) + " joints; noether's couplings relate at most " +
                        std::to_string(kMaxCouplingTerms) + " coordinates (docs/couplings.md)");
        const std::size_t n1 = terms[0].first, n2 = terms[1].first;
        const double c1 = terms[0].second;
        CouplingSpec& cs = add_coupling(spec, e, name, spec_index[n1], spec_dof[n1], spec_index[n2], spec_dof[n2], -terms[1].second / c1);
        for (std::size_t k = 2; k < terms.size(); ++k)
            cs.more.push_back({spec.joints[spec_index[terms[k].first]].name, spec_dof[terms[k].first], -terms[k].second / c1});
        return cs;
    }

    // The relation of a coupling as the report prints it: "a − r × b − r2 × c" (range) or "a = r × b + …".
    // (`terms`: the relation add_linear_coupling() made it from.)
    std::string coupling_rule(const CouplingSpec& cs, const Terms& terms, const std::vector<std::pair<int, int>>& joint_list,
                              bool range) const {
        std::string out = joint_at(terms[0].first, joint_list).name + (range ? " − " : " = ") + fmt(cs.ratio) + " × " +
                          joint_at(terms[1].first, joint_list).name;
        for (std::size_t k = 0; k < cs.more.size(); ++k)
            out += (range ? " − " : " + ") + fmt(cs.more[k].ratio) + " × " + joint_at(terms[k + 2].first, joint_list).name;
        return out;
    }

    // <fixed> tendon with a range: its length Σ coef_i q_i (of two to four joints) kept within it, as a
    // coupling with a range: q1 + Σ (c_i/c1) q_i within [lo, hi] / c1 (the bounds swapped for c1 < 0).
    void add_tendon_range(Spec& spec, const XMLElement* t, int cls, const std::vector<std::pair<int, int>>& joint_list,
                          const std::vector<int>& spec_index, const std::vector<int>& spec_dof) {
        const auto terms = tendon_terms(t, cls, joint_list);
        const auto r = nums(t, "range", cls, 2, 2, {}, "fixed");
        if (!(r[0] < r[1])) fail(t, who(t) + ": range must satisfy lower < upper, got " + fmt(r[0]) + " " + fmt(r[1]));
        CouplingSpec& cs = add_linear_coupling(spec, t, t->Attribute("name") ? t->Attribute("name") : "tendon line " + std::to_string(t->GetLineNum()),
                                               terms, "a fixed tendon with a range", spec_index, spec_dof);
        const double c1 = terms[0].second;
        cs.range = true;
        cs.lower = (c1 > 0 ? r[0] : r[1]) / c1;
        cs.upper = (c1 > 0 ? r[1] : r[0]) / c1;
        rep_.tendons.push_back({cs.name, "coupling with a range '" + cs.name + "': " + fmt(cs.lower) + " <= " +
                                             coupling_rule(cs, terms, joint_list, true) + " <= " + fmt(cs.upper)});
    }

    // <equality><tendon tendon1 [tendon2] polycoef>: MuJoCo's L1 − L1⁰ = a0 + a1 (L2 − L2⁰) (a0 alone
    // without tendon2), L the fixed tendons' lengths Σ coef_i q_i and L⁰ their values at qpos0 (the
    // joints' refs) — as one linear coupling over the joints of both (two to four).
    void add_tendon_equality(Spec& spec, const XMLElement* e, int cls, const std::vector<const XMLElement*>& tendons,
                             const std::vector<std::pair<int, int>>& joint_list, const std::vector<int>& spec_index,
                             const std::vector<int>& spec_dof) {
        report_attributes(e, {"name", "class", "tendon1", "tendon2", "polycoef", "active", "solref", "solimp"});
        auto find = [&](const char* attr_name) -> const XMLElement* {
            const char* n = e->Attribute(attr_name);
            if (!n) return nullptr;
            for (const XMLElement* ts : tendons)
                for (const XMLElement* t : children(ts))
                    if (t->Attribute("name") && !std::strcmp(t->Attribute("name"), n)) {
                        if (std::strcmp(t->Name(), "fixed") != 0)
                            fail(e, who(e) + ": " + attr_name + " '" + n + "' is a " + t->Name() + " tendon; only fixed tendons can be coupled");
                        return t;
                    }
            fail(e, who(e) + ": " + attr_name + ": no tendon named '" + n + "'");
        };
        const XMLElement* t1 = find("tendon1");
        if (!t1) fail(e, who(e) + ": missing attribute 'tendon1'");
        const XMLElement* t2 = find("tendon2");
        const auto c = nums(e, "polycoef", cls, 5, 5, {0, 1, 0, 0, 0});
        if (c[2] != 0 || c[3] != 0 || c[4] != 0)
            fail(e, who(e) + ": polycoef " + fmt(c[2]) + " " + fmt(c[3]) + " " + fmt(c[4]) +
                        " (the quadratic and higher terms) are not supported: couplings are linear");
        // Σ c_i q_i − a1 Σ d_k q_k = L1⁰ + a0 − a1 L2⁰, over the joints of both tendons.
        auto terms = tendon_terms(t1, class_of(t1, 0), joint_list);
        double rhs = c[0];
        for (const auto& term : terms) rhs += term.second * joint_at(term.first, joint_list).ref;
        if (t2) {
            for (const auto& term : tendon_terms(t2, class_of(t2, 0), joint_list)) {
                rhs -= c[1] * term.second * joint_at(term.first, joint_list).ref;
                add_term(terms, term.first, -(c[1] * term.second));
            }
            drop_zero_terms(terms);
        }
        const std::string name = e->Attribute("name") ? e->Attribute("name") : std::string(e->Attribute("tendon1")) + "/equality";
        if (!opt_.couplings) {
            rep_.ignored.push_back(where(e) + ": " + who(e) + ": tendon equality not enforced, the joints move freely (import setting 'couplings' = false)");
            return;
        }
        CouplingSpec& cs = add_linear_coupling(spec, e, name, terms, "a tendon equality", spec_index, spec_dof);
        for (const XMLElement* t : {t1, t2})
            if (t) tendons_in_equalities_[t->Attribute("name")] = cs.name;
        cs.offset = rhs / terms[0].second;
        rep_.equalities.push_back({e->Attribute("name") ? name : "<tendon> line " + std::to_string(e->GetLineNum()),
                                   "coupling '" + cs.name + "': " + coupling_rule(cs, terms, joint_list, false) +
                                       (cs.offset != 0 ? " + " + fmt(cs.offset) : std::string())});
        if (e->Attribute("solref") || e->Attribute("solimp"))
            rep_.ignored.push_back(where(e) + ": " + who(e) + ": solref/solimp: noether's couplings are exact");
    }

    // <equality><joint joint1 joint2 polycoef>: MuJoCo's y − y0 = a0 + a1 (x − x0) (+ higher terms),
    // y, x the joints' coordinates and y0, x0 their qpos0 (the refs) — as a coupling, y = a1 x +
    // (y0 + a0 − a1 x0), since noether's coordinates of an imported joint equal MuJoCo's qpos.
    void add_joint_equality(Spec& spec, const XMLElement* e, int cls, const std::vector<std::pair<int, int>>& joint_list,
                            const std::vector<int>& spec_index, const std::vector<int>& spec_dof) {
        report_attributes(e, {"name", "class", "joint1", "joint2", "polycoef", "active", "solref", "solimp"});
        const char* j1 = e->Attribute("joint1");
        if (!j1) fail(e, who(e) + ": missing attribute 'joint1'");
        const char* j2 = e->Attribute("joint2");
        if (!j2)
            fail(e, who(e) + ": a joint equality without joint2 holds '" + j1 +
                        "' at a constant; not supported yet (make the joint's body part of its parent instead)");
        const auto c = nums(e, "polycoef", cls, 5, 5, {0, 1, 0, 0, 0});
        if (c[2] != 0 || c[3] != 0 || c[4] != 0)
            fail(e, who(e) + ": polycoef " + fmt(c[2]) + " " + fmt(c[3]) + " " + fmt(c[4]) +
                        " (the quadratic and higher terms) are not supported: couplings are linear");
        if (c[1] == 0) fail(e, who(e) + ": polycoef's a1 = 0 holds '" + j1 + "' at a constant; not supported yet");
        const std::size_t n1 = joint_number(e, j1, joint_list), n2 = joint_number(e, j2, joint_list);
        const Joint& y = bodies_[joint_list[n1].first].joints[joint_list[n1].second];
        const Joint& x = bodies_[joint_list[n2].first].joints[joint_list[n2].second];
        const std::string name = e->Attribute("name") ? e->Attribute("name") : std::string(j1) + "/equality";
        const double offset = y.ref + c[0] - c[1] * x.ref;
        const std::string rule = std::string(j1) + " = " + fmt(c[1]) + " × " + j2 + (offset != 0 ? " + " + fmt(offset) : "");
        if (!opt_.couplings) {
            rep_.ignored.push_back(where(e) + ": " + who(e) + ": " + rule +
                                   " not enforced, the joints move freely (import setting 'couplings' = false)");
            return;
        }
        CouplingSpec& cs = add_coupling(spec, e, name, spec_index[n1], spec_dof[n1], spec_index[n2], spec_dof[n2], c[1]);
        cs.offset = offset;
        rep_.equalities.push_back({e->Attribute("name") ? name : "<joint> line " + std::to_string(e->GetLineNum()),
                                   "coupling '" + cs.name + "': " + rule});
        if (e->Attribute("solref") || e->Attribute("solimp"))
            rep_.ignored.push_back(where(e) + ": " + who(e) + ": solref/solimp: noether's couplings are exact");
    }

    // A mesh geom's mass, centre of mass (geom frame) and inertia about it from its mesh file: the
    // volume integrals of the closed triangle mesh by the divergence theorem (signed tetrahedra from
    // the origin), as MuJoCo computes them (it stores vertices in single precision: its values agree
    // to ~1e-7; assimp reads them in single precision too). The file is found as MuJoCo finds it: absolute, or under meshdir (else assetdir)
    // relative to the model file's directory; read by assimp (OBJ, STL, PLY, ...).
    struct MeshAsset {
        const XMLElement* xml = nullptr;
        std::string file;
        Vec3 scale{1, 1, 1};
    };

    // The path of a mesh asset's file as MuJoCo finds it.
    std::string mesh_path(const MeshAsset& ma) const {
        std::string path = ma.file;
        if (path[0] != '/') {
            const std::string dir = !meshdir_.empty() ? meshdir_ : assetdir_;
            std::string base = main_file_.find('/') != std::string::npos ? main_file_.substr(0, main_file_.rfind('/') + 1) : "";
            if (!dir.empty()) base = dir[0] == '/' ? dir + "/" : base + dir + "/";
            path = base + path;
        }
        return path;
    }

    // The mesh file at `path` read by assimp (triangulated, identical vertices joined), once per
    // import: a body's inertia and its drawing read the same scene. Null, with assimp's reason in
    // `why`, when it cannot be read.
    const aiScene* mesh_scene(const std::string& path, std::string& why) {
        auto it = scenes_.find(path);
        if (it == scenes_.end()) {
            Scene sc;
            sc.scene.reset(aiImportFile(path.c_str(), aiProcess_Triangulate | aiProcess_JoinIdenticalVertices), aiReleaseImport);
            if (!sc.scene) sc.error = aiGetErrorString();
            it = scenes_.emplace(path, std::move(sc)).first;
        }
        if (!it->second.scene) why = "mesh file '" + path + "' cannot be read (" + it->second.error + ")";
        return it->second.scene.get();
    }

    // A mesh geom's triangles for the viewer (scaled, in the geom frame), read once per mesh; null
    // (with the reason in `why`) when the file cannot be read or may not be (sandbox): the caller
    // draws the inertia box instead.
    std::shared_ptr<const MeshData> visual_mesh(const std::string& name, std::string& why) {
        if (const auto it = visual_meshes_.find(name); it != visual_meshes_.end()) {
            why = it->second.why;
            return it->second.mesh;
        }
        const MeshAsset& ma = mesh_assets_.at(name);
        std::shared_ptr<MeshData> md;
        const std::string path = ma.file.empty() ? std::string() : mesh_path(ma);
        if (ma.file.empty()) why = "mesh '" + name + "' has no file (inline vertices are not read)";
        else if (opt_.include_problem) why = opt_.include_problem(path);
        if (why.empty()) {
            if (const aiScene* scene = mesh_scene(path, why)) {
                md = std::make_shared<MeshData>();
                md->source = path;
                for (unsigned k = 0; k < scene->mNumMeshes; ++k) {
                    const aiMesh* mesh = scene->mMeshes[k];
                    const std::uint32_t base = static_cast<std::uint32_t>(md->vertices.size() / 3);
                    for (unsigned v = 0; v < mesh->mNumVertices; ++v) {
                        const aiVector3D& p = mesh->mVertices[v];
                        md->vertices.push_back(static_cast<float>(ma.scale.x * p.x));
                        md->vertices.push_back(static_cast<float>(ma.scale.y * p.y));
                        md->vertices.push_back(static_cast<float>(ma.scale.z * p.z));
                    }
                    for (unsigned f = 0; f < mesh->mNumFaces; ++f) {
                        const aiFace& face = mesh->mFaces[f];
                        if (face.mNumIndices != 3) continue;  // points and lines
                        for (int i = 0; i < 3; ++i) md->triangles.push_back(base + face.mIndices[i]);
                    }
                }
                if (md->triangles.empty()) {
                    why = "mesh file '" + path + "' has no triangles";
                    md.reset();
                }
            }
        }
        visual_meshes_[name] = {md, why};
        return md;
    }

    void mesh_inertia(const Body& b, Geom& g) {
        const MeshAsset& ma = mesh_assets_.at(g.mesh);
        const std::string whom = "body '" + b.name + "': its inertia comes from its geoms, and " + who(g.xml);
        if (ma.file.empty()) fail(ma.xml, whom + ": mesh '" + g.mesh + "' has no file (inline vertices are not read)");
        for (const char* a : {"refpos", "refquat", "vertex", "face"})
            if (ma.xml->Attribute(a)) fail(ma.xml, whom + ": mesh '" + g.mesh + "': attribute '" + a + "' is not supported");
        const std::string path = mesh_path(ma);
        if (opt_.include_problem) {
            const std::string why = opt_.include_problem(path);
            if (!why.empty()) fail(ma.xml, whom + ": mesh file '" + path + "': " + why);
        }
        std::string unreadable;
        const aiScene* scene = mesh_scene(path, unreadable);
        if (!scene) fail(ma.xml, whom + ": " + unreadable);
        // ∫ dV, ∫ x dV, ∫ x xᵀ dV over the signed tetrahedra (0, a, b, c) of every triangle.
        double V = 0, C[3][3] = {};
        Vec3 S;
        std::size_t triangles = 0;
        for (unsigned k = 0; k < scene->mNumMeshes; ++k) {
            const aiMesh* mesh = scene->mMeshes[k];
            for (unsigned f = 0; f < mesh->mNumFaces; ++f) {
                const aiFace& face = mesh->mFaces[f];
                if (face.mNumIndices != 3) continue;  // points and lines
                Vec3 p[3];
                for (int i = 0; i < 3; ++i) {
                    const aiVector3D& v = mesh->mVertices[face.mIndices[i]];
                    p[i] = {ma.scale.x * v.x, ma.scale.y * v.y, ma.scale.z * v.z};
                }
                const double det = dot(p[0], cross(p[1], p[2]));  // 6 × the signed volume
                const Vec3 sum = p[0] + p[1] + p[2];
                V += det / 6;
                S += (det / 24) * sum;
                for (int r = 0; r < 3; ++r)
                    for (int c = 0; c < 3; ++c) {
                        double pp = sum[r] * sum[c];
                        for (int i = 0; i < 3; ++i) pp += p[i][r] * p[i][c];
                        C[r][c] += det / 120 * pp;
                    }
                ++triangles;
            }
        }
        if (triangles == 0 || !(V > 0))
            fail(ma.xml, whom + ": mesh file '" + path + "' encloses no positive volume (" + std::to_string(triangles) +
                             " triangles, volume " + fmt(V) + " m³): a closed mesh with outward faces is needed");
        if (!g.mass_given) g.mass = g.density * V;
        const double rho = g.mass / V;
        g.com = (1.0 / V) * S;
        Mat3 I;  // about the centre of mass: ρ (tr(C') 1 − C'), C' = C − V c cᵀ
        double Cc[3][3];
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) Cc[r][c] = C[r][c] - V * g.com[r] * g.com[c];
        const double tr = Cc[0][0] + Cc[1][1] + Cc[2][2];
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c) I.m[r][c] = rho * ((r == c ? tr : 0.0) - Cc[r][c]);
        g.inertia = I;
        g.has_inertia = true;
    }

    // Read the world body's subtree in depth-first order (MuJoCo's body and joint order),
    // iteratively: a deep file cannot exhaust the stack.
    void read_worldbody(const XMLElement* wb) {
        bodies_.clear();
        Body world;
        world.name = "world";
        world.xml = wb;
        struct Item {
            const XMLElement* xml;
            int parent;
        };
        std::vector<Item> todo{{wb, -1}};
        while (!todo.empty()) {
            const Item it = todo.back();
            todo.pop_back();
            const XMLElement* e = it.xml;
            const int bi = static_cast<int>(bodies_.size());
            if (it.parent < 0) {
                bodies_.push_back(world);
            } else {
                if (bodies_.size() > 100000) fail(e, "more than 100000 bodies");
                Body b;
                b.xml = e;
                b.parent = it.parent;
                b.name = e->Attribute("name") ? e->Attribute("name") : "";
                if (b.name.empty()) b.name = "body" + std::to_string(bodies_.size());
                if (body_id_.count(b.name) || b.name == "world") fail(e, who(e) + ": a body of this name already exists");
                b.childclass = e->Attribute("childclass") ? class_of_name(e, e->Attribute("childclass")) : bodies_[it.parent].childclass;
                const auto p = nums(e, "pos", -1, 3, 3, {0, 0, 0});
                b.local.x = {p[0], p[1], p[2]};
                b.local.q = orientation(e, -1);
                report_attributes(e, {"name", "childclass", "pos", "quat", "axisangle", "euler", "xyaxes", "zaxis", "mocap",
                                      "gravcomp", "user"});
                if (e->Attribute("mocap") && !std::strcmp(e->Attribute("mocap"), "true"))
                    fail(e, who(e) + ": mocap bodies are not supported");
                if (e->Attribute("gravcomp")) fail(e, who(e) + ": gravcomp (gravity compensation) is not supported");
                body_id_[b.name] = bi;
                bodies_.push_back(b);
            }
            const int cls = bodies_[bi].childclass;
            std::vector<Item> kids;
            for (const XMLElement* c : children(e)) {
                const std::string t = c->Name();
                if (t == "body") {
                    kids.push_back({c, bi});
                } else if (t == "joint" || t == "freejoint") {
                    if (bi == 0) fail(c, who(c) + ": the world body cannot have joints");
                    bodies_[bi].joints.push_back(read_joint(c, cls, t == "freejoint"));
                } else if (t == "geom") {
                    read_geom(c, cls, bodies_[bi]);
                } else if (t == "inertial") {
                    if (bi == 0) fail(c, "the world body cannot have an <inertial>");
                    if (bodies_[bi].inertial) fail(c, "body '" + bodies_[bi].name + "': a second <inertial>");
                    read_inertial(c, bodies_[bi]);
                } else if (t == "site") {
                    const int sc = class_of(c, cls);
                    Site st;
                    st.name = c->Attribute("name") ? c->Attribute("name") : "";
                    const auto p = nums(c, "pos", sc, 3, 3, {0, 0, 0});
                    st.pose = {Vec3{p[0], p[1], p[2]}, orientation(c, sc)};
                    if (!st.name.empty()) bodies_[bi].sites.push_back(st);
                } else if (t == "camera" || t == "light") {
                    ++visual_elements_[t];
                } else {
                    note_ignored(c, "not supported");
                }
            }
            for (auto k = kids.rbegin(); k != kids.rend(); ++k) todo.push_back(*k);  // document order
        }
    }
    int class_of_name(const XMLElement* e, const std::string& n) const {
        auto it = class_id_.find(n);
        if (it == class_id_.end()) fail(e, who(e) + ": childclass '" + n + "' is not defined in <default>");
        return it->second;
    }

    const Options& opt_;
    Report& rep_;
    std::string main_file_;
    std::vector<std::unique_ptr<XMLDocument>> docs_;
    std::map<const XMLDocument*, std::string> doc_file_;
    std::map<const XMLElement*, const XMLElement*> included_;
    std::set<std::string> included_files_;
    std::vector<DefaultClass> classes_;
    std::map<std::string, int> class_id_;
    std::set<std::string> meshes_;
    std::map<std::string, MeshAsset> mesh_assets_;
    struct Scene {
        std::shared_ptr<const aiScene> scene;  // released by aiReleaseImport
        std::string error;
    };
    std::map<std::string, Scene> scenes_;  // mesh files read, by path
    struct VisualMesh {
        std::shared_ptr<const MeshData> mesh;  // null: could not be read, for `why`
        std::string why;
    };
    std::map<std::string, VisualMesh> visual_meshes_;  // by mesh asset name
    std::map<std::string, std::string> tendons_in_equalities_;  // fixed tendon → the coupling its equality became
    std::string meshdir_, assetdir_;  // <compiler meshdir assetdir>
    std::map<std::string, std::array<double, 4>> materials_;
    double angle_scale_ = kPi / 180;
    std::string eulerseq_ = "xyz";
    bool autolimits_ = true;
    int inertiafromgeom_ = -1;  // -1: auto
    double settotalmass_ = -1;
    bool contact_disabled_ = false;
    std::map<std::string, int> geom_attrs_, joint_attrs_, visual_elements_;
    std::vector<Body> bodies_;
    std::map<std::string, int> body_id_;

public:
    Report import_into(Spec& spec);
};

// ------------------------------------------------------------------------------------------------

Report Reader::import_into(Spec& spec) {
    const XMLElement* root = load(main_file_, nullptr);
    rep_.file = main_file_;
    rep_.model = root->Attribute("model") ? root->Attribute("model") : "";
    classes_.push_back({"main", -1, {}});
    class_id_["main"] = 0;

    // Sections, in the order MuJoCo needs them: compiler and defaults first.
    const std::vector<const XMLElement*> top = children(root);
    for (const XMLElement* e : top)
        if (!std::strcmp(e->Name(), "compiler")) read_compiler(e);
    for (const XMLElement* e : top)
        if (!std::strcmp(e->Name(), "default")) {
            // The top-level <default> is class main (its class="" may say so).
            const char* c = e->Attribute("class");
            if (c && std::strcmp(c, "main") != 0) fail(e, "<default class='" + std::string(c) + "'> at the top level: it must be main");
            for (const XMLElement* k : children(e)) read_default_child(k, 0);
        }
    for (const XMLElement* e : top)
        if (!std::strcmp(e->Name(), "asset")) read_assets(e);
    for (const XMLElement* e : top)
        if (!std::strcmp(e->Name(), "option")) read_option(e, spec);
    int worldbodies = 0;
    const XMLElement* wb_first = nullptr;
    std::vector<const XMLElement*> wbs, equalities, tendons, actuators, keys, contacts_el;
    for (const XMLElement* e : top) {
        const std::string t = e->Name();
        if (t == "worldbody") wbs.push_back(e), wb_first = wb_first ? wb_first : e, ++worldbodies;
        else if (t == "equality") equalities.push_back(e);
        else if (t == "tendon") tendons.push_back(e);
        else if (t == "actuator") actuators.push_back(e);
        else if (t == "keyframe") keys.push_back(e);
        else if (t == "contact") contacts_el.push_back(e);
        else if (t == "compiler" || t == "default" || t == "asset" || t == "option") continue;
        else if (t == "size" || t == "visual" || t == "statistic") note_ignored(e, "not used (viewer and memory settings)");
        else note_ignored(e, t == "sensor" ? "sensors are not supported yet" : "not supported");
    }
    if (!wb_first) fail(root, "<mujoco>: no <worldbody>");
    // Several <worldbody> sections are one world: read them as one.
    bodies_.clear();
    {
        std::vector<Body> all;
        Body world;
        world.name = "world";
        all.push_back(world);
        std::map<std::string, int> ids;
        for (const XMLElement* wb : wbs) {
            read_worldbody(wb);
            const int base = static_cast<int>(all.size()) - 1;
            for (std::size_t i = 0; i < bodies_.size(); ++i) {
                Body b = bodies_[i];
                if (i == 0) {
                    for (auto& g : b.geoms) all[0].geoms.push_back(g);
                    for (auto& s : b.sites) all[0].sites.push_back(s);
                    continue;
                }
                b.parent = b.parent == 0 ? 0 : b.parent + base;
                if (ids.count(b.name)) fail(b.xml, who(b.xml) + ": a body of this name already exists");
                ids[b.name] = static_cast<int>(all.size());
                all.push_back(b);
            }
        }
        bodies_ = std::move(all);
        body_id_ = std::move(ids);
    }
    for (const auto& [t, n] : visual_elements_)
        rep_.ignored.push_back("<" + t + "> x" + std::to_string(n) + ": not used (viewer only)");
    for (const auto& [a, n] : geom_attrs_)
        rep_.ignored.push_back("<geom " + a + "> x" + std::to_string(n) + ": not used" +
                               (a == "solref" || a == "solimp" || a == "margin" || a == "gap" || a == "priority" || a == "solmix"
                                    ? " (noether's contacts are hard, with Coulomb friction: docs/contact.md)"
                                    : ""));
    for (const auto& [a, n] : joint_attrs_) rep_.ignored.push_back("<joint " + a + "> x" + std::to_string(n) + ": not used");

    const int nb = static_cast<int>(bodies_.size());
    // ---- inertia: from <inertial> or the geoms ------------------------------------------------
    for (int i = 1; i < nb; ++i) {
        Body& b = bodies_[i];
        const bool from_geoms = inertiafromgeom_ == 1 || (inertiafromgeom_ == -1 && !b.inertial);
        if (!from_geoms) continue;
        double m = 0;
        Vec3 c;
        for (Geom& g : b.geoms) {
            if (g.type == "mesh") mesh_inertia(b, g);
            if (g.type == "plane" || g.type == "hfield" || g.type == "sdf") {
                if (g.type == "plane") fail(g.xml, "body '" + b.name + "': a plane geom can only be part of the world body");
                continue;
            }
            m += g.mass;
            c += g.mass * (g.pose.x + rotate(g.pose.q, g.com));
        }
        b.inertial = true;
        b.mass = m;
        b.com = m > 0 ? c / m : Vec3{};
        Mat3 I;
        for (const Geom& g : b.geoms) {
            if (!g.has_inertia) continue;
            const Mat3 R = rotation(g.pose.q);
            const Vec3 d = g.pose.x + rotate(g.pose.q, g.com) - b.com;
            I = I + R * g.inertia * transpose(R) + g.mass * (dot(d, d) * Mat3::identity() - outer(d, d));
        }
        b.inertia = I;
    }
    if (settotalmass_ > 0) {
        double total = 0;
        for (int i = 1; i < nb; ++i) total += bodies_[i].mass;
        if (!(total > 0)) fail(root, "<compiler settotalmass>: the bodies have no mass to scale");
        const double s = settotalmass_ / total;
        for (int i = 1; i < nb; ++i) bodies_[i].mass *= s, bodies_[i].inertia = s * bodies_[i].inertia;
    }
    for (int i = 1; i < nb; ++i) rep_.file_mass += bodies_[i].mass;

    // ---- joints: kinds, coordinate addresses ----------------------------------------------------
    std::vector<std::pair<int, int>> joint_list;  // (body, joint within body) in qpos order
    std::map<std::string, std::pair<int, int>> joint_id;
    for (int i = 1; i < nb; ++i) {
        Body& b = bodies_[i];
        // Unnamed joints are named after their body: "<body>/<type>", or "<body>/joint<k>" in a body
        // with several joints.
        for (std::size_t k = 0; k < b.joints.size(); ++k)
            if (b.joints[k].name.empty())
                b.joints[k].name = b.joints.size() > 1 ? b.name + "/joint" + std::to_string(k + 1) : b.name + "/" + b.joints[k].type;
        if (b.joints.size() > 1) {
            // A compound joint (plugins/joints/compound.cpp): 2 or 3 hinges through one point, or
            // one or two slides then one hinge; other stacks are refused here, naming them.
            std::string names;
            for (const Joint& j : b.joints) names += (names.empty() ? "" : ", ") + (j.name.empty() ? j.type : j.name);
            const std::string who_b = "body '" + b.name + "' has " + std::to_string(b.joints.size()) + " joints (" + names + ")";
            int slides = 0, hinges = 0;
            for (const Joint& j : b.joints) {
                if (j.type == "ball" || j.type == "free")
                    fail(j.xml, who_b + ": a " + j.type + " joint cannot share a body with other joints here");
                (j.type == "slide" ? slides : hinges) += 1;
            }
            if (b.joints.size() > 3) fail(b.joints[3].xml, who_b + ": at most three joints per body are supported");
            if (slides == 0) {
                if (b.joints.size() == 3)
                    for (const Joint& j : b.joints)
                        if (norm(j.pos - b.joints[0].pos) > 1e-9)
                            fail(j.xml, who_b + ": three hinges in one body are supported through one point; '" + j.name +
                                            "' is at a different pos");
            } else if (!(hinges == 1 && b.joints.back().type == "hinge")) {
                fail(b.joints[0].xml, who_b + ": this stack is not supported (take hinges through one point, or one or two "
                                              "slides followed by one hinge)");
            }
        }
        for (std::size_t k = 0; k < b.joints.size(); ++k) {
            Joint& j = b.joints[k];
            if (j.type == "free" && b.parent != 0)
                fail(j.xml, who(j.xml) + ": a free joint is allowed only in a body that hangs from the world (body '" + b.name + "')");
            j.qadr = rep_.nq;
            j.dadr = rep_.nv;
            rep_.nq += j.type == "free" ? 7 : j.type == "ball" ? 4 : 1;
            rep_.nv += j.type == "free" ? 6 : j.type == "ball" ? 3 : 1;
            if (!j.name.empty()) {
                if (joint_id.count(j.name)) fail(j.xml, who(j.xml) + ": a joint of this name already exists");
                joint_id[j.name] = {i, static_cast<int>(k)};
            }
            joint_list.push_back({i, static_cast<int>(k)});
            if (j.armature > 0 && !opt_.drop_armature && (j.type == "ball" || j.type == "free"))
                fail(j.xml, who(j.xml) + ": armature " + fmt(j.armature) + " on a " + j.type +
                                " joint: armature is modelled on hinge and slide joints only; import setting 'drop_armature' = "
                                "true imports the model without any");
        }
    }
    {
        std::string dropped;
        int n = 0;
        for (const auto& [bi, k] : joint_list) {
            const Joint& j = bodies_[bi].joints[k];
            if (j.armature > 0) dropped += (n++ < 6 ? std::string(n > 1 ? ", " : "") + (j.name.empty() ? "?" : j.name) + " " + fmt(j.armature) : "");
        }
        if (n > 0 && opt_.drop_armature)
            rep_.warnings.push_back("armature left out (import setting 'drop_armature' = true) on " + std::to_string(n) +
                                    " joint" + (n > 1 ? "s" : "") + ": " + dropped + (n > 6 ? ", ..." : "") +
                                    "; the dynamics differ from MuJoCo's by that rotor inertia (kept, it is integrated by vi-maximal and "
                                    "vi-midpoint only)");
        int nf = 0;
        for (const auto& [bi, k] : joint_list) nf += bodies_[bi].joints[k].frictionloss > 0 ? 1 : 0;
        if (nf > 0)
            rep_.ignored.push_back("<joint frictionloss> on " + std::to_string(nf) + " joint" + (nf > 1 ? "s" : "") +
                                   ": dry joint friction is not modelled");
    }

    // ---- keyframe -------------------------------------------------------------------------------
    std::vector<double> qpos(rep_.nq, 0.0), qvel(rep_.nv, 0.0);
    std::vector<double> key_ctrl;
    for (const auto& [bi, k] : joint_list) {  // qpos0
        const Joint& j = bodies_[bi].joints[k];
        if (j.type == "hinge" || j.type == "slide") qpos[j.qadr] = j.ref;
        else if (j.type == "ball") qpos[j.qadr] = 1;
        else {  // free: the body's pose as written (it hangs from the world)
            const Pose& p = bodies_[bi].local;
            const double v[7] = {p.x.x, p.x.y, p.x.z, p.q.w, p.q.x, p.q.y, p.q.z};
            for (int i = 0; i < 7; ++i) qpos[j.qadr + i] = v[i];
        }
    }
    const std::vector<double> qpos0 = qpos;
    {
        int index = 0;
        const XMLElement* chosen = nullptr;
        for (const XMLElement* ks : keys)
            for (const XMLElement* k : children(ks)) {
                if (std::strcmp(k->Name(), "key") != 0) {
                    note_ignored(k, "not used");
                    continue;
                }
                const std::string name = k->Attribute("name") ? k->Attribute("name") : "#" + std::to_string(index);
                rep_.keyframes.push_back(name);
                if (!opt_.keyframe.empty() && (opt_.keyframe == name || opt_.keyframe == "#" + std::to_string(index))) chosen = k;
                ++index;
            }
        if (!opt_.keyframe.empty() && !chosen) {
            std::string names;
            for (const std::string& n : rep_.keyframes) names += (names.empty() ? "" : ", ") + n;
            fail(root, "keyframe '" + opt_.keyframe + "': the file has no such <key> (it has: " + (names.empty() ? "none" : names) + ")");
        }
        if (chosen) {
            rep_.keyframe = opt_.keyframe;
            report_attributes(chosen, {"name", "qpos", "qvel", "ctrl", "time"});
            if (chosen->Attribute("qpos")) {
                const auto v = nums(chosen, "qpos", -1, rep_.nq, rep_.nq, {});
                qpos = v;
            }
            if (chosen->Attribute("qvel")) qvel = nums(chosen, "qvel", -1, rep_.nv, rep_.nv, {});
            if (chosen->Attribute("ctrl")) key_ctrl = nums(chosen, "ctrl", -1, 0, 100000, {});
        }
    }

    // ---- poses at qpos0 (joint frames) and at the start (bodies) ----------------------------------
    std::vector<Pose> T0(nb), T(nb);
    std::vector<Vec3> V(nb), W(nb);  // world velocity of each body frame origin, angular velocity
    // Clamp starts that lie outside enforced limits (as the URDF importer does), with a warning.
    if (opt_.limits)
        for (const auto& [bi, k] : joint_list) {
            const Joint& j = bodies_[bi].joints[k];
            if (!j.limited || (j.type != "hinge" && j.type != "slide")) continue;
            double& q = qpos[j.qadr];
            if (q >= j.lower && q <= j.upper) continue;
            const double start = q < j.lower ? j.lower : j.upper;
            rep_.warnings.push_back("joint '" + j.name + "': its start " + fmt(q) + (rep_.keyframe.empty() ? " (qpos0)" : " (keyframe)") +
                                    " is outside its range [" + fmt(j.lower) + ", " + fmt(j.upper) + "]: it starts at " + fmt(start) +
                                    (rep_.keyframe.empty() && !rep_.keyframes.empty() ? " (choose a keyframe, import setting 'keyframe' = " +
                                                                                               rep_.keyframes[0] + ")" : ""));
            q = start;
        }
    auto place = [&](int i, const std::vector<double>& q, std::vector<Pose>& P, bool velocities) {
        const Body& b = bodies_[i];
        const Pose& pp = P[b.parent];
        Pose f = compose(pp, b.local);
        Vec3 axis_w[3], anchor_w[3];  // each joint's world axis and anchor when it acts (fixed by its own motion)
        int jn = 0;
        for (const Joint& j : b.joints) {  // in order, each about the frame the previous ones moved
            const int ji = jn++;
            axis_w[ji] = rotate(f.q, j.axis);
            anchor_w[ji] = f.x + rotate(f.q, j.pos);
            if (j.type == "free") {
                f.x = {q[j.qadr], q[j.qadr + 1], q[j.qadr + 2]};
                const Quat qq{q[j.qadr + 3], q[j.qadr + 4], q[j.qadr + 5], q[j.qadr + 6]};
                if (!(qnorm(qq) > 1e-14)) fail(b.xml, "body '" + b.name + "': its free joint's quaternion in the keyframe is zero");
                f.q = qnormalized(qq);
                continue;
            }
            const Vec3 anchor = f.x + rotate(f.q, j.pos);
            if (j.type == "ball") {
                const Quat qq{q[j.qadr], q[j.qadr + 1], q[j.qadr + 2], q[j.qadr + 3]};
                if (!(qnorm(qq) > 1e-14)) fail(j.xml, who(j.xml) + ": its quaternion in the keyframe is zero");
                f.q = f.q * qnormalized(qq);
            } else if (j.type == "hinge") {
                f.q = f.q * quat_from_axis_angle(j.axis, q[j.qadr] - j.ref);
            } else {
                f.x = f.x + (q[j.qadr] - j.ref) * rotate(f.q, j.axis);
            }
            if (j.type != "slide") f.x = anchor - rotate(f.q, j.pos);  // a rotation keeps the joint's anchor in place
        }
        P[i] = f;
        if (!velocities) return;
        // The velocity of the body frame's origin and the angular velocity, from the parent's and the joint rates.
        Vec3 w = W[b.parent], v = V[b.parent] + cross(W[b.parent], f.x - pp.x);
        jn = 0;
        for (const Joint& j : b.joints) {
            const int ji = jn++;
            const double* r = qvel.data() + j.dadr;
            if (j.type == "free") {
                v = {r[0], r[1], r[2]};
                w = rotate(f.q, Vec3{r[3], r[4], r[5]});  // MuJoCo: the angular part in the body frame
                continue;
            }
            if (j.type == "slide") {
                v = v + r[0] * axis_w[ji];
                continue;
            }
            const Vec3 dw = j.type == "ball" ? rotate(f.q, Vec3{r[0], r[1], r[2]}) : r[0] * axis_w[ji];
            v = v + cross(dw, f.x - anchor_w[ji]);
            w = w + dw;
        }
        V[i] = v, W[i] = w;
    };
    for (int i = 1; i < nb; ++i) place(i, qpos0, T0, false);
    for (int i = 1; i < nb; ++i) place(i, qpos, T, true);

    // ---- groups ---------------------------------------------------------------------------------
    const int WORLD = -1;
    std::vector<int> group(nb, WORLD), group_top;
    for (int i = 1; i < nb; ++i) {
        if (bodies_[i].joints.empty()) group[i] = group[bodies_[i].parent];
        else group[i] = static_cast<int>(group_top.size()), group_top.push_back(i);
    }
    const int ng = static_cast<int>(group_top.size());
    struct G {
        double mass = 0;
        Vec3 com, com0;
        Quat q, q0;
        Mat3 inertia;
    };
    std::vector<G> groups(ng);
    for (int gi = 0; gi < ng; ++gi) {
        G& g = groups[gi];
        const int top = group_top[gi];
        g.q = T[top].q, g.q0 = T0[top].q;
        Vec3 c, c0;
        for (int i = 1; i < nb; ++i)
            if (group[i] == gi) {
                g.mass += bodies_[i].mass;
                c += bodies_[i].mass * (T[i].x + rotate(T[i].q, bodies_[i].com));
                c0 += bodies_[i].mass * (T0[i].x + rotate(T0[i].q, bodies_[i].com));
            }
        if (!(g.mass > 0))
            fail(bodies_[top].xml, "body '" + bodies_[top].name + "' moves (joint " +
                                       (bodies_[top].joints[0].name.empty() ? bodies_[top].joints[0].type : "'" + bodies_[top].joints[0].name + "'") +
                                       ") but has no mass (with the bodies welded to it): MuJoCo refuses it too");
        g.com = c / g.mass, g.com0 = c0 / g.mass;
        Mat3 Iw;
        for (int i = 1; i < nb; ++i) {
            if (group[i] != gi) continue;
            const Mat3 R = rotation(T[i].q);
            const Vec3 d = T[i].x + rotate(T[i].q, bodies_[i].com) - g.com;
            Iw = Iw + R * bodies_[i].inertia * transpose(R) + bodies_[i].mass * (dot(d, d) * Mat3::identity() - outer(d, d));
        }
        const Mat3 Rb = rotation(g.q);
        g.inertia = transpose(Rb) * Iw * Rb;
        const double tr = g.inertia.m[0][0] + g.inertia.m[1][1] + g.inertia.m[2][2];
        if (!(tr > 0) && bodies_[top].joints[0].type != "slide")
            fail(bodies_[top].xml, "body '" + bodies_[top].name + "' rotates but has no rotational inertia (with the bodies welded to it)");
        if (!(tr > 0)) {  // a point mass on a slide: a maximal-coordinate body needs some inertia
            const double tiny = 1e-9 * g.mass;
            g.inertia = tiny * Mat3::identity();
            rep_.warnings.push_back("body '" + bodies_[top].name + "': a point mass on a slide joint; given rotational inertia " +
                                    fmt(tiny) + " kg m^2 so its rotation block is not singular");
        }
    }
    for (int i = 1; i < nb; ++i)
        if (group[i] == WORLD) rep_.world_mass += bodies_[i].mass;

    // ---- emit bodies ----------------------------------------------------------------------------
    const std::string& pre = opt_.prefix;
    const std::size_t first_body = spec.bodies.size();
    std::vector<std::string> gname(ng);
    for (int gi = 0; gi < ng; ++gi) {
        const G& g = groups[gi];
        const Body& top = bodies_[group_top[gi]];
        BodySpec b;
        b.name = gname[gi] = pre + top.name;
        b.mass = g.mass;
        b.inertia = g.inertia;
        b.position = g.com;
        b.orientation = g.q;
        const Pose bp{g.com, g.q};
        // The viewer's shapes: the visible primitives (group 0-2, as MuJoCo's viewer shows).
        for (int i = 1; i < nb; ++i) {
            if (group[i] != gi) continue;
            bool drawn = false;
            for (const Geom& ge : bodies_[i].geoms) {
                if (ge.group > 2) continue;
                Shape s;
                if (ge.type == "sphere") s.type = Shape::Type::sphere, s.size = {ge.size.x, 0, 0};
                else if (ge.type == "capsule") s.type = Shape::Type::capsule, s.size = {ge.size.x, 2 * ge.size.y, 0};
                else if (ge.type == "cylinder") s.type = Shape::Type::cylinder, s.size = {ge.size.x, 2 * ge.size.y, 0};
                else if (ge.type == "box" || ge.type == "ellipsoid") s.type = Shape::Type::box, s.size = 2.0 * ge.size;
                else if (ge.type == "mesh" && opt_.visual_meshes && mesh_assets_.count(ge.mesh)) {
                    std::string why;
                    s.mesh = visual_mesh(ge.mesh, why);
                    if (!s.mesh) {
                        rep_.ignored.push_back(where(ge.xml) + ": " + who(ge.xml) + ": not drawn (" + why + "); its body's inertia box is");
                        continue;
                    }
                    s.type = Shape::Type::mesh;
                    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
                    for (std::size_t k = 0; k < s.mesh->vertices.size(); ++k)
                        lo[k % 3] = std::min(lo[k % 3], s.mesh->vertices[k]), hi[k % 3] = std::max(hi[k % 3], s.mesh->vertices[k]);
                    s.size = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
                    ++rep_.meshes_drawn;
                    rep_.mesh_triangles += static_cast<int>(s.mesh->triangles.size() / 3);
                } else continue;
                for (int k = 0; k < 4; ++k) s.rgba[k] = ge.rgba[k];
                s.pose = relative_pose(bp, compose(T[i], ge.pose));
                b.shapes.push_back(s);
                drawn = true;
            }
            if (!drawn && bodies_[i].mass > 0) {  // its inertia box, as the URDF importer draws mesh-only links
                const Mat3& I = bodies_[i].inertia;
                const double m = bodies_[i].mass;
                const double a = std::sqrt(std::max(0.0, 6 * (I.m[1][1] + I.m[2][2] - I.m[0][0]) / m));
                const double bb = std::sqrt(std::max(0.0, 6 * (I.m[0][0] + I.m[2][2] - I.m[1][1]) / m));
                const double cc = std::sqrt(std::max(0.0, 6 * (I.m[0][0] + I.m[1][1] - I.m[2][2]) / m));
                Shape s;
                s.size = {std::max(a, 1e-3), std::max(bb, 1e-3), std::max(cc, 1e-3)};
                s.pose = relative_pose(bp, {T[i].x + rotate(T[i].q, bodies_[i].com), T[i].q});
                b.shapes.push_back(s);
            }
        }
        b.origin = {file_of(top.xml), top.xml->GetLineNum(), "<body name='" + top.name + "'>"};
        const Vec3 r = g.com - T[group_top[gi]].x;
        b.velocity = V[group_top[gi]] + cross(W[group_top[gi]], r);
        b.angular_velocity = W[group_top[gi]];
        spec.bodies.push_back(b);
        rep_.bodies.push_back(b.name);
        rep_.imported_mass += g.mass;
    }
    auto gpose0 = [&](int gi) { return gi < 0 ? Pose{} : Pose{groups[gi].com0, groups[gi].q0}; };
    auto gname_of = [&](int gi) { return gi < 0 ? std::string("world") : gname[gi]; };
    for (int i = 0; i < nb; ++i) {
        const Body& b = bodies_[i];
        const int gi = i == 0 ? WORLD : group[i];
        const Pose bp = gi < 0 ? Pose{} : Pose{groups[gi].com, groups[gi].q};
        if (i > 0) rep_.frames[pre + b.name] = {gname_of(gi), relative_pose(bp, T[i])};
        for (const Site& s : b.sites) rep_.frames[pre + s.name] = {gname_of(gi), relative_pose(bp, compose(T[i], s.pose))};
        if (i == 0) continue;
        std::string what = gi < 0 ? "welded to the world"
                           : group_top[gi] == i ? "body '" + gname[gi] + "'"
                                                : "merged into body '" + gname[gi] + "' (no joint; kept as a frame)";
        rep_.bodies_in.push_back({b.name, what + ", mass " + fmt(b.mass) + " kg"});
    }

    // ---- emit joints ----------------------------------------------------------------------------
    const std::size_t first_joint = spec.joints.size();
    std::vector<int> joint_spec_index(joint_list.size(), -1), joint_spec_dof(joint_list.size(), 0);
    // A joint of body bi to its parent's group at `point` (bi's frame), in body style with the
    // joint frames at the qpos0 pose (aligned frames = zero coordinates).
    auto attach = [&](JointSpec& js, int bi, const Vec3& point) {
        const int gp = group[bodies_[bi].parent], gc = group[bi];
        const Pose BP = gpose0(gp), BC = gpose0(gc);
        const Vec3 anchor = T0[bi].x + rotate(T0[bi].q, point);
        js.parent = gname_of(gp);
        js.child = gname[gc];
        js.parent_anchor = rotate_inv(BP.q, anchor - BP.x);
        js.child_anchor = rotate_inv(BC.q, anchor - BC.x);
        js.parent_frame = conj(BP.q) * T0[bi].q;
        js.child_frame = conj(BC.q) * T0[bi].q;
    };
    for (std::size_t n = 0; n < joint_list.size(); ++n) {
        const auto [bi, k] = joint_list[n];
        const Body& b = bodies_[bi];
        const Joint& j = b.joints[k];
        const std::string& jname = j.name;  // (unnamed joints were named after their body)
        if (b.joints.size() > 1) {  // the body's joints become one compound joint, emitted with the first
            if (k > 0) continue;
            const Pose BC = gpose0(group[bi]);
            JointSpec js;
            std::string names;
            for (const Joint& jj : b.joints) names += (names.empty() ? "" : "+") + jj.name;
            js.name = pre + names;
            js.type = "compound";
            attach(js, bi, b.joints.back().pos);  // the hinges' common point, or the hinge after the slides
            std::vector<double> kinds, axes, points;
            bool any_stiff = false, any_damp = false, any_arm = false, any_limit = false;
            for (std::size_t i = 0; i < b.joints.size(); ++i) {
                const Joint& jj = b.joints[i];
                kinds.push_back(jj.type == "slide" ? 1 : 0);
                const Vec3 ac = rotate_inv(BC.q, rotate(T0[bi].q, jj.axis));  // the child body's frame
                axes.insert(axes.end(), {ac.x, ac.y, ac.z});
                const Vec3 pc = rotate_inv(BC.q, rotate(T0[bi].q, jj.pos));  // directions only: differences matter
                points.insert(points.end(), {pc.x, pc.y, pc.z});
                js.offset.push_back(jj.ref);
                js.stiffness.push_back(jj.stiffness);
                js.rest.push_back(jj.springref);
                js.damping.push_back(jj.damping);
                js.armature.push_back(opt_.drop_armature ? 0.0 : jj.armature);
                any_stiff |= jj.stiffness > 0, any_damp |= jj.damping > 0, any_arm |= jj.armature > 0 && !opt_.drop_armature;
                joint_spec_index[n + i] = static_cast<int>(spec.joints.size());
                joint_spec_dof[n + i] = static_cast<int>(i);
                js.lower.push_back(jj.limited ? jj.lower : -HUGE_VAL);  // a coordinate's range as its limit
                js.upper.push_back(jj.limited ? jj.upper : HUGE_VAL);
                any_limit |= jj.limited;
                rep_.joints_in.push_back({jj.name,
                                          jj.type + " -> coordinate " + std::to_string(i + 1) + " of compound joint '" + js.name +
                                              "' (" + js.parent + " -> " + js.child + ")" + (jj.ref != 0 ? ", ref " + fmt(jj.ref) : "") +
                                              (jj.armature > 0 && !opt_.drop_armature ? ", armature " + fmt(jj.armature) : "")});
            }
            if (!any_stiff) js.stiffness.clear(), js.rest.clear();
            if (!any_damp) js.damping.clear();
            if (!any_arm) js.armature.clear();
            if (any_limit) {
                js.limited = opt_.limits;
                rep_.limits_enforced += opt_.limits ? 1 : 0;
            } else {
                js.lower.clear(), js.upper.clear();
            }
            js.params["kinds"] = kinds;
            js.params["axes"] = axes;
            js.params["points"] = points;
            js.origin = {file_of(j.xml), j.xml->GetLineNum(), "<body name='" + b.name + "'> joints " + names};
            spec.joints.push_back(js);
            rep_.joint_names.push_back(js.name);
            continue;
        }
        if (j.type == "free") {
            rep_.joints_in.push_back({jname, "free: body '" + gname[group[bi]] + "' floats"});
            continue;
        }
        const Pose BP = gpose0(group[b.parent]);
        JointSpec js;
        js.name = pre + jname;
        js.type = j.type == "hinge" ? "revolute" : j.type == "slide" ? "prismatic" : "spherical";
        attach(js, bi, j.pos);
        if (j.type != "ball") {
            js.parent_axis = rotate_inv(BP.q, rotate(T0[bi].q, j.axis));
            js.offset = {j.ref};
            if (j.armature > 0 && !opt_.drop_armature) js.armature = {j.armature};
            if (j.stiffness > 0) js.stiffness = {j.stiffness}, js.rest = {j.springref};
            if (j.damping > 0) js.damping = {j.damping};
            if (j.limited) {
                js.lower = {j.lower};
                js.upper = {j.upper};
                js.limited = opt_.limits;
                rep_.limits_enforced += opt_.limits ? 1 : 0;
            }
        } else {
            if (j.stiffness > 0 || j.damping > 0) {
                if (j.stiffness > 0) fail(j.xml, who(j.xml) + ": stiffness on a ball joint is not supported");
                js.damping = {j.damping};
            }
            if (j.limited) rep_.ignored.push_back(where(j.xml) + ": " + who(j.xml) + ": the ball joint's cone limit " + fmt(j.upper) +
                                                  " rad is not enforced (limits apply to hinge and slide joints)");
        }
        js.origin = {file_of(j.xml), j.xml->GetLineNum(), who(j.xml)};
        joint_spec_index[n] = static_cast<int>(spec.joints.size());
        spec.joints.push_back(js);
        rep_.joint_names.push_back(js.name);
        rep_.joints_in.push_back({jname, j.type + " -> " + js.type + " '" + js.name + "' (" + js.parent + " -> " + js.child + ")" +
                                             (j.ref != 0 ? ", ref " + fmt(j.ref) : "") +
                                             (!js.armature.empty() ? ", armature " + fmt(js.armature[0]) : "")});
    }

    // ---- equalities -----------------------------------------------------------------------------
    for (const XMLElement* es : equalities)
        for (const XMLElement* e : children(es)) {
            const std::string t = e->Name();
            const std::string name = e->Attribute("name") ? e->Attribute("name") : "<" + t + "> line " + std::to_string(e->GetLineNum());
            const int cls = class_of(e, 0);
            if (const char* a = attr(e, "active", cls, t.c_str()))
                if (!std::strcmp(a, "false")) {
                    rep_.equalities.push_back({name, "inactive (active=\"false\"): not added"});
                    continue;
                }
            if (t == "tendon") {
                add_tendon_equality(spec, e, cls, tendons, joint_list, joint_spec_index, joint_spec_dof);
                continue;
            }
            if (t == "joint") {
                add_joint_equality(spec, e, cls, joint_list, joint_spec_index, joint_spec_dof);
                continue;
            }
            if (t != "connect" && t != "weld") fail(e, who(e) + ": <" + t + "> equalities are not supported");
            report_attributes(e, {"name", "class", "body1", "body2", "anchor", "active", "solref", "solimp", "relpose"});
            const char* b1 = e->Attribute("body1");
            if (!b1) fail(e, who(e) + ": missing attribute 'body1'");
            const std::string n1 = b1, n2 = e->Attribute("body2") ? e->Attribute("body2") : "world";
            auto body_index = [&](const std::string& n) {
                if (n == "world") return 0;
                auto it = body_id_.find(n);
                if (it == body_id_.end()) fail(e, who(e) + ": no body named '" + n + "'");
                return it->second;
            };
            const int i1 = body_index(n1), i2 = body_index(n2);
            const int g1 = i1 == 0 ? WORLD : group[i1], g2 = i2 == 0 ? WORLD : group[i2];
            if (g1 == g2) fail(e, who(e) + ": bodies '" + n1 + "' and '" + n2 + "' are welded together (one rigid body)");
            Pose F;  // the closure's frame in the world at qpos0
            if (t == "connect") {
                const auto a = nums(e, "anchor", -1, 3, 3, {});
                F = {T0[i1].x + rotate(T0[i1].q, Vec3{a[0], a[1], a[2]}), Quat{}};
            } else {
                if (e->Attribute("relpose") || e->Attribute("anchor"))
                    fail(e, who(e) + ": a weld with relpose or anchor is not supported yet (a weld holding the qpos0 pose is)");
                F = T0[i1];
            }
            int gp = g1, gc = g2;
            if (gc == WORLD) std::swap(gp, gc);
            const Pose BP = gpose0(gp), BC = gpose0(gc);
            JointSpec js;
            js.name = pre + (e->Attribute("name") ? e->Attribute("name") : n1 + "/" + t + "/" + n2);
            js.type = t == "connect" ? "spherical" : "fixed";
            js.parent = gname_of(gp);
            js.child = gname_of(gc);
            js.parent_anchor = rotate_inv(BP.q, F.x - BP.x);
            js.child_anchor = rotate_inv(BC.q, F.x - BC.x);
            js.parent_frame = conj(BP.q) * F.q;
            js.child_frame = conj(BC.q) * F.q;
            js.origin = {file_of(e), e->GetLineNum(), who(e)};
            spec.joints.push_back(js);
            rep_.joint_names.push_back(js.name);
            ++rep_.loop_joints;
            rep_.equalities.push_back({name, "loop closure, " + js.type + " '" + js.name + "' (" + js.parent + " -> " + js.child + ")"});
            if (e->Attribute("solref") || e->Attribute("solimp"))
                rep_.ignored.push_back(where(e) + ": " + who(e) + ": solref/solimp: noether's closures are exact");
        }

    // ---- tendons --------------------------------------------------------------------------------
    std::set<std::string> tendon_names;
    for (const XMLElement* ts : tendons)
        for (const XMLElement* t : children(ts)) {
            const std::string tag = t->Name();
            const int cls = class_of(t, 0);
            const std::string name = t->Attribute("name") ? t->Attribute("name") : "";
            if (tag == "spatial") fail(t, who(t) + ": spatial tendons are not supported");
            if (tag != "fixed") {
                note_ignored(t, "not supported");
                continue;
            }
            const bool has_range = attr(t, "range", cls, "fixed") != nullptr;
            const int lim = tristate(t, "limited", cls, -1, "fixed");
            const bool limited = lim == 1 || (lim == -1 && autolimits_ && has_range);
            if (limited && opt_.limits) {
                if (num(t, "stiffness", cls, 0, "fixed") > 0 || num(t, "damping", cls, 0, "fixed") > 0)
                    fail(t, who(t) + ": a fixed tendon with stiffness or damping is not supported yet");
                add_tendon_range(spec, t, cls, joint_list, joint_spec_index, joint_spec_dof);
                continue;
            }
            if (limited) {
                rep_.warnings.push_back(who(t) + " (line " + std::to_string(t->GetLineNum()) +
                                        "): its range is not enforced (import setting 'limits' = false)");
                continue;
            }
            if (num(t, "stiffness", cls, 0, "fixed") > 0 || num(t, "damping", cls, 0, "fixed") > 0)
                fail(t, who(t) + ": a fixed tendon with stiffness or damping is not supported yet");
            tendon_names.insert(name);
            if (const auto used = tendons_in_equalities_.find(name); used != tendons_in_equalities_.end()) {
                rep_.tendons.push_back({name, "its length enters the coupling '" + used->second + "' (a tendon equality)"});
                continue;
            }
            rep_.ignored.push_back(where(t) + ": " + who(t) + ": a fixed tendon without limit, spring or damper: no force of its own "
                                                             "(actuators on it are reported)");
        }

    // ---- actuators ------------------------------------------------------------------------------
    int ctrl_index = 0;
    for (const XMLElement* as : actuators)
        for (const XMLElement* a : children(as)) {
            const std::string tag = a->Name();
            const int cls = class_of(a, 0);
            const std::string name = a->Attribute("name") ? a->Attribute("name") : "<" + tag + "> line " + std::to_string(a->GetLineNum());
            const double ctrl = ctrl_index < static_cast<int>(key_ctrl.size()) ? key_ctrl[ctrl_index] : 0.0;
            ++ctrl_index;
            const char* jn = attr(a, "joint", cls, tag.c_str());
            if (!jn) {
                rep_.actuators.push_back({name, "not mapped: only joint transmissions are (this one acts on a " +
                                                    std::string(attr(a, "tendon", cls, tag.c_str()) ? "tendon" : "site or body") + ")"});
                continue;
            }
            auto jt = joint_id.find(jn);
            if (jt == joint_id.end()) fail(a, who(a) + ": no joint named '" + std::string(jn) + "'");
            const auto [bi, k] = jt->second;
            const Joint& j = bodies_[bi].joints[k];
            const double gear = nums(a, "gear", cls, 1, 6, {1}, tag.c_str())[0];
            // The servo kind and gains: <position kp [kv]>, <velocity kv>, <general> with an affine bias
            // that is a position servo (gain kp, bias 0 -kp -kv).
            ServoSpec::Kind kind = ServoSpec::Kind::none;
            double kp = 0, kv = 0;
            if (tag == "motor") {
                ++rep_.motors;
                rep_.actuators.push_back({name, "motor on joint '" + std::string(jn) + "': a joint input (Data::actuation = gear " + fmt(gear) +
                                                    " x ctrl), not set by the importer"});
                continue;
            }
            if (tag == "position") kind = ServoSpec::Kind::position, kp = num(a, "kp", cls, 1, "position"), kv = num(a, "kv", cls, 0, "position");
            else if (tag == "velocity") kind = ServoSpec::Kind::velocity, kv = num(a, "kv", cls, 1, "velocity");
            else if (tag == "general") {
                const std::string gt = str(a, "gaintype", cls, "fixed", "general"), bt = str(a, "biastype", cls, "none", "general");
                const auto gp = nums(a, "gainprm", cls, 1, 10, {1}, "general");
                const auto bp = nums(a, "biasprm", cls, 1, 10, {0}, "general");
                const double b1 = bp.size() > 1 ? bp[1] : 0, b2 = bp.size() > 2 ? bp[2] : 0;
                if (gt == "fixed" && bt == "affine" && bp[0] == 0 && gp[0] > 0 && std::fabs(b1 + gp[0]) <= 1e-12 * gp[0] && b2 <= 0)
                    kind = ServoSpec::Kind::position, kp = gp[0], kv = -b2;
                else if (gt == "fixed" && bt == "none") {
                    ++rep_.motors;
                    rep_.actuators.push_back({name, "general (a motor) on joint '" + std::string(jn) + "': a joint input (Data::actuation = gain " +
                                                        fmt(gp[0] * gear) + " x ctrl), not set by the importer"});
                    continue;
                }
            }
            if (kind == ServoSpec::Kind::none) {
                rep_.actuators.push_back({name, "not mapped: <" + tag + "> with this gain and bias is not a servo noether has"});
                continue;
            }
            if (!opt_.actuators) {
                rep_.actuators.push_back({name, "not added (import setting 'actuators' = false)"});
                continue;
            }
            if (gear != 1) fail(a, who(a) + ": gear " + fmt(gear) + ": servos are mapped with gear 1 only");
            if (j.type != "hinge" && j.type != "slide") fail(a, who(a) + ": servos act on hinge and slide joints, not " + j.type);
            const std::size_t li = std::find(joint_list.begin(), joint_list.end(), std::make_pair(bi, k)) - joint_list.begin();
            if (bodies_[bi].joints.size() > 1) {
                rep_.actuators.push_back({name, "not added: joint '" + std::string(jn) + "' is coordinate " +
                                                    std::to_string(joint_spec_dof[li] + 1) + " of a compound joint (servos drive 1-DOF joints)"});
                continue;
            }
            const int si = joint_spec_index[li];
            JointSpec& js = spec.joints[si];
            if (js.servo.kind != ServoSpec::Kind::none) {
                rep_.actuators.push_back({name, "not added: joint '" + std::string(jn) + "' already has a servo"});
                continue;
            }
            js.servo.kind = kind;
            js.servo.kp = kind == ServoSpec::Kind::position ? kp : 0;
            js.servo.kv = kv;
            if (kind == ServoSpec::Kind::position) js.servo.target = ctrl;
            else js.servo.target_velocity = ctrl;
            const bool has_fr = attr(a, "forcerange", cls, tag.c_str()) != nullptr;
            const int fl = tristate(a, "forcelimited", cls, -1, tag.c_str());
            if (fl == 1 || (fl == -1 && autolimits_ && has_fr)) {
                const auto fr = nums(a, "forcerange", cls, 2, 2, {0, 0}, tag.c_str());
                const double lim = std::min(std::fabs(fr[0]), std::fabs(fr[1]));
                if (fr[0] != -fr[1])
                    rep_.warnings.push_back("actuator '" + name + "': forcerange [" + fmt(fr[0]) + ", " + fmt(fr[1]) +
                                            "] is not symmetric; the servo's limit is " + fmt(lim));
                if (lim > 0) js.servo.effort_limit = lim;
            }
            js.servo.origin = {file_of(a), a->GetLineNum(), who(a)};
            ++rep_.servos;
            rep_.actuators.push_back({name, std::string(kind == ServoSpec::Kind::position ? "position" : "velocity") + " servo on joint '" +
                                                js.name + "', kp " + fmt(js.servo.kp) + ", kv " + fmt(kv) + ", target " + fmt(ctrl)});
            if (attr(a, "ctrlrange", cls, tag.c_str()))
                rep_.ignored.push_back(where(a) + ": " + who(a) + ": ctrlrange: targets are not clamped by the importer");
        }

    // ---- contacts: moving geoms against the world's planes -----------------------------------
    for (const XMLElement* c : contacts_el)
        for (const XMLElement* e : children(c)) note_ignored(e, "contact pairs and exclusions are not used (contacts are declared against planes)");
    if (opt_.contacts && !contact_disabled_) {
        const std::size_t first_contact = spec.contacts.size();
        std::map<std::string, std::size_t> body_index_of;
        for (std::size_t i = first_body; i < spec.bodies.size(); ++i) body_index_of[spec.bodies[i].name] = i;
        // The world's planes with their world poses (a plane on a body welded to the world moves with it).
        std::vector<std::pair<const Geom*, Pose>> planes;
        for (const Geom& g : bodies_[0].geoms)
            if (g.type == "plane") planes.push_back({&g, g.pose});
        for (int i = 1; i < nb; ++i)
            if (group[i] == WORLD)
                for (const Geom& g : bodies_[i].geoms)
                    if (g.type == "plane") planes.push_back({&g, compose(T[i], g.pose)});
        int self = 0, unusable = 0;
        for (int i = 1; i < nb; ++i) {
            const int gi = group[i];
            if (gi < 0) continue;
            for (const Geom& g : bodies_[i].geoms) {
                if (g.contype == 0 && g.conaffinity == 0) continue;
                ++self;
                for (const auto& [p, pworld] : planes) {
                    if (!((g.contype & p->conaffinity) || (p->contype & g.conaffinity))) continue;
                    if (g.type != "sphere" && g.type != "capsule" && g.type != "box") {
                        ++unusable;
                        continue;
                    }
                    ContactSpec cs;
                    cs.body = gname[gi];
                    cs.name = pre + (g.name.empty() ? bodies_[i].name + "/geom" + std::to_string(&g - bodies_[i].geoms.data()) : g.name) +
                              (planes.size() > 1 ? "/" + (p->name.empty() ? std::string("plane") : p->name) : std::string());
                    cs.type = g.type == "sphere" ? ContactSpec::Type::sphere : g.type == "capsule" ? ContactSpec::Type::capsule
                                                                                                     : ContactSpec::Type::box;
                    cs.size = g.type == "sphere" ? Vec3{g.size.x, 0, 0} : g.type == "capsule" ? Vec3{g.size.x, 2 * g.size.y, 0} : 2.0 * g.size;
                    cs.pose = relative_pose({groups[gi].com, groups[gi].q}, compose(T[i], g.pose));
                    cs.normal = rotate(pworld.q, Vec3{0, 0, 1});
                    cs.offset = dot(cs.normal, pworld.x);
                    cs.mu = g.condim == 1 || p->condim == 1 ? 0.0 : std::max(g.friction, p->friction);
                    cs.origin = {file_of(g.xml), g.xml->GetLineNum(), who(g.xml)};
                    spec.contacts.push_back(cs);
                    ++rep_.contacts;
                }
            }
        }
        // A keyframe may rest its feet a little inside the floor (MuJoCo's contacts are soft); noether's
        // are hard and must start apart: a model whose bodies all float is lifted out, with a warning.
        // Judged at the assembled pose (closing loops moves the feet), which a lift only translates.
        bool all_float = spec.contacts.size() > first_contact;
        for (std::size_t j = first_joint; j < spec.joints.size(); ++j) all_float = all_float && spec.joints[j].parent != "world";
        if (all_float) {
            Spec assembled = spec;
            assembled.contacts.clear();  // (a spec that starts in penetration does not compile)
            if (rep_.loop_joints > 0) assemble(assembled);
            double deepest = 0;
            Vec3 normal;
            std::string deepest_name;
            for (std::size_t k = first_contact; k < spec.contacts.size(); ++k) {
                const ContactSpec& cs = spec.contacts[k];
                const BodySpec& B = assembled.bodies[body_index_of.at(cs.body)];
                std::vector<Vec3> pts;
                double radius = 0;
                contact_points(cs, pts, radius);
                const Vec3 n = normalized(cs.normal);
                for (const Vec3& p : pts) {
                    const double gap = dot(n, B.position + rotate(B.orientation, p)) - cs.offset / norm(cs.normal) - radius;
                    if (gap < deepest) deepest = gap, normal = n, deepest_name = cs.name;
                }
            }
            if (deepest < -1e-9) {  // (compile takes gaps down to −1e-9 as touching)
                for (std::size_t i = first_body; i < spec.bodies.size(); ++i) spec.bodies[i].position += -deepest * normal;
                rep_.warnings.push_back("contact '" + deepest_name + "' started " + fmt(-deepest) + " m inside its plane " +
                                        (rep_.keyframe.empty() ? std::string("at qpos0") : "in keyframe '" + rep_.keyframe + "'") +
                                        " (MuJoCo's contacts are soft, noether's hard); the model was lifted out by that much");
            }
        }
        if (unusable > 0)
            rep_.ignored.push_back(std::to_string(unusable) + " colliding geom" + (unusable > 1 ? "s" : "") +
                                   " (cylinder, ellipsoid, mesh) against a plane: not contact shapes (sphere, capsule, box)");
        if (self > 1)
            rep_.ignored.push_back("contacts between moving bodies' geoms are not modelled (only against the world's planes)");
    } else if (contact_disabled_) {
        rep_.ignored.push_back("<option><flag contact=\"disable\">: no contacts added");
    }
    return rep_;
}

}  // namespace

Report import(Spec& spec, const std::string& path, const Options& opt) {
    Report rep;
    Reader r(path, opt, rep);
    Spec work = spec;  // the caller's spec changes only if the whole file imports
    r.import_into(work);
    spec = std::move(work);
    return rep;
}

bool is_mjcf(const std::string& path) {
    XMLDocument doc;
    if (doc.LoadFile(path.c_str()) != tinyxml2::XML_SUCCESS) return false;
    const XMLElement* root = doc.RootElement();
    return root && !std::strcmp(root->Name(), "mujoco");
}

std::string Report::to_text() const {
    std::ostringstream o;
    o << "model '" << model << "' from " << file << " (MJCF)\n";
    o << "  bodies (" << bodies_in.size() << "):\n";
    for (const Entry& e : bodies_in) o << "    " << e.name << ": " << e.mapped << "\n";
    o << "  joints (" << joints_in.size() << "), nq " << nq << ", nv " << nv << ":\n";
    for (const Entry& e : joints_in) o << "    " << e.name << ": " << e.mapped << "\n";
    for (const auto& [title, list] : {std::pair<const char*, const std::vector<Entry>*>{"equalities", &equalities},
                                      {"tendons", &tendons}, {"actuators", &actuators}}) {
        if (list->empty()) continue;
        o << "  " << title << " (" << list->size() << "):\n";
        for (const Entry& e : *list) o << "    " << e.name << ": " << e.mapped << "\n";
    }
    o << "  bodies " << bodies.size() << ", joints " << joint_names.size() << " (" << loop_joints << " loop closure"
      << (loop_joints == 1 ? "" : "s") << ")";
    if (couplings > 0) o << ", couplings " << couplings;
    o << "\n";
    o << "  mass: file " << fmt(file_mass) << " kg, bodies " << fmt(imported_mass) << " kg";
    if (world_mass > 0) o << ", welded to the world " << fmt(world_mass) << " kg";
    o << "\n";
    o << "  limits enforced: " << limits_enforced << "; contacts: " << contacts << "; servos: " << servos << "; motors: " << motors << "\n";
    if (meshes_drawn > 0) o << "  meshes drawn: " << meshes_drawn << " geoms, " << mesh_triangles << " triangles\n";
    o << "  keyframes: ";
    if (keyframes.empty()) o << "none";
    for (std::size_t i = 0; i < keyframes.size(); ++i) o << (i ? ", " : "") << keyframes[i];
    o << (keyframe.empty() ? " (started from qpos0)" : " (started from '" + keyframe + "')") << "\n";
    if (timestep > 0) o << "  file timestep: " << fmt(timestep) << " s\n";
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

}  // namespace mjcf
}  // namespace noether
