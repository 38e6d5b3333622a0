// SPDX-License-Identifier: Apache-2.0
// A small checker of the Prometheus text format 0.0.4, so tests need no external tool.
#pragma once

#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace cardiac::metrics::testing {

// Lines of `text` that are neither "# HELP name text", "# TYPE name gauge|counter|histogram" nor a
// sample "name{label="value",...} number". Empty means the text is well-formed.
inline std::vector<std::string> grammar_violations(const std::string& text) {
  static const std::string kName = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  static const std::string kLabel = "[a-zA-Z_][a-zA-Z0-9_]*=\"(?:[^\"\\\\\\n]|\\\\[\\\\\"n])*\"";
  static const std::string kValue = "(?:[-+]?[0-9]+(?:\\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|[-+]Inf)";
  static const std::regex kHelp("# HELP " + kName + " (?:[^\\\\\\n]|\\\\[\\\\n])*");
  static const std::regex kType("# TYPE " + kName + " (?:gauge|counter|histogram)");
  static const std::regex kSample(kName + "(?:\\{" + kLabel + "(?:," + kLabel + ")*\\})? " +
                                  kValue);
  std::vector<std::string> bad;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!std::regex_match(line, kHelp) && !std::regex_match(line, kType) &&
        !std::regex_match(line, kSample)) {
      bad.push_back(line);
    }
  }
  if (!text.empty() && text.back() != '\n') bad.push_back("<no final newline>");
  return bad;
}

}  // namespace cardiac::metrics::testing
