// Recordings for the viewer (docs/viewer.md): body shapes (Spec, Lua, URDF), the inertia box,
// the recording format written by Run, `noether run --record` and `noether view`.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include "noether/lua.hpp"
#include "noether/noether.hpp"
#include "noether/run.hpp"
#include "noether/urdf.hpp"
#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;

namespace {

std::string out(const std::string& name) { return std::string(NOETHER_BINARY_DIR) + "/tests/rec_" + name; }

std::string write(const std::string& name, const std::string& text) {
    const std::string path = out(name);
    std::ofstream f(path, std::ios::binary);
    f << text;
    return path;
}

// A recording read back: its JSON header (text) and its frames.
struct Recording {
    std::string header;
    int floats = 0;
    std::vector<std::vector<float>> frames;
};

Recording read_recording_file(const std::string& path) {
    Recording r;
    const std::string bytes = testutil::slurp(path);
    REQUIRE(bytes.size() >= 12);
    REQUIRE(bytes.compare(0, 8, "NOETHREC") == 0);
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::size_t h = u[8] | (u[9] << 8) | (u[10] << 16) | (static_cast<std::size_t>(u[11]) << 24);
    REQUIRE(12 + h <= bytes.size());
    REQUIRE((12 + h) % 4 == 0);  // the frames are aligned for a Float32Array
    r.header = bytes.substr(12, h);
    const std::size_t at = r.header.find("\"frame_floats\":");
    REQUIRE(at != std::string::npos);
    r.floats = std::atoi(r.header.c_str() + at + 15);
    REQUIRE(r.floats > 0);
    const std::size_t fb = 4 * static_cast<std::size_t>(r.floats);
    REQUIRE((bytes.size() - 12 - h) % fb == 0);
    for (std::size_t p = 12 + h; p < bytes.size(); p += fb) {
        std::vector<float> f(r.floats);
        std::memcpy(f.data(), bytes.data() + p, fb);
        r.frames.push_back(f);
    }
    return r;
}

// A recording output to `file` (fps 0: every step).
OutputSpec recording_to(const std::string& file, double fps = 0) {
    OutputSpec o;
    o.format = OutputSpec::Format::recording;
    o.file = file;
    o.fps = fps;
    return o;
}

// Record `run` to out(name) for `steps` steps and finish it; the recording's path.
std::string record(Run& run, const std::string& name, long long steps, double fps = 0) {
    const OutputSpec o = recording_to(out(name), fps);
    run.add_output(o);
    REQUIRE(run.steps(steps));
    run.finish();
    return o.file;
}

// The inertia of a uniform box of mass m and edges l, turned by q (body axes).
Mat3 turned_box_inertia(double m, const Vec3& l, const Quat& q) {
    const Mat3 R = rotation(q);
    return R * testutil::box_inertia(m, l.x, l.y, l.z) * transpose(R);
}

}  // namespace

TEST_CASE("inertia_box gives back the box whose inertia it was given, along its axes", "[viewer]") {
    const Quat q = qnormalized(Quat{0.9, 0.2, -0.3, 0.25});
    const Vec3 l{0.3, 0.5, 0.9};
    const Mat3 I = turned_box_inertia(2.0, l, q);
    const Shape s = inertia_box(2.0, I);
    CHECK(s.type == Shape::Type::box);
    // Same mass and size → the same inertia when the box is turned as the shape's pose says.
    const Mat3 again = turned_box_inertia(2.0, s.size, s.pose.q);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) CHECK(again.m[i][j] == Approx(I.m[i][j]).margin(1e-12));
    // The edges are the box's (in ascending order of the principal moments: longest edge first).
    CHECK(s.size.x == Approx(0.9).epsilon(1e-12));
    CHECK(s.size.y == Approx(0.5).epsilon(1e-12));
    CHECK(s.size.z == Approx(0.3).epsilon(1e-12));
    CHECK(det(rotation(s.pose.q)) == Approx(1).epsilon(1e-12));
    // A thin rod still gets a visible thickness (5% of its length), never zero or NaN.
    const Shape rod = inertia_box(1.0, Mat3::diag(1e-12, 1.0 / 12, 1.0 / 12));
    CHECK(rod.size.x == Approx(1.0).epsilon(1e-6));
    CHECK(rod.size.y == Approx(0.05).epsilon(1e-6));
}

