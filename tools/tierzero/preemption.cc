#include "preemption.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "early_signals.h"
#include "tierzero/flight_recorder.h"

namespace tierzero::cli {

namespace {

volatile std::sig_atomic_t g_preempt_signal = 0;
volatile std::sig_atomic_t g_say = 0;

void say(const char* text, std::size_t n) {
  if (g_say) (void)!write(STDERR_FILENO, text, n);
}

extern "C" void on_preempt_signal(int signo) {
  // mpirun and srun end the ranks left after a lost rank or an abort with SIGTERM, then SIGKILL: the last moment to
  // say where each rank was (a stop notice dumps too, which costs a few milliseconds).
  if (signo == SIGTERM) flight_dump("SIGTERM", FlightDumpKind::stop);
  if (signo == SIGINT && g_preempt_signal != 0) {
    static const char again[] = "\ntierzero: interrupted again: stopping at once without saving; latest names the last complete checkpoint\n";
    say(again, sizeof again - 1);
    _exit(128 + SIGINT);
  }
  if (signo == SIGINT) {
    static const char first[] = "\ntierzero: interrupted: finishing the step, then saving a checkpoint and stopping (Ctrl-C again stops at once)\n";
    say(first, sizeof first - 1);
  }
  g_preempt_signal = signo;
}

// A rank of Open MPI's ORTE launcher (it exports both to every rank it
// starts; srun's PMIx does not set the second), not under tierzero launch.
bool under_bare_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") && std::getenv("OMPI_MCA_orte_hnp_uri") && !std::getenv("TIERZERO_LAUNCH");
}

pid_t g_mpirun = 0;  // the parent to watch (under a bare mpirun), 0 for none

}  // namespace

void arm_preemption(bool say_interrupts) {
  g_say = say_interrupts ? 1 : 0;
  struct sigaction sa {};
  sa.sa_handler = on_preempt_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // interrupted writes and waits resume
  for (int s : {SIGTERM, SIGUSR1, SIGINT}) sigaction(s, &sa, nullptr);
  if (under_bare_mpirun()) g_mpirun = getppid();  // mpirun, or a remote node's orted
  if (const int early = take_early_signal()) g_preempt_signal = early;  // one that came while the run was starting
}

int preemption_signal() {
  if (g_preempt_signal == 0 && g_mpirun != 0 && getppid() != g_mpirun) g_preempt_signal = kMpirunGone;
  return g_preempt_signal;
}

std::string mpirun_sigterm_note() {
  if (!under_bare_mpirun()) return "";
  return "a SIGTERM or Ctrl-C to mpirun itself reaches the ranks as Open MPI's kill sequence: SIGTERM "
         "odls_base_sigkill_timeout seconds (1 by default) after it, SIGKILL as long again later, so a save longer than "
         "the timeout is cut short (raise OMPI_MCA_odls_base_sigkill_timeout); a second SIGTERM (GNU timeout without "
         "--foreground sends two) ends mpirun at once, and the ranks save when they find it gone, within about a second; "
         "start the job as `tierzero launch -- mpirun ...` to have it saved within --grace seconds";
}

}  // namespace tierzero::cli
