// tierzero launch: runs a training command (mpirun ..., srun ..., or
// tierzero train itself) and reruns it from its latest checkpoint when it
// dies, up to --max-restarts times:
//   tierzero launch --max-restarts 5 --backoff 10 -- mpirun -np 8 tierzero train ... --save-dir DIR
// Each attempt and why it ended is logged to stderr. A rerun gets
// `--resume latest` appended (once DIR/latest exists) unless the command
// already resumes. Not retried: success (0), bad input (2) and a diverged
// run (4), which would fail alike again.
// Stopping: the command runs in a process group of its own, so a signal to
// the launcher's group (`timeout`, `kill -TERM -PGID`, Ctrl-C at a
// terminal) reaches the launcher alone. Its first SIGTERM, SIGINT or
// SIGUSR1 becomes SIGUSR1 to the command, which mpirun and srun pass on to
// every rank as it is (mpirun would turn a SIGTERM into SIGKILL within 2 s):
// the ranks finish their step, save and exit 75. The launcher waits up to
// --grace seconds, then sends SIGTERM, and SIGKILL to the command's group
// 10 s later; a second SIGINT (Ctrl-C twice) sends SIGINT at once, which
// stops mpirun's job and tierzero train without saving. The command gets
// SIGUSR1 too when the launcher itself dies, and /dev/null as its input
// when the launcher's is a terminal (a background group may not read it).
// It ends the launcher after the command (the allocation is going away)
// with the command's exit code. One that comes before an attempt starts
// (while the launcher itself is starting, or in the backoff) ends the
// launcher without starting it: exit 128 + the signal, or the job
// requeued as below.
// Under Slurm, --requeue hands a preempted attempt (exit 75, whether the
// notice reached the launcher or the ranks) to the scheduler instead:
// `scontrol requeue $SLURM_JOB_ID` (the job must be submitted with
// sbatch --requeue), and the requeued job (SLURM_RESTART_COUNT > 0)
// resumes from the latest checkpoint from its first attempt.
// An attempt that ends with exit 3 (a collective timed out) or a lost rank
// (any other failure but bad input, divergence and an interrupt) is
// followed by the verdict of its ranks' flight records (tierzero diagnose
// on the command's --flight-dir, else its --save-dir), printed before the
// rerun or the end. SIGUSR2 is passed on to the command (launch_child.h).
// Ranks that gave up (a failure flight record written during this attempt:
// a collective timed out, an error, a fatal signal) end the command
// --abort-grace seconds later if it has not ended by itself (mpirun waits
// forever for the daemons of a node it can no longer reach): SIGTERM to its
// process group, SIGKILL 10 s later; the attempt then counts as ended with
// the ranks' exit code (3 for a timed-out collective, else 1).
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "early_signals.h"
#include "launch_child.h"
#include "validators.h"
#include "tierzero/error.h"
#include "tierzero/flight_diagnose.h"

