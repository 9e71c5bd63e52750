// The command that tierzero launch runs, and the notices that stop it.
// The launcher's SIGTERM, SIGINT and SIGUSR1 are notices: the first one
// becomes SIGUSR1 to the command (mpirun and srun pass it on to every rank
// as it is; tierzero train saves and exits 75), the command gets --grace
// seconds to end, then SIGTERM, then SIGKILL to its process group 10 s
// later; a second SIGINT becomes SIGINT to the command at once (mpirun
// stops its job, tierzero train stops without saving). Later SIGTERMs and
// SIGUSR1s change nothing. SIGUSR2 is no notice: it is passed on to the
// command as it is (mpirun and srun pass it to every rank, which writes its
// flight record and goes on). Single-threaded use: one command at a time.
#pragma once

#include <string>
#include <vector>

namespace tierzero::cli {

// Installs the notice handlers; `early` is a notice recorded while the
// process was starting (early_signals.h), 0 for none.
void install_launch_notices(int early);

// The signal of the first notice, or 0 while there has been none.
int launch_notice();

// Whether a second SIGINT came (Ctrl-C twice: the launcher exits 130).
bool launch_interrupted_twice();

// Runs `cmd` in a process group of its own (its input /dev/null when ours
// is a terminal; SIGUSR1 to it if the launcher dies) and waits for it,
// passing notices on as above. Returns its wait status; throws ConfigError
// when it cannot be started.
int run_launch_child(const std::vector<std::string>& cmd, double grace_s);

// Waits `seconds`, or less when a notice comes first.
void sleep_unless_noticed(double seconds);

}  // namespace tierzero::cli
