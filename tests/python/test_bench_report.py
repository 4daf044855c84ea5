"""bench/peers/report.py: the per-step tables keep each run's fastest round."""
import importlib.util
import os

import pytest

SOURCE = os.environ.get("NOETHER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def load_report():
    path = os.path.join(SOURCE, "bench", "peers", "report.py")
    spec = importlib.util.spec_from_file_location("peers_report", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def row(engine, n, us, err=0.01):
    return {"bench": "peers", "mode": "step", "scene": "chain", "engine": engine, "integrator": "x", "n": n,
            "dt": 0.01, "us_per_step": us, "max_rel_energy_error": err}


def test_fastest_round_kept_per_run_and_other_lines_once():
    report = load_report()
    meta = {"bench": "peers_meta", "mode": "step", "scene": "chain"}
    refused = {"bench": "peers", "scene": "chain", "engine": "mujoco", "integrator": "rk4", "n": 512, "refused": "deep"}
    rounds = [[meta, row("dart", 16, 22.6), row("noether", 16, 20.4), refused],
              [meta, row("dart", 16, 14.3), row("noether", 16, 21.3), refused],
              [meta, row("dart", 16, 15.3), row("noether", 16, 20.5), row("dart", 64, 58.8), refused]]
    out = report.fastest([d for r in rounds for d in r], 3)
    timed = [d for d in out if "us_per_step" in d]
    assert [(d["engine"], d["n"], d["us_per_step"]) for d in timed] == [("dart", 16, 14.3), ("noether", 16, 20.4),
                                                                         ("dart", 64, 58.8)]
    assert all(d["rounds"] == 3 for d in timed)
    assert out.count(meta) == 1 and out.count(refused) == 1
    # A slow round never replaces a faster one, whichever comes first.
    again = report.fastest([row("dart", 16, 14.3), row("dart", 16, 22.6)], 2)
    assert again[0]["us_per_step"] == pytest.approx(14.3)
