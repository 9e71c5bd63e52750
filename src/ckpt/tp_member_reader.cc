#include "ckpt/tp_member_reader.h"

#include <algorithm>

namespace tierzero {

namespace {

class TpMemberReader final : public StateReader {
 public:
  TpMemberReader(StateReader& whole, const GptLayout& member) : whole_(whole), member_(member) {}

  void read(StatePart part, std::size_t first, std::size_t count, float* out) override {
    const std::size_t last = first + count;
    for (const TensorInfo& t : member_.tensors()) {
      if (t.offset >= last || t.offset + t.numel <= first) continue;
      for (const TpSlice& s : t.slices)
        for (std::size_t i = 0; i < s.count; ++i) {  // the run's local elements in the arena, clipped to the request
          const std::size_t local = t.offset + s.local + i * s.local_stride;
          const std::size_t lo = std::max(local, first), hi = std::min(local + s.length, last);
          if (lo < hi) whole_.read(part, t.global_offset + s.global + i * s.global_stride + (lo - local), hi - lo, out + (lo - first));
        }
    }
  }
  std::uint64_t bytes_read() const override { return whole_.bytes_read(); }
  bool has_moments() const override { return whole_.has_moments(); }

 private:
  StateReader& whole_;
  const GptLayout& member_;
};

}  // namespace

std::unique_ptr<StateReader> tp_member_reader(StateReader& whole, const GptLayout& member) {
  return std::make_unique<TpMemberReader>(whole, member);
}

}  // namespace tierzero
