# The reference pages generated from their tables (scenario/reference.hpp): `cmake --build build --target
# scenario-reference` rewrites docs/scenario-reference.md and docs/result-fields.md, and a test for each fails
# when the committed page differs from what its table gives.
add_executable(lethe_reference scenario/reference/main.cpp)
target_link_libraries(lethe_reference PRIVATE lethe_scenario)
add_custom_target(scenario-reference
  COMMAND lethe_reference scenario --write ${PROJECT_SOURCE_DIR}/docs/scenario-reference.md
  COMMAND lethe_reference results --write ${PROJECT_SOURCE_DIR}/docs/result-fields.md
  COMMENT "Writing docs/scenario-reference.md and docs/result-fields.md from their tables")
add_test(NAME scenario_reference_is_current
         COMMAND lethe_reference scenario --check ${PROJECT_SOURCE_DIR}/docs/scenario-reference.md)
add_test(NAME result_fields_reference_is_current
         COMMAND lethe_reference results --check ${PROJECT_SOURCE_DIR}/docs/result-fields.md)
