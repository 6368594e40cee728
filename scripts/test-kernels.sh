#!/bin/bash
# The kernel matrix: mreg's guest suite on each of Debian's stock kernels
# (5.10, 6.1, 6.12, 7.3, fetched pinned by tests/guest/mreg-vm), and
# mreg.ko's own suite where the module builds (6.1, 6.12). Writes
#   docs/results/kernels.md     every test's result on every kernel
#   docs/results/support.tsv    what each kernel gives mreg (test_support)
# and renders the README's support table from the latter
# (scripts/support-table.sh). Exit status 1 if any test failed anywhere.
#
#   scripts/test-kernels.sh BUILD_DIR [NAME...]     (default: all four)
#   SUITES="kmod" scripts/test-kernels.sh ...        (default: library kmod)
#
# About 25 minutes under TCG on 2 cores; `make test` runs 6.12 and 6.1.
set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:?usage: scripts/test-kernels.sh BUILD_DIR [NAME...]}" && pwd)
shift
NAMES=${*:-5.10 6.1 6.12 7.3}
OUT=$BUILD/kernels
RESULTS=$TOP/docs/results
VM=$TOP/tests/guest/mreg-vm
rc=0

log() { echo "test-kernels: $*" >&2; }

krelease() { "$VM" kernel-stock "$1" | sed -n "s/^$2=//p"; }

# name kind: the guest suite's (or mreg.ko's) MREG-RESULT lines.
run_suite() {
	local name=$1 kind=$2 dir=$OUT/$1/$2 status
	rm -rf "$dir" && mkdir -p "$dir"
	log "$name: $kind suite"
	if [ "$kind" = library ]; then
		MREG_SUPPORT_TABLE=none "$TOP/tests/vm/run.sh" "$BUILD" --mem 6G --stock "$name" \
			--out "$dir" >"$dir/run.log" 2>&1
	else
		"$TOP/kmod/tests/run-guest.sh" --out "$dir" --stock "$name" \
			>"$dir/run.log" 2>&1
	fi
	status=$?
	[ $status -eq 0 ] || rc=1
	tail -n 1 "$dir/run.log" | sed "s/^/test-kernels: $name $kind: /" >&2
	cp "$dir/results/mreg-support/support.tsv" "$OUT/$name/support.tsv" \
		2>/dev/null || true
}

# One line per test: kernel, suite, test, PASS/FAIL/SKIP and the reason;
# every kernel with results in BUILD_DIR/kernels, this run's or earlier.
results_table() {
	local name kind line
	echo "| kernel | suite | test | result |"
	echo "|---|---|---|---|"
	for name in 5.10 6.1 6.12 7.3; do
		for kind in library kmod; do
			[ -f "$OUT/$name/$kind/console.log" ] || continue
			grep -a '^MREG-RESULT ' "$OUT/$name/$kind/console.log" |
				while read -r _ test verdict _ rest; do
					rest=${rest#SKIP: }
					line="$verdict${rest:+: $rest}"
					echo "| $name | $kind | $test | ${line//|/\\|} |"
				done
		done
	done
}

write_kernels_md() {
	{
		echo "# mreg on Debian's kernels"
		echo
		echo "Written by \`make test-kernels\` (scripts/test-kernels.sh) on"
		echo "$(date -u +%Y-%m-%d), commit $(git -C "$TOP" rev-parse --short HEAD)."
		echo "Every test passes or skips with the reason; the summary per run"
		echo "(kernels not run this time keep their last results):"
		echo
		for name in 5.10 6.1 6.12 7.3; do
			for kind in library kmod; do
				[ -f "$OUT/$name/$kind/run.log" ] || continue
				echo "- $name $kind: $(grep -a 'passed.*failed' "$OUT/$name/$kind/run.log" | tail -n 1 | sed 's/^mreg-vm: //')"
			done
		done
		echo
		results_table
	} >"$RESULTS/kernels.md"
}

# Columns by kernel release, rows by feature, from each kernel's probe;
# the columns of kernels not run this time are kept as committed.
write_support_tsv() {
	local name args=()
	for name in 5.10 6.1 6.12 7.3; do
		args+=("$(krelease "$name" KRELEASE)")
		if [[ " $NAMES " == *" $name "* ]] && [ -f "$OUT/$name/support.tsv" ]; then
			args+=("$OUT/$name/support.tsv")
		else
			args+=(-)
		fi
	done
	python3 - "$RESULTS/support.tsv" "${args[@]}" <<'PY'
import os, sys
out, rest = sys.argv[1], sys.argv[2:]
old = {}
if os.path.exists(out):
    rows = [l.rstrip("\n").split("\t") for l in open(out) if l.strip()]
    for i, rel in enumerate(rows[0][1:], 1):
        old[rel] = {r[0]: r[i] for r in rows[1:]}
cols, order = [], []
for rel, f in zip(rest[::2], rest[1::2]):
    if f != "-":
        col = dict(l.rstrip("\n").split("\t", 1) for l in open(f) if "\t" in l)
    elif rel in old:
        col = old[rel]
    else:
        continue
    cols.append((rel, col))
    order += [k for k in col if k not in order]
with open(out, "w") as fh:
    fh.write("\t".join(["feature"] + [r for r, _ in cols]) + "\n")
    for k in order:
        fh.write("\t".join([k] + [c.get(k, "-") for _, c in cols]) + "\n")
PY
}

mkdir -p "$OUT" "$RESULTS"
SUITES=${SUITES:-library kmod}
for name in $NAMES; do
	[[ " $SUITES " != *" library "* ]] || run_suite "$name" library
	case $name in 6.1 | 6.12)
		[[ " $SUITES " != *" kmod "* ]] || run_suite "$name" kmod ;;
	esac
done
write_kernels_md
write_support_tsv
"$TOP/scripts/support-table.sh" render
log "wrote $RESULTS/kernels.md and $RESULTS/support.tsv"
exit $rc
