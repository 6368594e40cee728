#!/usr/bin/python3
"""Stock against patched: ratio table and plot from two mreg-bench runs.

Usage: compare.py STOCK_DIR PATCHED_DIR OUT_DIR
Each *_DIR holds registration/results.json and/or fio/results.json, as
bench/guest.sh leaves them. Ratios are speedups (stock time / patched time;
for GB/s, patched / stock), so > 1 means the patched kernel is faster.
Both runs are TCG guests on the same host: only the ratios mean anything.
"""
import json
import math
import os
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# How the guest timed the cells (bench/tcg-clock.sh sets it).
CLOCK = os.environ.get("MREG_TCG_CLOCK", "qemu TCG")


def cells(root, kind):
    path = pathlib.Path(root) / kind / "results.json"
    if not path.exists():
        return {}, None
    data = json.loads(path.read_text())
    out = {}
    for c in data["cells"]:
        if c["samples"]:
            out[(c["path"], c["size"], c["folio"])] = c
    return out, data["kernel"]


def speedup(stock, patched):
    a, b = stock["value"]["median"], patched["value"]["median"]
    if stock["unit"] == "GB/s":
        return b / a if a else float("nan")
    return a / b if b else float("nan")


def hist_note(stock, patched):
    """Both cells must have been measured on the same verified folios.

    Estimated histograms (fio) count every fault system-wide during the
    run, so only exact ones can be held to equality."""
    exact = stock["hist"]["method"] == patched["hist"]["method"] == "exact"
    ok = not exact or stock["hist"]["folios"] == patched["hist"]["folios"]
    return "" if ok else " (folios differ!)"


def rows(stock, patched):
    out = []
    for key, s in stock.items():
        p = patched.get(key)
        if p:
            out.append((key, speedup(s, p), s, p))
    return out


def table(rows, title):
    folios = []
    for (path, size, folio), *_ in rows:
        if folio not in folios:
            folios.append(folio)
    lines = [f"### {title}", "",
             "| path | size | " + " | ".join(folios) + " |",
             "|---|---|" + "---|" * len(folios)]
    grouped = {}
    for (path, size, folio), r, s, p in rows:
        grouped.setdefault((path, size), {})[folio] = f"{r:.2f}x{hist_note(s, p)}"
    for (path, size), vals in grouped.items():
        lines.append(f"| {path} | {size >> 20} MB | " +
                     " | ".join(vals.get(f, "-") for f in folios) + " |")
    return "\n".join(lines) + "\n"


def grid(rows):
    """(row labels, folio labels, matrix of speedups or None)."""
    folios, labels = [], []
    for (path, size, folio), *_ in rows:
        if folio not in folios:
            folios.append(folio)
        if f"{path} {size >> 20}M" not in labels:
            labels.append(f"{path} {size >> 20}M")
    m = [[None] * len(folios) for _ in labels]
    for (path, size, folio), r, _, _ in rows:
        m[labels.index(f"{path} {size >> 20}M")][folios.index(folio)] = r
    return labels, folios, m


def plot(panels, out):
    """One heat map per result set: rows are paths, columns folio sizes."""
    fig, axes = plt.subplots(len(panels), 1, squeeze=False,
                             figsize=(9, 1.2 + sum(len(grid(r)[0]) * 0.45 + 0.8
                                                   for _, r in panels)),
                             gridspec_kw={"height_ratios": [len(grid(r)[0]) + 1
                                                            for _, r in panels]})
    for ax, (kind, rows) in zip(axes[:, 0], panels):
        labels, folios, m = grid(rows)
        vals = [[math.log10(v) if v else float("nan") for v in row] for row in m]
        ax.imshow(vals, cmap="RdYlGn", vmin=-1, vmax=1, aspect="auto")
        ax.set_xticks(range(len(folios)), folios, fontsize=8)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        for i, row in enumerate(m):
            for j, v in enumerate(row):
                if v:
                    ax.text(j, i, f"{v:.2f}x", ha="center", va="center",
                            fontsize=7)
        ax.set_title(f"{kind}: speedup patched vs stock", fontsize=9)
    fig.suptitle(f"mreg: stock vs patched 6.12.117, {CLOCK}, same host "
                 "(ratios only)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    stock_dir, patched_dir, out_dir = sys.argv[1:4]
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text, panels = [], []
    kinds = sorted(p.parent.name for p in pathlib.Path(stock_dir).glob("*/results.json"))
    for kind in kinds:
        s, ks = cells(stock_dir, kind)
        p, kp = cells(patched_dir, kind)
        r = rows(s, p)
        if r:
            text.append(table(r, f"{kind}: speedup, patched ({kp}) vs "
                                 f"stock ({ks}), {CLOCK}"))
            panels.append((kind, r))
    if not panels:
        sys.exit("compare.py: no cells common to both runs")
    (out / "compare.md").write_text("\n".join(text))
    plot(panels, out / "compare.png")
    print("\n".join(text))
    print(f"wrote {out}/compare.md and compare.png")


if __name__ == "__main__":
    main()
