// peers: the same scenes in noether and in the engines its users would otherwise pick (MuJoCo,
// DART, Simbody; each compiled in when its Debian package is found), timed in one process.
//
// Scene: the n-link pendulum of bench/chain_scaling (links 1×0.1×0.1 m boxes of 1 kg, hinges at
// the link ends with axes along y, horizontal along +x at rest, gravity −9.81 z); n = 2 is the
// double pendulum. Before any timing every engine builds the scene once more with the joint
// rates q̇_k = 0.3·(−1)^k·(k + 1)/n and its energy there must equal noether's to 1e-9 relative
// (same masses, inertias, geometry and gravity: a model that differs is refused, not timed).
//
// Modes (one JSON object per line on stdout):
//   --mode step  --n 1,2,...  --duration T    cost per step at dt = 0.01 (error-controlled
//                integrators: per 0.01 s of simulated time), per link-step, the largest relative
//                energy error max|E − E0| / max(|E0|, max kinetic energy), divergence;
//   --mode wp    --n N --duration T --targets 1e-3,1e-6
//                work-precision: for each engine/integrator the cheapest setting found whose
//                relative energy error over T meets each target: dt halved from 0.01 (or --dt0; fixed
//                step) or the tolerance divided by 10 from 1e-3 (error-controlled), up to
//                --max-refinements, and no further once the next run would take more than
//                --max-seconds of wall time (twice the last); every run tried is a "wp_point"
//                line, then one "wp" line per target ("met": false when none did).
// Engines/integrators: noether vi-maximal, vi-midpoint, riqn, vi-galerkin:s (s = 1, 2, 3 control
// points; fixed dt), dp45-projection
// (tolerance); MuJoCo Euler and RK4 (fixed dt); DART's default (semi-implicit Euler, fixed dt);
// Simbody RK3 with a fixed step and RK-Merson error-controlled. --engines and --integrators filter
// by name.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "noether/noether.hpp"

#include "../bench_util.hpp"

#ifdef NOETHER_PEER_MUJOCO
#include <mujoco/mujoco.h>
#endif
#ifdef NOETHER_PEER_DART
#include <dart/config.hpp>
#include <dart/dynamics/BodyNode.hpp>
#include <dart/dynamics/RevoluteJoint.hpp>
#include <dart/dynamics/Skeleton.hpp>
#include <dart/simulation/World.hpp>
#endif
#ifdef NOETHER_PEER_SIMBODY
#include <Simbody.h>
#endif

