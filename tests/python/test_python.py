"""The Python module (docs/python.md): scenes from Lua, URDF and Spec; numpy views of the kernel's
state; inputs; save/restore; linearisation; ensembles; errors; the GIL released while stepping.

Run by ctest: python3 -m pytest tests/python with PYTHONPATH=build/python.
"""
import json
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import noether

SOURCE = os.environ.get("NOETHER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.environ.get("NOETHER_MODELS_DIR", os.path.join(SOURCE, "..", "shared", "models"))
NOETHER = os.environ.get("NOETHER_CLI", "")


def example(name):
    return os.path.join(SOURCE, "scripts", "examples", name)


def double_pendulum_spec(integrator="vi-maximal", dt=0.01):
    """The double pendulum of scripts/examples/double_pendulum.lua, built body by body."""
    s = noether.Spec(dt=dt, integrator=integrator)
    box = [1.0 * (0.1 ** 2 + 0.1 ** 2) / 12, 1.0 * (1 + 0.1 ** 2) / 12, 1.0 * (1 + 0.1 ** 2) / 12]
    s.body("link1", mass=1, inertia=box, position=[0.5, 0, 0])
    s.body("link2", mass=1, inertia=box, position=[1.5, 0, 0])
    s.joint("j1", "revolute", "world", "link1", anchor=[0, 0, 0], axis=[0, 1, 0])
    s.joint("j2", "revolute", "link1", "link2", anchor=[1, 0, 0], axis=[0, 1, 0])
    return s


def test_a_loaded_scene_runs_like_the_command_line(tmp_path):
    py_csv, cli_csv = tmp_path / "py.csv", tmp_path / "cli.csv"
    w = noether.load(example("double_pendulum.lua"), set={"csv": str(py_csv)})
    assert w.body_names == ["link1", "link2"] and w.joint_names == ["j1", "j2"]
    assert w.ndofs == 2 and w.time == 0.0
    s = w.run(duration=2)
    assert s["steps"] == 200 and abs(w.time - 2.0) < 1e-12
    assert w.finish() == []
    if not NOETHER:
        pytest.skip("NOETHER_CLI not set")
    subprocess.run([NOETHER, "run", example("double_pendulum.lua"), "--set", "duration=2", "--set", "csv=" + str(cli_csv),
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    # The script's own output, written by the Python run: the same Model and the same steps give
    # the same file, bit for bit (17 significant digits).
    assert py_csv.read_text() == cli_csv.read_text()
    assert len(py_csv.read_text().splitlines()) == 202


def test_set_and_options_reach_the_script():
    w = noether.load(example("double_pendulum.lua"), set={"dt": 0.005, "integrator": "vi-galerkin"}, options={"points": 2})
    assert w.dt == 0.005 and w.integrator == "vi-galerkin"
    w.run(steps=10)
    assert abs(w.time - 0.05) < 1e-15


def test_state_arrays_are_views_of_the_kernel_memory():
    w = noether.load(example("double_pendulum.lua"))
    q, poses, twists = w.q, w.poses, w.twists
    assert poses.shape == (2, 7) and twists.shape == (2, 6) and q.shape == (2,)
    before = poses.copy()
    w.step(20)
    # The same arrays now show the new state (no copies were made).
    assert not np.array_equal(before, poses)
    assert np.array_equal(q, w.q) and q[0] != 0.0
    np.testing.assert_array_equal(w.positions, poses[:, :3])
    # Orientation quaternions are unit, the CoM of link1 is 0.5 from the pivot.
    np.testing.assert_allclose(np.linalg.norm(poses[:, 3:], axis=1), 1.0, atol=1e-12)
    assert abs(np.linalg.norm(poses[0, :3]) - 0.5) < 1e-12
    with pytest.raises(ValueError):
        q[0] = 1.0  # read-only: the state is set through set_joint_state / restore
    with pytest.raises(ValueError):
        poses[0, 0] = 1.0


def test_inputs_are_writable_views_and_act():
    a = noether.load(example("double_pendulum.lua"))
    b = noether.load(example("double_pendulum.lua"))
    b.actuation[:] = [2.0, 0.0]  # a shoulder torque about +y
    b.applied_force[1] = [0.0, 0.0, 5.0]
    a.step(50)
    b.step(50)
    assert b.q[0] < a.q[0] - 0.05 or b.q[0] > a.q[0] + 0.05
    assert b.actuation[0] == 2.0  # held until changed
    # The input does work: the energy is no longer conserved to the scheme's accuracy.
    assert abs(b.monitors()["energy"]) > 10 * abs(a.monitors()["energy"])


def test_a_scene_built_body_by_body_matches_the_lua_scene_bit_for_bit():
    w = double_pendulum_spec().compile()
    v = noether.load(example("double_pendulum.lua"))
    w.step(300)
    v.step(300)
    assert np.array_equal(w.poses, v.poses)
    assert np.array_equal(w.q, v.q)


def test_save_and_restore_round_trip_bit_identically():
    w = noether.load(example("fourbar.lua"))
    w.step(25)
    saved = w.save()
    w.step(40)
    after = w.poses.copy()
    w.restore(saved)
    w.step(40)
    assert np.array_equal(after, w.poses)
    other = noether.load(example("double_pendulum.lua"))
    with pytest.raises(noether.UsageError):
        other.restore(saved)


def test_set_joint_state_and_energy():
    w = double_pendulum_spec().compile()
    w.set_joint_state([0.3, -0.2], [0.0, 0.0])
    np.testing.assert_allclose(w.q, [0.3, -0.2], atol=1e-14)
    np.testing.assert_allclose(w.qdot, [0.0, 0.0], atol=1e-14)
    e0 = w.monitors()["energy"]
    # Potential energy at rest: link1's CoM 0.5 below... rotated by 0.3 about +y (z = -0.5 sin 0.3).
    g = 9.81
    z1 = -0.5 * np.sin(0.3)
    z2 = -np.sin(0.3) - 0.5 * np.sin(0.1)
    assert abs(e0 - g * (z1 + z2)) < 1e-12
    with pytest.raises(noether.UsageError, match="expected 2 values, got 3"):
        w.set_joint_state([0, 0, 0], [0, 0])


def test_errors_carry_the_engines_messages(tmp_path):
    bad = tmp_path / "bad.lua"
    bad.write_text('local noether = require("noether")\nlocal w = noether.world { dt = 0.01 }\n'
                   'w:body { name = "a", mass = -1, inertia = { 1, 1, 1 } }\nreturn w\n')
    with pytest.raises(noether.ScriptError, match=r"bad.lua:3: .*mass"):
        noether.load(str(bad))
    s = noether.Spec()
    s.body("a", mass=1, inertia=[1, 1, 1])
    s.joint("j", "revolute", "world", "ghost", axis=[0, 0, 1])
    with pytest.raises(noether.ModelError, match="ghost"):
        s.compile()
    with pytest.raises(noether.Error):
        noether.import_urdf(str(tmp_path / "missing.urdf"))
    w = double_pendulum_spec().compile()
    with pytest.raises(noether.UsageError, match="no body named 'nope'"):
        w.body_index("nope")
    with pytest.raises(noether.UsageError):
        w.output(str(tmp_path / "x.csv"), ["time", "nope.coord"])


def test_a_urdf_robot_loads_and_moves():
    ur5 = os.path.join(MODELS, "example-robot-data/robots/ur_description/urdf/ur5_robot.urdf")
    if not os.path.exists(ur5):
        pytest.skip("shared models not found")
    w = noether.import_urdf(ur5, fixed_base=True, dt=0.005, positions={"shoulder_lift_joint": -1.0})
    assert len(w.body_names) == 6 and w.ndofs == 6
    i = w.joint_names.index("shoulder_lift_joint")
    off, n = w.joint_dofs("shoulder_lift_joint")
    assert n == 1 and abs(w.q[off] - (-1.0)) < 1e-9
    s = w.run(duration=0.5)
    assert s["max_violation"] < 1e-9 and i >= 0
    assert abs(w.q[off] + 1.0) > 1e-3  # it fell


def test_an_mjcf_robot_loads_with_its_keyframe_and_loops():
    """Cassie from Menagerie's MJCF: the keyframe's coordinates (qpos order), four loops closed, the
    file's timestep, its armature kept (riqn refuses it by name; drop_armature=True leaves it out)."""
    cassie = os.path.join(MODELS, "mujoco_menagerie/agility_cassie/cassie.xml")
    if not os.path.exists(cassie):
        pytest.skip("shared models not found")
    with pytest.raises(noether.ModelError, match=r"cassie.xml:\d+ <joint name='left-hip-roll'>: joint 'left-hip-roll': armature 0.038125: integrator 'riqn'"):
        noether.import_mjcf(cassie, keyframe="home", integrator="riqn")
    w = noether.import_mjcf(cassie, keyframe="home")
    assert w.dt == pytest.approx(0.0005)
    assert len(w.body_names) == 23
    off, n = w.joint_dofs("left-knee")
    assert n == 1 and w.q[off] == pytest.approx(-1.1997, abs=0.01)  # home's knee (qpos 14), after closing the loops
    s = w.run(steps=200)
    assert s["max_violation"] < 1e-10
    w2 = noether.import_mjcf(cassie, keyframe="home", drop_armature=True)
    assert any("armature left out" in x for x in w2.run(steps=1)["warnings"])


def test_linearize_agrees_with_differences_of_the_step():
    w = double_pendulum_spec("vi-galerkin").compile()
    w.set_joint_state([0.4, -0.3], [0.2, 0.1])
    A, B, x, x_next = w.linearize()
    assert A.shape == (4, 4) and B.shape == (4, 2)
    saved = w.save()
    h = 1e-5
    for k in range(4):
        cols = []
        for sgn in (1, -1):
            w.restore(saved)
            xs = x.copy()
            xs[k] += sgn * h
            w.set_joint_state(xs[:2], xs[2:])
            w.step()
            cols.append(np.concatenate([w.q, w.qdot]))
        fd = (cols[0] - cols[1]) / (2 * h)
        np.testing.assert_allclose(A[:, k], fd, rtol=1e-5, atol=1e-6)
    w.restore(saved)
    w.step()
    np.testing.assert_allclose(np.concatenate([w.q, w.qdot]), x_next, atol=1e-13)


def test_an_ensemble_steps_members_like_separate_worlds():
    w = double_pendulum_spec().compile()
    e = w.ensemble(4, threads=2)
    for i in range(4):
        e.set_joint_state(i, [0.1 * i, 0.0], [0.0, 0.0])
    assert e.step(50) == 4
    for i in range(4):
        one = double_pendulum_spec().compile()
        one.set_joint_state([0.1 * i, 0.0], [0.0, 0.0])
        one.step(50)
        assert np.array_equal(one.q, e.q(i))
    with pytest.raises(noether.UsageError):
        e.q(4)


def test_ensemble_members_get_their_own_inputs_and_numbers():
    """Before: a Python ensemble could not give members different inputs or numbers."""
    w = double_pendulum_spec().compile()
    e = w.ensemble(3, threads=2)
    u = e.actuation
    assert u.shape == (3, 2) and not u.any()
    u[1, :] = [0.5, -0.2]
    u[2, 0] = -0.5
    e.vary(2, {"link1.mass": 2.0, "j2.damping": 0.05})
    assert e.step(80) == 3
    u[1, :] = 0.0  # inputs may change between step calls
    e.step(20)

    def alone(spec, inputs_first, inputs_then):
        one = spec.compile()
        one.actuation[:] = inputs_first
        one.step(80)
        one.actuation[:] = inputs_then
        one.step(20)
        return one

    plain = alone(double_pendulum_spec(), [0, 0], [0, 0])
    pushed = alone(double_pendulum_spec(), [0.5, -0.2], [0, 0])
    heavy_spec = noether.Spec(dt=0.01)
    box = [1.0 * (0.1 ** 2 + 0.1 ** 2) / 12, 1.0 * (1 + 0.1 ** 2) / 12, 1.0 * (1 + 0.1 ** 2) / 12]
    heavy_spec.body("link1", mass=2, inertia=box, position=[0.5, 0, 0])
    heavy_spec.body("link2", mass=1, inertia=box, position=[1.5, 0, 0])
    heavy_spec.joint("j1", "revolute", "world", "link1", anchor=[0, 0, 0], axis=[0, 1, 0])
    heavy_spec.joint("j2", "revolute", "link1", "link2", anchor=[1, 0, 0], axis=[0, 1, 0], damping=[0.05])
    heavy = alone(heavy_spec, [-0.5, 0], [-0.5, 0])
    for i, one in enumerate([plain, pushed, heavy]):  # each member steps bit for bit like a lone world
        assert np.array_equal(one.q, e.q(i)) and np.array_equal(one.qdot, e.qdot(i))
    assert not np.array_equal(e.q(0), e.q(1)) and not np.array_equal(e.q(0), e.q(2))
    fresh = w.ensemble(3)
    with pytest.raises(noether.UsageError, match="nosuch"):
        fresh.vary(0, {"nosuch.mass": 1.0})
    with pytest.raises(noether.UsageError, match="out of range"):
        fresh.vary(3, {"link1.mass": 1.0})
    with pytest.raises(noether.Error, match="mass"):
        w.ensemble(2).vary(0, {"link1.mass": -1.0})
    with pytest.raises(noether.UsageError, match="member 0 has already stepped; vary a member before its first step"):
        e.vary(0, {"link1.mass": 3.0})


def test_the_gil_is_released_while_stepping():
    w = noether.load(example("fourbar_chain.lua"))
    done = threading.Event()
    ticks = []

    def work():
        w.run(duration=30)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():  # this thread runs only if the stepping thread let go of the GIL
        ticks.append(1)
        done.wait(0.001)
    t.join()
    assert len(ticks) > 20


def test_outputs_and_recordings_from_python(tmp_path):
    w = double_pendulum_spec().compile()
    csv = tmp_path / "out.csv"
    rec = tmp_path / "out.nrec"
    w.output(str(csv), ["time", "energy", "j1.coord"], every=10)
    w.record(str(rec), fps=20)
    w.step(100)
    assert w.finish() == []
    lines = csv.read_text().splitlines()
    assert lines[0] == "time,energy,j1.coord" and len(lines) == 12
    assert rec.read_bytes()[:8] == b"NOETHREC"
    with pytest.raises(noether.UsageError, match="finished"):
        w.step()


def test_outputs_are_finished_when_a_world_is_closed_collected_or_the_interpreter_exits(tmp_path):
    """Before: a stepped world's outputs stayed X.csv.part after `del w` and at exit."""
    def world(name):
        w = double_pendulum_spec().compile()
        w.output(str(tmp_path / name), ["time", "j1.coord"])
        return w

    w = world("gc.csv")
    w.step(10)
    del w
    assert (tmp_path / "gc.csv").exists() and not (tmp_path / "gc.csv.part").exists()
    assert len((tmp_path / "gc.csv").read_text().splitlines()) == 12
    with world("with.csv") as w:
        w.step(10)
    assert (tmp_path / "with.csv").exists()
    with pytest.raises(noether.UsageError, match="finished"):
        w.step()
    # An exception in the with-block stops the run: the partial file keeps its .part name, and says so.
    with pytest.warns(RuntimeWarning, match=r"'.*raised.csv' is incomplete .* left as '.*raised.csv.part'"):
        with pytest.raises(KeyError):
            with world("raised.csv") as w:
                w.step(10)
                raise KeyError("controller")
    assert (tmp_path / "raised.csv.part").exists() and not (tmp_path / "raised.csv").exists()
    w = world("closed.csv")
    w.step(3)
    assert w.close() == [] and w.close() == []  # idempotent
    assert len((tmp_path / "closed.csv").read_text().splitlines()) == 5
    # A module-level world is finished at interpreter exit.
    code = ("import noether\n"
            "w = noether.load(%r, set={'csv': %r})\n"
            "w.run(steps=20)\n") % (example("double_pendulum.lua"), str(tmp_path / "exit.csv"))
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))
    assert len((tmp_path / "exit.csv").read_text().splitlines()) == 22
    assert not (tmp_path / "exit.csv.part").exists()


def test_import_urdf_takes_the_integrators_options():
    """Before: import_urdf had no options argument, yet its warnings suggest options={'max_turn': 0.1}."""
    ur5 = os.path.join(MODELS, "example-robot-data/robots/ur_description/urdf/ur5_robot.urdf")
    if not os.path.exists(ur5):
        pytest.skip("shared models not found")
    w = noether.import_urdf(ur5, fixed_base=True, dt=0.05, positions={"shoulder_lift_joint": -1.0},
                            options={"max_turn": 0.02, "guess": "predictor"})
    s = w.run(steps=20)
    plain = noether.import_urdf(ur5, fixed_base=True, dt=0.05, positions={"shoulder_lift_joint": -1.0},
                                options={"guess": "predictor"})
    p = plain.run(steps=20)
    # the option reached it: substeps (not counted as subdivided); measured 51.5 against 18.0 (chord
    # iterations included; matrices factored 13.7 against 4.3), with the predictions alone (the
    # default guess adds their misses, which the substeps' equal lengths carry: 18.05 against 12.3)
    assert s["newton_mean"] > 2 * p["newton_mean"]
    assert s["factor_mean"] > 2 * p["factor_mean"]
    # A word option: newton = 'exact' factors at every iterate (measured 9.35 matrices a step
    # against the default chord iterations' 4.3)
    e = noether.import_urdf(ur5, fixed_base=True, dt=0.05, positions={"shoulder_lift_joint": -1.0},
                            options={"newton": "exact"}).run(steps=20)
    assert e["factor_mean"] > 1.5 * p["factor_mean"]
    with pytest.raises(TypeError, match="options: 'newton' must be a number or a string, got list"):
        noether.import_urdf(ur5, fixed_base=True, options={"newton": ["exact"]})
    with pytest.raises(noether.ModelError, match="'max_trun' is not an option of integrator 'vi-maximal'"):
        noether.import_urdf(ur5, fixed_base=True, options={"max_trun": 0.1})


def test_a_loaded_scene_runs_its_lua_controller_like_the_command_line(tmp_path):
    """Before: noether.load dropped the scene's w:on_step controller with a UserWarning (the arm fell)."""
    if not os.path.exists(os.path.join(MODELS, "example-robot-data")):
        pytest.skip("shared models not found")
    py_csv, cli_csv, off_csv = tmp_path / "py.csv", tmp_path / "cli.csv", tmp_path / "off.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = noether.load(example("ur5_pd.lua"), set={"csv": str(py_csv), "duration": 1})
    assert w.lua_callbacks and w.host_note == ""
    w.step(100)
    w.run(steps=400)  # any mix of calls: the controller runs before every step
    w.close()
    # Python-only control is the host's explicit choice, and the world says so.
    off = noether.load(example("ur5_pd.lua"), set={"csv": str(off_csv), "duration": 1}, lua_callbacks=False)
    assert not off.lua_callbacks and "lua_callbacks=False" in off.host_note
    off.run(steps=500)
    off.close()
    last = [float(x) for x in py_csv.read_text().splitlines()[-1].split(",")]
    fallen = [float(x) for x in off_csv.read_text().splitlines()[-1].split(",")]
    target = [0.5, -1.0, 1.2, -0.5, 0.3, 0.2]
    assert abs(last[3 + 1] - target[1]) < abs(fallen[3 + 1] - target[1])  # the shoulder held toward its target
    if not NOETHER:
        pytest.skip("NOETHER_CLI not set")
    subprocess.run([NOETHER, "run", example("ur5_pd.lua"), "--set", "duration=1", "--set", "csv=" + str(cli_csv),
                    "--quiet"], check=True, stdout=subprocess.DEVNULL)
    assert py_csv.read_text() == cli_csv.read_text()  # byte for byte
    assert len(py_csv.read_text().splitlines()) == 102


def test_a_lua_callback_error_names_the_script_line(tmp_path):
    scene = tmp_path / "bad_controller.lua"
    scene.write_text(
        'local noether = require("noether")\n'
        'local w = noether.world{ dt = 0.01 }\n'
        'w:body{ name = "b", mass = 1, inertia = {1, 1, 1}, position = {0, 0, 1} }\n'
        'w:joint{ name = "j", type = "prismatic", parent = "world", child = "b", axis = {0, 0, 1} }\n'
        'w:on_step(function(w) if w:time() >= 0.05 then error("controller gave up") end end)\n'
        'return w\n')
    w = noether.load(str(scene))
    with pytest.raises(noether.ScriptError, match=r"bad_controller.lua:5: controller gave up"):
        w.step(100)
    assert abs(w.time - 0.05) < 1e-12  # the step whose callback failed was not taken


def test_a_python_controller_runs_before_every_step():
    def pd(world):
        world.actuation[:] = -20.0 * world.q - 4.0 * world.qdot

    a = double_pendulum_spec().compile()
    a.on_step(pd)
    a.run(steps=150)
    b = double_pendulum_spec().compile()
    for _ in range(150):  # the same law applied by hand between single steps
        pd(b)
        b.step(1)
    assert np.array_equal(a.q, b.q) and np.array_equal(a.qdot, b.qdot)  # bit for bit
    free = double_pendulum_spec().compile()
    free.run(steps=150)
    assert not np.allclose(a.q, free.q, atol=1e-3)

    def steps_itself(world):
        world.step(1)

    a.on_step(steps_itself)
    with pytest.raises(noether.UsageError, match="cannot be stepped from its own on_step"):
        a.step(1)
    t = a.time

    def raises(world):
        raise ValueError("from the controller")

    a.on_step(raises)
    with pytest.raises(ValueError, match="from the controller"):
        a.step(5)
    assert a.time == t
    a.on_step(None)
    a.step(1)
    assert abs(a.time - t - 0.01) < 1e-12
    with pytest.raises(noether.UsageError, match="expected a function"):
        a.on_step(3)


def test_importer_suggestions_are_python_keywords(tmp_path):
    """Before: import_urdf's errors said `import with base = "fixed"` (Lua syntax)."""
    urdf = tmp_path / "massless_root.urdf"
    urdf.write_text('<robot name="r">\n<link name="base"/>\n'
                    '<link name="arm"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>'
                    '</inertial></link>\n<joint name="j" type="revolute"><parent link="base"/><child link="arm"/>'
                    '<axis xyz="0 1 0"/><limit lower="0.5" upper="1" effort="1" velocity="1"/></joint>\n</robot>\n')
    with pytest.raises(noether.ModelError, match=r"cannot be a floating base; use fixed_base=True"):
        noether.import_urdf(str(urdf))
    w = noether.import_urdf(str(urdf), fixed_base=True)
    warned = "\n".join(w.run(steps=1)["warnings"])
    assert "(give positions={'j': ...} inside them, or limits=False)" in warned
    assert abs(w.q[0] - 0.5) < 1e-8  # started at its lower limit (held there within the solver tolerance)
    # Every importer setting is reachable: prefix, lump_fixed, initial pose and motion.
    p = noether.import_urdf(str(urdf), fixed_base=True, prefix="r1/", positions={"j": 0.7}, limits=False)
    assert p.joint_names == ["r1/j"] and abs(p.q[0] - 0.7) < 1e-12


def test_one_world_is_used_by_one_thread_at_a_time():
    """Issue 31 item 6: one thread stepping and one restoring segfaulted; four threads stepping
    lost steps and raised spurious StepErrors. Now a World in use by a stepping thread refuses
    every other thread with a UsageError, and no step is lost."""
    w = double_pendulum_spec(dt=0.001).compile()
    saved = w.save()
    refused, done = [], {"steps": 0, "restores": 0}

    def stepper():
        for _ in range(60):
            try:
                w.step(500)
                done["steps"] += 500
            except noether.UsageError as e:
                refused.append(str(e))

    def restorer():
        for _ in range(3000):
            try:
                w.restore(saved)
                done["restores"] += 1
            except noether.UsageError as e:
                refused.append(str(e))

    def run(targets):
        threads = [threading.Thread(target=t) for t in targets]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    # Four threads stepping: every call that was not refused stepped, none lost, no StepError.
    run([stepper] * 4)
    assert refused, "no call overlapped a step: the test proves nothing"
    assert w.summary()["steps"] == done["steps"] > 0
    # Stepping and restoring: refused while a step runs, never a crash.
    refused.clear()
    run([stepper, restorer])
    assert refused
    assert all("used by one thread at a time" in r for r in refused)
    w.restore(saved)  # once no thread steps, the World is anyone's
    assert w.time == 0


def test_views_stay_valid_across_a_restore():
    w = double_pendulum_spec().compile()
    saved = w.save()
    q = w.q
    before = q.__array_interface__["data"][0]
    w.step(10)
    w.restore(saved)
    assert w.q.__array_interface__["data"][0] == before  # the kernel's storage was replaced
    assert np.array_equal(q, w.q)


def test_ensembles_have_a_member_cap():
    w = double_pendulum_spec().compile()
    with pytest.raises(noether.UsageError, match="at most 100000, got 100000000"):
        w.ensemble(100000000)


def test_record_fps_must_be_a_positive_number(tmp_path):
    """Issue 31 item 8: fps=0 was accepted while fps=-1 was refused; fps=nan said "got null"."""
    w = double_pendulum_spec().compile()
    for bad, shown in ((0, "0.0"), (-1, "-1.0"), (float("nan"), "nan"), (float("inf"), "inf")):
        with pytest.raises(noether.UsageError, match="fps must be a positive number of frames per simulated second, got " + shown):
            w.record(str(tmp_path / "r.nrec"), fps=bad)


def test_a_scene_loads_sandboxed(tmp_path):
    """Issue 31 item 8: C and C++ could load a scene sandboxed, Python could not."""
    box = tmp_path / "box"
    box.mkdir()
    evil = box / "evil.lua"
    evil.write_text("os.execute('touch %s')\n" % (tmp_path / "pwned"))
    with pytest.raises(noether.ScriptError, match="field 'execute'"):
        noether.load(str(evil), sandbox=str(box))
    assert not (tmp_path / "pwned").exists()
    outside = box / "outside.lua"
    outside.write_text("local noether = require('noether')\nlocal w = noether.world{}\n"
                       "w:body{ name = 'b', mass = 1, inertia = {1, 1, 1} }\n"
                       "w:output{ file = '%s', channels = {'time'} }\nreturn w\n" % (tmp_path / "out.csv"))
    with pytest.raises(noether.ScriptError, match="outside the sandbox directory"):
        noether.load(str(outside), sandbox=str(box))
    spin = box / "spin.lua"
    spin.write_text("while true do end\n")
    with pytest.raises(noether.ScriptError, match="time limit"):
        noether.load(str(spin), sandbox=str(box), time_limit=0.2)
    # An ordinary scene loads and steps, its output written inside the directory.
    ok = box / "ok.lua"
    ok.write_text("local noether = require('noether')\nlocal w = noether.world{ dt = 0.01 }\n"
                  "w:body{ name = 'b', mass = 1, inertia = {1, 1, 1} }\n"
                  "w:output{ file = 'ok.csv', channels = {'time'} }\nreturn w\n")
    w = noether.load(str(ok), sandbox=str(box))
    w.run(steps=3)
    w.finish()
    assert (box / "ok.csv").read_text().count("\n") == 5  # header, the initial state, 3 steps


def test_kernel_suggestions_are_worded_in_python():
    """Issue 32 item 6: the kernel names options ("option 'integrator'"); Python says them as
    keyword arguments."""
    w = double_pendulum_spec().compile()
    with pytest.raises(noether.UsageError) as e:
        w.linearize()
    assert "integrators with one: vi-galerkin (integrator=...)" in str(e.value)
    assert "option '" not in str(e.value)


def test_contacts_and_limits_from_python():
    # A cube dropped on the ground (docs/contact.md): it rests on its 4 bottom corners carrying m g.
    s = noether.Spec(dt=0.01)
    s.body("box", mass=1, inertia=[1 / 6, 1 / 6, 1 / 6], position=[0, 0, 1.5])
    s.contact("box", shape="box", size=[1, 1, 1], mu=0.5, name="corner")
    w = s.compile()
    w.run(duration=1.5)
    c = w.contacts()
    assert len(c) == 8 and c[0]["name"] == "corner/1"
    assert abs(sum(x["normal_force"] for x in c) - 9.81) < 1e-8
    assert sum(x["active"] for x in c) == 4 and min(x["gap"] for x in c) > -1e-9
    assert w.summary()["contacts"] == 8
    # A pendulum into a +-0.5 rad limit stops there.
    p = noether.Spec(dt=0.01)
    p.body("bob", mass=1, inertia=[1 / 12, 1 / 12, 0.01 / 6], position=[0, 0, -0.5], velocity=[-2, 0, 0],
           angular_velocity=[0, 4, 0])
    p.joint("hinge", "revolute", "world", "bob", anchor=[0, 0, 0], axis=[0, 1, 0], lower=[-0.5], upper=[0.5])
    w = p.compile()
    hi, push = -1.0, 0.0
    for _ in range(100):
        w.step()
        hi = max(hi, w.q[0])
        push = min(push, w.limit_force[0])
    assert 0.5 - 1e-9 < hi <= 0.5 + 1e-9 and push < -1
    # riqn takes no limits: refused, naming the joint and who can.
    p2 = noether.Spec(dt=0.01, integrator="riqn")
    p2.body("bob", mass=1, inertia=[1 / 12, 1 / 12, 0.01 / 6], position=[0, 0, -0.5])
    p2.joint("hinge", "revolute", "world", "bob", anchor=[0, 0, 0], axis=[0, 1, 0], lower=[-0.5], upper=[0.5])
    with pytest.raises(noether.ModelError, match="does not enforce joint limits"):
        p2.compile()


def test_kinematics_and_dynamics_queries():
    # docs/queries.md: at the world's current state, numpy arrays.
    w = double_pendulum_spec().compile()
    w.set_joint_state([0.4, -0.3], [0.2, 0.1])
    J = w.jacobian("link2")
    assert J.shape == (6, 2)
    M = w.mass_matrix()
    assert M.shape == (2, 2) and abs(M[0, 1] - M[1, 0]) < 1e-14
    qd = np.array([0.2, 0.1])
    tau = np.array([0.5, -0.25])
    qdd = w.forward_dynamics(tau)
    assert np.allclose(w.inverse_dynamics(qdd), tau, atol=1e-12)
    assert np.allclose(w.inverse_dynamics(np.zeros(2)), w.bias_forces(), atol=1e-14)
    # The tip's point Jacobian maps the joint rates to its velocity; it moves in the x-z plane.
    Jp = w.jacobian("link2", [0.5, 0, 0])
    assert Jp.shape == (3, 2) and abs(Jp[1] @ qd) < 1e-14
    assert w.com_jacobian().shape == (3, 2) and len(w.center_of_mass()) == 3
    # set_joint_state set the bodies' velocities from q̇: their kinetic energy is ½ q̇ᵀ M q̇
    assert abs(0.5 * qd @ M @ qd - w.monitors()["kinetic"]) < 1e-12
    p, L = w.momentum()
    assert np.allclose(p, w.monitors()["momentum"], atol=1e-12) and np.allclose(L, w.monitors()["angular_momentum"], atol=1e-12)
    assert abs(L[1]) > 0.1
    with pytest.raises(noether.UsageError, match="qdd must have 2 numbers"):
        w.inverse_dynamics([1.0, 2.0, 3.0])
    with pytest.raises(noether.UsageError, match="no body named 'ghost'"):
        w.jacobian("ghost")
    free = noether.Spec()
    free.body("free", mass=1, inertia=[1, 1, 1])
    with pytest.raises(noether.UsageError, match="floats free"):
        free.compile().mass_matrix()


def rod_with_servo(integrator="vi-midpoint", **servo):
    """A 1 kg, 1 m rod on a hinge without gravity, with a servo (tests/integrators/test_servos.cpp)."""
    s = noether.Spec(gravity=[0, 0, 0], dt=0.005, integrator=integrator)
    s.body("rod", mass=1, inertia=[0.05 ** 2 * 2 / 12, (1 + 0.05 ** 2) / 12, (1 + 0.05 ** 2) / 12], position=[0.5, 0, 0])
    s.joint("hinge", "revolute", "world", "rod", anchor=[0, 0, 0], axis=[0, 1, 0])
    s.servo("hinge", **servo)
    return s


def test_a_position_servo_follows_the_analytic_response_and_takes_new_targets():
    I = 1 / 3 + 0.05 ** 2 / 12
    w = rod_with_servo(kp=10, kv=1, target=0.5).compile()
    w0, zeta = np.sqrt(10 / I), 1 / (2 * np.sqrt(10 * I))
    wd, a = w0 * np.sqrt(1 - zeta ** 2), zeta * w0
    worst = 0.0
    for _ in range(600):
        w.step()
        t = w.time
        exact = 0.5 * (1 - np.exp(-a * t) * (np.cos(wd * t) + a / wd * np.sin(wd * t)))
        worst = max(worst, abs(w.q[0] - exact))
    assert 1e-7 < worst < 1e-4
    # new target and gains from Python: the views and the setters reach the step
    w.set_target("hinge", -0.2)
    w.set_servo("hinge", kp=400, kv=40)
    assert w.target_position[0] == -0.2 and w.servo_kp[0] == 400 and w.servo_kv[0] == 40
    w.step(400)
    assert abs(w.q[0] + 0.2) < 1e-6
    w.target_position[0] = 0.1  # the writable view is the input itself
    w.step(400)
    assert abs(w.q[0] - 0.1) < 1e-6


def test_servo_errors_name_the_joint_and_the_value():
    with pytest.raises(noether.ModelError, match="joint 'hinge': position servo: kp must be positive and finite, got -1"):
        rod_with_servo(kp=-1).compile()
    with pytest.raises(noether.UsageError, match="type must be 'position' or 'velocity', got 'torque'"):
        rod_with_servo(kp=1, type="torque")
    w = rod_with_servo(kp=10, kv=1).compile()
    with pytest.raises(noether.UsageError, match="set_servo: joint 'hinge': kv must be non-negative and finite, got -2"):
        w.set_servo("hinge", kv=-2)
    with pytest.raises(noether.UsageError, match="set_target: joint 'hinge': position must be finite, got nan"):
        w.set_target("hinge", float("nan"))
    w.servo_kp[0] = -3  # written through the view: the step refuses it and moves nothing
    with pytest.raises(noether.UsageError, match="joint 'hinge': position servo kp must be non-negative"):
        w.step()
    assert w.time == 0.0
    plain = double_pendulum_spec().compile()
    with pytest.raises(noether.UsageError, match="set_target: joint 'j1' has no servo"):
        plain.set_target("j1", 0.1)


def test_ensemble_members_get_their_own_servo_targets():
    w = rod_with_servo(kp=400, kv=40, target=0.0).compile()
    e = w.ensemble(3, threads=2)
    tp = e.target_position
    assert tp.shape == (3, 1) and not tp.any()
    tp[:, 0] = [0.1, -0.2, 0.3]
    e.servo_kp[2, 0] = 900.0  # member 2 is stiffer
    e.step(400)
    for i, target in enumerate([0.1, -0.2, 0.3]):
        assert abs(e.q(i)[0] - target) < 1e-6
        alone = rod_with_servo(kp=900 if i == 2 else 400, kv=40, target=target).compile()
        alone.step(400)
        assert np.array_equal(alone.q, e.q(i))
    e.servo_kv[1, 0] = -1.0  # refused by member 1's step: it stops and says why; the others go on
    assert e.step(1) == 2 and e.failed(1) and not e.failed(0)
    assert "joint 'hinge': position servo kv must be non-negative" in e.failure(1)


def test_the_ur5_trajectory_gives_the_same_tracking_error_in_lua_python_and_c():
    """Issue 35: the UR5 resolved-rate example through position servos, from each host's own API."""
    urdf = os.path.join(MODELS, "example-robot-data", "robots", "ur_description", "urdf", "ur5_robot.urdf")
    if not os.path.exists(urdf):
        pytest.skip("shared models not found")
    c_host = os.environ.get("NOETHER_UR5_C", "")
    if not NOETHER or not c_host:
        pytest.skip("NOETHER_CLI or NOETHER_UR5_C not set")

    def tracking_error(cmd):
        out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                             env=dict(os.environ, NOETHER_MODELS_DIR=MODELS)).stdout
        line = [x for x in out.splitlines() if x.startswith("tracking error:")]
        assert line, out
        return float(line[0].split()[2])

    lua = tracking_error([NOETHER, "run", example("ur5_trajectory.lua")])
    py = tracking_error([sys.executable, os.path.join(SOURCE, "examples", "python", "ur5_trajectory.py"), "--models", MODELS])
    c = tracking_error([c_host, urdf])
    assert 1e-4 < lua < 5e-3  # millimetres: measured, not assumed
    assert abs(py - lua) < 1e-9 and abs(c - lua) < 1e-9


