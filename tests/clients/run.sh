#!/bin/bash
# Real clients in the qemu guest: QEMU starting a passthrough VM (VFIO
# type1 and iommufd) and fio with registered buffers, with their data,
# folios and pins checked (tests/clients/tests/).
#   tests/clients/run.sh BUILD_DIR [--tests "qemu-vfio fio-fixedbufs"]
#                        [mreg-vm run options: --kernel, --modules, --out...]
# On Debian's stock 6.12 by default; kernel/build.sh test passes its own.
# Environment for the tests: MREG_QEMU_RAM_MIB, MREG_QEMU_BACKINGS,
# MREG_FIO_MIB, MREG_FIO_FOLIOS (see each test).
set -euo pipefail

build=$(cd "${1:?usage: tests/clients/run.sh BUILD_DIR [options]}" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
payload=$build/clients-payload

make_payload() {
	local qemu
	qemu=$("$here/fetch-qemu.sh" "$build")
	rm -rf "$payload"
	mkdir -p "$payload"/{bin,tests,root/opt,root/mreg}
	cp "$build/tests/clients/pid-folios" "$build/tests/clients/uring-bad-register" \
		"$build"/libmreg.so.[0-9] "$payload/bin/"
	[ ! -x "$build/tools/trace/mreg-trace" ] || cp "$build/tools/trace/mreg-trace" "$payload/bin/"
	[ -z "${MREG_CLIENTS_BENCH:-}" ] || cp "$build/bench/mreg-bench" "$payload/bin/"
	cp "$here"/tests/* "$payload/tests/"
	# bench/clients.sh: the timed runs instead of the tests.
	[ -z "${MREG_CLIENTS_BENCH:-}" ] || cp "$here"/bench/* "$payload/tests/"
	cp "$here/guest/clients.sh" "$here/guest/ktrace-exec" "$payload/root/mreg/"
	cp -a "$qemu" "$payload/root/opt/qemu"
	cp "$build/tests/clients/edu-fw.bin" "$payload/root/opt/qemu/"
	# Settings the tests read, from this environment.
	local v
	for v in $(compgen -v | grep -E '^MREG_(QEMU|FIO)_'); do
		printf "%s='%s'\n" "$v" "${!v}"
	done >"$payload/root/mreg/clients.env"
}

make_payload
args=(--payload "$payload" --no-builtin --mem "${MREG_CLIENTS_MEM:-4G}")
[[ " $* " == *" --tests "* ]] || args+=(--tests "qemu-vfio fio-fixedbufs mreg-trace")
exec "$here/../guest/mreg-vm" run "${args[@]}" "$@"
