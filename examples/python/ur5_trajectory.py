#!/usr/bin/env python3
"""The UR5 held by position servos and moved along a circle by resolved-rate control, in Python.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/ur5_trajectory.py [--models DIR] [-o ur5_tracking.png]

Every step: the hand's point Jacobian J (3 x 6, a query at the current joint coordinates) turns the
desired hand velocity into joint rates, qdot = J^T (J J^T + lambda^2 I)^-1 (xdot_d + K (x_d - x)); their
integral and the rates become the servos' targets (w.set_target; docs/servos.md), and the gravity
forces g(q) (another query) go into the actuation. The servos are integrated inside the step, so
their gains need no tuning against dt. scripts/examples/ur5_trajectory.lua (Lua) and
examples/ur5_trajectory_c/ur5_trajectory.c (C) run the same controller and print the same
tracking error. With -o it plots the tracking error (matplotlib).
"""
import argparse
import math
import os

import numpy as np

import noether

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--models", default=os.environ.get("NOETHER_MODELS_DIR", os.path.join(here, "..", "..", "..", "shared", "models")))
ap.add_argument("-o", "--out", default="", help="plot the tracking error to this image")
a = ap.parse_args()

dt, duration, kp, kv, radius, period, gain, lambda2 = 0.004, 4.0, 400.0, 40.0, 0.1, 4.0, 5.0, 1e-4
urdf = os.path.join(a.models, "example-robot-data/robots/ur_description/urdf/ur5_robot.urdf")
w = noether.import_urdf(urdf, fixed_base=True, dt=dt, servos={"kp": kp, "kv": kv})
joints = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
assert w.joint_names == joints
q0 = np.array([0, -1.0, 2.0, -2.5, -1.57, 0])
w.set_joint_state(q0, np.zeros(6))
hand = w.body_index("wrist_3_link")
x0 = w.positions[hand].copy()
omega = 2 * math.pi / period
target = q0.copy()


def desired(t):
    """The desired hand position and velocity: a circle in the x-z plane through x0."""
    s, c = math.sin(omega * t), math.cos(omega * t)
    return x0 + radius * np.array([s, 0, 1 - c]), radius * omega * np.array([c, 0, s])


times, errors = [], []
with w:
    for _ in range(int(round(duration / dt))):
        x = w.positions[hand]
        xd, vd = desired(w.time)
        e = xd - x
        times.append(w.time)
        errors.append(float(np.linalg.norm(e)))
        J = w.jacobian("wrist_3_link", [0, 0, 0])  # 3 x 6, world frame
        rates = J.T @ np.linalg.solve(J @ J.T + lambda2 * np.eye(3), vd + gain * e)
        target += dt * rates
        w.target_position[:] = target  # the servos' inputs, numpy views of the kernel's arrays
        w.target_velocity[:] = rates
        w.actuation[:] = w.gravity_forces()  # the actuation carries the arm's weight
        w.step()

print(f"tracking error: {max(errors):.17g} m")
if a.out:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.semilogy(times[1:], np.array(errors[1:]) * 1000)
    ax.set_xlabel("time [s]")
    ax.set_ylabel("hand tracking error [mm]")
    ax.set_title("UR5, resolved-rate control through position servos (kp 400, kv 40)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    print("wrote", a.out)
