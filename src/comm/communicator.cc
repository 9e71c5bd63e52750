#include "tierzero/communicator.h"

#include "tierzero/error.h"

namespace tierzero {

Request::Request(Request&& o) noexcept {
  if (o.impl_) {
    impl_ = o.impl_->move_to(storage_);
    o.reset();
  }
}

Request& Request::operator=(Request&& o) noexcept {
  if (this != &o) {
    if (impl_) impl_->wait();
    reset();
    if (o.impl_) {
      impl_ = o.impl_->move_to(storage_);
      o.reset();
    }
  }
  return *this;
}

Request::~Request() {
  if (impl_) {
    try {
      impl_->wait();
    } catch (...) {  // a failed collective is reported to whoever waits for it; a destructor only must not leave it running
    }
  }
  reset();
}

void Request::reset() noexcept {
  if (impl_) impl_->~Impl();
  impl_ = nullptr;
}

void Request::wait() {
  if (impl_) {
    impl_->wait();
    reset();
  }
}

bool Request::test() { return !impl_ || impl_->test(); }

std::string describe_collective(std::uint64_t comm, Collective c, std::uint64_t bytes, std::string_view dtype) {
  return std::string(collective_name(c)) + " on communicator " + std::to_string(comm) + " (" + std::to_string(bytes) + " bytes" +
         (dtype.empty() ? "" : " of " + std::string(dtype)) + ")";
}

Communicator::Communicator(Topology topology, std::vector<int> members, std::shared_ptr<Traffic> traffic)
    : topology_(std::move(topology)), members_(std::move(members)), traffic_(std::move(traffic)) {}

void Communicator::count_from(int peer, std::size_t bytes) const {
  const int me = members_[rank()];
  const int other = members_[peer];
  if (me != other && bytes > 0) traffic_->add(topology_.separating_level(me, other), bytes);
}

void Communicator::count_from_each(std::size_t bytes) const {
  for (int j = 0; j < size(); ++j) count_from(j, bytes);
}

void Communicator::count_all_reduce(std::size_t count, std::size_t elem_size) const {
  const std::size_t mine = even_chunk(count, size(), rank());
  for (int j = 0; j < size(); ++j) count_from(j, (mine + even_chunk(count, size(), j)) * elem_size);
}

std::unique_ptr<Communicator> Communicator::split(Level level) {
  const int me = members_[rank()];
  return split_by(topology_.group(level, me).front());
}

std::unique_ptr<Communicator> Communicator::cross(Level level) {
  const int me = members_[rank()];
  return split_by(topology_.cross_group(level, me).front());
}

std::unique_ptr<Communicator> Communicator::hop(Level level) {
  const int me = members_[rank()];
  return split_by(topology_.hop_group(level, me).front());
}

std::array<std::uint64_t, kNumLevels> Traffic::snapshot() const {
  std::array<std::uint64_t, kNumLevels> s{};
  for (int i = 0; i < kNumLevels; ++i) s[i] = bytes_[i].load(std::memory_order_relaxed);
  return s;
}

std::uint64_t Traffic::total() const {
  std::uint64_t t = 0;
  for (auto& b : bytes_) t += b.load(std::memory_order_relaxed);
  return t;
}

void Traffic::reset() {
  for (auto& b : bytes_) b.store(0, std::memory_order_relaxed);
}

std::array<std::uint64_t, kNumLevels> traffic_delta(const std::array<std::uint64_t, kNumLevels>& before,
                                                    const std::array<std::uint64_t, kNumLevels>& after) {
  std::array<std::uint64_t, kNumLevels> d{};
  for (int i = 0; i < kNumLevels; ++i) d[i] = after[i] - before[i];
  return d;
}

}  // namespace tierzero
