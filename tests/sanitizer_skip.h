#pragma once
// Large model-level tests (bandwidth within a percent, a statistic over many draws, layer time
// against tokens) check numbers, not memory: under the sanitizers (20x slower, -O0) they would
// re-run code paths the smaller tests already cover, at a cost `make test`'s 10-minute budget
// cannot carry. They run in the Release suite; the sanitizer build skips them, visibly.

#include <gtest/gtest.h>

#ifdef MOEHUB_SANITIZED
#define MOEHUB_SKIP_UNDER_SANITIZERS() GTEST_SKIP() << "model-level test: run in the Release suite, not under the sanitizers"
#else
#define MOEHUB_SKIP_UNDER_SANITIZERS() static_cast<void>(0)
#endif
