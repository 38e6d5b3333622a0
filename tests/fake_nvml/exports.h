// SPDX-License-Identifier: Apache-2.0
// Declarations of every symbol the fake libnvidia-ml exports, generated from symbols.def.
#pragma once

#include "nvml/types.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

// Declaring each export through the function type listed in symbols.def means a definition
// with a drifted signature is a conflicting C declaration, i.e. a compile error.
extern "C" {
#define CARDIAC_NVML_FN(field, required, type) using fake_##field##_fn = type;
#define CARDIAC_NVML_SYM(field, symbol) FAKE_EXPORT fake_##field##_fn symbol;
#include "nvml/symbols.def"
#undef CARDIAC_NVML_FN
#undef CARDIAC_NVML_SYM

// Test-only helpers; not part of NVML.
FAKE_EXPORT unsigned long long cardiacFakeNvmlCallCount(const char* function);
FAKE_EXPORT void cardiacFakeNvmlResetCounts(void);
}
