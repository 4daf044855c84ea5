// chain_scaling: cost per step of the n-link pendulum against n, for each solver.
//
// The chain of the core issue: links are 1×0.1×0.1 m boxes of 1 kg, joints at the link ends,
// all horizontal along +x at rest, gravity −9.81 z; revolute axes along y; the ball variant
// spins at 1 rad/s about z. 1000 steps at dt = 0.01 per run; the time is the median of
// --repeats runs. One JSON object per line on stdout:
//   {"bench":"chain_scaling","joint":…,"solver":…,"n":…,"steps":…,"us_per_step":…,
//    "us_per_link_step":…,"us_per_link_iteration":…,"newton_mean":…,"newton_max":…,
//    "newton_all_per_step":…,"subdivided_steps":…,"failed_steps":…,"max_violation":…,
//    "max_energy_dev":…,"max_rel_energy_error":…}
// us_per_link_iteration divides by every Newton iteration performed (including attempts that
// failed and were subdivided): the cost of one O(n) iteration; newton_mean counts only the
// accepted solves.
// max_rel_energy_error = max |E − E0| / max(|E0|, max kinetic energy), since E0 = 0 for the
// chain at rest. Then one summary line per (joint, solver) with the log-log slope of time
// against n for n ≥ 64 (per step and per Newton iteration) and the smallest n whose run needed
// subdivision.
//
// With --integrators riqn (joint coordinates, paper 001) the solver list does not apply: riqn
// solves its own O(n) articulated-body systems and reports "solver":"tree"; ball chains are
// skipped (riqn takes 1-DOF joints). --dts runs every case at each step size; the JSON lines
// carry "integrator" and "dt", and Newton iterations are riqn's updates. The same holds for
// vi-galerkin (paper 002), named with its number of control points: vi-galerkin:1 (trapezoid),
// vi-galerkin:2 (Simpson).
//
// --linearize (vi-galerkin): also the cost of noether::linearize (∂x_{k+1}/∂x_k and ∂x_{k+1}/∂u,
// O(n²)) on the same chains up to --linearize-max-n (256), one line per n
//   {"bench":"chain_scaling_linearize","integrator":…,"n":…,"us_per_linearize":…,"linearize_per_step":…}
// and a summary with the log-log slope for n ≥ 32 (target ≈ 2).
//
// usage: chain_scaling [--max-n N] [--repeats R] [--steps S] [--joints revolute,ball]
//                      [--solvers sparse-ldu,dense-loop,schur,dense-lu] [--dense-max-n N]
//                      [--integrators vi-maximal,riqn,vi-galerkin:2] [--dts 0.01,0.001]
//                      [--linearize] [--linearize-max-n N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "noether/noether.hpp"

#include "bench_util.hpp"

using namespace noether;

