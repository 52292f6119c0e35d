#include "reports/junit.hpp"

#include <fmt/format.h>
#include <map>

#include "core/utf8.hpp"
#include "reports/summary.hpp"

namespace reports {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = lethe::utf8_sequence_length(text, at);
    if (length == 0) {  // not UTF-8: written as \xNN, so the document stays well-formed
      out += lethe::printable_utf8(text.substr(at, 1));
      ++at;
      continue;
    }
    const std::string_view character = text.substr(at, length);
    at += length;
    if (character == "\xEF\xBF\xBE" || character == "\xEF\xBF\xBF") {  // U+FFFE, U+FFFF: not XML characters
      out += '?';
      continue;
    }
    const char c = character.front();
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (length == 1 && static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
          out += ' ';
        } else {
          out += character;
        }
    }
  }
  return out;
}

std::string junit_xml(const std::vector<JunitCase>& cases) {
  // Group by scenario, keeping first-seen order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const JunitCase*>> by_scenario;
  for (const auto& c : cases) {
    if (by_scenario.find(c.scenario) == by_scenario.end()) order.push_back(c.scenario);
    by_scenario[c.scenario].push_back(&c);
  }
  std::size_t tests = 0, failures = 0, errors = 0;
  double seconds = 0;
  for (const auto& c : cases) {
    ++tests;
    if (!c.error.empty() || !c.load_error.empty()) {
      ++errors;
    } else if (!c.result.ok) {
      ++failures;
    }
    seconds += c.seconds;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"lethe\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n", tests,
                     failures, errors, seconds);
  for (const auto& name : order) {
    const auto& list = by_scenario[name];
    std::size_t f = 0, e = 0;
    double s = 0;
    for (const auto* c : list) {
      if (!c->error.empty() || !c->load_error.empty()) {
        ++e;
      } else if (!c->result.ok) {
        ++f;
      }
      s += c->seconds;
    }
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
                       xml_escape(name), list.size(), f, e, s);
    for (const auto* c : list) {
      if (!c->load_error.empty()) {
        const std::string first = c->load_error.substr(0, c->load_error.find('\n'));
        out += fmt::format("    <testcase classname=\"lethe.{}\" name=\"load\" file=\"{}\" time=\"0.000\">\n"
                           "      <error type=\"load\" message=\"{}\">{}</error>\n    </testcase>\n",
                           xml_escape(name), xml_escape(c->file), xml_escape(first), xml_escape(c->load_error));
        continue;
      }
      out += fmt::format("    <testcase classname=\"lethe.{}\" name=\"seed {}\" file=\"{}\" time=\"{:.3f}\">\n",
                         xml_escape(name), c->result.seed, xml_escape(c->file), c->seconds);
      if (!c->error.empty()) {
        out += fmt::format("      <error message=\"{}\">{}\nreplay: {}</error>\n", xml_escape(c->error),
                           xml_escape(c->error), xml_escape(c->replay));
      } else if (!c->result.ok) {
        std::string message;
        for (const auto& x : c->result.expectations) {
          if (x.ok) continue;
          if (!message.empty()) message += "; ";
          message += expectation_text(x);
        }
        out += fmt::format("      <failure message=\"{}\" type=\"expectation\">{}replay: {}</failure>\n",
                           xml_escape(message), xml_escape(run_summary(c->result)), xml_escape(c->replay));
      }
      out += fmt::format("      <system-out>trace_hash={:016x} duplicates={} lost={}</system-out>\n",
                         c->result.trace_hash, c->result.duplicate_effects, c->result.lost_messages);
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace reports
