#pragma once
// Runs the (point, system) pairs of the figures: builds each resolved configuration, looks its
// result up in the cache, and simulates only what is missing, `jobs` runs at a time on threads.
// Progress goes to a stream (stderr in the CLI), one line per finished run.

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "figures/config_source.h"
#include "figures/figure_spec.h"
#include "figures/result_cache.h"
#include "platform/layer_result.h"

namespace moehub {


struct RunRequest {
  SweepPoint point;
  std::string system;  // a registered system
};

struct RunOutcome {
  bool ok = false;
  bool from_cache = false;
  std::string key;
  LayerResult result;
  double moe_flops = 0;   // routed-expert and router FLOPs of the layer (Fig. 17)
  std::string error;      // when !ok
  bool unsupported = false;  // the failure was a UserError: the system rejects this configuration
};

struct SweepSummary {
  size_t requests = 0;
  size_t distinct = 0;
  size_t cached = 0;
  size_t computed = 0;
  size_t failed = 0;       // internal faults (std::logic_error and the like)
  size_t unsupported = 0;  // configurations a system rejects (UserError)
  double wall_s = 0;
};

class SweepRunner {
 public:
  SweepRunner(const ConfigSource& configs, const ResultCache& cache, std::string binary, unsigned jobs,
              std::ostream* progress);
  // One outcome per request, in order. A configuration that cannot be built (UserError)
  // propagates before anything is simulated; a run that fails (a system rejecting the
  // configuration, or an internal fault) is reported in its outcome and not cached.
  std::vector<RunOutcome> run(const std::vector<RunRequest>& requests);
  const SweepSummary& summary() const { return summary_; }

 private:
  const ConfigSource& configs_;
  const ResultCache& cache_;
  std::string binary_;
  unsigned jobs_;
  std::ostream* progress_;
  SweepSummary summary_;
};

// Every system a figure's sweep names (full and --quick) must be registered: UserError
// "<file>: sweep.systems" naming the unknown one and the known ones.
void require_sweep_systems(const FigureSpec& spec);

// Checks the point's resources for `system` and builds its routed workload; a UserError is
// re-raised naming the figure file and point.
void check_point_workload(const Config& config, const SweepPoint& point, const std::string& system);

// Calls body(i) for i in [0, n) on `jobs` threads; the first exception is rethrown at the end.
void parallel_for(size_t n, unsigned jobs, const std::function<void(size_t)>& body);

}  // namespace moehub
