"""bench/peers/report.py --retime: every work-precision answer that met its target (or, with
--contender-factor F, those within F of their side's cheapest) is run again in separate processes
at exactly the setting the search found (its dt and tolerance written in full, read back by peers
--dt0/--tol0), reproduces its energy error to the printed digit, and the table's cell is the
fastest of the search's run and those."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

peers, report = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp()
raw = os.path.join(tmp, "searched.jsonl")
# A search of two noether integrators, one fixed-step (a bisected dt) and one adaptive (a bisected
# tolerance): the settings it ends on are not round numbers.
out = subprocess.run([peers, "--scene", "chain", "--mode", "wp", "--n", "2", "--duration", "1", "--engines", "noether",
                      "--integrators", "rk4-joint,dp45-joint", "--targets", "1e-3,1e-10", "--min-time", "0"],
                     check=True, stdout=subprocess.PIPE, text=True).stdout
lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
with open(raw, "w") as f:
    for d in lines:
        f.write(json.dumps(d) + "\n")
wp = [d for d in lines if d.get("bench") == "peers" and d.get("mode") == "wp" and d["met"]]
assert {d["integrator"] for d in wp} == {"rk4-joint", "dp45-joint"}, wp
# Not round numbers, so a setting rounded to 6 digits on its way back would be another setting.
assert any(len(repr(d["dt"])) > 8 for d in wp if d["integrator"] == "rk4-joint"), wp
assert any(len(repr(d["tolerance"])) > 8 for d in wp if d["integrator"] == "dp45-joint"), wp

doc = os.path.join(tmp, "benchmarks.md")
subprocess.run([sys.executable, report, "--peers", peers, "--out", doc, "--only", "retime", "--from", raw,
                "--scenes", "chain", "--retime", "2"], check=True)
with open(os.path.join(tmp, "benchmarks", "peers.jsonl")) as f:
    saved = [json.loads(x) for x in f if x.strip()]
again = [d for d in saved if d.get("mode") == "retime"]
# Every answer (by default every one that met its target is run again) twice, in turns: round 1 of all
# before round 2 of any.
settings = {(d["integrator"], d["dt"], d["tolerance"]) for d in wp}
assert len(again) == 2 * len(settings), (len(again), settings)
assert [d["round"] for d in again] == [1] * len(settings) + [2] * len(settings), again
for d in wp:
    mine = [x for x in again if (x["integrator"], x["dt"], x["tolerance"]) == (d["integrator"], d["dt"], d["tolerance"])]
    assert len(mine) == 2, (d, again)
    for x in mine:  # the same setting: the same energy error (and monitor), the same steps
        assert x["max_rel_energy_error"] == d["max_rel_energy_error"], (x, d)
        assert x["max_rel_monitor_error"] == d["max_rel_monitor_error"], (x, d)
        assert x["steps"] == mine[0]["steps"] > 0, mine
# The searched lines themselves are kept as they were.
assert [d for d in saved if d.get("mode") in ("wp", "wp_point")] == [d for d in lines if d.get("mode") in ("wp", "wp_point")]
with open(doc) as f:
    text = f.read()
assert text.count("fastest of 3 runs") == len(wp), text
assert "Every answer that met its target was run again in 2 rounds" in text, text

# --contender-factor 1: each side's cheapest alone (here noether's only side: one answer per target).
subprocess.run([sys.executable, report, "--peers", peers, "--out", doc, "--only", "retime", "--from", raw,
                "--scenes", "chain", "--retime", "1", "--contender-factor", "1"], check=True)
with open(os.path.join(tmp, "benchmarks", "peers.jsonl")) as f:
    few = [json.loads(x) for x in f if x.strip() and '"retime"' in x]
cheapest = set()
for t in {d["target"] for d in wp}:
    best = min((d for d in wp if d["target"] == t), key=lambda d: d["us_per_sim_second"])
    cheapest.add((best["integrator"], best["dt"], best["tolerance"]))
assert {(d["integrator"], d["dt"], d["tolerance"]) for d in few} == cheapest and len(few) == len(cheapest), (few, cheapest)
with open(doc) as f:
    assert "within 1× of it — were run again in 1 round," in f.read()
shutil.rmtree(tmp)
print("peers retime: ok", len(again))
