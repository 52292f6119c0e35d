// tests/fuzz/toml_implementation.cpp — toml++'s out-of-line code compiled into the fuzz target.
//
// Debian ships toml++ as a shared library, which the fuzzer's coverage and the sanitizers cannot see into.
// The fuzz build compiles its implementation here, instrumented like the rest; the executable's definitions
// take precedence over the library's at link time.
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
