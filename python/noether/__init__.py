"""noether: articulated rigid-body mechanisms simulated with variational integrators.

    import noether
    w = noether.load("scripts/examples/double_pendulum.lua", set={"dt": 0.005})
    w.run(duration=10)                 # the GIL is released while stepping
    w.q, w.qdot                        # joint coordinates and rates (numpy views, no copies)
    w.poses                            # (nbodies, 7): CoM position, orientation (w, x, y, z)
    w.actuation[:] = u                 # joint inputs (a writable view)

Scenes come from Lua scripts (load), URDF files (import_urdf), MJCF files (import_mjcf) or are built
body by body (Spec).
Errors raise noether.Error (ModelError, UsageError, ScriptError, StepError) with the engine's
messages (file:line). docs/python.md.
"""

from ._noether import (  # noqa: F401
    Ensemble,
    Error,
    ModelError,
    ScriptError,
    Spec,
    StepError,
    UsageError,
    World,
    __version__,
    import_mjcf,
    import_urdf,
    load_all,
)


def _text(value):
    """A --set / --option value as the command line would give it (numbers exactly)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def load(path, set=None, options=None, world=0, sandbox=None, time_limit=60.0, memory_mb=256.0, lua_callbacks=True):
    """The compiled world of a Lua scene script (its first, or number `world`), not yet stepped.

    set: the script's parameters (noether.params), like `noether run --set name=value`.
    options: integrator options of every world, like `--option name=value`.
    sandbox: a directory: run an untrusted script as `noether run --sandbox DIR` does (safe Lua
    libraries only, files only below DIR, no plugin directories), its script limited to
    time_limit seconds and memory_mb MiB of Lua heap (each Lua callback then gets time_limit anew).
    Outputs the script declares (w:output, w:record) are written by the returned world's run.
    The scene's Lua callbacks (w:on_step controllers, output callbacks) run at the steps you take,
    exactly as under `noether run`; lua_callbacks=False turns them off (control from Python only).
    """
    worlds = load_all(path, {k: _text(v) for k, v in (set or {}).items()},
                      {k: _text(v) for k, v in (options or {}).items()},
                      sandbox, time_limit, memory_mb, lua_callbacks)
    if not 0 <= world < len(worlds):
        raise UsageError("%s makes %d world(s); there is no world %d" % (path, len(worlds), world))
    return worlds[world]
