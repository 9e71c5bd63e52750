// A job of a CommSchedule (comm/comm_schedule.h): plain data, copied
// into the schedule's ring. On the executor, `mem` waits for `after` (the
// queuing thread's work, marked by submit()), `run` is applied to the job,
// and `mem` is fenced.
// A hierarchical collective names its HopState; a flat one its communicator
// (and the level phase it is timed as). `kind` is what the executor's clock
// (comm/exec_clock.h) charges the job to; `tag` and `queued_ns` are what
// the queuing thread's flight context said (comm/flight_state.h).
#pragma once
#include <cstddef>

#include "comm/comm_schedule.h"
#include "comm/exec_clock.h"
#include "comm/flight_state.h"
#include "tierzero/topology.h"
#include "quant/quant.h"

namespace tierzero {

struct HopState;

struct CommJob {
  void (*run)(const CommJob&) = nullptr;
  Memory* mem = nullptr;
  MemMark after;
  HopState* state = nullptr;  // hierarchical collectives
  Communicator* comm = nullptr;  // flat collectives
  const void* send = nullptr;
  void* recv = nullptr;
  std::size_t count = 0;
  DType type = DType::f32;
  ReduceOp op = ReduceOp::sum;
  HopBits bits;
  QuantSpec quant;
  CommKind kind = CommKind::control;
  int flat_phase = 0;  // phase_index of the flat communicator's widest level
  FlightTag tag;
  std::int64_t queued_ns = 0;  // 0 when the recorder is off
};

}  // namespace tierzero
