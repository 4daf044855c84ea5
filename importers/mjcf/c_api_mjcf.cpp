// The C API of the MJCF importer (noether_mjcf.h).
#include "noether_mjcf.h"

#include "noether/mjcf.hpp"
#include "noether/sdk/c_bridge.hpp"

extern "C" {

int noether_spec_import_mjcf(noether_spec* spec, const char* path, const char* keyframe, int drop_armature, const char* prefix) {
    return noether::c_bridge::import_spec(
        spec, path, "noether_spec_import_mjcf",
        [&](noether::Spec& work) {
            noether::mjcf::Options o;
            if (prefix) o.prefix = prefix;
            if (keyframe) o.keyframe = keyframe;
            o.drop_armature = drop_armature != 0;
            noether::mjcf::import(work, path, o);
        },
        [](const std::string& name, const std::string& value) {
            if (name == "drop_armature") return std::string("drop_armature = 1");
            if (name == "keyframe") return "keyframe = \"" + value + "\"";
            return "the MJCF importer's setting '" + name + "' = " + value +
                   " (Lua w:mjcf, Python import_mjcf; not in noether_spec_import_mjcf)";
        });
}

}  // extern "C"
