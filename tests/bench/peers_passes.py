"""bench/peers: a short run's timed pass is repeated until the passes took --min-time (the fastest
reported), once with --min-time 0; and every engine/integrator runs at one size before the next."""
import json
import subprocess
import sys

peers = sys.argv[1]


def lines(*args):
    out = subprocess.run([peers, "--scene", "chain", "--mode", "step", "--duration", "1", "--engines", "noether",
                          *args], check=True, stdout=subprocess.PIPE, text=True).stdout
    return [json.loads(x) for x in out.splitlines() if x.startswith("{") and '"us_per_step"' in x]


once = lines("--n", "1", "--integrators", "vi-maximal", "--min-time", "0")
assert len(once) == 1 and once[0]["timed_passes"] == 1 and once[0]["min_time"] == 0, once
# 100 steps of one link take well under a millisecond: 0.05 s of passes is many of them.
many = lines("--n", "1", "--integrators", "vi-maximal", "--min-time", "0.05")
assert len(many) == 1 and many[0]["timed_passes"] >= 3 and many[0]["min_time"] == 0.05, many
assert many[0]["us_per_step"] > 0 and many[0]["steps"] == 100, many
# The same run measured the same way whatever the timing: the energy error is the measured pass's.
assert many[0]["max_rel_energy_error"] == once[0]["max_rel_energy_error"], (many, once)
order = lines("--n", "1,2", "--integrators", "vi-maximal,riqn", "--min-time", "0")
assert [(d["n"], d["integrator"]) for d in order] == [(1, "vi-maximal"), (1, "riqn"), (2, "vi-maximal"),
                                                      (2, "riqn")], order
print("peers passes: ok", many[0]["timed_passes"])
