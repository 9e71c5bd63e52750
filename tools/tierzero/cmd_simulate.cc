// tierzero simulate | memory: predicted step time, TFLOPS, scaling and memory.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "plan_html.h"
#include "sim_output.h"
#include "validators.h"
#include "tierzero/corpus.h"
#include "tierzero/error.h"
#include "tierzero/planner.h"
#include "tierzero/sensitivity.h"
#include "tierzero/simulator.h"
#include "tierzero/train_config.h"

namespace tierzero::cli {

namespace {
struct SimArgs {
  std::string system = "frontier", model = "gpt-20b", topology, engine = "tierzero";
  std::vector<std::string> strategies = {"zero3", "zeropp", "hier3"};
  bool strategies_given = false;  // --strategy given: every one priced (else those of the defaults the engine runs)
  std::vector<int> ranks = {8, 16, 32, 64, 128, 256, 384};
  // train's defaults (tierzero/train_config.h), so that every command assumes the same run.
  int micro_batch = TrainConfig{}.micro_batch, seq_len = TrainConfig{}.seq_len, grad_accum = TrainConfig{}.grad_accum;
  std::string recompute = TrainConfig{}.recompute ? "full" : "none", attention, model_code = "engine";
  std::string backward_prefetch;  // "" = the engine's
  bool fp8 = false, json = false;
  std::string html;  // --html: the page of the rows --json prints (plan_html.h)
  std::string write_plan, write_plans;  // --write-plan FILE, plan's --write-plans DIR
  double memory_limit_gb = 0, min_quant_gain = 0.05;
  std::string offload_optimizer = "none", offload_param = "none";
  std::size_t persist_threshold = 0;
  std::size_t hop_chunk_bytes = 0;  // simulate's --hop-chunk-bytes (0: whole; plan chooses its own)
  std::size_t top = 10;
  int tp = 1;            // --tp: the tensor-parallel degree (tierzero/mesh.h)
  std::string tp_level;  // --tp-level: its level ("": the innermost declared)
  int pp = 1;            // --pp: pipeline stages (tierzero/simulator.h, PipelineShape)
  std::string pp_schedule = "1f1b", pp_level, pp_split = "even";
  int cp = 1;            // --cp: context-parallel degree (tierzero/simulator.h, ContextShape)
  std::string cp_kind = "ring", cp_level;
  bool sp = false;       // --sp: sequence parallelism
};

// A strategy's plan on a job, and what fit_memory changed in it to fit ("" when nothing).
struct Prepared {
  SimInput in;
  std::string changed;
};

// The command's model, system and batch, read once (rank count and plan come per point).
SimInput job(const SimArgs& a) {
  SimInput in;
  in.ranks = *std::min_element(a.ranks.begin(), a.ranks.end());  // the first point's (each point sets its own)
  in.model = load_model(a.model);
  in.system = load_system(a.system);
  in.micro_batch = a.micro_batch;
  in.seq_len = a.seq_len;
  in.grad_accum = a.grad_accum;
  in.dtype = TrainConfig{}.param_dtype;
  in.recompute = Recompute::parse(a.recompute);
  in.topology_spec = a.topology;
  in.mesh.tp = a.tp;
  if (!a.tp_level.empty()) in.mesh.tp_level = parse_level(a.tp_level);
  in.mesh.sp = a.sp;
  check_tp(in.model, a.tp);
  in.pipeline.stages = a.pp;
  in.pipeline.set_schedule(a.pp_schedule);
  in.pipeline.set_split(a.pp_split);
  if (!a.pp_level.empty()) in.pipeline.level = parse_level(a.pp_level);
  in.context.degree = a.cp;
  in.context.kind = ContextShape::parse_kind(a.cp_kind);
  if (!a.cp_level.empty()) in.context.level = parse_level(a.cp_level);
  TrainConfig sequence;  // the sequence length train would run (seq_len 0: the model's context)
  sequence.model = in.model, sequence.seq_len = in.seq_len;
  in.mesh.check_sp(sequence.effective_seq_len());
  in.engine = engine_profile(a.engine);
  if (!a.backward_prefetch.empty()) {
    TZ_CHECK(a.engine == "fsdp", ConfigError,
             "--backward-prefetch is FSDP1's BackwardPrefetch: it needs --engine fsdp (the " + a.engine + " engine has no such setting)");
    in.engine.backward_prefetch = parse_backward_prefetch(a.backward_prefetch, "--backward-prefetch");
  }
  in.attention = a.attention;
  in.model_code = model_code(a.model_code);
  in.fp8 = a.fp8;
  // The strategies' plans take where the states live (input); the run names the directory.
  in.plan.optim_offload.device = parse_offload(a.offload_optimizer), in.plan.param_offload.device = parse_offload(a.offload_param);
  in.plan.optim_offload.nvme_path = in.plan.param_offload.nvme_path = "<nvme_path>";
  in.plan.persist_threshold = a.persist_threshold;
  in.plan.hop_chunk_bytes = a.hop_chunk_bytes;
  // Before any table (simulate checks each rank count again): the tensor level against the first point's topology too.
  check_context(in, sequence.effective_seq_len());
  if (in.mesh.tp > 1) (void)in.data_topology();
  return in;
}

Prepared input(const SimInput& job, const std::string& strategy, int ranks) {
  SimInput in = job;
  in.ranks = ranks;
  in.plan = fit_to(strategy_plan(strategy), in.data_topology());
  in.plan.optim_offload = job.plan.optim_offload;
  if (in.plan.params) in.plan.param_offload = job.plan.param_offload;  // replicated params stay on the device
  in.plan.persist_threshold = job.plan.persist_threshold;
  in.plan.hop_chunk_bytes = job.plan.hop_chunk_bytes;
  const Plan preset = in.plan;
  in.plan = fit_memory(in);
  std::string changed;
  if (in.plan.bwd_params != preset.bwd_params)
    changed = "bwd_params " + partition_name(preset.bwd_params) + " -> " + partition_name(in.plan.bwd_params) +
              " (the " + partition_name(preset.bwd_params) + " copy does not fit)";
  return {in, changed};
}

nlohmann::ordered_json to_json(const std::string& strategy, int ranks, const SimResult& r, double efficiency) {
  nlohmann::ordered_json j;
  j["strategy"] = strategy;
  j["ranks"] = ranks;
  j["step_time_s"] = r.step_time_s;
  j["compute_time_s"] = r.compute_s;
  j["exposed_comm_s"] = r.exposed_comm_s;
  j["pipeline_bubble_s"] = r.pipeline_bubble_s;  // in compute_time_s
  j["pipeline_p2p_s"] = r.pipeline_p2p_s;        // in exposed_comm_s
  j["context_comm_s"] = r.context_comm_s;        // the context-parallel exchanges' time
  j["context_exposed_s"] = r.context_exposed_s;  // their part in exposed_comm_s
  j["tflops_per_device"] = r.tflops_per_device;
  j["tokens_per_s_per_device"] = r.tokens_per_s_per_device;
  j["scaling_efficiency"] = efficiency;
  j["fits"] = r.fits;
  j["at_memory_limit"] = r.at_memory_limit;
  j["largest_allocation_bytes"] = r.largest_allocation;
  j["collective_calls"] = r.collective_calls;
  nlohmann::ordered_json bytes;
  for (Level l : kAllLevels) bytes[std::string(level_name(l))] = r.bytes_per_level[static_cast<int>(l)];
  j["memory_bytes"] = memory_json(r);
  j["host_bytes"] = r.host_bytes, j["file_bytes"] = r.file_bytes, j["offload_s"] = r.offload_s;  // the offloaded states'
  j["comm_time_s"] = per_level(r.comm_time_s);  // transfer
  j["latency_s"] = per_level(r.latency_s);
  j["quant_s"] = per_level(r.quant_time_s);
  std::array<double, kNumLevels> level_s{};
  for (Level l : kAllLevels) level_s[static_cast<int>(l)] = level_time(r, l);
  j["level_time_s"] = per_level(level_s);  // the three above, summed
  j["bytes_per_level"] = bytes;
  j["physical_bytes"] = {{"package_links", r.package_link_bytes}, {"node_nics", r.node_nic_bytes}};  // into one, per step
  return j;
}

// The step's range (sensitivity.h): what is varied, and the step time, TFLOPS and tokens/s per device at either end.
nlohmann::ordered_json range_json(const SimRange& range) {
  const auto ends = [&](double SimResult::* field, bool rising) {
    return rising ? nlohmann::ordered_json::array({range.slowest.*field, range.fastest.*field})
                  : nlohmann::ordered_json::array({range.fastest.*field, range.slowest.*field});
  };
  return {{"varied", {{"network_bandwidth", {1 - kSensitivity, 1 + kSensitivity}}, {"gemm_efficiency", {1 - kSensitivity, 1 + kSensitivity}}}},
          {"step_time_s", ends(&SimResult::step_time_s, false)},
          {"tflops_per_device", ends(&SimResult::tflops_per_device, true)},
          {"tokens_per_s_per_device", ends(&SimResult::tokens_per_s_per_device, true)}};
}

// The step's range as a column: "fastest-slowest" seconds.
std::string range_span(const SimRange& range) {
  return figure(range.fastest.step_time_s, 3) + "-" + figure(range.slowest.step_time_s, 3);
}

// The strategies simulate prices: those given (--strategy), else those of
// the defaults the engine runs (data/engines: strategies).
std::vector<std::string> strategies_for(const SimArgs& a, const EngineProfile& engine) {
  if (a.strategies_given) return a.strategies;
  std::vector<std::string> out;
  for (const std::string& s : a.strategies)
    if (engine.runs(s)) out.push_back(s);
  return out.empty() ? engine.strategies : out;
}

// "fsdp does not run zeropp, hier3 (its strategies: ...; data/engines/fsdp.toml): priced as if it did", or "" when it runs them all.
std::string not_run_note(const EngineProfile& engine, const std::vector<std::string>& strategies) {
  std::string missing, runs;
  for (const std::string& s : strategies)
    if (!engine.runs(s)) missing += (missing.empty() ? "" : ", ") + s;
  for (const std::string& s : engine.strategies) runs += (runs.empty() ? "" : ", ") + s;
  if (missing.empty()) return "";
  return fmt::format("{} does not run {} (its strategies: {}; data/engines/{}.toml): priced as if it did", engine.name, missing, runs,
                     engine.name);
}

// "tierzero has run tensor parallelism on CPU ranks only so far (...): tp 2 on mi250x-gcd priced as if it ran it", or "".
std::string tp_note(const SimInput& in) {
  if (in.mesh.tp == 1 || in.engine.runs_tensor_parallel(in.system.device.sm_count)) return "";
  return fmt::format("{} has run tensor parallelism on CPU ranks only so far (data/engines/{}.toml: tensor_parallel): tp {} on {} priced as if it "
                     "ran it",
                     in.engine.name, in.engine.name, in.mesh.tp, in.system.device.name.empty() ? in.system.name : in.system.device.name);
}

// The corpus's error band for the job: a tensor-, pipeline- or context-parallel job's over the corpus's runs of that kind.
std::string job_error_band(const SimInput& in, const std::string& engine) {
  return error_band(in.system.device, engine, in.mesh.tp > 1 || in.pipeline.stages > 1 || in.context.degree > 1);
}

int run_simulate(const SimArgs& a) {
  SimRows page_rows;
  // Weak scaling is relative to the smallest rank count, whatever order they are given in.
  std::vector<int> ranks = a.ranks;
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  const SimInput base_job = job(a);
  const std::vector<std::string> strategies = strategies_for(a, base_job.engine);
  print_assumptions(base_job, a.json);
  // A column per level of the job (LEVEL_s: everything it costs: transfer, latency, quantisation); "-" where it joins no ranks.
  SimInput first = base_job;
  first.ranks = ranks.front();
  const std::vector<Level> levels = first.topology().levels();
  if (!a.json) {
    std::string header = fmt::format("{:<8} {:>6} {:>10} {:>10} {:>10} {:>10} {:>8} {:>6} {:>6}", "strategy", "ranks", "step_s", "compute_s",
                                     "TFLOPS", "tokens/s", "scaling", "fits", "GB");
    for (Level l : levels) header += fmt::format(" {:>10}", std::string(level_name(l)) + "_s");
    std::printf("%s %15s  plan change\n", header.c_str(), "step_range_s");
  }
  for (const std::string& s : strategies) {
    double base = 0;
    for (int n : ranks) {
      const Prepared p = input(base_job, s, n);
      const SimResult r = simulate(p.in);
      const SimRange range = simulate_range(p.in);
      if (base == 0) base = r.tflops_per_device;
      const double eff = r.tflops_per_device / base;
      if (!a.write_plan.empty() && s == strategies.front() && n == ranks.front())
        write_simulated_plan(a.write_plan, "tierzero simulate: " + s + "'s plan at the smallest rank count", a.model, p.in, p.in.recompute, r);
      if (!a.html.empty()) {
        page_rows.push_back(to_json(s, n, r, eff));
        page_rows.back()["plan"] = p.in.plan.describe();
      }
      if (a.json) {
        nlohmann::ordered_json j = to_json(s, n, r, eff);
        j["plan"] = p.in.plan.describe();
        j["engine"] = a.engine;
        // false: the engine has no such strategy (data/engines: strategies), or no tensor parallelism on this device
        j["engine_runs"] = base_job.engine.runs(s) && tp_note(base_job).empty();
        j["error_band"] = job_error_band(base_job, a.engine);
        j["range"] = range_json(range);
        j["plan_changed"] = p.changed.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(p.changed);
        std::cout << j.dump() << "\n";
      } else {
        const Topology topo = p.in.topology();
        std::string row = fmt::format("{:<8} {:>6} {:>10} {:>10} {:>10} {:>10} {:>8} {:>6} {:>6}", s + (base_job.engine.runs(s) ? "" : "*"),
                                      n, figure(r.step_time_s, 3), figure(r.compute_s, 3), figure(r.tflops_per_device, 2),
                                      figure(r.tokens_per_s_per_device, 0), figure(eff, 3), fits_word(r.fits, r.at_memory_limit),
                                      figure(r.memory_total / 1e9, 1));
        for (Level l : levels) row += fmt::format(" {:>10}", topo.fanout(l) > 1 ? figure(level_time(r, l), 3) : "-");
        std::printf("%s %15s  %s\n", row.c_str(), range_span(range).c_str(), p.changed.empty() ? "-" : p.changed.c_str());
        if (r.at_memory_limit) std::printf("%15s %s\n", "", memory_limit_note(r, p.in.system.memory_bytes).c_str());
      }
    }
  }
  if (!a.html.empty()) write_simulate_html(a.html, fmt::format("{} on {}", base_job.model.name, a.system), page_rows, base_job.system.memory_bytes);
  if (!a.json) {
    if (const std::string note = not_run_note(base_job.engine, strategies); !note.empty()) std::printf("* %s\n", note.c_str());
    if (const std::string note = tp_note(base_job); !note.empty()) std::printf("note: %s\n", note.c_str());
    std::printf("TFLOPS and tokens/s per device (validate's tokens/s per GPU); GB per rank; LEVEL_s: what each level costs per step "
                "(transfer, latency, quantisation; -: the job has no such level); step_range_s: the step with the collectives' "
                "bandwidth on every level and the GEMMs' efficiency both %.0f%% above, and both %.0f%% below, what the system assumes\n",
                100 * kSensitivity, 100 * kSensitivity);
    std::printf("error band: %s\n", job_error_band(base_job, a.engine).c_str());
  }
  return 0;
}

// Why tierzero's engine is slower or faster than DeepSpeed's on `job`: the
// keys of their engine files that move its throughput, each priced alone.
std::string engine_reason(const SimInput& job, const EngineProfile& other) {
  std::string out;
  for (const EngineDifference& d : engine_differences(job, other))
    out += fmt::format("{}{} {} vs {} (x{})", out.empty() ? "" : ", ", d.key, d.ours, d.theirs, figure(d.speedup, 2));
  if (out.empty()) return "The engine files (data/engines) differ in nothing that moves this job: the plans make the gap";
  return fmt::format("Why, from the engine files ({0}'s value vs {1}'s; xF: {0}'s throughput with that one value of {1}'s): {2} "
                     "(data/engines/{0}.toml, {1}.toml)",
                     job.engine.name, other.name, out);
}

// The best plan against ZeRO++ and ZeRO-3 under tierzero's and DeepSpeed's
// engines, and why the engines differ; a strategy that does not fit `memory_limit` is marked.
void compare_engines(const SimInput& base_job, const PlanCandidate& best, const SimArgs& a, double memory_limit) {
  const int ranks = a.ranks.front();
  std::fflush(stdout);  // after the plans, on a terminal that shows both streams
  std::fprintf(stderr, "best plan vs the strategies, %d ranks of %s (TFLOPS per device; the search priced %s's engine):\n", ranks,
               a.system.c_str(), a.engine.c_str());
  std::fprintf(stderr, "  %-10s %8s %9s %9s %12s %11s\n", "engine", "best", "zeropp", "zero3", "best/zeropp", "best/zero3");
  double deepspeed_zeropp = 0, tierzero_best = 0;
  SimInput tierzero_job;
  bool marked = false;
  const auto cell = [&](const SimResult& r) {
    const bool over = r.memory_total > memory_limit;
    marked = marked || over;
    return fmt::format("{:>8}{}", figure(r.tflops_per_device, 2), over ? "*" : " ");
  };
  for (const char* e : {"tierzero", "deepspeed"}) {
    SimInput job = base_job;
    job.engine = engine_profile(e);
    // Each engine as it can run the job: without the pipeline or the context parallelism it has not (data/engines).
    const auto lists = [](const std::vector<std::string>& names, const std::string& name) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    std::string without;
    if (job.pipeline.stages > 1 && !lists(job.engine.pipeline, job.pipeline.virtual_stages > 1 ? "interleaved" : "1f1b"))
      job.pipeline = {}, without = "the pipeline";
    if (job.context.degree > 1 && !lists(job.engine.context_parallel, job.context.kind_name()))
      job.context = {}, without += std::string(without.empty() ? "" : " and ") + "the context parallelism";
    if (!without.empty()) std::fprintf(stderr, "  (%s priced without %s, which it does not run)\n", e, without.c_str());
    SimInput b = input(job, "zero3", ranks).in;
    b.plan = best.plan;
    b.recompute = best.recompute;
    const double t_best = simulate(b).tflops_per_device;
    const SimResult zpp = simulate(input(job, "zeropp", ranks).in), z3 = simulate(input(job, "zero3", ranks).in);
    std::fprintf(stderr, "  %-10s %8s %s %s %11sx %10sx\n", e, figure(t_best, 2).c_str(), cell(zpp).c_str(), cell(z3).c_str(),
                 figure(t_best / zpp.tflops_per_device, 2).c_str(), figure(t_best / z3.tflops_per_device, 2).c_str());
    if (std::string(e) == "tierzero") tierzero_best = t_best, tierzero_job = b;
    else deepspeed_zeropp = zpp.tflops_per_device;
  }
  if (marked) std::fprintf(stderr, "  * does not fit %s GB per rank\n", figure(memory_limit / 1e9, 1).c_str());
  std::fprintf(stderr, "  tierzero with the best plan vs DeepSpeed's ZeRO++ here: %sx. %s\n", figure(tierzero_best / deepspeed_zeropp, 2).c_str(),
               engine_reason(tierzero_job, engine_profile("deepspeed")).c_str());
}

int run_plan(const SimArgs& a) {
  TZ_CHECK(a.ranks.size() == 1, ConfigError, "plan takes one rank count (--ranks N)");
  const SimInput base_job = job(a);
  print_assumptions(base_job, a.json, " (the search tries recompute none and full)");
  SimInput base = input(base_job, "zero3", a.ranks.front()).in;
  PlanSearchOptions options;
  if (a.memory_limit_gb > 0) options.memory_limit = a.memory_limit_gb * 1e9;
  const double capacity = options.memory_limit.value_or(base.system.memory_bytes);
  options.top = a.top;
  options.min_quant_gain = a.min_quant_gain;
  const auto found = search_plans(base, options);
  if (found.empty()) {  // say what the smallest plan the search tried needs, and what takes the room
    SimInput least = base;
    least.recompute = Recompute{Recompute::Kind::full};
    least.plan = fit_to(strategy_plan("zero3"), base.data_topology());
    const bool offload = base.system.host_memory_Bps > 0;
    if (offload) least.plan.optim_offload.device = least.plan.param_offload.device = Offload::cpu;
    const SimResult r = simulate(least);
    double activations = 0;
    for (const auto& [k, v] : r.memory_bytes)
      if (k == "activations") activations = v;
    TZ_THROW(ConfigError, fmt::format("no plan fits {} on {} ranks of {} ({} GB per rank): the smallest, zero3 with recomputation{}, "
                                      "needs {} GB, {} GB of it activations at micro-batch {} and sequence {}; lower "
                                      "--micro-batch or --seq-len, or add ranks",
                                      a.model, a.ranks.front(), a.system, figure(capacity / 1e9, 1),
                                      offload ? " and the optimizer and the parameters offloaded" : "", figure(r.memory_total / 1e9, 1),
                                      figure(activations / 1e9, 1), base.micro_batch, sequence_length(base)));
  }
  SimRows page_rows;
  if (!a.json)
    std::printf("%8s %9s %15s %9s %7s  plan (TFLOPS and tokens/s per device, validate's tokens/s per GPU; GB per rank; step_range_s: "
                "simulate's)\n", "TFLOPS", "step_s", "step_range_s", "tokens/s", "GB");
  for (std::size_t i = 0; i < found.size(); ++i) {  // the files: the best (--write-plan), every one listed (--write-plans)
    SimInput in = base;
    in.plan = found[i].plan;
    in.mesh = found[i].mesh;
    in.pipeline = found[i].pipeline;
    in.context = found[i].context;
    const std::string what = fmt::format("tierzero plan: plan {} of the {} listed (best first)", i + 1, found.size());
    if (i == 0 && !a.write_plan.empty()) write_simulated_plan(a.write_plan, what, a.model, in, found[i].recompute, found[i].result);
    if (!a.write_plans.empty())
      write_simulated_plan(fmt::format("{}/plan-{}.toml", a.write_plans, i + 1), what, a.model, in, found[i].recompute, found[i].result);
  }
  for (const PlanCandidate& c : found) {
    SimInput priced = base;
    priced.plan = c.plan, priced.mesh = c.mesh, priced.pipeline = c.pipeline, priced.recompute = c.recompute;
    const SimRange range = simulate_range(priced);
    if (!a.html.empty()) {
      page_rows.push_back(to_json("search", a.ranks.front(), c.result, 1.0));
      page_rows.back()["plan"] = c.plan.describe();
      page_rows.back()["recompute"] = c.recompute.name();
    }
    if (a.json) {
      nlohmann::ordered_json j = to_json("search", a.ranks.front(), c.result, 1.0);
      j["plan"] = c.plan.describe();
      j["tp"] = c.mesh.tp;
      j["tp_level"] = c.mesh.tp_level ? nlohmann::ordered_json(std::string(level_name(*c.mesh.tp_level))) : nlohmann::ordered_json();
      j["pp"] = c.pipeline.stages;
      j["pp_schedule"] = c.pipeline.schedule();
      j["pp_split"] = c.pipeline.split_name();
      j["cp"] = c.context.degree;
      j["cp_kind"] = c.context.kind_name();
      j["cp_level"] = c.context.level ? nlohmann::ordered_json(std::string(level_name(*c.context.level))) : nlohmann::ordered_json();
      j["sp"] = c.mesh.sp;
      j["prefetch"] = c.plan.prefetch;
      j["bucket_bytes"] = c.plan.bucket_bytes;
      j["recompute"] = c.recompute.name();
      j["alike"] = c.alike.count;
      nlohmann::ordered_json changes = nlohmann::ordered_json::object();
      for (const auto& [setting, values] : c.alike.changes) changes[setting] = values;
      j["alike_changes"] = changes;
      j["range"] = range_json(range);
      SimInput row = base_job;
      row.mesh = c.mesh, row.pipeline = c.pipeline, row.context = c.context;
      j["error_band"] = job_error_band(row, a.engine);
      std::cout << j.dump() << "\n";
    } else {
      const std::string figures =
          fmt::format("{:>8} {:>9} {:>15} {:>9} {:>7}", figure(c.result.tflops_per_device, 2), figure(c.result.step_time_s, 3),
                      range_span(range), figure(c.result.tokens_per_s_per_device, 0), figure(c.result.memory_total / 1e9, 1));
      const std::string indent(figures.size() + 1, ' ');
      const std::string tp =
          c.mesh.tp > 1 ? fmt::format("tp {} on {}{}, ", c.mesh.tp, level_name(c.mesh.level(base.topology())), c.mesh.sp ? " with sp" : "") : "";
      const std::string pp = c.pipeline.stages > 1 ? fmt::format("pp {} on {} {}, ", c.pipeline.stages,
                                                                 level_name(c.pipeline.level_in(base.topology())), c.pipeline.schedule())
                                                   : "";
      const std::string cp = c.context.degree > 1 && c.context.level
                                 ? fmt::format("cp {} on {} {}, ", c.context.degree, level_name(*c.context.level), c.context.kind_name())
                                 : "";
      // ZeRO-1 and DDP-like plans reduce the whole gradient at once (one bucket: Plan::bucket_bytes at its largest).
      const std::string bucket = c.plan.bucket_bytes == ~std::size_t{0} ? "whole" : fmt::format("{:>3} MiB", c.plan.bucket_bytes >> 20);
      std::printf("%s  %-5s recompute %-9s prefetch %d bucket %-7s  %s%s%s%s\n", figures.c_str(), lossy(c.plan) ? "lossy" : "exact",
                  c.recompute.name().c_str(), c.plan.prefetch, bucket.c_str(), tp.c_str(), pp.c_str(), cp.c_str(), c.plan.describe().c_str());
      if (c.result.at_memory_limit) std::printf("%s %s\n", indent.c_str(), memory_limit_note(c.result, capacity).c_str());
      if (c.plan.optim_offload.offloaded() || c.plan.param_offload.offloaded())
        std::printf("%s %s s of the step the offloaded states (%s GB host, %s GB NVMe per rank)\n", indent.c_str(),
                    figure(c.result.offload_s, 3).c_str(), figure(c.result.host_bytes / 1e9, 1).c_str(), figure(c.result.file_bytes / 1e9, 1).c_str());
      if (c.alike.count > 0) {
        std::string changes;
        for (const auto& [setting, values] : c.alike.changes) {
          std::string v;
          for (const std::string& x : values) v += (v.empty() ? "" : "|") + x;
          changes += (changes.empty() ? "" : "; ") + setting + " " + v;
        }
        std::printf("%s %d more within %.1f%% (%s-%s GB): %s\n", indent.c_str(), c.alike.count, 100 * options.alike_within,
                    figure(c.alike.memory_min / 1e9, 1).c_str(), figure(c.alike.memory_max / 1e9, 1).c_str(), changes.c_str());
      }
    }
  }
  if (!a.json) std::printf("error band: %s\n", job_error_band(base_job, a.engine).c_str());
  if (!a.html.empty())
    write_plan_html(a.html, fmt::format("{} on {} ranks of {}", base_job.model.name, a.ranks.front(), a.system), page_rows,
                    capacity);
  compare_engines(base_job, found.front(), a, capacity);
  // Whether hier3 helps on this system, and why.
  std::fprintf(stderr, "ranked by TFLOPS; a lossy plan (quantised weights or gradients) ranks above an exact one only when %.0f%% faster "
                       "(--min-quant-gain)\n", 100 * a.min_quant_gain);
  const SimResult h3 = simulate(input(base_job, "hier3", a.ranks.front()).in);
  const SimResult zpp = simulate(input(base_job, "zeropp", a.ranks.front()).in);
  const Topology topo = base.topology();
  std::string why;
  const bool helps = h3.tflops_per_device > zpp.tflops_per_device * 1.01;
  if (!topo.declares(Level::package))
    why = "the job has no package level, so hier3's backward copy and first reduction hop become node-level and it differs from zeropp only in decomposing the weight all-gather";
  else if (helps)
    why = fmt::format("its package-level backward copy and package->node->world reductions keep traffic on the {} GB/s package links",
                      figure(base.system.link(Level::package).bandwidth_Bps / 1e9, 0));
  else if (zpp.exposed_comm_s < 0.05 * zpp.step_time_s)
    why = fmt::format("both hide their communication under {} s of compute, so the traffic hier3 saves costs nothing "
                      "here (fewer tokens per rank or slower links change that)",
                      figure(zpp.compute_s, 2));
  else
    why = "the traffic hier3 keeps inside the package is not what bounds zeropp's step here";
  std::fprintf(stderr, "hier3 vs zeropp on %s, %d ranks: %s vs %s TFLOPS per device (%s); time per level %s; %s\n", a.system.c_str(),
               a.ranks.front(), figure(h3.tflops_per_device, 2).c_str(), figure(zpp.tflops_per_device, 2).c_str(),
               helps ? "hier3 helps" : "hier3 does not help", level_times(h3, zpp, topo).c_str(), why.c_str());
  if (const std::string note = not_run_note(base.engine, {"zeropp", "hier3"}); !note.empty()) std::fprintf(stderr, "  (%s)\n", note.c_str());
  return 0;
}

int run_memory(const SimArgs& a) {
  TZ_CHECK(a.ranks.size() == 1 && a.strategies.size() == 1, ConfigError, "memory takes one strategy and one rank count");
  const Prepared p = input(job(a), a.strategies.front(), a.ranks.front());
  print_assumptions(p.in, false);
  TZ_CHECK(a.offload_param == "none" || p.in.plan.params, ConfigError,
           "--offload-param needs partitioned parameters (zero3, zeropp, mics, hier3); " + a.strategies.front() + " replicates them");
  const SimResult r = simulate(p.in);
  if (!p.changed.empty()) std::printf("plan change: %s\n", p.changed.c_str());
  std::printf("memory per rank: %s, %s, %d ranks on %s\n", p.in.model.name.c_str(), a.strategies.front().c_str(), a.ranks.front(), a.system.c_str());
  for (const auto& [k, v] : r.memory_bytes) std::printf("  %-12s %10s GB\n", k.c_str(), figure(v / 1e9, 3).c_str());
  std::printf("  %-12s %10s GB of %s GB: %s\n", "total", figure(r.memory_total / 1e9, 3).c_str(), figure(p.in.system.memory_bytes / 1e9, 1).c_str(),
              r.fits ? "fits" : "does NOT fit");
  if (const std::string note = not_run_note(p.in.engine, a.strategies); !note.empty()) std::printf("note: %s\n", note.c_str());
  if (const std::string note = tp_note(p.in); !note.empty()) std::printf("note: %s\n", note.c_str());
  if (r.at_memory_limit) std::printf("  %s\n", memory_limit_note(r, p.in.system.memory_bytes).c_str());
  if (p.in.plan.optim_offload.offloaded() || p.in.plan.param_offload.offloaded()) {
    std::printf("offloaded (optimizer %s, parameters %s): %s GB of host memory", std::string(offload_name(p.in.plan.optim_offload.device)).c_str(),
                std::string(offload_name(p.in.plan.param_offload.device)).c_str(), figure(r.host_bytes / 1e9, 3).c_str());
    if (r.file_bytes > 0) std::printf(", %s GB in NVMe files", figure(r.file_bytes / 1e9, 3).c_str());
    std::printf(" per rank; %s s of each %s s step\n", figure(r.offload_s, 3).c_str(), figure(r.step_time_s, 3).c_str());
  }
  return 0;
}

void add_common(CLI::App* c, SimArgs& a) {
  std::string systems;
  for (const std::string& n : system_preset_names()) systems += (systems.empty() ? "" : ", ") + n;
  c->add_option("--system", a.system, "System preset (" + systems + ") or TOML file (docs/formats.md)")->capture_default_str();
  c->add_option("--model", a.model, kModelHelp)->capture_default_str();
  c->add_option("--topology", a.topology,
                "Inner fan-outs, e.g. package=2,node=4 (world inferred from --ranks); needed where the system leaves them open (cpu)");
  c->add_option("--micro-batch", a.micro_batch, "Sequences per rank per micro-batch (train's default)")->check(at_least(1))->capture_default_str();
  c->add_option("--tp", a.tp,
                "Tensor-parallel degree (default 1): groups of N ranks on --tp-level hold one copy of the model, split Megatron-style "
                "by heads and MLP columns (an all-reduce of the activations after each row-parallel projection, and of the "
                "gradients before each column-parallel one); the plan shards over the rest. N must divide the level, heads "
                "and MLP size")
      ->check(at_least(1));
  c->add_option("--tp-level", a.tp_level, "The level the tensor-parallel groups lie in (package, node, world; default: the innermost declared)");
  c->add_option("--pp", a.pp,
                "Pipeline stages (default 1): N ranks along --pp-level each hold layers/N consecutive blocks; the step's micro-batches "
                "(--grad-accum) flow through them by --pp-schedule; the plan shards over the rest. N must divide the level and the "
                "layers; the engine must run the schedule (data/engines: pipeline)")
      ->check(at_least(1));
  c->add_option("--pp-schedule", a.pp_schedule, "1f1b, or interleaved:V (V chunks of layers per rank, Megatron-LM's virtual stages)")
      ->capture_default_str();
  c->add_option("--pp-split", a.pp_split,
                "How the layers fall on the stages: even (N divides them), ends:F,L (F on the first stage, L on the last, the rest "
                "evenly: Megatron-Core's --decoder-first/last-pipeline-num-layers), embedding (the embedding and the head counted "
                "as a layer each: Megatron-DeepSpeed's --pp-partition-method 'type:transformer|embedding'); 1f1b only")
      ->capture_default_str();
  c->add_option("--pp-level", a.pp_level, "The level the pipeline's stages lie along (package, node, world; default: the outermost declared)");
  c->add_option("--cp", a.cp,
                "Context-parallel degree (default 1): N ranks on --cp-level split every sequence, each computing seq/N of its tokens, "
                "and exchange keys and values for attention by --cp-kind; the gradients are reduced over them with the data-parallel "
                "ranks. N must divide the level's ranks left after --tp and --pp; the engine must run the kind (data/engines: "
                "context_parallel)")
      ->check(at_least(1));
  c->add_option("--cp-kind", a.cp_kind,
                "ring (key/value chunks passed around the group, overlapped with attention: Megatron-Core's p2p, torchtitan's; sequence "
                "divisible by 2N) or a2a (DeepSpeed-Ulysses' all-to-alls around attention; heads divisible by N)")
      ->check(CLI::IsMember({"ring", "a2a"}))
      ->capture_default_str();
  c->add_option("--cp-level", a.cp_level,
                "The level the context-parallel groups lie in (package, node, world; default: the innermost with ranks left after --tp "
                "and --pp, Megatron's order tp-cp-dp-pp)");
  c->add_flag("--sp", a.sp,
              "Sequence parallelism (with --tp > 1 dividing the sequence length): norms and residuals on 1/N of the sequence, an "
              "all-gather before and a reduce-scatter after each parallel region instead of the all-reduces (docs/parallelism.md)");
  c->add_option("--seq-len", a.seq_len,
                "Sequence length (0: the model's context, at most " + std::to_string(TrainConfig::kDefaultMaxSeqLen) + ", as train)")
      ->check(at_least(0))
      ->capture_default_str();
  c->add_option("--grad-accum", a.grad_accum, "Micro-batches per step")->check(at_least(1))->capture_default_str();
  c->add_option("--recompute", a.recompute,
                "Activation recomputation: none, full, selective (the attention core), selective-op (torchtitan's: every other matmul's "
                "output kept), every:N (one block in N); true/false for full/none; the engine must offer it (data/engines); "
                "default train's")
      ->capture_default_str();
  c->add_option("--engine", a.engine,
                "The training engine priced: tierzero, fsdp (FSDP1), fsdp2, deepspeed, megatron (data/engines: kernels, call pattern, "
                "overlap, memory)")
      ->check(CLI::IsMember(engine_names()))
      ->capture_default_str();
  c->add_option("--backward-prefetch", a.backward_prefetch,
                "FSDP1's backward prefetch (--engine fsdp): pre (BACKWARD_PRE, PyTorch's default: the next block's all-gather runs under "
                "this block's backward) or post (BACKWARD_POST, Composer's and so llm-foundry's: it waits, exposed); default the engine's")
      ->check(CLI::IsMember({"pre", "post"}));
  c->add_option("--attention", a.attention,
                "The attention implementation: a rate the system's device gives (flash2, flash3, cudnn, triton; data/devices) or "
                "eager (scores as batched GEMMs and a softmax over memory); default the engine's");
  std::vector<std::string> codes = {"engine"};
  std::string code_names;
  for (const std::string& n : model_code_names()) codes.push_back(n), code_names += ", " + n;
  c->add_option("--model-code", a.model_code,
                "The code that computes the layers, as its norms and rotary embedding move memory: engine (the engine's kernels)" +
                    code_names + " (data/model-code: PyTorch expressions, one kernel each, fp32 where they upcast)")
      ->check(CLI::IsMember(codes))
      ->capture_default_str();
  c->add_flag("--fp8", a.fp8, "The linear layers' GEMMs in FP8 (Transformer Engine, torchao), at the device's FP8 rate");
  c->add_option("--offload-optimizer", a.offload_optimizer,
                "Where the optimizer state lives: none, cpu (host memory) or nvme (files), priced with the system's host link, "
                "host memory and NVMe rates")
      ->check(CLI::IsMember({"none", "cpu", "nvme"}))
      ->capture_default_str();
  c->add_option("--offload-param", a.offload_param,
                "Where the parameter shards of partitioned plans live: none, cpu (host memory) or nvme (files), priced with "
                "the system's host link and NVMe rates")
      ->check(CLI::IsMember({"none", "cpu", "nvme"}))
      ->capture_default_str();
  c->add_option("--persist-threshold", a.persist_threshold,
                "Units of at most N parameters stay whole on every rank (gathered once per step; train's --persist-threshold)")
      ->capture_default_str();
}
}  // namespace

void add_simulate_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<SimArgs>();
  CLI::App* sim = app.add_subcommand("simulate", "Predict step time, TFLOPS per device, scaling efficiency and memory");
  add_common(sim, *a);
  CLI::Option* strategy = sim->add_option("--strategy", a->strategies,
                                          "Strategies (default: those of these the engine runs, data/engines: strategies; any other "
                                          "given is priced as if it ran, its rows marked *)")
                              ->delimiter(',')
                              ->capture_default_str();
  sim->add_option("--ranks", a->ranks, "Rank counts (weak scaling: per-rank batch fixed; relative to the smallest)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sim->add_option("--hop-chunk-bytes", a->hop_chunk_bytes,
                  "Pipelined hops (the plan key hop_chunk_bytes): bytes of each rank's part per chunk of a hierarchical collective "
                  "(0: whole, one hop after the other)")
      ->capture_default_str();
  sim->add_flag("--json", a->json, "One JSON object per (strategy, ranks)");
  sim->add_option("--html", a->html, "Write one HTML page: scaling over the rank counts and the strategies side by side (charts, no network)");
  sim->add_option("--write-plan", a->write_plan,
                  "Write the plan simulated for the first --strategy at the smallest --ranks (fitted to that job's topology and memory) "
                  "as a plan file for 'tierzero train --plan FILE'");
  sim->callback([a, strategy, &ctx] {
    a->strategies_given = strategy->count() > 0;
    ctx.exit_code = run_simulate(*a);
  });

