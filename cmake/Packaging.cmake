# The Debian package: `cd BUILD && cpack -G DEB` writes BUILD/lethe_<version>_amd64.deb with what
# `cmake --install` installs (cmake/LetheInstall.cmake: the binary, libraries, headers, CMake package, lethe.pc,
# the scenario library under /usr/share/lethe/scenarios), plus the docs under /usr/share/doc/lethe and the man
# page. Depends: the Debian 12 runtime libraries the binary links, as dpkg-shlibdeps finds them; Recommends: the
# programs lethe runs for pictures (dot, gnuplot), the interpreters of the example external nodes (python3,
# nodejs) and the -dev packages the installed headers include, which building against the package needs.
# scripts/deb-check builds, installs, uses and removes it.
# REQUIRES: cmake/LetheInstall.cmake included before (GNUInstallDirs), docs/lethe.1 (scripts/man-page).

# The man page, compressed as Debian wants it (gzip -9n: no name or time stamp, so the same bytes every build).
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/lethe.1.gz
                   COMMAND sh -c [[gzip -9n -c "$0" > "$1"]] ${PROJECT_SOURCE_DIR}/docs/lethe.1
                           ${PROJECT_BINARY_DIR}/lethe.1.gz
                   DEPENDS ${PROJECT_SOURCE_DIR}/docs/lethe.1
                   COMMENT "Compressing the man page" VERBATIM)
add_custom_target(lethe-man-gz ALL DEPENDS ${PROJECT_BINARY_DIR}/lethe.1.gz)
install(FILES ${PROJECT_BINARY_DIR}/lethe.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

file(GLOB LETHE_DOC_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md ${PROJECT_SOURCE_DIR}/docs/*.json)
install(FILES README.md ${LETHE_DOC_FILES} DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME lethe)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "lethe developers <lethe@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "deterministic simulation testbed for effectively-once message processing")
string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "lethe simulates consumers, lossy networks, lost ACKs, crashes, pauses, clock skew and rebalances in\n"
    "virtual time against a dedupe strategy, and counts and explains every duplicate and lost message.\n"
    "This package holds the lethe command, its scenario library, its man page and documentation, and the\n"
    "static libraries, headers and CMake package to build extensions against.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "graphviz, gnuplot-nox, python3, nodejs, build-essential, cmake, pkg-config, libboost-fiber-dev, libboost-context-dev, libfmt-dev, nlohmann-json3-dev, libcli11-dev, libabsl-dev, libpq-dev, libhiredis-dev")
set(CPACK_STRIP_FILES ON)
include(CPack)
