// runner/output_path.hpp — an output file checked before any work that would be lost if it cannot be written.
//
// prepare_output_path() creates the file's folder (and its parents) and checks that the file itself can be
// opened for writing, so `lethe suite DIR --junit out/junit.xml` fails in its first second, not after every
// seed has run. A file that did not exist is removed again after the check; an existing one is left as it was.
//
// Does not: write the content (reports/output_file.hpp does, and checks that write again).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace runner {

// "" when `path` can be written (its folder now exists), otherwise one sentence naming the flag and the path:
// "--junit out/x.xml: cannot create the folder out: Permission denied". An empty path is "".
std::string prepare_output_path(const std::filesystem::path& path, std::string_view flag);

}  // namespace runner
