#!/bin/bash
# Build mreg.ko warning-free (W=1, warnings are errors) against Debian's
# linux-headers for 6.12, and check the sources with checkpatch --strict.
#
#   kmod/build.sh [build]        headers + module (default)
#   kmod/build.sh checkpatch     checkpatch.pl --strict from linux-source-6.12
#   kmod/build.sh all            both
#   kmod/build.sh dkms-install   copy the tree to /usr/src/mreg-1.0
#
# Env: KVER (default 6.12.117+deb12-amd64), KDIR (default its headers dir).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
KVER=${KVER:-6.12.117+deb12-amd64}
KDIR=${KDIR:-/usr/src/linux-headers-$KVER}
SRC_PKG=linux-source-6.12
SRC_VER=${SRC_VER:-6.12.117-1~deb12u1}
CACHE=$TOP/build/cache
CP_DIR=$CACHE/kmod-src/$SRC_PKG
SOURCES=(mreg_main.c mreg_file.c mreg_bench.c mreg_pin.c mreg_account.c mreg_watch.c mreg_compat.h
	 mreg_priv.h Kbuild)

log() { echo "kmod/build.sh: $*" >&2; }

# apt-get update only when an install is needed, as CI starts clean.
apt_install() {
	if dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; then
		return
	fi
	log "installing $1"
	apt-get -o DPkg::Lock::Timeout=900 update -qq
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 \
		install -y -q "$1" >&2
}

ensure_headers() {
	if [ ! -e "$KDIR/Makefile" ]; then
		apt_install "linux-headers-$KVER"
	fi
	apt_install make
	apt_install gcc
}

# A private DKMS-style copy per build: two builds for different kernels at
# once (kernel/build.sh test on stock and patched) cleaned and linked each
# other's objects in kmod/ itself. The module lands in $MREG_KO_OUT
# (default kmod/mreg.ko), moved there whole.
build_copy() {
	local work
	mkdir -p "$TOP/build/cache"
	work=$(mktemp -d "$TOP/build/cache/kmod-build.XXXXXX")
	mkdir -p "$work/include/uapi"
	cp "${SOURCES[@]/#/$HERE/}" "$HERE/Makefile" "$work/"
	cp "$TOP/include/uapi/mreg.h" "$work/include/uapi/"
	echo "$work"
}

# W=1 output must be empty of warnings: grep them out of the log and fail.
build_module() {
	local logf work out=${MREG_KO_OUT:-$HERE/mreg.ko} rc=0
	ensure_headers
	# make runs in the copy: a relative KDIR must not depend on the cwd.
	KDIR=$(cd "$KDIR" && pwd)
	logf=$(mktemp)
	work=$(build_copy)
	if ! nice make -C "$work" KDIR="$KDIR" W=1 2>&1 | tee "$logf" >&2; then
		log "build failed"
		rc=1
	elif grep -qiE 'warning:|error:' "$logf"; then
		log "build has warnings"
		rc=1
	else
		cp "$work/mreg.ko" "$out.tmp.$$" && mv "$out.tmp.$$" "$out"
		log "built $out against $KDIR"
	fi
	rm -rf "$logf" "$work"
	return $rc
}

# Only scripts/checkpatch.pl and its two data files are taken from the
# linux-source tarball, into build/cache (never build/kernel, which the
# kernel helper owns).  The installed linux-source-6.12 package is used
# when present, else its .deb is downloaded into build/cache/debs.
source_tarball() {
	local deb
	if [ -f "/usr/src/$SRC_PKG.tar.xz" ]; then
		cat "/usr/src/$SRC_PKG.tar.xz"
		return
	fi
	mkdir -p "$CACHE/debs"
	deb=$(compgen -G "$CACHE/debs/${SRC_PKG}_*.deb" | head -n1 || true)
	if [ -z "$deb" ]; then
		(cd "$CACHE/debs" && { apt-get download "$SRC_PKG=$SRC_VER" ||
			{ apt-get update -qq && apt-get download "$SRC_PKG=$SRC_VER"; }; }) >&2
		deb=$(compgen -G "$CACHE/debs/${SRC_PKG}_*.deb" | head -n1)
	fi
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$SRC_PKG.tar.xz"
}

ensure_checkpatch() {
	local tarxz
	[ -f "$CP_DIR/scripts/checkpatch.pl" ] && return
	apt_install xz-utils
	mkdir -p "$CACHE/kmod-src"
	tarxz=$(mktemp)
	source_tarball >"$tarxz"
	tar -xJf "$tarxz" -C "$CACHE/kmod-src" \
		"$SRC_PKG/scripts/checkpatch.pl" \
		"$SRC_PKG/scripts/spelling.txt" \
		"$SRC_PKG/scripts/const_structs.checkpatch"
	rm -f "$tarxz"
}

run_checkpatch() {
	local f rc=0
	ensure_checkpatch
	for f in "${SOURCES[@]/#/$HERE/}" "$TOP/include/uapi/mreg.h"; do
		perl "$CP_DIR/scripts/checkpatch.pl" --strict --no-tree -q \
			--show-types -f "$f" || rc=1
	done
	[ $rc -eq 0 ] && log "checkpatch --strict clean"
	return $rc
}

# The header is shared with userspace: it must build with -std=c11
# -pedantic and keep the version-1 layout (kmod/tests/uapi_check.c).
uapi_check() {
	local bin
	bin=$(mktemp)
	gcc -std=c11 -pedantic -Wall -Wextra -Werror -I"$TOP/include" \
		"$HERE/tests/uapi_check.c" -o "$bin"
	"$bin"
	rm -f "$bin"
	log "uapi header builds as C11 and keeps its layout"
}

dkms_install() {
	local dst=/usr/src/mreg-1.0
	mkdir -p "$dst/include/uapi"
	cp "${SOURCES[@]/#/$HERE/}" "$HERE/Makefile" "$HERE/dkms.conf" \
		"$HERE/60-mreg.rules" "$HERE/mreg-dkms-hook" "$dst/"
	cp "$TOP/include/uapi/mreg.h" "$dst/include/uapi/"
	log "sources in $dst; now: dkms install mreg/1.0 (its hook adds group" \
		"mreg and the udev rule; then: adduser USER mreg)"
}

case "${1:-build}" in
build) build_module ;;
checkpatch) run_checkpatch ;;
uapi) uapi_check ;;
all) build_module && run_checkpatch && uapi_check ;;
dkms-install) dkms_install ;;
*) echo "usage: $0 [build|checkpatch|uapi|all|dkms-install]" >&2; exit 2 ;;
esac
