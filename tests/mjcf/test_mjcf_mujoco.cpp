// The MJCF importer against MuJoCo 2.2.2 itself (Debian's libmujoco-dev, a test oracle only: never
// linked by the engine). For every shared model 2.2.2 loads (a scratch copy without the meshes it
// cannot read or the attribute it does not know, as the shared MANIFEST says), and for a model written
// here that uses every orientation form, geom type, fromto, defaults and childclass: nq and nv, every
// body's frame at qpos0, every noether body's mass, centre of mass, principal moments of inertia and
// inertia tensor (of the MuJoCo bodies it merges), every joint's anchor and axis equal MuJoCo's to
// 1e-9 (the tensor of a body with products of inertia to the accuracy of MuJoCo's own eigensolver,
// which stores it diagonalised: measured below); on the fixed-base arm, MuJoCo's
// forward dynamics (mj_forward, no contacts, limits, actuation or passive forces; the joints'
// armature included) equal noether's at random moving states to 1e-9, and a 0.5 s fall under
// vi-midpoint follows MuJoCo's RK4.
#include <catch2/catch.hpp>

#include <Eigen/Eigenvalues>
#include <mujoco/mujoco.h>
#include <tinyxml2.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

#include "noether/mjcf.hpp"
#include "noether/noether.hpp"
#include "util.hpp"

using namespace noether;

