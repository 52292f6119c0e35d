# What `cmake --install` adds beside cmake/LetheInstall.cmake for the packages: the man page (compressed) and the
# documentation. The Debian packages (lethe, lethe-dev) are built from debian/ by dpkg-buildpackage
# (scripts/deb-build); scripts/deb-check installs them into a clean Debian 12 root and uses them there.
# REQUIRES: cmake/LetheInstall.cmake included before (GNUInstallDirs), docs/lethe.1 (scripts/man-page).

# The man page, compressed as Debian wants it (gzip -9n: no name or time stamp, so the same bytes every build).
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/lethe.1.gz
                   COMMAND sh -c [[gzip -9n -c "$0" > "$1"]] ${PROJECT_SOURCE_DIR}/docs/lethe.1
                           ${PROJECT_BINARY_DIR}/lethe.1.gz
                   DEPENDS ${PROJECT_SOURCE_DIR}/docs/lethe.1
                   COMMENT "Compressing the man page" VERBATIM)
add_custom_target(lethe-man-gz ALL DEPENDS ${PROJECT_BINARY_DIR}/lethe.1.gz)
install(FILES ${PROJECT_BINARY_DIR}/lethe.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# The documentation as the repository lays it out (README.md beside docs/), so that every relative link between
# them works in the installed tree too (scripts/doc-links checks it there).
install(FILES README.md CHANGELOG.md CONTRIBUTING.md SECURITY.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
