#!/bin/bash
# DPDK's headers without DPDK's ~210 build dependencies: Debian's
# libdpdk-dev, of the same version as the installed librte-eal23, is
# downloaded and unpacked (dpkg-deb -x, no maintainer scripts) into DEST.
# The dpdk backend builds against DEST/usr/include; at run time libmreg
# dlopens librte_eal.so.23 alone.  A no-op when DEST already holds them.
#   scripts/dpdk-dev.sh DEST
set -euo pipefail

dest=${1:?usage: scripts/dpdk-dev.sh DEST}
ver=$(dpkg-query -W -f='${Version}' librte-eal23 2>/dev/null) || {
	echo "dpdk-dev.sh: librte-eal23 is not installed: no dpdk backend" >&2
	exit 0
}
stamp=$dest/.libdpdk-dev-$ver
[[ -e $stamp ]] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# apt's sandbox user cannot write a root-owned mktemp directory.
chmod 755 "$tmp"
(cd "$tmp" && apt-get download -qq "libdpdk-dev=$ver" 2>/dev/null) || {
	apt-get update -qq
	(cd "$tmp" && apt-get download -qq "libdpdk-dev=$ver")
}
rm -rf "$dest"
mkdir -p "$dest"
dpkg-deb -x "$tmp"/libdpdk-dev_*.deb "$dest"
touch "$stamp"
echo "dpdk-dev.sh: DPDK $ver headers in $dest"