TEST_CASE("a run records body poses, energy and violation per frame, and the shapes in its header", "[viewer]") {
    Spec s = testutil::double_pendulum_spec();
    Shape box;
    box.size = {1, 0.1, 0.1};
    box.rgba[0] = 1, box.rgba[1] = 0, box.rgba[2] = 0;
    s.bodies[0].shapes.push_back(box);
    Shape cap;
    cap.type = Shape::Type::capsule;
    cap.size = {0.05, 0.8, 0};
    cap.pose.x = {0, 0, 0.1};
    s.bodies[1].shapes.push_back(cap);
    auto m = compile(s);
    Run run(m);
    const Recording r = read_recording_file(record(run, "dp.nrec", 40, 25));  // fps 25 at dt = 0.01: every 4 steps
    CHECK(r.floats == 3 + 7 * 2);
    REQUIRE(r.frames.size() == 11);  // the initial state and every 4th step
    CHECK_THAT(r.header, Contains("\"every\":4"));
    CHECK_THAT(r.header, Contains("\"type\":\"box\",\"size\":[1,0.1,0.1]"));
    CHECK_THAT(r.header, Contains("\"rgba\":[1,0,0,1]"));
    CHECK_THAT(r.header, Contains("\"type\":\"capsule\",\"size\":[0.05,0.8,0],\"pos\":[0,0,0.1]"));
    CHECK_THAT(r.header, Contains("\"name\":\"j2\",\"type\":\"revolute\",\"parent\":0,\"child\":1"));
    // The last frame is the run's last state.
    const Data& d = run.data();
    const std::vector<float>& last = r.frames.back();
    CHECK(last[0] == Approx(0.4).epsilon(1e-6));
    const Monitors mon = monitors(*m, d);
    CHECK(last[1] == static_cast<float>(mon.total));
    CHECK(last[2] == static_cast<float>(mon.max_violation));
    for (int b = 0; b < 2; ++b) {
        CHECK(last[3 + 7 * b] == static_cast<float>(d.pose[b].x.x));
        CHECK(last[5 + 7 * b] == static_cast<float>(d.pose[b].x.z));
        CHECK(last[6 + 7 * b] == static_cast<float>(d.pose[b].q.w));
        CHECK(last[9 + 7 * b] == static_cast<float>(d.pose[b].q.z));
    }
    // Frames move: the pendulum falls from horizontal.
    CHECK(r.frames.front()[5 + 7] > last[5 + 7] + 0.1f);
}

TEST_CASE("a body without shapes is recorded as its inertia box, joints with their anchors", "[viewer]") {
    Spec s = testutil::double_pendulum_spec();
    auto m = compile(s);
    Run run(m);
    const Recording r = read_recording_file(record(run, "plain.nrec", 3));
    CHECK(r.frames.size() == 4);
    CHECK_THAT(r.header, Contains("\"inertia_box\":true"));
    // j1 hangs link1 (CoM at x = 0.5) from the origin: its anchor is 0.5 behind the CoM, on y.
    CHECK_THAT(r.header, Contains("\"name\":\"j1\",\"type\":\"revolute\",\"parent\":-1,\"child\":0,\"anchor\":[-0.5,0,0],\"axis\":[0,1,0]"));
}

TEST_CASE("a failed run leaves its recording as .part, and a recording needs a file", "[viewer]") {
    Spec s = testutil::double_pendulum_spec();
    auto m = compile(s);
    Run run(m);
    OutputSpec o = recording_to("");
    CHECK_THAT(testutil::error_of([&] { run.add_output(o); }), Contains("a recording needs a file"));
    o.file = out("aborted.nrec");
    std::remove(o.file.c_str());
    run.add_output(o);
    REQUIRE(run.steps(2));
    run.abort("stopped by the test");
    std::vector<std::string> notes;
    run.finish(&notes);
    std::ifstream final_file(o.file);
    CHECK_FALSE(final_file.good());
    CHECK(read_recording_file(o.file + ".part").frames.size() == 3);
}

TEST_CASE("bad shapes are compile errors naming the body, the shape and the value", "[viewer]") {
    Spec s = testutil::double_pendulum_spec();
    Shape sh;
    sh.type = Shape::Type::cylinder;
    sh.size = {0.1, -2, 0};
    s.bodies[1].shapes.push_back(sh);
    CHECK_THAT(testutil::error_of([&] { compile(s); }),
               Contains("body 'link2': shape 1 (cylinder): size must be positive and finite (radius, length), got (0.1, -2, 0)"));
    s.bodies[1].shapes[0].size = {0.1, 2, 0};
    s.bodies[1].shapes[0].rgba[3] = 1.5;
    CHECK_THAT(testutil::error_of([&] { compile(s); }), Contains("colour components must be in [0, 1], got 1.5"));
    s.bodies[1].shapes[0].rgba[3] = 1;
    s.bodies[1].shapes[0].pose.q = {0, 0, 0, 0};
    CHECK_THAT(testutil::error_of([&] { compile(s); }), Contains("orientation must be a nonzero finite quaternion"));
}

