// Fuzz target: the recording reader of `noether view` (noether::read_recording). Every input
// must end in contents or a noether::Error naming the rule, never a crash or another exception;
// the contents it accepts must be consistent (frames within the file, every shown value finite).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "noether/error.hpp"
#include "noether/recording_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 1024 * 1024) return 0;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const noether::RecordingContents rc = noether::read_recording(bytes);
        const std::size_t frame_bytes = 4 * static_cast<std::size_t>(rc.frame_floats);
        if (rc.frame_floats != 3 + 7 * rc.bodies || rc.frames == 0 || rc.data_offset + rc.frames * frame_bytes > size)
            __builtin_trap();
        for (std::size_t k = 0; k < rc.frames * static_cast<std::size_t>(rc.frame_floats); ++k) {
            float v;
            std::memcpy(&v, bytes.data() + rc.data_offset + 4 * k, 4);
            if (!std::isfinite(v)) __builtin_trap();
        }
    } catch (const noether::Error&) {
    }
    return 0;
}
