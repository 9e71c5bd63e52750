// Plan files (tierzero/plan.h, docs/formats.md, "Plan file"): the shipped
// strategies are the presets of docs/architecture.md's table; every
// strategy and every plan the planner lists reads back from its file as an
// equal plan with the same describe(); bad files are errors naming the
// file and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config_error.h"
#include "tierzero/error.h"
#include "tierzero/plan.h"
#include "tierzero/planner.h"
#include "tierzero/train_config.h"

namespace tierzero {
namespace {

// The strategies as docs/architecture.md's table ("Strategies as plans") gives them.
Plan preset(const std::string& name) {
  Plan p;
  p.name = name;
  const Partition world = Level::world, node = Level::node, package = Level::package;
  if (name == "zero1" || name == "zero2") p.grads = p.optim = world;
  if (name == "zero1") p.bucket_bytes = ~std::size_t{0};
  if (name == "zero3") p.params = p.bwd_params = p.grads = p.optim = world;
  if (name == "zeropp") {
    p.params = p.grads = p.optim = world, p.bwd_params = node;
    p.weight_bits = 8, p.grad_bits = parse_hop_bits("package=4,node=4,world=4"), p.reduce = Decomposition::two_level, p.quant_block = 64;
  }
  if (name == "mics") p.params = p.bwd_params = p.grads = p.optim = node, p.gather = p.reduce = Decomposition::two_level;
  if (name == "hier3") {
    p.params = p.grads = p.optim = world, p.bwd_params = package;
    p.weight_bits = 8, p.grad_bits = parse_hop_bits("package=16,node=8,world=4"), p.quant_block = 64;
    p.gather = p.reduce = Decomposition::three_level;
  }
  return p;
}

void expect_round_trip(const Plan& p) {
  const PlanFile back = parse_plan_file(plan_file_text(p, false, {"a comment", "another"}), "p.toml");
  EXPECT_TRUE(back.plan == p) << p.describe() << "\n" << plan_file_text(p, false);
  EXPECT_EQ(back.plan.describe(), p.describe());
  EXPECT_FALSE(back.fit_to_topology);
}

TEST(PlanFile, TheShippedStrategiesAreThePresetsAndRoundTrip) {
  const std::vector<std::string> names = strategy_names();
  EXPECT_EQ(names, (std::vector<std::string>{"ddp", "hier3", "mics", "zero1", "zero2", "zero3", "zeropp"}));
  for (const std::string& name : names) {
    const PlanFile f = strategy_plan_file(name);
    EXPECT_TRUE(f.plan == preset(name)) << name << ": " << f.plan.describe();
    EXPECT_TRUE(f.fit_to_topology) << name;
    expect_round_trip(f.plan);
    const PlanFile again = parse_plan_file(plan_file_text(f.plan, true), "p.toml");
    EXPECT_TRUE(again.fit_to_topology && again.plan == f.plan) << name;
  }
  try {
    strategy_plan("zero4");
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("unknown strategy 'zero4' (expected ddp, hier3, mics, zero1, zero2, zero3, zeropp)"), std::string::npos)
        << e.message();
  }
}

TEST(PlanFile, EveryPlanThePlannerListsRoundTrips) {
  SimInput in;
  in.model = gpt_preset("gpt-20b");
  in.system = load_system("frontier");
  in.ranks = 64;
  in.micro_batch = 1;
  in.plan = fit_to(strategy_plan("zero3"), in.topology());
  std::size_t n = 0;
  for (const PlanCandidate& c : search_plans(in, {std::nullopt, 1000, 0.05, 0.0})) expect_round_trip(c.plan), ++n;
  EXPECT_GT(n, 20u);
  // Offloaded plans (optimizer and parameters, host memory and NVMe), as the planner proposes them when nothing fits.
  in.model = gpt_preset("llama3-70b");
  in.system = load_system("dgx-h100");
  in.plan = fit_to(strategy_plan("zero3"), in.topology());
  bool nvme = false;
  for (const PlanCandidate& c : search_plans(in, {36e9, 200, 0.05, 0.0})) {
    Plan p = c.plan;
    p.optim_offload.nvme_path = p.param_offload.nvme_path = "/scratch/swap \"a\"";  // a directory with a space and quotes
    nvme = nvme || p.param_offload.device == Offload::nvme;
    expect_round_trip(p);
  }
  EXPECT_TRUE(nvme);
}

TEST(PlanFile, EveryFieldIsRead) {
  const PlanFile f = parse_plan_file(R"(# a plan
[plan]
name = "mine"
params = "node"
bwd_params = "package"
grads = "node"
optim = "node"
weight_bits = 4
grad_bits = "package=8,node=4"
gather = "three_level"
reduce = "two_level"
quant_block = 128
bucket_bytes = 1048576
hop_chunk_bytes = 262144
prefetch = 3
persist_threshold = 100000
[plan.optim_offload]
device = "nvme"
nvme_path = "/swap"
buffers = 4
[plan.param_offload]
device = "cpu"
)",
                                     "mine.toml");
  const Plan& p = f.plan;
  EXPECT_EQ(p.describe(), "mine (params node, bwd_params package, grads node, optim node, weight bits 4, grad bits "
                          "package=8,node=4,world=16, gather three_level, reduce two_level, units of <= 100000 params whole, "
                          "hops pipelined in chunks of 262144 bytes, optim offload nvme, param offload cpu)");
  EXPECT_EQ(p.quant_block, 128u);
  EXPECT_EQ(p.bucket_bytes, 1048576u);
  EXPECT_EQ(p.hop_chunk_bytes, 262144u);
  EXPECT_EQ(parse_plan_file("[plan]\nhop_chunk_bytes = \"whole\"\n", "w.toml").plan.hop_chunk_bytes, 0u);
  EXPECT_EQ(p.prefetch, 3);
  EXPECT_EQ(p.optim_offload.nvme_path, "/swap");
  EXPECT_EQ(p.optim_offload.buffers, 4);
  EXPECT_EQ(p.param_offload.buffers, 2);
  EXPECT_FALSE(f.fit_to_topology);
  expect_round_trip(p);
  // Keys left out keep Plan's defaults: an empty table is the replicated plan.
  EXPECT_TRUE(parse_plan_file("[plan]\n", "e.toml").plan == Plan{});
}

