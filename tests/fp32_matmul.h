// A test fixture whose tests run their GEMMs in fp32: the calling thread's
// matmul type is per thread and a trainer sets it (bf16 on CPUs with bf16
// units), so a test comparing against fp32 references states it instead of
// inheriting what an earlier test in the same process left.
#pragma once
#include <gtest/gtest.h>

#include "model/gemm.h"

namespace tierzero::test {

template <class Base = ::testing::Test>
class WithFp32Matmul : public Base {
 protected:
  void SetUp() override { ops::set_matmul(MatmulType::fp32); }
};

}  // namespace tierzero::test
