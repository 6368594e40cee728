#!/bin/bash
# Recreate the git work tree a series is edited in: the pristine base
# tree (unpacked from Debian's linux-source-6.12 or -7.3, as
# kernel/build.sh source leaves it) committed as the base, with
# kernel/series/<base> applied on top as one commit per patch by git am.
# Edit there (rebase, fixup commits), then regenerate with export.sh.
#   kernel/tools/dev-tree.sh [--base 6.12|7.3] [DIR]
#   default DIR: build/kernel/dev (6.12), build/kernel/7.3/dev (7.3)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KBASE=${KBASE:-6.12}
if [ "${1:-}" = --base ]; then
	KBASE=${2:?--base needs 6.12 or 7.3}
	shift 2
fi
case $KBASE in
6.12) KVER=6.12.117 OUT=$ROOT/build/kernel ;;
7.3) KVER=7.3.4 OUT=$ROOT/build/kernel/7.3 ;;
*) echo "[dev-tree] unknown base $KBASE" >&2; exit 2 ;;
esac
DEV=${1:-$OUT/dev}
TARBALL=$OUT/linux-source-$KVER.tar.xz

die() { echo "[dev-tree] $*" >&2; exit 1; }

# The pinned tarball that kernel/build.sh extracts from its Debian package.
unpack() {
	[ -e "$DEV" ] && die "$DEV exists; remove it or pass another directory"
	[ -f "$TARBALL" ] || die "$TARBALL missing: run kernel/build.sh --base $KBASE source"
	mkdir -p "$DEV"
	tar -xf "$TARBALL" -C "$DEV" --strip-components=1
}

# A base commit, so that git format-patch has something to diff against.
# Debian's top-level .gitignore ignores everything ("/*"), hence -f.
commit_base() {
	git -C "$DEV" init -q
	git -C "$DEV" add -f -A
	git -C "$DEV" -c user.name=base -c user.email=base@localhost \
		commit -q -m "Linux $KVER (Debian linux-source-$KBASE)"
}

apply_series() {
	local p
	for p in "$ROOT"/kernel/series/"$KBASE"/[0-9]*.patch; do
		case $p in */0000-cover-letter.patch) continue ;; esac
		git -C "$DEV" am -q --keep-cr "$p"
	done
	git -C "$DEV" log --oneline | head -20
}

unpack
commit_base
apply_series