namespace {

using bench::split;

constexpr double kMass = 1, kLength = 1, kWidth = 0.1, kGravity = 9.81;
const double kIxx = kMass * (kWidth * kWidth + kWidth * kWidth) / 12;    // about the link axis
const double kIyy = kMass * (kLength * kLength + kWidth * kWidth) / 12;  // = Izz

// The probe state: joint angles and rates (rotations about +y) that exercise masses, inertias,
// geometry and gravity.
double probe_rate(int k, int n) { return 0.3 * (k % 2 == 0 ? 1 : -1) * (k + 1) / n; }
double probe_angle(int k, int n) { return (k % 2 == 0 ? 0.4 : -0.25) * (k + 1) / n; }

// One simulation of one engine with one integrator.
class Sim {
public:
    virtual ~Sim() = default;
    virtual void advance() = 0;     // one step of dt, or to t + dt for error-controlled integrators
    virtual double energy() = 0;    // kinetic + potential (potential zero at z = 0)
    virtual double kinetic() = 0;
    virtual bool finite() = 0;
};

struct Setting {
    std::string engine, integrator;
    bool adaptive = false;  // error-controlled: `value` is the tolerance, dt the reporting interval
};

// ---- noether ---------------------------------------------------------------------------------

class NoetherSim final : public Sim {
public:
    NoetherSim(const std::string& integrator, int n, double dt, double tol, bool probe) {
        using namespace noether;
        Spec s;
        const std::size_t colon = integrator.find(':');  // "vi-galerkin:2": points = 2
        s.options.integrator = integrator.substr(0, colon);
        if (colon != std::string::npos) s.options.extra["points"] = std::atof(integrator.c_str() + colon + 1);
        s.options.dt = dt;
        if (integrator == "dp45-projection") {
            s.options.extra["atol"] = tol;
            s.options.extra["rtol"] = tol;
        }
        // Planar chain: link i turned by θ_i = Σ_{k≤i} q_k about +y (its x axis at (cos θ, 0,
        // −sin θ)); ω_i = θ̇_i ŷ, and a point at offset r from a point of velocity v moves at
        // v + θ̇ ŷ × r.
        double th = 0, thd = 0;
        Vec3 joint{0, 0, 0}, vjoint{0, 0, 0};
        std::vector<Vec3> anchors;
        for (int i = 0; i < n; ++i) {
            if (probe) th += probe_angle(i, n), thd += probe_rate(i, n);
            const Vec3 ex{std::cos(th), 0, -std::sin(th)};
            BodySpec& b = s.add_body("link" + std::to_string(i + 1));
            b.mass = kMass;
            b.inertia = Mat3::diag(kIxx, kIyy, kIyy);
            b.position = joint + 0.5 * ex;
            b.orientation = quat_from_axis_angle({0, 1, 0}, th);
            b.angular_velocity = {0, thd, 0};
            const Vec3 r = 0.5 * ex, l = kLength * ex;
            b.velocity = vjoint + thd * Vec3{r.z, 0, -r.x};
            anchors.push_back(joint);
            vjoint = vjoint + thd * Vec3{l.z, 0, -l.x};
            joint = joint + l;
        }
        for (int i = 0; i < n; ++i) {
            JointSpec& j = s.add_joint("j" + std::to_string(i + 1), "revolute",
                                       i == 0 ? "world" : "link" + std::to_string(i), "link" + std::to_string(i + 1));
            j.anchor = anchors[i];
            j.axis = Vec3{0, 1, 0};
        }
        m_ = compile(s);
        d_ = std::make_unique<Data>(m_);
    }
    void advance() override { status_ = noether::step(*m_, *d_); }
    double energy() override { return noether::monitors(*m_, *d_).total; }
    double kinetic() override { return noether::monitors(*m_, *d_).kinetic; }
    bool finite() override { return status_ == noether::StepStatus::ok; }

private:
    std::shared_ptr<const noether::Model> m_;
    std::unique_ptr<noether::Data> d_;
    noether::StepStatus status_ = noether::StepStatus::ok;
};

// ---- MuJoCo ----------------------------------------------------------------------------------

#ifdef NOETHER_PEER_MUJOCO
// MuJoCo's default warning handler appends to MUJOCO_LOG.TXT in the working directory; the
// benchmark reads the same warnings from mjData::warning (finite() below), so it only silences them.
void mujoco_quiet_warning(const char*) {}

class MujocoSim final : public Sim {
public:
    MujocoSim(const std::string& integrator, int n, double dt, bool probe) {
        mju_user_warning = mujoco_quiet_warning;
        std::ostringstream x;
        x.precision(17);
        x << "<mujoco><option timestep=\"" << dt << "\" gravity=\"0 0 " << -kGravity << "\" integrator=\""
          << (integrator == "rk4" ? "RK4" : "Euler") << "\"><flag contact=\"disable\" energy=\"enable\"/></option>"
          << "<worldbody>";
        for (int i = 0; i < n; ++i) {
            x << "<body pos=\"" << (i == 0 ? 0.0 : kLength) << " 0 0\">"
              << "<joint type=\"hinge\" axis=\"0 1 0\" pos=\"0 0 0\" damping=\"0\" armature=\"0\"/>"
              << "<inertial pos=\"0.5 0 0\" mass=\"" << kMass << "\" diaginertia=\"" << kIxx << " " << kIyy << " " << kIyy
              << "\"/>";
        }
        for (int i = 0; i < n; ++i) x << "</body>";
        x << "</worldbody></mujoco>";
        char path[] = "/tmp/noether_peers_XXXXXX.xml";
        const int fd = mkstemps(path, 4);
        if (fd < 0) throw std::runtime_error("mujoco: cannot write a temporary model file");
        const std::string text = x.str();
        if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
            close(fd);
            throw std::runtime_error("mujoco: cannot write a temporary model file");
        }
        close(fd);
        char err[1000] = "";
        m_ = mj_loadXML(path, nullptr, err, sizeof err);
        std::remove(path);
        if (!m_) throw std::runtime_error(std::string("mujoco: ") + err);
        d_ = mj_makeData(m_);
        if (probe)
            for (int k = 0; k < n; ++k) d_->qpos[k] = probe_angle(k, n), d_->qvel[k] = probe_rate(k, n);
        mj_forward(m_, d_);
    }
    ~MujocoSim() override {
        mj_deleteData(d_);
        mj_deleteModel(m_);
    }
    void advance() override { mj_step(m_, d_); }
    double energy() override {
        mj_energyPos(m_, d_);
        mj_energyVel(m_, d_);
        return d_->energy[0] + d_->energy[1];
    }
    double kinetic() override {
        mj_energyVel(m_, d_);
        return d_->energy[1];
    }
    bool finite() override {
        // MuJoCo resets the state by itself when the accelerations blow up (and warns): diverged.
        if (d_->warning[mjWARN_BADQACC].number > 0 || d_->warning[mjWARN_BADQVEL].number > 0 ||
            d_->warning[mjWARN_BADQPOS].number > 0)
            return false;
        for (int i = 0; i < m_->nq; ++i)
            if (!std::isfinite(d_->qpos[i]) || !std::isfinite(d_->qvel[i])) return false;
        return true;
    }

private:
    mjModel* m_ = nullptr;
    mjData* d_ = nullptr;
};
#endif

