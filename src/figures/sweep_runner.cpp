#include "figures/sweep_runner.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

#include "moe/model_shape.h"
#include "sim/error.h"
#include "sim/live_line.h"
#include "moe/workload.h"
#include "platform/experiment.h"
#include "platform/resource_estimate.h"
#include "systems/system_registry.h"

namespace moehub {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

void require_sweep_systems(const FigureSpec& spec) {
  if (spec.has_sweep()) require_registered_systems(*spec.sweep, *spec.quick, spec.file.filename().string());
}

void check_point_workload(const Config& config, const SweepPoint& point, const std::string& system) {
  try {
    const ModelShape model = ModelShape::from(config);
    std::vector<const SystemEntry*> systems;
    if (const SystemEntry* entry = find_system(system)) systems.push_back(entry);
    check_resources(config, model, systems, 1);
    Workload::build(WorkloadConfig::from(config), model);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{} ({})", point.origin, point.label()), e.what());
  }
}

SweepRunner::SweepRunner(const ConfigSource& configs, const ResultCache& cache, std::string binary,
                         RunExecutor& executor, RunnerOptions options)
    : configs_(configs), cache_(cache), binary_(std::move(binary)), executor_(executor), options_(std::move(options)) {}

struct SweepRunner::Prepared {
  std::optional<Config> config;
  std::string key;
  std::string point_error;  // the point's workload cannot be built (bad_points_fail_runs)
};

namespace {

// Requests of the same point (any system) share this.
std::string point_id(const RunRequest& r) {
  std::string id = r.point.origin;
  for (const auto& s : r.point.settings) id += "\n" + s.path + "=" + s.text;
  return id;
}

RunOutcome without_result(std::string key, std::string error) {
  RunOutcome o;
  o.key = std::move(key);
  o.error = std::move(error);
  return o;
}

// What the runner says while it computes. On a terminal, one line rewritten in place; anywhere,
// one line per run that did not give a result. Called one run at a time.
class Progress {
 public:
  Progress(const RunnerOptions& options, size_t total, unsigned workers)
      : options_(options), total_(total), workers_(std::max(1u, workers)) {
    draw();
  }
  void finished(const RunRequest& req, const RunOutcome& o) {
    ++done_;
    wall_sum_ += o.wall_s;
    if (!o.ok) {
      ++failed_;
      say(fmt::format("{}: {} {}: {}\n", options_.tag, req.point.label(), req.system,
                      (o.unsupported ? "unsupported: " : "FAILED: ") + o.error));
    }
    draw();
  }
  // Ends the live line.
  void close() { line_.close(); }

 private:
  bool live() const { return options_.progress && options_.terminal && total_ > 0; }
  void say(const std::string& text) {
    if (live()) {
      line_.say(text);
    } else if (options_.progress) {
      *options_.progress << text << std::flush;
    }
  }
  void draw() {
    if (!live()) return;
    std::string text = fmt::format("{}: {}/{} runs done, {} failed, {} elapsed", options_.tag, done_, total_, failed_,
                                   duration_text(seconds_since(start_)));
    if (done_ > 0 && done_ < total_) {
      // The mean run so far, for each run left, spread over the workers that are still busy.
      const size_t left = total_ - done_;
      const double busy = static_cast<double>(std::min<size_t>(workers_, left));
      text += fmt::format(", about {} left", duration_text(wall_sum_ / static_cast<double>(done_) *
                                                           static_cast<double>(left) / busy));
    }
    line_.draw(text);
  }

