// tierzero bench comm: flat vs hierarchical collectives, JSON lines, and a
// measured system file.
#include <cstdio>
#include <iostream>

#include "comm_bench.h"
#include "load_bench.h"
#include "quant_bench.h"
#include "step_bench.h"
#include "tokenizer_bench.h"
#include "commands.h"
#include "validators.h"
#include "tierzero/error.h"
#include "tierzero/mpi.h"

namespace tierzero::cli {

namespace {
struct CommArgs {
  std::string topology;
  std::vector<std::size_t> sizes;
  int iters = 5;
  std::string dtype = "fp32";
  bool json = false;
  std::size_t hop_chunk_bytes = bench::CommBenchOptions{}.hop_chunk_bytes;
  std::string write_system;
  std::string system_name = "measured";
  bench::ComputeCalibration calibration;
};

int run_comm(const CommArgs& a, Context& ctx) {
  MpiSession& mpi = ctx.start_mpi();
  const Topology topo = resolve_topology(a.topology);
  auto world = mpi_world(topo);
  bench::CommBenchOptions opt;
  if (!a.sizes.empty()) opt.sizes_bytes = a.sizes;
  opt.iters = a.iters;
  opt.dtype = parse_dtype(a.dtype);
  opt.hop_chunk_bytes = a.hop_chunk_bytes;
  TZ_CHECK(mpi_initialized(), ConfigError, "bench comm measures collectives between ranks: start it with mpirun, mpiexec or srun");
  const auto rows = bench::run_comm_bench(*world, opt);
  if (mpi.rank() == 0) {
    if (!a.json) std::printf("%-15s %-9s %12s %12s %10s   bytes per rank per level\n", "collective", "algo", "bytes", "time_s", "algbw_GB/s");
    for (const auto& r : rows) {
      if (a.json) {
        std::cout << bench::to_json_line(r, topo) << "\n";
        continue;
      }
      std::printf("%-15s %-9s %12zu %12.6f %10.3f  ", r.collective.c_str(), r.algorithm.c_str(), r.bytes, r.time_s, r.algbw_gbs);
      for (Level l : topo.levels()) std::printf(" %s=%.0f", std::string(level_name(l)).c_str(), r.bytes_per_level[static_cast<int>(l)]);
      if (!r.hop_time_s.empty()) std::printf("   hops alone (s):");
      for (const auto& [l, t] : r.hop_time_s) std::printf(" %s=%.6f", std::string(level_name(l)).c_str(), t);
      if (r.equal_to_hier) std::printf("   %s", *r.equal_to_hier ? "bit for bit hier's" : "not hier's bits");
      std::printf("\n");
    }
    std::cout.flush();
  }
  if (!a.write_system.empty()) {
    const System sys = bench::measure_system(*world, a.system_name, a.calibration);
    if (mpi.rank() == 0) {
      save_system(sys, a.write_system);
      std::fprintf(stderr, "tierzero: wrote system '%s' to %s\n", sys.name.c_str(), a.write_system.c_str());
    }
  }
  return 0;
}
struct StepArgs {
  std::string model = "gpt-mini", matmul = "fp32", param_dtype = "fp32";
  int micro_batch = 8, seq_len = 256, threads = 1, steps = 5;
};

struct LoadArgs {
  std::string model = "gpt-tiny", strategy = "zero3", topology, param_dtype = "bf16";
  std::string offload_optimizer = "none", offload_param = "none", nvme_path;
  bench::LoadBenchOptions opt;
};

int run_load(const LoadArgs& a, Context& ctx) {
  MpiSession& mpi = ctx.start_mpi();
  const Topology topo = resolve_topology(a.topology);
  auto world = mpi_world(topo);
  TrainConfig cfg;
  cfg.model = load_model(a.model);
  cfg.micro_batch = 1;
  cfg.seq_len = 16;
  cfg.param_dtype = parse_dtype(a.param_dtype);
  cfg.validate();
  Plan plan = fit_to(strategy_plan(a.strategy), topo);
  plan.optim_offload.device = parse_offload(a.offload_optimizer);
  plan.param_offload.device = parse_offload(a.offload_param);
  plan.optim_offload.nvme_path = plan.param_offload.nvme_path = a.nvme_path;
  const bench::LoadBenchResult r = bench::run_load_bench(cfg, plan, *world, a.opt);
  if (mpi.rank() == 0) std::cout << bench::to_json_line(cfg, plan, a.opt, r) << std::endl;
  return 0;
}

struct CheckpointArgs {
  std::string model = "gpt-tiny", strategy = "zero3", topology, param_dtype = "bf16", init, output;
  int ranks = 1;
};

int run_checkpoint(const CheckpointArgs& a) {
  const Topology topo = Topology::parse(a.topology.empty() ? "world=" + std::to_string(a.ranks) : a.topology, a.ranks);
  TrainConfig cfg;
  cfg.model = load_model(a.model);
  cfg.param_dtype = parse_dtype(a.param_dtype);
  cfg.validate();
  std::cout << bench::write_start_checkpoint(cfg, fit_to(strategy_plan(a.strategy), topo), topo, a.init, a.output) << std::endl;
  return 0;
}

struct TokenizerArgs {
  std::string vocab, input;
  int reps = 3;
};

struct QuantArgs {
  std::size_t elements = std::size_t{1} << 22;
  std::string impl = "best";
  int reps = 5;
  bool json = false;
};

int run_quant(const QuantArgs& a) {
  const auto rows = bench::run_quant_bench(a.elements, a.impl, a.reps);
  if (!a.json)
    std::printf("%-5s %4s %-5s %5s %-9s %10s %10s %10s\n", "dtype", "bits", "mode", "block", "impl", "quant_GB/s", "deq_GB/s", "memcpy");
  for (const auto& r : rows) {
    if (a.json) {
      std::cout << bench::to_json_line(r) << "\n";
      continue;
    }
    std::printf("%-5s %4d %-5s %5zu %-9s %10.2f %10.2f %10.2f\n", r.dtype.c_str(), r.bits, r.asymmetric ? "asym" : "sym",
                r.block, r.impl.c_str(), r.quantize_gbs,
                r.dequantize_gbs, r.memcpy_gbs);
  }
  return 0;
}
}  // namespace

void add_bench_command(CLI::App& app, Context& ctx) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks (JSON output)");
  bench->require_subcommand(1);
  auto args = std::make_shared<CommArgs>();
  CLI::App* comm = bench->add_subcommand("comm", "Flat vs hierarchical all-gather, reduce-scatter and all-reduce, with each hop's time alone");
  comm->add_option("--topology", args->topology, "Layout, innermost first, e.g. package=2,node=2,world=2 (default: detect nodes)");
  comm->add_option("--sizes", args->sizes, "Tensor sizes M in bytes")->delimiter(',');
  comm->add_option("--iters", args->iters, "Timed iterations per size")->check(at_least(1));
  comm->add_option("--dtype", args->dtype, "Element type: fp32, bf16, fp16");
  comm->add_flag("--json", args->json, "One JSON object per line");
  comm->add_option("--hop-chunk-bytes", args->hop_chunk_bytes,
                   "Chunk of the 'pipelined' rows: the hierarchical collectives with their hops pipelined (0: no such rows)");
  comm->add_option("--write-system", args->write_system, "Write a system TOML with the measured latency and bandwidth per level");
  comm->add_option("--system-name", args->system_name, "Name recorded in the written system file");
  comm->add_option("--calibrate-model", args->calibration.model, "Model whose training step the written system's gemm_efficiency is fitted to (--write-system)");
  comm->add_option("--calibrate-micro-batch", args->calibration.micro_batch, "Its micro-batch")->check(at_least(1));
  comm->add_option("--calibrate-seq-len", args->calibration.seq_len, "Its sequence length (0: the model's context, at most 2048, as train)")
      ->check(at_least(0));
  comm->callback([args, &ctx] { ctx.exit_code = run_comm(*args, ctx); });

