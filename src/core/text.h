// SPDX-License-Identifier: Apache-2.0
// Untrusted text (log lines, trace fields, user labels) made safe to print and to put in HTML.
#pragma once

#include <string>
#include <string_view>

namespace cardiac {

// Invalid UTF-8 bytes replaced by U+FFFD.
std::string valid_utf8(std::string_view text);
// valid_utf8() plus control characters other than tab and newline replaced by U+FFFD, so a log
// line cannot move the cursor or change colours.
std::string printable(std::string_view text);
// Escapes text for HTML element content and attribute values (& < > " '). Control characters
// other than tab and newline become U+FFFD, so a log line cannot inject markup or break the
// page, and invalid UTF-8 bytes become U+FFFD too.
std::string html_escape(std::string_view text);

}  // namespace cardiac
