// SPDX-License-Identifier: Apache-2.0
#include "top/screen.h"

#include <curses.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace cardiac::top {
namespace {

// Colour pairs, one per coloured style.
enum Pair : short { kPairOk = 1, kPairWarn, kPairFail, kPairBar, kPairHeader, kPairTab };

attr_t attr_for(Style s, bool color) {
  if (!color) {
    switch (s) {
      case Style::kTitle:
      case Style::kWarn:
        return A_BOLD;
      case Style::kFail:
        return A_BOLD | A_UNDERLINE;
      case Style::kHeader:
      case Style::kSelected:
      case Style::kTabActive:
        return A_REVERSE;
      case Style::kDim:
        return A_DIM;
      default:
        return A_NORMAL;
    }
  }
  switch (s) {
    case Style::kTitle:
      return A_BOLD;
    case Style::kHeader:
      return COLOR_PAIR(kPairHeader);
    case Style::kTab:
      return COLOR_PAIR(kPairTab);
    case Style::kTabActive:
    case Style::kSelected:
      return A_REVERSE;
    case Style::kOk:
      return COLOR_PAIR(kPairOk);
    case Style::kWarn:
      return COLOR_PAIR(kPairWarn) | A_BOLD;
    case Style::kFail:
      return COLOR_PAIR(kPairFail) | A_BOLD;
    case Style::kDim:
      return A_DIM;
    case Style::kBar:
      return COLOR_PAIR(kPairBar);
    case Style::kNormal:
      return A_NORMAL;
  }
  return A_NORMAL;
}

}  // namespace

Result<std::unique_ptr<Screen>> Screen::open(bool want_color) {
  if (isatty(STDIN_FILENO) != 1 || isatty(STDOUT_FILENO) != 1) {
    return fail(Error::invalid(
        "needs a terminal on standard input and output (for a stream of text use `cardiac "
        "status --watch`)"));
  }
  // newterm, unlike initscr, returns an error instead of exiting on an unknown TERM.
  SCREEN* screen = newterm(nullptr, stdout, stdin);
  if (screen == nullptr) {
    const char* term = std::getenv("TERM");
    return fail(Error::invalid(std::string("cannot use the terminal type '") + (term ? term : "") +
                               "' (is TERM set, and its terminfo installed?)"));
  }
  // Without cursor addressing (TERM=dumb, a printer) a full screen cannot be drawn.
  const char* cup = tigetstr("cup");
  // tigetstr answers (char*)-1 for a name that is not a string capability.
  if (cup == nullptr || reinterpret_cast<std::intptr_t>(cup) == -1) {
    endwin();
    delscreen(screen);
    const char* term = std::getenv("TERM");
    return fail(Error::invalid(std::string("the terminal type '") + (term ? term : "") +
                               "' cannot move the cursor (for a stream of text use `cardiac "
                               "status --watch`)"));
  }
  const bool color = want_color && has_colors();
  std::unique_ptr<Screen> s(new Screen(screen, color));
  cbreak();
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  set_escdelay(25);  // Esc closes the filter prompt without a noticeable wait
  curs_set(0);
  if (color) {
    start_color();
    use_default_colors();
    init_pair(kPairOk, COLOR_GREEN, -1);
    init_pair(kPairWarn, COLOR_YELLOW, -1);
    init_pair(kPairFail, COLOR_RED, -1);
    init_pair(kPairBar, COLOR_CYAN, -1);
    init_pair(kPairHeader, COLOR_BLACK, COLOR_CYAN);
    init_pair(kPairTab, COLOR_BLACK, COLOR_WHITE);
  }
  return s;
}

Screen::~Screen() {
  close();
}

void Screen::close() {
  if (!open_) return;
  open_ = false;
  curs_set(1);
  endwin();
  // Frees what newterm allocated, so a leak checker sees none at exit.
  delscreen(static_cast<SCREEN*>(screen_));
}

std::size_t Screen::width() const {
  return COLS > 0 ? static_cast<std::size_t>(COLS) : 0;
}
std::size_t Screen::height() const {
  return LINES > 0 ? static_cast<std::size_t>(LINES) : 0;
}

void Screen::draw(const Frame& f) {
  erase();
  for (std::size_t y = 0; y < f.lines.size() && y < height(); ++y) {
    move(static_cast<int>(y), 0);
    for (const auto& span : f.lines[y].spans) {
      attrset(attr_for(span.style, color_));
      // The bottom-right cell is written, then ncurses reports it could not move past it.
      addstr(span.text.c_str());
    }
  }
  attrset(A_NORMAL);
  refresh();
}

int Screen::read_key(int timeout_ms) {
  timeout(timeout_ms);
  wint_t ch = 0;
  const int r = get_wch(&ch);
  if (r == ERR) return kNoKey;
  if (r == KEY_CODE_YES) {
    switch (ch) {
      case KEY_RESIZE:
        return kResized;
      case KEY_UP:
        return kKeyUp;
      case KEY_DOWN:
        return kKeyDown;
      case KEY_LEFT:
        return kKeyLeft;
      case KEY_RIGHT:
        return kKeyRight;
      case KEY_PPAGE:
        return kKeyPageUp;
      case KEY_NPAGE:
        return kKeyPageDown;
      case KEY_HOME:
        return kKeyHome;
      case KEY_END:
        return kKeyEnd;
      case KEY_BTAB:
        return kKeyBackTab;
      case KEY_BACKSPACE:
        return kKeyBackspace;
      case KEY_ENTER:
        return kKeyEnter;
      default:
        return kNoKey;
    }
  }
  switch (ch) {
    case 27:
      return kKeyEscape;
    case '\r':
    case '\n':
      return kKeyEnter;
    case 127:
    case 8:
      return kKeyBackspace;
    default:
      return static_cast<int>(ch);
  }
}

}  // namespace cardiac::top
