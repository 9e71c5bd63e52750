// tierzero diagnose DIR [--json]: the ranks' flight dumps (DIR/flight/rank-R.json,
// written by tierzero train's flight recorder) merged into a verdict
// (tierzero/flight_diagnose.h; docs/formats.md, "Reading a verdict").
// Exit 0 with the verdict; 2 for bad input: no dumps (nothing printed but
// the error), or some unusable files (each named, after the verdict of the rest).
#include <cstdio>

#include "commands.h"
#include "tierzero/flight_diagnose.h"

namespace tierzero::cli {

namespace {
struct DiagnoseArgs {
  std::string dir;
  bool json = false;
};

int run_diagnose(const DiagnoseArgs& a) {
  const FlightDiagnosis d = diagnose_flight(a.dir);
  std::fputs(a.json ? (d.json + "\n").c_str() : d.text.c_str(), stdout);
  std::fflush(stdout);
  for (const std::string& p : d.problems) std::fprintf(stderr, "tierzero: error: %s\n", p.c_str());
  return d.problems.empty() ? 0 : 2;
}
}  // namespace

void add_diagnose_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<DiagnoseArgs>();
  CLI::App* c = app.add_subcommand("diagnose", "Say where a hung or failed job stopped, from its ranks' flight records");
  c->add_option("dir", a->dir, "The run's save folder or --flight-dir (it holds flight/rank-R.json)")->required();
  c->add_flag("--json", a->json, "Print the verdict as one JSON object");
  c->callback([a, &ctx] { ctx.exit_code = run_diagnose(*a); });
}

}  // namespace tierzero::cli