namespace {

const std::string kModels = std::string(NOETHER_SOURCE_DIR) + "/../shared/models/";

bool exists(const std::string& p) {
    std::FILE* f = std::fopen(p.c_str(), "r");
    if (f) std::fclose(f);
    return f != nullptr;
}

// A scratch copy of an MJCF file without its mesh assets and mesh geoms (and, if asked, without
// <option integrator>, which 2.2.2 does not know in Menagerie's newer files). Written next to the
// tests' binaries.
std::string scratch_copy(const std::string& path, const std::string& name, bool drop_integrator) {
    tinyxml2::XMLDocument doc;
    REQUIRE(doc.LoadFile(path.c_str()) == tinyxml2::XML_SUCCESS);
    std::vector<tinyxml2::XMLElement*> stack{doc.RootElement()}, doomed;
    while (!stack.empty()) {
        tinyxml2::XMLElement* e = stack.back();
        stack.pop_back();
        for (tinyxml2::XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) {
            const std::string t = c->Name();
            if ((t == "mesh" && std::strcmp(e->Name(), "asset") == 0) || (t == "geom" && c->Attribute("mesh"))) doomed.push_back(c);
            else stack.push_back(c);
            if (t == "option" && drop_integrator) c->DeleteAttribute("integrator");
        }
    }
    for (tinyxml2::XMLElement* e : doomed) e->Parent()->DeleteChild(e);
    const std::string out = std::string(NOETHER_BINARY_DIR) + "/tests/" + name;
    REQUIRE(doc.SaveFile(out.c_str()) == tinyxml2::XML_SUCCESS);
    return out;
}

double quat_distance(const Quat& a, const Quat& b) {  // the angle between two rotations [rad], well conditioned
    const Quat d = conj(qnormalized(a)) * qnormalized(b);
    return 2 * std::atan2(std::sqrt(d.x * d.x + d.y * d.y + d.z * d.z), std::fabs(d.w));
}

struct Worst {
    double value = 0;
    std::string where;
    void add(double v, const std::string& w) {
        if (v > value) value = v, where = w;
    }
};

// Everything the importer decides at qpos0, against MuJoCo's compiled model.
void compare_with_mujoco(const std::string& file, int expect_bodies, double inertia_tolerance = 1e-9,
                         double mass_tolerance = 1e-9) {
    Spec s;
    s.options.integrator = "none";
    mjcf::Options o;
    o.drop_armature = true;
    o.limits = false;  // start exactly at qpos0 (some models have q = 0 outside their ranges)
    o.actuators = false;
    const mjcf::Report rep = mjcf::import(s, file, o);
    char err[1000] = "";
    mjModel* m = mj_loadXML(file.c_str(), nullptr, err, sizeof err);
    INFO(file << ": " << err);
    REQUIRE(m);
    mjData* d = mj_makeData(m);
    mj_forward(m, d);  // qpos0
    CHECK(rep.nq == m->nq);
    CHECK(rep.nv == m->nv);
    CHECK(m->nbody - 1 == expect_bodies);
    std::map<std::string, int> body_of;
    for (std::size_t i = 0; i < s.bodies.size(); ++i) body_of[s.bodies[i].name] = static_cast<int>(i);
    // Frames: every MuJoCo body at its world pose.
    Worst pos, rot, mass, com, inertia, moments, anchor, axis;
    double scale = 0;
    for (int b = 1; b < m->nbody; ++b) scale = std::max(scale, std::sqrt(d->xpos[3 * b] * d->xpos[3 * b] + d->xpos[3 * b + 1] * d->xpos[3 * b + 1] +
                                                                          d->xpos[3 * b + 2] * d->xpos[3 * b + 2]));
    scale = std::max(scale, 1.0);
    std::map<int, std::vector<int>> members;  // noether body → MuJoCo bodies
    for (int b = 1; b < m->nbody; ++b) {
        const char* mjname = mj_id2name(m, mjOBJ_BODY, b);
        const std::string name = mjname ? mjname : "body" + std::to_string(b);  // the importer's name for an unnamed body
        auto fr = rep.frames.find(name);
        REQUIRE(fr != rep.frames.end());
        Pose world = fr->second.offset;
        if (fr->second.body != "world") {
            const BodySpec& B = s.bodies[body_of.at(fr->second.body)];
            world = {B.position + rotate(B.orientation, fr->second.offset.x), B.orientation * fr->second.offset.q};
            members[body_of.at(fr->second.body)].push_back(b);
        }
        pos.add(norm(world.x - Vec3{d->xpos[3 * b], d->xpos[3 * b + 1], d->xpos[3 * b + 2]}) / scale, name);
        rot.add(quat_distance(world.q, Quat{d->xquat[4 * b], d->xquat[4 * b + 1], d->xquat[4 * b + 2], d->xquat[4 * b + 3]}), name);
    }
    // Mass properties: each noether body against the MuJoCo bodies merged into it.
    for (const auto& [nb, list] : members) {
        const BodySpec& B = s.bodies[nb];
        double M = 0;
        Vec3 c;
        for (int b : list) M += m->body_mass[b], c += m->body_mass[b] * Vec3{d->xipos[3 * b], d->xipos[3 * b + 1], d->xipos[3 * b + 2]};
        c = c / M;
        Mat3 I;
        for (int b : list) {
            Mat3 R, D;
            for (int i = 0; i < 3; ++i)
                for (int k = 0; k < 3; ++k) R.m[i][k] = d->ximat[9 * b + 3 * i + k];
            for (int i = 0; i < 3; ++i) D.m[i][i] = m->body_inertia[3 * b + i];
            const Vec3 r = Vec3{d->xipos[3 * b], d->xipos[3 * b + 1], d->xipos[3 * b + 2]} - c;
            I = I + R * D * transpose(R) + m->body_mass[b] * (dot(r, r) * Mat3::identity() - outer(r, r));
        }
        const Mat3 Rb = rotation(B.orientation);
        const Mat3 In = Rb * B.inertia * transpose(Rb);
        double Imax = 0, Idiff = 0;
        for (int i = 0; i < 3; ++i)
            for (int k = 0; k < 3; ++k) Imax = std::max(Imax, std::fabs(I.m[i][k])), Idiff = std::max(Idiff, std::fabs(I.m[i][k] - In.m[i][k]));
        mass.add(std::fabs(M - B.mass) / M, B.name);
        if (list.size() == 1) {  // the principal moments, which MuJoCo's eigensolver gets to round-off
            Eigen::Matrix3d E;
            for (int i = 0; i < 3; ++i)
                for (int k = 0; k < 3; ++k) E(i, k) = B.inertia.m[i][k];
            Eigen::Vector3d ev = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(E).eigenvalues();
            Eigen::Vector3d mj(m->body_inertia[3 * list[0]], m->body_inertia[3 * list[0] + 1], m->body_inertia[3 * list[0] + 2]);
            std::sort(mj.data(), mj.data() + 3);
            moments.add((ev - mj).cwiseAbs().maxCoeff() / ev.cwiseAbs().maxCoeff(), B.name);
        }
        com.add(norm(c - B.position) / scale, B.name);
        inertia.add(Idiff / Imax, B.name);
    }
    // Joints: anchors and axes (hinge and slide), in the world at qpos0.
    // MJCF joints by name; the joints of a body with several are one compound joint, named
    // "a+b+c", whose axes are parameters in the child's frame.
    std::map<std::string, const JointSpec*> joint_of;
    std::map<std::string, int> coordinate_of;
    for (const JointSpec& j : s.joints) {
        joint_of[j.name] = &j;
        if (j.type != "compound") continue;
        std::size_t start = 0;
        for (int i = 0;; ++i) {
            const std::size_t plus = j.name.find('+', start);
            const std::string part = j.name.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
            joint_of[part] = &j, coordinate_of[part] = i;
            if (plus == std::string::npos) break;
            start = plus + 1;
        }
    }
    int joints_compared = 0, free_joints = 0;
    for (int j = 0; j < m->njnt; ++j) {
        if (m->jnt_type[j] == mjJNT_FREE) {
            ++free_joints;
            continue;
        }
        const char* jname = mj_id2name(m, mjOBJ_JOINT, j);
        std::string unnamed;  // the importer's name of an unnamed joint
        if (!jname) {
            const int b = m->jnt_bodyid[j];
            const std::string bn = mj_id2name(m, mjOBJ_BODY, b);
            const char* types[] = {"free", "ball", "slide", "hinge"};
            unnamed = m->body_jntnum[b] > 1 ? bn + "/joint" + std::to_string(j - m->body_jntadr[b] + 1) : bn + "/" + types[m->jnt_type[j]];
        }
        const std::string jn_s = jname ? jname : unnamed;
        const char* jn = jn_s.c_str();
        const JointSpec& J = *joint_of.at(jn);
        const Pose P = J.parent == "world" ? Pose{} : Pose{s.bodies[body_of.at(J.parent)].position, s.bodies[body_of.at(J.parent)].orientation};
        const Pose C{s.bodies[body_of.at(J.child)].position, s.bodies[body_of.at(J.child)].orientation};
        const Vec3 xa{d->xanchor[3 * j], d->xanchor[3 * j + 1], d->xanchor[3 * j + 2]};
        const Vec3 xaxis{d->xaxis[3 * j], d->xaxis[3 * j + 1], d->xaxis[3 * j + 2]};
        if (J.type == "compound") {  // the anchor is the hinges' point (a slide's has no meaning)
            const int i = coordinate_of.at(jn);
            const std::vector<double>& ax = J.params.at("axes");
            axis.add(norm(rotate(C.q, Vec3{ax[3 * i], ax[3 * i + 1], ax[3 * i + 2]}) - xaxis), jn);
            if (m->jnt_type[j] == mjJNT_HINGE) {  // its point: the anchor (the last one's) moved by the points' difference
                const std::vector<double>& pt = J.params.at("points");
                const std::size_t last = pt.size() / 3 - 1;
                const Vec3 off{pt[3 * i] - pt[3 * last], pt[3 * i + 1] - pt[3 * last + 1], pt[3 * i + 2] - pt[3 * last + 2]};
                anchor.add(norm(C.x + rotate(C.q, *J.child_anchor + off) - xa) / scale, jn);
                if (norm(off) == 0) anchor.add(norm(P.x + rotate(P.q, *J.parent_anchor) - xa) / scale, jn);
            }
            ++joints_compared;
            continue;
        }
        anchor.add(norm(P.x + rotate(P.q, *J.parent_anchor) - xa) / scale, jn);
        anchor.add(norm(C.x + rotate(C.q, *J.child_anchor) - xa) / scale, jn);
        if (m->jnt_type[j] == mjJNT_HINGE || m->jnt_type[j] == mjJNT_SLIDE)
            axis.add(norm(rotate(P.q, *J.parent_axis) - xaxis), jn);
        ++joints_compared;
    }
    INFO("body frames: position " << pos.value << " (" << pos.where << "), rotation " << rot.value << " (" << rot.where << ")");
    INFO("mass " << mass.value << " (" << mass.where << "), centre of mass " << com.value << " (" << com.where << "), inertia "
                 << inertia.value << " (" << inertia.where << "), principal moments " << moments.value << " (" << moments.where << ")");
    INFO("joints: anchor " << anchor.value << " (" << anchor.where << "), axis " << axis.value << " (" << axis.where << ")");
    CHECK(!members.empty());
    CHECK(joints_compared == m->njnt - free_joints);
    CHECK(pos.value <= 1e-9);
    CHECK(rot.value <= 1e-9);
    CHECK(mass.value <= mass_tolerance);
    CHECK(com.value <= mass_tolerance);
    CHECK(inertia.value <= inertia_tolerance);
    CHECK(moments.value <= std::max(1e-9, mass_tolerance));
    CHECK(anchor.value <= 1e-9);
    CHECK(axis.value <= 1e-9);
    // The total mass is MuJoCo's.
    double total = 0;
    for (int b = 1; b < m->nbody; ++b) total += m->body_mass[b];
    CHECK(rep.file_mass == Approx(total).epsilon(std::max(1e-12, mass_tolerance)));
    mj_deleteData(d);
    mj_deleteModel(m);
}

// Every orientation form, every geom type with mass from density and from mass, fromto, nested
// defaults with childclass, degrees, eulerseq, ref, a welded body, a slide and a ball joint.
const char* kFeatures = R"(<mujoco model="features">
  <compiler angle="degree" eulerseq="zyx" autolimits="true"/>
  <default>
    <geom density="700"/>
    <joint damping="0.1"/>
    <default class="arm">
      <joint axis="0 1 0" range="-90 90"/>
      <geom type="capsule" size="0.03"/>
      <default class="heavy">
        <geom density="2500"/>
      </default>
    </default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="base" pos="0.1 -0.2 1.5" euler="10 20 30" childclass="arm">
      <joint name="j0" ref="15"/>
      <geom fromto="0 0 0 0.3 0.1 -0.4"/>
      <geom type="box" size="0.05 0.07 0.09" pos="0.1 0 0" quat="0.9 0.1 -0.2 0.3"/>
      <body name="welded" pos="0.3 0.1 -0.4" axisangle="1 1 0 40">
        <geom type="sphere" size="0.06" class="heavy"/>
        <geom type="ellipsoid" size="0.04 0.06 0.08" pos="0 0.05 0" xyaxes="0 1 0 -1 0 0.1"/>
        <body name="slider" pos="0 0 -0.1" zaxis="0.2 0.3 -1">
          <joint name="s1" type="slide" axis="1 0 0.5" range="-0.2 0.2" ref="0.05"/>
          <geom type="cylinder" fromto="0 0 0 0 0.2 -0.2" size="0.025" mass="0.4"/>
          <body name="ball" pos="0 0.2 -0.2" quat="1 2 3 4">
            <joint name="b2" type="ball" pos="0 0 0.01" range="0 60"/>
            <geom type="box" fromto="0 0 0 0.1 0.1 -0.3" size="0.02 0.03"/>
            <geom type="capsule" size="0.02 0.05" pos="0 0 -0.1" euler="30 0 45" class="heavy"/>
            <body name="hand" pos="0.1 0.1 -0.3">
              <joint name="j3" pos="0.01 0 0" axis="1 2 2"/>
              <inertial pos="0.01 0.02 -0.03" mass="0.3" fullinertia="0.002 0.003 0.004 0.0001 -0.0002 0.0003"/>
              <geom type="sphere" size="0.03" pos="0 0 -0.02"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
)";

}  // namespace

