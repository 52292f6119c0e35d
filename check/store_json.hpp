// check/store_json.hpp — one store operation and one reply as JSON objects, exactly the `op` and `reply` objects
// of lethe's JSON-lines store history (docs/formats.md, "Store histories"; check/history_lethe.cpp holds the one
// definition). External nodes (docs/external.md) speak the store service in them.
#pragma once

#include <nlohmann/json.hpp>

#include "protocol/store_ops.hpp"

namespace lethe::history {

nlohmann::json store_op_to_json(const Op& op);
nlohmann::json store_reply_to_json(const Reply& reply, bool transaction);
// Reads an `op` object; throws history::Error ("op: what was found; what was expected") when it is not one.
Op store_op_from_json(const nlohmann::json& object);

}  // namespace lethe::history
