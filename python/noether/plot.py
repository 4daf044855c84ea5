"""Plots of a noether run (docs/viewer.md): energy, constraint violation and chosen channels of a
CSV output against time, drawn with matplotlib.

As a script (what `noether plot` runs):
    python3 plot.py run.csv -o run.png [--channels a,b,...] [--title TEXT]
From Python:
    import noether.plot
    noether.plot.plot_csv("run.csv", "run.png", channels=["elbow.coord"])
"""
import argparse
import csv
import sys


class PlotError(Exception):
    """A CSV that cannot be plotted (the message names the file, the line and the column)."""


def read_csv(path):
    """The columns of a noether CSV output: {name: [values]} in file order."""
    try:
        f = open(path, newline="")
    except OSError as e:
        raise PlotError(f"cannot read '{path}': {e.strerror}")
    with f:
        rows = csv.reader(f)
        try:
            names = next(rows)
        except StopIteration:
            raise PlotError(f"'{path}' is empty (no header line)")
        except csv.Error as e:
            raise PlotError(f"'{path}': {e}")
        cols = {n: [] for n in names}
        if len(cols) != len(names):
            raise PlotError(f"'{path}': line 1 names a column twice")
        for line, row in enumerate(rows, start=2):
            if not row:
                continue
            if len(row) != len(names):
                raise PlotError(f"'{path}':{line}: {len(row)} values, the header has {len(names)} columns")
            for n, v in zip(names, row):
                try:
                    cols[n].append(float(v))
                except ValueError:
                    raise PlotError(f"'{path}':{line}: column '{n}': '{v}' is not a number")
    return cols


def plot_csv(path, out, channels=None, title=None):
    """Draw `path` into the PNG `out`: a panel for energy, one for violation (log scale), one for
    `channels` (default: every other column but time). Returns the list of panels drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = read_csv(path)
    if "time" not in cols:
        raise PlotError(f"'{path}' has no 'time' column (add \"time\" to the output's channels)")
    t = cols["time"]
    if not t:
        raise PlotError(f"'{path}' has a header but no rows")
    if channels:
        missing = [c for c in channels if c not in cols]
        if missing:
            raise PlotError(f"'{path}': no column {', '.join(repr(c) for c in missing)} "
                            f"(columns: {', '.join(cols)})")
    else:
        channels = [c for c in cols if c not in ("time", "energy", "violation")][:8]
    panels = []
    if "energy" in cols:
        panels.append(("energy [J]", ["energy"], False))
    if "violation" in cols:
        panels.append(("constraint violation", ["violation"], True))
    if channels:
        panels.append(("channels", channels, False))
    if not panels:
        raise PlotError(f"'{path}': nothing to plot besides time")
    fig, axes = plt.subplots(len(panels), 1, sharex=True, figsize=(8, 2.4 * len(panels) + 0.6), squeeze=False)
    for ax, (label, names, log) in zip(axes[:, 0], panels):
        for n in names:
            y = cols[n]
            if log:
                y = [max(abs(v), 1e-17) for v in y]
            ax.plot(t, y, label=n, linewidth=1)
        if log:
            ax.set_yscale("log")
        if label == "energy [J]":
            e0 = cols["energy"][0]
            dev = max(abs(v - e0) for v in cols["energy"])
            ax.set_title(f"largest deviation from the initial energy: {dev:.3g} J", fontsize=9)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        if len(names) > 1 or label == "channels":
            ax.legend(fontsize=8, loc="best")
    axes[-1, 0].set_xlabel("time [s]")
    fig.suptitle(title or path, fontsize=10)
    fig.tight_layout()
    try:
        fig.savefig(out, dpi=100)
    except OSError as e:
        raise PlotError(f"cannot write '{out}': {e.strerror}")
    finally:
        plt.close(fig)
    return [p[0] for p in panels]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="noether plot", description="Plot a noether CSV output against time.")
    ap.add_argument("csv")
    ap.add_argument("-o", "--out", help="PNG file (default: the CSV's name with .png)")
    ap.add_argument("--channels", help="comma-separated columns for the third panel")
    ap.add_argument("--title")
    a = ap.parse_args(argv)
    out = a.out or (a.csv[:-4] if a.csv.endswith(".csv") else a.csv) + ".png"
    channels = [c for c in a.channels.split(",") if c] if a.channels else None
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("noether plot: matplotlib is missing (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
        return 2
    try:
        panels = plot_csv(a.csv, out, channels, a.title)
    except PlotError as e:
        print(f"noether plot: {e}", file=sys.stderr)
        return 2
    print(f"noether plot: {a.csv} -> {out} ({', '.join(panels)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
