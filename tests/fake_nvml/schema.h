// SPDX-License-Identifier: Apache-2.0
// Validation of scenario objects, so a typo in a fixture fails at nvmlInit with its location
// instead of silently reading as NOT_SUPPORTED.
#pragma once

#include <stdexcept>
#include <string>

#include "scenario.h"

namespace fake {

// Thrown by the validators; the message starts with the location in the document.
struct SchemaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Checks every key of a device object (or a timeline `set`, where null removes a key when
// `allow_null`) and normalises its `returns` codes to integers.
void validate_device(Json& device, const std::string& where, bool allow_null);

// The same for the system keys (top level, or a timeline `set_system`).
void validate_system(Json& system, const std::string& where, bool allow_null);

// A return code written as a name ("GPU_IS_LOST") or an integer.
int parse_code(const Json& value, const std::string& where);

// A non-negative number of seconds (integer or fractional).
double parse_seconds(const Json& value, const std::string& where);

// An integer in [0, max].
unsigned long long parse_uint(const Json& value, const std::string& where, unsigned long long max);

}  // namespace fake