// ---- DART ------------------------------------------------------------------------------------

#ifdef NOETHER_PEER_DART
class DartSim final : public Sim {
public:
    DartSim(int n, double dt, bool probe) {
        using namespace dart;
        skel_ = dynamics::Skeleton::create("chain");
        dynamics::BodyNode* parent = nullptr;
        for (int i = 0; i < n; ++i) {
            dynamics::RevoluteJoint::Properties jp;
            jp.mName = "j" + std::to_string(i + 1);
            jp.mAxis = Eigen::Vector3d::UnitY();
            Eigen::Isometry3d T = Eigen::Isometry3d::Identity();
            if (i > 0) T.translation() = Eigen::Vector3d(kLength, 0, 0);
            jp.mT_ParentBodyToJoint = T;
            dynamics::BodyNode::Properties bp;
            bp.mName = "link" + std::to_string(i + 1);
            bp.mInertia = dynamics::Inertia(kMass, Eigen::Vector3d(0.5, 0, 0), Eigen::Vector3d(kIxx, kIyy, kIyy).asDiagonal());
            auto pair = skel_->createJointAndBodyNodePair<dynamics::RevoluteJoint>(parent, jp, bp);
            parent = pair.second;
        }
        world_ = simulation::World::create();
        world_->setGravity(Eigen::Vector3d(0, 0, -kGravity));
        world_->setTimeStep(dt);
        world_->addSkeleton(skel_);
        if (probe)
            for (int k = 0; k < n; ++k) skel_->setPosition(k, probe_angle(k, n)), skel_->setVelocity(k, probe_rate(k, n));
    }
    void advance() override { world_->step(); }
    // Potential from the bodies' world centres of mass (Skeleton::computePotentialEnergy
    // returned 0 for a single link here).
    double energy() override {
        double pe = 0;
        for (std::size_t i = 0; i < skel_->getNumBodyNodes(); ++i) {
            const dart::dynamics::BodyNode* b = skel_->getBodyNode(i);
            pe += b->getMass() * kGravity * b->getCOM().z();
        }
        return skel_->computeKineticEnergy() + pe;
    }
    double kinetic() override { return skel_->computeKineticEnergy(); }
    bool finite() override { return skel_->getPositions().allFinite() && skel_->getVelocities().allFinite(); }

private:
    dart::dynamics::SkeletonPtr skel_;
    dart::simulation::WorldPtr world_;
};
#endif

// ---- Simbody ---------------------------------------------------------------------------------

