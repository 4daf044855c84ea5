// URDF import on small fixtures written here: parsing, errors with file:line, lumping,
// massless links, loop closures and assembly, initial positions.
#include <catch2/catch.hpp>
#include <fstream>

#include "noether/urdf.hpp"
#include "util.hpp"

using namespace noether;
using Catch::Matchers::Contains;

namespace {

std::string fixture(const std::string& name, const std::string& text) {
    const std::string path = std::string(NOETHER_BINARY_DIR) + "/tests/" + name;
    std::ofstream f(path, std::ios::binary);
    f << text;
    return path;
}

std::string import_error(const std::string& name, const std::string& text) {
    Spec s;
    try {
        urdf::import(s, fixture(name, text), {});
    } catch (const ModelError& e) {
        return e.what();
    }
    FAIL("import accepted " << name);
    return "";
}

const char* kPendulum = R"(<robot name="p">
  <link name="base"/>
  <link name="arm">
    <inertial><origin xyz="0.5 0 0"/><mass value="2"/><inertia ixx="0.01" iyy="0.2" izz="0.2" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="hinge" type="continuous">
    <parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
  </joint>
</robot>
)";

// Simulate a spec for n steps and return the final Data.
std::unique_ptr<Data> simulate(Spec s, int n, double dt = 0.005) {
    s.options.dt = dt;
    auto m = compile(s);
    auto d = std::make_unique<Data>(m);
    for (int i = 0; i < n; ++i) REQUIRE(step(*m, *d) == StepStatus::ok);
    return d;
}

}  // namespace

TEST_CASE("robust number parsing, CRLF, no XML declaration, extension elements listed", "[urdf]") {
    const std::string text =
        "<robot name=\"r\">\r\n"
        "  <gazebo reference=\"x\"><plugin/></gazebo>\r\n"
        "  <transmission name=\"t\"/>\r\n"
        "  <link name=\"base\"/>\r\n"
        "  <link name=\"a\">\r\n"
        "    <inertial><origin xyz=\"  0.  .5\t 1e-1 \" rpy=\"0 0 0\"/><mass value=\" 2. \"/>\r\n"
        "      <inertia ixx=\"1E-2\" iyy=\".02\" izz=\"0.03\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial>\r\n"
        "    <visual><geometry><box size=\"1 1 1\"/></geometry></visual>\r\n"
        "  </link>\r\n"
        "  <joint name=\"j\" type=\"revolute\" independent=\"true\"><parent link=\"base\"/><child link=\"a\"/>\r\n"
        "    <axis xyz=\"0  0   1\"/><limit lower=\"-1\" upper=\"1.5\" effort=\"1\" velocity=\"1\"/></joint>\r\n"
        "</robot>\r\n";
    Spec s;
    urdf::Options fixed;
    fixed.fixed_base = true;
    const urdf::Report r = urdf::import(s, fixture("crlf.urdf", text), fixed);
    REQUIRE(s.bodies.size() == 1);
    CHECK(s.bodies[0].position.y == 0.5);
    CHECK(s.bodies[0].position.z == Approx(0.1));
    CHECK(s.bodies[0].mass == 2.0);
    CHECK(s.bodies[0].inertia.m[0][0] == 0.01);
    REQUIRE(s.joints.size() == 1);
    CHECK(s.joints[0].lower == std::vector<double>{-1});
    CHECK(s.joints[0].upper == std::vector<double>{1.5});
    std::string ignored;
    for (const auto& x : r.ignored) ignored += x + "\n";
    CHECK_THAT(ignored, Contains("<gazebo> (simulator or tool extension) x1") && Contains("<transmission>") &&
                            Contains("joint attribute 'independent' x1") &&
                            Contains("<visual>/<collision> geometry of 1 links: no contact"));
    // The limit is enforced (docs/contact.md), and the report says so.
    CHECK(s.joints[0].limited);
    CHECK(r.limits_enforced == 1);
    CHECK_THAT(r.to_text(), Contains("limits enforced: 1 joint; contacts: 0"));
    // Limits are kept in the compiled model.
    Spec c = s;
    c.options.integrator = "none";
    auto m = compile(c);
    CHECK(m->joints[0].lower[0] == -1);
    CHECK(m->joints[0].upper[0] == 1.5);
}

