#include "comm/comm_timeout.h"

#include <mpi.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tierzero/flight_recorder.h"
#include "tierzero/mpi.h"

namespace tierzero {

namespace {
std::atomic<double> g_timeout_s{0.0};
}  // namespace

void set_comm_timeout(double seconds) {
  TZ_CHECK(std::isfinite(seconds) && seconds >= 0, ConfigError,
           "the communication timeout must be a finite number of seconds >= 0 (0: no limit), not " + std::to_string(seconds));
  g_timeout_s.store(seconds, std::memory_order_relaxed);
}

double comm_timeout_s() { return g_timeout_s.load(std::memory_order_relaxed); }

void comm_timed_out(const Communicator& comm, const char* what, double limit_s, void (*abort_backend)()) {
  const Topology& t = comm.topology();
  const auto& m = comm.members();
  Level span = Level::package;
  for (int x : m)
    if (x != m.front() && static_cast<int>(t.separating_level(m.front(), x)) > static_cast<int>(span)) span = t.separating_level(m.front(), x);
  std::string ranks;
  for (std::size_t i = 0; i < m.size() && i < 16; ++i) ranks += (i ? "," : "") + std::to_string(m[i]);
  if (m.size() > 16) ranks += ",...";
  std::fprintf(stderr,
               "tierzero: rank %d: collective %s on level %s among ranks {%s} did not complete within %g s "
               "(--comm-timeout); a rank is stuck or lost; aborting the job (exit 3; Open MPI's messages about the abort may follow)\n",
               comm.world_rank(comm.rank()), what, std::string(level_name(span)).c_str(), ranks.c_str(), limit_s);
  if (flight_dump("comm-timeout", FlightDumpKind::failure))
    std::fprintf(stderr, "tierzero: rank %d: flight record written to %s (tierzero diagnose)\n", comm.world_rank(comm.rank()),
                 flight_dump_path().c_str());
  std::fflush(stderr);
  if (abort_backend) abort_backend();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 3);
  std::_Exit(3);
}

}  // namespace tierzero
