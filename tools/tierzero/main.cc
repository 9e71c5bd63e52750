// tierzero: topology-aware sharded data-parallel training.
// Exit codes: 0 success, 1 internal failure, 2 bad input (usage, config,
// topology, file format), 3 a collective past --comm-timeout, 4 training
// diverged (--max-bad-steps).
#include <cstdio>
#include <string>

#include "commands.h"
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
  const std::string who = mpi && mpi->size() > 1 ? "rank " + std::to_string(mpi->rank()) + ": " : "";
  std::fprintf(stderr, "tierzero: %s%s: %s\n", who.c_str(), kind.c_str(), message.c_str());
  std::fflush(stderr);
  failed = code;
  if (mpi) mpi->settle_after_error(code);
  return code;
}

}  // namespace tierzero::cli

int main(int argc, char** argv) {
  CLI::App app{"tierzero: topology-aware sharded data-parallel training (ZeRO-3, ZeRO++, hier3)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tierzero 0.1.0");
  tierzero::cli::Context ctx{&argc, &argv};
  tierzero::cli::add_bench_command(app, ctx);
  tierzero::cli::add_train_command(app, ctx);
  tierzero::cli::add_data_command(app, ctx);
  tierzero::cli::add_ckpt_command(app, ctx);
  tierzero::cli::add_simulate_command(app, ctx);
  tierzero::cli::add_sample_command(app, ctx);
  tierzero::cli::add_collective_command(app, ctx);
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
