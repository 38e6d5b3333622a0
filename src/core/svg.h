// SPDX-License-Identifier: Apache-2.0
// Inline SVG built as text, for the self-contained HTML reports (the doctor's charts, the
// simulator's report): elements with their attributes in the order given, every attribute value
// and every piece of text escaped (text.h's html_escape), coordinates with one decimal, and the
// linear scale from data to pixels. What to draw and the look stay with each report.
#pragma once

#include <concepts>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "core/format.h"

namespace cardiac::svg {

// One attribute: a name and its value as text. Numbers are written as fmt's "{}" writes them
// ("64", "0.5"); coordinates that want one decimal go through num() first.
struct Attr {
  Attr(std::string_view n, std::string v) : name(n), value(std::move(v)) {}
  Attr(std::string_view n, const char* v) : name(n), value(v) {}
  template <typename T>
  requires std::integral<T> || std::floating_point<T> Attr(std::string_view n, T v)
      : name(n), value(fmt::format("{}", v)) {}

  std::string_view name;
  std::string value;
};
using Attrs = std::initializer_list<Attr>;

// A coordinate or length with one decimal: "126.0", "99.6".
std::string num(double v);

// <name a="v" …/>
std::string element(std::string_view name, Attrs attrs);
// <name a="v" …>text</name>, the text escaped.
std::string element(std::string_view name, Attrs attrs, std::string_view text);
// <name a="v" …>, for an element whose children follow; close() ends it.
std::string open(std::string_view name, Attrs attrs);
// </name>
std::string close(std::string_view name);

// A linear map from data values [lo, hi] to pixels [px_lo, px_hi] (px_hi may be below px_lo,
// as for a y axis drawn downwards); a degenerate range (lo == hi) maps to the middle.
struct Scale {
  double lo, hi;
  double px_lo, px_hi;
  [[nodiscard]] double at(double v) const {
    return hi == lo ? (px_lo + px_hi) / 2 : px_lo + (v - lo) / (hi - lo) * (px_hi - px_lo);
  }
};

}  // namespace cardiac::svg
