#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The real clients' table, base kernel against new (bench/clients.sh).

Reads OUT/<kernel>/results/{qemu-start,fio-register}/*.jsonl for the two
kernels and writes one markdown file: per cell the kernel-timed
registration on each kernel, the speedup, and the buffer's exact folio
histogram. A cell is "verified" only when both runs verified the layout
asked for and measured the same histogram.
"""
import argparse
import json
import os
import sys


def load(out, kernel, test):
    path = os.path.join(out, kernel.replace("/", "-"), "results", test,
                        test + ".jsonl")
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                r = json.loads(line)
                rows[(r["backend"], r["mib"], r["backing"])] = r
    return rows


def ms(us):
    return f"{us / 1000:.1f}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def folio_cell(a, b):
    if a is None or b is None:
        return (a or b or {}).get("folios", "?") + " (one kernel only)"
    same = a["folios"] == b["folios"]
    if a["verified"] and b["verified"] and same:
        return a["folios"] + ", verified"
    if not same:
        return f"{a['folios']} / {b['folios']}: NOT verified (differ)"
    return a["folios"] + ": NOT the layout asked for"


def qemu_table(base, new, names):
    keys = sorted(set(base) | set(new),
                  key=lambda k: (k[0], k[1], ORDER.get(k[2], 9)))
    lines = [
        "### QEMU starting a passthrough VM: its RAM DMA-mapped",
        "",
        "`map`: the sum of QEMU's VFIO_IOMMU_MAP_DMA (type1) or "
        "IOMMU_IOAS_MAP (iommufd) calls, each timed by the kernel; "
        "`ready`: from QEMU's exec to its monitor answering, paused, all "
        "RAM preallocated and mapped.",
        "",
        f"| backend | RAM | backing | folios | map {names[0]} ms | "
        f"map {names[1]} ms | map speedup | ready {names[0]} ms | "
        f"ready {names[1]} ms | ready speedup |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k in keys:
        a, b = base.get(k), new.get(k)
        lines.append(
            f"| {k[0]} | {k[1]} MiB | {k[2]} | {folio_cell(a, b)} | "
            f"{ms(a['map_us']) if a else '-'} | "
            f"{ms(b['map_us']) if b else '-'} | "
            f"{ratio(a and a['map_us'], b and b['map_us'])} | "
            f"{ms(a['ready_us']) if a else '-'} | "
            f"{ms(b['ready_us']) if b else '-'} | "
            f"{ratio(a and a['ready_us'], b and b['ready_us'])} |")
    return lines


def fio_table(base, new, names):
    keys = sorted(set(base) | set(new), key=lambda k: (k[1], ORDER.get(k[2], 9)))
    lines = [
        "### fio with registered buffers (io_uring, fixedbufs=1)",
        "",
        "`register`: fio's IORING_REGISTER_BUFFERS call at job start, "
        "timed by the kernel; throughput: fio's randwrite in 1 MiB blocks "
        "on null_blk. fio's buffers are its own anonymous memory, which "
        "starts where the kernel mapped it: base pages can stand in for "
        "the first and last folio (measured, shown in the histogram).",
        "",
        f"| buffer | folios | register {names[0]} ms | register "
        f"{names[1]} ms | speedup | {names[0]} MiB/s | {names[1]} MiB/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for k in keys:
        a, b = base.get(k), new.get(k)
        lines.append(
            f"| {k[1]} MiB, {k[2]} | {folio_cell(a, b)} | "
            f"{ms(a['register_us']) if a else '-'} | "
            f"{ms(b['register_us']) if b else '-'} | "
            f"{ratio(a and a['register_us'], b and b['register_us'])} | "
            f"{a['bw_mib_s'] if a else '-'} | {b['bw_mib_s'] if b else '-'} |")
    return lines


ORDER = {"4k": 0, "64k": 1, "2m-pte": 2, "2m-pmd": 3, "memfd": 4}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clock", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("dir")
    ap.add_argument("base")
    ap.add_argument("new")
    args = ap.parse_args()
    names = (args.base, args.new)
    lines = [f"# Real clients: {args.base} against {args.new}", "",
             f"Clock: {args.clock}. Command: `bench/clients.sh "
             f"BUILD --kernels {args.base},{args.new}`.", ""]
    q = [load(args.dir, k, "qemu-start") for k in names]
    f = [load(args.dir, k, "fio-register") for k in names]
    if q[0] or q[1]:
        lines += qemu_table(q[0], q[1], names) + [""]
    if f[0] or f[1]:
        lines += fio_table(f[0], f[1], names) + [""]
    if not any(q + f):
        print("clients_table.py: no results under " + args.dir, file=sys.stderr)
        return 1
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
