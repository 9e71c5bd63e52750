// The corpus of published runs (data/published-runs.toml) and the
// simulator's figures over it. The summaries are pinned: a change to the
// simulator that worsens either half's median or largest |error|, or calls
// a trained run "does not fit", fails here (docs/simulator.md, "Validation").
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "sim/pipeline.h"
#include "tierzero/corpus.h"
#include "tierzero/error.h"
#include "tierzero/system.h"

namespace tierzero {
namespace {

std::vector<RunCheck> half(const std::vector<RunCheck>& checks, const std::string& h) {
  std::vector<RunCheck> out;
  for (const RunCheck& c : checks)
    if (c.run->half == h) out.push_back(c);
  return out;
}

const std::vector<RunCheck>& builtin_checks() {
  static const std::vector<RunCheck> checks = check_corpus(builtin_corpus());
  return checks;
}

TEST(Corpus, CoversTheGpusEnginesAndSourcesTheIssueAsksFor) {
  std::set<std::string> gpus, engines, halves;
  int trained = 0;
  for (const PublishedRun& r : builtin_corpus()) {
    gpus.insert(r.gpu), engines.insert(r.input.engine.name), halves.insert(r.half);
    EXPECT_FALSE(r.source.empty()) << r.id;
    trained += r.oom ? 0 : 1;
  }
  EXPECT_GE(trained, 30);
  EXPECT_GE(gpus.size(), 4u);
  EXPECT_GE(engines.size(), 3u);
  EXPECT_EQ(halves, (std::set<std::string>{"check", "fit"}));
}

// The figures of `tierzero validate --summary` when they were pinned, each
// with a little room (0.3 points) for arithmetic that changes nothing: the
// runs' throughput, then the published speedups (the ZeRO++ blog's four in
// the fitting half, the Frontier paper's three in the checking half).
TEST(Corpus, HalvesStayWithinThePinnedErrors) {
  struct Pin {
    const char* half;
    double median, max;
    int speedups;
    double speedup_median, speedup_max;
  };
  for (const Pin& p : {Pin{"fit", 0.024, 0.292, 4, 0.091, 0.151}, Pin{"check", 0.035, 0.297, 3, 0.215, 0.377}}) {
    const CorpusSummary s = summarize(half(builtin_checks(), p.half));
    EXPECT_LE(s.median_abs_error, p.median + 0.003) << p.half;
    EXPECT_LE(s.max_abs_error, p.max + 0.003) << p.half;
    EXPECT_EQ(s.trained_not_fitting, 0) << p.half;
    EXPECT_EQ(s.ratios, p.speedups) << p.half;
    EXPECT_LE(s.ratio_median_abs_error, p.speedup_median + 0.003) << p.half;
    EXPECT_LE(s.ratio_max_abs_error, p.speedup_max + 0.003) << p.half;
  }
}

// Published runs the corpus leaves out (bench/corpus/outside-ibm.toml: the IBM blog's 34B on H100 and 13B on A100 and
// H100, the 13B with either reading of its "Selective" checkpointing): the model carries over to them. Pinned at
// their figures when FSDP1's backward prefetch was priced (largest |error| 7.1%; before it 8.0%, and before the model's
// code 19.2%), with 0.3 points of room.
TEST(Corpus, CarriesOverToPublishedRunsOutsideIt) {
  const std::vector<RunCheck> checks = check_corpus(load_corpus(std::string(TZ_BENCH_DIR) + "/corpus/outside-ibm.toml", ""));
  ASSERT_EQ(checks.size(), 5u);
  const CorpusSummary s = summarize(checks);
  EXPECT_EQ(s.trained_not_fitting, 0);
  EXPECT_LE(s.max_abs_error, 0.071 + 0.003);
  EXPECT_LE(s.median_abs_error, 0.031 + 0.003);
}

// The tensor-, pipeline- and context-parallel runs of NeMo 24.07 and Megatron-Bridge (in the checking half): their
// model parallelism read as the rows give it, each on its default level (NeMo 24.07's Llama 3 70B: TP 4 with SP in the
// node, CP 2 on the node's other two ranks, PP 4 interleaved over 5 chunks across the nodes, DP 2), the data-parallel
// ranks the rest; none called "does not fit", and their figures pinned as the halves' are (docs/simulator.md,
// "Validation": median |error| 5.4%, largest 9.9%; before the FP8 inputs, the bf16 gradients, the userbuffer and the
// point-to-point overlaps were priced, 18.2% and 22.3% with five of the eight called "does not fit").
TEST(Corpus, PricesTheModelParallelRunsAsTheirRowsGiveThem) {
  std::vector<RunCheck> parallel;
  int all = 0;
  for (const RunCheck& c : builtin_checks()) {
    const SimInput& in = c.run->input;
    if (in.mesh.tp == 1 && in.pipeline.stages == 1 && in.context.degree == 1) continue;
    ++all;  // with the papers' and BLOOM's six (PricesThePapersRunsFromTheirQuotedFigures)
    if (c.run->publication == "NVIDIA/NeMo" || c.run->publication == "NVIDIA-NeMo/Megatron-Bridge") parallel.push_back(c);
  }
  EXPECT_EQ(all, 14);
  ASSERT_EQ(parallel.size(), 8u);
  const PublishedRun* llama = nullptr;
  for (const RunCheck& c : parallel) {
    EXPECT_EQ(c.run->half, "check") << c.run->id;
    if (c.run->id == "nemo2407-llama3-70b-h100-64gpu-fp8-tp4-pp4-cp2") llama = c.run;
  }
  ASSERT_NE(llama, nullptr);
  const SimInput& in = llama->input;
  EXPECT_EQ(in.mesh.tp, 4);
  EXPECT_TRUE(in.mesh.sp);
  EXPECT_TRUE(in.engine.tp_comm_overlap);
  EXPECT_EQ(in.engine.reduce_bytes, 2);
  EXPECT_EQ(in.pipeline.stages, 4);
  EXPECT_EQ(in.pipeline.schedule(), "interleaved:5");
  EXPECT_EQ(in.context.degree, 2);
  EXPECT_EQ(in.context.kind, ContextShape::Kind::ring);
  const Topology data = in.data_topology();
  EXPECT_EQ(data.fanout(Level::node) * data.fanout(Level::world), 2 * 2);  // dp x cp
  EXPECT_EQ(in.context.level_in(data), Level::node);
  const CorpusSummary s = summarize(parallel);
  EXPECT_EQ(s.trained_not_fitting, 0);
  EXPECT_LE(s.median_abs_error, 0.054 + 0.003);
  EXPECT_LE(s.max_abs_error, 0.099 + 0.003);
}

// The papers' and a benchmark suite's runs, each figure turned into tokens/s per GPU by the source's own count
// (docs/simulator.md, "Validation"): Narayanan et al. 2021's 1T GPT at 502 PFLOP/s on 3072 A100s over its equation 3
// (96 l h^2 (1 + s / 6h + V / 16lh) FLOPs per token, with recomputation), MT-NLG 530B's 1920 sequences of 2048 per 60.1,
// 50.2 and 44.4 s on 2240, 2800 and 3360 A100s, the JUPITER benchmark's 13B at 60777.68 tokens/s on 32 A100 40GB (its
// network not stated: priced as a range), BLOOM 176B's 2048 sequences of 2048 per 104.70 s on 384 A100s (70 layers on
// 12 stages, the end stages 5 beside the embedding, as its README gives them). All six trained: none called "does not
// fit" (the 1T's 64 stages of 2 blocks hold 64 micro-batches' block inputs and one block's recomputation, 52 GB, not 64
// recomputations, 146 GB). Their errors pinned as the halves' (+0.4% for the 1T; MT-NLG's three over-predicted by
// 17-21%, the 13B by 18.9%, BLOOM by 5.1%). The two Megatron-LM runs compute their loss unfused in fp32 (their
// gpt_model.py's vocab_parallel_cross_entropy(output.float(), ...)), and the 13B, without Transformer Engine, rotates
// its queries and keys with Megatron-LM's own PyTorch code (data/model-code/megatron-lm-local.toml) and, with
// FlashAttention, recomputes nothing under --recompute-granularity selective.
TEST(Corpus, PricesThePapersRunsFromTheirQuotedFigures) {
  std::map<std::string, const RunCheck*> runs;
  for (const RunCheck& c : builtin_checks())
    if (c.run->publication == "arxiv.org/abs/2104.04473" || c.run->publication == "arxiv.org/abs/2201.11990" ||
        c.run->publication == "FZJ-JSC/jubench-megatron-lm" || c.run->publication == "bigscience-workshop/bigscience")
      runs[c.run->id] = &c;
  ASSERT_EQ(runs.size(), 6u);
  const double l = 128, h = 25600, s = 2048, v = 51200;
  const RunCheck& t = *runs.at("megatron-sc21-gpt-1t-a100-3072gpu-tp8-pp64");
  EXPECT_NEAR(t.run->tokens_per_s_per_gpu, 502e15 / 3072 / (96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))), 1e-3);
  EXPECT_EQ(t.run->input.pipeline.stages, 64);
  EXPECT_EQ(t.run->input.mesh.tp, 8);
  EXPECT_TRUE(t.fits) << t.result.memory_total / 1e9 << " GB";
  EXPECT_FALSE(t.run->input.engine.fused_loss);
  EXPECT_LE(std::abs(t.error), 0.002 + 0.003);
  const int gpus[] = {2240, 2800, 3360};
  const double seconds[] = {60.1, 50.2, 44.4};
  std::vector<RunCheck> mtnlg;
  for (int i = 0; i < 3; ++i) {
    const RunCheck& c = *runs.at("mtnlg-530b-a100-" + std::to_string(gpus[i]) + "gpu-tp8-pp35");
    EXPECT_NEAR(c.run->tokens_per_s_per_gpu, 1920.0 * 2048 / (seconds[i] * gpus[i]), 1e-3);
    EXPECT_EQ(c.run->input.engine.name, "deepspeed");
    EXPECT_EQ(c.run->half, "check");
    mtnlg.push_back(c);
  }
  const CorpusSummary m = summarize(mtnlg);
  EXPECT_EQ(m.trained_not_fitting, 0);
  EXPECT_LE(m.max_abs_error, 0.208 + 0.003);
  const RunCheck& j = *runs.at("jubench-megatron-gpt-13b-a100-40gb-32gpu-tp2-pp4");
  EXPECT_NEAR(j.run->tokens_per_s_per_gpu, 60777.68 / 32, 1e-3);
  EXPECT_EQ(j.run->input.mesh.tp, 2);
  EXPECT_EQ(j.run->input.pipeline.stages, 4);
  EXPECT_TRUE(j.fits);
  EXPECT_TRUE(j.network_range());
  EXPECT_EQ(j.run->input.model_code.name, "megatron-lm-local");
  EXPECT_FALSE(j.run->input.engine.fused_loss);
  EXPECT_EQ(j.run->input.recompute.kind, Recompute::Kind::none);
  EXPECT_LE(std::abs(j.error), 0.189 + 0.003);
  const RunCheck& b = *runs.at("bloom-176b-a100-384gpu-tp4-pp12");
  EXPECT_NEAR(b.run->tokens_per_s_per_gpu, 2048.0 * 2048 / (104.70 * 384), 1e-3);
  EXPECT_EQ(b.run->input.pipeline.split_name(), "embedding");
  std::vector<int> bloom(12, 6);
  bloom.front() = bloom.back() = 5;
  EXPECT_EQ(stage_layers(b.run->input.pipeline, b.run->input.model.layers), bloom);
  EXPECT_TRUE(b.fits) << b.result.memory_total / 1e9 << " GB";
  EXPECT_FALSE(b.network_range());
  EXPECT_LE(std::abs(b.error), 0.051 + 0.003);
}

