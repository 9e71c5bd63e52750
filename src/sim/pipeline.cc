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

std::string PipelineShape::split_name() const {
  switch (split) {
    case Split::ends: return "ends:" + std::to_string(first_layers) + "," + std::to_string(last_layers);
    case Split::embedding: return "embedding";
    case Split::even: break;
  }
  return "even";
}

void PipelineShape::set_split(std::string_view name) {
  const std::string bad = "pipeline split '" + std::string(name) + "': even, embedding, or ends:F,L (F and L >= 1 layers on the first and last stages)";
  if (name == "even" || name == "embedding") {
    split = name == "even" ? Split::even : Split::embedding;
    first_layers = last_layers = 0;
    return;
  }
  const std::string_view prefix = "ends:";
  TZ_CHECK(name.starts_with(prefix), ConfigError, bad);
  const std::string_view rest = name.substr(prefix.size());
  const std::size_t comma = rest.find(',');
  const auto count = [&](std::string_view digits) {
    TZ_CHECK(!digits.empty() && digits.size() <= 6 && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }),
             ConfigError, bad);
    const int n = std::stoi(std::string(digits));
    TZ_CHECK(n >= 1, ConfigError, bad);
    return n;
  };
  TZ_CHECK(comma != std::string_view::npos, ConfigError, bad);
  first_layers = count(rest.substr(0, comma));
  last_layers = count(rest.substr(comma + 1));
  split = Split::ends;
}

std::vector<int> stage_layers(const PipelineShape& p, int layers) {
  const int n = p.stages;
  const std::string pp = "pp = " + std::to_string(n);
  if (p.split == PipelineShape::Split::even) {
    const int chunks = n * p.virtual_stages;
    TZ_CHECK(layers % chunks == 0, ConfigError,
             pp + (p.virtual_stages > 1 ? " x " + std::to_string(p.virtual_stages) + " virtual stages" : "") + " does not divide the model's " +
                 std::to_string(layers) + " layers");
    return std::vector<int>(static_cast<std::size_t>(n), layers / n);
  }
  TZ_CHECK(p.virtual_stages == 1, ConfigError,
           "pipeline split " + p.split_name() + " with the interleaved schedule: only 1f1b splits the layers unevenly here (split even)");
  int first = p.first_layers, last = p.last_layers;
  if (p.split == PipelineShape::Split::embedding) {
    // DeepSpeed's PipelineModule (partition_method "type:...|embedding") weighs the embedding and the tied head as a layer
    // each; with the stages dividing the L + 2 items, every stage holds (L + 2) / p of them, the end stages one an embedding.
    TZ_CHECK((layers + 2) % n == 0, ConfigError,
             "pipeline split embedding: " + pp + " does not divide the model's " + std::to_string(layers) +
                 " layers + 2 (the embedding and the head counted as layers)");
    first = last = (layers + 2) / n - 1;
    TZ_CHECK(first >= 1, ConfigError,
             "pipeline split embedding: " + pp + " leaves the end stages no layer of the model's " + std::to_string(layers));
  }
  const int middle = layers - first - last, inner = n - 2;
  const std::string ends = "pipeline split " + p.split_name() + ": ";
  TZ_CHECK(n >= 2, ConfigError, ends + "needs pp >= 2");
  if (inner == 0) {
    TZ_CHECK(middle == 0, ConfigError, ends + "the two stages hold " + std::to_string(first + last) + " of the model's " + std::to_string(layers) + " layers");
  } else {
    TZ_CHECK(middle >= inner && middle % inner == 0, ConfigError,
             ends + "the " + std::to_string(std::max(middle, 0)) + " layers left of the model's " + std::to_string(layers) +
                 " do not split evenly over the " + std::to_string(inner) + " other stages, at least 1 each");
  }
  std::vector<int> out(static_cast<std::size_t>(n), inner > 0 ? middle / inner : 0);
  out.front() = first, out.back() = last;
  return out;
}

std::vector<SimInput> pipeline_stages(const SimInput& in) {
  const PipelineShape& p = in.pipeline;
  if (p.stages == 1) return {};
  const std::string schedule = p.virtual_stages == 1 ? "1f1b" : "interleaved";
  const auto& offered = in.engine.pipeline;
  TZ_CHECK(std::find(offered.begin(), offered.end(), schedule) != offered.end(), ConfigError,
           "the " + in.engine.name + " engine does not run the " + schedule + " pipeline schedule (data/engines: pipeline)");
  const std::vector<int> layers = stage_layers(p, in.model.layers);
  TZ_CHECK(p.virtual_stages == 1 || in.grad_accum % p.stages == 0, ConfigError,
           "the interleaved schedule needs micro-batches per step (" + std::to_string(in.grad_accum) + ") a multiple of pp = " +
               std::to_string(p.stages));
  std::vector<SimInput> out(1, in);
  out[0].model.layers = std::max(layers.front(), layers.back());
  out[0].model.tied = true;
  out[0].pipeline.priced_stage = 0;
  const auto heaviest = std::max_element(layers.begin() + 1, layers.end() - 1);
  if (heaviest != layers.end() - 1 && *heaviest > out[0].model.layers) {
    SimInput inner = out[0];
    inner.model.layers = *heaviest;
    inner.model.vocab = in.mesh.tp;  // one row per member: no embedding or head of its own (the ops leave them out)
    inner.pipeline.priced_stage = static_cast<int>(heaviest - layers.begin());
    out.push_back(inner);
  }
  return out;
}

double schedule_slots(const PipelineShape& p, int micro_batches) {
  return micro_batches + static_cast<double>(p.stages - 1) / p.virtual_stages;
}

double in_flight_micro_batches(const PipelineShape& p, int micro_batches) {
  if (p.virtual_stages == 1) return std::min(p.stages - p.priced_stage, micro_batches);
  return p.stages * (1.0 + static_cast<double>(p.stages - 1) / (static_cast<double>(p.stages) * p.virtual_stages));
}

HopTransfer stage_transfer(const SimInput& in, const Topology& world, int seq_len) {
  HopTransfer x{Phase::pipeline, Collective::all_gather, 2, {}, 0, -1};
  const double elements = static_cast<double>(in.micro_batch) * seq_len * in.model.channels / in.mesh.tp;
  x.bytes[static_cast<int>(in.pipeline.level_in(world))] = static_cast<std::uint64_t>(elements * in.engine.activation_bytes);
  return x;
}

}  // namespace tierzero
