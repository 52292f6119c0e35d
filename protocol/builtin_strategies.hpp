// protocol/builtin_strategies.hpp — the registry entries of the strategies lethe ships, one function per strategy,
// each defined in the strategy's own file under protocol/ next to its implementation.
//
// The registry (protocol/registry.cpp) calls them from its one list of built-ins, in the order the loader's
// "allowed:" message and strategy_names() show them. (Self-registering static initializers would be dropped with
// the unreferenced object files of a static library, hence the explicit list.)
//
// Does not: register anything itself.
#pragma once

#include "protocol/registry.hpp"

namespace lethe {

StrategyInfo none_strategy();
StrategyInfo check_then_insert_strategy();
StrategyInfo record_after_strategy();
StrategyInfo mnemosyne_strategy();
StrategyInfo inbox_strategy();
StrategyInfo saga_state_strategy();
StrategyInfo external_strategy();

}  // namespace lethe
