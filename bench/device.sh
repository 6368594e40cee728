#!/bin/bash
# Native time on a larger machine, when the project is lent one (16 cores,
# 128 GiB, 15 minutes in all, the working tree copied over, no network).
#
#   bench/device.sh --prepare        here: put what the run needs into
#                                    build/device (carry it to the machine)
#   bench/device.sh [--out DIR]      there: the run, unattended, < 10 min
#   bench/device.sh --dry-run        here: the same plan at toy sizes,
#                                    which must pass before it is used
#
# What the run does:
#  1. Says what the machine is: kernel, cores, memory, /dev/kvm, qemu.
#  2. With /dev/kvm and qemu-system-x86_64: boots the stock and patched
#     kernels carried in build/device/kernels/<base>-<variant> with
#     -accel kvm and runs the kbench cells on the host clock (native time
#     of the guest kernel's GUP; no icount, no kcount).
#  3. Without them: the host kernel's scale cells, natively: io_uring
#     registration of 64 kB and 4 kB folios at 4, 16 and 64 GB, then
#     16 GB on 1, 2, 4, 8 and 16 threads.
# Every cell verifies its folio histogram (mreg-bench does). Output: a
# log and the mreg-bench JSON/CSV under DIR (default $OUT or
# build/device-out), plus a summary on stdout to paste into
# kernel/results/.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dev=$top/build/device
mode=run out=${OUT:-$top/build/device-out}
while [ $# -gt 0 ]; do
	case $1 in
	--prepare) mode=prepare; shift ;;
	--dry-run) mode=dry; shift ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: bench/device.sh [--prepare|--dry-run] [--out DIR]" >&2
	   exit 2 ;;
	esac
done

log() { printf '[device] %s\n' "$*" | tee -a "$out/device.log" >&2; }

# The binaries the run needs, with their libraries beside them: the
# machine has none of this project's dependencies and no network.
prepare() {
	local b=$top/build lib
	[ -x "$b/bench/mreg-bench" ] || make -C "$top" build >&2
	rm -rf "$dev" && mkdir -p "$dev/lib" "$dev/kernels"
	cp "$b/bench/mreg-bench" "$dev/"
	cp -L "$b"/libmreg.so.[0-9] "$dev/lib/"
	lib=$(ldd "$b/bench/mreg-bench" | awk '/liburing/ { print $3 }')
	[ -z "$lib" ] || cp -L "$lib" "$dev/lib/"
	prepare_kernels
	du -sh "$dev" >&2
}

# bzImage and stripped modules of each built kernel, when they fit the
# 64 MiB a run may carry; the KVM path boots them.
prepare_kernels() {
	local base v src k
	for base in 6.12 7.3; do
		for v in stock patched; do
			src=$top/build/kernel
			[ "$base" = 6.12 ] || src=$src/$base
			src=$src/$v
			[ -f "$src/bzImage" ] || continue
			k=$dev/kernels/$base-$v
			mkdir -p "$k"
			cp "$src/bzImage" "$k/"
			cp -a "$src/modules" "$k/"
		done
	done
	if [ "$(du -sm "$dev" | cut -f1)" -gt 60 ]; then
		echo "[device] kernels do not fit the carry limit: host cells only" >&2
		rm -rf "$dev/kernels"
	fi
}

machine() {
	log "kernel $(uname -r), $(nproc) cores, $(awk '/MemTotal/ { printf "%d GiB", $2 / 1048576 }' /proc/meminfo)"
	if [ -c /dev/kvm ]; then log "/dev/kvm: present"; else log "/dev/kvm: absent"; fi
	if command -v qemu-system-x86_64 >/dev/null; then
		log "qemu: $(qemu-system-x86_64 --version | head -n1)"
	else
		log "qemu: not installed"
	fi
	log "memlock limit: $(ulimit -l)"
}

bench() {
	LD_LIBRARY_PATH=$dev/lib "$dev/mreg-bench" -q "$@"
}

# $1: sizes, $2: thread counts, $3: reps, $4: folios.
host_cells() {
	local sizes=$1 threads=$2 reps=$3 folios=$4 paths="" t
	log "host cells: io_uring, folios $folios, sizes $sizes, $reps reps"
	bench -p io_uring -f "$folios" -s "$sizes" -r "$reps" -w 1 \
		-o "$out/host-sizes" | tee -a "$out/device.log"
	for t in $threads; do paths+="${paths:+,}io_uring/t$t"; done
	log "host cells: threads $threads at ${sizes##*,}"
	bench -p "$paths" -f 64k -s "${sizes##*,}" -r "$reps" -w 1 \
		-o "$out/host-threads" | tee -a "$out/device.log"
}

# The kbench cells under KVM, one boot per kernel, with the harness.
kvm_cells() {
	local k mods rc=0
	for k in "$dev"/kernels/*/; do
		k=${k%/}
		mods=$(find "$k/modules/lib/modules" -mindepth 1 -maxdepth 1 | head -n1)
		log "kvm: kbench on $(basename "$k")"
		MREG_VM_ACCEL=kvm MREG_VM_ICOUNT=off MREG_VM_PLUGIN_COUNTS=0 \
			"$top/tests/guest/mreg-vm" run --kernel "$k/bzImage" \
			--modules "$mods" --payload "$top/build/kernel/payload" \
			--tests kbench --no-builtin --mem 16G --timeout 240 \
			--out "$out/kvm-$(basename "$k")" || rc=1
	done
	return "$rc"
}

can_kvm() {
	[ -c /dev/kvm ] && command -v qemu-system-x86_64 >/dev/null &&
		compgen -G "$dev/kernels/*/bzImage" >/dev/null &&
		[ -d "$top/build/kernel/payload" ]
}

main() {
	if [ "$mode" = prepare ]; then
		prepare
		return
	fi
	mkdir -p "$out"
	: >"$out/device.log"
	[ "$mode" = run ] || [ -x "$dev/mreg-bench" ] || prepare
	[ -x "$dev/mreg-bench" ] ||
		{ log "no build/device/mreg-bench: run bench/device.sh --prepare and carry build/device"; exit 1; }
	machine
	if [ "$mode" = dry ]; then
		# The same plan at toy sizes: every step but the scale.
		host_cells 16m,32m "1 2" 1 4k,64k
		if can_kvm; then
			log "dry run: kvm cells would run"
		else
			log "dry run: kvm cells would be skipped here"
		fi
		log "dry run ok"
		return
	fi
	if can_kvm; then
		kvm_cells || log "kvm cells failed, see $out"
		# What is left of the 10 minutes goes to the host cells.
		host_cells 4g,16g "1 4 16" 3 4k,64k
	else
		log "no KVM (or no qemu or carried kernels): host cells"
		host_cells 4g,16g,64g "1 2 4 8 16" 3 4k,64k
	fi
	log "done: $out"
}

main
