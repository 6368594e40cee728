# Build the guest initramfs: a base layer cached per kernel release and an
# overlay rebuilt on every run.  The kernel unpacks concatenated newc
# archives in order, so the overlay can add to and override the base.
# shellcheck shell=bash

INITRAMFS_VERSION=1 # bump to invalidate every cached base layer

# Copy FILE to DEST (an absolute path inside ROOT), dereferencing links.
put_file() {
	local root=$1 file=$2 dest=$3
	mkdir -p "$root$(dirname "$dest")"
	cp -L --preserve=mode "$file" "$root$dest"
}

# Shared libraries of an ELF file as ldd resolves them on the host.  The
# guest is the same distribution, so the host's resolution holds there.
elf_libs() {
	ldd "$1" 2>/dev/null | awk '/=> \// { print $3 } /^[ \t]*\// { print $1 }'
}

# Copy each library to its canonical directory under its soname, which is
# the name the loader asks for; /lib -> usr/lib links make both spellings
# of a path work in the guest.
put_libs() {
	local root=$1 elf=$2 lib dest
	for lib in $(elf_libs "$elf"); do
		dest=$(readlink -f "$(dirname "$lib")")/$(basename "$lib")
		[ -e "$root$dest" ] || put_file "$root" "$lib" "$dest"
	done
}

put_elf() {
	put_file "$1" "$2" "$3"
	put_libs "$1" "$2"
}

# Debian is merged-/usr; mirror that so host paths from ldd resolve.
layout_skeleton() {
	local root=$1 d
	mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,proc,sys,dev,tmp,run,mnt,mreg}
	for d in bin sbin lib lib64; do ln -sfn "usr/$d" "$root/$d"; done
	# As on Debian: DPDK's EAL keeps its runtime directory in /var/run.
	mkdir -p "$root/var"
	ln -sfn ../run "$root/var/run"
}

layout_busybox() {
	local root=$1 applet
	put_file "$root" /bin/busybox /usr/bin/busybox
	for applet in $(/bin/busybox --list); do
		[ -e "$root/usr/bin/$applet" ] || ln -s busybox "$root/usr/bin/$applet"
	done
}

list_entries() { sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$1"; }

layout_binaries() {
	local root=$1 name path
	for name in $(list_entries "$MREG_VM_DIR/guest/binaries.list"); do
		path=$(PATH=$PATH:/usr/sbin:/sbin command -v "$name") ||
			die "$name not found on the host (run mreg-vm deps)"
		put_elf "$root" "$path" "/usr/bin/$name"
	done
}

# libibverbs dlopens its providers, so ldd on the tools cannot see them.
layout_rdma() {
	local root=$1 multi=/usr/lib/x86_64-linux-gnu
	put_elf "$root" "$multi/libibverbs/librxe-rdmav34.so" "$multi/libibverbs/librxe-rdmav34.so"
	put_file "$root" /etc/libibverbs.d/rxe.driver /etc/libibverbs.d/rxe.driver
}

# Without an ld.so.cache the loader only searches its built-in paths.
layout_ldcache() {
	local root=$1
	printf '%s\n' /usr/lib/x86_64-linux-gnu /usr/lib >"$root/etc/ld.so.conf"
	ldconfig -r "$root"
}

# Print the modules.dep line of module NAME ("path: deps..."), if any.
mod_dep_line() {
	local dep=$1 name=${2//-/_}
	awk -v n="$name" -F: '{
		b = $1; sub(/.*\//, "", b); sub(/\.ko(\.(xz|zst|gz))?$/, "", b);
		gsub(/-/, "_", b); if (b == n) { print; exit }
	}' "$dep"
}

# Copy one module file decompressed: busybox insmod reads only plain .ko.
put_module() {
	local moddir=$1 rel=$2 dst=$3
	local out=$dst/${rel%.*}
	case "$rel" in
	*.ko) out=$dst/$rel ;;
	esac
	[ -e "$out" ] && return 0
	mkdir -p "$(dirname "$out")"
	case "$rel" in
	*.ko.xz) xz -dc "$moddir/$rel" >"$out" ;;
	*.ko.zst) zstd -qdc "$moddir/$rel" >"$out" ;;
	*.ko.gz) gzip -dc "$moddir/$rel" >"$out" ;;
	*) cp "$moddir/$rel" "$out" ;;
	esac
}

