"""bench/peers/report.py --from: a document rendered from saved lines names the machine the lines
were measured on (recorded with them), not the one rendering them, and turns the double pendulum's
per-step targets (µs, set where DART's step took 3.45 / 1.75 µs) into ratios to DART's step in the
same run, each judged met or not from the run's own numbers."""
import json
import os
import subprocess
import sys
import tempfile

report = sys.argv[1]
tmp = tempfile.mkdtemp()
raw = os.path.join(tmp, "saved.jsonl")
here = "a machine named in the lines, 2 cores"


def line(engine, integrator, us):
    return {"bench": "peers", "mode": "step", "scene": "chain", "engine": engine, "integrator": integrator, "n": 2,
            "dt": 0.01, "duration": 10, "steps": 1000, "us_per_step": us, "max_rel_energy_error": 0.01,
            "date": "2026-01-02", "machine": here}


# DART at 3.0 µs: the targets' ratios 0.507 / 1.01 / 2.54 are 1.52 / 3.04 / 7.61 µs here.
lines = [{"bench": "peers_meta", "mode": "step", "scene": "chain", "noether": "0"},
         line("dart", "semi-implicit-euler", 3.0), line("noether", "riqn", 1.6),
         line("noether", "vi-maximal", 3.0), line("noether", "vi-galerkin:2", 7.0)]
with open(raw, "w") as f:
    for d in lines:
        f.write(json.dumps(d) + "\n")
doc = os.path.join(tmp, "benchmarks.md")
subprocess.run([sys.executable, report, "--from", raw, "--out", doc], check=True, stdout=subprocess.DEVNULL)
text = open(doc).read()
assert f"machine: {here} (shared" in text, text[:600]
rows = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]]
        for r in text.splitlines() if r.startswith("| noether ") and "× |" in r and "µs |" in r}
assert rows["noether riqn"] == ["≤ 1 µs", "≤ 0.51×", "1.6 µs", "0.53×", "no"], rows
assert rows["noether vi-maximal"] == ["≤ 2 µs", "≤ 1.01×", "3 µs", "1.00×", "yes"], rows
assert rows["noether vi-galerkin:2"] == ["≤ 5 µs", "≤ 2.54×", "7 µs", "2.33×", "yes"], rows
assert "This run (DART 3 µs)" in text, text
# Tables measured on two machines: each named with its own.
lines.append(dict(line("noether", "riqn", 1.0), scene="ball", machine="another machine"))
with open(raw, "w") as f:
    for d in lines:
        f.write(json.dumps(d) + "\n")
subprocess.run([sys.executable, report, "--from", raw, "--out", doc], check=True, stdout=subprocess.DEVNULL)
text = open(doc).read()
assert f"machine: {here} (chain cost per step); another machine (ball cost per step) (shared" in text, text[:800]
print("report render: ok")