namespace {

using bench::split;

// "vi-galerkin:2" names vi-galerkin with points = 2; other names are plugin names.
bool joint_space(const std::string& integrator) { return integrator == "riqn" || integrator.rfind("vi-galerkin", 0) == 0; }

Spec chain(int n, bool ball, const std::string& solver, const std::string& integrator, double dt) {
    Spec s;
    const std::size_t colon = integrator.find(':');
    s.options.integrator = integrator.substr(0, colon);
    if (colon != std::string::npos) s.options.extra["points"] = std::atof(integrator.c_str() + colon + 1);
    s.options.dt = dt;
    if (!joint_space(integrator)) s.options.solver = solver;
    for (int i = 0; i < n; ++i) {
        BodySpec& b = s.add_body("link" + std::to_string(i + 1));
        b.mass = 1;
        b.inertia = Mat3::diag((0.01 + 0.01) / 12, (1 + 0.01) / 12, (1 + 0.01) / 12);
        b.position = {i + 0.5, 0, 0};
        if (ball) {
            b.angular_velocity = {0, 0, 1};
            b.velocity = cross(Vec3{0, 0, 1}, b.position);
        }
    }
    for (int i = 0; i < n; ++i) {
        JointSpec& j = s.add_joint("j" + std::to_string(i + 1), ball ? "spherical" : "revolute",
                                   i == 0 ? "world" : "link" + std::to_string(i), "link" + std::to_string(i + 1));
        j.anchor = Vec3{double(i), 0, 0};
        if (!ball) j.axis = Vec3{0, 1, 0};
    }
    return s;
}

struct Result {
    double us_per_step = 0, newton_mean = 0, vmax = 0, edev = 0, erel = 0, us_per_iteration = 0;
    int newton_max = 0;
    long long subdivided = 0, failed = 0;
};

Result run_once(const std::shared_ptr<const Model>& m, int steps) {
    Data d(m);
    Result r;
    const double E0 = monitors(*m, d).total;
    double kmax = 0;
    // Monitors are evaluated outside the timed region.
    std::vector<double> energies(steps), kinetic(steps), viol(steps);
    double elapsed = 0;
    for (int i = 0; i < steps; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const StepStatus st = step(*m, d);
        elapsed += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        if (st != StepStatus::ok) break;
        const Monitors mon = monitors(*m, d);
        r.vmax = std::max(r.vmax, mon.max_violation);
        r.edev = std::max(r.edev, std::fabs(mon.total - E0));
        kmax = std::max(kmax, mon.kinetic);
    }
    r.us_per_step = elapsed / std::max<std::int64_t>(1, d.stats.steps);
    r.newton_mean = double(d.stats.newton_total) / std::max<std::int64_t>(1, d.stats.steps);
    r.us_per_iteration = elapsed / std::max<std::int64_t>(1, d.stats.newton_work);
    r.newton_max = d.stats.newton_max;
    r.subdivided = d.stats.subdivided_steps;
    r.failed = d.stats.failed_steps;
    r.erel = r.edev / std::max({std::fabs(E0), kmax, 1e-300});
    return r;
}

// Median µs per linearize() of the chain at rest (after one untimed call that sizes everything).
double time_linearize(const std::shared_ptr<const Model>& m, int repeats) {
    Data d(m);
    Linearization lin;
    if (linearize(*m, d, lin) != StepStatus::ok) return NAN;
    const int calls = std::max(2, 256 / m->total_dofs);
    std::vector<double> t;
    for (int k = 0; k < repeats; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) linearize(*m, d, lin);
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

double slope(const std::vector<double>& lx, const std::vector<double>& ly) {
    if (lx.size() < 2) return NAN;
    double mx = 0, my = 0;
    for (std::size_t i = 0; i < lx.size(); ++i) mx += lx[i], my += ly[i];
    mx /= lx.size(), my /= ly.size();
    double sxy = 0, sxx = 0;
    for (std::size_t i = 0; i < lx.size(); ++i) sxy += (lx[i] - mx) * (ly[i] - my), sxx += (lx[i] - mx) * (lx[i] - mx);
    return sxy / sxx;
}

}  // namespace

int main(int argc, char** argv) {
    int max_n = 1024, repeats = 3, steps = 1000, dense_max_n = 16, linearize_max_n = 256;
    bool with_linearize = false;
    std::vector<std::string> joints = {"revolute", "ball"};
    std::vector<std::string> solvers = {"sparse-ldu", "dense-loop", "schur", "dense-lu"};
    std::vector<std::string> integrators = {"vi-maximal"}, dts = {"0.01"};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "chain_scaling: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--max-n") max_n = std::atoi(next().c_str());
        else if (a == "--repeats") repeats = std::max(1, std::atoi(next().c_str()));
        else if (a == "--steps") steps = std::max(1, std::atoi(next().c_str()));
        else if (a == "--dense-max-n") dense_max_n = std::atoi(next().c_str());
        else if (a == "--joints") joints = split(next());
        else if (a == "--solvers") solvers = split(next());
        else if (a == "--integrators") integrators = split(next());
        else if (a == "--dts") dts = split(next());
        else if (a == "--linearize") with_linearize = true;
        else if (a == "--linearize-max-n") linearize_max_n = std::atoi(next().c_str());
        else {
            std::fprintf(stderr, "usage: chain_scaling [--max-n N] [--repeats R] [--steps S] [--joints revolute,ball] "
                                 "[--solvers LIST] [--dense-max-n N] [--integrators LIST] [--dts LIST] [--linearize] "
                                 "[--linearize-max-n N]\n");
            return 2;
        }
    }
    for (const std::string& integrator : integrators)
    for (const std::string& dt_text : dts)
    for (const std::string& joint : joints) {
        const bool ball = joint == "ball";
        const bool tree = joint_space(integrator);
        if (tree && ball) continue;
        const double dt = std::atof(dt_text.c_str());
        for (const std::string& solver_name : tree ? std::vector<std::string>{"tree"} : solvers) {
            const std::string& solver = solver_name;
            std::vector<double> ln, lt, lit, lln, llt;
            int first_subdivided = -1;
            const bool lin = with_linearize && integrator.rfind("vi-galerkin", 0) == 0;
            for (int n = 1; n <= max_n; n *= 2) {
                if (solver == "dense-lu" && n > dense_max_n) break;
                std::shared_ptr<const Model> m;
                try {
                    m = compile(chain(n, ball, solver, integrator, dt));
                } catch (const Error& e) {
                    std::fprintf(stderr, "chain_scaling: %s\n", e.what());
                    return 2;
                }
                std::vector<Result> rs;
                for (int k = 0; k < repeats; ++k) rs.push_back(run_once(m, steps));
                std::sort(rs.begin(), rs.end(), [](const Result& a, const Result& b) { return a.us_per_step < b.us_per_step; });
                const Result& r = rs[rs.size() / 2];
                if (r.subdivided > 0 && first_subdivided < 0) first_subdivided = n;
                std::printf("{\"bench\":\"chain_scaling\",\"integrator\":\"%s\",\"dt\":%g,\"joint\":\"%s\",\"solver\":\"%s\",\"n\":%d,\"steps\":%d,"
                            "\"us_per_step\":%.3f,\"us_per_link_step\":%.4f,\"us_per_link_iteration\":%.4f,"
                            "\"newton_mean\":%.3f,\"newton_max\":%d,\"newton_all_per_step\":%.3f,"
                            "\"subdivided_steps\":%lld,\"failed_steps\":%lld,\"max_violation\":%.3g,"
                            "\"max_energy_dev\":%.4g,\"max_rel_energy_error\":%.4g}\n",
                            integrator.c_str(), dt, joint.c_str(), solver.c_str(), n, steps, r.us_per_step, r.us_per_step / n,
                            r.us_per_iteration / n, r.newton_mean, r.newton_max, r.us_per_step / r.us_per_iteration,
                            r.subdivided, r.failed, r.vmax, r.edev, r.erel);
                std::fflush(stdout);
                if (lin && n <= linearize_max_n) {
                    const double us = time_linearize(m, repeats);
                    std::printf("{\"bench\":\"chain_scaling_linearize\",\"integrator\":\"%s\",\"dt\":%g,\"n\":%d,"
                                "\"us_per_linearize\":%.2f,\"linearize_per_step\":%.2f}\n",
                                integrator.c_str(), dt, n, us, us / r.us_per_step);
                    std::fflush(stdout);
                    if (n >= 32) lln.push_back(std::log(double(n))), llt.push_back(std::log(us));
                }
                if (n >= 64) {
                    ln.push_back(std::log(double(n)));
                    lt.push_back(std::log(r.us_per_step));
                    lit.push_back(std::log(r.us_per_iteration));
                }
            }
            auto fit = [&](const std::vector<double>& ly) {
                if (ln.size() < 2) return std::string("null");
                return std::to_string(slope(ln, ly));
            };
            if (lin && lln.size() >= 2) {
                std::printf("{\"bench\":\"chain_scaling_linearize_summary\",\"integrator\":\"%s\",\"dt\":%g,"
                            "\"slope_n_ge_32\":%.3f}\n",
                            integrator.c_str(), dt, slope(lln, llt));
                std::fflush(stdout);
            }
            std::printf("{\"bench\":\"chain_scaling_summary\",\"integrator\":\"%s\",\"dt\":%g,\"joint\":\"%s\",\"solver\":\"%s\",\"slope_n_ge_64\":%s,"
                        "\"slope_per_iteration_n_ge_64\":%s,\"first_subdivided_n\":%d}\n",
                        integrator.c_str(), dt, joint.c_str(), solver.c_str(), fit(lt).c_str(), fit(lit).c_str(), first_subdivided);
            std::fflush(stdout);
        }
    }
    return 0;
}
