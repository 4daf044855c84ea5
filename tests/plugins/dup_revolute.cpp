// A joint plugin whose name duplicates the built-in "revolute".
#include "noether/sdk/joint.hpp"
#include "noether/sdk/plugin.hpp"

namespace {
class Dup final : public noether::JointType {
public:
    std::unique_ptr<noether::JointModel> compile(noether::JointSetup&) const override { return nullptr; }
};
}  // namespace

NOETHER_PLUGIN(NOETHER_PLUGIN_JOINT, "revolute", "a second revolute (must be refused)", Dup)
