// tierzero launch: runs a training command (mpirun ..., srun ..., or
// tierzero train itself) and reruns it from its latest checkpoint when it
// dies, up to --max-restarts times:
//   tierzero launch --max-restarts 5 --backoff 10 -- mpirun -np 8 tierzero train ... --save-dir DIR
// Each attempt and why it ended is logged to stderr. A rerun gets
// `--resume latest` appended (once DIR/latest exists) unless the command
// already resumes. Not retried: success (0), bad input (2) and a diverged
// run (4), which would fail alike again. A SIGTERM, SIGUSR1 or SIGINT to
// the launcher itself is passed to the command and ends the launcher after
// it (the allocation is going away); the command's exit code is returned.
// One that comes before an attempt starts (while the launcher itself is
// starting, or in the backoff) ends the launcher without starting it:
// exit 128 + the signal, or the job requeued as below.
// Under Slurm, --requeue hands a preempted attempt (exit 75, whether the
// notice reached the launcher or the ranks) to the scheduler instead:
// `scontrol requeue $SLURM_JOB_ID` (the job must be submitted with
// sbatch --requeue), and the requeued job (SLURM_RESTART_COUNT > 0)
// resumes from the latest checkpoint from its first attempt.
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "early_signals.h"
#include "validators.h"
#include "tierzero/error.h"

extern char** environ;

