#include "comm/comm_thread.h"

#include "comm/hier/hop_state.h"

namespace tierzero {

namespace {
class TicketRequest final : public Request::Impl {
 public:
  TicketRequest(CommThread* t, std::uint64_t ticket) : thread_(t), ticket_(ticket) {}
  void wait() override { thread_->wait(ticket_); }
  bool test() override { return thread_->done(ticket_); }
  Impl* move_to(void* where) noexcept override { return new (where) TicketRequest(*this); }

 private:
  CommThread* thread_;
  std::uint64_t ticket_;
};
}  // namespace

CommThread::CommThread() : worker_([this] { run(); }) {}

CommThread::~CommThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  worker_.join();
}

Request CommThread::submit(const CommJob& job) {
  std::uint64_t ticket;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [this] { return queued_ - completed_ < kSlots; });
    ticket = queued_++;
    ring_[ticket % kSlots] = job;
  }
  work_.notify_one();
  return Request::make<TicketRequest>(this, ticket);
}

void CommThread::wait(std::uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return completed_ > ticket; });
  if (error_ && failed_ticket_ <= ticket) std::rethrow_exception(error_);
}

bool CommThread::done(std::uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ > ticket;
}

void CommThread::run() {
  for (;;) {
    CommJob job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [this] { return stopping_ || queued_ > completed_; });
      if (queued_ == completed_) return;
      job = ring_[completed_ % kSlots];
    }
    std::exception_ptr err;
    if (!error_) {  // after a failure the remaining jobs are not run: the collectives are out of step
      try {
        job.state->mem->wait_for(job.after);
        job.run(job);
        job.state->mem->fence();  // the job's results are complete when its Request is
      } catch (...) {
        err = std::current_exception();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (err && !error_) error_ = err, failed_ticket_ = completed_;
      ++completed_;
    }
    finished_.notify_all();
  }
}

}  // namespace tierzero