  auto qargs = std::make_shared<QuantArgs>();
  CLI::App* quant = bench->add_subcommand("quant", "Single-thread quantise/dequantise GB/s vs memcpy");
  quant->add_option("--elements", qargs->elements, "Tensor size in elements")->check(at_least(1));
  quant->add_option("--impl", qargs->impl, "best, reference, avx2, avx512 or avx512bf16");
  quant->add_option("--reps", qargs->reps, "Timed repetitions (best is reported)")->check(at_least(1));
  quant->add_flag("--json", qargs->json, "One JSON object per line");
  quant->callback([qargs, &ctx] { ctx.exit_code = run_quant(*qargs); });

  auto sargs = std::make_shared<StepArgs>();
  CLI::App* step = bench->add_subcommand("step", "Time training steps (forward + backward + AdamW) on one rank");
  step->add_option("--model", sargs->model, kModelHelp)->capture_default_str();
  step->add_option("--micro-batch", sargs->micro_batch, "Sequences per step")->check(at_least(1));
  step->add_option("--seq-len", sargs->seq_len, "Sequence length")->check(at_least(1));
  step->add_option("--threads", sargs->threads, "OpenBLAS threads")->check(at_least(1));
  step->add_option("--steps", sargs->steps, "Timed steps (median reported)")->check(at_least(1));
  step->add_option("--matmul", sargs->matmul, "GEMM math: fp32, bf16 or auto")->check(CLI::IsMember({"auto", "fp32", "bf16"}))
      ->capture_default_str();
  step->add_option("--param-dtype", sargs->param_dtype, "Working parameter storage: fp32 (PyTorch's default), bf16, fp16")
      ->capture_default_str();
  step->callback([sargs, &ctx] {
    TrainConfig cfg;
    cfg.model = load_model(sargs->model);
    cfg.micro_batch = sargs->micro_batch;
    cfg.seq_len = sargs->seq_len;
    cfg.param_dtype = parse_dtype(sargs->param_dtype);
    cfg.matmul = parse_matmul_type(sargs->matmul);
    cfg.recompute = false;  // the step PyTorch's baseline runs (bench/gpt_vs_pytorch.py): activations kept
    cfg.validate();
    const auto r = bench::run_step_bench(cfg, sargs->threads, 1, sargs->steps);
    std::cout << bench::to_json_line(cfg, sargs->threads, r, bench::measure_gemm_rates(sargs->threads)) << std::endl;
    ctx.exit_code = 0;
  });

