#!/bin/bash
# Build the library and its host tests with a sanitizer and run them:
#   scripts/sanitize.sh thread|address SRC BUILD
# "address" is ASan with UBSan. Any report fails the run: the runtimes
# are told to stop at the first one and exit non-zero.
set -euo pipefail

mode=${1:?usage: sanitize.sh thread|address SRC BUILD}
src=${2:?}
out=${3:?}
case "$mode" in
thread) flags="-fsanitize=thread" ;;
address) flags="-fsanitize=address,undefined -fno-sanitize-recover=all" ;;
*) echo "sanitize.sh: unknown mode $mode" >&2 && exit 2 ;;
esac

cmake -S "$src" -B "$out" -DMREG_WERROR=ON -DMREG_BUILD_BENCH=OFF \
	-DCMAKE_BUILD_TYPE=Debug -DMREG_SANITIZE_RUN=ON \
	-DCMAKE_C_FLAGS="$flags -fno-omit-frame-pointer -O1" \
	-DCMAKE_EXE_LINKER_FLAGS="$flags" \
	-DCMAKE_SHARED_LINKER_FLAGS="$flags" >/dev/null
cmake --build "$out" -j"$(nproc)" >/dev/null

export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
export ASAN_OPTIONS="halt_on_error=1 detect_leaks=1 exitcode=66"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1 exitcode=66"
# The soak and the kill test are about the kernel; a few seconds of each
# is enough for the library's part under a sanitizer.
export MREG_SOAK_SECONDS=5 MREG_KILL_MB=256
# check_install builds programs against the installed library without
# the sanitizer runtime: it checks packaging, not memory or races.
ctest --test-dir "$out" -L host -E check_install --output-on-failure
