// Registration of the CLI's subcommands; one file per subcommand. Each
// add_* function adds its subcommand to `app` with a callback that runs it
// and stores the process exit code in the Context.
#pragma once
#include <CLI/CLI.hpp>
#include <exception>
#include <optional>

#include "tierzero/mpi.h"

namespace tierzero::cli {

// The exit code of a run stopped by SIGTERM or SIGUSR1 after writing its
// checkpoint: "preempted, resume me" (sysexits' EX_TEMPFAIL). A restart
// with --resume latest continues it exactly.
constexpr int kExitPreempted = 75;

// What --model accepts (tierzero/gpt_config.h, load_model).
inline constexpr const char* kModelHelp =
    "Model: a preset (gpt-tiny, gpt-mini, gpt2-124m, gpt-1.3b, gpt-10b, gpt-18b, gpt-20b, llama-tiny, llama-mini, llama3.2-1b, "
    "llama3-8b, llama3-70b, qwen2.5-7b), a model file (*.toml, docs/models.md) or a Hugging Face config.json or its directory";

// State shared by main and the subcommands. MPI is started only by the
// commands that need it and finalised after main has reported any error, so
// that every rank can print its message before the job is torn down.
struct Context {
  int* argc;
  char*** argv;
  int exit_code = 0;
  std::optional<MpiSession> mpi{};

  MpiSession& start_mpi() {
    if (!mpi) mpi.emplace(argc, argv);
    return *mpi;
  }
  // Reports a failure once: "tierzero: error: MESSAGE" (bad input: exit
  // code 2) or "tierzero: internal error: ..." (anything else,
  // std::bad_alloc included: 1). Under MPI it first waits briefly for the
  // other ranks: when every rank failed with the same message, rank 0
  // alone prints it; when they failed differently, each prints its own
  // as "tierzero: rank R: ..."; when this rank failed alone it prints
  // with its rank and aborts the whole job, so no rank is left waiting in
  // a collective. Returns the exit code; later calls return the first one
  // without printing.
  int fail(std::exception_ptr error);
  std::optional<int> failed{};
};

void add_bench_command(CLI::App& app, Context& ctx);
void add_train_command(CLI::App& app, Context& ctx);
void add_data_command(CLI::App& app, Context& ctx);
void add_ckpt_command(CLI::App& app, Context& ctx);
void add_simulate_command(CLI::App& app, Context& ctx);
void add_validate_command(CLI::App& app, Context& ctx);
void add_sample_command(CLI::App& app, Context& ctx);
void add_collective_command(CLI::App& app, Context& ctx);
void add_launch_command(CLI::App& app, Context& ctx);
void add_report_command(CLI::App& app, Context& ctx);
void add_diagnose_command(CLI::App& app, Context& ctx);

}  // namespace tierzero::cli
