#include "comm/comm_schedule.h"

#include "comm/comm_job.h"

#include <chrono>

namespace tierzero {

namespace {
class TicketRequest final : public Request::Impl {
 public:
  TicketRequest(CommSchedule* s, std::uint64_t ticket) : schedule_(s), ticket_(ticket) {}
  void wait() override { schedule_->wait(ticket_); }
  bool test() override { return schedule_->done(ticket_); }
  Impl* move_to(void* where) noexcept override { return new (where) TicketRequest(*this); }

 private:
  CommSchedule* schedule_;
  std::uint64_t ticket_;
};

CommJob flat_job(void (*run)(const CommJob&), Communicator& comm, Memory& mem, const void* send, void* recv, std::size_t count,
                 DType t, CommKind kind, ReduceOp op = ReduceOp::sum) {
  CommJob j;
  j.run = run, j.comm = &comm, j.mem = &mem, j.send = send, j.recv = recv, j.count = count, j.type = t, j.op = op;
  j.kind = kind, j.flat_phase = collective_phase(comm);
  return j;
}
}  // namespace

CommSchedule::CommSchedule(Memory& mem)
    : ring_(std::make_unique<CommJob[]>(kSlots)), flight_queue_(flight_open_queue()), executor_([this] { run(); }) {
  // The executor's first fence prepares its side of the memory (on a GPU:
  // its stream and context, which allocate device memory) now, while no
  // collective is in flight, rather than in the middle of a step.
  CommJob prime;
  prime.run = [](const CommJob&) {};
  prime.mem = &mem;
  submit(prime).wait();
}

CommSchedule::~CommSchedule() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  executor_.join();
}

Request CommSchedule::iall_reduce(Communicator& comm, Memory& mem, const void* send, void* recv, std::size_t count, DType t,
                                  ReduceOp op, CommKind kind) {
  return submit(flat_job([](const CommJob& j) { j.comm->all_reduce(j.send, j.recv, j.count, j.type, j.op); }, comm, mem, send, recv,
                         count, t, kind, op));
}

Request CommSchedule::iall_gather(Communicator& comm, Memory& mem, const void* send, void* recv, std::size_t count, DType t,
                                  CommKind kind) {
  return submit(flat_job([](const CommJob& j) { j.comm->all_gather(j.send, j.recv, j.count, j.type); }, comm, mem, send, recv, count, t,
                         kind));
}

Request CommSchedule::ireduce_scatter(Communicator& comm, Memory& mem, const void* send, void* recv, std::size_t count, DType t,
                                      ReduceOp op, CommKind kind) {
  return submit(flat_job([](const CommJob& j) { j.comm->reduce_scatter(j.send, j.recv, j.count, j.type, j.op); }, comm, mem, send, recv,
                         count, t, kind, op));
}

Request CommSchedule::submit(CommJob job) {
  job.after = job.mem->mark();  // the executor sends what the queuing thread has written
  job.tag = flight_context().tag;
  job.queued_ns = flight_recorder().on.load(std::memory_order_relaxed) ? flight_now_ns() : 0;
  std::uint64_t ticket;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (queued_ - completed_ >= kSlots) {
      const auto t0 = std::chrono::steady_clock::now();
      finished_.wait(lock, [this] { return queued_ - completed_ < kSlots; });
      submit_blocked_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    ticket = queued_++;
    ring_[ticket % kSlots] = job;
  }
  work_.notify_one();
  return Request::make<TicketRequest>(this, ticket);
}

void CommSchedule::wait(std::uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return completed_ > ticket; });
  if (error_ && failed_ticket_ <= ticket) std::rethrow_exception(error_);
}

bool CommSchedule::done(std::uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ > ticket;
}

void CommSchedule::run() {
  for (;;) {
    CommJob job;
    std::uint64_t ticket;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [this] { return stopping_ || queued_ > completed_; });
      if (queued_ == completed_) return;
      ticket = completed_;
      job = ring_[ticket % kSlots];
    }
    std::exception_ptr err;
    if (!error_) {  // after a failure the remaining jobs are not run: the collectives are out of step
      flight_job_started(flight_queue_, ticket);
      const FlightJobScope recorded(job.tag, job.queued_ns, flight_queue_, ticket);
      clock_.begin(job.kind);
      try {
        job.mem->wait_for(job.after);
        job.mem->fence();  // a flat collective reads what the waited-for work wrote
        if (job.comm) clock_.enter(job.flat_phase);
        job.run(job);
        if (job.comm) clock_.enter(phase_index(CommPhase::local));
        job.mem->fence();  // the job's results are complete when its Request is
      } catch (...) {
        err = std::current_exception();
      }
      clock_.end();
      if (!err) flight_job_finished(flight_queue_, ticket);
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