#ifdef NOETHER_PEER_SIMBODY
class SimbodySim final : public Sim {
public:
    SimbodySim(const std::string& integrator, int n, double dt, double tol, bool probe)
        : matter_(system_), forces_(system_), gravity_(forces_, matter_, SimTK::Vec3(0, 0, -kGravity)), dt_(dt) {
        using namespace SimTK;
        // A Pin turns about the z axis of its frames: frames rotated by −90° about x map z onto y.
        const Rotation zToY(-Pi / 2, XAxis);
        // Inertia about the body origin (the joint), from the central one.
        const Body::Rigid body(MassProperties(
            kMass, Vec3(0.5, 0, 0), Inertia(Vec3(kIxx, kIyy, kIyy)).shiftFromMassCenter(Vec3(0.5, 0, 0), kMass)));
        MobilizedBody parent = matter_.Ground();
        for (int i = 0; i < n; ++i) {
            MobilizedBody::Pin link(parent, Transform(zToY, Vec3(i == 0 ? 0 : kLength, 0, 0)), body,
                                    Transform(zToY, Vec3(0)));
            parent = link;
        }
        system_.realizeTopology();
        state_ = system_.getDefaultState();
        if (probe)
            for (int k = 0; k < n; ++k) state_.updQ()[k] = probe_angle(k, n), state_.updU()[k] = probe_rate(k, n);
        system_.realize(state_, Stage::Dynamics);
        if (integrator == "rkmerson") {
            integ_ = std::make_unique<RungeKuttaMersonIntegrator>(system_);
            integ_->setAccuracy(tol);
        } else {
            integ_ = std::make_unique<RungeKutta3Integrator>(system_);
            integ_->setFixedStepSize(dt);
        }
        ts_ = std::make_unique<TimeStepper>(system_, *integ_);
        ts_->initialize(state_);
    }
    void advance() override {
        t_ += dt_;
        ts_->stepTo(t_);
    }
    double energy() override {
        const SimTK::State& s = integ_->getState();
        system_.realize(s, SimTK::Stage::Dynamics);
        return system_.calcEnergy(s);
    }
    double kinetic() override {
        const SimTK::State& s = integ_->getState();
        system_.realize(s, SimTK::Stage::Velocity);
        return matter_.calcKineticEnergy(s);
    }
    bool finite() override {
        const SimTK::State& s = integ_->getState();
        for (int i = 0; i < s.getNQ(); ++i)
            if (!std::isfinite(s.getQ()[i])) return false;
        return true;
    }
    double probe_energy() {  // before initialize() touched the state
        return system_.calcEnergy(state_);
    }

private:
    SimTK::MultibodySystem system_;
    SimTK::SimbodyMatterSubsystem matter_;
    SimTK::GeneralForceSubsystem forces_;
    SimTK::Force::Gravity gravity_;
    SimTK::State state_;
    std::unique_ptr<SimTK::Integrator> integ_;
    std::unique_ptr<SimTK::TimeStepper> ts_;
    double dt_ = 0.01, t_ = 0;
};
#endif

std::unique_ptr<Sim> make(const Setting& s, int n, double dt, double tol, bool probe) {
    if (s.engine == "noether") return std::make_unique<NoetherSim>(s.integrator, n, dt, tol, probe);
#ifdef NOETHER_PEER_MUJOCO
    if (s.engine == "mujoco") return std::make_unique<MujocoSim>(s.integrator, n, dt, probe);
#endif
#ifdef NOETHER_PEER_DART
    if (s.engine == "dart") return std::make_unique<DartSim>(n, dt, probe);
#endif
#ifdef NOETHER_PEER_SIMBODY
    if (s.engine == "simbody") return std::make_unique<SimbodySim>(s.integrator, n, dt, tol, probe);
#endif
    return nullptr;
}

std::vector<Setting> settings() {
    std::vector<Setting> out = {{"noether", "vi-maximal"},    {"noether", "vi-midpoint"},   {"noether", "riqn"},
                                {"noether", "vi-galerkin:1"}, {"noether", "vi-galerkin:2"}, {"noether", "vi-galerkin:3"},
                                {"noether", "dp45-projection", true}};
#ifdef NOETHER_PEER_MUJOCO
    out.push_back({"mujoco", "euler"});
    out.push_back({"mujoco", "rk4"});
#endif
#ifdef NOETHER_PEER_DART
    out.push_back({"dart", "semi-implicit-euler"});
#endif
#ifdef NOETHER_PEER_SIMBODY
    out.push_back({"simbody", "rk3"});
    out.push_back({"simbody", "rkmerson", true});
#endif
    return out;
}

std::string versions() {
    std::string v = "\"noether\":\"" + std::string(noether::version()) + "\"";
#ifdef NOETHER_PEER_MUJOCO
    v += ",\"mujoco\":\"" + std::to_string(mj_version()) + "\"";
#endif
#ifdef NOETHER_PEER_DART
    v += ",\"dart\":\"" DART_VERSION "\"";
#endif
#ifdef NOETHER_PEER_SIMBODY
    int major = 0, minor = 0, build = 0;
    SimTK_version_simbody(&major, &minor, &build);
    v += ",\"simbody\":\"" + std::to_string(major) + "." + std::to_string(minor) + "\"";
#endif
    return v;
}

