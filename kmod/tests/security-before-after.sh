#!/bin/bash
# Each case of kmod-security against the module before the security work
# of issue 28 (BEFORE, default 73d35ca) and against this tree's: every
# case must fail before and pass now.  Writes the table to OUT (default
# kernel/results/kmod-security.md's "before/after" section is made from it).
#
#   kmod/tests/security-before-after.sh [--before REV] [--out FILE]
#                                       [--cases "exec fork ..."]
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BEFORE=73d35ca OUT_FILE=$TOP/build/kmod/security-before-after.txt CASES=''
while [ $# -gt 0 ]; do
	case $1 in
	--before) BEFORE=$2 ;;
	--out) OUT_FILE=$2 ;;
	--cases) CASES=$2 ;;
	*) sed -n '2,8p' "$0" >&2; exit 2 ;;
	esac
	shift 2
done
[ -n "$CASES" ] ||
	CASES=$(sed -n 's/^SECURITY_CASES="\(.*\)"$/\1/p' "$HERE/run-guest.sh")
TESTS=$(for c in $CASES; do printf 'kmod-security-%s ' "$c"; done)

# The old module, from a worktree of BEFORE: its sources, its build.
old_module() {
	local wt=$TOP/build/kmod/before-src
	rm -rf "$wt"
	git -C "$TOP" worktree prune
	git -C "$TOP" worktree add --detach "$wt" "$BEFORE" >&2
	MREG_KO_OUT=$TOP/build/kmod/mreg-before.ko "$wt/kmod/build.sh" build
	git -C "$TOP" worktree remove --force "$wt"
}

results() { # $1: the run's out dir
	for c in $CASES; do
		grep -h "^MREG-RESULT kmod-security-$c " "$1"/console.log |
			awk -v c="$c" '{ print c, $3 }'
	done
}

main() {
	mkdir -p "$TOP/build/kmod"
	old_module
	"$HERE/run-guest.sh" --ko "$TOP/build/kmod/mreg-before.ko" \
		--tests "$TESTS" --out "$TOP/build/kmod/sec-before" || true
	"$HERE/run-guest.sh" --tests "$TESTS" --out "$TOP/build/kmod/sec-after" ||
		true
	join <(results "$TOP/build/kmod/sec-before") \
		<(results "$TOP/build/kmod/sec-after") |
		awk -v b="$BEFORE" 'BEGIN { print "| case | module at " b " | this tree |"
					    print "|---|---|---|" }
			{ print "| " $1 " | " $2 " | " $3 " |"
			  if ($2 != "FAIL" || $3 != "PASS") bad = 1 }
			END { exit bad }' | tee "$OUT_FILE"
}

main "$@"
