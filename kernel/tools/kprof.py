#!/usr/bin/env python3
"""Where a cell's kernel instructions and atomics go, per function.

    kernel/tools/kprof.py PROF System.map [--calls A-B] [--pages N] [--top K]

PROF is the file kcount's prof=PATH argument writes (bench/tcg-plugin/
README.md): for each timed call (mark 1 to mark 2), every kernel instruction
address it executed with its count, locked ones flagged. The kernel must
have booted with nokaslr, so that System.map's addresses are the run's.
Prints, per function, the instructions and atomics of the calls chosen
(median call by default: the one whose total is the median), divided by
--pages if given (the 4 kB pages of the cell's region).
"""
import argparse
import bisect
import collections
import statistics
import sys


def load_map(path):
    syms = []
    with open(path) as f:
        for line in f:
            addr, kind, name = line.split()[:3]
            if kind.lower() in 'tw':
                syms.append((int(addr, 16), name))
    syms.sort()
    return [a for a, _ in syms], [n for _, n in syms]


def load_calls(path):
    calls = collections.defaultdict(dict)
    with open(path) as f:
        for line in f:
            if not line.startswith('call='):
                continue
            fields = line.split()
            call = int(fields[0][5:])
            site = int(fields[1][5:], 16)
            n = int(fields[2][2:])
            calls[call][site] = (n, len(fields) > 3)
    return calls


def per_function(call, addrs, names):
    out = collections.defaultdict(lambda: [0, 0])
    for site, (n, atomic) in call.items():
        i = bisect.bisect_right(addrs, site) - 1
        name = names[i] if i >= 0 else '?'
        out[name][0] += n
        if atomic:
            out[name][1] += n
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('prof')
    ap.add_argument('map')
    ap.add_argument('--calls', help='A-B: calls to use (default: all)')
    ap.add_argument('--pages', type=float, default=1.0)
    ap.add_argument('--top', type=int, default=25)
    args = ap.parse_args()
    addrs, names = load_map(args.map)
    calls = load_calls(args.prof)
    ids = sorted(calls)
    if args.calls:
        a, b = (int(x) for x in args.calls.split('-'))
        ids = [c for c in ids if a <= c <= b]
    if not ids:
        sys.exit('kprof: no calls in range')
    totals = {c: sum(n for n, _ in calls[c].values()) for c in ids}
    med = statistics.median_low(totals.values())
    call = next(c for c in ids if totals[c] == med)
    funcs = per_function(calls[call], addrs, names)
    tot_i = sum(v[0] for v in funcs.values())
    tot_a = sum(v[1] for v in funcs.values())
    print(f'call {call} (median of {len(ids)}): '
          f'{tot_i / args.pages:.1f} insns, {tot_a / args.pages:.2f} atomics'
          f' per unit (pages={args.pages:g})')
    print(f'{"function":40} {"insns":>10} {"atomics":>9}')
    for name, (i, a) in sorted(funcs.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f'{name:40} {i / args.pages:10.2f} {a / args.pages:9.3f}')
    print('-- by atomics')
    for name, (i, a) in sorted(funcs.items(), key=lambda kv: -kv[1][1])[:10]:
        if a:
            print(f'{name:40} {i / args.pages:10.2f} {a / args.pages:9.3f}')


if __name__ == '__main__':
    main()
