# Fetch and unpack Debian's stock 6.12 kernel and its headers.
# shellcheck shell=bash

STOCK_VER=6.12.117-1~deb12u1
STOCK_DEBS=(
	"linux-image-$STOCK_KREL-unsigned"
	"linux-headers-$STOCK_KREL"
	"linux-headers-${STOCK_KREL%-amd64}-common"
	"linux-kbuild-${STOCK_KREL%-amd64}"
)
STOCK_ROOT=$GUEST_BUILD/kernels/$STOCK_KREL

stock_kernel() { echo "$STOCK_ROOT/boot/vmlinuz-$STOCK_KREL"; }
stock_modules() { echo "$STOCK_ROOT/lib/modules/$STOCK_KREL"; }
stock_headers() { echo "$STOCK_ROOT/usr/src/linux-headers-$STOCK_KREL"; }

# apt-get download is pinned to the exact version so a point release in
# the archive cannot silently change the guest kernel.
stock_download() {
	local pkg want=()
	mkdir -p "$DEB_CACHE"
	for pkg in "${STOCK_DEBS[@]}"; do
		compgen -G "$DEB_CACHE/${pkg}_*.deb" >/dev/null || want+=("$pkg=$STOCK_VER")
	done
	[ ${#want[@]} -eq 0 ] && return 0
	log "downloading ${want[*]}"
	(cd "$DEB_CACHE" && apt-get download -q "${want[@]}" >&2) || {
		apt-get update -qq >&2
		(cd "$DEB_CACHE" && apt-get download -q "${want[@]}" >&2)
	}
}

# dpkg-deb -x rather than dpkg -i: no postinst, no initramfs-tools, and
# the host's /boot and /lib/modules stay untouched.
stock_extract() {
	local pkg
	[ -e "$STOCK_ROOT/.extracted" ] && return 0
	rm -rf "$STOCK_ROOT" && mkdir -p "$STOCK_ROOT"
	for pkg in "${STOCK_DEBS[@]}"; do
		dpkg-deb -x "$(compgen -G "$DEB_CACHE/${pkg}_*.deb" | head -1)" "$STOCK_ROOT"
	done
	stock_fix_headers
	depmod -b "$STOCK_ROOT" "$STOCK_KREL"
	touch "$STOCK_ROOT/.extracted"
}

# The headers package includes the common tree by absolute /usr/src path
# and build/source are absolute links; point them into the unpacked copy
# so "make -C HEADERS M=..." works without installing anything.
stock_fix_headers() {
	local hdr mod
	hdr=$(stock_headers)
	mod=$(stock_modules)
	sed -i "s|^include /usr/src/|include $STOCK_ROOT/usr/src/|" "$hdr/Makefile"
	ln -sfn "$hdr" "$mod/build"
	ln -sfn "$STOCK_ROOT/usr/src/linux-headers-${STOCK_KREL%-amd64}-common" "$mod/source"
}

kernel_stock_prepare() {
	stock_download
	stock_extract
}

kernel_stock_cmd() {
	kernel_stock_prepare
	echo "KERNEL=$(stock_kernel)"
	echo "MODULES=$(stock_modules)"
	echo "HEADERS=$(stock_headers)"
	echo "KRELEASE=$STOCK_KREL"
}
