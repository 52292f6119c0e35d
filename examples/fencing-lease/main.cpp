// fencing-lethe: the lethe command line with one more strategy ("fenced-lease") and one more provider
// ("fencing-payment"), registered before anything runs. Every lethe subcommand works as in the lethe binary:
//   fencing-lethe run fencing-lease.toml --seed 1
//   fencing-lethe suite fencing-lease.toml --seeds 5
#include <lethe/runner/cli.hpp>

#include "fencing_sink.hpp"
#include "lease_strategy.hpp"

int main(int argc, char** argv) {
  fencing::register_lease_strategy();
  fencing::register_fencing_sink();
  return runner::run_command_line(argc, argv);
}
