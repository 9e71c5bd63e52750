// The --comm-timeout deadline (tierzero/mpi.h's set_comm_timeout), shared
// by the communicator backends: a wait on a collective polls the backend
// until it completes, reports an asynchronous backend failure as CommError,
// and past the deadline ends the whole job (exit code 3) with a message
// naming the collective, its level and its ranks, after letting the
// backend abort its communicators (NCCL: ncclCommAbort on every one, so no
// kernel keeps waiting for a peer).
#pragma once
#include <chrono>
#include <thread>

#include "tierzero/communicator.h"
#include "tierzero/error.h"

namespace tierzero {

// Seconds a wait may take (0: no limit).
double comm_timeout_s();

// Prints "rank R: collective WHAT on level L among ranks {...} did not
// complete within S s (--comm-timeout); ...", writes the rank's flight
// record (tierzero/flight_recorder.h), calls abort_backend (when
// given), then aborts every rank of the job with exit code 3 (a process
// without MPI exits with 3).
[[noreturn]] void comm_timed_out(const Communicator& comm, const char* what, double limit_s, void (*abort_backend)());

// How a wait spends the time between polls: yield (MPI, whose progress
// needs the polls) or, for a device that completes on its own (NCCL),
// yield for 50 µs and then sleep 20 µs between polls, so that a waiting
// thread does not keep a core from the compute, executor and driver
// threads that share it.
enum class Idle { yield, sleep };

// Polls until done() is true. failure() returns nullptr, or the backend's
// asynchronous error, which is thrown as CommError naming `what`. Past the
// comm timeout: comm_timed_out(comm, what, ..., abort_backend).
template <class Done, class Failure>
void wait_polling(const Communicator& comm, const char* what, Done done, Failure failure, void (*abort_backend)(),
                  Idle idle = Idle::yield) {
  using namespace std::chrono_literals;
  const double limit = comm_timeout_s();
  const auto start = std::chrono::steady_clock::now();
  while (!done()) {
    if (const char* why = failure()) TZ_THROW(CommError, std::string("collective ") + what + " failed: " + why);
    const auto waited = std::chrono::steady_clock::now() - start;
    if (limit > 0 && std::chrono::duration<double>(waited).count() > limit) comm_timed_out(comm, what, limit, abort_backend);
    if (idle == Idle::sleep && waited > 50us) std::this_thread::sleep_for(20us);
    else std::this_thread::yield();
  }
}

}  // namespace tierzero
