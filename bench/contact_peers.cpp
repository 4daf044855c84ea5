// Contact, friction and joint limits: noether against MuJoCo (Debian's libmujoco-dev, its defaults)
// on the same scenes, measured the same way (docs/contact.md, "Against MuJoCo"). One JSON object per
// scene, engine and step on stdout (and --out FILE): what each engine's answer is, what is exact,
// and the CPU time per step (the best of --rounds interleaved rounds).
//
//   build/bin/contact_peers [--rounds 3] [--out bench/results/contact_peers.jsonl]
#include <mujoco/mujoco.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "noether/noether.hpp"
#include "noether/urdf.hpp"

namespace {

using namespace noether;

constexpr double kG = 9.81;

double cpu_now() {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

// ---- MuJoCo ----------------------------------------------------------------------------------

struct Mj {
    mjModel* m = nullptr;
    mjData* d = nullptr;
    explicit Mj(const std::string& xml) {
        char path[] = "/tmp/noether_contact_peers_XXXXXX.xml";
        const int fd = mkstemps(path, 4);
        if (fd < 0 || write(fd, xml.data(), xml.size()) != static_cast<ssize_t>(xml.size()))
            throw std::runtime_error("mujoco: cannot write a temporary model file");
        close(fd);
        char err[1000] = "";
        m = mj_loadXML(path, nullptr, err, sizeof err);
        std::remove(path);
        if (!m) throw std::runtime_error(std::string("mujoco: ") + err);
        d = mj_makeData(m);
    }
    ~Mj() {
        mj_deleteData(d);
        mj_deleteModel(m);
    }
    void step() { mj_step(m, d); }
};

std::string mj_header(double dt, double gx, double gz, const std::string& cone) {
    std::ostringstream x;
    x.precision(17);
    x << "<mujoco><compiler angle=\"radian\"/><option timestep=\"" << dt << "\" gravity=\"" << gx << " 0 " << gz << "\""
      << (cone.empty() ? "" : " cone=\"" + cone + "\"") << "/><worldbody>";
    return x.str();
}

// A 1 m cube of 1 kg (friction mu on it and on the floor: MuJoCo takes the larger of the two).
std::string mj_cube(double dt, double z, Vec3 v, double mu, double gx, double gz, const std::string& cone = "") {
    std::ostringstream x;
    x.precision(17);
    x << mj_header(dt, gx, gz, cone) << "<geom type=\"plane\" size=\"0 0 1\" friction=\"" << mu << " 0.005 0.0001\"/>"
      << "<body pos=\"0 0 " << z << "\"><freejoint/><geom type=\"box\" size=\"0.5 0.5 0.5\" mass=\"1\" friction=\"" << mu
      << " 0.005 0.0001\"/></body></worldbody></mujoco>";
    (void)v;
    return x.str();
}

// ---- noether ---------------------------------------------------------------------------------

Spec nt_cube(double dt, double z, Vec3 v, double mu, Vec3 g) {
    Spec s;
    s.options.dt = dt;
    s.gravity = g;
    BodySpec& b = s.add_body("box");
    b.mass = 1;
    b.inertia = Mat3::diag(1.0 / 6, 1.0 / 6, 1.0 / 6);
    b.position = {0, 0, z};
    b.velocity = v;
    ContactSpec c;
    c.body = "box";
    c.type = ContactSpec::Type::box;
    c.size = {1, 1, 1};
    c.mu = mu;
    s.contacts.push_back(c);
    return s;
}

double nt_penetration(const Data& d) {
    double p = 0;
    for (const ContactResult& c : d.contact) p = std::max(p, -c.gap);
    return p;
}

// ---- output ----------------------------------------------------------------------------------

struct Row {
    std::string scene, engine, quantity;
    double dt = 0, value = 0, exact = NAN, us_per_step = NAN, iterations = NAN;
    std::string to_json() const {
        char buf[512];
        auto num = [](double v) {
            char b[64];
            if (std::isnan(v)) return std::string("null");
            std::snprintf(b, sizeof b, "%.10g", v);
            return std::string(b);
        };
        std::snprintf(buf, sizeof buf,
                      "{\"scene\":\"%s\",\"engine\":\"%s\",\"dt\":%g,\"quantity\":\"%s\",\"value\":%s,\"exact\":%s,"
                      "\"us_per_step\":%s,\"iterations\":%s}",
                      scene.c_str(), engine.c_str(), dt, quantity.c_str(), num(value).c_str(), num(exact).c_str(),
                      num(us_per_step).c_str(), num(iterations).c_str());
        return buf;
    }
};

std::vector<Row> rows;

// Run `steps` steps of a simulation `rounds` times (a fresh one each round), keeping the best CPU time.
template <class Make, class Step>
double best_us(int rounds, int steps, Make&& make, Step&& step) {
    double best = HUGE_VAL;
    for (int r = 0; r < rounds; ++r) {
        auto sim = make();
        const double t0 = cpu_now();
        for (int i = 0; i < steps; ++i) step(*sim);
        best = std::min(best, 1e6 * (cpu_now() - t0) / steps);
    }
    return best;
}

void measure_cubes(int rounds) {
    for (double dt : {0.002, 0.01}) {
        const int n2 = static_cast<int>(std::lround(2.0 / dt));
        // Drop 1 m, mu 0.5: peak and resting penetration.
        {
            Mj mj(mj_cube(dt, 1.5, {}, 0.5, 0, -kG));
            double peak = 0;
            for (int i = 0; i < n2; ++i) mj.step(), peak = std::max(peak, 0.5 - mj.d->qpos[2]);
            rows.push_back({"drop 1 m", "mujoco", "peak penetration [m]", dt, peak, 0});
            rows.push_back({"drop 1 m", "mujoco", "resting penetration [m]", dt, 0.5 - mj.d->qpos[2], 0});
            const double us = best_us(rounds, n2, [&] { return std::make_unique<Mj>(mj_cube(dt, 1.5, {}, 0.5, 0, -kG)); },
                                      [](Mj& s) { s.step(); });
            rows.back().us_per_step = us;
            auto m = compile(nt_cube(dt, 1.5, {}, 0.5, {0, 0, -kG}));
            Data d(m);
            double npeak = 0;
            long long it = 0;
            for (int i = 0; i < n2; ++i) step(*m, d), npeak = std::max(npeak, nt_penetration(d)), it += d.last.iterations;
            rows.push_back({"drop 1 m", "noether", "peak penetration [m]", dt, npeak, 0});
            rows.push_back({"drop 1 m", "noether", "resting penetration [m]", dt, 0.5 - d.pose[0].x.z, 0});
            rows.back().us_per_step = best_us(rounds, n2, [&] { return std::make_unique<Data>(m); },
                                              [&](Data& s) { step(*m, s); });
            rows.back().iterations = double(it) / n2;
        }
        // Slide at 2 m/s, mu 0.5: distance (exact v0²/(2 mu g)).
        {
            Mj mj(mj_cube(dt, 0.5, {}, 0.5, 0, -kG));
            mj.d->qvel[0] = 2;
            const int n = static_cast<int>(std::lround(1.5 / dt));
            for (int i = 0; i < n; ++i) mj.step();
            rows.push_back({"slide 2 m/s, mu 0.5", "mujoco", "distance [m]", dt, mj.d->qpos[0], 4 / (2 * 0.5 * kG)});
            rows.back().us_per_step = best_us(rounds, n, [&] {
                auto s = std::make_unique<Mj>(mj_cube(dt, 0.5, {}, 0.5, 0, -kG));
                s->d->qvel[0] = 2;
                return s;
            }, [](Mj& s) { s.step(); });
            auto m = compile(nt_cube(dt, 0.5, {2, 0, 0}, 0.5, {0, 0, -kG}));
            Data d(m);
            long long it = 0;
            for (int i = 0; i < n; ++i) step(*m, d), it += d.last.iterations;
            rows.push_back({"slide 2 m/s, mu 0.5", "noether", "distance [m]", dt, d.pose[0].x.x, 4 / (2 * 0.5 * kG)});
            rows.back().us_per_step = best_us(rounds, n, [&] { return std::make_unique<Data>(m); }, [&](Data& s) { step(*m, s); });
            rows.back().iterations = double(it) / n;
        }
        // Slopes (gravity tilted by theta about y), mu 0.5: 0.35 sticks (slip speed at 1 s), 0.6 slides.
        for (double th : {0.35, 0.6}) {
            const double gx = -kG * std::sin(th), gz = -kG * std::cos(th);
            const int n = static_cast<int>(std::lround(1.0 / dt));
            const std::string scene = th < 0.5 ? "slope 0.35 rad, mu 0.5 (sticks)" : "slope 0.60 rad, mu 0.5 (slides)";
            const std::string q = th < 0.5 ? "slip speed at 1 s [m/s]" : "speed at 1 s [m/s]";
            const double exact = th < 0.5 ? 0.0 : kG * (std::sin(th) - 0.5 * std::cos(th));
            Mj mj(mj_cube(dt, 0.5, {}, 0.5, gx, gz));
            for (int i = 0; i < n; ++i) mj.step();
            rows.push_back({scene, "mujoco", q, dt, std::hypot(mj.d->qvel[0], mj.d->qvel[1]), exact});
            auto m = compile(nt_cube(dt, 0.5, {}, 0.5, {gx, 0, gz}));
            Data d(m);
            for (int i = 0; i < n; ++i) step(*m, d);
            rows.push_back({scene, "noether", q, dt, std::hypot(d.twist[0].v.x, d.twist[0].v.y), exact});
        }
        // Oblique slide (4, 0.8) m/s, mu 0.25: heading and distance (pyramidal and elliptic cones).
        for (const char* cone : {"pyramidal", "elliptic"}) {
            Mj mj(mj_cube(dt, 0.5, {}, 0.25, 0, -kG, cone));
            mj.d->qvel[0] = 4, mj.d->qvel[1] = 0.8;
            const int n = static_cast<int>(std::lround(2.0 / dt));
            for (int i = 0; i < n; ++i) mj.step();
            const std::string eng = std::string("mujoco ") + cone;
            rows.push_back({"oblique slide (4, 0.8), mu 0.25", eng, "heading [deg]", dt,
                            std::atan2(mj.d->qpos[1], mj.d->qpos[0]) * 180 / M_PI, std::atan2(0.8, 4) * 180 / M_PI});
            rows.push_back({"oblique slide (4, 0.8), mu 0.25", eng, "distance [m]", dt, std::hypot(mj.d->qpos[0], mj.d->qpos[1]),
                            (16 + 0.64) / (2 * 0.25 * kG)});
        }
        {
            auto m = compile(nt_cube(dt, 0.5, {4, 0.8, 0}, 0.25, {0, 0, -kG}));
            Data d(m);
            const int n = static_cast<int>(std::lround(2.0 / dt));
            for (int i = 0; i < n; ++i) step(*m, d);
            rows.push_back({"oblique slide (4, 0.8), mu 0.25", "noether", "heading [deg]", dt,
                            std::atan2(d.pose[0].x.y, d.pose[0].x.x) * 180 / M_PI, std::atan2(0.8, 4) * 180 / M_PI});
            rows.push_back({"oblique slide (4, 0.8), mu 0.25", "noether", "distance [m]", dt,
                            std::hypot(d.pose[0].x.x, d.pose[0].x.y), (16 + 0.64) / (2 * 0.25 * kG)});
        }
    }
}

void measure_limit(int rounds) {
    (void)rounds;
    for (double dt : {0.002, 0.01}) {
        const int n = static_cast<int>(std::lround(3.0 / dt));
        std::ostringstream x;
        x << mj_header(dt, 0, -kG, "") << "<body pos=\"0 0 0\"><joint name=\"hinge\" type=\"hinge\" axis=\"0 1 0\" "
          << "limited=\"true\" range=\"-0.5 0.5\"/><geom type=\"box\" size=\"0.05 0.05 0.5\" pos=\"0 0 -0.5\" mass=\"1\" "
          << "contype=\"0\" conaffinity=\"0\"/></body></worldbody></mujoco>";
        Mj mj(x.str());
        mj.d->qvel[0] = 4;
        double peak = -HUGE_VAL;
        for (int i = 0; i < n; ++i) mj.step(), peak = std::max(peak, mj.d->qpos[0]);
        rows.push_back({"pendulum into +-0.5 rad, 4 rad/s", "mujoco", "overshoot [rad]", dt, peak - 0.5, 0});
        Spec s;
        s.options.dt = dt;
        BodySpec& b = s.add_body("bob");
        b.mass = 1;
        b.inertia = Mat3::diag((1 + 0.01) / 12, (1 + 0.01) / 12, 0.02 / 12);
        b.position = {0, 0, -0.5};
        b.angular_velocity = {0, 4, 0};
        b.velocity = {-2, 0, 0};
        JointSpec& j = s.add_joint("hinge", "revolute", "world", "bob");
        j.anchor = Vec3{0, 0, 0};
        j.axis = Vec3{0, 1, 0};
        j.lower = {-0.5}, j.upper = {0.5}, j.limited = true;
        auto m = compile(s);
        Data d(m);
        double npeak = -HUGE_VAL;
        for (int i = 0; i < n; ++i) step(*m, d), npeak = std::max(npeak, d.coord[0]);
        rows.push_back({"pendulum into +-0.5 rad, 4 rad/s", "noether", "overshoot [rad]", dt, npeak - 0.5, 0});
    }
}

// A double pendulum (two 1 m, 1 kg links) hinged at (0, 0, 1.5) falling onto the ground, point
// contacts (mu 0.5) at the free end of link 1 and both ends of link 2 (MuJoCo: spheres of 1 mm).
void measure_double_pendulum(int rounds) {
    const double dt = 0.01;
    const int n = 300;
    std::ostringstream x;
    x << mj_header(dt, 0, -kG, "") << "<geom type=\"plane\" size=\"0 0 1\" friction=\"0.5 0.005 0.0001\"/>"
      << "<body pos=\"0 0 1.5\"><joint type=\"hinge\" axis=\"0 1 0\"/>"
      << "<geom type=\"box\" size=\"0.5 0.05 0.05\" pos=\"0.5 0 0\" mass=\"1\" contype=\"0\" conaffinity=\"0\"/>"
      << "<geom type=\"sphere\" size=\"0.001\" pos=\"1 0 0\" mass=\"0\" friction=\"0.5 0.005 0.0001\"/>"
      << "<body pos=\"1 0 0\"><joint type=\"hinge\" axis=\"0 1 0\"/>"
      << "<geom type=\"box\" size=\"0.5 0.05 0.05\" pos=\"0.5 0 0\" mass=\"1\" contype=\"0\" conaffinity=\"0\"/>"
      << "<geom type=\"sphere\" size=\"0.001\" pos=\"0 0 0\" mass=\"0\" friction=\"0.5 0.005 0.0001\"/>"
      << "<geom type=\"sphere\" size=\"0.001\" pos=\"1 0 0\" mass=\"0\" friction=\"0.5 0.005 0.0001\"/>"
      << "</body></body></worldbody></mujoco>";
    const std::string xml = x.str();
    Row r{"double pendulum falling onto the ground", "mujoco", "us/step", dt, 0};
    r.us_per_step = best_us(rounds, n, [&] { return std::make_unique<Mj>(xml); }, [](Mj& s) { s.step(); });
    r.value = r.us_per_step;
    rows.push_back(r);
    Spec s;
    s.options.dt = dt;
    for (int i = 0; i < 2; ++i) {
        BodySpec& b = s.add_body("link" + std::to_string(i + 1));
        b.mass = 1;
        b.inertia = Mat3::diag(0.02 / 12, 1.01 / 12, 1.01 / 12);
        b.position = {i + 0.5, 0, 1.5};
        JointSpec& j = s.add_joint("j" + std::to_string(i + 1), "revolute", i == 0 ? "world" : "link1", b.name);
        j.anchor = Vec3{double(i), 0, 1.5};
        j.axis = Vec3{0, 1, 0};
    }
    for (auto [body, px] : {std::pair<const char*, double>{"link1", 0.5}, {"link2", -0.5}, {"link2", 0.5}}) {
        ContactSpec c;
        c.body = body;
        c.pose.x = {px, 0, 0};
        c.mu = 0.5;
        s.contacts.push_back(c);
    }
    auto m = compile(s);
    Data d(m);
    long long it = 0;
    double pen = 0;
    for (int i = 0; i < n; ++i) step(*m, d), it += d.last.iterations, pen = std::max(pen, nt_penetration(d));
    Row q{"double pendulum falling onto the ground", "noether", "us/step", dt, 0};
    q.us_per_step = best_us(rounds, n, [&] { return std::make_unique<Data>(m); }, [&](Data& dd) { step(*m, dd); });
    q.value = q.us_per_step;
    q.iterations = double(it) / n;
    rows.push_back(q);
    rows.push_back({"double pendulum falling onto the ground", "noether", "peak penetration [m]", dt, pen, 0});
}

// The same A1 in MuJoCo: the URDF (floating through a "floating" joint to a world link, visuals
// discarded) compiled by MuJoCo, saved as MJCF, given a floor plane, its collision geoms with
// friction mu (MuJoCo's defaults otherwise), joint damping 3 (implicit in MuJoCo's Euler), the
// standing pose lowered onto the floor and the same P controller through qfrc_applied.
void measure_a1_mujoco(int rounds, const std::string& path, double dt, int n) {
    std::ifstream in(path);
    std::stringstream buf;
    buf << in.rdbuf();
    std::string urdf = buf.str();
    const std::size_t robot = urdf.find('>', urdf.find("<robot"));
    urdf.insert(robot + 1, "<mujoco><compiler discardvisual=\"true\" balanceinertia=\"true\"/></mujoco>"
                           "<link name=\"world\"/><joint name=\"float\" type=\"floating\"><parent link=\"world\"/>"
                           "<child link=\"base\"/></joint>");
    char tmp[] = "/tmp/noether_a1_XXXXXX.urdf";
    int fd = mkstemps(tmp, 5);
    if (fd < 0 || write(fd, urdf.data(), urdf.size()) != static_cast<ssize_t>(urdf.size())) return;
    close(fd);
    char err[1000] = "";
    mjModel* m0 = mj_loadXML(tmp, nullptr, err, sizeof err);
    std::remove(tmp);
    if (!m0) {
        std::fprintf(stderr, "contact_peers: MuJoCo cannot load the A1 URDF: %s\n", err);
        return;
    }
    char xml[] = "/tmp/noether_a1_XXXXXX.xml";
    fd = mkstemps(xml, 4);
    close(fd);
    mj_saveLastXML(xml, m0, err, sizeof err);
    mj_deleteModel(m0);
    std::ifstream xin(xml);
    std::stringstream xbuf;
    xbuf << xin.rdbuf();
    std::string mjcf = xbuf.str();
    const std::size_t wb = mjcf.find("<worldbody>");
    if (wb == std::string::npos) return;
    mjcf.insert(wb + 11, "<geom name=\"floor\" type=\"plane\" size=\"0 0 1\"/>");
    std::ofstream(xml) << mjcf;
    mjModel* m = mj_loadXML(xml, nullptr, err, sizeof err);
    std::remove(xml);
    if (!m) {
        std::fprintf(stderr, "contact_peers: MuJoCo cannot load the A1 with a floor: %s\n", err);
        return;
    }
    m->opt.timestep = dt;
    for (int g = 0; g < m->ngeom; ++g) m->geom_friction[3 * g] = 0.8;
    const char* legs[4] = {"FR", "FL", "RR", "RL"};
    std::vector<std::pair<int, double>> target;  // qpos address, standing angle
    std::vector<int> dofs;
    for (const char* l : legs)
        for (auto [part, q] : std::vector<std::pair<const char*, double>>{{"hip", 0}, {"thigh", 0.8}, {"calf", -1.5}}) {
            const int j = mj_name2id(m, mjOBJ_JOINT, (std::string(l) + "_" + part + "_joint").c_str());
            if (j < 0) {
                mj_deleteModel(m);
                return;
            }
            target.push_back({m->jnt_qposadr[j], q});
            dofs.push_back(m->jnt_dofadr[j]);
            m->dof_damping[m->jnt_dofadr[j]] = 3;
        }
    auto make = [&]() {
        mjData* d = mj_makeData(m);
        for (auto [a, q] : target) d->qpos[a] = q;
        mj_forward(m, d);
        double low = HUGE_VAL;  // lowest point of the robot's geoms above the floor
        for (int g = 1; g < m->ngeom; ++g)
            if (m->geom_type[g] == mjGEOM_SPHERE) low = std::min(low, d->geom_xpos[3 * g + 2] - m->geom_size[3 * g]);
        d->qpos[2] -= low;
        mj_forward(m, d);
        return d;
    };
    auto control = [&](mjData* d) {
        for (std::size_t i = 0; i < target.size(); ++i)
            d->qfrc_applied[dofs[i]] = 60 * (target[i].second - d->qpos[target[i].first]);
    };
    double mass = 0;
    for (int b = 0; b < m->nbody; ++b) mass += m->body_mass[b];
    mjData* d = make();
    double lo = HUGE_VAL, hi = -HUGE_VAL;  // floor force / (m g) over the last 5 s
    for (int i = 0; i < n; ++i) {
        control(d);
        mj_step(m, d);
        if (i < n / 2) continue;
        double total = 0;
        for (int c = 0; c < d->ncon; ++c) {
            mjtNum f[6];
            mj_contactForce(m, d, c, f);
            if (d->contact[c].geom1 == 0 || d->contact[c].geom2 == 0) total += f[0];  // against the floor
        }
        lo = std::min(lo, total / (mass * kG)), hi = std::max(hi, total / (mass * kG));
    }
    Row r{"A1 standing 10 s under PD (4 feet, 12 limits)", "mujoco", "us/step", dt, 0};
    double best = HUGE_VAL;
    for (int k = 0; k < rounds; ++k) {
        mjData* dd = make();
        const double t0 = cpu_now();
        for (int i = 0; i < n; ++i) control(dd), mj_step(m, dd);
        best = std::min(best, 1e6 * (cpu_now() - t0) / n);
        mj_deleteData(dd);
    }
    r.us_per_step = r.value = best;
    rows.push_back(r);
    rows.push_back({"A1 standing 10 s under PD (4 feet, 12 limits)", "mujoco", "floor force / (m g) over the last 5 s, least", dt,
                    lo, 1});
    rows.push_back({"A1 standing 10 s under PD (4 feet, 12 limits)", "mujoco", "floor force / (m g) over the last 5 s, largest", dt,
                    hi, 1});
    rows.push_back({"A1 standing 10 s under PD (4 feet, 12 limits)", "mujoco", "base height [m]", dt, d->qpos[2], NAN});
    mj_deleteData(d);
    mj_deleteModel(m);
}

// The A1 standing (scripts/examples/a1_standing.lua without Lua), in noether and in MuJoCo.
void measure_a1(int rounds) {
    const char* models = std::getenv("NOETHER_MODELS_DIR");
    const std::string dir = models ? models : std::string(NOETHER_SOURCE_DIR) + "/../shared/models";
    const std::string path = dir + "/ConstrainedDynamics.jl/examples/examples_files/quadruped.urdf";
    if (access(path.c_str(), R_OK) != 0) return;
    measure_a1_mujoco(rounds, path, 0.005, 2000);
    const double dt = 0.005;
    Spec s;
    s.options.dt = dt;
    urdf::Options o;
    const char* legs[4] = {"FR", "FL", "RR", "RL"};
    std::map<std::string, double> stand = {{"hip", 0}, {"thigh", 0.8}, {"calf", -1.5}};
    for (const char* l : legs) {
        for (auto& [part, q] : stand) o.positions[std::string(l) + "_" + part + "_joint"] = q;
        o.contact_links.push_back(std::string(l) + "_foot");
    }
    o.mu = 0.8;
    o.on_ground = true;
    o.damping = 3;
    urdf::import(s, path, o);
    assemble(s);
    auto m = compile(s);
    auto control = [&](Data& d) {
        for (const char* l : legs)
            for (auto& [part, q0] : stand) {
                const int j = m->joint_index(std::string(l) + "_" + part + "_joint");
                d.actuation[m->joints[j].dof_offset] = 60 * (q0 - d.coord[m->joints[j].dof_offset]);
            }
    };
    const int n = 2000;
    Data d(m);
    long long it = 0;
    double mass = 0;
    for (const BodyInfo& b : m->bodies) mass += b.mass;
    double lo = HUGE_VAL, hi = -HUGE_VAL;  // foot forces / (m g) over the last 5 s
    for (int i = 0; i < n; ++i) {
        control(d), step(*m, d), it += d.last.iterations;
        if (i < n / 2) continue;
        double f = 0;
        for (const ContactResult& c : d.contact) f += c.normal_force;
        lo = std::min(lo, f / (mass * kG)), hi = std::max(hi, f / (mass * kG));
    }
    Row r{"A1 standing 10 s under PD (4 feet, 12 limits)", "noether", "us/step", dt, 0};
    r.us_per_step = best_us(rounds, n, [&] { return std::make_unique<Data>(m); }, [&](Data& dd) {
        control(dd);
        step(*m, dd);
    });
    r.value = r.us_per_step;
    r.iterations = double(it) / n;
    rows.push_back(r);
    rows.push_back({"A1 standing 10 s under PD (4 feet, 12 limits)", "noether", "floor force / (m g) over the last 5 s, least", dt,
                    lo, 1});
    rows.push_back({"A1 standing 10 s under PD (4 feet, 12 limits)", "noether", "floor force / (m g) over the last 5 s, largest", dt,
                    hi, 1});
    rows.push_back({"A1 standing 10 s under PD (4 feet, 12 limits)", "noether", "base height [m]", dt,
                    d.pose[m->body_index("base")].x.z, NAN});
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 3;
    std::string out;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
        else if (a == "--out" && i + 1 < argc) out = argv[++i];
        else {
            std::fprintf(stderr, "usage: contact_peers [--rounds N] [--out FILE.jsonl]\n");
            return 2;
        }
    }
    if (rounds < 1) rounds = 1;
    try {
        measure_cubes(rounds);
        measure_limit(rounds);
        measure_double_pendulum(rounds);
        measure_a1(rounds);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "contact_peers: %s\n", e.what());
        return 1;
    }
    std::ofstream f;
    if (!out.empty()) f.open(out);
    char ver[64];
    std::snprintf(ver, sizeof ver, "%d", mj_version());
    for (Row& r : rows) {
        std::string line = r.to_json();
        line.insert(line.size() - 1, std::string(",\"mujoco_version\":") + ver);
        std::puts(line.c_str());
        if (f) f << line << "\n";
    }
    return 0;
}
