// For GPU tests: skip, saying why, where no CUDA device can be used; but
// fail instead where TZ_REQUIRE_GPU=1 (scripts/gpu_check.sh sets it when
// nvidia-smi lists a GPU), so a missing driver library or a device the
// runtime cannot open is a failure there, not a run of skips that passes.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "gpu/gpu_quant.h"

namespace tierzero::test {
inline bool gpu_required() {
  const char* v = std::getenv("TZ_REQUIRE_GPU");
  return v && std::strcmp(v, "1") == 0;
}
}  // namespace tierzero::test

#define TZ_NEED_GPU()                                                                                                  \
  do {                                                                                                                 \
    std::string why;                                                                                                   \
    if (!::tierzero::gpu_available(&why)) {                                                                            \
      if (::tierzero::test::gpu_required()) FAIL() << "TZ_REQUIRE_GPU=1 but no GPU can be used (" << why << ")";       \
      GTEST_SKIP() << "no GPU here (" << why << "); scripts/gpu_check.sh runs this";                                   \
    }                                                                                                                  \
  } while (0)
