// Fault injection for the tests (docs/formats.md, "Fault injection"), read
// once from the environment; each names the rank R (its world rank) and
// the step S it acts in (S counted from 1: the S-th step, the one after
// which S steps are done; docs/formats.md, "Step numbers"):
//   TIERZERO_FAULT_STALL=R:S[:WHERE]  rank R stops for good at step S, as a
//       hung process would, WHERE being
//         step     before the step's work (the default);
//         compute  in the step's forward of its first block (activity
//                  "forward"), before it queues the prefetch that follows;
//         io       its swap files' I/O thread, before its next read or
//                  write (--offload-param or --offload-optimizer nvme): the
//                  training thread then waits for offload I/O.
//   TIERZERO_FAULT_MISMATCH=R:S  rank R's loss-and-norm all-reduce of step S
//       carries one value more than the other ranks' (a collective whose
//       bytes differ between ranks).
//   TIERZERO_FAULT_KILL_IN_SAVE=R  rank R SIGKILLs itself halfway through
//       writing its checkpoint shards.
// Read-only after the first call; any thread.
#pragma once
#include <cstdint>

namespace tierzero {

enum class StallSite { step, compute, io };

class Faults {
 public:
  // Whether rank `rank` stalls at `site` in step `step`.
  bool stalls(StallSite site, int rank, std::int64_t step) const;
  // Whether rank `rank`'s loss-and-norm all-reduce of `step` is made to mismatch.
  bool mismatches(int rank, std::int64_t step) const;
  bool killed_in_save(int rank) const { return kill_in_save_rank_ >= 0 && kill_in_save_rank_ == rank; }

 private:
  friend const Faults& faults();
  Faults();
  struct At {
    int rank = -1;
    std::int64_t step = -1;
  };
  At stall_, mismatch_;
  StallSite stall_site_ = StallSite::step;
  int kill_in_save_rank_ = -1;
};
const Faults& faults();

// Stops the calling thread for good (the process goes on: signals are still handled).
[[noreturn]] void stall_forever();
// Asks the I/O threads of the swap files to stall before their next job;
// each calls stall_io_if_asked() before every job.
void stall_io_threads();
void stall_io_if_asked();

}  // namespace tierzero
