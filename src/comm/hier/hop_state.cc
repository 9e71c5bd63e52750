#include "comm/hier/hop_state.h"

#include "comm/flight_state.h"
#include "tierzero/error.h"

namespace tierzero {

std::byte* HopState::buffer(Scratch which, std::size_t bytes) {
  auto& b = scratch[static_cast<int>(which)];
  if (b.size() < bytes) {
    mem->fence();  // queued work may still use the smaller buffer
    b.resize(*mem, bytes);
  }
  return b.data();
}

const HopPlan& HopState::plan(HopRequest r) {
  if (r.kind != HopCollective::all_reduce) r.chunk_bytes = chunk_bytes;
  for (const auto& p : plans)
    if (p->request() == r) return *p;
  constexpr std::size_t kMaxPlans = 256;  // a few per unit and bucket size in an engine; a bench's sweep starts over
  if (plans.size() == kMaxPlans) plans.clear();
  plans.push_back(std::make_unique<HopPlan>(groups, r));
  return *plans.back();
}

void HopState::reserve(const HopPlan& p) {
  for (int i = 0; i < kNumScratch; ++i)
    if (p.scratch()[i] > 0) buffer(static_cast<Scratch>(i), p.scratch()[i]);
}

std::size_t HopState::scratch_bytes() const {
  std::size_t t = 0;
  for (const auto& b : scratch) t += b.size();
  return t;
}

Request issue_stage(HopState& s, const HopPlan& p, std::size_t st, std::size_t c, const void* from, void* caller,
                    DType t, ReduceOp op) {
  const HopStage& g = p.stage(st, c);
  void* to = g.out[0] < 0 ? caller : s.out(p, st, c);
  const FlightBitsScope recorded(g.bits);
  const auto hop = s.hop(g.hop);
  return issue_transfer(*hop, g, from, to, t, op);
}

Request issue_transfer(Communicator& hop, const HopStage& g, const void* from, void* to, DType t, ReduceOp op) {
  switch (g.op) {
    case Collective::all_gather: return hop.iall_gather(from, to, g.count, t);
    case Collective::reduce_scatter: return hop.ireduce_scatter(from, to, g.count, t, op);
    case Collective::all_reduce: return hop.iall_reduce(from, to, g.count, t, op);
    case Collective::all_to_all: return hop.iall_to_all(from, to, g.count, t);
    default: break;
  }
  TZ_THROW(CommError, "a hop plan's transfer must be an all-gather, reduce-scatter, all-reduce or all-to-all");
}

void reverse_axes(Memory& mem, const std::byte* src, std::size_t src_pitch, std::byte* dst, std::size_t dst_pitch,
                  const Dims& dims, std::size_t block) {
  const std::size_t k = dims.k;
  // In dst, axis j has stride prod(dims[0..j-1]) blocks.
  std::array<std::size_t, kNumLevels> dst_stride{};
  std::array<int, kNumLevels> idx{};
  std::size_t total = 1;
  for (std::size_t j = 0; j < k; ++j) {
    dst_stride[j] = total;
    total *= static_cast<std::size_t>(dims.d[j]);
  }
  std::size_t off = 0;  // dst offset (in blocks) of the current src block
  for (std::size_t s = 0; s < total; ++s) {
    mem.copy(dst + off * dst_pitch, src + s * src_pitch, block);
    for (std::size_t j = k; j-- > 0;) {  // odometer over src, minor axis fastest
      off += dst_stride[j];
      if (++idx[j] < dims.d[j]) break;
      off -= dst_stride[j] * static_cast<std::size_t>(dims.d[j]);
      idx[j] = 0;
    }
  }
}

Dims inner_first(const HopState& s) {
  Dims d;
  d.k = s.hops.size();
  for (std::size_t h = 0; h < d.k; ++h) d.d[h] = s.fanout(h);
  return d;
}

Dims outer_first(const HopState& s) {
  Dims d;
  d.k = s.hops.size();
  for (std::size_t h = 0; h < d.k; ++h) d.d[h] = s.fanout(d.k - 1 - h);
  return d;
}

}  // namespace tierzero