TEST_CASE("mjcf: a model with every orientation form, geom type and default equals MuJoCo's compile to 1e-9", "[mjcf][mujoco]") {
    const std::string path = std::string(NOETHER_BINARY_DIR) + "/tests/mjcf_features.xml";
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f);
    std::fputs(kFeatures, f);
    std::fclose(f);
    compare_with_mujoco(path, 5, 1e-7);  // rotated geoms and a fullinertia: MuJoCo's eigensolver (see Cassie)
}

TEST_CASE("mjcf: bodies whose inertia comes from mesh geoms equal MuJoCo's compile (mesh volumes)", "[mjcf][mujoco][mesh]") {
    // A 0.2 x 0.1 x 0.4 m box as an OBJ off the origin, scaled in one body and placed by a rotated
    // geom in another, next to a sphere; and an STL tetrahedron. MuJoCo keeps mesh vertices in single
    // precision: its masses and moments agree to ~1e-7, so they are compared at 1e-6.
    const std::string dir = std::string(NOETHER_BINARY_DIR) + "/tests/meshes/";
    mkdir(dir.c_str(), 0755);
    {
        std::FILE* f = std::fopen((dir + "box.obj").c_str(), "w");
        REQUIRE(f);
        const double sx = 0.2, sy = 0.1, sz = 0.4, ox = 0.3, oy = -0.1, oz = 0.05;
        for (int x = 0; x < 2; ++x)
            for (int y = 0; y < 2; ++y)
                for (int z = 0; z < 2; ++z) std::fprintf(f, "v %g %g %g\n", ox + x * sx, oy + y * sy, oz + z * sz);
        auto id = [](int x, int y, int z) { return x * 4 + y * 2 + z + 1; };
        auto quad = [&](int a, int b, int c, int d) { std::fprintf(f, "f %d %d %d\nf %d %d %d\n", a, b, c, a, c, d); };
        quad(id(0, 0, 0), id(0, 1, 0), id(1, 1, 0), id(1, 0, 0));
        quad(id(0, 0, 1), id(1, 0, 1), id(1, 1, 1), id(0, 1, 1));
        quad(id(0, 0, 0), id(1, 0, 0), id(1, 0, 1), id(0, 0, 1));
        quad(id(0, 1, 0), id(0, 1, 1), id(1, 1, 1), id(1, 1, 0));
        quad(id(0, 0, 0), id(0, 0, 1), id(0, 1, 1), id(0, 1, 0));
        quad(id(1, 0, 0), id(1, 1, 0), id(1, 1, 1), id(1, 0, 1));
        std::fclose(f);
        f = std::fopen((dir + "tet.stl").c_str(), "wb");  // binary STL (MuJoCo 2.2.2 reads no ASCII STL)
        REQUIRE(f);
        char header[80] = "tetrahedron";
        std::fwrite(header, 1, 80, f);
        const std::uint32_t n = 4;
        std::fwrite(&n, 4, 1, f);
        const float v[4][3] = {{0, 0, 0}, {0.2f, 0, 0}, {0, 0.3f, 0}, {0, 0, 0.25f}};
        const int tri[4][3] = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};  // outward
        for (const auto& t : tri) {
            const float normal[3] = {0, 0, 0};
            std::fwrite(normal, 4, 3, f);
            for (int k : t) std::fwrite(v[k], 4, 3, f);
            const std::uint16_t attr = 0;
            std::fwrite(&attr, 2, 1, f);
        }
        std::fclose(f);
    }
    const std::string path = std::string(NOETHER_BINARY_DIR) + "/tests/mjcf_meshes.xml";
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f);
    std::fputs(R"(<mujoco model="meshes">
  <compiler meshdir="meshes"/>
  <asset>
    <mesh name="box" file="box.obj"/>
    <mesh name="big" file="box.obj" scale="1.5 0.5 2"/>
    <mesh file="tet.stl"/>
  </asset>
  <worldbody>
    <body name="a" pos="0 0 1">
      <freejoint/>
      <geom type="mesh" mesh="box" density="800"/>
      <body name="b" pos="0.5 0.2 0" euler="10 20 30">
        <joint name="h" axis="0 1 0"/>
        <geom type="mesh" mesh="big" pos="0.1 0 0.2" euler="30 0 45"/>
        <geom type="sphere" size="0.05" pos="0 0 -0.2"/>
      </body>
      <body name="c" pos="-0.5 0 0">
        <joint name="s" type="slide" axis="1 0 0"/>
        <geom type="mesh" mesh="tet" mass="2" quat="0.9 0.1 0.3 0.2"/>
      </body>
    </body>
  </worldbody>
</mujoco>
)", f);
    std::fclose(f);
    compare_with_mujoco(path, 3, 1e-6, 1e-6);
    // The exact box: 800 kg/m³ × 0.008 m³.
    Spec s;
    s.options.integrator = "none";
    mjcf::import(s, path, {});
    CHECK(s.bodies[0].mass == Approx(6.4).epsilon(1e-6));  // assimp reads vertices in single precision too
    // A missing mesh file names the path it looked for.
    const std::string missing = std::string(NOETHER_BINARY_DIR) + "/tests/mjcf_mesh_missing.xml";
    f = std::fopen(missing.c_str(), "w");
    REQUIRE(f);
    std::fputs("<mujoco>\n<asset><mesh name=\"m\" file=\"nowhere.obj\"/></asset>\n<worldbody><body name=\"b\"><freejoint/>"
               "<geom type=\"mesh\" mesh=\"m\"/></body></worldbody>\n</mujoco>\n", f);
    std::fclose(f);
    Spec s2;
    CHECK_THROWS_WITH(mjcf::import(s2, missing, {}), Catch::Contains("mjcf_mesh_missing.xml:2") &&
                                                          Catch::Contains("body 'b': its inertia comes from its geoms") &&
                                                          Catch::Contains("tests/nowhere.obj' cannot be read"));
}

