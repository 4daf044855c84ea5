#!/usr/bin/env python3
"""`noether plot` (docs/viewer.md): a run's CSV drawn as a PNG with matplotlib, and clear errors for
CSVs it cannot plot. Exit 77 (ctest: skipped) when matplotlib is missing.

    plot_test.py --noether build/bin/noether --source SRC --work DIR
"""
import argparse
import os
import struct
import subprocess
import sys


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--noether", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    csv = os.path.join(a.work, "dp.csv")
    png = os.path.join(a.work, "dp.png")
    script = os.path.join(a.source, "scripts", "examples", "double_pendulum.lua")
    rc, out, err = run([a.noether, "run", script, "--set", "duration=2", "--set", "csv=" + csv, "--quiet"])
    if rc != 0:
        fail("run failed: " + err)
    if os.path.exists(png):
        os.remove(png)
    rc, out, err = run([a.noether, "plot", csv, "-o", png, "--channels", "j1.coord,j2.coord"])
    if rc == 2 and "matplotlib is missing" in err:
        print("skipped: " + err.strip())
        return 77
    if rc != 0:
        fail("noether plot failed (%d): %s %s" % (rc, out, err))
    if "energy [J], constraint violation, channels" not in out:
        fail("unexpected panels: " + out)
    data = open(png, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("not a PNG")
    w, h = struct.unpack(">II", data[16:24])
    if w != 800 or abs(h - 780) > 2:  # 8 x (2.4 x 3 + 0.6) inches at 100 dpi
        fail("PNG is %dx%d" % (w, h))
    if len(data) < 20000:
        fail("PNG suspiciously small (%d bytes): nothing drawn?" % len(data))
    # Errors name the file, the line and the column.
    bad = os.path.join(a.work, "bad.csv")
    with open(bad, "w") as f:
        f.write("time,energy\n0,1\n0.1,oops\n")
    rc, out, err = run([a.noether, "plot", bad, "-o", os.path.join(a.work, "bad.png")])
    if rc != 2 or "bad.csv':3: column 'energy': 'oops' is not a number" not in err:
        fail("bad CSV: exit %d, %s" % (rc, err))
    rc, out, err = run([a.noether, "plot", csv, "--channels", "j3.coord"])
    if rc != 2 or "no column 'j3.coord'" not in err:
        fail("unknown channel: exit %d, %s" % (rc, err))
    print("ok: %s (%dx%d, %d bytes)" % (png, w, h, len(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
