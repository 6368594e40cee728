# Boot a kernel with the mreg initramfs under qemu and judge the result.
# shellcheck shell=bash

# isa-debug-exit turns a guest write of V to port 0xf4 into qemu exit
# status (V << 1) | 1.  /init writes 0x10 (pass) or 0x11 (fail), giving 33
# and 35, which cannot be confused with qemu's own error status 1 or with
# 0 from a guest that rebooted (panic=-1 with -no-reboot).
QEMU_RC_PASS=33
QEMU_RC_FAIL=35

run_usage_die() { usage >&2 && exit 2; }

run_defaults() {
	RUN_KERNEL='' RUN_MODULES='' RUN_PAYLOAD='' RUN_TESTS='' RUN_OUT=''
	RUN_MEM=2G RUN_SMP=2 RUN_TIMEOUT=900 RUN_TEST_TIMEOUT=300
	RUN_APPEND='' RUN_BUILTIN=1 RUN_SHELL=''
}

run_parse_args() {
	run_defaults
	while [ $# -gt 0 ]; do
		case "$1" in
		--kernel) RUN_KERNEL=$2 ;;
		--stock) stock_select "$2" ;;
		--modules) RUN_MODULES=$2 ;;
		--payload) RUN_PAYLOAD=$(readlink -f "$2") ;;
		--tests) RUN_TESTS=$2 ;;
		--out) RUN_OUT=$2 ;;
		--mem) RUN_MEM=$2 ;;
		--smp) RUN_SMP=$2 ;;
		--timeout) RUN_TIMEOUT=$2 ;;
		--test-timeout) RUN_TEST_TIMEOUT=$2 ;;
		--append) RUN_APPEND=$2 ;;
		--builtin) RUN_BUILTIN=1 && shift && continue ;;
		--no-builtin) RUN_BUILTIN='' && shift && continue ;;
		--shell) RUN_SHELL=1 && shift && continue ;;
		*) run_usage_die ;;
		esac
		[ $# -ge 2 ] || run_usage_die
		shift 2
	done
	run_resolve_kernel
	run_check_args
}

# No --kernel means the stock Debian kernel and its modules.  A custom
# kernel without --modules is taken to have what it needs built in.
run_resolve_kernel() {
	if [ -z "$RUN_KERNEL" ]; then
		kernel_stock_prepare
		RUN_KERNEL=$(stock_kernel)
		RUN_MODULES=${RUN_MODULES:-$(stock_modules)}
	fi
	RUN_MODULES=${RUN_MODULES:-none}
	[ "$RUN_MODULES" = none ] || RUN_MODULES=$(readlink -f "$RUN_MODULES")
}

run_check_args() {
	[ -f "$RUN_KERNEL" ] || die "no kernel image at $RUN_KERNEL"
	[ "$RUN_MODULES" = none ] || [ -f "$RUN_MODULES/modules.dep" ] ||
		die "$RUN_MODULES is not a lib/modules/<release> tree (no modules.dep)"
	[ -z "$RUN_PAYLOAD" ] || [ -d "$RUN_PAYLOAD" ] || die "no payload dir $RUN_PAYLOAD"
	[[ "$RUN_TESTS" =~ ^[A-Za-z0-9_.\ -]*$ ]] || die "bad test name in: $RUN_TESTS"
	[[ "$RUN_TIMEOUT$RUN_TEST_TIMEOUT" =~ ^[0-9]+$ ]] || die "timeouts are seconds"
}

# Exit 77 (skip) where this host cannot run the guest at all.
qemu_available() {
	local dev have
	command -v qemu-system-x86_64 >/dev/null || {
		echo "SKIP: qemu-system-x86_64 not installed"
		exit 77
	}
	have=$(qemu-system-x86_64 -device help 2>&1)
	for dev in edu intel-iommu isa-debug-exit virtio-9p-pci; do
		grep -q "\"$dev\"" <<<"$have" || {
			echo "SKIP: this qemu has no $dev device"
			exit 77
		}
	done
}

# intel_iommu=on without iommu=pt: vfio-pci needs a translating IOMMU for
# the edu device, and a translated default domain also exercises the
# kernel's DMA-API path.  virtio devices do not negotiate ACCESS_PLATFORM
# here, so they bypass the vIOMMU and stay fast.  No panic_on_warn: a WARN
# fails the test it happened in (/init scans dmesg) and later tests still
# run and report.
# MREG_VM_IOMMU=off boots without the emulated intel-iommu, for tests
# that need the kernel's own IOMMU drivers alone (6.12 binds a device to
# the first IOMMU driver registered, so IOMMUFD_TEST's mock devices fail
# beside intel-iommu). Booting with the device but intel_iommu=off is no
# substitute: the KASAN kernel then reports a wild access from an early
# edge interrupt in start_kernel.
qemu_iommu_on() {
	[ "${MREG_VM_IOMMU:-on}" != off ]
}

