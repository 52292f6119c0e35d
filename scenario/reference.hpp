// scenario/reference.hpp — the reference pages generated from the tables.
//
// docs/scenario-reference.md lists every table and key of a scenario file from the table of keys
// (scenario/schema.hpp): allowed values, default (the TOML of the default config's field), description, the
// cross-field rules and the keys each protocol kind requires. docs/result-fields.md lists every result field
// from lethe::result_fields(). `cmake --build build --target scenario-reference` rewrites both, and a test
// fails when a committed page differs from what the tables give.
//
// Does not: read or write files (scenario/reference/main.cpp does).
#pragma once

#include <string>
#include <vector>

namespace scenario {

// One key as the page shows it.
struct KeyReference {
  std::string table;          // "run", "network.partition" (an array of tables), "expect"
  bool array = false;         // the table is an array of tables ([[table]])
  std::string key;            // "seeds"
  std::string allowed;        // what the loader accepts, as its messages say it
  std::string default_value;  // TOML text, "required", "required in every entry" or "absent"
  std::string description;
};

// Every key of the table of keys, in its order, then the default protocol kind's keys (table "protocol").
std::vector<KeyReference> scenario_key_references();

std::string scenario_reference_markdown();
std::string result_fields_markdown();

}  // namespace scenario
