#!/bin/bash
# Build mreg.ko and its tests on the host and run them in the qemu guest
# through tests/guest/mreg-vm, by default on Debian's stock 6.12 kernel.
#
#   kmod/tests/run-guest.sh [--bench] [--race-runs N] [--tests "kmod-abi ..."]
#                           [--out DIR] [--kernel BZIMAGE --modules DIR --kdir HEADERS]
#                           [--ko MREG_KO] [--soak] [--stock NAME]
#
# --stock NAME: one of Debian's stock kernels (tests/guest/mreg-vm
# kernel-stock: 6.1, 6.12), with the module built against its headers.
# --bench adds kmod-kbench: mreg-kbench over 256 MB for every method and
# folio size (table on the console, JSON in OUT/results/kmod-kbench/), and
# kmod-fuzz-soak: the fuzz loop with 100000 calls.
# --race-runs N adds kmod-race-repeat: kmod-race N times in a row in one
# boot (MREG_RACE_SECONDS each, default 10 there), stopping at the first
# failure.
# --soak adds kmod-fuzz-long (kmod-fuzz with seeds 1..SOAK_SEEDS, default
# 8, of SOAK_CALLS calls each, default 50000) and kmod-trinity-long
# (trinity with SOAK_SEEDS seeds of SOAK_TRINITY_CALLS syscalls, default
# SOAK_CALLS): the long fuzz run, for the debug kernel
# (kernel/results/kmod-security.md).
# --ko runs the tests against a module built elsewhere (an older commit's,
# say: kmod/tests/security-before-after.sh) instead of building kmod/.
# kmod-security-CASE runs one case of kmod-security.
# Exit status: that of mreg-vm run (0 pass, 1 fail, 77 cannot run here).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PAYLOAD=$TOP/build/kmod/payload
TESTS_DEFAULT="kmod-abi kmod-badinput kmod-pagemap kmod-folios kmod-bench
kmod-close kmod-fork kmod-munmap kmod-memlock kmod-fuzz
kmod-unpinrace kmod-memfdmode kmod-tornread kmod-race kmod-watch kmod-security
kmod-trinity kmod-unload"
SOAK='' BENCH='' RACE_RUNS='' TESTS='' OUT='' KERNEL='' MODULES='' KDIR='' KO=''
SECURITY_CASES="sizes nowait fd-passing fork-setuid phys bench exec fork watch-flood watch-kill thp-partial gens-memlock hugetlb-hole fallocate-stale foreign-file file-writeback"

usage() {
	sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# Kernel, modules and headers of one of Debian's stock kernels.
stock() {
	local lines
	lines=$("$TOP/tests/guest/mreg-vm" kernel-stock "$1")
	KERNEL=$(sed -n 's/^KERNEL=//p' <<<"$lines")
	MODULES=$(sed -n 's/^MODULES=//p' <<<"$lines")
	KDIR=$(sed -n 's/^HEADERS=//p' <<<"$lines")
	KVER=$(sed -n 's/^KRELEASE=//p' <<<"$lines")
	export KVER
}

parse() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--bench) BENCH=1 && shift && continue ;;
		--soak) SOAK=1 && shift && continue ;;
		--race-runs) RACE_RUNS=$2 ;;
		--tests) TESTS=$2 ;;
		--out) OUT=$2 ;;
		--kernel) KERNEL=$2 ;;
		--modules) MODULES=$2 ;;
		--kdir) KDIR=$2 ;;
		--ko) KO=$(readlink -f "$2") ;;
		--stock) stock "$2" ;;
		*) usage ;;
		esac
		[ $# -ge 2 ] || usage
		shift 2
	done
	TESTS=${TESTS:-$(tr "\n" " " <<<"$TESTS_DEFAULT")}
	[ -z "$BENCH" ] || TESTS="$TESTS kmod-kbench kmod-fuzz-soak"
	[ -z "$SOAK" ] || TESTS="$TESTS kmod-fuzz-long kmod-trinity-long"
	[ -z "$RACE_RUNS" ] || TESTS="$TESTS kmod-race-repeat"
}

