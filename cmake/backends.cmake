# Optional backends: each is one file, built in when its dependency is here.
# verbs.c dlopens libibverbs.so.1 on first use, so libmreg does not need it
# at run time: only its headers are used here (tests link it themselves).
pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
if(IBVERBS_FOUND)
  list(APPEND MREG_BACKEND_SOURCES src/backends/verbs.c)
  set_source_files_properties(src/backends/verbs.c PROPERTIES
    INCLUDE_DIRECTORIES "${IBVERBS_INCLUDE_DIRS}"
    COMPILE_OPTIONS "${IBVERBS_CFLAGS_OTHER}")
  list(APPEND MREG_BACKEND_LIBS ${CMAKE_DL_LIBS})
  list(APPEND MREG_BACKEND_DEFS MREG_HAVE_VERBS)
  foreach(lib IN LISTS CMAKE_DL_LIBS)
    string(APPEND MREG_PC_PRIVATE_LIBS " -l${lib}")
  endforeach()
  message(STATUS "mreg: verbs backend (libibverbs ${IBVERBS_VERSION})")
else()
  message(STATUS "mreg: no libibverbs, verbs backend left out")
endif()

# VFIO and iommufd need only the kernel's uapi headers, vendored in
# kernel-headers/ because Debian 12's linux-libc-dev (6.1) lacks iommufd.
list(APPEND MREG_BACKEND_SOURCES src/backends/vfio.c src/backends/iommufd.c
     src/vfio_dev.c src/iova.c)
list(APPEND MREG_BACKEND_DEFS MREG_HAVE_VFIO)

# mreg.ko's ABI is our own include/uapi/mreg.h.
list(APPEND MREG_BACKEND_SOURCES src/backends/kmod.c)
list(APPEND MREG_BACKEND_DEFS MREG_HAVE_KMOD)

# DPDK: headers from libdpdk-dev, or unpacked by scripts/dpdk-dev.sh into
# MREG_DPDK_DEV (make deps does); dpdk.c dlopens librte_eal.so.23, so
# libmreg does not need DPDK at run time either.
set(MREG_DPDK_DEV "${PROJECT_SOURCE_DIR}/build/cache/dpdk-dev" CACHE PATH
    "Root of an unpacked libdpdk-dev (scripts/dpdk-dev.sh)")
find_path(MREG_DPDK_INCLUDE rte_eal.h
  PATHS ${MREG_DPDK_DEV}/usr/include/dpdk /usr/include/dpdk NO_DEFAULT_PATH)
if(MREG_DPDK_INCLUDE)
  set(MREG_DPDK_INCLUDES ${MREG_DPDK_INCLUDE}
      ${MREG_DPDK_INCLUDE}/../${CMAKE_LIBRARY_ARCHITECTURE}/dpdk)
  list(APPEND MREG_BACKEND_SOURCES src/backends/dpdk.c)
  # System headers: their warnings are DPDK's, not ours.
  set(dpdk_flags -include rte_config.h)
  foreach(dir IN LISTS MREG_DPDK_INCLUDES)
    list(PREPEND dpdk_flags -isystem ${dir})
  endforeach()
  set_source_files_properties(src/backends/dpdk.c PROPERTIES
    COMPILE_OPTIONS "${dpdk_flags}")
  list(APPEND MREG_BACKEND_DEFS MREG_HAVE_DPDK)
  if(NOT CMAKE_DL_LIBS IN_LIST MREG_BACKEND_LIBS)
    list(APPEND MREG_BACKEND_LIBS ${CMAKE_DL_LIBS})
  endif()
  message(STATUS "mreg: dpdk backend (headers in ${MREG_DPDK_INCLUDE})")
else()
  message(STATUS "mreg: no DPDK headers (scripts/dpdk-dev.sh), dpdk backend left out")
endif()
