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

// The A1 standing (scripts/examples/a1_standing.lua without Lua): noether only (the benchmark has no
// MJCF of this URDF with a floor; MuJoCo's own quadrupeds are MJCF files).
void measure_a1(int rounds) {
    const char* models = std::getenv("NOETHER_MODELS_DIR");
    const std::string dir = models ? models : std::string(NOETHER_SOURCE_DIR) + "/../shared/models";
    const std::string path = dir + "/ConstrainedDynamics.jl/examples/examples_files/quadruped.urdf";
    if (access(path.c_str(), R_OK) != 0) return;
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
    for (int i = 0; i < n; ++i) control(d), step(*m, d), it += d.last.iterations;
    double f = 0;
    for (const ContactResult& c : d.contact) f += c.normal_force;
    Row r{"A1 standing 10 s under PD (4 feet, 12 limits)", "noether", "us/step", dt, 0};
    r.us_per_step = best_us(rounds, n, [&] { return std::make_unique<Data>(m); }, [&](Data& dd) {
        control(dd);
        step(*m, dd);
    });
    r.value = r.us_per_step;
    r.iterations = double(it) / n;
    rows.push_back(r);
    double mass = 0;
    for (const BodyInfo& b : m->bodies) mass += b.mass;
    rows.push_back({"A1 standing 10 s under PD (4 feet, 12 limits)", "noether", "foot forces / (m g) - 1", dt,
                    f / (mass * kG) - 1, 0});
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
