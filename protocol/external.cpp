// protocol/external.cpp — the registry entry of protocol.kind "external": the consumers are the user's own
// processes (docs/external.md), run by the world (world/external_node.hpp), not a Strategy of this folder.
//
// The entry says what the judgement may conclude about code lethe does not know: any decision basis the world
// infers from the node's store traffic, and any cause a duplicate may have (the oracle names it from what it
// observed, or not_attributable when the observations cannot tell).
#include <memory>
#include <stdexcept>

#include "protocol/builtin_strategies.hpp"

namespace lethe {

StrategyInfo external_strategy() {
  StrategyInfo info;
  info.name = "external";
  info.description = "your own consumer: one OS process per consumer node, speaking lethe's turn protocol";
  // The world runs the nodes itself; a Strategy made from this entry would be lethe's bug (exit code 3).
  info.factory = [](const ProtocolSection&, StoreClient&, Clock&, ProtocolHooks&,
                    sim::Rng) -> std::unique_ptr<Strategy> {
    throw StrategyContractError("protocol.kind \"external\" runs the scenario's [external] command, not a strategy");
  };
  info.bases = {Basis::Unprotected,    Basis::Absent,         Basis::Completed,     Basis::ExpiredCompleted,
                Basis::InFlightRecent, Basis::StaleTakeover,  Basis::TakeoverLost,  Basis::MaxWaitProcess,
                Basis::MaxWaitError,   Basis::StoreUnavailable, Basis::InboxDuplicate, Basis::WeakStore};
  info.decisions_inferred = true;
  info.windows = {
      {Cause::Unprotected, WindowOpens::Always, {}, "the node ran the effect without a start write that applied"},
      {Cause::TakeoverWhileAlive, WindowOpens::Always, {}, "the node took over a record whose owner was alive"},
      {Cause::HerdTakeover, WindowOpens::Always, {}, "several attempts took over the same stale record"},
      {Cause::CrashAfterEffect, WindowOpens::Always, {}, "the owner died between its effect and its completion"},
      {Cause::CompletionLost, WindowOpens::Always, {}, "the owner answered, but no completion write of it landed"},
      {Cause::Expired, WindowOpens::Always, {}, "the record was gone (TTL) when the node wrote its start"},
      {Cause::CapacityEvicted, WindowOpens::Always, {},
       "a bounded store (store.capacity) had evicted the record for room when the node wrote its start"},
      {Cause::WeakStore, WindowOpens::Always, {},
       "seq-kv or lww-kv gave the node a stale answer (they are not linearizable): two claims both held"},
      {Cause::NotAttributable, WindowOpens::Always, {},
       "the node ran the effect after store traffic lethe cannot read as a decision (no start write it recognises)"},
  };
  return info;
}

}  // namespace lethe
