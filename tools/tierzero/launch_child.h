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
//
// A command whose ranks gave up (each wrote a failure flight record: a
// collective timed out, an error, a fatal signal) ends by itself within
// seconds, but mpirun waits forever for the daemons of a node it can no
// longer reach (a network partition). A GiveUpWatch ends it: asked about once
// a second, `gave_up` returns "" until the ranks gave up, then what they
// said; `grace_s` after that the command's process group gets SIGTERM, and
// SIGKILL 10 s later.
#pragma once

#include <functional>
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

struct GiveUpWatch {
  std::function<std::string()> gave_up;
  double grace_s = 30;
  std::string why;     // what gave_up said (set by run_launch_child)
  bool ended = false;  // whether run_launch_child ended the command for it
};

// Runs `cmd` in a process group of its own (its input /dev/null when ours
// is a terminal; SIGUSR1 to it if the launcher dies) and waits for it,
// passing notices on as above, and ending it for `watch` (when given) as
// above. Returns its wait status; throws ConfigError when it cannot be
// started.
int run_launch_child(const std::vector<std::string>& cmd, double grace_s, GiveUpWatch* watch = nullptr);

// Waits `seconds`, or less when a notice comes first.
void sleep_unless_noticed(double seconds);

}  // namespace tierzero::cli