TEST_CASE("a mesh shape is recorded with its vertices and triangles, a bad one is a compile error", "[viewer][mesh]") {
    Spec s = testutil::double_pendulum_spec();
    auto md = std::make_shared<MeshData>();
    md->vertices = {0, 0, 0, 0.5f, 0, 0, 0, 0.25f, 0, 0, 0, 0.125f};  // a tetrahedron
    md->triangles = {0, 2, 1, 0, 1, 3, 1, 2, 3, 0, 3, 2};
    md->source = "tetra.stl";
    Shape sh;
    sh.type = Shape::Type::mesh;
    sh.size = {0.5, 0.25, 0.125};
    sh.mesh = md;
    s.bodies[0].shapes.push_back(sh);
    {
        auto m = compile(s);
        Run run(m);
        const Recording r = read_recording_file(record(run, "mesh.nrec", 2));
        CHECK_THAT(r.header, Contains("\"type\":\"mesh\",\"size\":[0.5,0.25,0.125]"));
        CHECK_THAT(r.header, Contains("\"vertices\":[0,0,0,0.5,0,0,0,0.25,0,0,0,0.125],\"triangles\":[0,2,1,0,1,3,1,2,3,0,3,2]"));
    }
    md->triangles[5] = 4;  // beyond the 4 vertices
    CHECK_THAT(testutil::error_of([&] { compile(s); }),
               Contains("body 'link1': shape 1 (mesh) from tetra.stl: triangle index 4 beyond its 4 vertices"));
    md->triangles.pop_back();
    CHECK_THAT(testutil::error_of([&] { compile(s); }), Contains("needs vertices (3 numbers each) and triangles (3 indices each), got 12 vertex and 11 index numbers"));
    md->triangles.push_back(2);
    md->triangles[5] = 3;
    md->vertices[4] = NAN;
    CHECK_THAT(testutil::error_of([&] { compile(s); }), Contains("a vertex is not finite"));
    s.bodies[0].shapes[0].mesh.reset();
    CHECK_THAT(testutil::error_of([&] { compile(s); }), Contains("shape 1 (mesh): needs vertices (3 numbers each) and triangles (3 indices each), got none"));
}

TEST_CASE("URDF visuals become body shapes in the body frame, with their materials", "[viewer]") {
    // link 'arm': CoM 0.5 along x from its frame; a box visual at the frame's origin and a
    // cylinder turned onto x; link 'tip' welded to it (lumped), a sphere; link 'meshy' with a
    // mesh only (its inertia box).
    const std::string text = R"(<robot name="r">
  <material name="red"><color rgba="1 0 0 1"/></material>
  <link name="base"/>
  <link name="arm">
    <inertial><origin xyz="0.5 0 0"/><mass value="1"/><inertia ixx="0.01" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><box size="0.2 0.1 0.1"/></geometry><material name="red"/></visual>
    <visual><origin xyz="0.5 0 0" rpy="0 1.5707963267948966 0"/><geometry><cylinder radius="0.03" length="1"/></geometry>
      <material name="blue"><color rgba="0 0 1 0.5"/></material></visual>
  </link>
  <link name="tip">
    <inertial><mass value="0.5"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><sphere radius="0.08"/></geometry></visual>
  </link>
  <link name="meshy">
    <inertial><mass value="2"/><inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><mesh filename="package://x/meshy.stl"/></geometry></visual>
  </link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="5"/></joint>
  <joint name="weld" type="fixed"><parent link="arm"/><child link="tip"/><origin xyz="1 0 0"/></joint>
  <joint name="wrist" type="continuous"><parent link="arm"/><child link="meshy"/><origin xyz="1 0 0"/><axis xyz="0 0 1"/></joint>
</robot>)";
    Spec s;
    urdf::Options opt;
    opt.fixed_base = true;
    const urdf::Report rep = urdf::import(s, write("visuals.urdf", text), opt);
    std::string ignored;
    for (const auto& x : rep.ignored) ignored += x + "\n";
    CHECK_THAT(ignored, Contains("primitives are drawn by the viewer, the 1 links with only meshes as inertia boxes"));
    const BodySpec* arm = nullptr;
    const BodySpec* meshy = nullptr;
    for (const BodySpec& b : s.bodies) {
        if (b.name == "arm") arm = &b;
        if (b.name == "meshy") meshy = &b;
    }
    REQUIRE(arm);
    REQUIRE(meshy);
    REQUIRE(arm->shapes.size() == 3);
    // The lumped body's CoM: (1 * 0.5 + 0.5 * 1) / 1.5 = 2/3 along x; shapes are relative to it.
    const double c = 2.0 / 3.0;
    CHECK(arm->position.x == Approx(c));
    const Shape& box = arm->shapes[0];
    CHECK(box.type == Shape::Type::box);
    CHECK(box.pose.x.x == Approx(-c));
    CHECK(box.rgba[0] == 1.0);
    CHECK(box.rgba[2] == 0.0);
    const Shape& cyl = arm->shapes[1];
    CHECK(cyl.type == Shape::Type::cylinder);
    CHECK(cyl.size.x == 0.03);
    CHECK(cyl.size.y == 1.0);
    CHECK(cyl.pose.x.x == Approx(0.5 - c));
    CHECK(cyl.rgba[3] == 0.5);
    const Vec3 axis = rotate(cyl.pose.q, Vec3{0, 0, 1});  // the cylinder's z axis lies along the arm
    CHECK(std::fabs(axis.x) == Approx(1).epsilon(1e-12));
    const Shape& ball = arm->shapes[2];
    CHECK(ball.type == Shape::Type::sphere);
    CHECK(ball.pose.x.x == Approx(1 - c));
    REQUIRE(meshy->shapes.size() == 1);
    CHECK(meshy->shapes[0].size.x == Approx(std::sqrt(6 * (0.03 + 0.04 - 0.02) / 2)));
    CHECK(compile(s)->bodies.size() == 2);  // the shapes compile
}

