#!/usr/bin/python3
"""Stock against patched: ratio table and plot from two mreg-bench runs.

Usage: compare.py STOCK_DIR PATCHED_DIR OUT_DIR
Each *_DIR holds registration/results.json and/or fio/results.json, as
bench/guest.sh leaves them. Ratios are speedups (stock time / patched time;
for GB/s, patched / stock), so > 1 means the patched kernel is faster.
Both runs are TCG guests on the same host: only the ratios mean anything.
"""
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


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
    """Both cells must have been measured on the same verified folios."""
    ok = stock["hist"]["folios"] == patched["hist"]["folios"]
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


def plot(all_rows, out):
    fig, ax = plt.subplots(figsize=(10, 4.5))
    labels = [f"{p} {s >> 20}M {f}" for (p, s, f), *_ in all_rows]
    ax.bar(range(len(all_rows)), [r for _, r, _, _ in all_rows])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(all_rows)), labels, rotation=75, fontsize=6)
    ax.set_ylabel("speedup, patched vs stock (x)")
    ax.set_yscale("log")
    ax.set_title("mreg: stock vs patched 6.12 (qemu TCG, same host, ratios only)",
                 fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    stock_dir, patched_dir, out_dir = sys.argv[1:4]
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text, everything = [], []
    kinds = sorted(p.parent.name for p in pathlib.Path(stock_dir).glob("*/results.json"))
    for kind in kinds:
        s, ks = cells(stock_dir, kind)
        p, kp = cells(patched_dir, kind)
        r = rows(s, p)
        if r:
            text.append(table(r, f"{kind}: speedup {kp} vs {ks} (TCG)"))
            everything += r
    if not everything:
        sys.exit("compare.py: no cells common to both runs")
    (out / "compare.md").write_text("\n".join(text))
    plot(everything, out / "compare.png")
    print("\n".join(text))
    print(f"wrote {out}/compare.md and compare.png")


if __name__ == "__main__":
    main()
