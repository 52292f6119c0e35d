// world/names.hpp — the registered words of topology.source and sink.kind, for the scenario loader.
//
// A light header (no simulation types): the loader accepts exactly these words and lists them, in registration
// order, when a scenario names another one. They are the names of world/source.hpp's and world/sink.hpp's
// registries, built-ins first.
//
// Does not: register anything (register_source and register_sink do).
#pragma once

#include <string>
#include <vector>

namespace lethe {

std::vector<std::string> source_names();  // "kafka", "queue", "clients", then those registered at runtime
std::vector<std::string> sink_names();    // "counter", "payment", "email", then those registered at runtime

}  // namespace lethe