def test_a_coupling_from_python_and_the_rotor_chains_gear_ratios():
    """Spec.coupling: a rotor turning 5 times its link holds the ratio, World.coupling_force reports the
    gear's torque; riqn refuses it by name; import_urdf(couplings=False) leaves the file's couplings out."""
    s = double_pendulum_spec()
    s.body("rotor", mass=0.1, inertia=[0.01, 0.01, 0.01], position=[0, 0, 0])
    s.joint("m", "revolute", "world", "rotor", anchor=[0, 0, 0], axis=[0, 1, 0])
    s.coupling("m", "j1", ratio=5.0, name="gear")
    w = s.compile()
    worst = 0.0
    for _ in range(100):
        w.step()
        worst = max(worst, abs(w.q[2] - 5.0 * w.q[0]))
    assert worst < 1e-12
    assert abs(w.coupling_force("gear")) > 1e-3
    with pytest.raises(noether.UsageError, match="no coupling named 'x' \\(couplings: gear\\)"):
        w.coupling_force("x")
    s2 = double_pendulum_spec(integrator="riqn")
    s2.body("rotor", mass=0.1, inertia=[0.01, 0.01, 0.01], position=[0, 0, 0])
    s2.joint("m", "revolute", "world", "rotor", anchor=[0, 0, 0], axis=[0, 1, 0])
    s2.coupling("m", "j1", ratio=5.0, name="gear")
    with pytest.raises(noether.ModelError, match="coupling 'gear': integrator 'riqn' does not take couplings"):
        s2.compile()
    chain = os.path.join(MODELS, "generalized_rbda/robot-models/revolute_rotor_chain.urdf")
    if not os.path.exists(chain):
        pytest.skip("shared models not found")
    w = noether.import_urdf(chain, fixed_base=True, limits=False, gravity=[0, -9.81, 0])
    assert w.run(duration=1.0)["max_violation"] < 1e-10
    for k in (1, 2, 3):
        assert abs(w.q[w.joint_dofs("joint%dr" % k)[0]] - 6 * w.q[w.joint_dofs("joint%d" % k)[0]]) < 1e-12
    free = noether.import_urdf(chain, fixed_base=True, limits=False, couplings=False, integrator="riqn")
    assert free.ndofs == 6


