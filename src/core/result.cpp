// SPDX-License-Identifier: Apache-2.0
// Error factories and formatting.
#include "core/result.h"

#include <cstring>

#include "core/format.h"

namespace cardiac {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kParse:
      return "parse";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kPermission:
      return "permission";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Error::what() const {
  if (context.empty()) return message;
  return fmt::format("{}: {}", context, message);
}

Error Error::with_context(std::string_view outer) const {
  Error e = *this;
  e.context = context.empty() ? std::string(outer) : fmt::format("{}: {}", outer, context);
  return e;
}

Error Error::io(std::string_view path, int errnum) {
  ErrorCode code = ErrorCode::kIo;
  if (errnum == ENOENT || errnum == ENOTDIR) code = ErrorCode::kNotFound;
  if (errnum == EACCES || errnum == EPERM) code = ErrorCode::kPermission;
  return Error{code, std::strerror(errnum), std::string(path)};
}

Error Error::not_found(std::string message, std::string context) {
  return Error{ErrorCode::kNotFound, std::move(message), std::move(context)};
}
Error Error::parse(std::string message, std::string context) {
  return Error{ErrorCode::kParse, std::move(message), std::move(context)};
}
Error Error::invalid(std::string message, std::string context) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), std::move(context)};
}
Error Error::unsupported(std::string message, std::string context) {
  return Error{ErrorCode::kUnsupported, std::move(message), std::move(context)};
}
Error Error::timeout(std::string message, std::string context) {
  return Error{ErrorCode::kTimeout, std::move(message), std::move(context)};
}
Error Error::unavailable(std::string message, std::string context) {
  return Error{ErrorCode::kUnavailable, std::move(message), std::move(context)};
}
Error Error::internal(std::string message, std::source_location where) {
  return Error{ErrorCode::kInternal, std::move(message),
               fmt::format("{}:{}", where.file_name(), where.line())};
}

}  // namespace cardiac
