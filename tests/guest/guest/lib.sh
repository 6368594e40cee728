# Helpers for guest tests: ". /mreg/lib.sh" from a busybox sh test.
# shellcheck shell=dash
# Exit codes follow the harness: 0 pass, 1 fail, 77 skip.

skip() {
	echo "SKIP: $*"
	exit 77
}

fail() {
	echo "FAIL: $*"
	exit 1
}

# Load modules in order, each with its modules.dep dependencies.  A module
# that is missing but built in (=y) is fine; otherwise the caller decides,
# usually by probing the feature and skipping.
load_modules() {
	local m err
	for m in "$@"; do
		[ -d "/sys/module/$m" ] && continue
		err=$(modprobe "$m" 2>&1) && continue
		builtin_module "$m" && continue
		echo "modprobe $m: ${err:-not available}"
		return 1
	done
}

builtin_module() {
	grep -qE "/$(echo "$1" | sed 's/[-_]/[-_]/g')\.ko\$" \
		"/lib/modules/$(uname -r)/modules.builtin" 2>/dev/null
}

# Write a JSON result file that comes back to the host in OUT/results.
result_file() { echo "$MREG_OUT/$1"; }

# Soft-RoCE: rxe0 on the first netdev that takes it (lo, then dummy0).
# rxe computes its ICRC through the crypto API's "crc32" up to 6.x, which
# is not a modules.dep edge: the generic implementation is loaded first
# where there is one (7.x's rxe calls the crc32 library directly). Skips
# the test when the kernel has no rxe.
rxe_up() {
	local dev
	load_modules crc32_generic >/dev/null 2>&1 || true
	load_modules ib_core ib_uverbs rdma_rxe || true
	[ -d /sys/class/infiniband_verbs ] || skip "kernel has no ib_uverbs"
	[ -d /sys/class/infiniband/rxe0 ] && return 0
	for dev in lo dummy0; do
		rdma link add rxe0 type rxe netdev "$dev" 2>&1 &&
			echo "rxe0 on $dev" && return 0
	done
	skip "rdma link add rxe0 failed on lo and dummy0 (no rxe?)"
}

# GID 0 is the link-local one, which has no route on lo; the RoCE v2 GID
# of an IPv4 address (::ffff:a.b.c.d) of the netdev is used instead.
rxe_gid_index() {
	local g n
	for g in /sys/class/infiniband/rxe0/ports/1/gids/*; do
		n=${g##*/}
		grep -q '^0000:0000:0000:0000:0000:ffff:' "$g" 2>/dev/null || continue
		grep -q 'v2' "/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$n" 2>/dev/null &&
			echo "$n" && return 0
	done
	return 1
}
