// A checking communicator: proves that every rank issues the same
// collectives in the same order (the rule of comm/comm_schedule.h),
// as PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL checks process groups.
//
// CheckedCommunicator wraps a world communicator. It and every communicator
// split from it (hops, groups, cross groups, the host() twin) forward each
// call to the wrapped one and append a record to one log per rank:
// (communicator, collective, bytes), where a communicator is named by the
// order of its creation on this rank (the same on every rank, because
// splits are collective) and bytes are count x element size (for
// all_to_allv, which may send different amounts per rank, the member count).
// verify() is collective over the world: it gathers every rank's records
// since the previous verify() over the wrapped world's host() communicator
// (unlogged) and throws CommError on every rank when
//   - two ranks' sequences differ (naming the first difference), or
//   - on some rank the collectives (splits aside) came from more than one
//     thread: then their interleaving depends on timing, which is how a
//     collective that bypasses the schedule shows up even when this run
//     happened to interleave alike.
// Ownership: borrows the wrapped communicator, which must outlive it and
// its splits. Threading: calls may come from any thread (the log locks);
// verify() from one thread while no collective is in flight.
#pragma once
#include <memory>
#include <string>

#include "tierzero/communicator.h"

namespace tierzero {

struct OrderLog;  // src/comm/order_check.cc

class CheckedCommunicator final : public Communicator {
 public:
  explicit CheckedCommunicator(Communicator& world);
  ~CheckedCommunicator() override;

  // Collective over the world: see above. `when` names the point in the error ("step 3").
  void verify(const std::string& when);
  // Collectives this rank has issued (splits included) since the wrapper was made.
  std::size_t issued() const;

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Request iall_gather(const void* send, void* recv, std::size_t count, DType t) override;
  Request ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override;
  Request iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) override;
  Request iall_to_all(const void* send, void* recv, std::size_t count, DType t) override;
  Request iall_to_allv(const void* send, const std::vector<std::size_t>& send_counts, const std::vector<std::size_t>& send_displs,
                       void* recv, const std::vector<std::size_t>& recv_counts, const std::vector<std::size_t>& recv_displs,
                       DType t) override;
  Request ibroadcast(void* buf, std::size_t count, DType t, int root) override;
  void barrier() override;
  Communicator& host() override { return *host_; }
  std::unique_ptr<Communicator> split_by(int color) override;

 private:
  CheckedCommunicator(Communicator& inner, std::unique_ptr<Communicator> owned, std::shared_ptr<OrderLog> log);
  void record(Collective op, std::size_t bytes) const;
  std::unique_ptr<Communicator> owned_;  // the wrapped split (none for the world)
  Communicator& inner_;
  std::shared_ptr<OrderLog> log_;
  int id_;
  std::unique_ptr<CheckedCommunicator> host_twin_;  // when inner_.host() is another communicator
  Communicator* host_;
};

}  // namespace tierzero
