#include "tierzero/order_check.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include "tierzero/error.h"

namespace tierzero {

namespace {
// A record's operation: a Collective, or kQueue (below).
constexpr std::uint64_t op_of(Collective c) { return static_cast<std::uint64_t>(c); }
constexpr std::uint64_t kSplit = op_of(Collective::split), kQueue = kNumCollectives;

// One rank's sequence as it travels: its length in records; 1 when some
// communicator was issued on from two threads, and then that record
// (communicator, collective, bytes), else zeros; then one record per
// (communicator, collective, bytes): each issuing thread's (a queue's)
// records together in issue order, behind a (first communicator, kQueue,
// record count) record, the queues in order of the smallest communicator
// they issued on (splits aside), which is the same on every rank.
constexpr std::size_t kFields = 3, kHeader = 2 + kFields;

std::string describe(const std::uint64_t* rec) {
  if (rec[1] == kQueue)
    return "a queue of " + std::to_string(rec[2]) + " records whose first communicator is " + std::to_string(rec[0]);
  return describe_collective(rec[0], static_cast<Collective>(rec[1]), rec[2]);
}
}  // namespace

struct OrderLog {
  struct Record {
    std::uint64_t comm, op, bytes;
    std::thread::id thread;
  };
  std::mutex mutex;
  std::vector<Record> records;  // since the last verify()
  std::size_t issued = 0;
  std::uint64_t next_id = 0;
  Communicator* exchange = nullptr;  // the wrapped world's host(): verify() talks on it, unlogged
  // The records since the last call, in the travelling form above; clears them.
  std::vector<std::uint64_t> take_sequence();
};

std::vector<std::uint64_t> OrderLog::take_sequence() {
  std::lock_guard<std::mutex> lock(mutex);
  struct Queue {
    std::thread::id thread;
    std::uint64_t key = ~std::uint64_t{0};
    std::vector<std::uint64_t> fields;
  };
  std::vector<Queue> queues;
  std::vector<std::pair<std::uint64_t, std::thread::id>> owner;  // communicator -> the thread issuing on it (splits aside)
  std::vector<std::uint64_t> seq(kHeader, 0);
  for (const Record& r : records) {
    auto q = std::find_if(queues.begin(), queues.end(), [&](const Queue& x) { return x.thread == r.thread; });
    if (q == queues.end()) q = queues.insert(queues.end(), Queue{r.thread, ~std::uint64_t{0}, {}});
    q->fields.insert(q->fields.end(), {r.comm, r.op, r.bytes});
    if (r.op == kSplit) continue;
    q->key = std::min(q->key, r.comm);
    auto o = std::find_if(owner.begin(), owner.end(), [&](const auto& x) { return x.first == r.comm; });
    if (o == owner.end()) owner.emplace_back(r.comm, r.thread);
    else if (o->second != r.thread && seq[1] == 0) seq[1] = 1, seq[2] = r.comm, seq[3] = r.op, seq[4] = r.bytes;
  }
  records.clear();
  std::stable_sort(queues.begin(), queues.end(), [](const Queue& a, const Queue& b) { return a.key < b.key; });
  for (const Queue& q : queues) {
    seq.insert(seq.end(), {q.key, kQueue, q.fields.size() / kFields});
    seq.insert(seq.end(), q.fields.begin(), q.fields.end());
  }
  seq[0] = (seq.size() - kHeader) / kFields;
  return seq;
}

CheckedCommunicator::CheckedCommunicator(Communicator& world)
    : CheckedCommunicator(world, nullptr, std::make_shared<OrderLog>()) {
  log_->exchange = &world.host();
}

CheckedCommunicator::CheckedCommunicator(Communicator& inner, std::unique_ptr<Communicator> owned, std::shared_ptr<OrderLog> log)
    : Communicator(inner.topology(), inner.members(), inner.shared_traffic()),
      owned_(std::move(owned)),
      inner_(inner),
      log_(std::move(log)),
      id_(static_cast<int>(log_->next_id++)),
      host_(this) {
  if (&inner_.host() != &inner_) {
    host_twin_.reset(new CheckedCommunicator(inner_.host(), nullptr, log_));
    host_ = host_twin_.get();
  }
}

CheckedCommunicator::~CheckedCommunicator() = default;

void CheckedCommunicator::record(Collective op, std::size_t bytes) const {
  std::lock_guard<std::mutex> lock(log_->mutex);
  log_->records.push_back({static_cast<std::uint64_t>(id_), op_of(op), bytes, std::this_thread::get_id()});
  ++log_->issued;
}

std::size_t CheckedCommunicator::issued() const {
  std::lock_guard<std::mutex> lock(log_->mutex);
  return log_->issued;
}

Request CheckedCommunicator::iall_gather(const void* send, void* recv, std::size_t count, DType t) {
  record(Collective::all_gather, count * dtype_size(t));
  return inner_.iall_gather(send, recv, count, t);
}
Request CheckedCommunicator::ireduce_scatter(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  record(Collective::reduce_scatter, count * dtype_size(t));
  return inner_.ireduce_scatter(send, recv, count, t, op);
}
Request CheckedCommunicator::iall_reduce(const void* send, void* recv, std::size_t count, DType t, ReduceOp op) {
  record(Collective::all_reduce, count * dtype_size(t));
  return inner_.iall_reduce(send, recv, count, t, op);
}
Request CheckedCommunicator::iall_to_all(const void* send, void* recv, std::size_t count, DType t) {
  record(Collective::all_to_all, count * dtype_size(t));
  return inner_.iall_to_all(send, recv, count, t);
}
Request CheckedCommunicator::iall_to_allv(const void* send, const std::vector<std::size_t>& send_counts,
                                          const std::vector<std::size_t>& send_displs, void* recv,
                                          const std::vector<std::size_t>& recv_counts, const std::vector<std::size_t>& recv_displs,
                                          DType t) {
  record(Collective::all_to_allv, static_cast<std::size_t>(size()));
  return inner_.iall_to_allv(send, send_counts, send_displs, recv, recv_counts, recv_displs, t);
}
Request CheckedCommunicator::ibroadcast(void* buf, std::size_t count, DType t, int root) {
  record(Collective::broadcast, count * dtype_size(t));
  return inner_.ibroadcast(buf, count, t, root);
}
void CheckedCommunicator::barrier() {
  record(Collective::barrier, 0);
  inner_.barrier();
}
std::unique_ptr<Communicator> CheckedCommunicator::split_by(int color) {
  record(Collective::split, 0);
  auto sub = inner_.split_by(color);
  Communicator& inner = *sub;
  return std::unique_ptr<Communicator>(new CheckedCommunicator(inner, std::move(sub), log_));
}

void CheckedCommunicator::verify(const std::string& when) {
  std::vector<std::uint64_t> mine = log_->take_sequence();
  Communicator& ex = *log_->exchange;
  const int w = ex.size();
  std::vector<std::uint64_t> lengths(w);
  const std::uint64_t length = mine.size();
  ex.all_gather(&length, lengths.data(), sizeof length, DType::u8);
  const std::size_t longest = *std::max_element(lengths.begin(), lengths.end());
  mine.resize(longest, 0);
  std::vector<std::uint64_t> all(longest * w);
  ex.all_gather(mine.data(), all.data(), longest * sizeof(std::uint64_t), DType::u8);
  auto seq = [&](int r) { return all.data() + static_cast<std::size_t>(r) * longest; };
  for (int r = 0; r < w; ++r)
    if (seq(r)[1])
      TZ_THROW(CommError, "collective order check at " + when + ": rank " + std::to_string(ex.world_rank(r)) + " issued " +
                              describe(seq(r) + 2) +
                              " from a second thread; each communicator's collectives must come from one queue (one schedule)");
  const std::uint64_t* ref = seq(0);
  for (int r = 1; r < w; ++r) {
    const std::uint64_t* other = seq(r);
    const std::size_t n = std::min(ref[0], other[0]);
    std::size_t i = 0;
    while (i < n && std::equal(ref + kHeader + i * kFields, ref + kHeader + (i + 1) * kFields, other + kHeader + i * kFields)) ++i;
    if (i == n && ref[0] == other[0]) continue;
    auto at = [&](const std::uint64_t* s, int rank) {
      return "rank " + std::to_string(ex.world_rank(rank)) +
             (i < s[0] ? " issued " + describe(s + kHeader + i * kFields) : " issued nothing more");
    };
    TZ_THROW(CommError, "collective order check at " + when + ": the ranks' collectives differ at #" + std::to_string(i + 1) + ": " +
                            at(ref, 0) + ", " + at(other, r));
  }
}

}  // namespace tierzero
