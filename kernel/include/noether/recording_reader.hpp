// Reading a recording (docs/viewer.md: "NOETHREC", a JSON header, float32 frames) as `noether
// view` does, with every rule checked: a file from anywhere may be damaged or hand-made.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "noether/export.h"

namespace noether {

struct RecordingContents {
    std::string header;           // the JSON header as stored (checked: see read_recording)
    long long frame_floats = 0;   // floats per frame: 3 + 7 × bodies + 6 × contacts
    long long bodies = 0;
    long long contacts = 0;       // contact points (the header's optional "contacts")
    std::size_t data_offset = 0;  // byte offset of the first frame
    std::size_t frames = 0;       // frames to show: complete and finite, from the first on
    std::vector<std::string> warnings;  // a partial last frame, frames cut at a non-finite value
};

// Check a recording's bytes. Throws UsageError naming the rule and the value when the file
// cannot be shown: no magic, a header length beyond the file, a header that is not JSON or has
// a key twice, a missing or wrong field the viewer reads (format, frame_floats = 3 + 7 × bodies +
// 6 × contacts, bodies with their shapes, joints, contacts with a body index in range), no frame, or a non-finite value in the first frame. Frames
// from the first one holding a non-finite value on are left out, with a warning.
NOETHER_API RecordingContents read_recording(const std::string& bytes);

}  // namespace noether
