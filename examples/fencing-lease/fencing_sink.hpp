// fencing_sink.hpp — "fencing-payment": a payment provider that refuses calls carrying a stale fencing token.
//
// The provider remembers, per (message id, processor), the newest fencing token it has executed a call for.
// A call whose token is older than that is refused (nothing is charged; the caller is told and does not
// retry); any other call charges, and its value is the provider's running count of charges, as the built-in
// "payment" provider's is. A call without a token (0) is never refused: strategies that pass none are
// charged as by "payment".
//
// Does not: expire what it remembers, or fence across processors.
#pragma once

namespace fencing {

// Adds "fencing-payment" to lethe's sink registry. Call once, before any run.
void register_fencing_sink();

}  // namespace fencing
