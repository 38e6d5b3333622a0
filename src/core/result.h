// SPDX-License-Identifier: Apache-2.0
// Error values and the Result<T> alias used everywhere inside cardiac.
#pragma once

#include <source_location>
#include <string>
#include <string_view>

#include <tl/expected.hpp>

namespace cardiac {

enum class ErrorCode {
  kIo,               // a read/write failed (errno in the message)
  kNotFound,         // a file, device or symbol does not exist
  kParse,            // input did not have the expected shape
  kInvalidArgument,  // a caller or user passed a bad value
  kUnsupported,      // the platform or device does not offer this
  kTimeout,          // a deadline passed
  kPermission,       // not allowed
  kUnavailable,      // a dependency (driver, library, daemon) is not usable now
  kInternal,         // a bug: should not happen
};

std::string_view error_code_name(ErrorCode code);

// An error with a human message and optional context ("/proc/stat line 3").
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string context;

  // "context: message", or just the message when no context is set.
  [[nodiscard]] std::string what() const;

  // Returns a copy with `outer` prepended to the context ("outer: inner").
  [[nodiscard]] Error with_context(std::string_view outer) const;

  static Error io(std::string_view path, int errnum);
  static Error not_found(std::string message, std::string context = {});
  static Error parse(std::string message, std::string context = {});
  static Error invalid(std::string message, std::string context = {});
  static Error unsupported(std::string message, std::string context = {});
  static Error timeout(std::string message, std::string context = {});
  static Error unavailable(std::string message, std::string context = {});
  static Error internal(std::string message,
                        std::source_location where = std::source_location::current());
};

template <class T>
using Result = tl::expected<T, Error>;
using Status = Result<void>;

// Shorthand for returning an error from a function that returns Result<T>.
inline tl::unexpected<Error> fail(Error e) {
  return tl::unexpected<Error>(std::move(e));
}

}  // namespace cardiac

// Evaluates a Result-returning expression; returns its error from the enclosing function.
#define CARDIAC_TRY(expr)                                                                     \
  do {                                                                                        \
    auto cardiac_try_result_ = (expr);                                                        \
    if (!cardiac_try_result_) return ::cardiac::fail(std::move(cardiac_try_result_).error()); \
  } while (0)
