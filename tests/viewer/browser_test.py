#!/usr/bin/env python3
"""The viewer in a real browser (docs/viewer.md): a scene is run with --record, `noether view`
writes the page, headless Chromium loads it; the test reads the status the page exposes (frames
loaded, bodies drawn, console errors) and checks that a screenshot is not blank.

    browser_test.py --noether build/bin/noether --work DIR CASE
CASE: an example scene name (scripts/examples/NAME.lua), urdf:PATH or mjcf:PATH (noether import --simulate;
an MJCF model's mesh geoms drawn as triangles).
Exit 77 (ctest: skipped) when Chromium is not installed. Only the standard library is used.
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

SKIP = 77


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300, **kw)
    return p.returncode, p.stdout, p.stderr


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser(exe, page, extra):
    # SwiftShader: WebGL in software (no GPU on the test machines).
    args = [exe, "--headless", "--no-sandbox", "--disable-gpu-sandbox", "--use-angle=swiftshader",
            "--enable-unsafe-swiftshader", "--window-size=640,480", "--virtual-time-budget=3000",
            "--user-data-dir=" + page + ".profile"] + extra + ["file://" + os.path.abspath(page)]
    return run(args)


def png_pixels(path):
    """(width, height, rows of RGBA tuples' flat bytes) of an 8-bit non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace != 0 or ctype not in (2, 6):
                fail("screenshot PNG format not handled (depth %d, colour type %d)" % (depth, ctype))
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--noether", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--models", default="")
    ap.add_argument("case")
    a = ap.parse_args()
    if os.environ.get("NOETHER_MODELS_DIR"):
        a.models = os.environ["NOETHER_MODELS_DIR"]
    os.makedirs(a.work, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_]", "_", a.case)
    nrec = os.path.join(a.work, safe + ".nrec")
    html = os.path.join(a.work, safe + ".html")

    # 1. Record.
    if a.case.startswith("mjcf:"):  # an MJCF model with mesh geoms: drawn as their triangles
        model = os.path.join(a.models, a.case[5:])
        if not a.models or not os.path.exists(model):
            print("skipped: shared model %s not found (NOETHER_MODELS_DIR)" % model)
            return SKIP
        rc, out, err = run([a.noether, "import", model, "--simulate", "0.5", "--record", nrec])
        expect_frames = None
    elif a.case.startswith("urdf:"):
        model = os.path.join(a.models, a.case[5:])
        if not a.models or not os.path.exists(model):
            print("skipped: shared model %s not found (NOETHER_MODELS_DIR)" % model)
            return SKIP
        rc, out, err = run([a.noether, "import", model, "--base", "fixed", "--simulate", "1", "--record", nrec])
        expect_frames = 67  # 200 steps of 0.005 s, every 3rd (60 frames per second): steps 0, 3, ..., 198
    else:
        script = os.path.join(a.source, "scripts", "examples", a.case + ".lua")
        rc, out, err = run([a.noether, "run", script, "--set", "duration=1", "--record", nrec, "--quiet"])
        expect_frames = None
    if rc != 0:
        fail("recording failed (%d): %s %s" % (rc, out[-2000:], err[-2000:]))
    hdr_len = struct.unpack("<I", open(nrec, "rb").read()[8:12])[0]
    header = json.loads(open(nrec, "rb").read()[12:12 + hdr_len])
    nbodies = len(header["bodies"])
    nframes = (os.path.getsize(nrec) - 12 - hdr_len) // (4 * header["frame_floats"])
    if expect_frames is not None and nframes != expect_frames:
        fail("%d frames recorded, expected %d" % (nframes, expect_frames))

    # 2. The page.
    rc, out, err = run([a.noether, "view", nrec, "-o", html])
    if rc != 0:
        fail("noether view failed (%d): %s" % (rc, err))

    # 3. The browser.
    exe = chromium()
    if not exe:
        print("skipped: Chromium is not installed (Debian: apt-get install chromium; make deps installs it)")
        return SKIP
    rc, dom, err = browser(exe, html, ["--dump-dom"])
    m = re.search(r'<pre id="status">([^<]*)</pre>', dom)
    if not m:
        fail("the page exposed no status (browser exit %d): %s" % (rc, err[-2000:]))
    status = json.loads(m.group(1).replace("&quot;", '"'))
    print("status:", status)
    if not status.get("ready"):
        fail("the page did not finish loading: %s" % status)
    if status["errors"]:
        fail("console errors: %s" % status["errors"])
    if status["frames"] != nframes:
        fail("the page loaded %d frames, the recording has %d" % (status["frames"], nframes))
    if status["bodies"] != nbodies or status["meshes"] < nbodies:
        fail("%d bodies / %d meshes drawn, the recording has %d bodies" % (status["bodies"], status["meshes"], nbodies))
    triangles = sum(len(sh.get("triangles", [])) // 3 for b in header["bodies"] for sh in b["shapes"])
    if status.get("triangles", 0) != triangles:
        fail("%d mesh triangles drawn, the recording has %d" % (status.get("triangles", 0), triangles))
    if a.case.startswith("mjcf:") and triangles == 0:
        fail("the MJCF model's mesh geoms were not recorded as triangles")
    if status["nonblank"] < 500:
        fail("the 3-D view is blank (%d pixels differ from the background)" % status["nonblank"])
    ncontacts = len(header.get("contacts", []))
    if status.get("contacts", 0) != ncontacts:
        fail("%d contact markers drawn, the recording has %d contact points" % (status.get("contacts", 0), ncontacts))
    if ncontacts and status.get("planes", 0) < 1:
        fail("the recording has ground contacts but no plane was drawn")

    png = os.path.join(a.work, safe + ".png")
    if os.path.exists(png):
        os.remove(png)
    rc, out, err = browser(exe, html, ["--screenshot=" + png])
    if not os.path.exists(png):
        fail("no screenshot (browser exit %d): %s" % (rc, err[-2000:]))
    w, h, bpp, rows = png_pixels(png)
    bg = (0x1D, 0x20, 0x27)
    # Pixels of the 3-D view (the top 70% of the page) unlike the background.
    differ = 0
    for y in range(0, int(0.7 * h), 2):
        line = rows[y]
        for x in range(0, w, 2):
            i = x * bpp
            if abs(line[i] - bg[0]) + abs(line[i + 1] - bg[1]) + abs(line[i + 2] - bg[2]) > 30:
                differ += 1
    share = differ / ((int(0.7 * h) // 2) * (w // 2))
    print("screenshot %dx%d: %.2f%% of the view differs from the background" % (w, h, 100 * share))
    if share < 0.002:
        fail("the screenshot's 3-D view is blank")
    print("ok: %s, %d frames, %d bodies" % (a.case, nframes, nbodies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
