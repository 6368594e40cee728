#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""mreg-trace's overhead and agreement table (bench/trace-overhead.sh).

Reads the guest's results: plain-<folio>/ and traced-<folio>/ (mreg-bench
results.json), plain.pids and traced.pids ("<folio> <pid>"), trace.json
(mreg-trace's report over the traced runs).
"""
import argparse
import json
import os
import sys


def pids(path):
    out = {}
    with open(path) as f:
        for line in f:
            folio, pid = line.split()
            out[folio] = int(pid)
    return out


def merge(a, b):
    if not a or not b:
        return a or b
    out = dict(a)
    for k in ("calls", "ns", "bytes", "pages"):
        out[k] = a[k] + b[k]
    fp = dict(a["folio_pages"])
    for k, v in b["folio_pages"].items():
        fp[k] = fp.get(k, 0) + v
    out["folio_pages"] = fp
    return out


def cell(path):
    with open(os.path.join(path, "results.json")) as f:
        return json.load(f)["cells"][0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clock", default="")
    ap.add_argument("dir")
    a = ap.parse_args()
    traced = pids(os.path.join(a.dir, "traced.pids"))
    with open(os.path.join(a.dir, "trace.json")) as f:
        trace = json.load(f)
    rec = {(r["pid"], r["path"]): r for r in trace}
    print(f"Clock: {a.clock}. Command: `bench/trace-overhead.sh build`.\n")
    print("| cell | untraced ms (median) | traced ms (median) | overhead | "
          "mreg-trace calls | mreg-trace ms/call (mean) | vs bench | "
          "mreg-trace folio pages/call | bench's folios |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    for folio, pid in traced.items():
        p = cell(os.path.join(a.dir, "plain-" + folio))
        t = cell(os.path.join(a.dir, "traced-" + folio))
        # mreg's io_uring backend registers through a sparse table and
        # IORING_REGISTER_BUFFERS_UPDATE: both paths count.
        r = merge(rec.get((pid, "uring_register")), rec.get((pid, "uring_update")))
        pm, tm = p["value"]["median"], t["value"]["median"]
        if r and r["calls"]:
            mean = r["ns"] / r["calls"] / 1e6
            per = ", ".join(f"{k}:{v // r['calls']}"
                            for k, v in r["folio_pages"].items())
            calls = r["calls"]
        else:
            mean, per, calls = 0, "-", 0
        hist = ", ".join(f"{int(k) >> 10}K:{v}"
                         for k, v in t["hist"]["folios"].items())
        print(f"| io_uring {folio} 256 MB | {pm:.2f} | {tm:.2f} | "
              f"{(tm / pm - 1) * 100:+.1f} % | {calls} | {mean:.2f} | "
              f"{(mean / tm - 1) * 100 if tm else 0:+.1f} % | {per} | "
              f"{hist} ({t['hist']['method']}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