// The runs predicted at the memory limit (SimResult::at_memory_limit: less free than a block's allocation, so the
// caching allocator retries block after block) are llm-foundry's MPT-30B at sequence 8192 on A100 and H100, at 80.0
// of 80 GB, and both ran slower than predicted, as an upper bound must; the 30B at 4096 (74.9 GB) and the 3B at 8192
// (67.3 GB under FP8, free more than its blocks' allocations) are not at the limit. The largest |error| of the fitting half's
// other runs is pinned like the halves' figures.
TEST(Corpus, RunsAtTheMemoryLimitRanNoFasterThanPredicted) {
  std::set<std::string> at_limit;
  for (const RunCheck& c : builtin_checks())
    if (c.result.at_memory_limit) {
      at_limit.insert(c.run->id);
      EXPECT_TRUE(c.fits) << c.run->id;
      EXPECT_GE(c.error, 0.0) << c.run->id << ": ran faster than its upper bound";
    }
  EXPECT_EQ(at_limit, (std::set<std::string>{"llmfoundry-a10080-mpt30b-s8192-g8-mb1", "llmfoundry-h100-mpt30b-s8192-g8-mb1"}));
  const CorpusSummary fit = summarize(half(builtin_checks(), "fit"));
  EXPECT_EQ(fit.at_limit, 2);
  EXPECT_EQ(fit.at_limit_within_bound, 2);
  EXPECT_LE(fit.max_abs_error_below_limit, 0.121 + 0.003);
  EXPECT_LT(fit.max_abs_error_below_limit, fit.max_abs_error);
  const CorpusSummary check = summarize(half(builtin_checks(), "check"));
  EXPECT_EQ(check.at_limit, 0);
  EXPECT_EQ(check.max_abs_error_below_limit, check.max_abs_error);
}

