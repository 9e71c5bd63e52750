// The signals that write a rank's flight record (tierzero/flight_recorder.h)
// from the handler itself, with async-signal-safe code only:
//   SIGUSR2                          on demand; the rank goes on (tierzero
//                                    launch passes it on to its command)
//   SIGSEGV, SIGBUS, SIGABRT, SIGFPE  a fatal signal: the dump is kept, then
//                                    the signal takes its default action
// SIGTERM dumps too, from the preemption handler (preemption.h). A SIGUSR2
// that comes before these handlers are installed is ignored
// (early_signals.h). Handlers are process-wide; call from the training thread.
#pragma once

namespace tierzero::cli {

// Installs the handlers.
void arm_flight_signals();

}  // namespace tierzero::cli