namespace tierzero::cli {

namespace {
struct LaunchArgs {
  int max_restarts = 3;
  double backoff_s = 10;
  double grace_s = 120;
  double abort_grace_s = 30;
  bool requeue = false;
  std::vector<std::string> command;
};

// The value of `option` in the command ("--save-dir DIR" or "--save-dir=DIR"), or "".
std::string option_of(const std::vector<std::string>& cmd, const std::string& option) {
  for (std::size_t i = 0; i < cmd.size(); ++i) {
    if (cmd[i] == option && i + 1 < cmd.size()) return cmd[i + 1];
    if (cmd[i].rfind(option + "=", 0) == 0) return cmd[i].substr(option.size() + 1);
  }
  return "";
}

// Whether an attempt's exit code says a collective timed out or a rank was lost.
bool hung_or_lost(int code) { return code != 0 && code != 2 && code != 4 && code != kExitPreempted && code != 128 + SIGINT; }

// The verdict of the attempt's flight records, or why there is none.
void print_verdict(const std::string& dir) {
  try {
    const FlightDiagnosis d = diagnose_flight(dir);
    std::fprintf(stderr, "tierzero launch: where the ranks stopped (tierzero diagnose %s):\n%s", dir.c_str(), d.text.c_str());
    for (const std::string& p : d.problems) std::fprintf(stderr, "tierzero launch: %s\n", p.c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "tierzero launch: no verdict from the flight records: %s\n", e.message().c_str());
  }
}

// The failure flight records written in `dir`/flight since `start`: "ranks 0-3: comm-timeout", or "" when none.
// Each file is read once per modification.
class FailureDumps {
 public:
  FailureDumps(const std::string& dir, std::filesystem::file_time_type start) : folder_(std::filesystem::path(dir) / "flight"), start_(start) {}
  std::string operator()() {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (const fs::directory_entry& f : fs::directory_iterator(folder_, ec)) {
      const std::string name = f.path().filename().string();
      const auto when = f.last_write_time(ec);
      if (ec || name.rfind("rank-", 0) != 0 || f.path().extension() != ".json" || when < start_ || seen_[name] == when) continue;
      seen_[name] = when;
      try {
        std::ifstream in(f.path());
        const nlohmann::json d = nlohmann::json::parse(in);
        if (d.value("kind", "") == "failure") failed_[d.at("reason").get<std::string>()].insert(d.at("rank").get<int>());
      } catch (const std::exception&) {  // being written (renamed over it later) or not a dump: read again when it changes
      }
    }
    std::string out;
    for (const auto& [reason, ranks] : failed_) {
      std::string list;
      for (int r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
      out += (out.empty() ? "" : "; ") + std::string(ranks.size() == 1 ? "rank " : "ranks ") + list + ": " + reason;
    }
    return out;
  }
  bool timed_out() const { return failed_.count("comm-timeout") > 0; }

 private:
  std::filesystem::path folder_;
  std::filesystem::file_time_type start_;
  std::map<std::string, std::filesystem::file_time_type> seen_;
  std::map<std::string, std::set<int>> failed_;
};

bool resumes(const std::vector<std::string>& cmd) {
  for (const std::string& a : cmd)
    if (a == "--resume" || a.rfind("--resume=", 0) == 0) return true;
  return false;
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
    case 128 + SIGINT: return {"exit 130: interrupted twice, stopped without saving", code};
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
  const int status = run_launch_child({"scontrol", "requeue", job}, 10);
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) std::fprintf(stderr, "tierzero launch: scontrol requeue %s failed (was the job submitted with sbatch --requeue?)\n", job.c_str());
}

int run_launch(const LaunchArgs& a) {
  TZ_CHECK(!a.command.empty(), ConfigError, "give the command after --, e.g. tierzero launch -- mpirun -np 8 tierzero train ...");
  const std::string save_dir = option_of(a.command, "--save-dir");
  const std::string flight_dir = option_of(a.command, "--flight-dir").empty() ? save_dir : option_of(a.command, "--flight-dir");
  TZ_CHECK(!save_dir.empty(), ConfigError, "launch reruns the command from its latest checkpoint: the command needs --save-dir DIR");
  const char* job = std::getenv("SLURM_JOB_ID");
  TZ_CHECK(!a.requeue || (job && *job), ConfigError, "--requeue hands preempted runs to Slurm, but SLURM_JOB_ID is not set (run it in an sbatch job)");
  install_launch_notices(take_early_signal());  // with a notice that came while the launcher was starting
  setenv("TIERZERO_LAUNCH", "1", 1);  // tells the ranks that notices reach them through the launcher (preemption.h)
  std::vector<std::string> cmd = a.command;
  const auto resume_latest = [&] {
    if (!resumes(cmd) && std::filesystem::exists(std::filesystem::path(save_dir) / "latest")) cmd.insert(cmd.end(), {"--resume", "latest"});
  };
  if (a.requeue && env_number("SLURM_RESTART_COUNT") > 0) resume_latest();  // a requeued job goes on where it stopped
  for (int attempt = 0;; ++attempt) {
    if (const int notice = launch_notice()) {  // it came before this attempt (at start-up or in the backoff): the allocation is going away
      std::fprintf(stderr, "tierzero launch: stopping before attempt %d: the launcher received signal %d\n", attempt + 1, notice);
      if (a.requeue) {
        requeue_job(job);
        return kExitPreempted;
      }
      return 128 + notice;
    }
    std::fprintf(stderr, "tierzero launch: attempt %d of %d:", attempt + 1, a.max_restarts + 1);
    for (const std::string& w : cmd) std::fprintf(stderr, " %s", w.c_str());
    std::fprintf(stderr, "\n");
    const auto t0 = std::chrono::steady_clock::now();
    FailureDumps failures(flight_dir, std::filesystem::file_time_type::clock::now());
    GiveUpWatch watch;
    watch.gave_up = std::ref(failures), watch.grace_s = a.abort_grace_s;
    auto [why, code] = ending(run_launch_child(cmd, a.grace_s, &watch));
    if (watch.ended) {
      code = failures.timed_out() ? 3 : 1;
      why = "ended by the launcher " + std::to_string(static_cast<int>(a.abort_grace_s)) + " s after its ranks gave up (" + watch.why +
            "); counted as exit " + std::to_string(code);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "tierzero launch: attempt %d ended after %.1f s: %s\n", attempt + 1, s, why.c_str());
    if (hung_or_lost(code)) print_verdict(flight_dir);
    if (code == 0 || code == 2 || code == 4) return code;
    if (a.requeue && code == kExitPreempted) {
      requeue_job(job);
      return code;
    }
    if (launch_interrupted_twice()) return 128 + SIGINT;
    if (const int notice = launch_notice()) {
      std::fprintf(stderr, "tierzero launch: stopping: the launcher itself received signal %d\n", notice);
      return code;
    }
    if (attempt == a.max_restarts) {  // the last line a user reads, after Open MPI's own messages about the abort
      std::fprintf(stderr, "tierzero launch: giving up after %d restarts; attempt %d ended: %s\n", a.max_restarts, attempt + 1, why.c_str());
      return code;
    }
    resume_latest();
    std::fprintf(stderr, "tierzero launch: restarting in %g s%s\n", a.backoff_s,
                 resumes(cmd) ? " from the latest checkpoint" : " from the start (no checkpoint yet)");
    sleep_unless_noticed(a.backoff_s);
  }
}
}  // namespace

void add_launch_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<LaunchArgs>();
  CLI::App* c = app.add_subcommand("launch", "Run a training command and rerun it from its latest checkpoint when it dies");
  c->add_option("--max-restarts", a->max_restarts, "Reruns after the first attempt")->check(at_least(0))->capture_default_str();
  c->add_option("--backoff", a->backoff_s, "Seconds to wait before a rerun")->check(finite_number(false))->capture_default_str();
  c->add_option("--grace", a->grace_s,
                "Seconds a notice (SIGTERM, SIGINT, SIGUSR1 to the launcher) gives the run to save and stop before SIGTERM; keep it "
                "below the scheduler's own grace (Kubernetes' terminationGracePeriodSeconds, Slurm's KillWait)")
      ->check(finite_number(false))
      ->capture_default_str();
  c->add_option("--abort-grace", a->abort_grace_s,
                "Seconds the command may run on after its ranks gave up (a failure flight record: a collective timed out, an error, a "
                "fatal signal) before the launcher ends its process group (mpirun waits forever for a node it cannot reach)")
      ->check(finite_number(false))
      ->capture_default_str();
  c->add_flag("--requeue", a->requeue,
              "Under Slurm (sbatch --requeue): a preempted attempt (exit 75) requeues the job; the requeued job resumes from the latest checkpoint");
  c->add_option("command", a->command, "The command, after --")->required();
  c->callback([a, &ctx] { ctx.exit_code = run_launch(*a); });
}

}  // namespace tierzero::cli
