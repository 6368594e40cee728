#!/bin/bash
# QEMU 10.0 from Debian 13 (trixie) for the guest: the client that starts
# a passthrough VM, with VFIO type1 and with iommufd (`-object iommufd`,
# which bookworm's QEMU 7.2 lacks).
#   tests/clients/fetch-qemu.sh BUILD_DIR      prints the tree's path
#
# The guest's base is bookworm, so this QEMU cannot use the base's
# libraries: it travels with its own. qemu-system-x86 and its Depends
# closure are fetched pinned (qemu-system-x86 itself to the exact upload)
# through a private apt state under BUILD_DIR/cache/apt-trixie, as the
# stock kernels are, unpacked with dpkg-deb -x (no maintainer script
# runs, the host's dpkg database is untouched), and cut down to what one
# binary needs:
#   TREE/bin/qemu-system-x86_64   the binary
#   TREE/lib/                     its loader and the libraries it NEEDs,
#                                 as its own loader resolves them
#   TREE/share/                   SeaBIOS and the option ROMs of q35
#   TREE/qemu                     wrapper: own loader, own libraries, -L
# The guest runs it as /opt/qemu/qemu (tests/clients/payload.sh).
set -euo pipefail

QEMU_VER=1:10.0.13+ds-0+deb13u1
build=$(cd "${1:?usage: fetch-qemu.sh BUILD_DIR}" && pwd)
cache=$build/cache
apt_dir=$cache/apt-trixie
debs=$cache/debs-trixie
tree=$build/clients/qemu-${QEMU_VER#*:}

log() { printf 'fetch-qemu: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

trixie_apt() {
	local tool=$1
	shift
	"$tool" -o APT::Sandbox::User=root \
		-o Dir::Etc::SourceList="$apt_dir/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$apt_dir/lists" \
		-o Dir::State::Status=/dev/null "$@"
}

apt_state() {
	[ -e "$apt_dir/lists/lock" ] && ls "$apt_dir"/lists/*Packages* >/dev/null 2>&1 &&
		return 0
	mkdir -p "$apt_dir/lists/partial"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
		"http://deb.debian.org/debian trixie main" >"$apt_dir/sources.list"
	trixie_apt apt-get update -qq >&2
}

# qemu-system-x86 and everything it Depends on, recursively: real
# packages only (apt-cache prints virtual ones in <>).
closure() {
	trixie_apt apt-cache depends --recurse --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances \
		qemu-system-x86 | grep -v '^[ <]' | sort -u
}

download() {
	local pkgs=() p
	mkdir -p "$debs"
	for p in $(closure); do
		[ "$p" = qemu-system-x86 ] && continue
		compgen -G "$debs/${p}_*.deb" >/dev/null || pkgs+=("$p")
	done
	compgen -G "$debs/qemu-system-x86_${QEMU_VER#*:}_*.deb" >/dev/null ||
		compgen -G "$debs/qemu-system-x86_*${QEMU_VER#*:}_*.deb" >/dev/null ||
		pkgs+=("qemu-system-x86=$QEMU_VER")
	[ ${#pkgs[@]} -eq 0 ] && return 0
	log "downloading ${#pkgs[@]} packages from trixie"
	(cd "$debs" && trixie_apt apt-get download -q "${pkgs[@]}" >&2)
}

# Only the files the binary loads: the loader resolves NEEDED itself.
assemble() {
	local root=$tree.unpacked f lib libdir
	rm -rf "$root" "$tree.tmp"
	mkdir -p "$root" "$tree.tmp"/{bin,lib,share}
	for f in "$debs"/*.deb; do dpkg-deb -x "$f" "$root"; done
	libdir=$root/usr/lib/x86_64-linux-gnu
	cp "$root/usr/bin/qemu-system-x86_64" "$tree.tmp/bin/"
	cp -L "$libdir/ld-linux-x86-64.so.2" "$tree.tmp/lib/"
	for lib in $("$libdir/ld-linux-x86-64.so.2" --list --library-path "$libdir" \
		"$root/usr/bin/qemu-system-x86_64" | awk '/=> \// { print $3 }'); do
		cp -L "$lib" "$tree.tmp/lib/"
	done
	cp -L "$root"/usr/share/seabios/bios-256k.bin "$tree.tmp/share/"
	for f in kvmvapic.bin linuxboot_dma.bin vgabios-stdvga.bin efi-e1000e.rom; do
		[ -e "$root/usr/share/qemu/$f" ] && cp -L "$root/usr/share/qemu/$f" "$tree.tmp/share/"
	done
	cat >"$tree.tmp/qemu" <<'WRAP'
#!/bin/sh
# Debian 13's QEMU on a Debian 12 base: its own loader and libraries.
d=$(dirname "$(readlink -f "$0")")
exec "$d/lib/ld-linux-x86-64.so.2" --library-path "$d/lib" \
	"$d/bin/qemu-system-x86_64" -L "$d/share" "$@"
WRAP
	chmod +x "$tree.tmp/qemu"
	# The guest harness copies host libraries for the ELF files of a
	# payload tree; this one brings its own (initramfs.sh).
	touch "$tree.tmp/.own-libs"
	"$tree.tmp/qemu" --version >&2 || die "the assembled QEMU does not start"
	rm -rf "$root" "$tree"
	mv "$tree.tmp" "$tree"
}

if [ ! -x "$tree/qemu" ]; then
	apt_state
	download
	assemble
	log "QEMU ${QEMU_VER#*:} in $tree ($(du -sh "$tree" | cut -f1))"
fi
echo "$tree"
