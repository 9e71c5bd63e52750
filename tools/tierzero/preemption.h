// Preemption notices of a training run. SIGTERM (a scheduler, Kubernetes,
// systemd, `timeout`, mpirun passing on its own), SIGUSR1 (Slurm's
// --signal, tierzero launch), SIGINT (Ctrl-C) and, under a bare mpirun,
// finding mpirun gone (below) set one flag; after the
// step in progress every rank learns of it (ShardedTrainer::step_boundary),
// saves a checkpoint and exits with kExitPreempted. A second SIGTERM or
// SIGUSR1 only sets the flag again, so it cannot cut a save short; a second
// SIGINT (Ctrl-C twice) stops the process at once, saying so, with exit
// 130: `latest` keeps naming the last complete checkpoint, since a save
// becomes visible only by its final rename. A SIGTERM also writes the
// rank's flight record from the handler (tierzero/flight_recorder.h):
// it is how mpirun and srun end the ranks that are left when a rank is
// lost or a collective timed out (SIGTERM, then SIGKILL about a second
// later), so those ranks say where they were.
// Handlers are process-wide; call these from the training thread.
#pragma once

#include <string>

namespace tierzero::cli {

// Installs the handlers and takes a notice recorded while the process was
// starting (early_signals.h). `say`: whether this process prints what a
// Ctrl-C does (rank 0, or a world of one).
void arm_preemption(bool say);

// The signal of the first notice, kMpirunGone when the run's mpirun has
// exited (a bare mpirun's ranks), or 0 while there has been none.
inline constexpr int kMpirunGone = -1;
int preemption_signal();

// Open MPI's mpirun (4.1) passes a SIGTERM or SIGINT it receives on to the
// ranks as its kill sequence: SIGCONT to each rank's process group, then
// SIGTERM, then SIGKILL, odls_base_sigkill_timeout seconds apart (1 by
// default). A second SIGTERM or SIGINT while it runs the sequence makes it
// exit at once: the ranks get only the SIGCONT (which mpirun also sends
// when it is itself continued after a stop, so it is no notice) and exit
// by themselves about a second later, when Open MPI finds mpirun gone.
// So under a bare mpirun (not tierzero launch) a rank whose parent (mpirun,
// or a remote node's orted) has exited takes that as a notice, checked by
// preemption_signal() (docs/formats.md, "Stopping a run", has the
// measurements).
// A note for a run that saves checkpoints under a bare mpirun, naming the
// limits and the remedy (tierzero launch, which turns a notice into
// SIGUSR1, which mpirun forwards as it is); "" otherwise.
std::string mpirun_sigterm_note();

}  // namespace tierzero::cli
