// Launch sizes of tierzero's kernels, in one place and host-compilable so
// the CPU tests check the arithmetic (tests/launch_size_test.cc).
//
// Every kernel is a grid-stride loop over its items (elements, rows,
// columns or quantisation blocks): item i is handled by thread
// grid_stride_first(...) and every grid_stride_step(...) after it, with all
// index arithmetic in std::size_t, so a grid of any size covers any n, and
// the grid is capped at kMaxBlocks (a launch of more blocks than items per
// pass is pointless; fewer blocks loop more). A kernel that indexed only
// blockIdx*blockDim+threadIdx under this cap would cover just
// kMaxBlocks*kThreads (16.7M) elements: AdamW on gpt2-124m's 38.6M-element
// wte did exactly that before the loops.
#pragma once
#include <cstddef>

#include "tierzero/dtype.h"  // TZ_HD

namespace tierzero::gpu {

constexpr unsigned kThreads = 256;      // threads per block of every kernel
constexpr unsigned kMaxBlocks = 65535;  // blocks per launch at most

// Blocks for `items` items, `per_block` of them per block and pass (kThreads
// for element kernels, 1 for kernels that give a block to each row).
TZ_HD constexpr unsigned grid_for(std::size_t items, std::size_t per_block = kThreads) {
  const std::size_t blocks = (items + per_block - 1) / per_block;
  return blocks == 0 ? 1u : blocks < kMaxBlocks ? static_cast<unsigned>(blocks) : kMaxBlocks;
}

// The first item of a thread, and the stride between its items.
TZ_HD constexpr std::size_t grid_stride_first(unsigned block, unsigned block_dim, unsigned thread) {
  return static_cast<std::size_t>(block) * block_dim + thread;
}
TZ_HD constexpr std::size_t grid_stride_step(unsigned grid_dim, unsigned block_dim) {
  return static_cast<std::size_t>(grid_dim) * block_dim;
}

}  // namespace tierzero::gpu
