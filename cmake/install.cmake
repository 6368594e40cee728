# The installed tree, used as an application would use it: every exported
# symbol has its man page and every page renders cleanly, programs build
# with `pkg-config mreg` and with find_package(mreg) and run against the
# installed library alone, and the installed mreg-bench runs; the same
# for a DESTDIR-staged copy. scripts/check-install.sh says how.
if(MREG_BUILD_BENCH)
  set(check_install_bench 1)
else()
  set(check_install_bench 0)
endif()
add_test(NAME check_install
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-install.sh
          ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR})
set_tests_properties(check_install PROPERTIES
  SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS host
  ENVIRONMENT "CMAKE=${CMAKE_COMMAND};CC=${CMAKE_C_COMPILER};MREG_VERSION=${PROJECT_VERSION};MREG_PREFIX=${CMAKE_INSTALL_PREFIX};MREG_BINDIR=${CMAKE_INSTALL_BINDIR};MREG_MANDIR=${CMAKE_INSTALL_MANDIR};MREG_BENCH=${check_install_bench}")
