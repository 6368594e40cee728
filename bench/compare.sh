#!/bin/bash
# Stock against patched, end to end: the same two kernels (one tree, one
# config: kernel/build.sh), mreg.ko built for each, and the same matrix on
# both in the qemu guest: io_uring, verbs on rxe, VFIO MAP_DMA, iommufd,
# mreg.ko's GUP methods, fio O_DIRECT on null_blk, then the kernel's own
# gup_test matrix (kernel/build.sh bench). Writes OUT/compare.{md,png}
# and OUT/residual.md (each path's time beyond its bare pin).
#   bench/compare.sh BUILD_DIR [--sizes 256m] [--big 1g] [--reps N] [--no-build]
#                    [--only LIST] [--folios LIST] [--out DIR] [--kernels A,B]
# --no-build uses the kernels kernel/build.sh already left in build/kernel
# (and leaves out the gup_test matrix); --only and --folios pick cells as in
# bench/guest.sh; --out writes the tables elsewhere than BUILD_DIR/compare;
# --kernels compares two other kernels of build/kernel (default stock,patched,
# e.g. p10,p11 for one patch's own step; implies --no-build).
# TCG timings are emulated (and count guest instructions by default, see
# bench/tcg-clock.sh): the ratios, taken within one run, are the result.
set -euo pipefail

build=$(cd "${1:?usage: bench/compare.sh BUILD_DIR [options]}" && pwd)
shift
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/tcg-clock.sh"
out=$build/compare
sizes=256m big=1g reps=5 build_kernels=1 pick=() base=stock new=patched

while [ $# -gt 0 ]; do
	case "$1" in
	--sizes) sizes=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--big) big=$2; shift 2 ;;
	--no-build) build_kernels=""; shift ;;
	--only | --folios) pick+=("$1" "$2"); shift 2 ;;
	--out) out=$2; shift 2 ;;
	--kernels) base=${2%,*} new=${2#*,} build_kernels=""; shift 2 ;;
	*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

. "$top/bench/own-kernel.sh"

bench_on() {
	local v=$1
	mkdir -p "$out/$v"
	# shellcheck disable=SC2046 # kernel_args is a list of words
	"$top/bench/guest.sh" "$build" --label "own-$v" --sizes "$sizes" \
		--big "$big" --reps "$reps" --ko "$(module_for "$v" "$out/$v")" \
		"${pick[@]}" \
		$(kernel_args "$v")
}

mkdir -p "$out"
if [ -n "$build_kernels" ]; then
	"$top/kernel/build.sh" stock
	"$top/kernel/build.sh" patched
fi
bench_on "$base"
bench_on "$new"
/usr/bin/python3 "$top/bench/compare.py" \
	"$build/guest-bench/own-$base/vm/results/bench" \
	"$build/guest-bench/own-$new/vm/results/bench" "$out"
/usr/bin/python3 "$top/bench/residual.py" \
	"$build/guest-bench/own-$base/vm/results/bench" \
	"$build/guest-bench/own-$new/vm/results/bench" >"$out/residual.md"
[ -z "$build_kernels" ] || "$top/kernel/build.sh" bench | tee "$out/gup_test.md"