TEST(PlanFile, BadFilesNameTheFileAndTheKey) {
  const auto parse = [](const std::string& text) { return test::config_error_of([&] { parse_plan_file(text, "bad.toml"); }); };
  EXPECT_EQ(parse("[plan]\nparams = \"world\"\nbukcet_bytes = 4\n"), "bad.toml: unknown key 'plan.bukcet_bytes'");
  EXPECT_EQ(parse("[plan]\n[plan.optim_offload]\ndevise = \"cpu\"\n"), "bad.toml: unknown key 'plan.optim_offload.devise'");
  EXPECT_EQ(parse("strategy = \"zero3\"\n[plan]\n"), "bad.toml: unknown key 'strategy' (a plan file holds one [plan] table)");
  EXPECT_EQ(parse("# nothing\n"), "bad.toml: no [plan] table");
  EXPECT_EQ(parse("plan = 3\n"), "bad.toml: key 'plan' must be a table");
  // Bits the quantiser cannot do.
  EXPECT_EQ(parse("[plan]\nweight_bits = 6\n"), "bad.toml: key 'plan.weight_bits': the quantiser does 16 (unquantised), 8 or 4 bits, got 6");
  EXPECT_NE(parse("[plan]\ngrad_bits = \"package=16,node=8,world=3\"\n").find("bad.toml: key 'plan.grad_bits': "), std::string::npos);
  EXPECT_NE(parse("[plan]\ngrad_bits = \"package=16,node=8,world=3\"\n").find("bits of world must be 16, 8 or 4"), std::string::npos);
  // Malformed values.
  EXPECT_NE(parse("[plan]\nparams = \"rack\"\n").find("bad.toml: key 'plan.params': "), std::string::npos);
  EXPECT_EQ(parse("[plan]\nweight_bits = \"8\"\n"), "bad.toml: key 'plan.weight_bits' has the wrong type");
  EXPECT_EQ(parse("[plan]\nprefetch = 9\n"), "bad.toml: key 'plan.prefetch' must be between 0 and 8, got 9");
  EXPECT_EQ(parse("[plan]\nbucket_bytes = \"all\"\n"), "bad.toml: key 'plan.bucket_bytes' must be a number of bytes or \"whole\"");
  EXPECT_EQ(parse("[plan]\nbucket_bytes = 0\n"), "bad.toml: key 'plan.bucket_bytes' must be at least 1, got 0");
  EXPECT_EQ(parse("[plan]\nhop_chunk_bytes = \"half\"\n"), "bad.toml: key 'plan.hop_chunk_bytes' must be a number of bytes or \"whole\"");
  EXPECT_EQ(parse("[plan]\nhop_chunk_bytes = 0\n"), "bad.toml: key 'plan.hop_chunk_bytes' must be at least 1, got 0");
  EXPECT_NE(parse("[plan]\ngather = \"ring\"\n").find("bad.toml: key 'plan.gather': "), std::string::npos);
  EXPECT_NE(parse("[plan]\n[plan.param_offload]\ndevice = \"disk\"\n").find("bad.toml: key 'plan.param_offload.device': unknown offload device 'disk'"),
            std::string::npos);
  EXPECT_NE(parse("[plan]\nparams = \"world\"\n  grads = \n").find("bad.toml:3: "), std::string::npos);  // TOML syntax: the line
}

