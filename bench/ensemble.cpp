// ensemble: throughput of noether::Ensemble against the number of members and threads.
//
// Scenes: the 8-link revolute chain of chain_scaling (1×0.1×0.1 m boxes of 1 kg, horizontal at
// rest) and the planar four-bar of four hinges (three links of 1 m and the world), both under
// vi-maximal at dt = 0.01. Member i's first link is 1 + 0.01·i kg (a ModelVariation, so no two
// members are alike). Each case: K members, --steps steps each, on T threads; the time is the
// median of --repeats runs, interleaved over the thread counts. One JSON object per line:
//   {"bench":"ensemble","scene":…,"members":K,"threads":T,"steps":…,"wall_s":…,
//    "member_steps_per_s":…,"speedup":…,"member_cost_vs_lone":…}
// speedup = wall(1 thread) / wall(T threads) for the same K; member_cost_vs_lone = the 1-thread
// ensemble's wall over the same K members run alone one after another as noether::Run objects
// (interleaved with the ensemble runs).
//
// usage: ensemble [--members 1,4,16,64,256] [--threads 1,2] [--steps 1000] [--repeats 3]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "noether/ensemble.hpp"
#include "noether/noether.hpp"

using namespace noether;

namespace {

std::vector<int> ints(const std::string& s) {
    std::vector<int> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) out.push_back(std::atoi(item.c_str()));
    return out;
}

Mat3 box(double m, double x, double y, double z) {
    return Mat3::diag(m * (y * y + z * z) / 12, m * (x * x + z * z) / 12, m * (x * x + y * y) / 12);
}

Spec chain8() {
    Spec s;
    for (int i = 0; i < 8; ++i) {
        BodySpec& b = s.add_body("link" + std::to_string(i + 1));
        b.inertia = box(1, 1, 0.1, 0.1);
        b.position = {i + 0.5, 0, 0};
    }
    for (int i = 0; i < 8; ++i) {
        JointSpec& j = s.add_joint("j" + std::to_string(i + 1), "revolute", i == 0 ? "world" : "link" + std::to_string(i),
                                   "link" + std::to_string(i + 1));
        j.anchor = Vec3{double(i), 0, 0};
        j.axis = Vec3{0, 1, 0};
    }
    return s;
}

// The four-bar: L1 (0,0,0)→(1,0,0), L2 (1,0,0)→(1,0,−1), L3 (1,0,−1)→(2,0,−1), closed to the
// world by a fourth hinge at (2,0,−1).
Spec fourbar() {
    Spec s;
    const Quat down = quat_from_axis_angle({0, 1, 0}, M_PI / 2);
    const Vec3 centers[3] = {{0.5, 0, 0}, {1, 0, -0.5}, {1.5, 0, -1}};
    for (int i = 0; i < 3; ++i) {
        BodySpec& b = s.add_body("link" + std::to_string(i + 1));
        b.inertia = box(1, 1, 0.1, 0.1);
        b.position = centers[i];
        if (i == 1) b.orientation = down;
    }
    const char* parents[4] = {"world", "link1", "link2", "world"};
    const char* children[4] = {"link1", "link2", "link3", "link3"};
    const Vec3 anchors[4] = {{0, 0, 0}, {1, 0, 0}, {1, 0, -1}, {2, 0, -1}};
    for (int i = 0; i < 4; ++i) {
        JointSpec& j = s.add_joint("hinge" + std::to_string(i + 1), "revolute", parents[i], children[i]);
        j.anchor = anchors[i];
        j.axis = Vec3{0, 1, 0};
    }
    // Start it moving (a four-bar at rest in this pose stays there only approximately).
    s.bodies[0].angular_velocity = {0, 1, 0};
    return s;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> members = {1, 4, 16, 64, 256}, threads = {1, 2};
    int steps = 1000, repeats = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : "";
        if (a == "--members") members = ints(v), ++i;
        else if (a == "--threads") threads = ints(v), ++i;
        else if (a == "--steps") steps = std::atoi(v), ++i;
        else if (a == "--repeats") repeats = std::atoi(v), ++i;
        else {
            std::fprintf(stderr, "usage: ensemble [--members 1,4,16,64,256] [--threads 1,2] [--steps 1000] [--repeats 3]\n");
            return 2;
        }
    }
    if (std::find(threads.begin(), threads.end(), 1) == threads.end()) threads.insert(threads.begin(), 1);
    struct Scene {
        const char* name;
        Spec spec;
    };
    const Scene scenes[] = {{"chain8", chain8()}, {"fourbar", fourbar()}};
    for (const Scene& sc : scenes) {
        const auto model = compile(sc.spec);
        const int kmax = *std::max_element(members.begin(), members.end());
        std::vector<std::shared_ptr<const Model>> varied;
        for (int i = 0; i < kmax; ++i) {
            ModelVariation v(model);
            v.set("link1.mass", {1.0 + 0.01 * i});
            varied.push_back(v.build());
        }
        for (int K : members) {
            std::vector<std::vector<double>> wall(threads.size());
            std::vector<double> lone;
            for (int r = 0; r < repeats; ++r) {
                // The same K members run alone, one after another (the reference of member_cost_vs_lone).
                double sum = 0;
                for (int i = 0; i < K; ++i) {
                    Run run(varied[i]);
                    const double t0 = now();
                    run.steps(steps);
                    sum += now() - t0;
                }
                lone.push_back(sum);
                for (std::size_t t = 0; t < threads.size(); ++t) {
                    Ensemble e(model, K);
                    e.set_threads(threads[t]);
                    for (int i = 0; i < K; ++i) e.set_model(i, varied[i]);
                    const double t0 = now();
                    const int running = e.steps(steps);
                    wall[t].push_back(now() - t0);
                    if (running != K) {
                        std::fprintf(stderr, "ensemble: %d members failed\n", K - running);
                        return 1;
                    }
                }
            }
            const double w1 = median(wall[0]);
            const double lone_s = median(lone);
            for (std::size_t t = 0; t < threads.size(); ++t) {
                const double w = median(wall[t]);
                std::printf("{\"bench\":\"ensemble\",\"scene\":\"%s\",\"members\":%d,\"threads\":%d,\"steps\":%d,"
                            "\"wall_s\":%.6g,\"member_steps_per_s\":%.6g,\"speedup\":%.4g,\"member_cost_vs_lone\":%.4g}\n",
                            sc.name, K, threads[t], steps, w, K * double(steps) / w, w1 / w, w1 / lone_s);
                std::fflush(stdout);
            }
        }
    }
    return 0;
}
