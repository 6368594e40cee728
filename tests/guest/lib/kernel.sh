# Fetch and unpack Debian's stock kernels and their headers.
# shellcheck shell=bash
#
# Each guest kernel is one of Debian's own builds, pinned to an exact
# upload so that a point release in the archive cannot silently change
# it.  6.12 comes from the host's own sources (bookworm); the others from
# a private apt state under build/cache/apt-kernels, so the host's apt
# configuration is never touched.
#
#   name  release                 version              suite
STOCK_TABLE="
5.10  5.10.0-32-amd64         5.10.223-1           bullseye
6.1   6.1.0-57-amd64          6.1.192-3            bookworm
6.12  6.12.117+deb12-amd64    6.12.117-1~deb12u1   host
7.3   7.3.4+deb13-amd64       7.3.4-1~bpo13+1      trixie-backports
"
STOCK_NAMES="5.10 6.1 6.12 7.3"

# Select kernel NAME: sets STOCK_NAME, STOCK_KREL, STOCK_VER, STOCK_SUITE,
# STOCK_DEBS, STOCK_ROOT.
stock_select() {
	local line
	line=$(awk -v n="$1" '$1 == n' <<<"$STOCK_TABLE")
	[ -n "$line" ] || die "unknown stock kernel '$1' (have: $STOCK_NAMES)"
	read -r STOCK_NAME STOCK_KREL STOCK_VER STOCK_SUITE <<<"$line"
	local abi=${STOCK_KREL%-amd64}
	case $STOCK_NAME in
	7.3)
		# From 7.3 Debian splits the image: linux-image-* is a meta
		# package, the kernel and its modules live in these two.
		STOCK_DEBS=("linux-binary-$STOCK_KREL" "linux-modules-$STOCK_KREL"
			"linux-headers-$STOCK_KREL" "linux-headers-$abi-common"
			"linux-kbuild-$abi")
		;;
	6.12)
		STOCK_DEBS=("linux-image-$STOCK_KREL-unsigned" "linux-headers-$STOCK_KREL"
			"linux-headers-$abi-common" "linux-kbuild-$abi")
		;;
	*)
		# 5.10 and 6.1 name kbuild by the major version only.
		STOCK_DEBS=("linux-image-$STOCK_KREL-unsigned" "linux-headers-$STOCK_KREL"
			"linux-headers-$abi-common" "linux-kbuild-$STOCK_NAME")
		;;
	esac
	STOCK_ROOT=$GUEST_BUILD/kernels/$STOCK_KREL
}

# 7.3's packages install under usr/lib/modules/<release>, kernel included.
stock_moddir_rel() {
	case $STOCK_NAME in
	7.3) echo "usr/lib/modules/$STOCK_KREL" ;;
	*) echo "lib/modules/$STOCK_KREL" ;;
	esac
}
stock_kernel() {
	case $STOCK_NAME in
	7.3) echo "$STOCK_ROOT/usr/lib/modules/$STOCK_KREL/vmlinuz" ;;
	*) echo "$STOCK_ROOT/boot/vmlinuz-$STOCK_KREL" ;;
	esac
}
stock_modules() { echo "$STOCK_ROOT/$(stock_moddir_rel)"; }
stock_headers() { echo "$STOCK_ROOT/usr/src/linux-headers-$STOCK_KREL"; }

# apt-get with a sources list of our own for the suites the host lacks.
stock_apt() {
	local dir=$MREG_BUILD/cache/apt-kernels
	if [ ! -e "$dir/sources.list" ]; then
		mkdir -p "$dir/lists/partial"
		cat >"$dir/sources.list" <<SOURCES
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bullseye main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bullseye-security main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security bookworm-security main
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main
SOURCES
	fi
	apt-get -o APT::Sandbox::User=root \
		-o Dir::Etc::SourceList="$dir/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$dir/lists" "$@"
}

stock_download() {
	local pkg want=()
	mkdir -p "$DEB_CACHE"
	for pkg in "${STOCK_DEBS[@]}"; do
		compgen -G "$DEB_CACHE/${pkg}_${STOCK_VER}_*.deb" >/dev/null ||
			want+=("$pkg=$STOCK_VER")
	done
	[ ${#want[@]} -eq 0 ] && return 0
	log "downloading ${want[*]}"
	if [ "$STOCK_SUITE" = host ]; then
		(cd "$DEB_CACHE" && apt-get download -q "${want[@]}" >&2) || {
			apt-get update -qq >&2
			(cd "$DEB_CACHE" && apt-get download -q "${want[@]}" >&2)
		}
	else
		(cd "$DEB_CACHE" && stock_apt download -q "${want[@]}" >&2) || {
			stock_apt update -qq >&2
			(cd "$DEB_CACHE" && stock_apt download -q "${want[@]}" >&2)
		}
	fi
}

stock_deb() {
	local f
	for f in "$DEB_CACHE/${1}_${STOCK_VER}_"*.deb; do
		[ -e "$f" ] && echo "$f" && return 0
	done
	die "no $1 $STOCK_VER in $DEB_CACHE"
}

# dpkg-deb -x rather than dpkg -i: no postinst, no initramfs-tools, and
# the host's /boot and /lib/modules stay untouched.
stock_extract() {
	local pkg
	[ -e "$STOCK_ROOT/.extracted" ] && return 0
	rm -rf "$STOCK_ROOT" && mkdir -p "$STOCK_ROOT"
	for pkg in "${STOCK_DEBS[@]}"; do
		dpkg-deb -x "$(stock_deb "$pkg")" "$STOCK_ROOT"
	done
	stock_fix_headers
	stock_depmod
	touch "$STOCK_ROOT/.extracted"
}

# 7.3's split packages lack modules.order and modules.builtin*: depmod
# then warns, but modules.dep (all modprobe needs) is complete.
stock_depmod() {
	case $STOCK_NAME in
	7.3) depmod -b "$STOCK_ROOT/usr" "$STOCK_KREL" 2>/dev/null ;;
	*) depmod -b "$STOCK_ROOT" "$STOCK_KREL" ;;
	esac
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
	[ -n "${STOCK_NAME:-}" ] || stock_select "${MREG_STOCK:-6.12}"
	stock_download
	stock_extract
}

kernel_stock_cmd() {
	[ $# -eq 0 ] || stock_select "$1"
	kernel_stock_prepare
	echo "KERNEL=$(stock_kernel)"
	echo "MODULES=$(stock_modules)"
	echo "HEADERS=$(stock_headers)"
	echo "KRELEASE=$STOCK_KREL"
}
