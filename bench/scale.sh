#!/bin/bash
# Registration at scale: every path at 256 MB, 1 GB and 4 GB in the qemu
# guest, then each path on 1 and 2 threads, then io_uring natively on this
# host up to 16 GB; bench/scale.py makes the tables (ms/GB, growth per 4x
# of size, speedup on threads) in OUT/scale.md.
#   bench/scale.sh BUILD_DIR [--own stock|patched|pN] [--label NAME]
#                  [--kernel BZIMAGE --modules DIR] [--ko KO|none]
#                  [--sizes LIST] [--folios LIST] [--reps N]
#                  [--host-sizes LIST] [--no-host] [--no-threads]
#                  [--only "dpdk verbs"] [--out-name NAME] [--threads-only]
# --only keeps those paths; --out-name writes OUT/NAME instead of OUT/one,
# so a rerun of some paths sits beside the first run.
# --own boots one of our kernel/build.sh builds (label own-VARIANT) with
# mreg.ko built for it; without it, Debian's stock kernel.
#
# Clocks: the one-thread guest run counts instructions (icount,
# bench/tcg-clock.sh), which needs single-threaded TCG; the thread run
# gives each vCPU its own host thread (MTTCG), which icount cannot do, so
# it uses the host clock, and its 1- and 2-thread rows come from the same
# boot.  The host run is native.  Compare ratios within one run only.
set -euo pipefail

build=$(cd "${1:?usage: bench/scale.sh BUILD_DIR [options]}" && pwd)
shift
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/tcg-clock.sh"
. "$top/bench/own-kernel.sh"
label=stock sizes=256m,1g,4g folios=4k,64k,2m-pmd host_sizes=256m,1g,4g,16g
ko=auto host=1 threads=1 reps=3 own="" only="" one=one one_run=1 vm_args=()

while [ $# -gt 0 ]; do
	case "$1" in
	--label) label=$2; shift 2 ;;
	--own) own=$2; label=own-$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--out-name) one=$2; shift 2 ;;
	--ko) ko=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--folios) folios=$2; shift 2 ;;
	--host-sizes) host_sizes=$2; shift 2 ;;
	--no-host) host=; shift ;;
	--no-threads) threads=; shift ;;
	--threads-only) one_run=; host=; shift ;;
	*) vm_args+=("$1"); shift ;;
	esac
done
out=$build/scale/$label
mkdir -p "$out"

if [ -n "$own" ]; then
	ko=$(module_for "$own" "$out")
	# shellcheck disable=SC2207 # kernel_args is a list of words
	vm_args+=($(kernel_args "$own"))
elif [ "$ko" = auto ]; then
	ko=none
	"$top/kmod/build.sh" build >&2 && ko=$top/kmod/mreg.ko
fi

# $1: run name, $2: THREADS list, $3: reps, $4: clock label.
guest_run() {
	local name=$1 payload=$out/$1/payload eal
	rm -rf "$payload" && mkdir -p "$payload/bin" "$payload/tests" "$payload/ko"
	cp "$build/bench/mreg-bench" "$build"/libmreg.so.[0-9] \
		"$top/tests/vm/devices.sh" "$payload/bin/"
	cp "$top/bench/guest/scale" "$payload/tests/"
	# libmreg dlopens librte_eal: ship it, the harness adds its libraries.
	# awk reads to the end, or ldconfig's SIGPIPE fails the pipeline.
	eal=$(ldconfig -p | awk '/librte_eal\.so\.23 / && !eal { eal = $NF } END { if (eal) print eal }')
	[ -z "$eal" ] || cp "$eal" "$payload/bin/"
	[ "$ko" = none ] || cp "$ko" "$payload/ko/mreg.ko"
	printf 'SIZES=%s\nFOLIOS=%s\nTHREADS="%s"\nREPS=%s\nCLOCK="%s"\nONLY="%s"\n' \
		"$sizes" "$folios" "$2" "$3" "$4" "$only" >"$payload/bin/scale.conf"
	"$top/tests/guest/mreg-vm" run --payload "$payload" --no-builtin \
		--tests scale --mem 8G --out "$out/$name/vm" \
		--test-timeout 7000 --timeout 7200 "${vm_args[@]}"
}

[ -z "$one_run" ] || guest_run "$one" "1" "$reps" "$MREG_TCG_CLOCK"
if [ -n "$threads" ]; then
	MREG_VM_ICOUNT=off MREG_VM_ACCEL=tcg,thread=multi \
		guest_run threads "1 2" "$reps" "qemu MTTCG, host clock"
fi
if [ -n "$host" ]; then
	"$build/bench/mreg-bench" -q -p io_uring,io_uring/t2 -f "$folios" \
		-s "$host_sizes" -r 5 -o "$out/host" ||
		echo "scale.sh: host run failed" >&2
fi
/usr/bin/python3 "$top/bench/scale.py" "$out/scale.md" \
	${one_run:+"guest, one thread, $MREG_TCG_CLOCK=$out/$one/vm/results"} \
	${threads:+"guest, MTTCG host clock=$out/threads/vm/results"} \
	${host:+"host, native=$out/host"}