TEST_CASE("mjcf: the shared MJCF models equal MuJoCo's compile to 1e-9", "[mjcf][mujoco]") {
    if (!exists(kModels + "MANIFEST.md")) return;  // no shared models here
    SECTION("Cassie (four connect loops, ball joints, ref, xyaxes, fullinertia)") {
        // MuJoCo stores a fullinertia diagonalised (principal moments and a quaternion); its eigensolver
        // gives the file's own tensor back only to ~5e-8 (left-knee's Ixx 0.001376 comes back as
        // 0.0013760000709), so Cassie's inertias are compared at 1e-6, the rest at 1e-9.
        const std::string file = kModels + "mujoco_menagerie/agility_cassie/cassie.xml";
        char err[1000] = "";
        mjModel* m = mj_loadXML(file.c_str(), nullptr, err, sizeof err);
        REQUIRE(m);
        const int b = mj_name2id(m, mjOBJ_BODY, "left-knee");
        REQUIRE(b > 0);
        mjtNum R[9];
        mju_quat2Mat(R, m->body_iquat + 4 * b);
        double Ixx = 0;
        for (int j = 0; j < 3; ++j) Ixx += R[j] * m->body_inertia[3 * b + j] * R[j];
        CHECK(std::fabs(Ixx - 0.001376) / 0.001376 > 1e-8);  // the premise: MuJoCo's round trip is not exact
        CHECK(std::fabs(Ixx - 0.001376) / 0.001376 < 1e-6);
        mj_deleteModel(m);
        compare_with_mujoco(file, 25, 1e-6);
    }
    SECTION("Go2 (scratch copy without its meshes)") {
        compare_with_mujoco(scratch_copy(kModels + "mujoco_menagerie/unitree_go2/go2.xml", "go2_no_meshes.xml", false), 13);
    }
    SECTION("UR5e (scratch copy without its meshes and integrator=\"implicitfast\")") {
        compare_with_mujoco(scratch_copy(kModels + "mujoco_menagerie/universal_robots_ur5e/ur5e.xml", "ur5e_no_meshes.xml", true), 7);
    }
    SECTION("Panda (scratch copy without its meshes and integrator=\"implicitfast\"; a joint equality)") {
        // fullinertia, like Cassie's: MuJoCo's diagonalised round trip gives the tensors back to ~6e-7.
        compare_with_mujoco(scratch_copy(kModels + "mujoco_menagerie/franka_emika_panda/panda.xml", "panda_no_meshes.xml", true), 11,
                            1e-6);
    }
    SECTION("ant (masses from geoms at density 5, fromto capsules)") {
        compare_with_mujoco(kModels + "Gymnasium/gymnasium/envs/mujoco/assets/ant.xml", 13);
    }
    SECTION("hopper, half_cheetah, walker2d (planar roots: compound joints; settotalmass)") {
        compare_with_mujoco(kModels + "Gymnasium/gymnasium/envs/mujoco/assets/hopper.xml", 4);
        compare_with_mujoco(kModels + "Gymnasium/gymnasium/envs/mujoco/assets/half_cheetah.xml", 7);
        compare_with_mujoco(kModels + "Gymnasium/gymnasium/envs/mujoco/assets/walker2d.xml", 7);
    }
    SECTION("humanoid (hinges stacked through one point and at two points, degrees, nested classes, fromto capsules)") {
        compare_with_mujoco(kModels + "mujoco/model/humanoid/humanoid.xml", 16);
    }
    SECTION("jdotv_connect_2d (a compound joint in a rotated body closing a loop)") {
        compare_with_mujoco(kModels + "mujoco/test/engine/testdata/core_constraint/jdotv_connect_2d.xml", 2);
    }
}

