#include "early_signals.h"

#include <csignal>

namespace tierzero::cli {

namespace {

volatile std::sig_atomic_t g_early_signal = 0;
extern "C" void record_early_signal(int signo) { g_early_signal = signo; }
extern "C" void ignore_early_request(int) {}  // a handler, not SIG_IGN, which a command started by exec would inherit

void record_early_signals(int, char**, char**) {
  struct sigaction sa {};
  sa.sa_handler = record_early_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
  struct sigaction ignore {};
  ignore.sa_handler = ignore_early_request;
  sigemptyset(&ignore.sa_mask);
  ignore.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &ignore, nullptr);
}

// The dynamic loader runs the executable's .preinit_array before the
// initialisers of every shared library it loaded (System V ABI, "Dynamic
// Linking: Initialization and Termination Functions").
[[gnu::section(".preinit_array"), gnu::used]] void (*const g_record_early_signals)(int, char**, char**) = record_early_signals;

}  // namespace

int take_early_signal() {
  const int s = g_early_signal;
  g_early_signal = 0;
  return s;
}

void release_early_signals() {
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGUSR1, SIG_DFL);
  std::signal(SIGUSR2, SIG_DFL);
  if (const int s = take_early_signal()) std::raise(s);
}

}  // namespace tierzero::cli
