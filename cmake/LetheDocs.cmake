# The docs against the binary: every command shown under <!-- lethe-example --> in README.md and docs/*.md is
# run and its output compared exactly (scripts/doc-examples), so a shown output cannot go stale; the second test
# checks that the comparison catches an edited output line.
# REQUIRES: the lethe executable target (the top CMakeLists.txt).
find_program(LETHE_PYTHON3 python3 REQUIRED)
add_test(NAME docs_examples_print_what_the_docs_show
         COMMAND ${LETHE_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/doc-examples $<TARGET_FILE:lethe>)
add_test(NAME docs_examples_check_catches_an_edited_output
         COMMAND ${LETHE_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/doc-examples $<TARGET_FILE:lethe> --self-test)

# The man page, generated from `lethe --help-all` (scripts/man-page): `cmake --build build --target man-page`
# rewrites docs/lethe.1, and a test fails when the committed page differs from what the binary's help gives.
add_custom_target(man-page
  COMMAND ${LETHE_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/man-page $<TARGET_FILE:lethe> --write
          ${PROJECT_SOURCE_DIR}/docs/lethe.1
  DEPENDS lethe
  COMMENT "Writing docs/lethe.1 from lethe --help-all")
add_test(NAME man_page_is_current
         COMMAND ${LETHE_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/man-page $<TARGET_FILE:lethe> --check
                 ${PROJECT_SOURCE_DIR}/docs/lethe.1)

# docs/cli.md against the binary (scripts/cli-doc-check): every option of every command has a row in its
# command's table and every row names a real option; the exit-code rows start with what `lethe --help` says.
add_test(NAME cli_doc_lists_every_option
         COMMAND ${LETHE_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/cli-doc-check $<TARGET_FILE:lethe>
                 ${PROJECT_SOURCE_DIR}/docs/cli.md)

# `cmake --build build --target docs` regenerates every generated file of docs/: the scenario reference and the
# result fields (scenario-reference), the result schema (the schema test with LETHE_UPDATE_SCHEMA=1), the cause
# sections of docs/results.md (the cause-docs test with LETHE_UPDATE_DOCS=1) and the man page (man-page). Each has a test that fails while the committed file is stale.
if(TARGET lethe_reference)
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -E env LETHE_UPDATE_SCHEMA=1 $<TARGET_FILE:reports_tests>
            --gtest_filter=ResultSchema.TheCommittedSchemaIsWhatTheResultFieldTableGives
    COMMAND ${CMAKE_COMMAND} -E env LETHE_UPDATE_DOCS=1 $<TARGET_FILE:check_tests> --gtest_filter=CauseDocs.*
    COMMAND ${LETHE_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/man-page $<TARGET_FILE:lethe> --write
            ${PROJECT_SOURCE_DIR}/docs/lethe.1
    DEPENDS scenario-reference reports_tests check_tests lethe
    COMMENT "Writing docs/scenario-reference.md, docs/result-fields.md, docs/result.schema.json, docs/results.md's cause sections and docs/lethe.1"
    VERBATIM)
endif()
