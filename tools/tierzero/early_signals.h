// Preemption notices (SIGTERM, SIGUSR1) that arrive while a process is
// still starting: loading its libraries (libcublasLt's initialisers alone
// take ~0.5 s on the VMs measured), MPI_Init, reading data and checkpoints.
// Their default action would kill a rank before it could save, which is
// what a Slurm time-limit notice sent a second after the job starts did.
// An entry in the executable's .preinit_array (run before any shared
// library's initialiser) records them instead. The commands that act on
// notices (train, launch) take the recorded one when they install their
// own handlers; every other command calls release_early_signals() first.
#pragma once

namespace tierzero::cli {

// The notice recorded since start-up (0: none), forgotten once taken. Call
// it after installing the command's own handlers, so none is lost between.
int take_early_signal();

// Gives SIGTERM and SIGUSR1 their default actions back; a notice already
// recorded then takes effect (the process ends as it would have).
void release_early_signals();

}  // namespace tierzero::cli
