"""Work-precision of vi-galerkin against noether's other integrators and the peers (log-log):
relative energy error against cost per simulated second, one line per integrator, for the double
pendulum over 3600 s (bench/peers --mode wp) and the closed four-bar over 10 s
(bench/fourbar_wp.py). docs/integrators.md says how the runs were made.

    python3 docs/plots/galerkin_wp.py bench/results/galerkin_wp_double_pendulum_ci-2core.jsonl \
        bench/results/fourbar_wp_ci-2core.jsonl docs/img/galerkin_wp.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def points(path, kind):
    series = {}
    for line in open(path):
        d = json.loads(line)
        if kind == "peers" and d.get("mode") == "wp_point":
            name = ("" if d["engine"] == "noether" else d["engine"] + " ") + d["integrator"]
        elif kind == "fourbar" and d.get("mode") == "point" and "us_per_sim_second" in d:
            name = d["integrator"]
        else:
            continue
        err = d["max_rel_energy_error"]
        if err is None or err <= 0:
            continue
        series.setdefault(name, []).append((d["us_per_sim_second"], err))
    return series


def main(dp, fb, dst):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, series, title in ((axes[0], points(dp, "peers"), "double pendulum, 3600 s"),
                              (axes[1], points(fb, "fourbar"), "closed four-bar, 10 s")):
        for name, pts in sorted(series.items()):
            pts.sort()
            style = "-o" if "galerkin" in name else "--."
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=name, markersize=4)
        for t in (1e-3, 1e-6):
            ax.axhline(t, color="grey", linewidth=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("wall time per simulated second [µs]")
        ax.set_ylabel("largest relative energy error")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:4])
