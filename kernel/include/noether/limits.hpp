// noether/limits.hpp — size limits that fixed-size buffers rely on (checked by compile()).
#pragma once

namespace noether {

constexpr int kMaxJointRows = 12;  // constraint rows of one joint
constexpr int kMaxJointDofs = 6;   // degrees of freedom (coordinates, actuation inputs) of one joint
// The largest node of the block graph: a body (6 unknowns) or a joint (its rows).
constexpr int kMaxNodeSize = kMaxJointRows > 6 ? kMaxJointRows : 6;

}  // namespace noether
