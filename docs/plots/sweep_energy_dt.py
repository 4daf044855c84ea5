"""Energy error against step size per integrator, from a `noether sweep` CSV (docs/ensembles.md).

    noether sweep scripts/examples/double_pendulum.lua --grid dt=0.001:0.02:8 \
        --grid integrator=vi-maximal,vi-midpoint,riqn,rk4 --set duration=600 --out sweep.csv
    python3 docs/plots/sweep_energy_dt.py sweep.csv docs/img/sweep_energy_dt.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    series = {}
    with open(src) as f:
        for row in csv.DictReader(f):
            dev = row["energy_max_abs_dev"]
            failed = row["exit_code"] != "0"
            series.setdefault(row["integrator"], []).append((float(row["dt"]), float(dev) if dev else None, failed))
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for name, pts in series.items():
        ok = [(dt, e) for dt, e, bad in pts if not bad and e]
        line, = ax.loglog([p[0] for p in ok], [p[1] for p in ok], "o-", label=name)
        bad = [(dt, e) for dt, e, b in pts if b and e]
        if bad:
            ax.loglog([p[0] for p in bad], [p[1] for p in bad], "x", color=line.get_color(), markersize=9)
    ax.set_xlabel("step size dt [s]")
    ax.set_ylabel("largest energy deviation over 600 s [J]")
    ax.set_title("double pendulum: one `noether sweep` (x: the run failed)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
