#!/bin/bash
# The default benchmark on this host: io_uring registration over every
# folio size at 256 MB and 1 GB, then fio O_DIRECT reads through a loop
# device, then a plot. Extra arguments go to the registration run.
#   bench/run.sh BUILD_DIR [mreg-bench args...]
set -euo pipefail

build=${1:?usage: bench/run.sh BUILD_DIR [args]}
shift
bench=$build/bench/mreg-bench
out=$build/results
loopdev=""

cleanup() {
	[[ -n "$loopdev" ]] && losetup -d "$loopdev" 2>/dev/null || true
}
trap cleanup EXIT

# A sparse file behind a direct-io loop device: reads cost CPU, not disk,
# so the cell measures the pinning path, as null_blk does in the guest.
setup_loop() {
	local img=$build/fio-target.img
	[[ $EUID -eq 0 ]] || return 1
	truncate -s 1G "$img"
	loopdev=$(losetup --direct-io=on -f --show "$img" 2>/dev/null) || return 1
}

run_fio() {
	if ! setup_loop; then
		echo "fio cells skipped: a loop device needs root and loop support"
		return 0
	fi
	"$bench" -p fio-psync,fio-io_uring -s 256m -f 4k,16k,64k,1m -R 2 \
		-t "$loopdev" -o "$out/fio"
}

mkdir -p "$out"
"$bench" -o "$out/registration" "$@"
run_fio
/usr/bin/python3 "$(dirname "$0")/plot.py" "$out" && echo "plot: $out/plot.png"
