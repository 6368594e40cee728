#!/usr/bin/python3
"""Registration at scale: ms/GB per path and size, and the growth per 4x.

Usage: scale.py [--pair] OUT.md LABEL=DIR[:DIR...] [LABEL=DIR ...]
Each DIR holds results.json files of mreg-bench runs (any depth), e.g.
the scale/ and threads/ directories bench/scale.sh leaves; a later DIR
of one LABEL replaces the cells it has (a rerun of some paths).  For every
path and folio size: the median registration time per GB at each size,
and how much the time grows from one size to the next 4x larger one.  A
path that is linear in the buffer grows 4.0x; more than 4.4x is marked.
Cells run on several threads (threads > 1) go to a second table, as the
speedup over the same cell on one thread.  Cells whose folio histogram
was not verified are marked, never reported as verified.  --pair (two
labels: stock, patched) adds one table of both at the largest size:
ms/GB, growth over the last 4x, and stock/patched.
"""
import json
import pathlib
import re
import sys

LINEAR_MAX = 4.4
GB = 1 << 30


def load(root):
    out = {}
    kernel = None
    for path in sorted(pathlib.Path(root).rglob("results.json")):
        data = json.loads(path.read_text())
        kernel = kernel or data.get("kernel")
        for c in data["cells"]:
            if not c["samples"] or c["unit"] != "ms":
                continue
            # "verbs/t2" is the verbs row on two threads.
            name = re.sub(r"/t\d+$", "", c["path"])
            key = (name, c["folio"], c.get("threads", 1), c["size"])
            out[key] = c
    return out, kernel


def size_name(size):
    return f"{size // GB} GB" if size >= GB else f"{size >> 20} MB"


def ms_per_gb(c):
    return c["value"]["median"] * GB / c["size"]


def mark(c):
    return "" if c["verified"] else " (unverified)"


def growth_table(label, cells, kernel):
    sizes = sorted({k[3] for k in cells if k[2] == 1})
    rows = sorted({k[:2] for k in cells if k[2] == 1})
    head = ["path", "folio"] + [f"ms/GB {size_name(s)}" for s in sizes]
    head += [f"x {size_name(a)}->{size_name(b)}"
             for a, b in zip(sizes, sizes[1:]) if b == 4 * a]
    lines = [f"### {label} ({kernel})", "",
             "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for path, folio in rows:
        row = [path, folio]
        for s in sizes:
            c = cells.get((path, folio, 1, s))
            row.append(f"{ms_per_gb(c):.1f}{mark(c)}" if c else "-")
        for a, b in zip(sizes, sizes[1:]):
            if b != 4 * a:
                continue
            ca, cb = cells.get((path, folio, 1, a)), cells.get((path, folio, 1, b))
            if not ca or not cb:
                row.append("-")
                continue
            g = cb["value"]["median"] / ca["value"]["median"]
            row.append(f"{g:.2f}x" + (" **superlinear**" if g > LINEAR_MAX else ""))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def threads_table(label, cells, kernel):
    multi = sorted({k for k in cells if k[2] > 1})
    if not multi:
        return []
    lines = [f"### {label}: registration on several threads ({kernel})", "",
             "| path | folio | size | threads | ms, 1 thread | ms | speedup |",
             "|---|---|---|---|---|---|---|"]
    for path, folio, threads, size in multi:
        one = cells.get((path, folio, 1, size))
        c = cells[(path, folio, threads, size)]
        base = one["value"]["median"] if one else float("nan")
        lines.append(
            f"| {path} | {folio} | {size_name(size)} | {threads} | "
            f"{base:.1f} | {c['value']['median']:.1f}{mark(c)} | "
            f"{base / c['value']['median']:.2f}x |")
    return lines


def growth(cells, key, size):
    a = cells.get(key + (size // 4,))
    b = cells.get(key + (size,))
    return b["value"]["median"] / a["value"]["median"] if a and b else None


def pair_table(runs):
    (la, ca), (lb, cb) = runs
    size = max(k[3] for k in ca if k[2] == 1)
    rows = sorted({k[:2] for k in ca if k[2] == 1 and k[3] == size})
    n = size_name(size)
    lines = [f"### {la} and {lb} at {n}", "",
             f"| path | folio | {la} ms/GB | x last 4x | {lb} ms/GB | "
             f"x last 4x | {la}/{lb} |", "|---|---|---|---|---|---|---|"]
    for path, folio in rows:
        a = ca.get((path, folio, 1, size))
        b = cb.get((path, folio, 1, size))
        if not a or not b:
            continue
        ga = growth(ca, (path, folio, 1), size)
        gb = growth(cb, (path, folio, 1), size)
        lines.append(
            f"| {path} | {folio} | {ms_per_gb(a):.1f}{mark(a)} | "
            f"{ga:.2f}x | {ms_per_gb(b):.1f}{mark(b)} | {gb:.2f}x | "
            f"{a['value']['median'] / b['value']['median']:.2f}x |")
    return lines


def main():
    args = sys.argv[1:]
    pair = args[:1] == ["--pair"]
    args = args[1:] if pair else args
    if len(args) < 2:
        sys.exit(__doc__)
    out = ["# Registration at scale", ""]
    runs = []
    for arg in args[1:]:
        label, _, root = arg.rpartition("=")
        cells, kernel = {}, None
        for one in root.split(":"):
            more, k = load(one)
            cells.update(more)
            kernel = kernel or k
        runs.append((label, cells))
        out += growth_table(label, cells, kernel) + [""]
        out += threads_table(label, cells, kernel) + [""]
    if pair and len(runs) == 2:
        out = out[:2] + pair_table(runs) + [""] + out[2:]
    text = "\n".join(out)
    pathlib.Path(args[0]).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