TEST_CASE("mjcf: the UR5e's forward dynamics, armature included, equal MuJoCo's mj_forward to 1e-9 at moving states", "[mjcf][mujoco]") {
    if (!exists(kModels + "MANIFEST.md")) return;
    const std::string file = scratch_copy(kModels + "mujoco_menagerie/universal_robots_ur5e/ur5e.xml", "ur5e_no_meshes_fd.xml", true);
    Spec s;
    s.options.integrator = "none";
    mjcf::Options o;
    o.limits = false;
    o.actuators = false;
    mjcf::import(s, file, o);
    for (JointSpec& j : s.joints) {
        j.damping.clear();  // the queries leave out passive forces; so does MuJoCo below
        REQUIRE(j.armature == std::vector<double>{0.1});  // the file's armature, kept
    }
    auto model = compile(s);
    Kinematics k(model);
    const int n = k.n();
    char err[1000] = "";
    mjModel* m = mj_loadXML(file.c_str(), nullptr, err, sizeof err);
    INFO(err);
    REQUIRE(m);
    REQUIRE(m->nv == n);
    m->opt.disableflags |= mjDSBL_CONTACT | mjDSBL_LIMIT | mjDSBL_ACTUATION | mjDSBL_PASSIVE | mjDSBL_FRICTIONLOSS;
    mjData* d = mj_makeData(m);
    for (int j = 0; j < n; ++j) REQUIRE(std::string(mj_id2name(m, mjOBJ_JOINT, j)) == model->joints[j].name);
    testutil::Rng r(5);
    double worst = 0, scale = 0, armature_effect = 0;
    for (int trial = 0; trial < 5; ++trial) {
        std::vector<double> q(n), qd(n), tau(n, 0.0), qdd(n);
        for (int i = 0; i < n; ++i) q[i] = r.uniform(-2, 2), qd[i] = r.uniform(-2, 2);
        k.forward_dynamics(q.data(), qd.data(), tau.data(), qdd.data());
        for (int i = 0; i < n; ++i) d->qpos[i] = q[i], d->qvel[i] = qd[i];
        mj_forward(m, d);
        for (int i = 0; i < n; ++i) worst = std::max(worst, std::fabs(qdd[i] - d->qacc[i])), scale = std::max(scale, std::fabs(d->qacc[i]));
        // The same state without armature in MuJoCo: how much it changes the accelerations.
        std::vector<mjtNum> keep(m->dof_armature, m->dof_armature + n);
        for (int i = 0; i < n; ++i) m->dof_armature[i] = 0;
        mj_forward(m, d);
        for (int i = 0; i < n; ++i) armature_effect = std::max(armature_effect, std::fabs(qdd[i] - d->qacc[i]));
        for (int i = 0; i < n; ++i) m->dof_armature[i] = keep[i];
    }
    INFO("largest difference " << worst << " of " << scale << " rad/s^2; without MuJoCo's armature " << armature_effect);
    CHECK(scale > 1);  // the states move: gravity and velocity terms are in play
    CHECK(worst <= 1e-9 * scale);
    CHECK(armature_effect > 1e-3 * scale);  // the armature matters at these states: the check can fail
    mj_deleteData(d);
    mj_deleteModel(m);
}