  auto largs = std::make_shared<LoadArgs>();
  CLI::App* load = bench->add_subcommand("load", "Peak host memory per rank of building a sharded run from --init and resuming a checkpoint (no step)");
  load->add_option("--model", largs->model, kModelHelp)->capture_default_str();
  load->add_option("--init", largs->opt.init, "Weights to start from (safetensors file or Hugging Face directory; default: the seed's)");
  load->add_option("--resume", largs->opt.resume, "A checkpoint to resume after building (same or another layout)");
  load->add_option("--save-dir", largs->opt.save_dir, "Save a checkpoint there after loading");
  load->add_option("--strategy", largs->strategy, "ddp, zero1, zero2, zero3, zeropp, mics, hier3")->capture_default_str();
  load->add_option("--topology", largs->topology, "Layout, innermost first, e.g. node=4,world=2 (default: detect nodes)");
  load->add_option("--param-dtype", largs->param_dtype, "Working parameter storage: fp32, bf16, fp16")->capture_default_str();
  load->add_option("--offload-optimizer", largs->offload_optimizer, "none, cpu or nvme (files in --nvme-path)")
      ->check(CLI::IsMember({"none", "cpu", "nvme"}));
  load->add_option("--offload-param", largs->offload_param, "none, cpu or nvme (files in --nvme-path)")
      ->check(CLI::IsMember({"none", "cpu", "nvme"}));
  load->add_option("--nvme-path", largs->nvme_path, "Directory of the swap files");
  load->callback([largs, &ctx] { ctx.exit_code = run_load(*largs, ctx); });

  auto cargs = std::make_shared<CheckpointArgs>();
  CLI::App* ck = bench->add_subcommand("checkpoint",
                                       "Write, in one process, the checkpoint a run of --ranks ranks built from --init would save before its first step");
  ck->add_option("--model", cargs->model, kModelHelp)->capture_default_str();
  ck->add_option("--init", cargs->init, "Weights (safetensors file or Hugging Face directory)")->required();
  ck->add_option("--ranks", cargs->ranks, "Ranks of the layout")->check(at_least(1))->required();
  ck->add_option("--topology", cargs->topology, "Their layout, innermost first (default: world=RANKS)");
  ck->add_option("--strategy", cargs->strategy, "ddp, zero1, zero2, zero3, zeropp, mics, hier3")->capture_default_str();
  ck->add_option("--param-dtype", cargs->param_dtype, "Working parameter storage: fp32, bf16, fp16")->capture_default_str();
  ck->add_option("--output", cargs->output, "Save directory to write (step-00000000 and latest)")->required();
  ck->callback([cargs, &ctx] { ctx.exit_code = run_checkpoint(*cargs); });

  auto targs = std::make_shared<TokenizerArgs>();
  CLI::App* tok = bench->add_subcommand("tokenizer", "Byte-level BPE encoding MB/s on one core, beside the byte tokenizer");
  tok->add_option("--tokenizer-dir", targs->vocab,
                  "A Hugging Face tokenizer.json or its directory, an encoder.json + vocab.bpe directory, or a .tiktoken file")
      ->required();
  tok->add_option("--input", targs->input, "UTF-8 text to encode")->required();
  tok->add_option("--reps", targs->reps, "Timed passes (best is reported)")->check(at_least(1));
  tok->callback([targs, &ctx] {
    std::cout << bench::to_json_line(bench::run_tokenizer_bench(targs->vocab, targs->input, targs->reps)) << std::endl;
    ctx.exit_code = 0;
  });
}

}  // namespace tierzero::cli