is_builtin() { grep -qE "/${2//_/[-_]}\.ko\$" "$1/modules.builtin" 2>/dev/null; }

layout_modules() {
	local root=$1 moddir=$2 krel=$3 name line rel
	local dst=$root/lib/modules/$krel
	mkdir -p "$dst"
	for name in $(list_entries "$MREG_VM_DIR/guest/modules.list"); do
		line=$(mod_dep_line "$moddir/modules.dep" "$name")
		if [ -z "$line" ]; then
			is_builtin "$moddir" "$name" || log "note: $krel has no module $name"
			continue
		fi
		for rel in ${line/:/}; do put_module "$moddir" "$rel" "$dst"; done
	done
	cp "$moddir"/modules.{builtin,builtin.modinfo,order} "$dst/" 2>/dev/null || true
	depmod -b "$root" "$krel"
}

# Release of a modules tree is the name of its directory.
modules_release() {
	[ "$1" = none ] && echo none || basename "$(readlink -f "$1")"
}

base_key() {
	local moddir=$1 depfile=/dev/null
	[ "$moddir" != none ] && depfile=$moddir/modules.dep
	{
		echo "$INITRAMFS_VERSION"
		cat "$depfile" "$MREG_VM_DIR/lib/initramfs.sh" \
			"$MREG_VM_DIR"/guest/{modules,binaries}.list
		dpkg-query -W busybox-static fio ibverbs-utils ibverbs-providers \
			rdma-core iproute2 libc6
	} | sha256sum | cut -c1-12
}

cpio_pack() {
	(cd "$1" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc --owner=0:0 --quiet) >"$2"
}

# Build (or reuse) the base layer for MODDIR; prints its directory.
# Uncompressed on purpose: under TCG the guest's decompressor costs more
# than copying the bytes.  A lock keeps two concurrent runs from building
# the same layer into one directory.
initramfs_base() {
	local moddir=${RUN_MODULES:-$(stock_modules)} krel key dir lockfd
	krel=$(modules_release "$moddir")
	key=$(base_key "$moddir")
	dir=$GUEST_BUILD/base/$krel-$key
	mkdir -p "$GUEST_BUILD/base"
	exec {lockfd}>>"$GUEST_BUILD/base/.lock"
	flock "$lockfd"
	[ -e "$dir/base.cpio" ] || base_build "$dir" "$moddir" "$krel"
	exec {lockfd}>&-
	echo "$dir"
}

# Older layers of the same release are dropped: each is ~90 MB.
base_build() {
	local dir=$1 moddir=$2 krel=$3 old
	log "building base initramfs for $krel"
	rm -rf "$dir" && mkdir -p "$dir/root"
	base_layout "$dir/root" "$moddir" "$krel"
	cpio_pack "$dir/root" "$dir/base.cpio.tmp"
	mv "$dir/base.cpio.tmp" "$dir/base.cpio"
	for old in "$GUEST_BUILD/base/$krel"-????????????; do
		[ "$old" = "$dir" ] || rm -rf "$old"
	done
}

base_layout() {
	local root=$1 moddir=$2 krel=$3
	layout_skeleton "$root"
	layout_binaries "$root"
	layout_busybox "$root"
	layout_rdma "$root"
	[ "$moddir" = none ] || layout_modules "$root" "$moddir" "$krel"
	layout_ldcache "$root"
}

