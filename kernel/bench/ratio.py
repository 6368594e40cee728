#!/usr/bin/env python3
"""Stock-vs-patched table from two kbench result directories.

usage: ratio.py STOCK_DIR PATCHED_DIR   (each holds .../kbench.txt)

Prints a Markdown table: per cell, the median times (TCG guest, us), the
speedup stock/patched, and each side's verified folio histogram.
"""
import glob
import os
import sys


def load(d):
    files = glob.glob(os.path.join(d, "**", "kbench.txt"), recursive=True)
    if not files:
        sys.exit(f"ratio.py: no kbench.txt under {d}")
    cells, kernel = {}, ""
    for line in open(files[0]):
        if line.startswith("kernel:"):
            kernel = line.split()[1]
        if not line.startswith("folio="):
            continue
        kv = dict(f.split("=", 1) for f in line.split())
        key = (kv["folio"], kv["test"], kv["write"], kv["mb"])
        cells[key] = kv
    return kernel, cells


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ks, stock = load(sys.argv[1])
    kp, patched = load(sys.argv[2])
    clock = os.environ.get("MREG_TCG_CLOCK", "qemu TCG")
    print(f"stock {ks} vs patched {kp}; {clock}, median us, "
          "speedup = stock/patched")
    print()
    print("| folio | test | write | MB | stock us | patched us | speedup "
          "| folios stock | folios patched |")
    print("|---|---|---|---|---:|---:|---:|---|---|")
    for key, s in stock.items():
        p = patched.get(key)
        if not p:
            continue
        st, pt = int(s["median_us"]), int(p["median_us"])
        ratio = f"{st / pt:.2f}x" if pt else "-"
        print(f"| {key[0]} | {key[1]} | {'w' if key[2] == '1' else 'r'} "
              f"| {key[3]} | {st} | {pt} | {ratio} | {s['folios']} "
              f"(pmd {s['pmd_kb']} kB) | {p['folios']} (pmd {p['pmd_kb']} kB) |")


if __name__ == "__main__":
    main()