# no_timer_check: the IO-APIC timer check counts ticks against a delay
# loop, which an emulated CPU on a loaded host can miss; with interrupt
# remapping on, a miss is a panic ("timer doesn't work through
# Interrupt-remapped IO-APIC", seen on stock while two kernels built).
# The guests' timer is qemu's, known to work.
qemu_cmdline() {
	local iommu=intel_iommu=on
	qemu_iommu_on || iommu=
	echo "console=ttyS0 loglevel=5 $iommu no_timer_check panic=-1 $RUN_APPEND"
}

# One TCG thread for all vCPUs.  With multi-threaded TCG a vCPU can run a
# stale translation of code the other vCPU just patched, and the kernel's
# int3-based text patching then dies with "Oops: int3" during boot (seen
# here about once in 30 boots).  Single-threaded TCG also boots faster on
# a busy 2-core host (6 s instead of 8 s to /init).  Both vCPUs still
# interleave, so SMP code paths run.
QEMU_ACCEL=${MREG_VM_ACCEL:-tcg,thread=single}

# MREG_VM_ICOUNT=N makes the guest clock count instructions (2^N ns each)
# instead of following the host's: a TCG timing then depends on what the
# guest executed, not on what else ran on the host, so benchmark ratios
# repeat. Idle time is skipped (sleep=off), so boots stay fast. The
# benchmarks set it (bench/tcg-clock.sh); the tests leave it off, since it
# roughly halves TCG's speed.
qemu_icount_argv() {
	case ${MREG_VM_ICOUNT:-off} in off) return 0 ;; esac
	QEMU_ARGV+=(-icount "shift=$MREG_VM_ICOUNT,sleep=off")
}

# MREG_VM_PLUGIN_COUNTS=1 loads kcount (bench/tcg-plugin/README.md): it
# counts the guest kernel's instructions, locked RMW instructions and
# memory accesses, and writes the running totals at each cell mark a guest
# program executes to OUT/kcount.txt, beside the 9p results rather than in
# them (the host pairs the marks with the cells after the guest exits).
# Its counters are plain adds, exact only when one host thread runs every
# vCPU: -icount or -accel tcg,thread=single, refused otherwise.
qemu_plugin_argv() {
	[ "${MREG_VM_PLUGIN_COUNTS:-0}" = 1 ] || return 0
	case ${MREG_VM_ICOUNT:-off},$QEMU_ACCEL in
	off,*thread=single*)
		log "kcount: counting without -icount: timings follow the host clock" ;;
	off,*)
		die "MREG_VM_PLUGIN_COUNTS=1 needs MREG_VM_ICOUNT or single-threaded TCG, not MREG_VM_ACCEL=$QEMU_ACCEL" ;;
	esac
	# MREG_VM_PLUGIN_ARGS: more plugin arguments, e.g. sites=PATH.
	QEMU_ARGV+=(-plugin "$(kcount_plugin),out=$RUN_OUT/kcount.txt,rr=on${MREG_VM_PLUGIN_ARGS:+,$MREG_VM_PLUGIN_ARGS}")
}

# Built here, on demand, so the harness needs no CMake tree: a missing or
# older .so is rebuilt from bench/tcg-plugin/.
kcount_plugin() {
	local src=$MREG_ROOT/bench/tcg-plugin so=$GUEST_BUILD/tcg-plugin/kcount.so
	if [ ! -f "$so" ] || [ -n "$(find "$src" -name '*.[ch]' -newer "$so")" ]; then
		mkdir -p "$(dirname "$so")"
		cc -std=c11 -O2 -Wall -Wextra -shared -fPIC -fvisibility=hidden \
			-o "$so" "$src/kcount.c" >&2 || die "cannot build $so"
	fi
	echo "$so"
}

qemu_argv() {
	local initrd=$1 results=$2 iommu=()
	# Before the PCI devices, as qemu wants it.  48-bit IOVAs as on
	# server VT-d: qemu's default of 39 bits cannot map IOVA = VA, which
	# DPDK's IOVA-as-VA mode (and mreg's dpdk backend) need.
	qemu_iommu_on && iommu=(-device intel-iommu,intremap=on,caching-mode=on,aw-bits=48)
	QEMU_ARGV=(
		qemu-system-x86_64 -machine q35,kernel-irqchip=split
		-accel "$QEMU_ACCEL" -cpu max -m "$RUN_MEM" -smp "$RUN_SMP"
		"${iommu[@]}"
		-device edu
		-device isa-debug-exit,iobase=0xf4,iosize=0x04
		-fsdev "local,id=results,path=$results,security_model=none"
		-device virtio-9p-pci,fsdev=results,mount_tag=mreg-results
		-display none -no-reboot
		-kernel "$RUN_KERNEL" -initrd "$initrd" -append "$(qemu_cmdline)"
	)
	qemu_icount_argv
	qemu_plugin_argv
	if [ -n "$RUN_SHELL" ]; then
		QEMU_ARGV+=(-serial mon:stdio) # Ctrl-A X quits, Ctrl-A C: monitor
	else
		QEMU_ARGV+=(-serial stdio -monitor none)
	fi
}

