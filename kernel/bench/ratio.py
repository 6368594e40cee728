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
    """The plugin's mark and split lines as (mark, vcpu, {counter: total})
    (a split is mark 0), and whether it was asked to split calls."""
    marks, split = [], False
    for line in open(path):
        split = split or line.startswith("split_at=")
        if not line.startswith(("mark=", "split ")):
            continue
        kv = dict(f.split("=", 1) for f in line.split()[1:])
        mark = int(line.split()[0][5:]) if line.startswith("mark=") else 0
        marks.append((mark, int(kv["vcpu"]),
                      {c: int(kv[c]) for c in COUNTERS}))
    return marks, split


def diff(a, b):
    return {c: b[c] - a[c] for c in COUNTERS}


def timed_part(begin, splits, end):
    """What the guest's clock timed of one call. gup_test calls ktime_get()
    (the split) four times: around its pin and around its unpin; the pin is
    the first pair. io_uring's registration has none: the whole call. Any
    other number (a split of another task, a migrated call) says nothing."""
    if not splits:
        return diff(begin, end)
    if len(splits) == 4:
        return diff(splits[0], splits[1])
    return None


def group_calls(marks):
    """Per cell (closed by a cell mark), each timed call as a pair: its
    counts from entry to return, and those of its timed part (None when it
    cannot be told; splits only from the vCPU that made the call count)."""
    cells, calls, begin, splits = [], [], None, []
    for mark, vcpu, totals in marks:
        if mark == MARK_BEGIN:
            begin, begin_vcpu, splits = totals, vcpu, []
        elif mark == 0 and begin is not None and vcpu == begin_vcpu:
            splits.append(totals)
        elif mark == MARK_END and begin is not None:
            calls.append((diff(begin, totals),
                          timed_part(begin, splits, totals)))
            begin = None
        elif mark == MARK_CELL:
            cells.append(calls)
            calls = []
    return cells


def attach_counts(d, rows):
    """Add <counter>_call_pp (per 4 kB page, the median whole call) to each
    row, in kbench.txt order (foliobench writes one cell mark per line it
    prints), and where the run split its calls <counter>_pp, the median of
    their timed parts."""
    path = os.path.join(d, "kcount.txt")
    if not os.path.exists(path):
        return
    marks, split = read_marks(path)
    cells = group_calls(marks)
    if len(cells) != len(rows):
        print(f"ratio.py: {path}: {len(cells)} marked cells for "
              f"{len(rows)} kbench lines; counts left out", file=sys.stderr)
        return
    for kv, calls in zip(rows, cells):
        if not calls:
            continue
        pages = int(kv["mb"]) << 8
        for c in COUNTERS:
            kv[c + "_call_pp"] = statistics.median(
                w[c] for w, _ in calls) / pages
        timed = [t for _, t in calls if t is not None]
        if split and len(timed) != len(calls):
            print(f"ratio.py: {path}: {kv['folio']} {kv['test']}: "
                  f"{len(calls) - len(timed)} of {len(calls)} calls not "
                  "split in four or none; timed counts left out",
                  file=sys.stderr)
        elif split:
            for c in COUNTERS:
                kv[c + "_pp"] = statistics.median(
                    t[c] for t in timed) / pages


def num(v):
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


TIMED_NOTE = ("kernel counts per 4 kB page (kcount plugin), of what the "
              "clock timed: the pin for GUP cells (from gup_test's "
              "ktime_get() to the next), the registration for io_uring; "
              "the last column is the atomics of the whole call, with "
              "gup_test's unpin")
CALL_NOTE = ("kernel counts per 4 kB page (kcount plugin), a call from "
             "entry to return: GUP cells include gup_test's unpin")


def count_columns(*cells):
    """The count columns all @cells have, as (title, key), and their note."""
    def everywhere(key):
        return all(any(key in kv for kv in c.values()) for c in cells)

    if everywhere("insns_pp"):
        return ([(c, c + "_pp") for c in COUNTERS] +
                [("atomics whole call", "atomics_call_pp")], TIMED_NOTE)
    if everywhere("insns_call_pp"):
        return [(c, c + "_call_pp") for c in COUNTERS], CALL_NOTE
    return [], None


def pair_count(s, p, key):
    if key not in s or key not in p:
        return "-"
    sv, pv = s[key], p[key]
    ratio = f" ({sv / pv:.2f}x)" if pv else ""
    return f"{num(sv)} / {num(pv)}{ratio}"


def count_header(columns, pair):
    what = "stock / patched (x fewer)" if pair else "per page"
    return ("".join(f" {title} {what} |" for title, _ in columns),
            "---:|" * len(columns))


def print_pair(ks, stock, kp, patched):
    columns, note = count_columns(stock, patched)
    clock = os.environ.get("MREG_TCG_CLOCK", "qemu TCG")
    print(f"stock {ks} vs patched {kp}; {clock}, median us, "
          "speedup = stock/patched")
    if note:
        print(note)
    print()
    head, rule = count_header(columns, True)
    print("| folio | test | write | MB | stock us | patched us | speedup "
          f"|{head} folios stock | folios patched |")
    print(f"|---|---|---|---|---:|---:|---:|{rule}---|---|")
    for key, s in stock.items():
        p = patched.get(key)
        if not p:
            continue
        st, pt = int(s["median_us"]), int(p["median_us"])
        ratio = f"{st / pt:.2f}x" if pt else "-"
        extra = "".join(f" {pair_count(s, p, k)} |" for _, k in columns)
        print(f"| {key[0]} | {key[1]} | {'w' if key[2] == '1' else 'r'} "
              f"| {key[3]} | {st} | {pt} | {ratio} |{extra} {s['folios']} "
              f"(pmd {s['pmd_kb']} kB) | {p['folios']} (pmd {p['pmd_kb']} kB) |")


def print_one(kernel, cells):
    columns, note = count_columns(cells)
    clock = os.environ.get("MREG_TCG_CLOCK", "qemu TCG")
    print(f"{kernel}; {clock}, median us")
    if note:
        print(note)
    print()
    head, rule = count_header(columns, False)
    print(f"| folio | test | write | MB | us |{head} folios |")
    print(f"|---|---|---|---|---:|{rule}---|")
    for key, s in cells.items():
        extra = "".join(f" {num(s[k]) if k in s else '-'} |"
                        for _, k in columns)
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
