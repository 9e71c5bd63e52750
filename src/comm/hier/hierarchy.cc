#include "tierzero/hierarchy.h"

#include "comm/comm_thread.h"
#include "comm/hier/hop_state.h"
#include "tierzero/error.h"

namespace tierzero {

Hierarchy::Hierarchy(Communicator& world) : world_(world), state_(std::make_unique<HopState>()) {
  state_->world_size = world.size();
  for (Level l : kAllLevels) {
    if (world.topology().fanout(l) == 1) continue;
    state_->levels.push_back(l);
    state_->hops.push_back(world.hop(l));
  }
  thread_ = std::make_unique<CommThread>();
}

Hierarchy::~Hierarchy() = default;

const std::vector<Level>& Hierarchy::hop_levels() const { return state_->levels; }

Communicator& Hierarchy::hop(Level level) const {
  for (std::size_t i = 0; i < state_->levels.size(); ++i)
    if (state_->levels[i] == level) return *state_->hops[i];
  TZ_THROW(CommError, "the topology has no " + std::string(level_name(level)) + " hop with fan-out > 1");
}

Request Hierarchy::iall_gather(const void* send, void* recv, std::size_t count, DType t) {
  return thread_->submit([=, s = state_.get()] { hier_all_gather(*s, send, recv, count, t); });
}

Request Hierarchy::ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  TZ_CHECK(op != ReduceOp::avg || is_float(t), CommError, "avg reduction needs a float type");
  return thread_->submit([=, s = state_.get()] { hier_reduce_scatter(*s, send, recv, count, t, op); });
}

Request Hierarchy::iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  TZ_CHECK(op != ReduceOp::avg || is_float(t), CommError, "avg reduction needs a float type");
  return thread_->submit([=, s = state_.get()] { hier_all_reduce(*s, send, recv, count, t, op); });
}

Request Hierarchy::iall_gather_quantized(const void* send, void* recv, std::size_t count, DType t, const QuantSpec& q) {
  validate(q);
  TZ_CHECK(is_float(t), CommError, "quantised all-gather needs a float type");
  return thread_->submit([=, s = state_.get()] { hier_quant_all_gather(*s, send, recv, count, t, q); });
}

Request Hierarchy::ireduce_scatter_quantized(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                                             const HopBits& bits, const QuantSpec& q) {
  validate(q);
  TZ_CHECK(is_float(t), CommError, "quantised reduce-scatter needs a float type");
  return thread_->submit([=, s = state_.get()] { hier_quant_reduce_scatter(*s, send, recv, count, t, op, bits, q); });
}

}  // namespace tierzero
