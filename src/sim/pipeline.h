// Pipeline parallelism priced (tierzero/simulator.h, PipelineShape): the
// stage a step waits on, its schedule's bubble, the activations it holds and
// the point-to-point transfers between stages (docs/simulator.md,
// "Pipeline parallelism"). The engines' schedules are Megatron-LM's: 1F1B
// and interleaved 1F1B (Narayanan et al. 2021, sections 2.2.1 and 2.2.2).
#pragma once
#include <optional>

#include "sim/traffic_model.h"
#include "tierzero/simulator.h"

namespace tierzero {

// The job as one stage of its pipeline sees it (none when stages = 1: the
// job is its own stage, and simulate() prices it without a copy): the model with layers / stages blocks and one vocabulary
// matrix, the last stage's head (or the first's embedding, as large; with
// a tied head Megatron keeps a copy of the embedding on the last stage, so
// each end stage holds one). Its op list is the last stage's (blocks, head
// and loss) with the first's embedding lookup, and its states the larger
// end stage's. Throws ConfigError naming the values when stages x
// virtual_stages does not divide the layers, when an interleaved schedule's
// micro-batches are not a multiple of the stages (Megatron-LM requires
// both), or when the engine does not run the schedule.
std::optional<SimInput> pipeline_stage(const SimInput& in);

// The micro-batch slots one step lasts on a stage: m + (p - 1) / v, of
// which (p - 1) / v are the bubble (Narayanan et al. 2021, section 2.2).
double schedule_slots(const PipelineShape& p, int micro_batches);

// The micro-batches whose activations the first stage holds at once: 1F1B
// min(p, m); interleaved p (1 + (p - 1) / (p v)) (Megatron-LM's
// megatron/training/theoretical_memory_usage.py).
double in_flight_micro_batches(const PipelineShape& p, int micro_batches);

// One micro-batch's activation (or its gradient) from one stage to the
// next, as rank 0 of `world` receives it: [micro-batch x sequence, channels]
// in the engine's activation bytes, 1/tp of it under tensor parallelism
// (each member sends its slice: Megatron-LM's scatter/gather optimisation,
// Narayanan et al. 2021, section 4.1), over the pipeline's level; `seq_len`
// the tokens of each sequence a member holds (seq/cp under context parallelism).
HopTransfer stage_transfer(const SimInput& in, const Topology& world, int seq_len);

}  // namespace tierzero
