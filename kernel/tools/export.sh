#!/bin/bash
# Regenerate kernel/patches from the dev tree (see dev-tree.sh) with
# git format-patch --cover-letter, and check every patch with
# checkpatch.pl --strict. The cover letter's subject and text are taken
# from a file (first line subject, then the body), by default from the
# cover letter that is being replaced, so an unchanged blurb survives.
#   kernel/tools/export.sh [DEV [COVER_TEXT]]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEV=${1:-$ROOT/build/kernel/dev}
OUTDIR=$ROOT/kernel/patches
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

main() {
	local base p rc=0
	TEXT=$(mktemp)
	trap 'rm -f "$TEXT"' EXIT
	if [ -n "$COVER" ]; then
		cp "$COVER" "$TEXT"
	else
		old_cover_text > "$TEXT"
	fi
	base=$(git -C "$DEV" rev-list --max-parents=0 HEAD)
	rm -f "$OUTDIR"/*.patch
	git -C "$DEV" format-patch -q --cover-letter --no-signature \
		-o "$OUTDIR" "$base"
	fill_cover "$TEXT"
	for p in "$OUTDIR"/*.patch; do
		"$DEV"/scripts/checkpatch.pl --strict --no-tree -q "$p" || rc=1
	done
	ls "$OUTDIR"
	return "$rc"
}

main
