#include "sim/pipeline.h"

#include <algorithm>
#include <string>

#include "tierzero/error.h"

namespace tierzero {

Level PipelineShape::level_in(const Topology& world) const { return level ? *level : world.levels().back(); }

Topology PipelineShape::data_topology(const Topology& world) const {
  const std::string degree = "pp = " + std::to_string(stages);
  TZ_CHECK(stages >= 1, ConfigError, degree + ": the pipeline's stage count must be at least 1");
  TZ_CHECK(virtual_stages >= 1, ConfigError, "the pipeline's virtual stages must be at least 1");
  return stages == 1 ? world : factor_level(world, level_in(world), stages, degree, "pp_level");
}

std::string PipelineShape::schedule() const { return virtual_stages == 1 ? "1f1b" : "interleaved:" + std::to_string(virtual_stages); }

void PipelineShape::set_schedule(std::string_view name) {
  const std::string_view prefix = "interleaved:";
  if (name == "1f1b") {
    virtual_stages = 1;
    return;
  }
  int v = 0;
  if (name.starts_with(prefix) && name.size() > prefix.size() && name.size() <= prefix.size() + 4 &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    v = std::stoi(std::string(name.substr(prefix.size())));
  TZ_CHECK(v >= 2, ConfigError, "pipeline schedule '" + std::string(name) + "': 1f1b, or interleaved:V with V >= 2 virtual stages per rank");
  virtual_stages = v;
}

std::optional<SimInput> pipeline_stage(const SimInput& in) {
  const PipelineShape& p = in.pipeline;
  if (p.stages == 1) return std::nullopt;
  const std::string schedule = p.virtual_stages == 1 ? "1f1b" : "interleaved";
  const auto& offered = in.engine.pipeline;
  TZ_CHECK(std::find(offered.begin(), offered.end(), schedule) != offered.end(), ConfigError,
           "the " + in.engine.name + " engine does not run the " + schedule + " pipeline schedule (data/engines: pipeline)");
  const int chunks = p.stages * p.virtual_stages;
  TZ_CHECK(in.model.layers % chunks == 0, ConfigError,
           "pp = " + std::to_string(p.stages) + (p.virtual_stages > 1 ? " x " + std::to_string(p.virtual_stages) + " virtual stages" : "") +
               " does not divide the model's " + std::to_string(in.model.layers) + " layers");
  TZ_CHECK(p.virtual_stages == 1 || in.grad_accum % p.stages == 0, ConfigError,
           "the interleaved schedule needs micro-batches per step (" + std::to_string(in.grad_accum) + ") a multiple of pp = " +
               std::to_string(p.stages));
  SimInput stage = in;
  stage.model.layers = in.model.layers / p.stages;
  stage.model.tied = true;
  return stage;
}

double schedule_slots(const PipelineShape& p, int micro_batches) {
  return micro_batches + static_cast<double>(p.stages - 1) / p.virtual_stages;
}

double in_flight_micro_batches(const PipelineShape& p, int micro_batches) {
  if (p.virtual_stages == 1) return std::min(p.stages, micro_batches);
  return p.stages * (1.0 + static_cast<double>(p.stages - 1) / (static_cast<double>(p.stages) * p.virtual_stages));
}

HopTransfer stage_transfer(const SimInput& in, const Topology& world, int seq_len) {
  HopTransfer x{Phase::pipeline, Collective::all_gather, 2, {}, 0, -1};
  const double elements = static_cast<double>(in.micro_batch) * seq_len * in.model.channels / in.mesh.tp;
  x.bytes[static_cast<int>(in.pipeline.level_in(world))] = static_cast<std::uint64_t>(elements * in.engine.activation_bytes);
  return x;
}

}  // namespace tierzero