def test_a_coupling_range_from_python_keeps_two_pendulums_within_it():
    """Spec.coupling(lower=, upper=): a range on j2 - j1 (an inequality, vi-maximal), no DOF removed."""
    s = noether.Spec(dt=0.005, integrator="vi-maximal")
    box = [1.0 * (0.1 ** 2 + 0.1 ** 2) / 12, 1.0 * (1 + 0.1 ** 2) / 12, 1.0 * (1 + 0.1 ** 2) / 12]
    s.body("a", mass=1, inertia=box, position=[0.5, 0, 0])
    s.body("b", mass=3, inertia=[3 * v for v in box], position=[0, 0, -0.5], orientation=[0.7071067811865476, 0, 0.7071067811865476, 0])
    s.joint("j1", "revolute", "world", "a", anchor=[0, 0, 0], axis=[0, 1, 0])
    s.joint("j2", "revolute", "world", "b", anchor=[0, 0, 0], axis=[0, 1, 0])
    s.coupling("j2", "j1", lower=-0.3, upper=0.3, name="band")
    w = s.compile()
    assert w.ndofs == 2
    lo, hi = 1.0, -1.0
    for _ in range(400):
        w.step()
        d = w.q[1] - w.q[0]
        lo, hi = min(lo, d), max(hi, d)
    assert lo >= -0.3 - 1e-9 and hi <= 0.3 + 1e-9
    assert lo < -0.3 + 1e-6  # the falling rod drags on the hanging one: the lower side is reached
    s2 = noether.Spec(dt=0.005, integrator="vi-midpoint")
    s2.body("a", mass=1, inertia=box, position=[0.5, 0, 0])
    s2.body("b", mass=1, inertia=box, position=[0.5, 0, 0])
    s2.joint("j1", "revolute", "world", "a", anchor=[0, 0, 0], axis=[0, 1, 0])
    s2.joint("j2", "revolute", "world", "b", anchor=[0, 0, 0], axis=[0, 1, 0])
    s2.coupling("j2", "j1", lower=-0.3, upper=0.3, name="band")
    with pytest.raises(noether.ModelError, match="coupling 'band': a range is an inequality, and integrator 'vi-midpoint'"):
        s2.compile()


