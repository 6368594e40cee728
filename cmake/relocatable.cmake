# Installed files find each other relative to where they land: mreg.pc
# through ${pcfiledir}, installed programs through $ORIGIN. So a tree put
# down by `cmake --install --prefix DIR` or staged under DESTDIR works
# where it is, whatever prefix the build was configured with.
#
# GNUInstallDirs gives LIBDIR lib/<multiarch> for prefix /usr on Debian
# and lib elsewhere, so the number of ../ is computed, not assumed. An
# absolute LIBDIR or INCLUDEDIR stays absolute: it says where, not how far.

# The relative path from directory @from to directory @to, both relative
# to the prefix, without a trailing slash ("." when they are the same).
function(mreg_relative_dir out from to)
  file(RELATIVE_PATH rel "/${from}" "/${to}")
  string(REGEX REPLACE "/$" "" rel "${rel}")
  if(rel STREQUAL "")
    set(rel ".")
  endif()
  set(${out} "${rel}" PARENT_SCOPE)
endfunction()

if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(MREG_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(MREG_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
  set(MREG_INSTALL_RPATH "${CMAKE_INSTALL_LIBDIR}")
else()
  mreg_relative_dir(up "${CMAKE_INSTALL_LIBDIR}/pkgconfig" "")
  set(MREG_PC_PREFIX "\${pcfiledir}/${up}")
  set(MREG_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  mreg_relative_dir(bin_to_lib "${CMAKE_INSTALL_BINDIR}" "${CMAKE_INSTALL_LIBDIR}")
  set(MREG_INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(MREG_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(MREG_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
