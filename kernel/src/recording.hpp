// Internal to the kernel: the recording format of the viewer (docs/viewer.md).
//
//   bytes 0–7   "NOETHREC" (magic), bytes 8–11 the header length H (uint32, little-endian)
//   H bytes     the header: JSON (bodies with shapes, joints, dt, ...), padded with spaces so that
//               the frames start at a multiple of 4
//   frames      frame_floats float32 (little-endian) each: time, energy, violation, then per
//               body position x y z and orientation w x y z (world), then per contact point (the
//               header's optional "contacts") its point x y z and the force on its body x y z
//               (normal + friction, world)
#pragma once

#include <cstdio>
#include <string>

#include "noether/data.hpp"
#include "noether/spec.hpp"

namespace noether {
struct Model;
namespace detail {

constexpr char kRecordingMagic[9] = "NOETHREC";
constexpr int kRecordingContactFloats = 6;  // per contact point: point, force


std::string recording_header(const Model& m, int every, const std::string& origin);
int recording_frame_floats(const Model& m);
void recording_frame(const Model& m, const Data& d, const Monitors& mon, float* out);
void write_recording_header(std::FILE* fp, std::string json);

}  // namespace detail
}  // namespace noether
