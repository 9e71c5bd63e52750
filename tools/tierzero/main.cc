// tierzero: topology-aware sharded data-parallel training.
// Exit codes: 0 success, 1 internal failure, 2 bad input (usage, config,
// topology, file format), 3 a collective past --comm-timeout, 4 training
// diverged (--max-bad-steps), 75 preempted (SIGTERM or SIGUSR1: checkpoint
// written, resume with --resume latest).
#include <malloc.h>

#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "commands.h"
#include "early_signals.h"
#include "tierzero/error.h"

namespace tierzero::cli {

int Context::fail(std::exception_ptr error) {
  if (failed) return *failed;
  int code = 1;
  std::string kind = "internal error", message = "unknown exception";
  try {
    std::rethrow_exception(error);
  } catch (const ConfigError& e) {
    code = 2, kind = "error", message = e.message();
  } catch (const TopologyError& e) {
    code = 2, kind = "error", message = e.message();
  } catch (const FormatError& e) {
    code = 2, kind = "error", message = e.message();
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
  }
  failed = code;
  const std::string text = kind + ": " + message;
  // Every rank failing alike prints once (rank 0); otherwise each rank names itself.
  const auto how = mpi ? mpi->settle_after_error(text) : MpiSession::Failure::alone;
  const bool many = mpi && mpi->size() > 1;
  if (how != MpiSession::Failure::alike || mpi->rank() == 0) {
    const std::string who = many && how != MpiSession::Failure::alike ? "rank " + std::to_string(mpi->rank()) + ": " : "";
    // Open MPI prints its own lines after an abort (MPI_ABORT was invoked..., ORTE_ERROR_LOG ...): say whose they are.
    const char* after = many && how == MpiSession::Failure::alone ? " (aborting the job; Open MPI's messages about the abort may follow)" : "";
    std::fprintf(stderr, "tierzero: %s%s%s\n", who.c_str(), text.c_str(), after);
    std::fflush(stderr);
  }
  if (many && how == MpiSession::Failure::alone) MpiSession::abort(code);
  return code;
}

// Freed memory stays in the heap for the next allocation instead of going
// back to the kernel: the GEMM library (oneDNN) and Open MPI's reductions
// allocate temporaries on every call, and each fresh page costs a fault
// (~11 us per 4 KiB on the VMs measured; Open MPI's 8-rank reduce-scatter of
// 64 MiB took 1.9 s with glibc's defaults and 67 ms with these). As
// MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=2 GiB; a variable the user set wins.
void keep_freed_memory() {
  if (!std::getenv("MALLOC_MMAP_MAX_")) mallopt(M_MMAP_MAX, 0);
  if (!std::getenv("MALLOC_TRIM_THRESHOLD_")) mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

}  // namespace tierzero::cli

int main(int argc, char** argv) {
  // Fault injection for tests: a preemption notice before anything has started.
  if (const char* v = std::getenv("TIERZERO_FAULT_EARLY_SIGNAL"); v && *v == '1') std::raise(SIGUSR1);
  // Only train and launch act on preemption notices (early_signals.h).
  if (argc < 2 || (std::strcmp(argv[1], "train") != 0 && std::strcmp(argv[1], "launch") != 0)) tierzero::cli::release_early_signals();
  tierzero::cli::keep_freed_memory();
  CLI::App app{"tierzero: topology-aware sharded data-parallel training (ZeRO-3, ZeRO++, hier3)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tierzero 0.1.0");
  tierzero::cli::Context ctx{&argc, &argv};
  tierzero::cli::add_bench_command(app, ctx);
  tierzero::cli::add_train_command(app, ctx);
  tierzero::cli::add_data_command(app, ctx);
  tierzero::cli::add_ckpt_command(app, ctx);
  tierzero::cli::add_simulate_command(app, ctx);
  tierzero::cli::add_validate_command(app, ctx);
  tierzero::cli::add_sample_command(app, ctx);
  tierzero::cli::add_collective_command(app, ctx);
  tierzero::cli::add_launch_command(app, ctx);
  tierzero::cli::add_report_command(app, ctx);
  tierzero::cli::add_diagnose_command(app, ctx);
  if (argc > 1 && argv[1][0] != '-') {  // CLI11 would only say "A subcommand is required"
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->check_name(argv[1]);
    }
    if (!known) {
      std::fprintf(stderr, "tierzero: unknown command '%s'; the commands are %s (tierzero --help)\n", argv[1], names.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (...) {
    return ctx.fail(std::current_exception());
  }
  return ctx.exit_code;
}
