#include "sim_output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>
#include <fmt/format.h>

#include "tierzero/corpus.h"
#include "tierzero/plan.h"
#include "tierzero/train_config.h"

namespace tierzero::cli {

std::string figure(double v, int decimals) {
  constexpr int kSignificant = 3, kMostPlaces = 12;
  int places = decimals;
  if (v != 0 && std::isfinite(v))
    places = std::clamp(kSignificant - 1 - static_cast<int>(std::floor(std::log10(std::fabs(v)))), decimals, kMostPlaces);
  return fmt::format("{:.{}f}", v, places);
}

double level_time(const SimResult& r, Level level) {
  const int l = static_cast<int>(level);
  return r.comm_time_s[l] + r.latency_s[l] + r.quant_time_s[l];
}

std::string level_times(const SimResult& r, const SimResult& other, const Topology& topo) {
  std::string out;
  for (Level l : topo.levels())
    if (topo.fanout(l) > 1)
      out += fmt::format("{}{} {} vs {} s", out.empty() ? "" : ", ", level_name(l), figure(level_time(r, l), 3), figure(level_time(other, l), 3));
  return out.empty() ? "no level joins ranks (one rank)" : out;
}

nlohmann::ordered_json per_level(const std::array<double, kNumLevels>& v) {
  nlohmann::ordered_json j;
  for (Level l : kAllLevels) j[std::string(level_name(l))] = v[static_cast<int>(l)];
  return j;
}

nlohmann::ordered_json memory_json(const SimResult& r) {
  nlohmann::ordered_json j;
  for (const auto& [k, v] : r.memory_bytes) j[k] = v;
  j["total"] = r.memory_total;
  return j;
}

const char* fits_word(bool fits, bool at_memory_limit) { return !fits ? "NO" : at_memory_limit ? "limit" : "yes"; }

std::string memory_limit_note(const SimResult& r, double capacity) {
  return fmt::format("at the memory limit: {} GB free, less than the largest allocation the step repeats for every block ({} GB): the caching "
                     "allocator will free its cache and retry (cudaMalloc retries), so the step runs slower than predicted; "
                     "a smaller micro-batch or more recomputation leaves room",
                     figure((capacity - r.memory_total) / 1e9, 2), figure(r.largest_allocation / 1e9, 2));
}

int sequence_length(const SimInput& in) {
  TrainConfig c;
  c.model = in.model;
  c.seq_len = in.seq_len;
  return c.effective_seq_len();
}

namespace {
std::string assumed(const SimInput& in, const Recompute& recompute) {
  const std::string seq = in.seq_len > 0 ? "" : fmt::format(" (the model's context, at most {})", TrainConfig::kDefaultMaxSeqLen);
  // Under an eager engine a Llama's norms and rotary embedding cost what its code makes them (data/model-code): say which.
  std::string code = in.model_code.name.empty() ? "" : ", model code " + in.model_code.name;
  if (code.empty() && in.engine.elementwise_traffic > 1 && in.model.family() == "llama")
    code = ", norms and rotary embedding as the engine's kernels (--model-code for Hugging Face's, torchtitan's or fms's layers)";
  const char* prefetch = in.engine.backward_prefetch == BackwardPrefetch::post ? " with backward prefetch post" : "";
  const PipelineShape& p = in.pipeline;
  const std::string pipeline =
      p.stages == 1 ? "" : fmt::format(", pipeline of {} stages on the {} level ({}{})", p.stages, level_name(p.level_in(in.topology())), p.schedule(),
                                        p.split == PipelineShape::Split::even ? "" : ", layers split " + p.split_name());
  const ContextShape& c = in.context;
  const std::string context =
      c.degree == 1 ? "" : fmt::format(", context parallel {} on the {} level ({})", c.degree, level_name(c.level_in(in.data_topology())), c.kind_name());
  return fmt::format("assumed: micro-batch {} x sequence {}{}, {} micro-batch{} per step, recompute {}, {} parameters, engine {}{}{}{}{}",
                     in.micro_batch, sequence_length(in), seq, in.grad_accum, in.grad_accum == 1 ? "" : "es", recompute.name(),
                     dtype_name(in.dtype), in.engine.name, prefetch, code, pipeline, context);
}
}  // namespace

void print_assumptions(const SimInput& in, bool json, const std::string& note) {
  std::FILE* out = json ? stderr : stdout;
  const std::string why = uncalibrated(in.system.device);
  const std::string& name = in.system.device.name;
  const std::string device = why.empty() ? "" : "; device " + name + (name.empty() ? "" : " ") + "uncalibrated: " + why;
  std::fprintf(out, "%s%s%s\n", assumed(in, in.recompute).c_str(), device.c_str(), note.c_str());
  std::fflush(out);
}

void write_simulated_plan(const std::string& path, const std::string& what, const std::string& model, const SimInput& in,
                          const Recompute& recompute, const SimResult& r) {
  Plan plan = in.plan;
  plan.optim_offload.nvme_path = plan.param_offload.nvme_path = "";  // the run names the directory (--nvme-path)
  const Topology topo = in.topology();
  std::string bytes;
  for (Level l : topo.levels()) bytes += fmt::format("{}{} {}", bytes.empty() ? "" : ", ", level_name(l), r.bytes_per_level[static_cast<int>(l)]);
  // train recomputes all blocks or none (its default: all).
  const std::string train = fmt::format(
      "tierzero train --plan {} --model {} --topology {} --micro-batch {} --seq-len {}{}{}", path, model, topo.to_string(),
      in.micro_batch, sequence_length(in), in.grad_accum == 1 ? "" : fmt::format(" --grad-accum {}", in.grad_accum),
      recompute.any() ? "" : " --no-recompute");
  std::vector<std::string> comment = {
      what, fmt::format("{} ranks of {} ({})", in.ranks, in.system.name, topo.to_string()), assumed(in, recompute),
      fmt::format("predicted: {} s per step, {} TFLOPS and {} tokens/s per device, {} GB per rank; bytes received per rank and step by "
                  "level: {}",
                  figure(r.step_time_s, 3), figure(r.tflops_per_device, 2), figure(r.tokens_per_s_per_device, 0), figure(r.memory_total / 1e9, 2),
                  bytes)};
  if (recompute.any() && recompute.kind != Recompute::Kind::full)
    comment.push_back("train recomputes every block, not " + recompute.name() + ": its step time and memory differ");
  comment.push_back("run it (" + std::to_string(in.ranks) + " ranks): " + train);
  write_plan_file(path, plan, comment, in.mesh.tp, in.mesh.tp_level, in.mesh.sp);
}

}  // namespace tierzero::cli