# Take the global qemu lock, reporting when another guest holds it.  The
# fd is inherited by qemu, so the lock lives exactly as long as the guest.
# A caller that already holds it ("flock LOCK mreg-vm run ...") passed us
# its fd; locking a new fd would wait for ourselves forever, so reuse it.
qemu_lock() {
	mkdir -p "$(dirname "$QEMU_LOCK")"
	touch "$QEMU_LOCK"
	qemu_lock_inherited && return 0
	exec {QEMU_LOCK_FD}>>"$QEMU_LOCK"
	flock -n "$QEMU_LOCK_FD" && return 0
	log "waiting for $QEMU_LOCK (another guest is running)"
	flock "$QEMU_LOCK_FD"
}

# flock on a descriptor of the holder's open file succeeds at once.
qemu_lock_inherited() {
	local fd lock
	lock=$(readlink -f "$QEMU_LOCK")
	for fd in /proc/$$/fd/*; do
		[ "$(readlink -f "$fd")" = "$lock" ] || continue
		flock -n "${fd##*/}" 2>/dev/null || continue
		QEMU_LOCK_FD=${fd##*/}
		log "using the qemu lock held by the caller (fd $QEMU_LOCK_FD)"
		return 0
	done
	return 1
}

# Run qemu with a wall-clock limit; the console goes to the terminal and
# to OUT/console.log.  Sets QEMU_RC and QEMU_SECS (lock wait excluded).
qemu_boot() {
	local console=$RUN_OUT/console.log start
	QEMU_RC=0
	qemu_lock
	log "booting $(basename "$RUN_KERNEL") (timeout ${RUN_TIMEOUT}s, log $console)"
	start=$(date +%s)
	if [ -n "$RUN_SHELL" ]; then
		qemu_interactive
	else
		timeout --kill-after=10 "$RUN_TIMEOUT" "${QEMU_ARGV[@]}" </dev/null 2>&1 |
			tee "$console" >&2 || QEMU_RC=${PIPESTATUS[0]}
	fi
	QEMU_SECS=$(($(date +%s) - start))
}

# --shell: the terminal is the guest console, with no time limit and no
# log copy (tee would take the terminal out of raw mode for qemu).
qemu_interactive() {
	log "shell after the tests; exit it (or Ctrl-A X) to stop the guest"
	"${QEMU_ARGV[@]}" || QEMU_RC=$?
	: >"$RUN_OUT/console.log"
}

run_default_out() {
	echo "$GUEST_BUILD/out/$(date -u +%Y%m%d-%H%M%S)-$$"
}

run_cmd() {
	local initrd
	run_parse_args "$@"
	qemu_available
	# -m: the default build/guest/out/<stamp> does not exist yet on a
	# fresh clone, and plain -f fails (empty) when its parent is missing.
	RUN_OUT=$(readlink -m "${RUN_OUT:-$(run_default_out)}")
	mkdir -p "$RUN_OUT"
	rm -rf "$RUN_OUT/results" && mkdir -p "$RUN_OUT/results"
	initrd=$(initramfs_build)
	qemu_argv "$initrd" "$RUN_OUT/results"
	qemu_boot
	verdict "$QEMU_RC" "$QEMU_SECS"
}

# Judge from qemu's status and the MREG-RESULT lines on the console, so a
# verdict exists even when the guest died before writing summary.json.
verdict() {
	local rc=$1 secs=$2 console=$RUN_OUT/console.log npass nfail nskip
	npass=$(grep -c '^MREG-RESULT [^ ]* PASS ' "$console" || true)
	nfail=$(grep -c '^MREG-RESULT [^ ]* FAIL ' "$console" || true)
	nskip=$(grep -c '^MREG-RESULT [^ ]* SKIP ' "$console" || true)
	log "guest ran ${secs}s, qemu status $rc; results in $RUN_OUT"
	echo "mreg-vm: $npass passed, $nfail failed, $nskip skipped"
	case "$rc" in
	"$QEMU_RC_PASS") [ "$nfail" = 0 ] && return 0 ;;
	"$QEMU_RC_FAIL") ;;
	124 | 137) log "FAIL: guest hung: killed after ${RUN_TIMEOUT}s" ;;
	0) log "FAIL: guest rebooted or powered off before its verdict (panic?)" ;;
	*) verdict_qemu_error "$rc" ;;
	esac
	return 1
}

# qemu exiting 1 before /init said anything means qemu itself could not
# start (no such accelerator, no memory): a skip, not a test failure.
verdict_qemu_error() {
	local console=$RUN_OUT/console.log
	if [ "$1" = 1 ] && ! grep -q '^MREG-INIT' "$console"; then
		echo "SKIP: qemu could not start: $(grep -m1 '^qemu-system' "$console" || echo "status 1")"
		exit 77
	fi
	log "FAIL: qemu exited with status $1"
}
