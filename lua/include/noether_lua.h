/* noether_lua.h — the C API for Lua scenes (library libnoether_lua; the kernel API is noether.h). */
#ifndef NOETHER_LUA_H
#define NOETHER_LUA_H

#include "noether.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run a scene script as `noether run` does. `set` holds nset "name=value" strings (the --set
 * parameters). Returns 0 (ok), 1 (a step failed) or 2 (bad input); noether_script_error() has the
 * message. If summary_json is not NULL it receives the run summary as JSON (free it with
 * noether_free). */
NOETHER_API int noether_run_script(const char* path, int nset, const char* const* set, char** summary_json);
/* The same in the sandbox for untrusted scenes (docs/lua.md, "Sandbox"): safe Lua libraries
 * only, files written only below sandbox_dir, no plugin directories, heap and time limits. */
NOETHER_API int noether_run_script_sandboxed(const char* path, int nset, const char* const* set, const char* sandbox_dir,
                                             char** summary_json);
/* Load a scene script without running it, for a host that steps the scene itself: world number
 * `world` (0: the first the script makes) compiled, in a run with the outputs the script declares
 * (w:output, w:record), at its initial state. `set` as for noether_run_script. Step it with
 * noether_run_steps or noether_run_duration: the scene's Lua callbacks (its w:on_step controller,
 * output callbacks) run at those steps exactly as under `noether run` (the script's Lua state
 * stays open until the run is freed; noether_step on noether_run_data steps without them). A Lua
 * error in a callback fails the call with NOETHER_BAD_INPUT and the script's file:line in
 * noether_last_error(); the step is not taken. Read the world through noether_run_data and
 * noether_run_model, close it with noether_run_finish, free it with noether_run_free. NULL on
 * error: noether_script_error() and noether_last_error() give the message (script file:line). */
NOETHER_API noether_run* noether_script_load(const char* path, int nset, const char* const* set, int world);
/* The message of the last failed noether_run_script or noether_script_load on this thread. */
NOETHER_API const char* noether_script_error(void);

#ifdef __cplusplus
}
#endif

#endif /* NOETHER_LUA_H */
