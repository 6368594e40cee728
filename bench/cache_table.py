#!/usr/bin/env python3
"""The README's side-by-side table of registration caches, from one run.

usage: cache_table.py CACHE_RUNS_TXT

CACHE_RUNS_TXT is the cache-runs.txt of the guest test mreg-cache
(tests/vm/tests/mreg-cache): the stale-hit catalogue run against mreg's
cache (both monitors, io_uring and verbs on rxe), UCX 1.13's rcache and
libfabric 1.17's MR cache with each of its monitors, all over rxe.
Columns are the caches as seen over verbs (RDMA WRITE through the cached
registration); rows the cases, then the totals and the costs.
"""
import re
import sys

VERDICT = re.compile(r"^  (\S+)\s+(io_uring|verbs)?\s*(\S+)\s+(fresh|STALE|error|void)")
COST = re.compile(r"^cost (\S+) hit_ns=(\d+) miss_ns=(\d+) heap_per_entry=(-?\d+)")
FALSE = re.compile(r"^false (\S+) invalidations=(\d+)")


def column(name, transport):
    """mreg's rows carry a transport; the anchors are verbs only."""
    return f"{name}/{transport}" if transport else name


def load(path):
    cases, verdicts, costs, false_inv = [], {}, {}, {}
    for line in open(path, errors="replace"):
        m = VERDICT.match(line)
        if m:
            col = column(m.group(1), m.group(2))
            case = m.group(3)
            if case not in cases:
                cases.append(case)
            verdicts.setdefault(col, {})[case] = m.group(4)
            continue
        m = COST.match(line)
        if m:
            costs[m.group(1)] = tuple(int(v) for v in m.group(2, 3, 4))
            continue
        m = FALSE.match(line)
        if m:
            false_inv[m.group(1)] = int(m.group(2))
    return cases, verdicts, costs, false_inv


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    cases, verdicts, costs, false_inv = load(sys.argv[1])
    cols = [c for c in verdicts if not c.endswith("/io_uring")]
    print("| case | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for case in cases:
        cells = [verdicts[c].get(case, "") for c in cols]
        cells = ["**stale**" if v == "STALE" else v for v in cells]
        print(f"| {case} | " + " | ".join(cells) + " |")
    stale = [sum(v == "STALE" for v in verdicts[c].values()) for c in cols]
    print("| **stale hits** | " + " | ".join(f"**{n}**" for n in stale) + " |")
    print("| false invalidations | " +
          " | ".join(str(false_inv[c]) if c in false_inv else "no counter"
                     for c in cols) + " |")
    for i, label in enumerate(("hit cost (ns)", "miss cost (ns)",
                               "heap per entry (bytes)")):
        print(f"| {label} | " +
              " | ".join(str(costs[c][i]) if c in costs else "" for c in cols)
              + " |")


if __name__ == "__main__":
    main()
