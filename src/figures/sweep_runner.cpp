#include "config/run_params.h"
#include "figures/sweep_runner.h"

#include <atomic>
#include <chrono>
#include <exception>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "moe/model_shape.h"
#include "sim/error.h"
#include "moe/workload.h"
#include "platform/experiment.h"
#include "platform/resource_estimate.h"
#include "systems/system_registry.h"

namespace moehub {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Prepared {
  std::optional<Config> config;
  std::string key;
};

}  // namespace

void require_sweep_systems(const FigureSpec& spec) {
  if (!spec.has_sweep()) return;
  for (const bool quick : {false, true}) {
    for (const std::string& name : spec.axes(quick).systems) {
      if (find_system(name)) continue;
      std::vector<std::string> known;
      for (const auto& e : all_systems()) known.push_back(e.name);
      throw UserError(spec.file.filename().string() + ": sweep.systems",
                      fmt::format("unknown system '{}' (known: {})", name, fmt::join(known, ", ")));
    }
  }
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

void parallel_for(size_t n, unsigned jobs, const std::function<void(size_t)>& body) {
  std::atomic<size_t> next{0};
  std::exception_ptr first;
  std::mutex error_mutex;
  const auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first) first = std::current_exception();
      }
    }
  };
  const size_t threads = std::max<size_t>(1, std::min<size_t>(jobs, n));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

SweepRunner::SweepRunner(const ConfigSource& configs, const ResultCache& cache, std::string binary, unsigned jobs,
                         std::ostream* progress)
    : configs_(configs), cache_(cache), binary_(std::move(binary)), jobs_(std::max(1u, jobs)),
      progress_(progress) {}

namespace {
// One system at one point, simulated and stored in the cache; a UserError marks it unsupported.
RunOutcome compute_run(const RunRequest& req, const Config& cfg, const std::string& key, const ResultCache& cache,
                       const std::string& binary) {
  RunOutcome o;
  o.key = key;
  try {
    const SystemEntry* entry = find_system(req.system);
    if (!entry) throw std::logic_error("system '" + req.system + "' is not registered");
    const ModelShape model = ModelShape::from(cfg);
    const Workload workload = Workload::build(WorkloadConfig::from(cfg), model);
    ExperimentOptions options;
    options.threads = 1;  // parallelism is over runs
    std::vector<SystemOutcome> out = run_experiment(cfg, workload, {entry}, options);
    o.result = std::move(out.at(0).result);
    // Comparisons between systems are the figures' job; one run has nothing to compare.
    o.result.moehub_speedup.reset();
    o.result.fraction_of_ideal.reset();
    o.moe_flops = static_cast<double>(RunParams::from(cfg).tokens) *
                  (static_cast<double>(model.top_k()) * static_cast<double>(model.expert_flops_per_row()) +
                   static_cast<double>(model.router_flops_per_token()));
    cache.store(o.key, {{"result", o.result.to_json()}, {"moe_flops", o.moe_flops}, {"point", req.point.label()}},
                binary, req.system);
    o.ok = true;
  } catch (const UserError& e) {
    o.error = e.what();
    o.unsupported = true;
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

}  // namespace

std::vector<RunOutcome> SweepRunner::run(const std::vector<RunRequest>& requests) {
  const auto start = Clock::now();
  summary_ = SweepSummary{};
  summary_.requests = requests.size();

  // Resolve every configuration first: a bad one fails before any simulation starts.
  // The routed workload is built once per point for the same reason (it does not depend on
  // the system): a shape the workload rejects is an error in the sweep, not in a system.
  std::vector<Prepared> prepared(requests.size());
  std::map<std::string, size_t> first_of_point;
  for (size_t i = 0; i < requests.size(); ++i) {
    std::string id = requests[i].point.origin;
    for (const auto& s : requests[i].point.settings) id += "\n" + s.path + "=" + s.text;
    first_of_point.emplace(id, i);
  }
  std::vector<bool> check_workload(requests.size(), false);
  for (const auto& [id, i] : first_of_point) check_workload[i] = true;
  parallel_for(requests.size(), jobs_, [&](size_t i) {
    std::vector<SweepSetting> settings = requests[i].point.settings;
    settings.push_back({"run.systems", requests[i].system, "figures"});
    prepared[i].config.emplace(configs_.build(settings));
    prepared[i].key = run_key(binary_, requests[i].system, prepared[i].config->to_json());
    if (check_workload[i]) check_point_workload(*prepared[i].config, requests[i].point, requests[i].system);
  });

  // Distinct runs (figures share points), then the cache.
  std::map<std::string, size_t> first_of_key;
  for (size_t i = 0; i < requests.size(); ++i) first_of_key.emplace(prepared[i].key, i);
  summary_.distinct = first_of_key.size();
  std::map<std::string, RunOutcome> done;
  std::vector<size_t> todo;
  for (const auto& [key, i] : first_of_key) {
    if (auto entry = cache_.load(key, binary_, requests[i].system)) {
      RunOutcome o;
      o.ok = true;
      o.from_cache = true;
      o.key = key;
      o.result = LayerResult::from_json((*entry)["result"]);
      o.moe_flops = entry->value("moe_flops", 0.0);
      done.emplace(key, std::move(o));
    } else {
      todo.push_back(i);
    }
  }
  summary_.cached = done.size();
  if (progress_) {
    *progress_ << fmt::format("figures: {} runs, {} distinct: {} cached, {} to compute on {} job(s)\n",
                              requests.size(), summary_.distinct, summary_.cached, todo.size(),
                              std::min<size_t>(jobs_, std::max<size_t>(todo.size(), 1)));
  }

  std::mutex mutex;
  size_t finished = 0;
  std::vector<RunOutcome> computed(todo.size());
  parallel_for(todo.size(), jobs_, [&](size_t t) {
    const size_t i = todo[t];
    const RunRequest& req = requests[i];
    const Config& cfg = *prepared[i].config;
    const auto run_start = Clock::now();
    RunOutcome o = compute_run(req, cfg, prepared[i].key, cache_, binary_);
    std::lock_guard<std::mutex> lock(mutex);
    ++finished;
    if (progress_) {
      *progress_ << fmt::format("figures: [{}/{}] {} {}: {}\n", finished, todo.size(), req.point.label(), req.system,
                                o.ok            ? fmt::format("{:.2f} s", seconds_since(run_start))
                                : o.unsupported ? "unsupported: " + o.error
                                                : "FAILED: " + o.error);
      progress_->flush();
    }
    computed[t] = std::move(o);
  });
  for (auto& o : computed) {
    if (o.ok) {
      ++summary_.computed;
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