TEST_CASE("mjcf: the UR5e falling 0.5 s under vi-midpoint follows MuJoCo's RK4 (armature included)", "[mjcf][mujoco]") {
    if (!exists(kModels + "MANIFEST.md")) return;
    const std::string file = scratch_copy(kModels + "mujoco_menagerie/universal_robots_ur5e/ur5e.xml", "ur5e_no_meshes_run.xml", true);
    const double dt = 2.5e-4, T = 0.5;
    const int steps = static_cast<int>(std::lround(T / dt));
    // MuJoCo: RK4, no contacts, limits or actuation (the UR5e has no joint damping or springs).
    char err[1000] = "";
    mjModel* m = mj_loadXML(file.c_str(), nullptr, err, sizeof err);
    INFO(err);
    REQUIRE(m);
    m->opt.disableflags |= mjDSBL_CONTACT | mjDSBL_LIMIT | mjDSBL_ACTUATION | mjDSBL_FRICTIONLOSS;
    m->opt.integrator = mjINT_RK4;
    m->opt.timestep = dt;
    mjData* d = mj_makeData(m);
    const double q0[6] = {0.3, -1.2, 1.0, -0.5, 0.8, 0.2};
    for (int i = 0; i < 6; ++i) d->qpos[i] = q0[i];
    for (int i = 0; i < steps; ++i) mj_step(m, d);
    // noether: the same start, vi-midpoint at the same step.
    Spec s;
    s.options.integrator = "vi-midpoint";
    s.options.dt = dt;
    mjcf::Options o;
    o.limits = false;
    o.actuators = false;
    mjcf::import(s, file, o);
    auto model = compile(s);
    Data nd(model);
    std::vector<double> q(q0, q0 + 6), z(6, 0.0);
    set_joint_state(*model, nd, q.data(), z.data());
    for (int i = 0; i < steps; ++i) REQUIRE(step(*model, nd) == StepStatus::ok);
    double worst = 0, moved = 0;
    for (int i = 0; i < 6; ++i) worst = std::max(worst, std::fabs(nd.coord[i] - d->qpos[i])), moved = std::max(moved, std::fabs(d->qpos[i] - q0[i]));
    INFO("largest joint difference after " << T << " s: " << worst << " rad (the joints moved up to " << moved << " rad)");
    CHECK(moved > 0.3);
    CHECK(worst <= 1e-5);
    mj_deleteData(d);
    mj_deleteModel(m);
}

namespace {

// The model of an MJCF file from its keyframe `key`, free of limits, contacts and actuation (what the
// comparisons with MuJoCo's smooth dynamics take), for `integrator`.
Spec import_free(const std::string& file, const char* key, const char* integrator) {
    Spec s;
    s.options.integrator = integrator;
    mjcf::Options o;
    o.keyframe = key;
    o.limits = false;
    o.contacts = false;
    o.actuators = false;
    mjcf::import(s, file, o);
    return s;
}

// A scratch copy of an MJCF file with one more <key name=key> (qpos only if given), every value
// written exactly (%.17g).
std::string scratch_with_key(const std::string& path, const std::string& name, const char* key_name,
                             const std::vector<double>* qpos, const std::vector<double>& qvel) {
    auto text = [](const std::vector<double>& v) {
        std::string out;
        for (double x : v) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.17g", x);
            out += (out.empty() ? "" : " ") + std::string(buf);
        }
        return out;
    };
    tinyxml2::XMLDocument doc;
    REQUIRE(doc.LoadFile(path.c_str()) == tinyxml2::XML_SUCCESS);
    tinyxml2::XMLElement* kf = doc.RootElement()->FirstChildElement("keyframe");
    if (!kf) kf = doc.RootElement()->InsertNewChildElement("keyframe");
    tinyxml2::XMLElement* key = kf->InsertNewChildElement("key");
    key->SetAttribute("name", key_name);
    if (qpos) key->SetAttribute("qpos", text(*qpos).c_str());
    key->SetAttribute("qvel", text(qvel).c_str());
    const std::string out = std::string(NOETHER_BINARY_DIR) + "/tests/" + name;
    REQUIRE(doc.SaveFile(out.c_str()) == tinyxml2::XML_SUCCESS);
    return out;
}

// The joint-space mass matrix of an MJCF model at qpos0 as noether's import sees it: the bodies'
// velocities for each unit joint rate (a scratch copy with a <key> of that qvel), M_jk = Σ_b m v_j·v_k +
// ω_jᵀ I ω_k. The compiled Data's coordinates and rates must be the key's: the joint plugins
// (compound ones included) read MuJoCo's qpos and qvel back from the bodies.
std::vector<double> noether_mass_matrix(const std::string& path, const std::string& name, int nq, int nv,
                                        const std::vector<double>& qpos, double* worst_coord) {
    std::vector<double> M(static_cast<std::size_t>(nv) * nv, 0.0);
    std::vector<std::vector<BodySpec>> unit(nv);
    *worst_coord = 0;
    REQUIRE(static_cast<int>(qpos.size()) == nq);
    for (int j = 0; j < nv; ++j) {
        std::vector<double> unit_rate(nv, 0.0);
        unit_rate[j] = 1;
        const std::string out = scratch_with_key(path, name, "probe", &qpos, unit_rate);
        const Spec s = import_free(out, "probe", "vi-maximal");
        unit[j] = s.bodies;
        // The Data the plugins read back: coordinates and rates equal the key's (trees: coord order = qpos
        // order with the free root left out, which these models do not have).
        auto m = compile(s);
        Data d(m);
        REQUIRE(static_cast<int>(d.coord.size()) == nv);
        for (int i = 0; i < nv; ++i) {
            *worst_coord = std::max(*worst_coord, std::fabs(d.coord[i] - qpos[i]));
            *worst_coord = std::max(*worst_coord, std::fabs(d.rate[i] - (i == j ? 1.0 : 0.0)));
        }
    }
    for (int j = 0; j < nv; ++j)
        for (int k = 0; k < nv; ++k) {
            double e = 0;
            for (std::size_t b = 0; b < unit[j].size(); ++b) {
                const BodySpec& bj = unit[j][b];
                const BodySpec& bk = unit[k][b];
                const Mat3 R = rotation(bj.orientation);
                e += bj.mass * dot(bj.velocity, bk.velocity) + dot(bj.angular_velocity, R * bj.inertia * transpose(R) * bk.angular_velocity);
            }
            M[static_cast<std::size_t>(j) * nv + k] = e;
        }
    return M;
}

}  // namespace