  auto pl = std::make_shared<SimArgs>();
  pl->ranks = {384};
  CLI::App* plan = app.add_subcommand("plan", "Search plans and list the fastest that fit memory");
  add_common(plan, *pl);
  plan->add_option("--ranks", pl->ranks, "Rank count")->expected(1)->check(CLI::PositiveNumber)->capture_default_str();
  plan->add_option("--memory-limit-gb", pl->memory_limit_gb, "Device memory to plan for (0: the system's)")
      ->check(finite_number(false))
      ->capture_default_str();
  plan->add_option("--top", pl->top, "How many plans to list")->check(at_least(1))->capture_default_str();
  plan->add_option("--min-quant-gain", pl->min_quant_gain,
                   "A lossy plan ranks above an exact one only when faster by this fraction")
      ->check(finite_number(false))
      ->capture_default_str();
  plan->add_flag("--json", pl->json, "One JSON object per plan");
  plan->add_option("--html", pl->html, "Write one HTML page of the plans side by side (charts, no network)");
  plan->add_option("--write-plan", pl->write_plan, "Write the best plan listed (the first) as a plan file for 'tierzero train --plan FILE'");
  plan->add_option("--write-plans", pl->write_plans,
                   "Write every plan listed as DIR/plan-N.toml, N its place in the list (1: the best); DIR must exist")
      ->check(CLI::ExistingDirectory);
  plan->callback([pl, &ctx] { ctx.exit_code = run_plan(*pl); });

  auto m = std::make_shared<SimArgs>();
  CLI::App* mem = app.add_subcommand("memory", "Memory per rank per state for one strategy and rank count");
  add_common(mem, *m);
  m->strategies = {"hier3"};
  m->ranks = {384};
  mem->add_option("--strategy", m->strategies, "Strategy")->expected(1)->capture_default_str();
  mem->add_option("--ranks", m->ranks, "Rank count")->expected(1)->check(CLI::PositiveNumber)->capture_default_str();
  mem->callback([m, &ctx] { ctx.exit_code = run_memory(*m); });
}

}  // namespace tierzero::cli
