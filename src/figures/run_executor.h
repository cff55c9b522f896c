#pragma once
// What a sweep runs and where: a run (one system on one resolved configuration), its outcome in
// a form that travels between processes (JSON), the pure simulation of one run, and the
// executors that carry runs out — on threads here (ThreadExecutor) or on other MPI ranks
// (figures/distributed.h). Executors hand out the most expensive run first.

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/config.h"
#include "figures/figure_spec.h"
#include "platform/layer_result.h"

namespace moehub {

struct RunRequest {
  SweepPoint point;
  std::string system;  // a registered system

  nlohmann::json to_json() const;
  static RunRequest from_json(const nlohmann::json& j);
};

// The settings that build a request's configuration: the point's, then `run.systems`.
std::vector<SweepSetting> run_settings(const RunRequest& request);

struct RunOutcome {
  bool ok = false;
  bool from_cache = false;
  std::string key;
  LayerResult result;
  double moe_flops = 0;   // routed-expert and router FLOPs of the layer (Fig. 17)
  std::string error;      // when !ok
  bool unsupported = false;  // the failure was a UserError: the system rejects this configuration
  bool not_run = false;      // never started: an earlier run failed and the runner stops at the first
  double wall_s = 0;         // how long the simulation took (progress, the cache entry; never in an output)
  double cpu_s = 0;          // the CPU time of the thread that simulated it (the cache entry: what a run costs
                             // on a shared host, where wall time counts the other jobs' load)

  nlohmann::json to_json() const;
  // Throws std::logic_error on a malformed outcome (a message between processes is ours).
  static RunOutcome from_json(const nlohmann::json& j);
};

// One system at one point, simulated (no cache). A UserError marks it unsupported, any other
// exception failed; nothing escapes.
RunOutcome simulate_run(const RunRequest& request, const Config& config);

// A run's estimated cost, for ordering only: tokens x top_k x hidden, which is about the bytes
// the dispatch and combine move and the rows the expert GEMMs compute (docs/figures.md, sweep
// sizes). 0 for a configuration whose model cannot be read.
double estimated_cost(const Config& config);

// A run for an executor. Points into the caller's requests and configurations, which outlive
// the execute() call.
struct RunTask {
  const RunRequest* request = nullptr;
  const Config* config = nullptr;
  double cost = 0;      // estimated_cost(*config), or anything in tests
  uint64_t memory = 0;  // estimated_memory(*config, system): what ThreadExecutor's memory cap counts
};

// The memory the run-time check estimates for one system on the configuration
// (estimate_resources, run.memory_budget's estimate); 0 if it cannot be estimated.
uint64_t estimated_memory(const Config& config, const std::string& system);

// `--jobs-memory`'s value: a size with a unit ("8GiB"), "" for none (0). UserError naming the
// option for anything else.
uint64_t jobs_memory_cap(const std::string& text);

// Task indices, most expensive first; equal costs in index order (deterministic).
std::vector<size_t> longest_first(const std::vector<RunTask>& tasks);

class RunExecutor {
 public:
  virtual ~RunExecutor() = default;
  // Runs every task and calls finished(index into tasks, outcome) once per task, one call at a
  // time (never concurrently), as runs end. Free workers take the most expensive task left.
  // After request_stop() no further task is started; the tasks never started are not reported.
  virtual void execute(const std::vector<RunTask>& tasks, const std::function<void(size_t, RunOutcome)>& finished) = 0;
  // How many runs go at once (the progress line's time estimate).
  virtual unsigned workers() const = 0;
  // For the runner's start line, e.g. "4 job(s)" or "2 MPI worker(s)".
  virtual std::string describe(size_t tasks) const = 0;

  // Called from `finished`: start nothing more in this execute(). The caller clears it before
  // the next execute().
  void request_stop() { stop_ = true; }
  void clear_stop() { stop_ = false; }

 protected:
  bool stop_requested() const { return stop_; }

 private:
  std::atomic<bool> stop_{false};
};

// Runs on `jobs` threads of this process (at least one). With a memory cap (bytes, 0: none) a
// free thread takes the most expensive task left whose estimated memory, added to that of the
// runs in progress, stays within the cap, and waits while none does; a task starts alone
// whatever its estimate. So two large runs do not meet while small ones can go beside them.
class ThreadExecutor : public RunExecutor {
 public:
  using Simulate = std::function<RunOutcome(const RunRequest&, const Config&)>;
  // `simulate` is replaced only by tests.
  explicit ThreadExecutor(unsigned jobs, Simulate simulate = simulate_run, uint64_t memory_cap = 0);
  void execute(const std::vector<RunTask>& tasks, const std::function<void(size_t, RunOutcome)>& finished) override;
  unsigned workers() const override { return jobs_; }
  std::string describe(size_t tasks) const override;

 private:
  unsigned jobs_;
  Simulate simulate_;
  uint64_t memory_cap_;
};

// Calls body(i) for i in [0, n) on `jobs` threads, in increasing i as threads become free; the
// first exception is rethrown at the end.
void parallel_for(size_t n, unsigned jobs, const std::function<void(size_t)>& body);

}  // namespace moehub