TEST_CASE("a URDF visual with a bad size is an import error with its line", "[viewer]") {
    const std::string text = R"(<robot name="r">
  <link name="a">
    <inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><box size="0.2 0 0.1"/></geometry></visual>
  </link>
</robot>)";
    Spec s;
    CHECK_THAT(testutil::error_of([&] { urdf::import(s, write("badvisual.urdf", text), {}); }),
               Contains("rec_badvisual.urdf:4: link 'a': <visual><box>: sizes must be positive, got 0"));
}

TEST_CASE("Lua bodies take shapes, w:record writes a recording, and bad shapes name the script line", "[viewer]") {
    const std::string nrec = out("lua.nrec");
    const std::string script = write("shapes.lua", R"(local noether = require("noether")
local w = noether.world { dt = 0.01 }
local box = noether.inertia.box(1, 1, 0.1, 0.1)
local a = w:body { name = "a", mass = 1, inertia = box, position = { 0.5, 0, 0 },
                   shape = { type = "box", size = { 1, 0.1, 0.1 }, color = { 0.2, 0.4, 0.6 } } }
local b = w:body { name = "b", mass = 1, inertia = box, position = { 1.5, 0, 0 },
                   shapes = { { type = "cylinder", radius = 0.05, length = 1, orientation = noether.quat.rpy(0, math.pi / 2, 0) },
                              { type = "sphere", radius = 0.1, position = { 0.5, 0, 0 } } } }
w:joint { name = "j1", type = "revolute", parent = w.world, child = a, anchor = { 0, 0, 0 }, axis = { 0, 1, 0 } }
w:joint { name = "j2", type = "revolute", parent = a, child = b, anchor = { 1, 0, 0 }, axis = { 0, 1, 0 } }
w:record { file = ")" + nrec + R"(", every = 10 }
w:run { duration = 1 }
)");
    noether::lua::ScriptOptions opt;
    const auto r = noether::lua::run_script(script, opt);
    REQUIRE(r.exit_code == 0);
    const Recording rec = read_recording_file(nrec);
    CHECK(rec.frames.size() == 11);
    CHECK_THAT(rec.header, Contains("\"rgba\":[0.2,0.4,0.6,1]"));
    CHECK_THAT(rec.header, Contains("\"type\":\"sphere\",\"size\":[0.1,0,0],\"pos\":[0.5,0,0]"));
    CHECK_THAT(rec.header, Contains("\"type\":\"cylinder\",\"size\":[0.05,1,0]"));

    const std::string bad = write("badshape.lua", R"(local noether = require("noether")
local w = noether.world { dt = 0.01 }
w:body { name = "a", mass = 1, inertia = { 1, 1, 1 },
         shape = { type = "cone", radius = 1 } }
)");
    const auto e = noether::lua::run_script(bad, opt);
    CHECK(e.exit_code == 2);
    CHECK_THAT(e.error, Contains("rec_badshape.lua:3: body 'a': shape: unknown type 'cone' (box, sphere, cylinder, capsule)"));
    const std::string bad2 = write("badrecord.lua", R"(local noether = require("noether")
local w = noether.world { dt = 0.01 }
w:record { file = "x.nrec", fps = -1 }
)");
    const auto e2 = noether::lua::run_script(bad2, opt);
    CHECK(e2.exit_code == 2);
    CHECK_THAT(e2.error, Contains("rec_badrecord.lua:3: record: field 'fps'"));
}

