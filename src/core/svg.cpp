// SPDX-License-Identifier: Apache-2.0
// Inline SVG elements: attributes and text always escaped, so report data cannot become markup.
#include "core/svg.h"

#include "core/text.h"

namespace cardiac::svg {
namespace {

void append_attrs(std::string& out, Attrs attrs) {
  for (const Attr& a : attrs) {
    out += ' ';
    out += a.name;
    out += "=\"";
    out += html_escape(a.value);
    out += '"';
  }
}

}  // namespace

std::string num(double v) {
  return fmt::format("{:.1f}", v);
}

std::string element(std::string_view name, Attrs attrs) {
  std::string out = "<";
  out += name;
  append_attrs(out, attrs);
  out += "/>";
  return out;
}

std::string element(std::string_view name, Attrs attrs, std::string_view text) {
  return open(name, attrs) + html_escape(text) + close(name);
}

std::string open(std::string_view name, Attrs attrs) {
  std::string out = "<";
  out += name;
  append_attrs(out, attrs);
  out += '>';
  return out;
}

std::string close(std::string_view name) {
  return fmt::format("</{}>", name);
}

}  // namespace cardiac::svg
