#!/bin/sh
# Regenerate scale.md from the results kept here (bench/scale.py).
# The reruns replace the cells they hold: dpdk after its timing fix
# (c31967d), kmod with mreg.ko's per-file cap raised (4bedbdf).
cd "$(dirname "$0")"
top=../../..
S=stock/one:stock/rerun:stock/rerun-kmod
P=patched/one:patched/rerun
/usr/bin/python3 $top/bench/scale.py --pair scale.md \
	"stock=$S" "patched=$P" >/dev/null
/usr/bin/python3 $top/bench/scale.py threads.md \
	"guest MTTCG host clock, stock=stock/threads" >/dev/null
/usr/bin/python3 $top/bench/scale.py host.md \
	"host 6.18 native=host/a:host/b" >/dev/null