TEST_CASE("mjcf: hopper, half_cheetah, walker2d and the loop model: coordinates, rates and mass matrices equal MuJoCo's", "[mjcf][mujoco]") {
    if (!exists(kModels + "MANIFEST.md")) return;
    for (const char* rel : {"Gymnasium/gymnasium/envs/mujoco/assets/hopper.xml", "Gymnasium/gymnasium/envs/mujoco/assets/half_cheetah.xml",
                            "Gymnasium/gymnasium/envs/mujoco/assets/walker2d.xml"}) {
        const std::string file = kModels + rel;
        INFO(rel);
        char err[1000] = "";
        mjModel* m = mj_loadXML(file.c_str(), nullptr, err, sizeof err);
        REQUIRE(m);
        mjData* d = mj_makeData(m);
        testutil::Rng r(21);
        std::vector<double> qpos(m->nq);
        for (int i = 0; i < m->nq; ++i) qpos[i] = m->qpos0[i] + r.uniform(-0.5, 0.5);
        for (int i = 0; i < m->nq; ++i) d->qpos[i] = qpos[i];
        mj_forward(m, d);
        std::vector<mjtNum> Mmj(static_cast<std::size_t>(m->nv) * m->nv);
        mj_fullM(m, Mmj.data(), d->qM);
        for (int i = 0; i < m->nv; ++i) Mmj[static_cast<std::size_t>(i) * m->nv + i] -= m->dof_armature[i];  // noether's armature is on its coordinates, not in the bodies
        double worst_coord = 0;
        const std::vector<double> Mn = noether_mass_matrix(file, "probe.xml", m->nq, m->nv, qpos, &worst_coord);
        double worst = 0, scale = 0;
        for (std::size_t i = 0; i < Mn.size(); ++i) worst = std::max(worst, std::fabs(Mn[i] - Mmj[i])), scale = std::max(scale, std::fabs(Mmj[i]));
        INFO("mass matrix: largest difference " << worst << " of " << scale << "; coordinates and rates read back to " << worst_coord);
        CHECK(worst <= 1e-9 * scale);
        CHECK(worst_coord <= 1e-9);
        mj_deleteData(d);
        mj_deleteModel(m);
    }
}

namespace {

// A model tossed in the air (contacts, limits and actuation off; springs, dampers and armature on)
// from qpos0 with the rates qvel: MuJoCo's RK4 and noether's vi-midpoint at the same step; the
// largest difference of the joint coordinates after T (a free root's 7 are skipped: first).
double toss_difference(const std::string& file, const std::vector<double>& qvel, double dt, double T, int first, double* moved) {
    const int steps = static_cast<int>(std::lround(T / dt));
    char err[1000] = "";
    mjModel* m = mj_loadXML(file.c_str(), nullptr, err, sizeof err);
    REQUIRE(m);
    REQUIRE(m->nv == static_cast<int>(qvel.size()));
    m->opt.disableflags |= mjDSBL_CONTACT | mjDSBL_LIMIT | mjDSBL_ACTUATION | mjDSBL_FRICTIONLOSS;
    m->opt.integrator = mjINT_RK4;
    m->opt.timestep = dt;
    mjData* d = mj_makeData(m);
    for (int i = 0; i < m->nv; ++i) d->qvel[i] = qvel[i];
    const std::vector<double> qpos0(m->qpos0, m->qpos0 + m->nq);
    for (int i = 0; i < steps; ++i) mj_step(m, d);
    // noether: a scratch copy with that start as a key.
    const std::string scratch = scratch_with_key(file, "toss.xml", "toss", nullptr, qvel);
    Spec s = import_free(scratch, "toss", "vi-midpoint");
    s.options.dt = dt;
    auto model = compile(s);
    Data nd(model);
    for (int i = 0; i < steps; ++i) REQUIRE(step(*model, nd) == StepStatus::ok);
    double worst = 0;
    *moved = 0;
    REQUIRE(static_cast<int>(nd.coord.size()) == m->nq - first);
    for (int i = first; i < m->nq; ++i)
        worst = std::max(worst, std::fabs(nd.coord[i - first] - d->qpos[i])), *moved = std::max(*moved, std::fabs(d->qpos[i] - qpos0[i]));
    mj_deleteData(d);
    mj_deleteModel(m);
    return worst;
}

}  // namespace

