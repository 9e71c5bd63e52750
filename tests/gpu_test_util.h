// For GPU tests: skip, saying why, where no CUDA device can be used.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "gpu/gpu_quant.h"

#define TZ_NEED_GPU()                                                                                         \
  do {                                                                                                        \
    std::string why;                                                                                          \
    if (!::tierzero::gpu_available(&why)) GTEST_SKIP() << "no GPU here (" << why << "); scripts/gpu_check.sh runs this"; \
  } while (0)
