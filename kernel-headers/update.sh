#!/bin/bash
# Refresh the kernel uapi headers mreg builds against, from Debian's
# linux-headers-<ver>-common package (as rdma-core keeps kernel-headers/).
# Debian 12's linux-libc-dev is 6.1: it has no iommufd.h and no VFIO cdev.
#   kernel-headers/update.sh [6.12.117+deb12]
set -euo pipefail

ver=${1:-6.12.117+deb12}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$tmp"
apt-get download "linux-headers-$ver-common" >/dev/null
dpkg-deb -x ./*.deb root
src=root/usr/src/linux-headers-$ver-common/include/uapi/linux
# The uapi tree is pre-install: apply what scripts/headers_install.sh does.
for h in iommufd.h vfio.h; do
	sed -E -e 's/([[:space:](])(__user|__force|__iomem)[[:space:]]/\1/g' \
		-e 's@^#include <linux/compiler(|_types).h>@@' \
		-e 's@#(ifndef|define|endif[[:space:]]*/[*])[[:space:]]*_UAPI@#\1 @' \
		"$src/$h" >"$here/linux/$h"
done
echo "updated kernel-headers/linux/{iommufd,vfio}.h from $ver"