TEST(Corpus, TheRunThatRanOutOfMemoryIsCalledNotFitting) {
  const CorpusSummary s = summarize(builtin_checks());
  EXPECT_EQ(s.oom, 1);
  EXPECT_EQ(s.oom_fitting, 0);
}

// A ratio row: its prediction is the quotient of two simulations, the second
// with the `over` table's keys changed.
TEST(Corpus, ASpeedupIsPredictedAsTheRatioOfTwoConfigurations) {
  const std::string base = R"(
[[run]]
id = "a"
half = "check"
source = "test"
gpu = "a100-80gb"
gpus = 16
gpus_per_node = 8
engine = "fsdp"
strategy = "zeropp"
precision = "bf16"
seq_len = 2048
micro_batch = 1
grad_accum = 1
recompute = "full"
model = { preset = "gpt-1.3b" }
speedup = 1.5
over = { strategy = "zero3", gpus = 8 }
)";
  const std::vector<PublishedRun> runs = parse_corpus(base, "t.toml");
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_TRUE(runs[0].ratio());
  EXPECT_EQ(runs[0].over.ranks, 8);
  EXPECT_EQ(runs[0].input.ranks, 16);
  EXPECT_NE(runs[0].over.plan.describe(), runs[0].input.plan.describe());
  const RunCheck c = check_corpus(runs)[0];
  const double ratio = simulate(runs[0].input).tokens_per_s_per_device / simulate(runs[0].over).tokens_per_s_per_device;
  EXPECT_DOUBLE_EQ(c.predicted, ratio);
  EXPECT_DOUBLE_EQ(c.error, ratio / 1.5 - 1);
  const CorpusSummary s = summarize({c});
  EXPECT_EQ(s.trained, 0);
  EXPECT_EQ(s.ratios, 1);
  EXPECT_DOUBLE_EQ(s.ratio_max_abs_error, std::abs(ratio / 1.5 - 1));
}

