// Fuzz target: MJCF text → import → assemble → compile → a few steps → save/restore. Every input
// must end in a result or a noether::Error, never a crash, a hang or another exception. Includes
// may name only the scratch file itself (anything else is refused as a sandboxed host would).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "noether/mjcf.hpp"
#include "noether/noether.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024) return 0;
    static const std::string path = "/tmp/noether_fuzz_mjcf_" + std::to_string(getpid()) + ".xml";
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(data, 1, size, f);
        std::fclose(f);
    } else {
        return 0;
    }
    try {
        noether::Spec spec;
        spec.options.max_substeps = 2;
        spec.options.max_iterations = 20;
        noether::mjcf::Options opt;
        opt.drop_armature = size % 2 == 0;
        opt.keyframe = size % 3 == 0 ? "#0" : "";
        opt.include_problem = [](const std::string& p) { return p == path ? std::string() : std::string("not in the fuzz sandbox"); };
        noether::mjcf::import(spec, path, opt);
        if (spec.bodies.size() > 64) return 0;  // keep each input fast
        noether::assemble(spec, 1e-12, 30);
        auto m = noether::compile(spec);
        noether::Data d(m);
        for (int i = 0; i < 5; ++i)
            if (noether::step(*m, d) != noether::StepStatus::ok) break;
        const std::string bytes = d.save();
        noether::Data e(m);
        e.restore(bytes);
        noether::monitors(*m, e);
    } catch (const noether::Error&) {
    }
    return 0;
}
