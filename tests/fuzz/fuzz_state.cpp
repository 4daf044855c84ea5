// Fuzz target: saved states (Data::save / Data::restore). A saved state is input a script hands to
// restore_file from its sandbox and a host to Data::restore, so it may be broken or hostile. The
// input is not the state itself but an edit of one: the target makes a real state (one of four
// scenes, one of nine integrators, 0–95 steps in) and applies the input's edits to its bytes, so
// the corpus stays valid when the state format changes. Every edited state must be either
//   refused with a noether::Error, the Data left exactly as it was made, or
//   restored: it then saves to bytes that restore to the same bytes again, its monitors are
//   computed, and it steps three times, each step ok (the step count one more), failed (the
//   step count as it was) or refused with a noether::Error (the Data as before that step).
// A crash, a sanitizer report or another exception (std::bad_alloc from a size read off the
// bytes, say) is a finding. Input: byte 0 the scene and integrator, byte 1 the steps, then edits
// of 4 bytes each (kind, offset low, offset high, value).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "../util.hpp"
#include "noether/noether.hpp"

namespace {

using namespace noether;

constexpr const char* const* kIntegrators = testutil::kShippedIntegrators;
constexpr int kNumIntegrators = testutil::kNumShippedIntegrators;
constexpr int kNumScenes = 4;

// 0: a 3-link revolute chain; 1: a floating tree (free root, ball joint, hinge, a weld);
// 2: a closed loop (maximal-coordinate integrators only); 3: under vi-maximal a double pendulum with
// its elbow limited falling onto the ground (three point contacts, loaded from step 52 on), under
// the others (which take neither) the double pendulum with springs and dampers on its joints.
Spec scene(int k, const char* integrator) {
    Spec s;
    switch (k) {
        case 0: s = testutil::chain_spec(3, "revolute"); break;
        case 1: s = testutil::floating_tree_spec(); break;
        case 2: s = testutil::closed_loop_spec(); break;
        default: {
            if (std::strcmp(integrator, "vi-maximal") != 0) {
                s = testutil::with_springs(testutil::double_pendulum_spec());
                break;
            }
            s = testutil::falling_double_pendulum();
            s.joints[1].lower = {-0.3}, s.joints[1].upper = {0.3}, s.joints[1].limited = true;
        }
    }
    s.options.integrator = integrator;
    s.options.dt = 0.01;
    s.options.max_substeps = 4;
    // (The Dormand–Prince integrators' cap on internal steps, low: an edited rate of 1e6 rad/s took
    // ~1e5 internal steps a step before the cap existed and keeps each input fast here.)
    if (std::strncmp(integrator, "dp45", 4) == 0) s.options.extra["max_internal_steps"] = 2000;
    return s;
}

// The compiled models (null where the integrator refuses the scene) and the states saved from them.
std::shared_ptr<const Model> model(int sel) {
    static std::map<int, std::shared_ptr<const Model>> cache;
    auto it = cache.find(sel);
    if (it != cache.end()) return it->second;
    std::shared_ptr<const Model> m;
    try {
        m = compile(scene(sel / kNumIntegrators, kIntegrators[sel % kNumIntegrators]));
    } catch (const Error&) {
        // Scenes 1–3 are not every integrator's; the chain is (or the plugins did not load: the
        // replay fails rather than passing on nothing).
        if (sel / kNumIntegrators == 0) __builtin_trap();
    }
    return cache[sel] = m;
}

const std::string& saved(int sel, int steps, const std::shared_ptr<const Model>& m) {
    static std::map<std::pair<int, int>, std::string> cache;
    auto it = cache.find({sel, steps});
    if (it != cache.end()) return it->second;
    Data d(m);
    for (int k = 0; k < steps; ++k)
        if (step(*m, d) != StepStatus::ok) break;
    return cache[{sel, steps}] = d.save();
}

template <class T>
void put(std::string& s, std::size_t at, T v) {
    if (s.size() < sizeof v) return;
    at = std::min(at, s.size() - sizeof v);
    std::memcpy(&s[at], &v, sizeof v);
}

void apply_edit(std::string& s, const std::uint8_t* e) {
    const std::size_t off = static_cast<std::size_t>(e[1]) | static_cast<std::size_t>(e[2]) << 8;
    const std::uint8_t v = e[3];
    const std::size_t at = s.empty() ? 0 : off % s.size();
    static const double doubles[] = {std::nan(""), HUGE_VAL, -HUGE_VAL, 0.0, -0.0, 1e308, -1.0, 1e-310,
                                     9007199254740992.0, 1e6, 0.5, -1e-300};
    static const std::int32_t ints[] = {0, -1, 1, std::numeric_limits<std::int32_t>::max(),
                                        std::numeric_limits<std::int32_t>::min(), 2, 3, 4, 5, 64, 65, 256, 1 << 20};
    switch (e[0] % 6) {
        case 0: if (!s.empty()) s[at] = static_cast<char>(v); break;
        case 1: if (!s.empty()) s[at] = static_cast<char>(static_cast<std::uint8_t>(s[at]) ^ (v | 1)); break;
        case 2: put(s, at, doubles[v % (sizeof doubles / sizeof doubles[0])]); break;
        case 3: put(s, at, ints[v % (sizeof ints / sizeof ints[0])]); break;
        case 4: put(s, at, static_cast<std::uint64_t>(v) << 56 | 0x00ffffffffffffffull); break;  // a huge size
        default:
            if (v & 1) s.resize(at);
            else s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(v));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2 || size > 2 + 4 * 32) return 0;
    const int sel = data[0] % (kNumIntegrators * kNumScenes), steps = data[1] % 96;
    const std::shared_ptr<const Model> m = model(sel);
    if (!m) return 0;
    std::string bytes = saved(sel, steps, m);
    for (std::size_t k = 2; k + 4 <= size; k += 4) apply_edit(bytes, data + k);

    noether::Data e(m);
    const std::string pristine = e.save();
    try {
        e.restore(bytes);
    } catch (const noether::Error&) {
        if (e.save() != pristine) __builtin_trap();  // refused, but changed the Data
        return 0;
    }
    const std::string once = e.save();
    noether::Data f(m);
    f.restore(once);  // (an exception here escapes: a state restore accepted must save restorably)
    if (f.save() != once) __builtin_trap();
    (void)noether::monitors(*m, e);
    for (int k = 0; k < 3; ++k) {
        const std::string before = e.save();
        const std::int64_t n = e.step;
        try {
            const noether::StepStatus st = noether::step(*m, e);
            if (e.step != (st == noether::StepStatus::ok ? n + 1 : n)) __builtin_trap();
        } catch (const noether::Error&) {
            if (e.save() != before) __builtin_trap();  // refused, but changed the Data
        }
    }
    return 0;
}
