#!/bin/bash
# Real clients, stock against patched: QEMU starting a passthrough VM
# (VFIO type1 and iommufd) and fio registering its buffers, in the qemu
# guest on two of our kernels, on the instruction-count clock.
#   bench/clients.sh BUILD_DIR [--kernels stock,patched | 7.3/stock,7.3/patched]
#                    [--ram "1024 2048"] [--backings "64k 2m-pte 2m-pmd memfd 4k"]
#                    [--backends "type1 iommufd"] [--fio-mib 1024]
#                    [--fio-folios "4k 64k 2m-pmd"] [--only qemu|fio] [--out DIR]
# The kernels are kernel/build.sh's (build/kernel/<name>); writes
# OUT/<kernel>/ (each guest's results) and OUT/clients.md (the table).
# Cells are the kernel's own timings of the registration calls (see
# tests/clients/bench/); ratios are taken within one run of each kernel.
set -euo pipefail

build=$(cd "${1:?usage: bench/clients.sh BUILD_DIR [options]}" && pwd)
shift
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/tcg-clock.sh"
. "$top/bench/own-kernel.sh"
kernels=stock,patched out=$build/clients only="qemu fio"
while [ $# -gt 0 ]; do
	case "$1" in
	--kernels) kernels=$2; shift 2 ;;
	--ram) export MREG_QEMU_RAM_MIB=$2; shift 2 ;;
	--backings) export MREG_QEMU_BACKINGS=$2; shift 2 ;;
	--backends) export MREG_QEMU_BACKENDS=$2; shift 2 ;;
	--fio-mib) export MREG_FIO_MIB=$2; shift 2 ;;
	--fio-folios) export MREG_FIO_FOLIOS=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "clients.sh: unknown option $1" >&2; exit 2 ;;
	esac
done

tests=""
for t in $only; do
	case $t in
	qemu) tests+=" qemu-start" ;;
	fio) tests+=" fio-register" ;;
	*) echo "clients.sh: --only takes qemu and fio" >&2; exit 2 ;;
	esac
done

mkdir -p "$out"
for k in ${kernels//,/ }; do
	[ -f "$(kernel_out "$k")/bzImage" ] || {
		echo "clients.sh: no $(kernel_out "$k")/bzImage: run kernel/build.sh first" >&2
		exit 1
	}
	rm -rf "${out:?}/${k//\//-}"
	# shellcheck disable=SC2046 # kernel_args is a list of words
	MREG_CLIENTS_BENCH=1 "$top/tests/clients/run.sh" "$build" --tests "${tests# }" \
		$(kernel_args "$k") --out "$out/${k//\//-}" --mem 5G \
		--test-timeout 5400 --timeout 7200 || echo "clients.sh: $k: a run failed" >&2
done
/usr/bin/python3 "$top/bench/clients_table.py" --clock "$MREG_TCG_CLOCK" \
	--out "$out/clients.md" "$out" ${kernels//,/ }
cat "$out/clients.md"
