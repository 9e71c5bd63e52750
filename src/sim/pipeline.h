// Pipeline parallelism priced (tierzero/simulator.h, PipelineShape): the
// stage a step waits on, its schedule's bubble, the activations it holds and
// the point-to-point transfers between stages (docs/simulator.md,
// "Pipeline parallelism"). The engines' schedules are Megatron-LM's: 1F1B
// and interleaved 1F1B (Narayanan et al. 2021, sections 2.2.1 and 2.2.2).
#pragma once
#include <vector>

#include "sim/traffic_model.h"
#include "tierzero/simulator.h"

namespace tierzero {

// Each stage's layers (stage 0 first) under the pipeline's split
// (PipelineShape::split). Throws ConfigError naming the values when even and
// stages x virtual_stages do not divide the layers (Megatron-LM requires
// it); when ends and the layers left for the other stages do not split
// evenly over them (with two stages: the ends' do not add up to the layers);
// when embedding and the stages do not divide the layers + 2 (refused here,
// not by DeepSpeed: where they do not, partition_balanced's placement of
// the remainder is not modelled); when a stage would hold no layer; and
// when a split other than even meets the interleaved schedule (not modelled:
// Megatron-LM's chunks are even).
std::vector<int> stage_layers(const PipelineShape& p, int layers);

// The stages of the job simulate() prices (none when stages = 1: the job is
// its own stage, priced without a copy); the step waits on the slowest and
// the device must hold the largest. First the end stages, as one: the model
// with the larger of the first's and the last's layers and one vocabulary
// matrix, the last stage's head (or the first's embedding, as large; with a
// tied head Megatron keeps a copy of the embedding on the last stage, so
// each end stage holds one); its op list the last stage's (blocks, head and
// loss) with the first's embedding lookup, its states the larger end
// stage's. Then, where an interior stage holds more layers than both ends,
// the first such stage (PipelineShape::priced_stage): its blocks alone, no
// embedding, head or loss (its model keeps a vocabulary of one row per
// tensor-parallel member: the layout always holds an embedding and a head,
// here C parameters per member beside its blocks'). Throws ConfigError
// naming the values as stage_layers does, when an interleaved schedule's
// micro-batches are not a multiple of the stages (Megatron-LM requires it),
// or when the engine does not run the schedule.
std::vector<SimInput> pipeline_stages(const SimInput& in);

// The micro-batch slots one step lasts on a stage: m + (p - 1) / v, of
// which (p - 1) / v are the bubble (Narayanan et al. 2021, section 2.2).
double schedule_slots(const PipelineShape& p, int micro_batches);

// The micro-batches whose activations the priced stage holds at once: 1F1B
// min(p - s, m) on stage s (the first's, s = 0, for the end stages: the
// first stage holds the most); interleaved p (1 + (p - 1) / (p v)) on the
// first (Megatron-LM's megatron/training/theoretical_memory_usage.py).
double in_flight_micro_batches(const PipelineShape& p, int micro_batches);

// One micro-batch's activation (or its gradient) from one stage to the
// next, as rank 0 of `world` receives it: [micro-batch x sequence, channels]
// in the engine's activation bytes, 1/tp of it under tensor parallelism
// (each member sends its slice: Megatron-LM's scatter/gather optimisation,
// Narayanan et al. 2021, section 4.1), over the pipeline's level; `seq_len`
// the tokens of each sequence a member holds (seq/cp under context parallelism).
HopTransfer stage_transfer(const SimInput& in, const Topology& world, int seq_len);

}  // namespace tierzero
