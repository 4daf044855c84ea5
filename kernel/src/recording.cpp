// Recordings for the viewer (docs/viewer.md): the header that describes the bodies, their shapes
// and the joints, and one frame of float32 values per sample. Written by Run for an output with
// OutputSpec::Format::recording.
#include "recording.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "noether/model.hpp"
#include "noether/run.hpp"
#include "sym3.hpp"

namespace noether {
namespace detail {

namespace {

std::string num(double v) {
    if (!std::isfinite(v)) return "0";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}
std::string vec(const Vec3& v) { return "[" + num(v.x) + "," + num(v.y) + "," + num(v.z) + "]"; }
std::string quat(const Quat& q) { return "[" + num(q.w) + "," + num(q.x) + "," + num(q.y) + "," + num(q.z) + "]"; }

}  // namespace
}  // namespace detail

Shape inertia_box(double mass, const Mat3& inertia) {
    Shape s;
    double ev[3];
    Mat3 V;
    detail::sym_eigenvalues(inertia, ev, &V);
    if (det(V) < 0)  // a proper rotation
        for (int r = 0; r < 3; ++r) V.m[r][2] = -V.m[r][2];
    // A uniform box of mass m: I_x = m (l_y² + l_z²) / 12, so l_x² = 6 (I_y + I_z − I_x) / m.
    double l[3];
    for (int k = 0; k < 3; ++k) {
        const double sq = mass > 0 ? 6 * (ev[(k + 1) % 3] + ev[(k + 2) % 3] - ev[k]) / mass : 0;
        l[k] = sq > 0 && std::isfinite(sq) ? std::sqrt(sq) : 0;
    }
    const double lmax = std::max(l[0], std::max(l[1], l[2]));
    for (double& x : l) x = std::max(x, lmax > 0 ? 0.05 * lmax : 0.1);  // flat or degenerate: still visible
    s.size = {l[0], l[1], l[2]};
    s.pose.q = quat_from_matrix(V);
    s.rgba[0] = 0.78, s.rgba[1] = 0.64, s.rgba[2] = 0.45;  // a different colour: not the body's own shape
    return s;
}

namespace detail {

std::string recording_header(const Model& m, int every, const std::string& origin) {
    std::string h = "{\"format\":\"noether-recording\",\"version\":1";
    h += ",\"origin\":" + json_quote(origin);
    h += ",\"integrator\":" + json_quote(m.options.integrator);
    h += ",\"dt\":" + num(m.options.dt) + ",\"every\":" + std::to_string(every);
    h += ",\"gravity\":" + vec(m.gravity);
    h += ",\"channels\":[\"time\",\"energy\",\"violation\"]";
    h += ",\"frame_floats\":" + std::to_string(recording_frame_floats(m));
    h += ",\"bodies\":[";
    for (int b = 0; b < m.nbodies(); ++b) {
        const BodyInfo& bi = m.bodies[b];
        h += b ? ",{" : "{";
        h += "\"name\":" + json_quote(bi.name) + ",\"mass\":" + num(bi.mass) + ",\"shapes\":[";
        const bool own = !bi.shapes.empty();
        const std::vector<Shape> shapes = own ? bi.shapes : std::vector<Shape>{inertia_box(bi.mass, bi.inertia)};
        for (std::size_t i = 0; i < shapes.size(); ++i) {
            const Shape& s = shapes[i];
            h += i ? ",{" : "{";
            h += std::string("\"type\":\"") + shape_type_name(s.type) + "\",\"size\":" + vec(s.size) +
                 ",\"pos\":" + vec(s.pose.x) + ",\"quat\":" + quat(s.pose.q) + ",\"rgba\":[" + num(s.rgba[0]) + "," +
                 num(s.rgba[1]) + "," + num(s.rgba[2]) + "," + num(s.rgba[3]) + "]";
            if (!own) h += ",\"inertia_box\":true";
            if (s.type == Shape::Type::mesh && s.mesh) {  // its triangles inline (the recording stands alone)
                h += ",\"vertices\":[";
                char buf[24];
                for (std::size_t k = 0; k < s.mesh->vertices.size(); ++k) {
                    std::snprintf(buf, sizeof buf, k ? ",%.7g" : "%.7g", static_cast<double>(s.mesh->vertices[k]));
                    h += buf;
                }
                h += "],\"triangles\":[";
                for (std::size_t k = 0; k < s.mesh->triangles.size(); ++k) {
                    if (k) h += ',';
                    h += std::to_string(s.mesh->triangles[k]);
                }
                h += "]";
            }
            h += "}";
        }
        h += "]}";
    }
    h += "],\"joints\":[";
    for (int j = 0; j < m.njoints(); ++j) {
        const JointInfo& ji = m.joints[j];
        h += j ? ",{" : "{";
        h += "\"name\":" + json_quote(ji.name) + ",\"type\":" + json_quote(ji.type) + ",\"parent\":" +
             std::to_string(ji.a) + ",\"child\":" + std::to_string(ji.b) + ",\"anchor\":" + vec(ji.anchor_b) +
             ",\"axis\":" + vec(ji.axis_b) + ",\"loop\":" + (ji.loop ? "true" : "false") + "}";
    }
    h += "]";
    // Contact points (docs/contact.md): their body and what they touch; each frame holds their point
    // and the force on the body (normal + friction, world) after the bodies' poses.
    if (!m.contacts.empty()) {
        h += ",\"contacts\":[";
        for (std::size_t k = 0; k < m.contacts.size(); ++k) {
            const ContactInfo& ci = m.contacts[k];
            h += k ? ",{" : "{";
            h += "\"name\":" + json_quote(ci.name) + ",\"body\":" + std::to_string(ci.body);
            if (ci.other >= 0) h += ",\"other\":" + std::to_string(ci.other);
            else h += ",\"normal\":" + vec(ci.normal) + ",\"offset\":" + num(ci.offset);
            h += "}";
        }
        h += "]";
    }
    h += "}";
    return h;
}

int recording_frame_floats(const Model& m) {
    return 3 + 7 * m.nbodies() + kRecordingContactFloats * static_cast<int>(m.contacts.size());
}

void recording_frame(const Model& m, const Data& d, const Monitors& mon, float* out) {
    out[0] = static_cast<float>(d.time);
    out[1] = static_cast<float>(mon.total);
    out[2] = static_cast<float>(mon.max_violation);
    for (int b = 0; b < m.nbodies(); ++b) {
        const Pose& p = d.pose[b];
        float* o = out + 3 + 7 * b;
        o[0] = static_cast<float>(p.x.x), o[1] = static_cast<float>(p.x.y), o[2] = static_cast<float>(p.x.z);
        o[3] = static_cast<float>(p.q.w), o[4] = static_cast<float>(p.q.x), o[5] = static_cast<float>(p.q.y);
        o[6] = static_cast<float>(p.q.z);
    }
    float* c = out + 3 + 7 * m.nbodies();
    for (std::size_t k = 0; k < m.contacts.size(); ++k, c += kRecordingContactFloats) {
        const ContactResult& r = d.contact[k];
        const Vec3 f = r.normal_force * r.normal + r.friction;
        c[0] = static_cast<float>(r.point.x), c[1] = static_cast<float>(r.point.y), c[2] = static_cast<float>(r.point.z);
        c[3] = static_cast<float>(f.x), c[4] = static_cast<float>(f.y), c[5] = static_cast<float>(f.z);
    }
}

void write_recording_header(std::FILE* fp, std::string json) {
    while ((12 + json.size()) % 4) json += ' ';
    const std::uint32_t n = static_cast<std::uint32_t>(json.size());
    unsigned char len[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                            static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 24)};
    std::fwrite(kRecordingMagic, 1, 8, fp);
    std::fwrite(len, 1, 4, fp);
    std::fwrite(json.data(), 1, json.size(), fp);
}

}  // namespace detail
}  // namespace noether
