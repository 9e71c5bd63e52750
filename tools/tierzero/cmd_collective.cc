// tierzero collective: the predicted time of one all-gather or
// reduce-scatter on a system, flat and decomposed over its levels, for
// given rank counts and sizes (what a system file says one collective
// costs; bench/measured_validation.py compares it with measurements).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "validators.h"
#include "tierzero/error.h"
#include "tierzero/simulator.h"

namespace tierzero::cli {

namespace {
struct CollectiveArgs {
  std::string system = "frontier-rccl", collective = "all_gather";
  std::vector<int> ranks = {8, 64, 384};
  std::vector<double> total_mib = {16, 256};
  bool json = false;
};

int run_collective(const CollectiveArgs& a) {
  const System sys = load_system(a.system);
  const Collective kind = parse_collective(a.collective);
  TZ_CHECK(kind == Collective::all_gather || kind == Collective::reduce_scatter, ConfigError,
           "--collective must be all_gather or reduce_scatter");
  const std::vector<std::pair<const char*, Decomposition>> ways = {
      {"flat", Decomposition::flat}, {"two_level", Decomposition::two_level}, {"three_level", Decomposition::three_level}};
  std::vector<Topology> topologies;
  for (int n : a.ranks) topologies.push_back(sys.topology(n));  // throws TopologyError before anything is printed
  if (!a.json) std::printf("%-15s %6s %10s %12s %12s %12s\n", "collective", "ranks", "total_MiB", "flat_ms", "two_level_ms", "three_level_ms");
  for (std::size_t i = 0; i < a.ranks.size(); ++i) {
    const int n = a.ranks[i];
    const Topology& topo = topologies[i];
    for (double mib : a.total_mib) {
      // The per-rank shard of `mib` MiB in all (an all-gather's output, a reduce-scatter's input).
      const auto shard = static_cast<std::uint64_t>(std::llround(mib * 1024 * 1024 / n));
      TZ_CHECK(shard > 0, ConfigError, "--total-mib " + std::to_string(mib) + " over " + std::to_string(n) + " ranks is under a byte per rank");
      nlohmann::ordered_json j = {{"system", sys.name}, {"collective", a.collective}, {"ranks", n}, {"total_mib", mib}};
      std::vector<double> ms;
      for (const auto& [name, d] : ways) {
        ms.push_back(1e3 * collective_time(kind, topo, hop_spec(d), shard, sys));
        j[std::string(name) + "_ms"] = ms.back();
      }
      if (a.json) std::cout << j.dump() << "\n";
      else std::printf("%-15s %6d %10g %12.4f %12.4f %12.4f\n", a.collective.c_str(), n, mib, ms[0], ms[1], ms[2]);
    }
  }
  return 0;
}
}  // namespace

void add_collective_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<CollectiveArgs>();
  CLI::App* c = app.add_subcommand("collective", "Predicted time of one all-gather or reduce-scatter, flat and decomposed over the levels");
  c->add_option("--system", a->system, "System preset or TOML file")->capture_default_str();
  c->add_option("--collective", a->collective, "all_gather or reduce_scatter")->capture_default_str();
  c->add_option("--ranks", a->ranks, "Rank counts")->delimiter(',')->check(CLI::PositiveNumber)->capture_default_str();
  c->add_option("--total-mib", a->total_mib, "Sizes in MiB: an all-gather's output, a reduce-scatter's input")
      ->delimiter(',')
      ->check(finite_number(true))
      ->capture_default_str();
  c->add_flag("--json", a->json, "One JSON object per (ranks, size)");
  c->callback([a, &ctx] { ctx.exit_code = run_collective(*a); });
}

}  // namespace tierzero::cli
