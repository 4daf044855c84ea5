#!/usr/bin/env python3
"""Work-precision of the closed four-bar (scripts/examples/fourbar.lua, 10 s from rest) for
noether's integrators that take closed loops: for each, dt is halved from --dt0 until the
largest relative energy error (max |E - E0| / |E0|, from the run summary) meets every target, or
the next run would take longer than --max-seconds. One JSON object per line:
  {"bench":"fourbar_wp","mode":"point","integrator":..,"dt":..,"us_per_sim_second":..,"max_rel_energy_error":..}
  {"bench":"fourbar_wp","mode":"wp","integrator":..,"target":..,"met":..,"dt":..,"us_per_sim_second":..}
usage: bench/fourbar_wp.py [--noether build/bin/noether] [--integrators vi-galerkin:2,vi-maximal]
                           [--targets 1e-3,1e-6] [--dt0 0.04] [--max-seconds 20] [--repeats 3]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCENE = os.path.join(HERE, "..", "scripts", "examples", "fourbar.lua")


def run(noether, integrator, dt, repeats):
    name, _, points = integrator.partition(":")
    best = None
    for _ in range(repeats):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            cmd = [noether, "run", SCENE, "--set", "integrator=" + name, "--set", "dt=%r" % dt, "--set", "duration=10",
                   "--summary-json", f.name]
            if points:
                cmd += ["--option", "points=" + points]
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                return None, p.stderr.strip()
            s = json.load(open(f.name))
        us = 1e6 * s["wall_s"] / s["sim_time"]
        err = abs(s["energy_max_abs_dev"]) / abs(s["energy_initial"])
        if best is None or us < best[0]:
            best = (us, err, s["wall_s"])
    return best, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--noether", default=os.path.join(HERE, "..", "build", "bin", "noether"))
    ap.add_argument("--integrators", default="vi-galerkin:1,vi-galerkin:2,vi-galerkin:3,vi-maximal,vi-midpoint,dp45-projection")
    ap.add_argument("--targets", default="1e-3,1e-6")
    ap.add_argument("--dt0", type=float, default=0.04)
    ap.add_argument("--max-seconds", type=float, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    targets = [float(t) for t in a.targets.split(",")]
    for integ in a.integrators.split(","):
        dt, points, wall = a.dt0, [], 0.0
        while True:
            r, why = run(a.noether, integ, dt, a.repeats)
            if r is None:
                print(json.dumps({"bench": "fourbar_wp", "mode": "point", "integrator": integ, "dt": dt, "failed": why[-200:]}))
            else:
                us, err, wall = r
                points.append((dt, us, err))
                print(json.dumps({"bench": "fourbar_wp", "mode": "point", "integrator": integ, "dt": dt,
                                  "us_per_sim_second": round(us, 2), "max_rel_energy_error": err}))
                if err <= min(targets):
                    break
            sys.stdout.flush()
            if 2 * wall > a.max_seconds or dt < 1e-6:
                break
            dt /= 2
        for t in targets:
            ok = [p for p in points if p[2] <= t]
            best = min(ok, key=lambda p: p[1]) if ok else None
            print(json.dumps({"bench": "fourbar_wp", "mode": "wp", "integrator": integ, "target": t, "met": bool(best),
                              "dt": best[0] if best else None, "us_per_sim_second": round(best[1], 2) if best else None}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
