// SPDX-License-Identifier: Apache-2.0
// The terminal: ncurses started on standard input and output, frames painted span by span,
// keys read with a timeout. Thin on purpose: what is shown is decided in render.h. The
// destructor (and close()) gives the terminal back as it was, so every way out of
// `cardiac top` — q, a signal, an exception — leaves a usable shell.
#pragma once

#include <cstddef>
#include <memory>

#include "core/result.h"
#include "top/render.h"

namespace cardiac::top {

class Screen {
 public:
  // The terminal changed size (SIGWINCH): draw again at the new size.
  static constexpr int kResized = -2;
  static constexpr int kNoKey = -1;

  // Fails when standard input or output is not a terminal or TERM names no known terminal.
  // `want_color`: colours when the terminal has them; else bold, underline and reverse only.
  static Result<std::unique_ptr<Screen>> open(bool want_color);
  ~Screen();
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  // Restores the terminal (leaves the alternate screen, shows the cursor); idempotent.
  void close();
  std::size_t width() const;
  std::size_t height() const;
  bool color() const { return color_; }
  void draw(const Frame& f);
  // A key (view.h's codes), kNoKey after `timeout_ms` or an interrupting signal, kResized.
  int read_key(int timeout_ms);

 private:
  Screen(void* screen, bool color) : screen_(screen), color_(color) {}
  void* screen_;  // ncurses' SCREEN, kept out of this header
  bool color_;
  bool open_ = true;
};

}  // namespace cardiac::top
