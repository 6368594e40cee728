#!/usr/bin/env bash
# Check the harness itself: a test that warns, leaks a pin, times out,
# crashes the kernel or hangs the guest must come back as a failure, a skip as a
# skip, and payload binaries, trees, libraries and modules must arrive.  Three
# boots, each with payload tests from harness-check/.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
vm=$here/mreg-vm
work=${MREG_BUILD_DIR:-$here/../../build}/guest/harness-check
NPASS=0 NFAIL=0

check() {
	local what=$1
	shift
	if "$@"; then
		echo "ok - $what"
		NPASS=$((NPASS + 1))
	else
		echo "not ok - $what"
		NFAIL=$((NFAIL + 1))
	fi
}

# The module is built exactly as the kmod helper builds against the stock
# headers, so this also proves kernel-stock's HEADERS tree works.
build_payload() {
	local p=$work/payload headers
	rm -rf "$p" && mkdir -p "$p"/{bin,ko,tests} "$work/ko"
	"$vm" deps && deps_ensure_uring
	headers=$("$vm" kernel-stock | sed -n 's/^HEADERS=//p')
	cp "$here"/harness-check/mreg_{hello,pinleak}.c "$work/ko/"
	echo 'obj-m := mreg_hello.o mreg_pinleak.o' >"$work/ko/Kbuild"
	make -s -C "$headers" M="$work/ko" modules >&2
	cp "$work/ko"/mreg_{hello,pinleak}.ko "$p/ko/"
	gcc -O2 -Wall -o "$p/bin/uring-probe" "$here/harness-check/uring-probe.c" -luring
	# payload/root: a tree copied as it is, its ELF files with their libs.
	mkdir -p "$p/root/usr/local/bin" "$p/root/usr/share/mreg-check"
	cp "$p/bin/uring-probe" "$p/root/usr/local/bin/uring-probe-tree"
	echo tree-arrived >"$p/root/usr/share/mreg-check/tree.txt"
	cp "$here"/harness-check/{ok,warn,warn-allowed,skipme,slow,pinleak,panic,hang} "$p/tests/"
}

deps_ensure_uring() {
	dpkg-query -W -f='${db:Status-Status}' liburing-dev 2>/dev/null | grep -qx installed ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq liburing-dev >&2
}

# boot NAME EXPECTED_STATUS ARGS...: run mreg-vm, check its exit status.
boot() {
	local name=$1 want=$2 rc=0
	shift 2
	"$vm" run --no-builtin --payload "$work/payload" --out "$work/$name" "$@" \
		>"$work/$name.log" 2>&1 || rc=$?
	if [ "$rc" = 77 ]; then
		tail -1 "$work/$name.log"
		exit 77
	fi
	check "$name: mreg-vm exits $want (got $rc)" test "$rc" = "$want"
}

result_is() { grep -q "^MREG-RESULT $2 $3 " "$work/$1/console.log"; }
console_has() { grep -q "$2" "$work/$1/console.log"; }
log_has() { grep -q "$2" "$work/$1.log"; }

check_verdicts() {
	boot verdicts 1 --tests "ok warn warn-allowed skipme slow pinleak" --test-timeout 15
	check "payload bin, root tree, libs and ko work" result_is verdicts ok PASS
	check "ok.json came back over 9p" test -s "$work/verdicts/results/ok/ok.json"
	check "WARNING in dmesg fails a test that exits 0" result_is verdicts warn FAIL
	check "a warning listed in dmesg-allow does not fail" result_is verdicts warn-allowed PASS
	check "exit 77 is a skip" result_is verdicts skipme SKIP
	check "per-test timeout fails the test" result_is verdicts slow FAIL
	check "a leaked FOLL_PIN fails the test" result_is verdicts pinleak FAIL
	check "summary.json written" grep -q '"failed": 3' "$work/verdicts/results/summary.json"
}

check_panic() {
	boot panic 1 --tests "panic ok" --timeout 300
	check "panic reaches the console log" console_has panic 'Kernel panic'
	check "runner names the crash" log_has panic 'before its verdict'
}

# "guest ran N s" excludes the wait for the qemu lock.
guest_secs() { sed -n 's/^mreg-vm: guest ran \([0-9]*\)s.*/\1/p' "$work/$1.log"; }

check_hang() {
	boot hang 1 --tests hang --test-timeout 100000 --timeout 60
	check "hung guest is killed by the host limit" log_has hang 'guest hung'
	check "runner returned within the limit" test "$(guest_secs hang)" -le 75
}

main() {
	build_payload
	check_verdicts
	check_panic
	check_hang
	echo "harness-check: $NPASS passed, $NFAIL failed"
	[ "$NFAIL" = 0 ]
}

main "$@"