build_module() {
	if [ -n "$KO" ]; then
		return
	elif [ -n "$KDIR" ]; then
		# Not over kmod/mreg.ko, which stays the stock 6.12 build.
		mkdir -p "$TOP/build/kmod"
		KO=$TOP/build/kmod/mreg-$(basename "$(readlink -f "$KDIR")").ko
		KDIR=$KDIR MREG_KO_OUT=$KO "$TOP/kmod/build.sh" build
	else
		"$TOP/kmod/build.sh" build
	fi
}

# Static test binaries: the guest needs no extra libraries for them.
build_tests() {
	local pkg
	for pkg in libc6-dev trinity; do
		dpkg-query -W -f='${Status}' $pkg 2>/dev/null | grep -q 'ok installed' ||
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q $pkg >&2 ||
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
				apt-get install -y -q $pkg >&2; }
	done
	nice make -s -C "$HERE" OUT="$TOP/build/kmod/tests"
}

# The bench as a guest test: 256 MB, 3 reps, JSON next to the test log;
# and the fuzz loop at soak length.
write_bench_tests() {
	cat >"$PAYLOAD/tests/kmod-kbench" <<'SH'
#!/bin/sh
exec mreg-kbench -s "${MREG_KBENCH_MB:-256}" -r 3 -j "$MREG_OUT/kbench.json"
SH
	cat >"$PAYLOAD/tests/kmod-fuzz-soak" <<'SH'
#!/bin/sh
MREG_FUZZ_COUNT=100000 exec /mreg/tests/kmod-fuzz
SH
	cat >"$PAYLOAD/tests/kmod-race-repeat" <<SH
#!/bin/sh
export MREG_RACE_SECONDS=\${MREG_RACE_SECONDS:-10}
i=1
while [ \$i -le ${RACE_RUNS:-0} ]; do
	echo "kmod-race run \$i of ${RACE_RUNS:-0}"
	/mreg/tests/kmod-race || { echo "kmod-race failed in run \$i"; exit 1; }
	i=\$((i + 1))
done
echo "PASS kmod-race ${RACE_RUNS:-0} runs in a row"
SH
	write_trinity_test
	write_soak_tests
	chmod +x "$PAYLOAD/tests/kmod-kbench" "$PAYLOAD/tests/kmod-fuzz-soak" \
		"$PAYLOAD/tests/kmod-race-repeat" "$PAYLOAD/tests/kmod-trinity" \
		"$PAYLOAD/tests/kmod-fuzz-long" "$PAYLOAD/tests/kmod-trinity-long"
}

# Debian's trinity with /dev/mreg as its only victim, unprivileged (uid
# and gid 65534, the device given to that group as the udev rule gives it
# to group mreg), on the syscalls that reach the module's file.  Trinity's
# children are forked from the process that opened the files, so most
# calls exercise the other-mm paths (EPERM, EPOLLERR, release by a
# non-owner); the structure-aware kmod-fuzz drives the owner's paths.
# read(2) is left out: a blocking read of /dev/mreg waits for an event
# as long as a pipe's would, and trinity 2023.01 did not reap the child
# blocked in it (the run stalled after 10033 calls); kmod-fuzz reads with
# O_NONBLOCK and kmod-security with RWF_NOWAIT.
write_trinity_test() {
	cat >"$PAYLOAD/tests/kmod-trinity" <<'SH'
#!/bin/sh
[ -x /mreg/bin/trinity ] ||
	{ echo "SKIP: trinity not in the payload (apt-get install trinity)"; exit 77; }
[ -e /dev/mreg ] || insmod /mreg/ko/mreg.ko || exit 1
chown 0:65534 /dev/mreg && chmod 0660 /dev/mreg || exit 1
mkdir -p /tmp/trinity && chmod 1777 /tmp/trinity && cd /tmp/trinity || exit 1
n=${MREG_TRINITY_COUNT:-20000} seed=${MREG_TRINITY_SEED:-1}
echo "trinity: $n syscalls, seed $seed, victim /dev/mreg, as 65534:65534"
/mreg/bin/run-as 65534 65534 /mreg/bin/trinity -q -l off -N "$n" -s "$seed" \
	-C 4 --victims /dev/mreg \
	--disable-fds=sockets,pipes,perf,epoll,eventfd,pseudo,timerfd,testfile,memfd,drm \
	-c ioctl -c mmap -c munmap \
	-c mremap -c poll -c close -c dup -c openat -c open -c fcntl -c ioctl
rc=$?
echo "trinity exited $rc"
exit $rc
SH
}

