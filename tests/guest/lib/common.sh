# Shared paths, logging and package installation for mreg-vm.
# shellcheck shell=bash

MREG_ROOT=$(cd "$MREG_VM_DIR/../.." && pwd)
# Everything generated lives under the gitignored build/ of the checkout.
MREG_BUILD=${MREG_BUILD_DIR:-$MREG_ROOT/build}
GUEST_BUILD=$MREG_BUILD/guest
DEB_CACHE=$MREG_BUILD/cache/debs
# Two TCG guests on two cores starve each other, so every boot takes this.
QEMU_LOCK=${MREG_QEMU_LOCK:-/tmp/mreg/qemu.lock}


# Packages used on the host, either to run qemu or as the source of the
# files copied into the guest (busybox, rdma-core, fio, iproute2).
DEPS_PKGS=(
	qemu-system-x86 busybox-static cpio kmod xz-utils zstd
	rdma-core ibverbs-utils ibverbs-providers libibverbs1 liburing2
	fio iproute2 gcc gcc-12 libc6-dev make dwarves
)

log() { printf 'mreg-vm: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# Print the packages of "$@" that are not installed.
deps_missing() {
	local p status
	for p in "$@"; do
		status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
		[ "$status" = installed ] || echo "$p"
	done
}

# Install packages only when missing, so a warm machine does no apt work.
deps_ensure() {
	local missing
	missing=$(deps_missing "$@")
	[ -z "$missing" ] && return 0
	log "installing:" $missing
	[ "$(id -u)" = 0 ] || die "need root to apt-get install $missing"
	apt-get update -qq >&2
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $missing >&2
}

deps_install() { deps_ensure "${DEPS_PKGS[@]}"; }

# Content hash of files and strings, used to key caches.
hash_of() { sha256sum "$@" | sha256sum | cut -c1-16; }