TEST_CASE("mjcf: the hopper and the humanoid tumbling in the air under vi-midpoint follow MuJoCo's RK4 (compound joints, armature, springs, dampers)", "[mjcf][mujoco]") {
    if (!exists(kModels + "MANIFEST.md")) return;
    double moved = 0;
    const double hop = toss_difference(kModels + "Gymnasium/gymnasium/envs/mujoco/assets/hopper.xml", {0.5, 2.0, -1.5, 3.0, -2.0, 4.0},
                                       2.5e-4, 0.4, 0, &moved);
    INFO("hopper: largest coordinate difference after 0.4 s " << hop << " (the coordinates moved up to " << moved << ")");
    CHECK(moved > 0.5);
    CHECK(hop <= 1e-5);
    std::vector<double> qv(27, 0.0);
    testutil::Rng r(8);
    for (double& v : qv) v = std::round(r.uniform(-2, 2) * 100) / 100;
    const double hum = toss_difference(kModels + "mujoco/model/humanoid/humanoid.xml", qv, 2.5e-4, 0.3, 7, &moved);
    INFO("humanoid: largest joint difference after 0.3 s " << hum << " rad (the joints moved up to " << moved << ")");
    CHECK(moved > 0.3);
    CHECK(hum <= 1e-5);
}

TEST_CASE("mjcf: a tendon equality and a fixed tendon over three joints are linear couplings with MuJoCo's meaning", "[mjcf][mujoco][couplings]") {
    // Three hinges with refs; tendon t1 = j1 − 0.5 j2, t2 = 2 j3; the equality t1 − t1⁰ = 0.1 + 0.5 (t2 − t2⁰)
    // (t⁰: lengths at qpos0) and the range −1 <= j1 + j2 + j3 <= 1.5. MuJoCo's constraint value
    // (efc_pos of the equality row) at random joint positions equals noether's coupling residual
    // Σ coef q − offset from the imported coupling: the refs, coefficients, a0 and a1 mean the same.
    const std::string path = std::string(NOETHER_BINARY_DIR) + "/tests/mjcf_tendon_eq.xml";
    std::FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f);
    std::fputs(R"(<mujoco>
  <compiler angle="radian"/>
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <body name="a"><joint name="j1" axis="0 1 0" ref="0.3"/><geom size="0.05" pos="0.5 0 0" mass="1"/>
      <body name="b" pos="1 0 0"><joint name="j2" axis="0 1 0" ref="-0.2"/><geom size="0.05" pos="0.5 0 0" mass="1"/>
        <body name="c" pos="1 0 0"><joint name="j3" axis="0 1 0" ref="0.1"/><geom size="0.05" pos="0.5 0 0" mass="1"/></body>
      </body>
    </body>
  </worldbody>
  <tendon>
    <fixed name="t1"><joint joint="j1" coef="1"/><joint joint="j2" coef="-0.5"/></fixed>
    <fixed name="t2"><joint joint="j3" coef="2"/></fixed>
    <fixed name="sum" limited="true" range="-1 1.5"><joint joint="j1" coef="1"/><joint joint="j2" coef="1"/><joint joint="j3" coef="1"/></fixed>
  </tendon>
  <equality><tendon name="diff" tendon1="t1" tendon2="t2" polycoef="0.1 0.5 0 0 0"/></equality>
</mujoco>
)",
               f);
    std::fclose(f);
    Spec s;
    s.options.integrator = "none";
    const mjcf::Report rep = mjcf::import(s, path, {});
    REQUIRE(s.couplings.size() == 2);
    const CouplingSpec& eq = s.couplings[0].name == "diff" ? s.couplings[0] : s.couplings[1];
    const CouplingSpec& sum = s.couplings[0].name == "diff" ? s.couplings[1] : s.couplings[0];
    REQUIRE(eq.more.size() == 1);
    REQUIRE(sum.more.size() == 1);
    CHECK(sum.range);
    CHECK(rep.couplings == 2);
    bool t1_reported = false;  // a tendon an equality uses is reported as such, not as "no force of its own"
    for (const mjcf::Report::Entry& e : rep.tendons) t1_reported |= e.name == "t1" && e.mapped.find("coupling 'diff'") != std::string::npos;
    CHECK(t1_reported);
    auto coordinate = [&](const std::string& joint, const double* q) { return q[joint[1] - '1']; };  // j1, j2, j3 → qpos 0, 1, 2
    auto residual = [&](const CouplingSpec& c, const double* q) {
        double v = coordinate(c.joint, q) - c.ratio * coordinate(c.leader, q) - c.offset;
        for (const CouplingSpec::Leader& l : c.more) v -= l.ratio * coordinate(l.joint, q);
        return v;
    };
    char err[1000] = "";
    mjModel* m = mj_loadXML(path.c_str(), nullptr, err, sizeof err);
    INFO(err);
    REQUIRE(m);
    REQUIRE(m->neq == 1);
    mjData* d = mj_makeData(m);
    testutil::Rng rng(11);
    double worst = 0, scale = 0;
    for (int trial = 0; trial < 20; ++trial) {
        for (int k = 0; k < 3; ++k) d->qpos[k] = 0.8 * rng.uniform(-1, 1);
        mj_forward(m, d);
        REQUIRE(d->nefc >= 1);
        REQUIRE(d->efc_type[0] == mjCNSTR_EQUALITY);
        worst = std::max(worst, std::fabs(d->efc_pos[0] - residual(eq, d->qpos)));
        scale = std::max(scale, std::fabs(d->efc_pos[0]));
        // The range: MuJoCo's tendon length minus the bound, against the coupling's value.
        const double len = d->ten_length[2];
        CHECK(len == Approx(residual(sum, d->qpos) + sum.offset).margin(1e-12));
    }
    CHECK(scale > 0.1);  // the states are off the equality
    CHECK(worst <= 1e-12);
    CHECK(sum.lower == -1);
    CHECK(sum.upper == 1.5);
    mj_deleteData(d);
    mj_deleteModel(m);
}
