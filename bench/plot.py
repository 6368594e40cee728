#!/usr/bin/python3
"""Plot mreg-bench results: registration time and fio bandwidth per folio.

Usage: plot.py RESULTS_DIR [TITLE]  (reads */results.json, writes plot.png)
"""
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path) as f:
        return json.load(f)


def series(cells):
    """{(path, size): [(folio, median, verified)]} in run order."""
    out = {}
    for c in cells:
        if c["samples"]:
            out.setdefault((c["path"], c["size"]), []).append(
                (c["folio"], c["value"]["median"], c["verified"]))
    return out


def draw(ax, data, ylabel, log):
    folios = []
    for points in data["series"].values():
        folios += [f for f, _, _ in points if f not in folios]
    width = 0.8 / max(1, len(data["series"]))
    unverified = False
    for i, ((path, size), points) in enumerate(data["series"].items()):
        xs = [folios.index(f) + i * width for f, _, _ in points]
        bars = ax.bar(xs, [v for _, v, _ in points], width,
                      label=f"{path} {size >> 20} MB")
        # A cell whose buffer did not have (or keep) the folios asked
        # for is hatched: it times another layout than its label.
        for bar, (_, _, ok) in zip(bars, points):
            if not ok:
                bar.set_hatch("//")
                unverified = True
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(folios))], folios)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("folio size (hatched: estimated or not verified)"
                  if unverified else "folio size (verified)")
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize="small")
    ax.set_title(f"{data['title']} (kernel {data['kernel']})", fontsize="small")


def main():
    root = pathlib.Path(sys.argv[1])
    title = sys.argv[2] if len(sys.argv) > 2 else "mreg-bench"
    panels = []
    for name, ylabel, log in (("registration", "register ms (median)", True),
                              ("fio", "O_DIRECT read GB/s (median)", False)):
        path = root / name / "results.json"
        if path.exists():
            r = load(path)
            panels.append(({"series": series(r["cells"]), "kernel": r["kernel"],
                            "title": f"{title}: {name}"}, ylabel, log))
    if not panels:
        sys.exit(f"no results under {root}")
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4.5))
    for ax, (data, ylabel, log) in zip(fig.axes, panels):
        draw(ax, data, ylabel, log)
    fig.tight_layout()
    fig.savefig(root / "plot.png", dpi=110)


if __name__ == "__main__":
    main()