// Bad corpora: each names the run and what is wrong.
TEST(Corpus, BadRunsAreNamed) {
  const std::string head = R"(
[[run]]
id = "r1"
half = "fit"
source = "test"
gpu = "h100-sxm"
gpus = 8
gpus_per_node = 8
engine = "fsdp"
strategy = "zero3"
precision = "bf16"
seq_len = 2048
micro_batch = 1
grad_accum = 1
recompute = "none"
model = { preset = "gpt-1.3b" }
)";
  struct Case {
    std::string tail, message;
  };
  for (const Case& c : {Case{"", "needs one figure"},
                        Case{"tokens_per_s_per_gpu = 100\noom = true\n", "needs one figure"},
                        Case{"tokens_per_s_per_gpu = -5\n", "must be positive"},
                        Case{"speedup = 1.2\n", "speedup and over go together"},
                        Case{"tokens_per_s_per_gpu = 100\nover = { strategy = \"zero2\" }\n", "speedup and over go together"},
                        Case{"speedup = 1.2\nover = { id = \"x\" }\n", "over may not change 'id'"},
                        Case{"speedup = 1.2\nover = { strategy = \"nope\" }\n", "nope"},
                        Case{"tokens_per_s_per_gpu = 100\nbackward_prefetch = \"early\"\n", "backward_prefetch must be \"pre\" or \"post\""},
                        Case{"tokens_per_s_per_gpu = 100\n[[run]]\nid = \"r1\"\n", "missing key 'half'"}}) {
    try {
      parse_corpus(head + c.tail, "bad.toml");
      ADD_FAILURE() << "accepted: " << c.tail;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.toml: run r1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
  // The engine file's keys through --override: backward_prefetch read (post slows the run), a bad value named.
  const std::string run = head + "tokens_per_s_per_gpu = 100\n";
  const double pre = check_corpus(parse_corpus(run, "ok.toml"))[0].predicted;
  const auto post = parse_corpus(run, "ok.toml", {"[engines.fsdp]\nbackward_prefetch = \"post\"\n", "o.toml"});
  EXPECT_EQ(post[0].input.engine.backward_prefetch, BackwardPrefetch::post);
  EXPECT_LT(check_corpus(post)[0].predicted, pre);
  try {
    parse_corpus(run, "ok.toml", {"[engines.fsdp]\nbackward_prefetch = \"early\"\n", "o.toml"});
    ADD_FAILURE() << "accepted backward_prefetch = early";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("o.toml: [engines.fsdp]: backward_prefetch must be \"pre\" or \"post\", got 'early'"), std::string::npos)
        << e.what();
  }
  std::string twice = head + "tokens_per_s_per_gpu = 100\n" + head + "tokens_per_s_per_gpu = 100\n";
  EXPECT_THROW(parse_corpus(twice, "bad.toml"), ConfigError);
  std::string wrong_gpu = head + "tokens_per_s_per_gpu = 100\n";
  wrong_gpu.replace(wrong_gpu.find("h100-sxm"), 8, "tpu-v5p");
  EXPECT_THROW(parse_corpus(wrong_gpu, "bad.toml"), ConfigError);
  std::string wrong_engine = head + "tokens_per_s_per_gpu = 100\n";
  wrong_engine.replace(wrong_engine.find("\"fsdp\""), 6, "\"jax\"");
  EXPECT_THROW(parse_corpus(wrong_engine, "bad.toml"), ConfigError);
}