// The probe: every engine's energy at the same non-trivial state must match noether's.
bool probe_ok(const Setting& s, int n, std::string& why) {
    if (s.engine == "noether") return true;  // the reference builds the scene with the same code
    NoetherSim ref("rk4", n, 0.01, 1e-6, true);  // continuous energy at the initial state
    const double e_ref = ref.energy();
    std::unique_ptr<Sim> sim;
    try {
        sim = make(s, n, 0.01, 1e-6, true);
    } catch (const std::exception& e) {  // e.g. MuJoCo's XML parser refuses deep nesting
        why = e.what();
        for (char& c : why)
            if (c == '"' || c == '\n' || c == '\\') c = ' ';
        return false;
    }
    if (!sim) {
        why = "engine not built";
        return false;
    }
    double e = sim->energy();
#ifdef NOETHER_PEER_SIMBODY
    if (auto* sb = dynamic_cast<SimbodySim*>(sim.get())) e = sb->probe_energy();
#endif
    const double rel = std::fabs(e - e_ref) / std::max(1e-300, std::fabs(e_ref));
    if (rel > 1e-9) {
        char buf[200];
        std::snprintf(buf, sizeof buf, "probe energy %.12g J against noether's %.12g J (relative %.2g)", e, e_ref, rel);
        why = buf;
        return false;
    }
    return true;
}

struct Outcome {
    double us_per_step = 0, us_per_sim_second = 0, rel_error = 0;
    long long steps = 0;
    bool diverged = false;
};

// Run for `duration` seconds; time only the steps; energy every `sample` steps.
Outcome simulate(const Setting& s, int n, double dt, double tol, double duration) {
    Outcome o;
    std::unique_ptr<Sim> sim = make(s, n, dt, tol, false);
    const double e0 = sim->energy();
    double kmax = 0, emax = 0;
    const long long steps = std::llround(duration / dt);
    const int sample = std::max<long long>(1, steps / 20000);
    double seconds = 0;
    for (long long k = 0; k < steps;) {
        const long long chunk = std::min<long long>(sample, steps - k);
        const auto t0 = std::chrono::steady_clock::now();
        try {
            for (long long i = 0; i < chunk; ++i) sim->advance();
        } catch (const std::exception&) {  // Simbody throws on a NaN state
            o.diverged = true;
            o.steps = k;
            break;
        }
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        k += chunk;
        if (!sim->finite()) {
            o.diverged = true;
            o.steps = k;
            break;
        }
        const double e = sim->energy();
        emax = std::max(emax, std::fabs(e - e0));
        kmax = std::max(kmax, sim->kinetic());
        o.steps = k;
        if (emax > 1e6 * std::max(1.0, kmax)) {
            o.diverged = true;
            break;
        }
    }
    o.us_per_step = 1e6 * seconds / std::max<long long>(1, o.steps);
    o.us_per_sim_second = 1e6 * seconds / std::max(1e-300, o.steps * dt);
    o.rel_error = o.diverged ? HUGE_VAL : emax / std::max(std::fabs(e0), kmax);
    return o;
}

