# Sourced by scripts/test --sanitize and scripts/fuzz: the one sanitizer build both use, build-asan/.
# clang 14 under ASan+UBSan at -O1, every library instrumented for libFuzzer's coverage (LETHE_FUZZ), so the same
# objects serve the sanitizer tests and the two fuzz targets. LETHE_UNITY compiles the sources of each library and
# each test program in batches, one translation unit each (CMake's unity build): the headers are parsed once per batch.
sanitizer_build=build-asan
sanitizer_flags=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g -O1" -DCMAKE_CXX_COMPILER=clang++-14
                 -DLETHE_SANITIZE=ON -DLETHE_FUZZ=ON -DLETHE_BENCHMARKS=OFF -DLETHE_MIMALLOC=OFF
                 -DLETHE_UNITY=ON)
