#!/bin/bash
# What registration costs on the kernels users run: mreg-bench's default
# registration cells (4 kB, PTE-mapped 2 MB, PMD-mapped 2 MB; io_uring,
# verbs on rxe, VFIO type1 on edu, mreg.ko) and mreg.ko's gup_test cells,
# in the qemu guest on Debian's stock 6.12, 6.1 and 5.10, with the
# instruction-count clock (bench/tcg-clock.sh): compare ratios within one
# kernel's table, never absolute times, and never across kernels as
# native speed. Writes docs/results/registration-by-kernel.md.
#
#   bench/kernels.sh BUILD_DIR [NAME...]     (default: 6.12 6.1 5.10)
#   ONLY=io_uring,kbench REPS=3 MREG_VM_ICOUNT=off bench/kernels.sh ...
#
# mreg.ko is built against each kernel's Debian headers (6.1 and later);
# 5.10 has no module, so no kmod or gup_test cells.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:?usage: bench/kernels.sh BUILD_DIR [NAME...]}" && pwd)
shift
NAMES=${*:-6.12 6.1 5.10}
OUT=$TOP/docs/results/registration-by-kernel.md
. "$TOP/bench/tcg-clock.sh"

module_for() {
	local name=$1 lines ko
	[ "$name" != 5.10 ] || { echo none; return; }
	lines=$("$TOP/tests/guest/mreg-vm" kernel-stock "$name")
	ko=$BUILD/kernels/mreg-$(sed -n 's/^KRELEASE=//p' <<<"$lines").ko
	mkdir -p "$BUILD/kernels"
	KVER=$(sed -n 's/^KRELEASE=//p' <<<"$lines") \
		KDIR=$(sed -n 's/^HEADERS=//p' <<<"$lines") \
		MREG_KO_OUT=$ko "$TOP/kmod/build.sh" build >&2
	echo "$ko"
}

{
	echo "# Registration cost on Debian's kernels"
	echo
	echo "Written by \`bench/kernels.sh\` on $(date -u +%Y-%m-%d), commit"
	echo "$(git -C "$TOP" rev-parse --short HEAD). Clock: $MREG_TCG_CLOCK."
	if [ "$MREG_VM_ICOUNT" = off ]; then
		echo "Debian's 6.1 prints nothing under qemu's -icount shift=0 here"
		echo "(no console output in 12 minutes; 6.12 boots), so these runs use"
		echo "the host clock (MREG_VM_ICOUNT=off). Emulated time on the host's"
		echo "clock carries the host's noise:"
	else
		echo "Times are guest instructions:"
	fi
	echo "compare ratios within one table (4 kB against 2 MB folios, one"
	echo "path against another), never across kernels or as native speed."
	echo "Each cell's buffer is verified; its"
	echo "histogram is listed under its table. kbench-* are mreg.ko's"
	echo "gup_test-style cells: the kernel's own per-page pin cost, the one"
	echo "the GUP batching series (kernel/) removes."
} >"$OUT"
for name in $NAMES; do
	ko=$(module_for "$name")
	echo "bench/kernels.sh: $name" >&2
	log=$BUILD/kernels/bench-$name.log
	"$TOP/bench/guest.sh" "$BUILD" --stock "$name" --label "stock-$name" \
		--ko "$ko" --folios 4k,2m-pte,2m-pmd --sizes 256m \
		--reps "${REPS:-5}" --only "${ONLY:-io_uring,verbs,vfio,kmod,kbench}" \
		--timeout "${TIMEOUT:-3000}" >"$log" 2>&1 || true
	{
		echo
		echo "## Debian's $name"
		echo
		echo '```'
		sed -n '/^mreg-bench: kernel/,/^results:/p' "$log" | sed '$d'
		echo '```'
	} >>"$OUT"
done
echo "bench/kernels.sh: wrote $OUT" >&2
