#include "sharded/unit_fetcher.h"

#include <algorithm>
#include <string>

#include "tierzero/error.h"

namespace tierzero {

UnitFetcher::UnitFetcher(const GptLayout& layout, DType dtype, const std::vector<FetchSlotSize>& slots, Memory& mem, ElementOps& ops,
                         WaitMeter& meter)
    : layout_(layout), mem_(mem), ops_(ops), meter_(meter), dtype_(dtype), dsize_(dtype_size(dtype)), depth_(static_cast<int>(slots.size()) - 1),
      slots_(slots.size()) {
  for (std::size_t k = 0; k < slots.size(); ++k) {
    slots_[k].gathered.resize(mem, slots[k].gathered * dsize_);
    slots_[k].compute.resize(mem, slots[k].compute);
  }
}

void UnitFetcher::begin(const std::vector<int>& units, const UnitSource& src, const SecondaryStore* keep) {
  units_ = units;  // capacity is reused after the first pass
  src_ = src;
  keeping_ = keep != nullptr;
  if (keep) keep_ = *keep;
  src_.store->begin_pass(units_);
  for (std::size_t i = 0; i <= static_cast<std::size_t>(depth_) && i < units_.size(); ++i) launch(i);
}

void UnitFetcher::launch(std::size_t i) {
  const int u = units_[i];
  if (!src_.hier || src_.layout->whole[u]) return;  // replicated or held whole: converted in get()
  Slot& slot = slots_[i % slots_.size()];
  const FlightPhaseScope tagged(src_.phase, u);
  const std::byte* shard = src_.store->unit(i);
  const std::size_t count = src_.layout->shard[u];
  TZ_CHECK(count * static_cast<std::size_t>(src_.layout->group_size) * dsize_ <= slot.gathered.bytes(), Error,
           "unit " + std::to_string(u) + " does not fit its fetch slot (a pass the ring was not sized for)");
  if (src_.bits == 16) {
    slot.pending = src_.hier->iall_gather(shard, slot.gathered.data(), count, dtype_);
  } else {
    const QuantSpec q{src_.bits, false, src_.quant_block};
    slot.pending = src_.hier->iall_gather_quantized(shard, slot.gathered.data(), count, dtype_, q);
  }
}

const float* UnitFetcher::get(std::size_t i) {
  const int u = units_[i];
  const std::size_t n = layout_.units()[u].numel;
  Slot& slot = slots_[i % slots_.size()];
  TZ_CHECK(n <= slot.compute.size(), Error, "unit " + std::to_string(u) + " does not fit its fetch slot (a pass the ring was not sized for)");
  if (!src_.hier || src_.layout->whole[u]) {
    ops_.to_f32(dtype_, src_.store->unit(i), slot.compute.data(), n);
    src_.store->release(i);
    return slot.compute.data();
  }
  meter_.wait(WaitMeter::Wait::gather, slot.pending);
  src_.store->release(i);  // the gather has read the shard
  ops_.to_f32(dtype_, slot.gathered.data(), slot.compute.data(), n);
  if (keeping_) {  // this rank's slice of the unit, as the secondary copy
    const ShardLayout& k = *keep_.layout;
    std::byte* dst = keep_.store->writable(u);
    const std::size_t valid = k.valid(layout_, u);
    mem_.copy(dst, slot.gathered.data() + k.begin(u) * dsize_, valid * dsize_);
    mem_.zero(dst + valid * dsize_, (k.shard[u] - valid) * dsize_);
    keep_.store->commit(u);
  }
  return slot.compute.data();
}

void UnitFetcher::release(std::size_t i) {
  const std::size_t next = i + slots_.size();
  if (next < units_.size()) launch(next);
}

std::size_t UnitFetcher::buffer_bytes() const {
  std::size_t b = 0;
  for (const Slot& s : slots_) b += s.gathered.bytes() + s.compute.bytes();
  return b;
}

}  // namespace tierzero