std::string num(double v) {
    if (!std::isfinite(v)) return "null";
    char b[40];
    std::snprintf(b, sizeof b, "%.4g", v);
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    std::string mode = "step", engines, integrators;
    std::vector<int> ns = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
    std::vector<double> targets = {1e-3, 1e-6};
    double duration = 10;
    int refinements = 10;
    double max_seconds = 30, dt0 = 0.01;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--mode" && v) mode = argv[++i];
        else if (a == "--n" && v) {
            ns.clear();
            for (const std::string& x : split(argv[++i])) ns.push_back(std::atoi(x.c_str()));
        } else if (a == "--duration" && v) duration = std::atof(argv[++i]);
        else if (a == "--targets" && v) {
            targets.clear();
            for (const std::string& x : split(argv[++i])) targets.push_back(std::atof(x.c_str()));
        } else if (a == "--engines" && v) engines = argv[++i];
        else if (a == "--integrators" && v) integrators = argv[++i];
        else if (a == "--max-refinements" && v) refinements = std::atoi(argv[++i]);
        else if (a == "--max-seconds" && v) max_seconds = std::atof(argv[++i]);
        else if (a == "--dt0" && v) dt0 = std::atof(argv[++i]);
        else {
            std::fprintf(stderr,
                         "usage: peers [--mode step|wp] [--n 1,2,...] [--duration T] [--targets 1e-3,1e-6] "
                         "[--engines noether,mujoco,dart,simbody] [--integrators rk4,vi-galerkin:2,...] [--max-refinements K] "
                         "[--max-seconds S] [--dt0 DT]\n");
            return 2;
        }
    }
    std::printf("{\"bench\":\"peers_meta\",\"mode\":\"%s\",%s}\n", mode.c_str(), versions().c_str());
    for (const Setting& s : settings()) {
        if (!engines.empty() && ("," + engines + ",").find("," + s.engine + ",") == std::string::npos) continue;
        if (!integrators.empty() && ("," + integrators + ",").find("," + s.integrator + ",") == std::string::npos) continue;
        for (int n : ns) {
            std::string why;
            if (!probe_ok(s, n, why)) {
                std::printf("{\"bench\":\"peers\",\"engine\":\"%s\",\"integrator\":\"%s\",\"n\":%d,\"refused\":\"%s\"}\n",
                            s.engine.c_str(), s.integrator.c_str(), n, why.c_str());
                continue;
            }
            if (mode == "step") {
                const double dt = 0.01, tol = 1e-6;
                const Outcome o = simulate(s, n, dt, tol, duration);
                std::printf("{\"bench\":\"peers\",\"mode\":\"step\",\"engine\":\"%s\",\"integrator\":\"%s\",\"n\":%d,"
                            "\"dt\":%g,\"tolerance\":%s,\"duration\":%g,\"steps\":%lld,\"us_per_step\":%s,"
                            "\"us_per_link_step\":%s,\"max_rel_energy_error\":%s,\"diverged\":%s}\n",
                            s.engine.c_str(), s.integrator.c_str(), n, dt, s.adaptive ? num(tol).c_str() : "null",
                            duration, o.steps, num(o.us_per_step).c_str(), num(o.us_per_step / n).c_str(),
                            num(o.rel_error).c_str(), o.diverged ? "true" : "false");
                std::fflush(stdout);
                continue;
            }
            // Work-precision: refine until the strictest target is met, a run diverges past the
            // first, or the next run would exceed --max-seconds (predicted as twice the last).
            struct Point {
                double dt, tol;
                Outcome o;
            };
            std::vector<Point> points;
            double dt = s.adaptive ? 0.01 : dt0, tol = 1e-3;
            const double strictest = *std::min_element(targets.begin(), targets.end());
            for (int r = 0; r <= refinements; ++r) {
                const auto t0 = std::chrono::steady_clock::now();
                const Outcome o = simulate(s, n, dt, tol, duration);
                const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                points.push_back({dt, tol, o});
                std::printf("{\"bench\":\"peers\",\"mode\":\"wp_point\",\"engine\":\"%s\",\"integrator\":\"%s\","
                            "\"n\":%d,\"duration\":%g,\"dt\":%g,\"tolerance\":%s,\"us_per_sim_second\":%s,"
                            "\"max_rel_energy_error\":%s,\"diverged\":%s}\n",
                            s.engine.c_str(), s.integrator.c_str(), n, duration, dt,
                            s.adaptive ? num(tol).c_str() : "null", num(o.us_per_sim_second).c_str(),
                            num(o.rel_error).c_str(), o.diverged ? "true" : "false");
                std::fflush(stdout);
                if (!o.diverged && o.rel_error <= strictest) break;
                if (s.adaptive) tol /= 10;
                else dt /= 2;
                if (2 * wall > max_seconds) break;
            }
            for (double target : targets) {
                const Point* best = nullptr;
                for (const Point& p : points)
                    if (!p.o.diverged && p.o.rel_error <= target) {
                        best = &p;
                        break;
                    }
                const Point& p = best ? *best : points.back();
                std::printf("{\"bench\":\"peers\",\"mode\":\"wp\",\"engine\":\"%s\",\"integrator\":\"%s\",\"n\":%d,"
                            "\"duration\":%g,\"target\":%g,\"met\":%s,\"dt\":%g,\"tolerance\":%s,"
                            "\"us_per_sim_second\":%s,\"max_rel_energy_error\":%s}\n",
                            s.engine.c_str(), s.integrator.c_str(), n, duration, target, best ? "true" : "false", p.dt,
                            s.adaptive ? num(p.tol).c_str() : "null", num(p.o.us_per_sim_second).c_str(),
                            num(p.o.rel_error).c_str());
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