def test_a_coupling_over_three_joints_from_python():
    """Spec.coupling(more=[(joint, ratio)]): r3 = 0.5 r1 - 0.25 r2 over three rotors about z; the
    relation holds; a bad entry of `more` is refused by rule."""
    s = noether.Spec(dt=0.001, integrator="vi-maximal")
    for k, name in enumerate(("r1", "r2", "r3")):
        iz = 0.02 + 0.01 * k
        s.body(name, mass=0.5, inertia=[0.6 * iz, 0.6 * iz, iz], position=[0.3 * k, 0, 0])
        s.joint(name, "revolute", "world", name, anchor=[0.3 * k, 0, 0], axis=[0, 0, 1])
    s.coupling("r3", "r1", ratio=0.5, more=[("r2", -0.25)], name="diff")
    w = s.compile()
    assert w.ndofs == 3  # joint coordinates (the coupling removes a degree of freedom, not a coordinate)
    worst = 0.0
    for _ in range(200):
        w.actuation[0] = 0.2
        w.step()
        worst = max(worst, abs(w.q[2] - 0.5 * w.q[0] + 0.25 * w.q[1]))
    assert worst < 1e-9
    assert w.q[0] > 1e-3 and w.q[1] != 0.0  # r1 driven, r2 dragged through the differential
    with pytest.raises(ValueError, match="each of 'more' is \\(joint, ratio\\) or \\(joint, ratio, dof\\)"):
        s.coupling("r3", "r1", more=[("r2",)])
