#!/bin/bash
# The benchmark in the qemu guest (stock Debian 6.12 unless --kernel is
# given): registration over io_uring, verbs (rxe), VFIO, iommufd, dpdk (and
# DPDK's own heap path beside it), mreg.ko, and fio O_DIRECT on null_blk.
# TCG timings are emulated, and by default count guest instructions
# (bench/tcg-clock.sh): compare ratios within one run, never absolute times.
#   bench/guest.sh BUILD_DIR [--sizes 256m] [--big 1g] [--reps N]
#                  [--ko PATH|none] [--label NAME] [--only LIST]
#                  [--folios LIST] [mreg-vm run options...]
# --big adds io_uring-only rows at those sizes (4k, 64k, 1m, 2m folios).
# Without --ko, mreg.ko is built for the stock kernel (kmod/build.sh); pass
# one built for another kernel with --ko, or --ko none to leave it out.
# --only keeps the named cell families (io_uring, verbs, vfio, iommufd,
# dpdk, dpdk-heap, kmod, kbench, memfd, big, uring-update, fio; default
# all), --folios
# the named folio sizes of the registration matrix.
set -euo pipefail

build=$(cd "${1:?usage: bench/guest.sh BUILD_DIR [options]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tcg-clock.sh"
sizes=256m big="" reps=9 ko=auto label=stock vm_args=()
only="" folios=4k,16k,64k,1m,2m-pte,2m-pmd

while [ $# -gt 0 ]; do
	case "$1" in
	--sizes) sizes=$2; shift 2 ;;
	--big) big=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--ko) ko=$2; shift 2 ;;
	--label) label=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--folios) folios=$2; shift 2 ;;
	*) vm_args+=("$1"); shift ;;
	esac
done
out=$build/guest-bench/$label
payload=$out/payload

make_payload() {
	rm -rf "$payload"
	mkdir -p "$payload/bin" "$payload/tests" "$payload/ko"
	cp "$build/bench/mreg-bench" "$build/bench/uring-update" \
		"$build"/libmreg.so.[0-9] \
		"$here/../tests/vm/devices.sh" "$payload/bin/"
	cp "$here/guest/bench" "$payload/tests/"
	# No payload binary links librte_eal (mreg's dpdk backend and the
	# dpdk-heap cells dlopen it): ship it, the harness adds its libraries.
	local eal
	# awk reads to the end: exiting at the match would leave ldconfig
	# writing into a closed pipe, and pipefail turns its SIGPIPE into
	# the script's exit status 141 (seen in a compare.sh run).
	eal=$(ldconfig -p | awk '/librte_eal\.so\.23 / && !eal { eal = $NF } END { if (eal) print eal }')
	[ -z "$eal" ] || cp "$eal" "$payload/bin/"
	[ "$ko" = none ] || cp "$ko" "$payload/ko/mreg.ko"
	cat >"$payload/bin/bench.conf" <<CONF
FOLIOS=$folios
ONLY=$only
FIO_FOLIOS=4k,16k,64k,1m
SIZES=$sizes
BIG_SIZES=$big
BIG_FOLIOS=4k,64k,1m,2m-pte,2m-pmd
REPS=$reps
FIO_RUNTIME=2
CONF
}

# A 1 GB buffer needs room beside the guest's own memory.
guest_mem() {
	case "$sizes$big" in *g*) echo 4G ;; *) echo 2G ;; esac
}

# The stock kernel's module, unless told otherwise; the bench runs
# without it (and says so) if it cannot be built.
stock_module() {
	[ "$ko" = auto ] || return 0
	ko=none
	if "$here/../kmod/build.sh" build >&2; then
		ko=$here/../kmod/mreg.ko
	else
		echo "bench/guest.sh: mreg.ko did not build: no kmod cells" >&2
	fi
}

stock_module
make_payload
"$here/../tests/guest/mreg-vm" run --payload "$payload" --no-builtin \
	--tests bench --mem "$(guest_mem)" --out "$out/vm" \
	--test-timeout 2400 --timeout 3000 "${vm_args[@]}"
sed -n 's/^\[bench\] //p' "$out/vm/console.log" | sed '/^mreg\[/d'
echo "results: $out/vm/results (registration/, fio/); $MREG_TCG_CLOCK: compare ratios only"