TEST_CASE("malformed files give errors with file:line and the element", "[urdf]") {
    CHECK_THAT(import_error("e_type.urdf", "<robot name='r'>\n<link name='a'/>\n<link name='b'/>\n<joint name='j'>\n"
                                           "<parent link='a'/><child link='b'/></joint>\n</robot>\n"),
               Contains("e_type.urdf:4: joint 'j': missing attribute 'type'"));
    CHECK_THAT(import_error("e_parent.urdf", "<robot name='r'>\n<link name='a'/>\n<link name='b'/>\n"
                                             "<joint name='back_bkz' type='fixed'>\n<parent link='pelvis2'/><child link='b'/></joint>\n</robot>\n"),
               Contains("e_parent.urdf:4: joint 'back_bkz': parent link 'pelvis2' not found"));
    CHECK_THAT(import_error("e_number.urdf", "<robot name='r'>\n<link name='a'>\n<inertial><mass value='1a'/>"
                                             "<inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial></link>\n</robot>\n"),
               Contains("e_number.urdf:3: link 'a': <mass value=\"1a\">: '1a' is not a number"));
    // An angle of 1e300 rad has no digits left; it was reported as an inertia problem.
    CHECK_THAT(import_error("e_rpy.urdf", "<robot name='r'>\n<link name='a'>\n<inertial><origin rpy='1e300 0 0'/>"
                                          "<mass value='1'/><inertia ixx='1' iyy='2' izz='2.5' ixy='0' ixz='0' iyz='0'/>"
                                          "</inertial></link>\n</robot>\n"),
               Contains("e_rpy.urdf:3: link 'a': <origin rpy=\"1e300 0 0\">: angles must be at most 1e6 rad"));
    CHECK_THAT(import_error("e_cycle.urdf", "<robot name='r'>\n<link name='w'/>\n<link name='a'/>\n<link name='b'/>\n"
                                            "<joint name='ab' type='fixed'><parent link='a'/><child link='b'/></joint>\n"
                                            "<joint name='ba' type='fixed'><parent link='b'/><child link='a'/></joint>\n</robot>\n"),
               Contains("the joints form a cycle"));
    CHECK_THAT(import_error("e_noroot.urdf", "<robot name='r'>\n<link name='a'/>\n<link name='b'/>\n"
                                             "<joint name='ab' type='fixed'><parent link='a'/><child link='b'/></joint>\n"
                                             "<joint name='ba' type='fixed'><parent link='b'/><child link='a'/></joint>\n</robot>\n"),
               Contains("cycle") || Contains("no root link"));
    CHECK_THAT(import_error("e_xml.urdf", "<robot name='r'>\n<link name='a'>\n</robot>\n"), Contains("e_xml.urdf:") && Contains("XML"));
    CHECK_THAT(import_error("e_root.urdf", "<model/>\n"), Contains("the root element must be <robot>"));
    CHECK_THAT(import_error("e_axis.urdf", "<robot name='r'>\n<link name='a'/>\n<link name='b'><inertial><mass value='1'/>"
                                           "<inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial></link>\n"
                                           "<joint name='j' type='revolute'><parent link='a'/><child link='b'/>\n<axis xyz='0 0 0'/></joint>\n</robot>\n"),
               Contains("e_axis.urdf:5: joint 'j': <axis xyz=\"0 0 0\"> must be a nonzero direction"));
    Spec s;
    try {
        urdf::import(s, std::string(NOETHER_BINARY_DIR) + "/tests/no_such.urdf", {});
        FAIL("accepted");
    } catch (const ModelError& e) {
        CHECK_THAT(e.what(), Contains("no_such.urdf: cannot open the URDF file"));
    }
}

