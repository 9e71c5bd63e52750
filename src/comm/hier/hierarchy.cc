#include "comm/hier/hierarchy.h"

#include "comm/comm_job.h"
#include "comm/hier/hop_state.h"
#include "tierzero/error.h"

namespace tierzero {

Hierarchy::Hierarchy(Communicator& comm, const HopSpec& hops, Memory& mem, ElementOps& ops, CommSchedule* schedule)
    : group_(comm), state_(std::make_unique<HopState>()), schedule_(schedule) {
  state_->mem = &mem;
  state_->ops = &ops;
  state_->group_size = comm.size();
  const Topology& topo = comm.topology();
  const int me = comm.world_rank(comm.rank());
  for (const std::vector<Level>& levels : hops) {
    // The hop: ranks sharing every coordinate outside `levels`.
    std::array<bool, kNumLevels> varies{};
    for (Level l : levels) varies[static_cast<int>(l)] = true;
    int color = 0;
    for (int i = kNumLevels - 1; i >= 0; --i)
      color = color * (topo.fanout(static_cast<Level>(i)) + 1) + (varies[i] ? topo.fanout(static_cast<Level>(i)) : topo.coord(me, static_cast<Level>(i)));
    auto hop = comm.split_by(color);
    if (hop->size() == 1) continue;
    state_->groups.push_back({levels, hop->size()});
    state_->hops.push_back(std::move(hop));
  }
  int product = 1;
  for (auto& h : state_->hops) product *= h->size();
  TZ_CHECK(product == comm.size(), CommError, "the hops do not cover the communicator (a level is missing from the hop spec)");
  if (!schedule_) {
    own_schedule_ = std::make_unique<CommSchedule>(mem);
    schedule_ = own_schedule_.get();
  }
  state_->clock = &schedule_->clock();
}

Hierarchy::~Hierarchy() = default;

Request Hierarchy::submit(CommJob job) {
  job.mem = state_->mem;
  return schedule_->submit(job);
}

std::size_t Hierarchy::num_hops() const { return state_->hops.size(); }

void Hierarchy::set_chunk_bytes(std::size_t bytes) {
  state_->chunk_bytes = bytes;
}

std::size_t Hierarchy::scratch_bytes() const { return state_->scratch_bytes(); }

Communicator& Hierarchy::hop(Level level) const {
  for (std::size_t i = 0; i < state_->groups.size(); ++i)
    for (Level l : state_->groups[i].levels)
      if (l == level) return *state_->hops[i];
  TZ_THROW(CommError, "no hop with more than one member spans level " + std::string(level_name(level)));
}

namespace {
CommJob job(HopState* s, void (*run)(const CommJob&), const void* send, void* recv, std::size_t count, DType t,
            CommKind kind = CommKind::reduce) {
  CommJob j;
  j.run = run, j.state = s, j.send = send, j.recv = recv, j.count = count, j.type = t, j.kind = kind;
  return j;
}
}  // namespace

Request Hierarchy::iall_gather(const void* send, void* recv, std::size_t count, DType t) {
  return submit(job(state_.get(), [](const CommJob& j) { hier_all_gather(*j.state, j.send, j.recv, j.count, j.type); },
                    send, recv, count, t, CommKind::gather));
}

Request Hierarchy::ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  TZ_CHECK(op != ReduceOp::avg || is_float(t), CommError, "avg reduction needs a float type");
  CommJob j = job(state_.get(), [](const CommJob& j) { hier_reduce_scatter(*j.state, j.send, j.recv, j.count, j.type, j.op); },
                  send, recv, count, t);
  j.op = op;
  return submit(j);
}

Request Hierarchy::iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  TZ_CHECK(op != ReduceOp::avg || is_float(t), CommError, "avg reduction needs a float type");
  CommJob j = job(state_.get(), [](const CommJob& j) { hier_all_reduce(*j.state, j.send, j.recv, j.count, j.type, j.op); },
                  send, recv, count, t);
  j.op = op;
  return submit(j);
}

Request Hierarchy::iall_gather_quantized(const void* send, void* recv, std::size_t count, DType t, const QuantSpec& q) {
  validate(q);
  TZ_CHECK(is_float(t), CommError, "quantised all-gather needs a float type");
  CommJob j = job(state_.get(), [](const CommJob& j) { hier_quant_all_gather(*j.state, j.send, j.recv, j.count, j.type, j.quant); },
                  send, recv, count, t, CommKind::gather);
  j.quant = q;
  return submit(j);
}

Request Hierarchy::ireduce_scatter_quantized(const void* send, void* recv, std::size_t count, DType t, ReduceOp op,
                                             const HopBits& bits, const QuantSpec& q) {
  validate(q);
  TZ_CHECK(is_float(t), CommError, "quantised reduce-scatter needs a float type");
  CommJob j = job(state_.get(), [](const CommJob& j) {
    hier_quant_reduce_scatter(*j.state, j.send, j.recv, j.count, j.type, j.op, j.bits, j.quant);
  }, send, recv, count, t);
  j.op = op, j.bits = bits, j.quant = q;
  return submit(j);
}

}  // namespace tierzero
