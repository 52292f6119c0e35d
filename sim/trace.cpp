#include "sim/trace.hpp"

#include <algorithm>
#include <array>
#include <ostream>

namespace sim {

namespace {
void write_json_string(std::ostream& out, std::string_view text) {
  out << '"';
  for (char c : text) {
    switch (c) {
      case '"': out << "\\\""; break;
      case '\\': out << "\\\\"; break;
      case '\n': out << "\\n"; break;
      case '\t': out << "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char* hex = "0123456789abcdef";
          out << "\\u00" << hex[(c >> 4) & 0xf] << hex[c & 0xf];
        } else {
          out << c;
        }
    }
  }
  out << '"';
}
}  // namespace

void Trace::write_field(std::ostream& o, std::string_view field, char letter, std::uint64_t value) const {
  if (field.empty()) {
    if (value != 0) o << ",\"" << letter << "\":" << value;  // unnamed: written only when it says something
    return;
  }
  if (const auto slash = field.find('/'); slash != std::string_view::npos) {
    o << ',';
    write_json_string(o, field.substr(0, slash));
    o << ':' << (value >> 32) << ',';
    write_json_string(o, field.substr(slash + 1));
    o << ':' << (value & 0xffffffffull);
    return;
  }
  constexpr std::string_view kNodeSuffix = "_node";
  if (field.size() > kNodeSuffix.size() && field.substr(field.size() - kNodeSuffix.size()) == kNodeSuffix) {
    o << ',';
    write_json_string(o, field.substr(0, field.size() - kNodeSuffix.size()));
    o << ':';
    write_node(o, value);
    return;
  }
  o << ',';
  write_json_string(o, field);
  o << ':' << value;
}

void Trace::write_node(std::ostream& o, std::uint64_t node) const {
  if (node == kSimulationNode) {
    o << "\"simulation\"";
  } else if (node < node_names_.size() && !node_names_[node].empty()) {
    write_json_string(o, node_names_[node]);
  } else {
    o << node;
  }
}

void Trace::write_jsonl(std::ostream* out) {
  out_ = out;
  detailed_ = keep_ || out_ != nullptr || observer_ != nullptr;
}

void Trace::set_node_name(std::uint32_t node, std::string name) {
  if (node_names_.size() <= node) node_names_.resize(node + 1);
  node_names_[node] = std::move(name);
}

void Trace::store(Time time, const TraceKind& kind, std::uint32_t node, std::uint64_t a, std::uint64_t b,
                  std::uint64_t c, std::string detail) {
  if (out_ != nullptr) {
    std::ostream& o = *out_;
    o << "{\"t\":" << time << ",\"kind\":";
    write_json_string(o, kind.name);
    o << ",\"node\":";
    write_node(o, node);
    const std::array<std::uint64_t, 3> values{a, b, c};
    for (std::size_t i = 0; i < values.size(); ++i) write_field(o, kind.fields[i], "abc"[i], values[i]);
    if (!detail.empty()) {
      o << ",\"detail\":";
      write_json_string(o, detail);
    }
    o << "}\n";
  }
  const auto kept = [this](std::string_view name) {
    return keep_kinds_.empty() || std::find(keep_kinds_.begin(), keep_kinds_.end(), name) != keep_kinds_.end();
  };
  if ((!keep_ && observer_ == nullptr) || !kept(kind.name)) return;
  TraceRecord record{time, kind.id, kind.name, node, a, b, c, std::move(detail), kind.fields};
  if (observer_ != nullptr) observer_(record);
  if (keep_) records_.push_back(std::move(record));
}

}  // namespace sim