TEST_CASE("a link welded by fixed joints moves exactly like the hand-merged body", "[urdf]") {
    // Link 'arm' carries a welded 'tip' (own mass and rotated inertia) two levels deep.
    const std::string welded = R"(<robot name="w">
  <link name="base"/>
  <link name="arm"><inertial><origin xyz="0.5 0 0"/><mass value="2"/><inertia ixx="0.01" iyy="0.2" izz="0.2" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="mount"/>
  <link name="tip"><inertial><origin xyz="0 0.1 0" rpy="0.3 0.2 0.1"/><mass value="0.5"/><inertia ixx="0.002" iyy="0.003" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/></joint>
  <joint name="m" type="fixed"><origin xyz="1 0 0"/><parent link="arm"/><child link="mount"/></joint>
  <joint name="t" type="fixed"><origin xyz="0 0 0.2" rpy="0 0.5 0"/><parent link="mount"/><child link="tip"/></joint>
</robot>
)";
    Spec a;
    urdf::Options opt;
    opt.fixed_base = true;
    const urdf::Report r = urdf::import(a, fixture("welded.urdf", welded), opt);
    REQUIRE(a.bodies.size() == 1);
    CHECK(r.frames.at("tip").body == "arm");
    // Hand-merged: the same mass properties computed here independently.
    const double m1 = 2, m2 = 0.5;
    const Vec3 c1{0.5, 0, 0};
    const Quat qt = quat_from_rpy(0, 0.5, 0);
    const Vec3 c2 = Vec3{1, 0, 0.2} + rotate(qt, Vec3{0, 0.1, 0});
    const Vec3 c = (m1 * c1 + m2 * c2) / (m1 + m2);
    const Mat3 R2 = rotation(qt * quat_from_rpy(0.3, 0.2, 0.1));
    auto shift = [](double m, const Vec3& d) { return m * (dot(d, d) * Mat3::identity() - outer(d, d)); };
    const Mat3 I = Mat3::diag(0.01, 0.2, 0.2) + shift(m1, c1 - c) + R2 * Mat3::diag(0.002, 0.003, 0.004) * transpose(R2) +
                   shift(m2, c2 - c);
    Spec b;
    BodySpec& body = b.add_body("arm");
    body.mass = m1 + m2;
    body.inertia = I;
    body.position = c;
    JointSpec& j = b.add_joint("hinge", "revolute", "world", "arm");
    j.anchor = Vec3{0, 0, 0};
    j.axis = Vec3{0, 1, 0};
    CHECK(a.bodies[0].mass == Approx(m1 + m2).epsilon(1e-15));
    CHECK(norm(a.bodies[0].position - c) < 1e-15);
    auto da = simulate(a, 200), db = simulate(b, 200);
    INFO("positions " << da->pose[0].x.x << " " << da->pose[0].x.z << " vs " << db->pose[0].x.x << " " << db->pose[0].x.z);
    CHECK(norm(da->pose[0].x - db->pose[0].x) < 1e-12);
    CHECK(std::fabs(da->coord[0] - db->coord[0]) < 1e-12);
}

TEST_CASE("massless links: lumped when welded, regularised rotors, refused when they move without inertia", "[urdf]") {
    const std::string rotor = R"(<robot name="rotor">
  <link name="ground"/>
  <link name="link"><inertial><origin xyz="0.5 0 0"/><mass value="1"/><inertia ixx="0.01" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="rotor"><inertial><mass value="0"/><inertia ixx="0.0001" iyy="0.0001" izz="0.0001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="revolute"><parent link="ground"/><child link="link"/><axis xyz="0 0 1"/></joint>
  <joint name="jr" type="revolute"><parent link="ground"/><child link="rotor"/><axis xyz="0 0 1"/></joint>
</robot>
)";
    Spec s;
    urdf::Options opt;
    opt.fixed_base = true;
    const urdf::Report r = urdf::import(s, fixture("rotor.urdf", rotor), opt);
    REQUIRE(s.bodies.size() == 2);
    CHECK(s.bodies[1].mass == Approx(1e-3));  // 1e-3 x the mean mass of the massive links (1 kg)
    CHECK(r.regularised_mass == Approx(1e-3));
    REQUIRE(r.warnings.size() == 1);
    CHECK_THAT(r.warnings[0], Contains("link 'rotor': zero mass with rotational inertia on moving joint 'jr'; regularised"));
    CHECK(r.imported_mass == Approx(r.file_mass + r.regularised_mass - r.world_mass));
    auto d = simulate(s, 200);
    CHECK(d->stats.failed_steps == 0);
    const std::string bad = R"(<robot name="bad">
  <link name="ground"/>
  <link name="ghost"/>
  <joint name="jg" type="prismatic"><parent link="ground"/><child link="ghost"/><axis xyz="1 0 0"/></joint>
</robot>
)";
    Spec t;
    try {
        urdf::import(t, fixture("ghost.urdf", bad), opt);
        FAIL("accepted");
    } catch (const ModelError& e) {
        CHECK_THAT(e.what(), Contains("ghost.urdf:3: link 'ghost' has no mass and no inertia but moves (joint 'jg' is prismatic)"));
    }
    // A floating base needs mass.
    Spec u;
    try {
        urdf::import(u, fixture("pend.urdf", kPendulum), {});
        FAIL("accepted");
    } catch (const ModelError& e) {
        CHECK_THAT(e.what(), Contains("pend.urdf:2: link 'base': the root link (with the links welded to it) has no mass, "
                                      "so it cannot be a floating base; use import setting 'base' = fixed"));
    }
    // Also when the massless root has inertia (issue 15: it was regularised to 1 g with a warning
    // naming joint '-').
    const std::string spinning_root = R"(<robot name="r">
  <link name="base"><inertial><mass value="0"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/></joint>
