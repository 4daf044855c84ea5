#!/usr/bin/env python3
"""A robot in Python: load the UR5 (shared models), hold it with a PD controller written in
Python for two seconds, then let it go; plot its energy and joint angles with matplotlib.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/robot_energy.py [--models DIR] [-o ur5.png]

Each control step writes the joint torques into w.actuation (a numpy view of the kernel's inputs)
and reads w.q / w.qdot (views of its joint state): no copies, no per-step allocation in the engine.
"""
import argparse
import os

import numpy as np

import noether

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--models", default=os.environ.get("NOETHER_MODELS_DIR", os.path.join(here, "..", "..", "..", "shared", "models")))
ap.add_argument("-o", "--out", default="ur5_energy.png")
ap.add_argument("--duration", type=float, default=4.0)
a = ap.parse_args()

urdf = os.path.join(a.models, "example-robot-data/robots/ur_description/urdf/ur5_robot.urdf")
# Joint limits off: this example shows the integrator's energy while the arm swings free (its stops at
# +-pi and +-2 pi are inelastic and would take energy out; docs/contact.md).
w = noether.import_urdf(urdf, fixed_base=True, dt=0.002, positions={"shoulder_lift_joint": -1.2, "elbow_joint": 1.0},
                        limits=False)
print("UR5:", len(w.body_names), "bodies,", w.ndofs, "joints:", ", ".join(w.joint_names))

q_hold = w.q.copy()
# Gains per joint: the wrist links are light, and an explicit PD on them must stay below the
# step's stability limit (kd dt / I < 2).
kp = np.array([300.0, 300.0, 150.0, 10.0, 10.0, 2.0])
kd = np.array([30.0, 30.0, 15.0, 0.3, 0.3, 0.03])
steps_per_sample = 10
t, energy, q_log = [], [], []
for k in range(int(round(a.duration / w.dt))):
    if w.time < 0.5 * a.duration:
        w.actuation[:] = kp * (q_hold - w.q) - kd * w.qdot  # hold the pose
    else:
        w.actuation[:] = 0.0  # let go: it swings without input, its energy stays put
    w.step()
    if k % steps_per_sample == 0:
        t.append(w.time)
        energy.append(w.monitors()["energy"])
        q_log.append(w.q.copy())

t, energy, q_log = np.array(t), np.array(energy), np.array(q_log)
free = t > 0.5 * a.duration + 0.01
print("energy while free: %.6f J ... %.6f J (drift %.2e J)" % (energy[free].min(), energy[free].max(), np.ptp(energy[free])))
print("summary:", {k: v for k, v in w.summary().items() if k in ("steps", "newton_mean", "max_violation", "us_per_step")})

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    raise SystemExit("matplotlib is missing (Debian: apt-get install python3-matplotlib)")
fig, (ax1, ax2) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
ax1.plot(t, energy)
ax1.axvline(0.5 * a.duration, color="gray", linestyle="--", linewidth=1)
ax1.set_ylabel("energy [J]")
ax1.set_title("UR5: PD hold, then released at t = %.1f s (no input: energy conserved)" % (0.5 * a.duration), fontsize=10)
for i, name in enumerate(w.joint_names):
    ax2.plot(t, q_log[:, i], label=name, linewidth=1)
ax2.set_ylabel("joint angle [rad]")
ax2.set_xlabel("time [s]")
ax2.legend(fontsize=7, ncol=3)
fig.tight_layout()
fig.savefig(a.out, dpi=100)
print("wrote", a.out)