  const RunnerOptions& options_;
  size_t total_;
  unsigned workers_;
  Clock::time_point start_ = Clock::now();
  size_t done_ = 0, failed_ = 0;
  double wall_sum_ = 0;
  LiveLine line_{options_.progress};
};

}  // namespace

std::vector<SweepRunner::Prepared> SweepRunner::prepare(const std::vector<RunRequest>& requests) const {
  // Resolve every configuration first: a bad one fails before any simulation starts.
  // The routed workload is built once per point for the same reason (it does not depend on
  // the system): a shape the workload rejects is an error in the sweep, not in a system.
  std::vector<Prepared> prepared(requests.size());
  std::map<std::string, size_t> first_of_point;
  for (size_t i = 0; i < requests.size(); ++i) first_of_point.emplace(point_id(requests[i]), i);
  std::vector<bool> check_workload(requests.size(), false);
  for (const auto& [id, i] : first_of_point) check_workload[i] = true;
  std::vector<size_t> point_of(requests.size());  // the request that checks each request's point
  for (size_t i = 0; i < requests.size(); ++i) point_of[i] = first_of_point.at(point_id(requests[i]));
  // Configurations are built here whatever executes the runs: one thread per worker, at most
  // one per core.
  const unsigned threads = std::min(executor_.workers(), std::max(1u, std::thread::hardware_concurrency()));
  parallel_for(requests.size(), threads, [&](size_t i) {
    prepared[i].config.emplace(configs_.build(run_settings(requests[i])));
    prepared[i].key = run_key(binary_, requests[i].system, prepared[i].config->to_json());
    if (!check_workload[i]) return;
    try {
      check_point_workload(*prepared[i].config, requests[i].point, requests[i].system);
    } catch (const UserError& e) {
      if (!options_.bad_points_fail_runs) throw;
      prepared[i].point_error = e.what();
    }
  });
  for (size_t i = 0; i < requests.size(); ++i) prepared[i].point_error = prepared[point_of[i]].point_error;
  return prepared;
}

void SweepRunner::store(const RunRequest& req, RunOutcome& o) const {
  if (!o.ok) return;
  const double wall_s = o.wall_s;
  try {
    // wall_s and cpu_s measure a regeneration per run (docs/figures.md); no output reads them.
    cache_.store(o.key,
                 {{"result", o.result.to_json()}, {"moe_flops", o.moe_flops}, {"point", req.point.label()},
                  {"wall_s", o.wall_s}, {"cpu_s", o.cpu_s}},
                 binary_, req.system);
  } catch (const UserError& e) {  // as when the store was part of the run: the run is unsupported
    o = without_result(o.key, e.what());
    o.unsupported = true;
  } catch (const std::exception& e) {
    o = without_result(o.key, e.what());
  }
  o.wall_s = wall_s;
}

std::vector<RunOutcome> SweepRunner::compute(const std::vector<RunRequest>& requests,
                                             const std::vector<Prepared>& prepared, const std::vector<size_t>& missing) {
  std::vector<RunTask> tasks;
  for (const size_t i : missing) {
    const Config& config = *prepared[i].config;
    tasks.push_back({&requests[i], &config, estimated_cost(config), estimated_memory(config, requests[i].system)});
  }
  std::vector<std::optional<RunOutcome>> computed(missing.size());
  Progress progress(options_, missing.size(), executor_.workers());
  bool stopped = false;
  executor_.clear_stop();
  executor_.execute(tasks, [&](size_t t, RunOutcome o) {
    if (t >= missing.size() || computed[t]) throw std::logic_error(fmt::format("executor reported run {} twice", t));
    const size_t i = missing[t];
    o.key = prepared[i].key;
    store(requests[i], o);
    progress.finished(requests[i], o);
    if (!o.ok && !options_.keep_going) {
      stopped = true;
      executor_.request_stop();
    }
    computed[t] = std::move(o);
  });
  progress.close();

  std::vector<RunOutcome> out;
  size_t not_run = 0;
  for (size_t t = 0; t < missing.size(); ++t) {
    if (!computed[t] && !stopped) throw std::logic_error(fmt::format("executor did not report run {}", t));
    if (!computed[t]) {
      ++not_run;
      computed[t] = without_result(prepared[missing[t]].key, "not run (an earlier run failed)");
      computed[t]->not_run = true;
    }
    out.push_back(std::move(*computed[t]));
  }
  if (not_run && options_.progress) {
    *options_.progress << fmt::format("{}: {} run(s) not started (an earlier run failed)\n", options_.tag, not_run);
  }
  return out;
}

std::vector<RunOutcome> SweepRunner::run(const std::vector<RunRequest>& requests) {
  const auto start = Clock::now();
  summary_ = SweepSummary{};
  summary_.requests = requests.size();
  const std::vector<Prepared> prepared = prepare(requests);

  // Distinct runs (figures share points), then the cache.
  std::map<std::string, size_t> first_of_key;
  for (size_t i = 0; i < requests.size(); ++i) first_of_key.emplace(prepared[i].key, i);
  summary_.distinct = first_of_key.size();
  std::map<std::string, RunOutcome> done;
  std::vector<size_t> missing;
  for (const auto& [key, i] : first_of_key) {
    if (!prepared[i].point_error.empty()) {
      RunOutcome o = without_result(key, prepared[i].point_error);
      o.unsupported = true;
      ++summary_.unsupported;
      if (options_.progress) {
        *options_.progress << fmt::format("{}: {} {}: unsupported: {}\n", options_.tag, requests[i].point.label(),
                                          requests[i].system, o.error);
      }
      done.emplace(key, std::move(o));
    } else if (auto entry = cache_.load(key, binary_, requests[i].system)) {
      RunOutcome o;
      o.ok = true;
      o.from_cache = true;
      o.key = key;
      o.result = LayerResult::from_json((*entry)["result"]);
      o.moe_flops = entry->value("moe_flops", 0.0);
      done.emplace(key, std::move(o));
    } else {
      missing.push_back(i);
    }
  }
  summary_.cached = done.size() - summary_.unsupported;
  if (options_.progress) {
    *options_.progress << fmt::format("{}: {} runs, {} distinct: {} cached, {} to compute on {}\n", options_.tag,
                                      requests.size(), summary_.distinct, summary_.cached, missing.size(),
                                      executor_.describe(missing.size()));
  }

  for (auto& o : compute(requests, prepared, missing)) {
    if (o.ok) {
      ++summary_.computed;
    } else if (o.not_run) {
      ++summary_.not_run;
    } else if (o.unsupported) {
      ++summary_.unsupported;
    } else {
      ++summary_.failed;
    }
    const std::string key = o.key;
    done.emplace(key, std::move(o));
  }

  std::vector<RunOutcome> out;
  out.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) out.push_back(done.at(prepared[i].key));
  summary_.wall_s = seconds_since(start);
  return out;
}

}  // namespace moehub
