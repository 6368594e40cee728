#!/usr/bin/env bash
# Run the harness's built-in guest tests (rxe, vfio, nullblk, mthp) on
# Debian's stock 6.12 kernel.  Exit 0 pass, 1 fail, 77 qemu unavailable.
# This is what ctest runs under the "vm" label.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
out=${MREG_BUILD_DIR:-$here/../../build}/guest/selftest
exec "$here/mreg-vm" run --out "$out" --timeout "${MREG_VM_TIMEOUT:-600}" "$@"