// The mesh's keys: the tensor-parallel degree and its level (none: the innermost declared), read beside the plan.
TEST(PlanFile, TheTensorParallelKeysAreRead) {
  const PlanFile f = parse_plan_file("[plan]\nparams = \"world\"\ntp = 2\ntp_level = \"node\"\n", "tp.toml");
  EXPECT_EQ(f.tp, 2);
  EXPECT_EQ(f.tp_level, Level::node);
  const PlanFile plain = parse_plan_file("[plan]\n", "e.toml");
  EXPECT_EQ(plain.tp, 1);
  EXPECT_FALSE(plain.tp_level);
  const auto parse = [](const std::string& text) { return test::config_error_of([&] { parse_plan_file(text, "bad.toml"); }); };
  EXPECT_EQ(parse("[plan]\ntp = 0\n"), "bad.toml: key 'plan.tp' must be between 1 and 1048576, got 0");
  EXPECT_NE(parse("[plan]\ntp_level = \"rack\"\n").find("bad.toml: key 'plan.tp_level': "), std::string::npos);
}

TEST(PlanFile, ALevelTheTopologyLacksIsAnErrorUnlessTheFileFitsIt) {
  const Topology two = Topology::parse("node=4,world=2", 8);
  const std::string hier3 = plan_file_text(strategy_plan("hier3"), false);
  EXPECT_EQ(test::config_error_of([&] { parse_plan_file(hier3, "h.toml").for_topology(two); }),
            "h.toml: key 'plan.bwd_params': level package is not in the topology node=4,world=2 (a plan written for another "
            "layout; fit_to_topology = true takes the next level outwards)");
  // The shipped file fits it, as --strategy hier3 always has: the package copy becomes node-level.
  const Plan fitted = strategy_plan_file("hier3").for_topology(two);
  EXPECT_EQ(fitted.bwd_params, Partition(Level::node));
  EXPECT_TRUE(fitted == fit_to(strategy_plan("hier3"), two));
  // On the full three levels nothing changes either way.
  const Topology three = Topology::parse("package=2,node=2,world=2", 8);
  EXPECT_TRUE(parse_plan_file(hier3, "h.toml").for_topology(three) == strategy_plan("hier3"));
  // A plan that contradicts itself is refused with the file named.
  EXPECT_EQ(test::config_error_of([&] { parse_plan_file("[plan]\ngrads = \"world\"\noptim = \"node\"\n", "c.toml").for_topology(three); }),
            "c.toml: plan 'custom': grads (world) and optim (node) must be partitioned over the same level");
}

TEST(PlanFile, ARunConfigCarriesAPlanTable) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tz_plan_file_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string run = (dir / "run.toml").string();
  std::ofstream(run) << "steps = 7\n" << plan_file_text(strategy_plan("zeropp"), true);
  TrainConfig c;
  load_train_config(run, c);  // the run's keys; the [plan] table is the plan layer's
  EXPECT_EQ(c.steps, 7);
  const std::optional<PlanFile> f = read_config_plan(run);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->plan == strategy_plan("zeropp") && f->fit_to_topology);
  std::ofstream(run) << "steps = 7\n";
  EXPECT_FALSE(read_config_plan(run));
  std::ofstream(run) << "plan = \"zero3\"\n";
  EXPECT_EQ(test::config_error_of([&] { load_train_config(run, c); }), run + ": key 'plan' must be a table");
  // write_plan_file replaces the file whole; a folder it cannot write to is an error naming it.
  const std::string written = (dir / "p.toml").string();
  write_plan_file(written, strategy_plan("mics"), {"mics"});
  EXPECT_TRUE(read_plan_file(written).plan == strategy_plan("mics"));
  EXPECT_EQ(test::config_error_of([&] { write_plan_file((dir / "none" / "p.toml").string(), Plan{}); }),
            "cannot write plan file '" + (dir / "none" / "p.toml").string() + "'");
  EXPECT_EQ(test::config_error_of([&] { read_plan_file((dir / "none.toml").string()); }), "cannot read plan file '" + (dir / "none.toml").string() + "'");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tierzero
