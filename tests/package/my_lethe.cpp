// my-lethe: the whole lethe command line from a program of its own (runner/cli.hpp). A program that adds
// strategies or sinks registers them here, before the call.
#include <lethe/runner/cli.hpp>

int main(int argc, char** argv) { return runner::run_command_line(argc, argv); }