namespace {
// Run the noether command; its exit status and what it printed (stdout and stderr).
int cli(const std::string& args, std::string& output) {
    const std::string cmd = std::string(NOETHER_BINARY_DIR) + "/bin/noether " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return -1;
    char buf[4096];
    output.clear();
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
    const int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
}  // namespace

TEST_CASE("noether view writes a page of a recording and refuses what is not one", "[viewer]") {
    Spec s = testutil::double_pendulum_spec();
    Run run(compile(s));
    const std::string nrec = record(run, "view.nrec", 9);
    std::string text;
    const std::string html = out("view.html");
    std::remove(html.c_str());
    if (cli("view " + nrec + " -o " + html, text) == 2 && text.find("three.js not found") != std::string::npos) {
        WARN("libjs-three is not installed: " << text);
        return;
    }
    CHECK_THAT(text, Contains("(10 frames) -> " + html));
    const std::string page = testutil::slurp(html);
    CHECK_THAT(page, Contains("\"frame_floats\":17"));
    CHECK_THAT(page, Contains("REVISION"));  // three.js is inlined
    CHECK(page.find("@@HEADER@@") == std::string::npos);

    // A recording cut in the middle of a frame: the complete frames, and a warning.
    const std::string bytes = testutil::slurp(nrec);
    write("cut.nrec", bytes.substr(0, bytes.size() - 10));
    CHECK(cli("view " + out("cut.nrec") + " -o " + out("cut.html"), text) == 0);
    CHECK_THAT(text, Contains("ends in the middle of a frame"));
    CHECK_THAT(text, Contains("(9 frames)"));
    // Not a recording; a header longer than the file; no frames.
    write("csv.nrec", "time,energy\n0,1\n");
    CHECK(cli("view " + out("csv.nrec"), text) == 2);
    CHECK_THAT(text, Contains("is not a noether recording"));
    std::string lie = bytes.substr(0, 12);
    lie[11] = '\x7f';
    write("lie.nrec", lie);
    CHECK(cli("view " + out("lie.nrec"), text) == 2);
    CHECK_THAT(text, Contains("truncated or damaged"));
    const std::size_t h = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    write("empty.nrec", bytes.substr(0, 12 + h));
    CHECK(cli("view " + out("empty.nrec"), text) == 2);
    CHECK_THAT(text, Contains("has no frames"));
    // A hostile name cannot end the page's script elements early.
    Spec t = testutil::double_pendulum_spec();
    t.bodies[0].name = "</script><script>alert(1)</script>";
    for (JointSpec& j : t.joints) {
        if (j.parent == "link1") j.parent = t.bodies[0].name;
        if (j.child == "link1") j.child = t.bodies[0].name;
    }
    Run r2(compile(t));
    CHECK(cli("view " + record(r2, "hostile.nrec", 1) + " -o " + out("hostile.html"), text) == 0);
    const std::string hp = testutil::slurp(out("hostile.html"));
    CHECK(hp.find("alert(1)") != std::string::npos);  // the name is there ...
    CHECK(hp.find("<script>alert(1)") == std::string::npos);  // ... but not as markup
}

TEST_CASE("a recording of a world that never stepped holds its initial state and says so", "[viewer]") {
    Spec s = testutil::double_pendulum_spec();
    Run run(compile(s));
    const OutputSpec o = recording_to(out("still.nrec"));
    run.add_output(o);
    std::vector<std::string> notes;
    run.finish(&notes);
    REQUIRE(notes.size() == 1);
    CHECK_THAT(notes[0], Contains("holds only the initial state: this world was never stepped"));
    const Recording r = read_recording_file(o.file);
    REQUIRE(r.frames.size() == 1);
    CHECK(r.frames[0][0] == 0.0f);
    CHECK(r.frames[0][3] == 0.5f);  // link1's CoM x at the start
}
