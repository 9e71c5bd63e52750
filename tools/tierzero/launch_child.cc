#include "launch_child.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>

#include "tierzero/error.h"

namespace tierzero::cli {

namespace {

constexpr int kNotices[] = {SIGTERM, SIGINT, SIGUSR1};
constexpr double kKillAfterTermS = 10;  // from the SIGTERM after the grace to SIGKILL

volatile std::sig_atomic_t g_child = 0, g_notice = 0, g_interrupted_again = 0;

extern "C" void on_notice(int signo) {
  if (g_notice == 0) {
    g_notice = signo;
    if (g_child > 0) kill(g_child, SIGUSR1);
  } else if (signo == SIGINT && !g_interrupted_again) {
    g_interrupted_again = 1;
    if (g_child > 0) kill(g_child, SIGINT);
  }
}
extern "C" void on_child_ended(int) {}  // SIGCHLD only ends the wait below
extern "C" void forward_dump_request(int) {
  if (g_child > 0) kill(g_child, SIGUSR2);
}

const char* notice_name(int signo) { return signo == SIGTERM ? "SIGTERM" : signo == SIGINT ? "SIGINT" : "SIGUSR1"; }

// The notices and SIGCHLD: blocked except while waiting, so none is missed between a check and the wait.
sigset_t watched() {
  sigset_t s;
  sigemptyset(&s);
  for (int n : kNotices) sigaddset(&s, n);
  sigaddset(&s, SIGCHLD);
  return s;
}

// Blocks the watched signals; returns the mask to wait with (the old one, without them).
sigset_t block_watched(sigset_t& before) {
  const sigset_t w = watched();
  sigprocmask(SIG_BLOCK, &w, &before);
  sigset_t open = before;
  for (int n : kNotices) sigdelset(&open, n);
  sigdelset(&open, SIGCHLD);
  return open;
}

// Waits for a watched signal (its handler runs) or `seconds` (< 0: no limit).
void wait_signal(double seconds, const sigset_t& open) {
  timespec ts{};
  if (seconds >= 0) {
    ts.tv_sec = static_cast<time_t>(seconds);
    ts.tv_nsec = static_cast<long>((seconds - static_cast<double>(ts.tv_sec)) * 1e9);
  }
  ppoll(nullptr, 0, seconds < 0 ? nullptr : &ts, &open);
}

// In the forked child: only async-signal-safe calls until exec. Reports exec's errno through `report`.
[[noreturn]] void exec_child(char* const* argv, pid_t launcher, bool tty_input, int report) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGUSR1);
  if (getppid() != launcher) _exit(128 + SIGUSR1);  // the launcher died before PR_SET_PDEATHSIG took effect
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int n : kNotices) sigaction(n, &dfl, nullptr);
  sigaction(SIGCHLD, &dfl, nullptr);
  sigaction(SIGUSR2, &dfl, nullptr);
  if (tty_input) {
    const int fd = open("/dev/null", O_RDONLY);
    if (fd >= 0) dup2(fd, STDIN_FILENO), close(fd);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execvp(argv[0], argv);
  const int e = errno;
  (void)!write(report, &e, sizeof e);
  _exit(127);
}

