// tests/fuzz/node_fuzz_node.cpp — the external node of the node fuzz target (node_fuzzer.cpp): it answers each
// line lethe writes with the next chunk of a file, whatever the chunk holds.
//
// Usage: node_fuzz_node FILE. FILE is cut into chunks at every 0x1e byte (ASCII's record separator). The first
// line lethe writes (init) gets chunk 0, each later line the next chunk; past the last chunk the node starts
// again at chunk 1, so a conversation of one delivery (its requests and the deliver_ok) repeats for every
// delivery. A chunk is written as it is, newlines included, except for these marks, filled in from what lethe
// wrote:
//   @N  the node id (init's node_id)            @T  the turn of the line just read
//   @M  the msg_id of the line just read         @V  its time_ns
//   @R  its body's "value" (JSON; null if none)  @D  the msg_id of the latest deliver
//   @A  the latest deliver's attempt              @G  its message
//   @P  its processor (JSON)                      @L  16 MiB + 1 bytes of 'x' (a line longer than lethe reads)
//   @E  what follows in the chunk goes to stderr  @X  exit now (status 3), after what came before
// Any other byte after @ is written as it is.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using Json = nlohmann::json;

struct Seen {
  std::string node;
  std::string turn = "0";
  std::string msg_id = "null";
  std::string time_ns = "0";
  std::string value = "null";
  std::string deliver = "null";
  std::string attempt = "null";
  std::string message = "null";
  std::string processor = "null";
};

void write_all(int fd, const std::string& text) {
  std::size_t at = 0;
  while (at < text.size()) {
    const ssize_t wrote = ::write(fd, text.data() + at, text.size() - at);
    if (wrote <= 0) std::_Exit(0);  // lethe ended the node
    at += static_cast<std::size_t>(wrote);
  }
}

std::string field(const Json& object, const char* name, const std::string& otherwise) {
  if (!object.is_object() || !object.contains(name)) return otherwise;
  const Json& value = object[name];
  return value.is_string() ? value.get<std::string>() : value.dump();
}

void read_line(const std::string& line, Seen& seen) {
  const Json envelope = Json::parse(line, nullptr, false);
  if (!envelope.is_object()) return;
  const Json body = envelope.value("body", Json::object());
  seen.turn = field(envelope, "turn", seen.turn);
  seen.time_ns = field(envelope, "time_ns", seen.time_ns);
  seen.msg_id = field(body, "msg_id", "null");
  seen.value = body.is_object() && body.contains("value") ? body["value"].dump() : "null";
  const std::string type = field(body, "type", "");
  if (type == "init") seen.node = field(body, "node_id", seen.node);
  if (type == "deliver") {
    seen.deliver = seen.msg_id;
    seen.attempt = field(body, "attempt", "null");
    seen.message = field(body, "message", "null");
    seen.processor = body.contains("processor") ? body["processor"].dump() : "null";
  }
}

// Writes `chunk` with its marks filled in.
void answer(const std::string& chunk, const Seen& seen) {
  std::string out;
  int fd = 1;
  for (std::size_t i = 0; i < chunk.size(); ++i) {
    const char mark = chunk[i] == '@' && i + 1 < chunk.size() ? chunk[i + 1] : '\0';
    const std::string* with = mark == 'N' ? &seen.node : mark == 'T' ? &seen.turn : mark == 'M' ? &seen.msg_id
                              : mark == 'V' ? &seen.time_ns : mark == 'R' ? &seen.value : mark == 'D' ? &seen.deliver
                              : mark == 'A' ? &seen.attempt : mark == 'G' ? &seen.message
                              : mark == 'P' ? &seen.processor : nullptr;
    if (with != nullptr) {
      out += *with;
    } else if (mark == 'L') {
      out.append((std::size_t{16} << 20) + 1, 'x');
    } else if (mark == 'E') {
      write_all(fd, out);
      out.clear();
      fd = 2;
    } else if (mark == 'X') {
      write_all(fd, out);
      std::_Exit(3);
    } else {
      out += chunk[i];
      continue;
    }
    ++i;
  }
  write_all(fd, out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: node_fuzz_node FILE\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  const std::string input((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> chunks(1);
  for (const char c : input) {
    if (c == '\x1e') {
      chunks.emplace_back();
    } else {
      chunks.back() += c;
    }
  }
  Seen seen;
  std::size_t next = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    read_line(line, seen);
    answer(chunks[next], seen);
    next = next + 1 < chunks.size() ? next + 1 : (chunks.size() > 1 ? 1 : 0);
  }
  return 0;
}
