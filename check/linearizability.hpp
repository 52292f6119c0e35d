// check/linearizability.hpp — both linearizability checkers: the batch one (check/linearizability_batch.hpp) and
// the incremental one (check/linearizability_incremental.hpp). Include only the one you need, or
// check/linearizability_core.hpp for the types alone.
#pragma once

#include "check/linearizability_batch.hpp"
#include "check/linearizability_incremental.hpp"
