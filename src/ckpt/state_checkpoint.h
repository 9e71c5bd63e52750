// A layout's shards from a full state (tierzero/state_reader.h), unit by
// unit: the slices a rank's shards hold (what the engine loads), and the
// checkpoint a run of any layout would save holding a given state.
#pragma once
#include <string>

#include "plan/shard_layout.h"
#include "tierzero/checkpoint.h"
#include "tierzero/state_reader.h"

namespace tierzero {

// Unit u's part of a shard of layout `s` into out[0, s.shard[u]): the
// unit's elements [s.begin(u), + s.valid(u)) of `part`, then zeros (padding).
void read_unit_shard(StateReader& from, StatePart part, const GptLayout& layout, const ShardLayout& s, int u, float* out);

// Writes under save directory `dir` the checkpoint that a run of `meta`'s
// layout (model, plan, topology and world_size, train.param_dtype) would
// save holding `state`, the rest of `meta` as given: each rank's params
// file (its params shard of the master, in the param dtype) and optim file
// (its optim shard of master, m and v), rank after rank, unit by unit,
// then meta.json with every file's size and CRC-32, made the save
// directory's `latest` as a save is (CheckpointWriter). Holds one unit's
// slice at a time. Returns the step directory. For tests and benchmarks:
// layouts no run on this machine could hold. Throws FormatError when a
// file cannot be written, ConfigError for a meta of tp > 1 (whole-model layouts only).
std::string write_state_checkpoint(const std::string& dir, CheckpointMeta meta, StateReader& state);

}  // namespace tierzero
