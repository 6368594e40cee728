#!/usr/bin/env python3
"""Stock-vs-patched table from two kbench result directories.

usage: ratio.py STOCK_DIR PATCHED_DIR   (each holds .../kbench.txt)
       ratio.py DIR                     (one kernel's table)

Prints a Markdown table: per cell, the median times (TCG guest, us), the
speedup stock/patched, and each side's verified folio histogram. Where a
directory also holds kcount.txt (the kcount TCG plugin's marks, see
bench/tcg-plugin/README.md), the table gains the guest kernel's
instructions, locked RMW instructions (atomics) and memory accesses per
4 kB page pinned: the median over the cell's calls, each call counted
from the mark before it to the mark after it.
"""
import glob
import os
import statistics
import sys

MARK_BEGIN, MARK_END, MARK_CELL = 1, 2, 3
COUNTERS = ("insns", "atomics", "mem")


def load(d):
    files = glob.glob(os.path.join(d, "**", "kbench.txt"), recursive=True)
    if not files:
        sys.exit(f"ratio.py: no kbench.txt under {d}")
    rows, kernel = [], ""
    for line in open(files[0]):
        if line.startswith("kernel:"):
            kernel = line.split()[1]
        if not line.startswith("folio="):
            continue
        rows.append(dict(f.split("=", 1) for f in line.split()))
    attach_counts(d, rows)
    cells = {(kv["folio"], kv["test"], kv["write"], kv["mb"]): kv
             for kv in rows}
    return kernel, cells


def read_marks(path):
    """The plugin's mark lines as (mark, {counter: total})."""
    marks = []
    for line in open(path):
        if not line.startswith("mark="):
            continue
        kv = dict(f.split("=", 1) for f in line.split())
        marks.append((int(kv["mark"]), {c: int(kv[c]) for c in COUNTERS}))
    return marks


def group_calls(marks):
    """Per cell (closed by a cell mark), the counts of each timed call."""
    cells, calls, begin = [], [], None
    for mark, totals in marks:
        if mark == MARK_BEGIN:
            begin = totals
        elif mark == MARK_END and begin is not None:
            calls.append({c: totals[c] - begin[c] for c in COUNTERS})
            begin = None
        elif mark == MARK_CELL:
            cells.append(calls)
            calls = []
    return cells


def attach_counts(d, rows):
    """Add <counter>_pp (per 4 kB page) to each row, in kbench.txt order:
    foliobench writes one cell mark per line it prints."""
    path = os.path.join(d, "kcount.txt")
    if not os.path.exists(path):
        return
    cells = group_calls(read_marks(path))
    if len(cells) != len(rows):
        print(f"ratio.py: {path}: {len(cells)} marked cells for "
              f"{len(rows)} kbench lines; counts left out", file=sys.stderr)
        return
    for kv, calls in zip(rows, cells):
        pages = int(kv["mb"]) << 8
        for c in COUNTERS:
            if calls:
                kv[c + "_pp"] = statistics.median(x[c] for x in calls) / pages


def num(v):
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def has_counts(*cells):
    return all(any("insns_pp" in kv for kv in c.values()) for c in cells)


def pair_count(s, p, c):
    key = c + "_pp"
    if key not in s or key not in p:
        return "-"
    sv, pv = s[key], p[key]
    ratio = f" ({sv / pv:.2f}x)" if pv else ""
    return f"{num(sv)} / {num(pv)}{ratio}"


def count_header(pair):
    what = "stock / patched (x fewer)" if pair else "per page"
    return ("".join(f" {c} {what} |" for c in COUNTERS),
            "---:|" * len(COUNTERS))


def print_pair(ks, stock, kp, patched):
    counts = has_counts(stock, patched)
    clock = os.environ.get("MREG_TCG_CLOCK", "qemu TCG")
    print(f"stock {ks} vs patched {kp}; {clock}, median us, "
          "speedup = stock/patched")
    if counts:
        print("kernel counts per 4 kB page (kcount plugin), a call from "
              "entry to return: GUP cells include gup_test's unpin")
    print()
    head, rule = count_header(True) if counts else ("", "")
    print("| folio | test | write | MB | stock us | patched us | speedup "
          f"|{head} folios stock | folios patched |")
    print(f"|---|---|---|---|---:|---:|---:|{rule}---|---|")
    for key, s in stock.items():
        p = patched.get(key)
        if not p:
            continue
        st, pt = int(s["median_us"]), int(p["median_us"])
        ratio = f"{st / pt:.2f}x" if pt else "-"
        extra = "".join(f" {pair_count(s, p, c)} |" for c in COUNTERS) \
            if counts else ""
        print(f"| {key[0]} | {key[1]} | {'w' if key[2] == '1' else 'r'} "
              f"| {key[3]} | {st} | {pt} | {ratio} |{extra} {s['folios']} "
              f"(pmd {s['pmd_kb']} kB) | {p['folios']} (pmd {p['pmd_kb']} kB) |")


def print_one(kernel, cells):
    counts = has_counts(cells)
    clock = os.environ.get("MREG_TCG_CLOCK", "qemu TCG")
    print(f"{kernel}; {clock}, median us")
    if counts:
        print("kernel counts per 4 kB page (kcount plugin), a call from "
              "entry to return: GUP cells include gup_test's unpin")
    print()
    head, rule = count_header(False) if counts else ("", "")
    print(f"| folio | test | write | MB | us |{head} folios |")
    print(f"|---|---|---|---|---:|{rule}---|")
    for key, s in cells.items():
        extra = "".join(f" {num(s[c + '_pp']) if c + '_pp' in s else '-'} |"
                        for c in COUNTERS) if counts else ""
        print(f"| {key[0]} | {key[1]} | {'w' if key[2] == '1' else 'r'} "
              f"| {key[3]} | {s['median_us']} |{extra} {s['folios']} "
              f"(pmd {s['pmd_kb']} kB) |")


def main():
    if len(sys.argv) == 2:
        print_one(*load(sys.argv[1]))
        return
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print_pair(*load(sys.argv[1]), *load(sys.argv[2]))


if __name__ == "__main__":
    main()
