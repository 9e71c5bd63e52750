// Preemption notices of a training run. SIGTERM (a scheduler, Kubernetes,
// systemd, `timeout`, mpirun passing on its own), SIGUSR1 (Slurm's
// --signal, tierzero launch) and SIGINT (Ctrl-C) set one flag; after the
// step in progress every rank learns of it (ShardedTrainer::step_boundary),
// saves a checkpoint and exits with kExitPreempted. A second SIGTERM or
// SIGUSR1 only sets the flag again, so it cannot cut a save short; a second
// SIGINT (Ctrl-C twice) stops the process at once, saying so, with exit
// 130: `latest` keeps naming the last complete checkpoint, since a save
// becomes visible only by its final rename.
// Handlers are process-wide; call these from the training thread.
#pragma once

#include <string>

namespace tierzero::cli {

// Installs the handlers and takes a notice recorded while the process was
// starting (early_signals.h). `say`: whether this process prints what a
// Ctrl-C does (rank 0, or a world of one).
void arm_preemption(bool say);

// The signal of the first notice, or 0 while there has been none.
int preemption_signal();

// Open MPI's mpirun passes a SIGTERM or SIGINT it receives on to the ranks
// as SIGCONT, then SIGTERM, then SIGKILL, odls_base_sigkill_timeout seconds
// apart (1 by default); it exits 1 whatever the ranks do. Measured with
// Open MPI 4.1 and gpt-tiny on 4 ranks (docs/formats.md, "Stopping a
// run"): the ranks saved in most runs, but in some they stopped making
// progress the moment mpirun began its kill sequence, with any timeout, so
// a SIGTERM to a bare mpirun can lose the steps since the last checkpoint.
// A note for a run that saves checkpoints under a bare mpirun (not under
// tierzero launch, which turns a notice into SIGUSR1, which mpirun
// forwards as it is), naming the remedy; "" otherwise.
std::string mpirun_sigterm_note();

}  // namespace tierzero::cli
