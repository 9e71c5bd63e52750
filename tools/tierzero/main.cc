// tierzero: topology-aware sharded data-parallel training.
// Exit codes: 0 success, 1 internal failure, 2 bad input (usage, config,
// topology, file format).
#include <cstdio>

#include "commands.h"
#include "tierzero/error.h"

namespace {
// Prints the error; under MPI, waits briefly for the other ranks and aborts
// the job if they are not all failing alike (so none is left hanging).
int report(tierzero::cli::Context& ctx, const char* kind, const std::string& message, int code) {
  std::fprintf(stderr, "tierzero: %s: %s\n", kind, message.c_str());
  std::fflush(stderr);
  if (ctx.mpi) ctx.mpi->settle_after_error(code);
  return code;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tierzero: topology-aware sharded data-parallel training (ZeRO-3, ZeRO++, hier3)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tierzero 0.1.0");
  tierzero::cli::Context ctx{&argc, &argv, 0, std::nullopt};
  tierzero::cli::add_bench_command(app, ctx);
  tierzero::cli::add_train_command(app, ctx);
  tierzero::cli::add_data_command(app, ctx);
  tierzero::cli::add_ckpt_command(app, ctx);
  tierzero::cli::add_simulate_command(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const tierzero::ConfigError& e) {
    return report(ctx, "error", e.message(), 2);
  } catch (const tierzero::TopologyError& e) {
    return report(ctx, "error", e.message(), 2);
  } catch (const tierzero::FormatError& e) {
    return report(ctx, "error", e.message(), 2);
  } catch (const std::exception& e) {
    return report(ctx, "internal error", e.what(), 1);
  }
  return ctx.exit_code;
}
