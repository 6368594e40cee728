#!/bin/bash
# Install the Debian packages a job needs; a no-op when they are present.
#   scripts/deps.sh build bench ...
set -euo pipefail

declare -A PROFILE=(
	# groff-base: check_install renders every man page with groff.
	# librte-eal23: the dpdk backend's run-time library (its headers come
	# from scripts/dpdk-dev.sh, without libdpdk-dev's dependencies).
	# libucx-dev, libfabric-dev: the cache catalogue runs the same cases
	# against UCX's and libfabric's caches (tests/test_cache_{ucx,ofi}.c).
	[build]="cmake gcc make pkg-config liburing-dev libibverbs-dev dwarves groff-base librte-eal23 libucx-dev libfabric-dev"
	[bench]="fio util-linux python3-matplotlib"
	[format]="clang-format"
)

missing_packages() {
	local pkg
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
			grep -q "install ok installed" || echo "$pkg"
	done
}

main() {
	local want=() profile missing
	for profile in "$@"; do
		[[ -n "${PROFILE[$profile]:-}" ]] || {
			echo "deps.sh: unknown profile '$profile'" >&2
			exit 2
		}
		read -ra pkgs <<<"${PROFILE[$profile]}"
		want+=("${pkgs[@]}")
	done
	mapfile -t missing < <(missing_packages "${want[@]}")
	[[ ${#missing[@]} -eq 0 ]] && return 0
	if [[ $EUID -ne 0 ]]; then
		echo "deps.sh: missing ${missing[*]}; run as root or install them" >&2
		exit 1
	fi
	echo "deps.sh: installing ${missing[*]}"
	# apt's lists may be absent or stale on a fresh machine.
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

main "$@"
