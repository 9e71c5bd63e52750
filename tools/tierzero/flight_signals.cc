#include "flight_signals.h"

#include <unistd.h>

#include <csignal>

#include "tierzero/flight_recorder.h"

namespace tierzero::cli {

namespace {

void say(const char* text, std::size_t n) { (void)!write(STDERR_FILENO, text, n); }

extern "C" void on_flight_request(int) {
  if (!flight_dump("SIGUSR2", FlightDumpKind::request)) {
    static const char none[] = "tierzero: SIGUSR2: no flight record written (--flight-records 0, no --save-dir or --flight-dir, or a dump already in progress)\n";
    say(none, sizeof none - 1);
  }
}

extern "C" void on_flight_fatal_signal(int signo) {
  const char* name = signo == SIGSEGV ? "SIGSEGV" : signo == SIGBUS ? "SIGBUS" : signo == SIGABRT ? "SIGABRT" : "SIGFPE";
  flight_dump(name, FlightDumpKind::failure);
  // The default action now: at once for a signal sent (raise), and for a fault when the instruction runs again.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(signo, &dfl, nullptr);
  raise(signo);
}

}  // namespace

void arm_flight_signals() {
  struct sigaction request {};
  request.sa_handler = on_flight_request;
  sigemptyset(&request.sa_mask);
  request.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &request, nullptr);
  struct sigaction fatal {};
  fatal.sa_handler = on_flight_fatal_signal;
  sigemptyset(&fatal.sa_mask);
  fatal.sa_flags = SA_RESTART;
  for (int s : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE}) sigaction(s, &fatal, nullptr);
}

}  // namespace tierzero::cli
