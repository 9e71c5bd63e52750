// tierzero simulate | memory: predicted step time, TFLOPS, scaling and memory.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "tierzero/error.h"
#include "tierzero/sim.h"

namespace tierzero::cli {

namespace {
struct SimArgs {
  std::string system = "frontier", model = "gpt-20b";
  std::vector<std::string> strategies = {"zero3", "zeropp", "hier3"};
  std::vector<int> ranks = {8, 16, 32, 64, 128, 256, 384};
  int micro_batch = 4, seq_len = 0, grad_accum = 1;
  bool recompute = true, json = false;
};

SimInput input(const SimArgs& a, const std::string& strategy, int ranks) {
  SimInput in;
  in.model = gpt_preset(a.model);
  in.system = load_system(a.system);
  in.ranks = ranks;
  in.micro_batch = a.micro_batch;
  in.seq_len = a.seq_len;
  in.grad_accum = a.grad_accum;
  in.recompute = a.recompute;
  in.plan = fit_to(strategy_plan(strategy), in.topology());
  return in;
}

nlohmann::ordered_json to_json(const std::string& strategy, int ranks, const SimResult& r, double efficiency) {
  nlohmann::ordered_json j;
  j["strategy"] = strategy;
  j["ranks"] = ranks;
  j["step_time_s"] = r.step_time_s;
  j["compute_time_s"] = r.compute_s;
  j["exposed_comm_s"] = r.exposed_comm_s;
  j["tflops_per_device"] = r.tflops_per_device;
  j["scaling_efficiency"] = efficiency;
  j["fits"] = r.fits;
  nlohmann::ordered_json mem, comm, bytes;
  for (const auto& [k, v] : r.memory_bytes) mem[k] = v;
  mem["total"] = r.memory_total;
  for (Level l : kAllLevels) comm[std::string(level_name(l))] = r.comm_time_s[static_cast<int>(l)];
  for (Level l : kAllLevels) bytes[std::string(level_name(l))] = r.bytes_per_level[static_cast<int>(l)];
  j["memory_bytes"] = mem;
  j["comm_time_s"] = comm;
  j["bytes_per_level"] = bytes;
  return j;
}

int run_simulate(const SimArgs& a) {
  if (!a.json)
    std::printf("%-8s %6s %10s %10s %10s %8s %6s %6s %10s\n", "strategy", "ranks", "step_s", "compute_s", "TFLOPS", "scaling", "fits",
                "GB", "world_s");
  for (const std::string& s : a.strategies) {
    double base = 0;
    for (int n : a.ranks) {
      const SimResult r = simulate(input(a, s, n));
      if (base == 0) base = r.tflops_per_device;
      const double eff = r.tflops_per_device / base;
      if (a.json) {
        std::cout << to_json(s, n, r, eff).dump() << "\n";
      } else {
        std::printf("%-8s %6d %10.3f %10.3f %10.2f %8.3f %6s %6.1f %10.3f\n", s.c_str(), n, r.step_time_s, r.compute_s,
                    r.tflops_per_device, eff, r.fits ? "yes" : "NO", r.memory_total / 1e9, r.comm_time_s[2]);
      }
    }
  }
  return 0;
}

int run_memory(const SimArgs& a) {
  const SimResult r = simulate(input(a, a.strategies.front(), a.ranks.front()));
  std::printf("memory per rank: %s, %s, %d ranks on %s\n", a.model.c_str(), a.strategies.front().c_str(), a.ranks.front(), a.system.c_str());
  for (const auto& [k, v] : r.memory_bytes) std::printf("  %-12s %10.3f GB\n", k.c_str(), v / 1e9);
  std::printf("  %-12s %10.3f GB of %.1f GB: %s\n", "total", r.memory_total / 1e9, load_system(a.system).memory_bytes / 1e9,
              r.fits ? "fits" : "does NOT fit");
  return 0;
}

void add_common(CLI::App* c, SimArgs& a) {
  c->add_option("--system", a.system, "System preset (frontier, dgx-a100, dgx-h100, cpu) or TOML file");
  c->add_option("--model", a.model, "Model preset");
  c->add_option("--micro-batch", a.micro_batch, "Sequences per rank per micro-batch")->check(CLI::PositiveNumber);
  c->add_option("--seq-len", a.seq_len, "Sequence length (default: the model's context)");
  c->add_option("--grad-accum", a.grad_accum, "Micro-batches per step")->check(CLI::PositiveNumber);
  c->add_option("--recompute", a.recompute, "Activation recomputation (true/false, default true)");
}
}  // namespace

void add_simulate_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<SimArgs>();
  CLI::App* sim = app.add_subcommand("simulate", "Predict step time, TFLOPS per device, scaling efficiency and memory");
  add_common(sim, *a);
  sim->add_option("--strategy", a->strategies, "Strategies")->delimiter(',');
  sim->add_option("--ranks", a->ranks, "Rank counts (weak scaling: per-rank batch fixed)")->delimiter(',');
  sim->add_flag("--json", a->json, "One JSON object per (strategy, ranks)");
  sim->callback([a, &ctx] { ctx.exit_code = run_simulate(*a); });

  auto m = std::make_shared<SimArgs>();
  CLI::App* mem = app.add_subcommand("memory", "Memory per rank per state for one strategy and rank count");
  add_common(mem, *m);
  mem->add_option("--strategy", m->strategies, "Strategy")->delimiter(',');
  mem->add_option("--ranks", m->ranks, "Rank count")->delimiter(',');
  mem->callback([m, &ctx] { ctx.exit_code = run_memory(*m); });
}

}  // namespace tierzero::cli
