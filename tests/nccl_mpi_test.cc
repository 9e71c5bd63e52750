// The NCCL communicator: every collective on device buffers, checked in
// closed form like the MPI backend's; skipped where no GPU exists.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "mpi_test_util.h"
#include "tierzero/nccl.h"

namespace tierzero {
namespace {

TEST(Nccl, CollectivesOnDeviceBuffers) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no GPU here; scripts/gpu_check.sh runs this where one exists";
  const int w = test::world_size();
  auto world = nccl_world(Topology::flat(w));
  const int me = world->rank();
  const std::size_t n = 1001;
  std::vector<float> host(n * w);
  for (std::size_t i = 0; i < n * w; ++i) host[i] = static_cast<float>(test::value(me, i, DType::f32));
  float *send = nullptr, *recv = nullptr;
  ASSERT_EQ(cudaMalloc(&send, n * w * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&recv, n * w * sizeof(float)), cudaSuccess);
  cudaMemcpy(send, host.data(), n * w * sizeof(float), cudaMemcpyHostToDevice);
  world->all_gather(send, recv, n, DType::f32);
  std::vector<float> out(n * w);
  cudaMemcpy(out.data(), recv, n * w * sizeof(float), cudaMemcpyDeviceToHost);
  for (int j = 0; j < w; ++j)
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[j * n + i], test::value(j, i, DType::f32));
  world->reduce_scatter(send, recv, n, DType::f32, ReduceOp::sum);
  cudaMemcpy(out.data(), recv, n * sizeof(float), cudaMemcpyDeviceToHost);
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int r = 0; r < w; ++r) sum += test::value(r, me * n + i, DType::f32);
    ASSERT_EQ(out[i], sum);
  }
  world->all_to_all(send, recv, n, DType::f32);
  cudaMemcpy(out.data(), recv, n * w * sizeof(float), cudaMemcpyDeviceToHost);
  for (int j = 0; j < w; ++j)
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[j * n + i], test::value(j, me * n + i, DType::f32));
  cudaFree(send);
  cudaFree(recv);
}

}  // namespace
}  // namespace tierzero
