// The engines as simulate and plan speak of them: the strategies each runs
// (data/engines: strategies) and why one is slower than another on a job
// (engine_differences: each differing key priced alone).
#include "tierzero/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "model/gpt.h"
#include "tierzero/corpus.h"
#include "sim/engine_toml.h"
#include "tierzero/error.h"

namespace tierzero {
namespace {

// FSDP has no ZeRO++ nor three-level partitioning; FSDP2 is FSDP1's in this; DeepSpeed has ZeRO++ and
// MiCS; Megatron its distributed optimizer and Megatron-FSDP; tierzero's engine runs every plan.
TEST(Engines, RunTheStrategiesTheirFilesName) {
  for (const char* e : {"fsdp", "fsdp2"}) {
    const EngineProfile p = engine_profile(e);
    EXPECT_EQ(p.strategies, (std::vector<std::string>{"ddp", "zero2", "zero3", "mics"})) << e;
    EXPECT_FALSE(p.runs("zeropp")) << e;
    EXPECT_FALSE(p.runs("hier3")) << e;
    EXPECT_FALSE(p.runs("zero1")) << e;
  }
  EXPECT_TRUE(engine_profile("deepspeed").runs("zeropp"));
  EXPECT_TRUE(engine_profile("deepspeed").runs("mics"));
  EXPECT_EQ(engine_profile("megatron").strategies, (std::vector<std::string>{"ddp", "zero1", "zero2", "zero3"}));
  std::vector<std::string> every = engine_profile("tierzero").strategies;
  std::sort(every.begin(), every.end());
  EXPECT_EQ(every, strategy_names());
  for (const std::string& e : engine_names()) EXPECT_FALSE(engine_profile(e).source_of("strategies").empty()) << e;
}

// Every published run's strategy is one its engine runs: the lists are not narrower than the corpus.
TEST(Engines, EveryPublishedRunsStrategyIsOneItsEngineRuns) {
  for (const PublishedRun& r : builtin_corpus()) {
    EXPECT_TRUE(r.input.engine.runs(r.input.plan.name)) << r.id << ": " << r.input.engine.name << " " << r.input.plan.name;
    if (r.ratio()) {
      EXPECT_TRUE(r.over.engine.runs(r.over.plan.name)) << r.id;
    }
  }
}

// An engine file (or a corpus override) may list only strategies that exist.
TEST(Engines, AStrategyListNamesKnownStrategies) {
  const std::string run =
      "[[run]]\nid = \"r\"\nhalf = \"fit\"\nsource = \"s\"\ngpu = \"h100-sxm\"\ngpus = 8\ngpus_per_node = 8\nengine = \"fsdp\"\n"
      "strategy = \"zero3\"\nprecision = \"bf16\"\nseq_len = 2048\nmicro_batch = 1\ngrad_accum = 1\nrecompute = \"none\"\n"
      "model = { preset = \"gpt-1.3b\" }\ntokens_per_s_per_gpu = 1000.0\n";
  try {
    parse_corpus(run, "ok.toml", {"[engines.fsdp]\nstrategies = [\"zero3\", \"zero4\"]\n", "o.toml"});
    FAIL() << "accepted zero4";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("strategies lists ddp, hier3, mics, zero1, zero2, zero3, zeropp, not 'zero4'"), std::string::npos)
        << e.what();
  }
  const auto narrowed = parse_corpus(run, "ok.toml", {"[engines.fsdp]\nstrategies = [\"zero3\"]\n", "o.toml"});
  EXPECT_EQ(narrowed.front().input.engine.strategies, std::vector<std::string>{"zero3"});
}

// The memory model's method is the engine file's `memory` key: tierzero's counts its allocations; any other
// engine, or tierzero's profile told otherwise, bytes per parameter (whose parts include the logits); a
// method that does not exist is refused, naming the choices.
TEST(Engines, TheMemoryMethodIsAnEngineKey) {
  EXPECT_EQ(engine_profile("tierzero").memory, MemoryMethod::allocations);
  EXPECT_FALSE(engine_profile("tierzero").source_of("memory").empty());
  for (const char* e : {"fsdp", "fsdp2", "deepspeed", "megatron"}) EXPECT_EQ(engine_profile(e).memory, MemoryMethod::per_parameter) << e;
  SimInput in;
  in.model = gpt_preset("gpt-tiny");
  in.system = load_system("cpu");
  in.ranks = 2;
  in.topology_spec = "node=2";
  in.plan = fit_to(strategy_plan("zero3"), in.topology());
  const SimResult counted = simulate(in);
  EngineProfile told = engine_profile("tierzero");
  read_engine_keys(toml::parse("memory = \"per_parameter\""), told, "told.toml");
  in.engine = told;
  const SimResult per_parameter = simulate(in);
  EXPECT_NE(counted.memory_total, per_parameter.memory_total);
  try {
    read_engine_keys(toml::parse("memory = \"guessed\""), told, "bad.toml");
    FAIL() << "accepted memory = guessed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("allocations"), std::string::npos) << e.what();
  }
}

// Megatron holds its gradients in the buffer it reduces them from (grads_in_reduce_dtype): fp32 by default, bf16
// in a run that reduces in bf16 (reduce_bytes = 2), whole on every rank of its distributed optimizer (zero1); an
// engine that does not (FSDP: fp32 shards whatever it reduces in) keeps its grads_bytes.
TEST(Engines, MegatronsGradientsAreHeldInTheirReductionsDtype) {
  SimInput in;
  in.model = gpt_preset("gpt-1.3b");
  in.system = load_system("dgx-h100");
  in.ranks = 8;
  in.micro_batch = 1, in.seq_len = 2048;
  in.engine = engine_profile("megatron");
  in.plan = fit_to(strategy_plan("zero1"), in.topology());
  const auto grads = [](const SimInput& job) {
    for (const auto& [part, bytes] : simulate(job).memory_bytes)
      if (part == "grads") return bytes;
    return -1.0;
  };
  const double n = static_cast<double>(GptLayout(in.model).num_params());
  EXPECT_TRUE(in.engine.grads_in_reduce_dtype);
  EXPECT_DOUBLE_EQ(grads(in), 4 * n);
  in.engine.reduce_bytes = 2;
  EXPECT_DOUBLE_EQ(grads(in), 2 * n);
  in.engine = engine_profile("fsdp");
  in.plan = fit_to(strategy_plan("zero3"), in.topology());
  EXPECT_FALSE(in.engine.grads_in_reduce_dtype);
  EXPECT_DOUBLE_EQ(grads(in), in.engine.state_bytes.grads * n / 8);
}

SimInput job(const char* system, const char* topology, int ranks) {
  SimInput in;
  in.model = gpt_preset("gpt-1.3b");
  in.system = load_system(system);
  in.topology_spec = topology;
  in.ranks = ranks;
  in.micro_batch = 1;
  in.seq_len = 2048;
  in.plan = fit_to(strategy_plan("zeropp"), in.topology());
  return in;
}

// On an H100, tierzero's engine computes with eager attention and fp32
// activations where DeepSpeed's models use FlashAttention-2 and bf16: both
// make it slower, each by the throughput that key alone changes. Keys the
// two engines share (calls per unit here: tierzero and fsdp) are never named.
TEST(Engines, DifferencesAreTheKeysThatMoveThisJobsThroughput) {
  const SimInput in = job("dgx-h100", "", 64);
  const EngineProfile deepspeed = engine_profile("deepspeed");
  const auto d = engine_differences(in, deepspeed);
  std::map<std::string, EngineDifference> by_key;
  for (const EngineDifference& x : d) by_key[x.key] = x;
  ASSERT_TRUE(by_key.count("attention"));
  EXPECT_EQ(by_key["attention"].ours, "eager");
  EXPECT_EQ(by_key["attention"].theirs, "flash2");
  SimInput flash = in;
  flash.engine.attention = "flash2";
  EXPECT_DOUBLE_EQ(by_key["attention"].speedup, simulate(flash).tflops_per_device / simulate(in).tflops_per_device);
  EXPECT_GT(by_key["attention"].speedup, 1.01);
  ASSERT_TRUE(by_key.count("activation_bytes"));
  EXPECT_EQ(by_key["activation_bytes"].ours, "4");
  EXPECT_EQ(by_key["activation_bytes"].theirs, "2");
  EXPECT_GT(by_key["activation_bytes"].speedup, 1.0);
  for (std::size_t i = 1; i < d.size(); ++i) EXPECT_GE(std::fabs(std::log(d[i - 1].speedup)), std::fabs(std::log(d[i].speedup)));
  for (const EngineDifference& x : d) EXPECT_GT(std::fabs(x.speedup - 1), 0.01) << x.key;
  for (const EngineDifference& x : engine_differences(in, engine_profile("fsdp"))) EXPECT_NE(x.key, "calls");
  // The same engine: nothing differs.
  EXPECT_TRUE(engine_differences(in, in.engine).empty());
}

// A CPU rank has no FlashAttention rate: both engines compute attention
// eagerly there, so attention is not a reason on a cpu system, while fp32
// activations still are.
TEST(Engines, AKeyThatPricesAlikeOnThisDeviceIsNoReason) {
  SimInput in = job("cpu", "node=2", 4);
  in.model = gpt_preset("gpt-mini");
  in.seq_len = 256;
  std::map<std::string, EngineDifference> by_key;
  for (const EngineDifference& x : engine_differences(in, engine_profile("deepspeed"))) by_key[x.key] = x;
  EXPECT_FALSE(by_key.count("attention"));
  EXPECT_TRUE(by_key.count("activation_bytes"));
}

}  // namespace
}  // namespace tierzero