namespace tierzero::cli {

namespace {
struct LaunchArgs {
  int max_restarts = 3;
  double backoff_s = 10;
  bool requeue = false;
  std::vector<std::string> command;
};

// The signals passed on to the command.
constexpr int kNotices[] = {SIGTERM, SIGUSR1, SIGINT};
volatile std::sig_atomic_t g_child = 0, g_forwarded = 0;
extern "C" void forward_signal(int signo) {
  g_forwarded = signo;
  if (g_child > 0) kill(g_child, signo);
}

// The value of --save-dir in the command ("--save-dir DIR" or "--save-dir=DIR"), or "".
std::string save_dir_of(const std::vector<std::string>& cmd) {
  for (std::size_t i = 0; i < cmd.size(); ++i) {
    if (cmd[i] == "--save-dir" && i + 1 < cmd.size()) return cmd[i + 1];
    if (cmd[i].rfind("--save-dir=", 0) == 0) return cmd[i].substr(11);
  }
  return "";
}

bool resumes(const std::vector<std::string>& cmd) {
  for (const std::string& a : cmd)
    if (a == "--resume" || a.rfind("--resume=", 0) == 0) return true;
  return false;
}

// Runs cmd, waits for it; returns the wait status. The notices are held
// while the child starts (it starts with none held), so one that arrives
// meanwhile is forwarded once g_child names it.
int run_once(const std::vector<std::string>& cmd) {
  std::vector<char*> argv;
  for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  sigset_t notices, held, none;
  sigemptyset(&notices);
  sigemptyset(&none);
  for (int s : kNotices) sigaddset(&notices, s);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pthread_sigmask(SIG_BLOCK, &notices, &held);
  pid_t pid = 0;
  const int e = posix_spawnp(&pid, argv[0], nullptr, &attr, argv.data(), environ);
  if (e == 0) g_child = pid;
  pthread_sigmask(SIG_SETMASK, &held, nullptr);
  posix_spawnattr_destroy(&attr);
  TZ_CHECK(e == 0, ConfigError, "cannot start '" + cmd[0] + "': " + std::strerror(e));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  return status;
}

// Why an attempt ended, in words, and its exit code.
std::pair<std::string, int> ending(int status) {
  if (WIFSIGNALED(status)) return {"killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")", 128 + WTERMSIG(status)};
  const int code = WEXITSTATUS(status);
  switch (code) {
    case 0: return {"finished", 0};
    case 1: return {"exit 1: an internal failure or a lost rank", 1};
    case 2: return {"exit 2: bad input (not retried)", 2};
    case 3: return {"exit 3: a collective did not complete within --comm-timeout", 3};
    case 4: return {"exit 4: the run diverged (not retried)", 4};
    case kExitPreempted: return {"exit 75: preempted, checkpoint written", kExitPreempted};
    default: return {"exit " + std::to_string(code), code};
  }
}

// The environment variable `name` as a number (0 when unset or not a number).
long env_number(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::strtol(v, nullptr, 10) : 0;
}

// Asks Slurm to requeue this job; the scheduler then ends it (this process too).
void requeue_job(const std::string& job) {
  std::fprintf(stderr, "tierzero launch: preempted: requeueing Slurm job %s (scontrol requeue)\n", job.c_str());
  const int status = run_once({"scontrol", "requeue", job});
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) std::fprintf(stderr, "tierzero launch: scontrol requeue %s failed (was the job submitted with sbatch --requeue?)\n", job.c_str());
}

int run_launch(const LaunchArgs& a) {
  TZ_CHECK(!a.command.empty(), ConfigError, "give the command after --, e.g. tierzero launch -- mpirun -np 8 tierzero train ...");
  const std::string save_dir = save_dir_of(a.command);
  TZ_CHECK(!save_dir.empty(), ConfigError, "launch reruns the command from its latest checkpoint: the command needs --save-dir DIR");
  const char* job = std::getenv("SLURM_JOB_ID");
  TZ_CHECK(!a.requeue || (job && *job), ConfigError, "--requeue hands preempted runs to Slurm, but SLURM_JOB_ID is not set (run it in an sbatch job)");
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : kNotices) sigaction(s, &sa, nullptr);
  if (const int early = take_early_signal()) forward_signal(early);  // one that came while the launcher was starting
  std::vector<std::string> cmd = a.command;
  const auto resume_latest = [&] {
    if (!resumes(cmd) && std::filesystem::exists(std::filesystem::path(save_dir) / "latest")) cmd.insert(cmd.end(), {"--resume", "latest"});
  };
  if (a.requeue && env_number("SLURM_RESTART_COUNT") > 0) resume_latest();  // a requeued job goes on where it stopped
  for (int attempt = 0;; ++attempt) {
    if (g_forwarded) {  // the notice came before this attempt (at start-up or in the backoff): the allocation is going away
      std::fprintf(stderr, "tierzero launch: stopping before attempt %d: the launcher received signal %d\n", attempt + 1,
                   static_cast<int>(g_forwarded));
      if (a.requeue) {
        requeue_job(job);
        return kExitPreempted;
      }
      return 128 + g_forwarded;
    }
    std::fprintf(stderr, "tierzero launch: attempt %d of %d:", attempt + 1, a.max_restarts + 1);
    for (const std::string& w : cmd) std::fprintf(stderr, " %s", w.c_str());
    std::fprintf(stderr, "\n");
    const auto t0 = std::chrono::steady_clock::now();
    const auto [why, code] = ending(run_once(cmd));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "tierzero launch: attempt %d ended after %.1f s: %s\n", attempt + 1, s, why.c_str());
    if (code == 0 || code == 2 || code == 4) return code;
    if (a.requeue && code == kExitPreempted) {
      requeue_job(job);
      return code;
    }
    if (g_forwarded) {
      std::fprintf(stderr, "tierzero launch: stopping: the launcher itself received signal %d\n", static_cast<int>(g_forwarded));
      return code;
    }
    if (attempt == a.max_restarts) {
      std::fprintf(stderr, "tierzero launch: giving up after %d restarts\n", a.max_restarts);
      return code;
    }
    resume_latest();
    std::fprintf(stderr, "tierzero launch: restarting in %g s%s\n", a.backoff_s,
                 resumes(cmd) ? " from the latest checkpoint" : " from the start (no checkpoint yet)");
    std::this_thread::sleep_for(std::chrono::duration<double>(a.backoff_s));
  }
}
}  // namespace

void add_launch_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<LaunchArgs>();
  CLI::App* c = app.add_subcommand("launch", "Run a training command and rerun it from its latest checkpoint when it dies");
  c->add_option("--max-restarts", a->max_restarts, "Reruns after the first attempt")->check(at_least(0))->capture_default_str();
  c->add_option("--backoff", a->backoff_s, "Seconds to wait before a rerun")->check(finite_number(false))->capture_default_str();
  c->add_flag("--requeue", a->requeue,
              "Under Slurm (sbatch --requeue): a preempted attempt (exit 75) requeues the job; the requeued job resumes from the latest checkpoint");
  c->add_option("command", a->command, "The command, after --")->required();
  c->callback([a, &ctx] { ctx.exit_code = run_launch(*a); });
}

}  // namespace tierzero::cli
