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
