# `cmake --install BUILD --prefix P`: the lethe binary, the static libraries, the public headers, the scenario
# library, the CMake package (lethe-config.cmake, its version file, the exported targets) and lethe.pc.
#
#   P/bin/lethe
#   P/lib/liblethe_*.a
#   P/include/lethe/<folder>/*.hpp        the public headers (LETHE_PUBLIC_HEADERS below; docs/architecture.md)
#   P/share/lethe/scenarios/              every scenario of scenarios/
#   P/share/lethe/examples/external/      the node libraries and example nodes (the external scenarios run them)
#   P/lib/cmake/lethe/                    find_package(lethe CONFIG): lethe::lethe and one target per library
#   P/lib/pkgconfig/lethe.pc              pkg-config --cflags --libs lethe
#
# The headers include each other as "protocol/env.hpp": the exported include directories are P/include/lethe
# (for those) and P/include (for a user's <lethe/protocol/strategies.hpp>).
# REQUIRES: the lethe_* library targets and the lethe executable exist (the top CMakeLists.txt).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(LETHE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/lethe)
set(LETHE_INSTALL_SCENARIOSDIR ${CMAKE_INSTALL_DATADIR}/lethe/scenarios)
# The headers a library user includes (registering a strategy, source or effect provider, loading and running a
# scenario, the checker, a command line of its own) and every header they include: nothing else is installed.
# tests/package and examples/fencing-lease build against them; scripts/package-check compiles each one alone
# against the installed prefix, so a public header that starts including an uninstalled one fails there.
set(LETHE_PUBLIC_HEADERS
    check/ledger.hpp check/linearizability.hpp check/linearizability_batch.hpp check/linearizability_core.hpp
    check/linearizability_incremental.hpp check/store_model.hpp check/weak_kv.hpp
    core/btree.hpp core/config.hpp core/registry.hpp core/result.hpp core/settings.hpp
    external/child_process.hpp external/node_clock.hpp external/stillness.hpp
    protocol/decision.hpp protocol/env.hpp protocol/registry.hpp protocol/store_ops.hpp protocol/strategies.hpp
    protocol/strategy_support.hpp
    runner/cli.hpp
    scenario/loader.hpp
    sim/distribution.hpp sim/network.hpp sim/node.hpp sim/random.hpp sim/scheduler.hpp sim/simulation.hpp sim/time.hpp
    sim/timer_queue.hpp sim/trace.hpp
    world/counterfactual.hpp world/external_services.hpp world/external_shared.hpp world/retry.hpp world/sink.hpp
    world/world.hpp)

# The libraries by their exported names (lethe::<name>), each after every library it depends on.
set(LETHE_PACKAGE_LIBRARIES sim_values sim core protocol check external world scenario reports live runner)

foreach(name ${LETHE_PACKAGE_LIBRARIES})
  set_target_properties(lethe_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(lethe_${name} INTERFACE
                             "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/lethe>"
                             "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
endforeach()
# sim/trace.hpp reads it: an installed package built without the trace hash says so to its users.
if(NOT LETHE_TRACE_HASH)
  target_compile_definitions(lethe_sim_values INTERFACE "$<INSTALL_INTERFACE:LETHE_NO_TRACE_HASH>")
endif()

# lethe::lethe: every library.
add_library(lethe_package INTERFACE)
set_target_properties(lethe_package PROPERTIES EXPORT_NAME lethe)
list(TRANSFORM LETHE_PACKAGE_LIBRARIES PREPEND lethe_ OUTPUT_VARIABLE LETHE_LIBRARY_TARGETS)
target_link_libraries(lethe_package INTERFACE ${LETHE_LIBRARY_TARGETS})
add_library(lethe::lethe ALIAS lethe_package)
# What the packages hold, without the tests (debian/rules builds it with lethe and lethe-man-gz).
add_custom_target(lethe-libraries DEPENDS ${LETHE_LIBRARY_TARGETS})

if(TARGET lethe)
  install(TARGETS lethe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
# Where find_vclock_library (external/node_clock.hpp) looks for it, relative to the installed binary.
install(TARGETS lethe_vclock LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/lethe)
install(TARGETS ${LETHE_LIBRARY_TARGETS} lethe_package EXPORT lethe-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(header ${LETHE_PUBLIC_HEADERS})
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lethe/${folder})
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/generated/core/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lethe/core)
install(DIRECTORY scenarios/ DESTINATION ${LETHE_INSTALL_SCENARIOSDIR})
# Beside scenarios/, so that an external scenario's command ("../examples/external/...") runs from the install.
install(DIRECTORY examples/external/ DESTINATION ${CMAKE_INSTALL_DATADIR}/lethe/examples/external)

install(EXPORT lethe-targets NAMESPACE lethe:: DESTINATION ${LETHE_INSTALL_CMAKEDIR} FILE lethe-targets.cmake)
configure_package_config_file(cmake/lethe-config.cmake.in ${PROJECT_BINARY_DIR}/lethe-config.cmake
                              INSTALL_DESTINATION ${LETHE_INSTALL_CMAKEDIR} PATH_VARS LETHE_INSTALL_SCENARIOSDIR)
# 0.x: a new minor version may change the scenario language or the result fields.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lethe-config-version.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lethe-config.cmake ${PROJECT_BINARY_DIR}/lethe-config-version.cmake
        DESTINATION ${LETHE_INSTALL_CMAKEDIR})

# lethe.pc: static libraries, so Libs names every one (dependents first) and every dependency is in Requires
# (Boost.Fiber and Boost.Context have no .pc file). The prefix is found from the .pc file's own place.
set(LETHE_PC_REQUIRES "fmt nlohmann_json absl_btree absl_inlined_vector libpq hiredis")
set(LETHE_PC_LIBS "")
list(REVERSE LETHE_LIBRARY_TARGETS)
foreach(target ${LETHE_LIBRARY_TARGETS})
  string(APPEND LETHE_PC_LIBS "-l${target} ")
endforeach()
string(APPEND LETHE_PC_LIBS "-lboost_fiber -lboost_context -pthread")
file(RELATIVE_PATH LETHE_PC_PREFIX_FROM_PCFILEDIR /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" LETHE_PC_PREFIX_FROM_PCFILEDIR "${LETHE_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(cmake/lethe.pc.in ${PROJECT_BINARY_DIR}/lethe.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/lethe.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
