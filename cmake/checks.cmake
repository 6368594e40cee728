# Checks of the kernel-side parts, run by ctest next to the library's tests.
# Each script installs what it needs; see kmod/README.md and kernel/.

# mreg.ko against Debian's 6.12 headers, warning-free (W=1, -Werror), and
# checkpatch --strict on its sources.
add_test(NAME kmod_build COMMAND ${PROJECT_SOURCE_DIR}/kmod/build.sh all)
set_tests_properties(kmod_build PROPERTIES TIMEOUT 900 LABELS kmod)

# The module's guest suite on stock 6.12 (pins vs pagemap, fork, munmap,
# races, memlock, fuzz, ...), after it is built.
add_test(NAME guest_kmod COMMAND ${PROJECT_SOURCE_DIR}/kmod/tests/run-guest.sh
  --out ${PROJECT_BINARY_DIR}/kmod-results)
set_tests_properties(guest_kmod PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 2400 LABELS "vm;kmod" RESOURCE_LOCK qemu
  DEPENDS kmod_build)

# The same on Debian 12's default 6.1, the module built by its headers.
add_test(NAME guest_kmod_6.1 COMMAND ${PROJECT_SOURCE_DIR}/kmod/tests/run-guest.sh
  --stock 6.1 --out ${PROJECT_BINARY_DIR}/kmod-results-6.1)
set_tests_properties(guest_kmod_6.1 PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 2400 LABELS "vm;kmod" RESOURCE_LOCK qemu
  DEPENDS kmod_build)

# The README's kernel support table is the one make test-kernels wrote.
add_test(NAME support_table
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/support-table.sh check)
set_tests_properties(support_table PROPERTIES LABELS host)

# The GUP batching series: applies to a clean 6.12.117 tree, each patch
# builds the objects it touches, checkpatch --strict.
add_test(NAME kernel_series COMMAND ${PROJECT_SOURCE_DIR}/kernel/build.sh check)
set_tests_properties(kernel_series PROPERTIES TIMEOUT 2400 LABELS kernel)

# The harness checks itself: a warning, a leaked pin, a timeout, a panic
# and a hang must each come back as a failure, 77 as a skip.
add_test(NAME guest_harness COMMAND ${PROJECT_SOURCE_DIR}/tests/guest/harness-check.sh)
set_tests_properties(guest_harness PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 1200 LABELS vm RESOURCE_LOCK qemu
  ENVIRONMENT MREG_BUILD_DIR=${PROJECT_BINARY_DIR})
