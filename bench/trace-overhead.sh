#!/bin/bash
# mreg-trace's cost on what it watches, and whether its figures agree
# with the bench's own: mreg-bench's io_uring cells (256 MiB, 4 kB and
# 64 kB folios) untraced and traced, in the guest on Debian's 6.12 (whose
# kernel has the BTF mreg-trace needs; ours are built without), on the
# instruction-count clock.
#   bench/trace-overhead.sh BUILD_DIR [--out DIR]
set -euo pipefail
build=$(cd "${1:?usage: bench/trace-overhead.sh BUILD_DIR [--out DIR]}" && pwd)
shift
top=$(cd "$(dirname "$0")/.." && pwd)
out=$build/trace-overhead
[ "${1:-}" != --out ] || out=$2
. "$top/bench/tcg-clock.sh"
rm -rf "$out"
MREG_CLIENTS_BENCH=1 "$top/tests/clients/run.sh" "$build" --tests trace-overhead \
	--out "$out" --test-timeout 3600 --timeout 4000
/usr/bin/python3 "$top/bench/trace_overhead.py" --clock "$MREG_TCG_CLOCK" \
	"$out/results/trace-overhead" | tee "$out/trace-overhead.md"