// Waits for the child, passing on and escalating notices (launch_child.h):
// SIGTERM once the grace is over, SIGKILL to its group kKillAfterTermS
// after that SIGTERM or after a second Ctrl-C.
// With a watch: once its ranks gave up, SIGTERM to its group after the watch's grace (then SIGKILL as above).
int wait_child(pid_t pid, double grace_s, const sigset_t& open, const char* what, GiveUpWatch* watch) {
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  std::optional<clock::time_point> noticed, stopping, gave_up;  // the first notice; the SIGTERM or second Ctrl-C; the ranks gave up
  bool killed = false;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    TZ_CHECK(r == 0 || errno == EINTR, Error, std::string("waiting for '") + what + "': " + std::strerror(errno));
    if (g_notice && !noticed) {
      noticed = clock::now();
      std::fprintf(stderr, "tierzero launch: received %s: the run saves a checkpoint and stops (SIGUSR1 to %s); waiting up to %g s (--grace)%s\n",
                   notice_name(g_notice), what, grace_s, g_notice == SIGINT ? "; Ctrl-C again stops it at once, without saving" : "");
    }
    if (g_interrupted_again && !stopping) {
      stopping = clock::now();
      std::fprintf(stderr, "tierzero launch: interrupted again: stopping %s at once (SIGINT), without saving\n", what);
    }
    if (noticed && !stopping && since(*noticed) >= grace_s) {
      stopping = clock::now();
      std::fprintf(stderr, "tierzero launch: %s did not stop within %g s (--grace): SIGTERM\n", what, grace_s);
      kill(pid, SIGTERM);
    }
    if (watch && !noticed && !stopping && !gave_up) {
      watch->why = watch->gave_up();
      if (!watch->why.empty()) {
        gave_up = clock::now();
        std::fprintf(stderr, "tierzero launch: the ranks gave up (%s); %s has %g s (--abort-grace) to end\n", watch->why.c_str(), what, watch->grace_s);
      }
    }
    if (gave_up && !noticed && !stopping && since(*gave_up) >= watch->grace_s) {
      stopping = clock::now();
      watch->ended = true;
      std::fprintf(stderr, "tierzero launch: %s did not end within %g s (--abort-grace) after its ranks gave up (mpirun waits for a node it cannot reach?): SIGTERM to its process group\n",
                   what, watch->grace_s);
      kill(-pid, SIGTERM);
    }
    if (stopping && !killed && since(*stopping) >= kKillAfterTermS) {
      killed = true;
      std::fprintf(stderr, "tierzero launch: %s did not stop %g s later: SIGKILL to its process group\n", what, kKillAfterTermS);
      kill(-pid, SIGKILL);
    }
    const double left = stopping ? kKillAfterTermS - since(*stopping) : noticed ? grace_s - since(*noticed) : 1.0;
    wait_signal(!noticed && !stopping && !watch ? -1.0 : killed ? 1.0 : std::clamp(left, 0.0, 1.0), open);  // -1: until a signal
  }
}

}  // namespace

void install_launch_notices(int early) {
  struct sigaction sa {};
  sa.sa_handler = on_notice;
  sigemptyset(&sa.sa_mask);
  for (int n : kNotices) sigaction(n, &sa, nullptr);
  struct sigaction sc {};
  sc.sa_handler = on_child_ended;
  sigemptyset(&sc.sa_mask);
  sc.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sc, nullptr);
  struct sigaction request {};
  request.sa_handler = forward_dump_request;
  sigemptyset(&request.sa_mask);
  request.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &request, nullptr);
  if (early) on_notice(early);
}

int launch_notice() { return g_notice; }

bool launch_interrupted_twice() { return g_interrupted_again != 0; }

int run_launch_child(const std::vector<std::string>& cmd, double grace_s, GiveUpWatch* watch) {
  std::vector<char*> argv;
  for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  sigset_t before;
  const sigset_t open = block_watched(before);
  const auto restore = [&] { sigprocmask(SIG_SETMASK, &before, nullptr); };
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    restore();
    TZ_THROW(ConfigError, "cannot start '" + cmd[0] + "': pipe: " + std::strerror(errno));
  }
  const bool tty_input = isatty(STDIN_FILENO) == 1;
  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid == 0) exec_child(argv.data(), launcher, tty_input, report[1]);
  const int fork_errno = errno;
  close(report[1]);
  int e = 0;
  ssize_t n = -1;
  if (pid > 0) {
    setpgid(pid, pid);  // the child does it too: whichever runs first (an error after its exec is harmless)
    while ((n = read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
  }
  close(report[0]);
  if (pid < 0 || n == static_cast<ssize_t>(sizeof e)) {
    if (pid > 0) waitpid(pid, nullptr, 0);
    restore();
    TZ_THROW(ConfigError, "cannot start '" + cmd[0] + "': " + std::strerror(pid < 0 ? fork_errno : e));
  }
  g_child = pid;  // a notice pending since the signals were blocked is passed on in the wait
  int status = 0;
  try {
    status = wait_child(pid, grace_s, open, cmd[0].c_str(), watch);
  } catch (...) {
    g_child = 0;
    restore();
    throw;
  }
  g_child = 0;
  restore();
  return status;
}

void sleep_unless_noticed(double seconds) {
  sigset_t before;
  const sigset_t open = block_watched(before);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    const double left = std::chrono::duration<double>(end - std::chrono::steady_clock::now()).count();
    if (g_notice || left <= 0) break;
    wait_signal(left, open);
  }
  sigprocmask(SIG_SETMASK, &before, nullptr);
}

}  // namespace tierzero::cli
