#include "figures/run_executor.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <fmt/format.h>
#include <mutex>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <thread>
#include <time.h>

#include "config/run_params.h"
#include "moe/model_shape.h"
#include "moe/workload.h"
#include "platform/experiment.h"
#include "platform/resource_estimate.h"
#include "sim/error.h"
#include "sim/units.h"
#include "systems/system_registry.h"

namespace moehub {

nlohmann::json RunRequest::to_json() const {
  nlohmann::json settings = nlohmann::json::array();
  for (const auto& s : point.settings) settings.push_back({{"path", s.path}, {"text", s.text}, {"origin", s.origin}});
  return {{"system", system},
          {"model", point.model},
          {"gpus", point.gpus},
          {"tokens", point.tokens},
          {"seq_length", point.seq_length},
          {"imbalance", point.imbalance},
          {"origin", point.origin},
          {"settings", std::move(settings)}};
}

RunRequest RunRequest::from_json(const nlohmann::json& j) {
  try {
    RunRequest r;
    r.system = j.at("system").get<std::string>();
    r.point.model = j.at("model").get<std::string>();
    r.point.gpus = j.at("gpus").get<int64_t>();
    r.point.tokens = j.at("tokens").get<int64_t>();
    r.point.seq_length = j.at("seq_length").get<int64_t>();
    r.point.imbalance = j.at("imbalance").get<double>();
    r.point.origin = j.at("origin").get<std::string>();
    for (const auto& s : j.at("settings")) {
      r.point.settings.push_back(
          {s.at("path").get<std::string>(), s.at("text").get<std::string>(), s.at("origin").get<std::string>()});
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw std::logic_error(std::string("malformed run request: ") + e.what());
  }
}

std::vector<SweepSetting> run_settings(const RunRequest& request) {
  std::vector<SweepSetting> settings = request.point.settings;
  settings.push_back({"run.systems", request.system, "figures"});
  return settings;
}

nlohmann::json RunOutcome::to_json() const {
  nlohmann::json j{{"ok", ok},           {"from_cache", from_cache}, {"key", key},         {"moe_flops", moe_flops},
                   {"error", error},     {"unsupported", unsupported}, {"not_run", not_run}, {"wall_s", wall_s},
                   {"cpu_s", cpu_s}};
  if (ok) j["result"] = result.to_json();
  return j;
}

RunOutcome RunOutcome::from_json(const nlohmann::json& j) {
  try {
    RunOutcome o;
    o.ok = j.at("ok").get<bool>();
    o.from_cache = j.at("from_cache").get<bool>();
    o.key = j.at("key").get<std::string>();
    o.moe_flops = j.at("moe_flops").get<double>();
    o.error = j.at("error").get<std::string>();
    o.unsupported = j.at("unsupported").get<bool>();
    o.not_run = j.at("not_run").get<bool>();
    o.wall_s = j.at("wall_s").get<double>();
    o.cpu_s = j.at("cpu_s").get<double>();
    if (o.ok) o.result = LayerResult::from_json(j.at("result"));
    return o;
  } catch (const nlohmann::json::exception& e) {
    throw std::logic_error(std::string("malformed run outcome: ") + e.what());
  }
}

namespace {

// CPU seconds of the calling thread: one run is simulated on one thread.
double thread_cpu_seconds() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

RunOutcome simulate_run(const RunRequest& req, const Config& cfg) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = thread_cpu_seconds();
  RunOutcome o;
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
    o.ok = true;
  } catch (const UserError& e) {
    o.error = e.what();
    o.unsupported = true;
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  o.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  o.cpu_s = thread_cpu_seconds() - cpu_start;
  return o;
}

double estimated_cost(const Config& config) {
  try {
    const ModelShape model = ModelShape::from(config);
    return static_cast<double>(RunParams::from(config).tokens) * static_cast<double>(model.top_k()) *
           static_cast<double>(model.hidden);
  } catch (const UserError&) {
    return 0;  // only an ordering hint: the run itself reports the configuration's error
  }
}

uint64_t estimated_memory(const Config& config, const std::string& system) {
  try {
    const SystemEntry* entry = find_system(system);
    if (!entry) return 0;
    return estimate_resources(config, ModelShape::from(config), {entry}, 1).memory_bytes;
  } catch (const UserError&) {
    return 0;  // only a scheduling hint: the run itself reports the configuration's error
  }
}

uint64_t jobs_memory_cap(const std::string& text) {
  if (text.empty()) return 0;
  try {
    const uint64_t bytes = parse_bytes(text);
    if (bytes == 0) throw UnitParseError("expected a size above 0 (leave the option out for no cap)");
    return bytes;
  } catch (const UnitParseError& e) {
    throw UserError("--jobs-memory", fmt::format("'{}': {}", text, e.what()));
  }
}

std::vector<size_t> longest_first(const std::vector<RunTask>& tasks) {
  std::vector<size_t> order(tasks.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Starting the longest runs first keeps one long run from ending the sweep alone.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tasks[a].cost > tasks[b].cost; });
  return order;
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

ThreadExecutor::ThreadExecutor(unsigned jobs, Simulate simulate, uint64_t memory_cap)
    : jobs_(std::max(1u, jobs)), simulate_(std::move(simulate)), memory_cap_(memory_cap) {}

void ThreadExecutor::execute(const std::vector<RunTask>& tasks,
                             const std::function<void(size_t, RunOutcome)>& finished) {
  const std::vector<size_t> order = longest_first(tasks);
  std::mutex mutex;  // guards everything below and serialises `finished`
  std::condition_variable ended;
  std::vector<bool> taken(order.size(), false);
  size_t left = order.size(), first_free = 0;
  unsigned running = 0;
  uint64_t held = 0;  // estimated bytes of the runs in progress
  std::exception_ptr first_error;
  // The first task in `order` not taken that fits beside the runs in progress, or npos.
  const auto next = [&]() -> size_t {
    while (first_free < order.size() && taken[first_free]) ++first_free;
    for (size_t k = first_free; k < order.size(); ++k) {
      if (taken[k]) continue;
      if (running == 0 || memory_cap_ == 0 || held + tasks[order[k]].memory <= memory_cap_) return k;
    }
    return std::string::npos;
  };
  const auto worker = [&] {
    std::unique_lock<std::mutex> lock(mutex);
    while (left > 0 && !stop_requested()) {
      const size_t k = next();
      if (k == std::string::npos) {  // only while another run is in progress: it ends and notifies
        ended.wait(lock);
        continue;
      }
      const RunTask& task = tasks[order[k]];
      taken[k] = true;
      --left;
      ++running;
      held += task.memory;
      lock.unlock();
      std::optional<RunOutcome> o;
      try {
        o = simulate_(*task.request, *task.config);
      } catch (...) {
        std::lock_guard<std::mutex> guard(mutex);
        if (!first_error) first_error = std::current_exception();
      }
      lock.lock();
      --running;
      held -= task.memory;
      try {
        if (o) finished(order[k], std::move(*o));
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
      ended.notify_all();
    }
    ended.notify_all();  // a stop: the waiting threads leave too
  };
  const size_t threads = std::max<size_t>(1, std::min<size_t>(jobs_, order.size()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

std::string ThreadExecutor::describe(size_t tasks) const {
  return fmt::format("{} job(s)", std::min<size_t>(jobs_, std::max<size_t>(tasks, 1)));
}

}  // namespace moehub
