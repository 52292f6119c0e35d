include(GoogleTest)

# lethe_add_test(NAME SOURCES... LIBS lib...)
# One GoogleTest (+RapidCheck) executable; every TEST in it becomes a ctest test.
# Convention: a test suite whose name contains "Slow" is left out of the sanitizer run.
function(lethe_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  # rapidcheck_gtest does not link GTest itself (Debian package).
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} rapidcheck_gtest rapidcheck GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE LETHE_SOURCE_DIR="${PROJECT_SOURCE_DIR}" LETHE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  add_dependencies(${name} lethe_vclock)  # the tests of external nodes preload it
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
endfunction()

# lethe_add_benchmark(NAME SOURCES... LIBS lib...)
function(lethe_add_benchmark name)
  if(NOT LETHE_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} benchmark::benchmark)
endfunction()
