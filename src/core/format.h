// SPDX-License-Identifier: Apache-2.0
// The one place fmt is included; a later move to std::format changes only this file.
#pragma once

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>