</robot>
)";
    Spec v;
    CHECK_THAT(testutil::error_of([&] { urdf::import(v, fixture("spin.urdf", spinning_root), {}); }),
               Contains("spin.urdf:2: link 'base': the root link (with the links welded to it) has no mass, so it "
                        "cannot be a floating base"));
    // lump_fixed = false: a massless link on a fixed joint is its own body, it does not "move"
    // (the message said "moves (joint 'jt' is fixed)").
    const std::string tool = R"(<robot name="r">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tool"/>
  <joint name="jt" type="fixed"><parent link="base"/><child link="tool"/></joint>
</robot>
)";
    Spec w;
    urdf::Options separate;
    separate.fixed_base = true;
    separate.lump_fixed = false;
    const std::string err = testutil::error_of([&] { urdf::import(w, fixture("tool.urdf", tool), separate); });
    CHECK_THAT(err, Contains("tool.urdf:3: link 'tool' has no mass and no inertia and is a body of its own (joint 'jt' "
                             "is fixed and import setting 'lump_fixed' = false keeps it separate)") &&
                        Contains("import setting 'lump_fixed' = true") && !Contains("moves"));
}

TEST_CASE("loop closures open at q = 0 are assembled, then stay closed", "[urdf]") {
    // A planar four-bar whose <loop_joint> frames are 0.3 m apart at q = 0 (hinges about y).
    const std::string text = R"(<robot name="fb">
  <link name="base"/>
  <link name="crank"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/><inertia ixx="0.08" iyy="0.08" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="coupler"><inertial><origin xyz="0.5 0 0"/><mass value="1"/><inertia ixx="0.001" iyy="0.08" izz="0.08" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="rocker"><inertial><origin xyz="0 0 -0.5"/><mass value="1"/><inertia ixx="0.08" iyy="0.08" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="crank"/><axis xyz="0 1 0"/><origin rpy="0 0.3 0"/></joint>
  <joint name="j2" type="continuous"><parent link="crank"/><child link="coupler"/><origin xyz="0 0 -1"/><axis xyz="0 1 0"/></joint>
  <joint name="j3" type="continuous"><parent link="base"/><child link="rocker"/><origin xyz="1 0 0"/><axis xyz="0 1 0"/></joint>
  <loop_joint name="close" type="continuous"><axis xyz="0 1 0"/><link1 link="coupler" xyz="1 0 0"/><link2 link="rocker" xyz="0 0 -1"/></loop_joint>
</robot>
)";
    Spec s;
    urdf::Options opt;
    opt.fixed_base = true;
    const urdf::Report r = urdf::import(s, fixture("loop.urdf", text), opt);
    CHECK(r.loop_joints == 1);
    const AssemblyReport a = assemble(s);
    INFO("assembly: violation " << a.initial_violation << " -> " << a.final_violation << ", largest move " << a.largest_move);
    CHECK(a.initial_violation > 0.1);
    CHECK(a.final_violation < 1e-12);
    CHECK(a.largest_move > 0.05);
    // Assembling again changes nothing.
    const Spec before = s;
    const AssemblyReport again = assemble(s);
    CHECK(again.iterations == 0);
    for (std::size_t i = 0; i < s.bodies.size(); ++i) CHECK(norm(s.bodies[i].position - before.bodies[i].position) == 0);
    // 5 s with the default solver (dense-loop: the planar closure rows are redundant).
    s.options.dt = 0.005;
    auto m = compile(s);
    Data d(m);
    double vmax = 0;
    for (int i = 0; i < 1000; ++i) {
        REQUIRE(step(*m, d) == StepStatus::ok);
        vmax = std::max(vmax, monitors(*m, d).max_violation);
    }
    CHECK(vmax < 1e-10);
    CHECK(std::fabs(d.coord[0]) > 0.05);  // it moved
}

TEST_CASE("initial joint positions and the import pose", "[urdf]") {
    Spec s;
    urdf::Options opt;
    opt.fixed_base = true;
    opt.positions["hinge"] = 0.7;
    opt.position = {0, 0, 2};
    urdf::import(s, fixture("pend2.urdf", kPendulum), opt);
    s.options.integrator = "none";
    auto m = compile(s);
    Data d(m);
    CHECK(d.coord[0] == Approx(0.7).margin(1e-12));
    // CoM at 0.5 m from the hinge at (0, 0, 2), turned by 0.7 rad about y.
    CHECK(d.pose[0].x.x == Approx(0.5 * std::cos(0.7)).margin(1e-12));
    CHECK(d.pose[0].x.z == Approx(2 - 0.5 * std::sin(0.7)).margin(1e-12));
    Spec t;
    urdf::Options bad = opt;
    bad.positions["elbow"] = 1;
    try {
        urdf::import(t, fixture("pend3.urdf", kPendulum), bad);
        FAIL("accepted");
    } catch (const ModelError& e) {
        CHECK_THAT(e.what(), Contains("initial position for joint 'elbow': no such joint"));
    }
}
