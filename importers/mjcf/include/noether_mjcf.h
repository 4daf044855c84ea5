/* noether_mjcf.h — the C API of the MJCF importer (library libnoether_mjcf; the kernel API is
 * noether.h). docs/c_api.md, docs/mjcf.md. */
#ifndef NOETHER_MJCF_H
#define NOETHER_MJCF_H

#include "noether.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Import an MJCF (MuJoCo XML) model into the spec (its bodies, joints, loop closures, contacts and
 * servos, named with `prefix` prepended, which may be NULL), starting from the <key> named
 * `keyframe` (NULL or "": qpos0), and move it to a configuration that satisfies every joint, as
 * `noether import` does. Joint armature is kept (integrators vi-maximal and vi-midpoint); drop_armature
 * 1 leaves it out (for the other integrators). NOETHER_BAD_INPUT with a message naming the file, the line and the element if the
 * file cannot be used; the spec is then unchanged. Then noether_compile(spec) as usual. */
NOETHER_API int noether_spec_import_mjcf(noether_spec* spec, const char* path, const char* keyframe, int drop_armature,
                                         const char* prefix);

#ifdef __cplusplus
}
#endif

#endif /* NOETHER_MJCF_H */
