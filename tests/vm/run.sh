#!/bin/bash
# Run mreg's own tests in the qemu guest, next to the harness's built-in
# ones (rxe, vfio, null_blk, mthp), in one boot.
#   tests/vm/run.sh BUILD_DIR [mreg-vm run options...]
# The payload holds the test binaries (built on the host, their shared
# libraries copied by the harness) and the wrappers in tests/vm/tests/.
# On one of Debian's stock kernels (--stock NAME, mreg-vm kernel-stock;
# 6.12 by default) mreg.ko is built for that kernel here; with --kernel
# (a kernel of our own) the module is $MREG_KO (kernel/build.sh test builds
# it for the kernel under test), or else kmod/mreg.ko as it is.
set -euo pipefail

build=$(cd "${1:?usage: tests/vm/run.sh BUILD_DIR [options]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
payload=$build/vm-payload

STOCK='' custom=''
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	[ "${args[i]}" != --stock ] || STOCK=${args[i + 1]:-}
	[ "${args[i]}" != --kernel ] || custom=1
done
[ -n "$STOCK$custom" ] || STOCK=${MREG_STOCK:-6.12}

# mreg.ko for stock kernel $STOCK, from its Debian headers; none where it
# cannot be built here, and the kmod tests then say why.
stock_module() {
	local out=$1 lines kver kdir
	lines=$("$here/../guest/mreg-vm" kernel-stock "$STOCK")
	kver=$(sed -n 's/^KRELEASE=//p' <<<"$lines")
	kdir=$(sed -n 's/^HEADERS=//p' <<<"$lines")
	local why=''
	case $STOCK in
	5.10) why="mreg.ko needs Linux 6.1 (folios)" ;;
	7.3) why="mreg.ko not built here: Debian's 7.3 headers need gcc-14, this host has gcc-12" ;;
	esac
	if [ -n "$why" ]; then
		echo "tests/vm/run.sh: no mreg.ko for $STOCK: $why" >&2
		# For the support probe's table (tests/vm/tests/mreg-support).
		echo "$why" >"$payload/root/mreg/share/no-mreg-ko"
		return 0
	fi
	KVER=$kver KDIR=$kdir MREG_KO_OUT="$out" "$here/../../kmod/build.sh" build >&2
}

make_payload() {
	local t
	rm -rf "$payload"
	mkdir -p "$payload/bin" "$payload/tests"
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] && cp "$t" "$payload/bin/"
	done
	cp "$build/bench/mreg-bench" "$build"/libmreg.so.[0-9] "$payload/bin/"
	cp "$here"/tests/* "$payload/tests/"
	cp "$here/devices.sh" "$build/examples/pin_extents" "$payload/bin/"
	for t in register_io_uring vfio_dma rdma_write; do
		[ ! -x "$build/examples/$t" ] || cp "$build/examples/$t" "$payload/bin/"
	done
	# UCX and libfabric load their transports and providers with
	# dlopen(): ldd of the test binaries does not see them.
	local multiarch d
	multiarch=$(gcc -print-multiarch)
	for d in "/usr/lib/$multiarch/ucx" "/usr/lib/$multiarch/libfabric"; do
		[ -d "$d" ] || continue
		mkdir -p "$payload/root$d"
		cp -a "$d/." "$payload/root$d/"
	done
	mkdir -p "$payload/root/mreg/share"
	# make test-kernels writes the table anew: nothing to compare with.
	[ "${MREG_SUPPORT_TABLE:-}" = none ] ||
		cp "$here/../../docs/results/support.tsv" "$payload/root/mreg/share/" 2>/dev/null || true
	mkdir -p "$payload/ko"
	if [ -n "$STOCK" ]; then
		stock_module "$payload/ko/mreg.ko"
	elif [ -n "${MREG_KO:-}" ]; then
		cp "$MREG_KO" "$payload/ko/mreg.ko"
	elif [ -e "$here/../../kmod/mreg.ko" ]; then
		cp "$here/../../kmod/mreg.ko" "$payload/ko/"
	fi
}

make_payload
exec "$here/../guest/mreg-vm" run --payload "$payload" \
	--out "$build/vm-results" "$@"