# One seed after another, each a fresh run whose pins must balance; the
# harness checks the whole boot's balance and dmesg after the last.
write_soak_tests() {
	local seeds=${SOAK_SEEDS:-8} calls=${SOAK_CALLS:-50000}
	local tcalls=${SOAK_TRINITY_CALLS:-${SOAK_CALLS:-50000}}
	cat >"$PAYLOAD/tests/kmod-fuzz-long" <<SH
#!/bin/sh
s=1
while [ \$s -le $seeds ]; do
	echo "kmod-fuzz seed \$s, $calls calls"
	MREG_FUZZ_SEED=\$s MREG_FUZZ_COUNT=$calls /mreg/tests/kmod-fuzz || exit 1
	s=\$((s + 1))
done
echo "PASS kmod-fuzz-long: $seeds seeds x $calls calls"
SH
	cat >"$PAYLOAD/tests/kmod-trinity-long" <<SH
#!/bin/sh
s=1
while [ \$s -le $seeds ]; do
	MREG_TRINITY_SEED=\$s MREG_TRINITY_COUNT=$tcalls /mreg/tests/kmod-trinity || exit 1
	s=\$((s + 1))
done
echo "PASS kmod-trinity-long: $seeds seeds x $tcalls syscalls"
SH
}

write_security_cases() {
	local c
	for c in $SECURITY_CASES; do
		printf '#!/bin/sh\nexec /mreg/tests/kmod-security %s\n' "$c" \
			>"$PAYLOAD/tests/kmod-security-$c"
		chmod +x "$PAYLOAD/tests/kmod-security-$c"
	done
}

assemble_payload() {
	rm -rf "$PAYLOAD"
	mkdir -p "$PAYLOAD/bin" "$PAYLOAD/tests" "$PAYLOAD/ko"
	cp "$TOP/build/kmod/tests/tests/"kmod-* "$PAYLOAD/tests/"
	cp "$TOP/build/kmod/tests/bin/"* "$PAYLOAD/bin/"
	[ ! -x /usr/bin/trinity ] || cp /usr/bin/trinity "$PAYLOAD/bin/"
	cp "${KO:-$TOP/kmod/mreg.ko}" "$PAYLOAD/ko/mreg.ko"
	write_security_cases
	write_bench_tests
}

# mreg-vm takes the global qemu lock itself; do not take it here too.
# KMOD_TEST_TIMEOUT raises the per-test limit, for slow (debug) kernels.
run_guest() {
	local tt=${KMOD_TEST_TIMEOUT:-300}
	# kmod-race-repeat runs 10 s a time, and slower beside a loaded host.
	[ -z "$RACE_RUNS" ] || [ $((RACE_RUNS * 30)) -le "$tt" ] ||
		tt=$((RACE_RUNS * 30))
	# init_on_alloc=0, as HPC and RDMA machines often boot: pages come
	# with what their last user left, so a test sees a stale-data leak.
	local args=(run --payload "$PAYLOAD" --no-builtin --tests "$TESTS"
		--mem 2G --timeout $((tt > 300 ? tt * 8 : 2400))
		--test-timeout "$tt" --append "init_on_alloc=0")
	[ -z "$OUT" ] || args+=(--out "$OUT")
	[ -z "$KERNEL" ] || args+=(--kernel "$KERNEL")
	[ -z "$MODULES" ] || args+=(--modules "$MODULES")
	"$TOP/tests/guest/mreg-vm" "${args[@]}"
}

# One run at a time: the module, the test binaries and the payload are
# built into fixed places under build/kmod, so two runs at once (stock and
# patched from kernel/build.sh test) would overwrite each other's. The
# qemu lock mreg-vm takes is another lock, so holding this one while
# waiting for it cannot deadlock.
serialize() {
	mkdir -p "$TOP/build/kmod"
	exec {RUN_LOCK_FD}>>"$TOP/build/kmod/.run-guest.lock"
	flock "$RUN_LOCK_FD"
}

main() {
	parse "$@"
	serialize
	build_module
	build_tests
	assemble_payload
	run_guest
}

main "$@"
