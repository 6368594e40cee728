#!/bin/bash
# Regenerate kernel/series/<base> from the dev tree (see dev-tree.sh) with
# git format-patch --cover-letter, and check every patch with
# checkpatch.pl --strict. The cover letter's subject and text are taken
# from a file (first line subject, then the body), by default from the
# cover letter that is being replaced, so an unchanged blurb survives.
#   kernel/tools/export.sh [--base 6.12|7.3] [DEV [COVER_TEXT]]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KBASE=${KBASE:-6.12}
if [ "${1:-}" = --base ]; then
	KBASE=${2:?--base needs 6.12 or 7.3}
	shift 2
fi
case $KBASE in
6.12) DEV=${1:-$ROOT/build/kernel/dev} ;;
7.3) DEV=${1:-$ROOT/build/kernel/7.3/dev} ;;
*) echo "[export] unknown base $KBASE" >&2; exit 2 ;;
esac
OUTDIR=$ROOT/kernel/series/$KBASE
COVER=${2:-}

# Subject and blurb of the current cover letter, as "subject\n\nbody".
old_cover_text() {
	python3 - "$OUTDIR/0000-cover-letter.patch" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
head, body = s.split("\n\n", 1)
subj = re.search(r"^Subject: \[PATCH[^\]]*\] (.*)$", head, re.M).group(1)
body = body.split("\n\n---\n", 1)[0]
body = re.split(r"\n\n\S.* \(\d+\):\n", body)[0]
print(subj + "\n\n" + body.strip("\n"))
PY
}

fill_cover() {
	python3 - "$OUTDIR/0000-cover-letter.patch" "$1" <<'PY'
import sys
p, text = sys.argv[1], open(sys.argv[2]).read()
subj, body = text.split("\n", 1)
s = open(p).read()
s = s.replace("*** SUBJECT HERE ***", subj.strip())
s = s.replace("*** BLURB HERE ***", body.strip("\n"))
open(p, "w").write(s)
PY
}

# A patch's changelog between its "---" and its diffstat is not part of
# the commit, so git am drops it and format-patch cannot give it back:
# carry it over from the old patch of the same subject in $1.
keep_changelogs() {
	python3 - "$1" "$OUTDIR" <<'PY'
import pathlib, re, sys
old_dir, new_dir = map(pathlib.Path, sys.argv[1:3])
subj = lambda s: re.search(r"^Subject: \[PATCH[^\]]*\] (.*(?:\n .*)*)$", s, re.M).group(1)
def changelog(s):
    m = re.search(r"\n---\n(.*?)\n---\n [^\n]+\| +\d+", s, re.S)
    return m.group(1) if m else None
old = {}
for f in old_dir.glob("0[0-9][0-9][1-9]-*.patch"):
    t = f.read_text()
    if changelog(t):
        old[subj(t)] = changelog(t)
for f in sorted(new_dir.glob("*.patch")):
    t = f.read_text()
    if f.name.startswith("0000-") or changelog(t) or subj(t) not in old:
        continue
    t = t.replace("\n---\n", "\n---\n" + old[subj(t)] + "\n---\n", 1)
    f.write_text(t)
PY
}

main() {
	local base p rc=0
	TEXT=$(mktemp)
	SAVED=$(mktemp -d)
	trap 'rm -rf "$TEXT" "$SAVED"' EXIT
	if [ -n "$COVER" ]; then
		cp "$COVER" "$TEXT"
	else
		old_cover_text > "$TEXT"
	fi
	base=$(git -C "$DEV" rev-list --max-parents=0 HEAD)
	cp "$OUTDIR"/*.patch "$SAVED/" 2>/dev/null || true
	rm -f "$OUTDIR"/*.patch
	mkdir -p "$OUTDIR"
	git -C "$DEV" format-patch -q --cover-letter --no-signature \
		-o "$OUTDIR" "$base"
	keep_changelogs "$SAVED"
	fill_cover "$TEXT"
	for p in "$OUTDIR"/*.patch; do
		"$DEV"/scripts/checkpatch.pl --strict --no-tree -q \
			--ignore FILE_PATH_CHANGES "$p" || rc=1
	done
	ls "$OUTDIR"
	return "$rc"
}

main