# Tests to run: the built-in ones, then the payload's (same name wins).
overlay_tests() {
	local root=$1 src t
	mkdir -p "$root/mreg/tests"
	for src in ${RUN_BUILTIN:+"$MREG_VM_DIR/tests"} ${RUN_PAYLOAD:+"$RUN_PAYLOAD/tests"}; do
		[ -d "$src" ] || continue
		for t in "$src"/*; do
			[ -f "$t" ] && [ -x "$t" ] && cp "$t" "$root/mreg/tests/"
		done
	done
}

# Payload binaries go to /mreg/bin with the libraries the base lacks.
overlay_payload() {
	local root=$1 base=$2 f
	[ -n "${RUN_PAYLOAD:-}" ] || return 0
	for f in "$RUN_PAYLOAD"/bin/*; do
		[ -f "$f" ] || continue
		put_file "$root" "$f" "/mreg/bin/$(basename "$f")"
		overlay_libs "$root" "$base" "$f"
	done
	for f in "$RUN_PAYLOAD"/ko/*.ko; do
		[ -f "$f" ] && put_file "$root" "$f" "/mreg/ko/$(basename "$f")"
	done
	overlay_payload_tree "$root" "$base"
}

# payload/root is a tree copied as it is (an interpreter and its library,
# say), with the libraries its ELF files need that the base lacks. A
# folder holding a file .own-libs brings its own loader and libraries
# (another Debian release's program): the host's are not for it.
overlay_payload_tree() {
	local root=$1 base=$2 tree=$RUN_PAYLOAD/root f
	[ -d "$tree" ] || return 0
	cp -a "$tree/." "$root/"
	while IFS= read -r -d '' f; do
		overlay_libs "$root" "$base" "$f"
	done < <(find "$tree" -type d -exec test -e '{}/.own-libs' \; -prune -o \
		-type f \( -name '*.so*' -o -perm -u+x \) -print0)
}

overlay_libs() {
	local root=$1 base=$2 elf=$3 lib dest
	is_elf "$elf" || return 0
	for lib in $(elf_libs "$elf"); do
		dest=$(readlink -f "$(dirname "$lib")")/$(basename "$lib")
		[ -e "$base$dest" ] || [ -e "$root$dest" ] || put_file "$root" "$lib" "$dest"
	done
}

is_elf() { [ "$(head -c4 "$1" | tail -c3)" = ELF ]; }

# The harness's own small C helpers (real ioctls the shell cannot do).
overlay_helpers() {
	local root=$1 c
	for c in "$MREG_VM_DIR"/helpers/*.c; do
		[ -f "$c" ] || continue
		${CC:-gcc} -Wall -Wextra -O2 -o "$root/mreg/bin/$(basename "$c" .c)" "$c" ||
			die "cannot build $c"
	done
}

# Settings for /init, read as shell assignments.
overlay_config() {
	local root=$1
	{
		echo "MREG_TESTS='${RUN_TESTS:-}'"
		echo "MREG_TEST_TIMEOUT='$RUN_TEST_TIMEOUT'"
		echo "MREG_SHELL='${RUN_SHELL:-}'"
	} >"$root/mreg/config"
}

# Build the per-run overlay in OUT and print the combined initramfs path.
initramfs_build() {
	local base out=$RUN_OUT/initramfs root
	base=$(initramfs_base)
	root=$out/overlay
	rm -rf "$out" && mkdir -p "$root/mreg/bin"
	put_file "$root" "$MREG_VM_DIR/guest/init" /init
	put_file "$root" "$MREG_VM_DIR/guest/lib.sh" /mreg/lib.sh
	overlay_tests "$root"
	overlay_helpers "$root"
	overlay_payload "$root" "$base/root"
	overlay_config "$root"
	cpio_pack "$root" "$out/overlay.cpio"
	cat "$base/base.cpio" "$out/overlay.cpio" >"$out/initramfs.cpio"
	echo "$out/initramfs.cpio"
}