TEST(Corpus, ErrorBandNamesTheRunsItComesFrom) {
  const CorpusSummary s = summarize(select(builtin_checks(), "a100-80gb", "fsdp"));
  const std::string band = error_band(device_preset("a100-80gb").device, "fsdp");
  EXPECT_NE(band.find("over " + std::to_string(s.trained) + " published a100-80gb fsdp runs"), std::string::npos) << band;
  // A device with runs under other engines: the band says it has none under this one (uncalibrated devices:
  // corpus_fit_test.cc).
  EXPECT_NE(error_band(device_preset("mi250x-gcd").device, "tierzero").find("no published run on mi250x-gcd under tierzero"), std::string::npos);
  // The Frontier paper publishes ratios only: the band is theirs, and says so.
  const std::string ratios = error_band(device_preset("mi250x-gcd").device, "deepspeed");
  EXPECT_NE(ratios.find("over 3 published mi250x-gcd deepspeed speedups"), std::string::npos) << ratios;
  EXPECT_NE(ratios.find("no absolute throughput"), std::string::npos) << ratios;
  // A tensor-, pipeline- or context-parallel job's band is over the corpus's runs of that kind alone: the eight H100
  // Megatron runs, not the three data-parallel ones beside them; none on the MI250X.
  const std::string parallel = error_band(device_preset("h100-sxm").device, "megatron", true);
  EXPECT_NE(parallel.find("over 8 published h100-sxm megatron tensor-, pipeline- or context-parallel runs"), std::string::npos) << parallel;
  EXPECT_NE(parallel, error_band(device_preset("h100-sxm").device, "megatron"));
  EXPECT_NE(error_band(device_preset("mi250x-gcd").device, "megatron", true)
                .find("no tensor-, pipeline- or context-parallel run on mi250x-gcd under megatron"),
            std::string::npos);
}

}  // namespace
}  // namespace tierzero
