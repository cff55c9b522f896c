#pragma once
// Runs the (point, system) pairs of a sweep: builds each resolved configuration, looks its
// result up in the cache, has an executor (threads, or MPI ranks) simulate only what is
// missing, and stores what it computed in the cache (only this process writes the cache).
// Progress goes to a stream (stderr in the CLI): a start line, one line per run that failed or
// is unsupported, and on a terminal one live line of runs done and time left.

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "figures/config_source.h"
#include "figures/figure_spec.h"
#include "figures/result_cache.h"
#include "figures/run_executor.h"
#include "platform/layer_result.h"

namespace moehub {

struct RunnerOptions {
  std::ostream* progress = nullptr;  // null: nothing is written
  bool terminal = false;             // progress is a terminal: a live line rewritten with '\r'
  bool keep_going = true;            // false: start no run after the first without a result
  // true: a point whose routed workload cannot be built (e.g. experts that do not divide over
  // its GPUs) gives unsupported runs carrying the error; false: the error stops the sweep
  // before anything runs (a figure's points must all be valid).
  bool bad_points_fail_runs = false;
  std::string tag = "figures";       // the progress lines' prefix ("figures: ...")
};

struct SweepSummary {
  size_t requests = 0;
  size_t distinct = 0;
  size_t cached = 0;
  size_t computed = 0;
  size_t failed = 0;       // internal faults (std::logic_error and the like)
  size_t unsupported = 0;  // configurations a system rejects (UserError)
  size_t not_run = 0;      // never started (keep_going == false after a failure)
  double wall_s = 0;
};

class SweepRunner {
 public:
  // `executor` carries out the runs; it and the other references outlive the runner.
  SweepRunner(const ConfigSource& configs, const ResultCache& cache, std::string binary, RunExecutor& executor,
              RunnerOptions options = {});
  // One outcome per request, in order. A configuration that cannot be built (UserError)
  // propagates before anything is simulated; a run that fails (a system rejecting the
  // configuration, or an internal fault) is reported in its outcome and not cached.
  std::vector<RunOutcome> run(const std::vector<RunRequest>& requests);
  const SweepSummary& summary() const { return summary_; }

 private:
  struct Prepared;  // a request's configuration and cache key
  std::vector<Prepared> prepare(const std::vector<RunRequest>& requests) const;
  // Simulates requests[i] for i in `missing` (one outcome each, in order) and caches the results.
  std::vector<RunOutcome> compute(const std::vector<RunRequest>& requests, const std::vector<Prepared>& prepared,
                                  const std::vector<size_t>& missing);
  void store(const RunRequest& request, RunOutcome& outcome) const;

  const ConfigSource& configs_;
  const ResultCache& cache_;
  std::string binary_;
  RunExecutor& executor_;
  RunnerOptions options_;
  SweepSummary summary_;
};

// Every system a figure's sweep names (full and --quick) must be registered: UserError
// "<file>: sweep.systems" naming the unknown one and the known ones.
void require_sweep_systems(const FigureSpec& spec);

// Checks the point's resources for `system` and builds its routed workload; a UserError is
// re-raised naming the figure file and point.
void check_point_workload(const Config& config, const SweepPoint& point, const std::string& system);

}  // namespace moehub
