#!/bin/bash
# Recreate the git work tree the series is edited in: a pristine
# 6.12.117 tree (unpacked from linux-source-6.12) committed as the base,
# with kernel/patches applied on top as one commit per patch by git am.
# Edit there (rebase, fixup commits), then regenerate with export.sh.
#   kernel/tools/dev-tree.sh [DIR]    default: build/kernel/dev
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEV=${1:-$ROOT/build/kernel/dev}
TARBALL=$ROOT/build/kernel/linux-source-6.12.117.tar.xz

die() { echo "[dev-tree] $*" >&2; exit 1; }

# The pinned tarball that kernel/build.sh extracts from its Debian package.
unpack() {
	[ -e "$DEV" ] && die "$DEV exists; remove it or pass another directory"
	[ -f "$TARBALL" ] || die "$TARBALL missing: run kernel/build.sh source"
	mkdir -p "$DEV"
	tar -xf "$TARBALL" -C "$DEV" --strip-components=1
}

# A base commit, so that git format-patch has something to diff against.
# Debian's top-level .gitignore ignores everything ("/*"), hence -f.
commit_base() {
	git -C "$DEV" init -q
	git -C "$DEV" add -f -A
	git -C "$DEV" -c user.name=base -c user.email=base@localhost \
		commit -q -m "Linux 6.12.117 (Debian linux-source-6.12)"
}

apply_series() {
	local p
	for p in "$ROOT"/kernel/patches/[0-9]*.patch; do
		case $p in */0000-cover-letter.patch) continue ;; esac
		git -C "$DEV" am -q --keep-cr "$p"
	done
	git -C "$DEV" log --oneline | head -20
}

unpack
commit_base
apply_series
