#include "platform/experiment.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <optional>
#include <stdexcept>
#include <thread>

#include "platform/cluster.h"
#include "platform/functional_data.h"
#include "platform/shared_kernels.h"
#include "sim/error.h"

namespace moehub {
namespace {

std::optional<double> rate_gbps(uint64_t bytes, const std::optional<Time>& start, const std::optional<Time>& end) {
  if (!start || !end || *end <= *start || bytes == 0) return std::nullopt;
  return static_cast<double>(bytes) / (*end - *start).seconds() / 1e9;
}

// One GPU's rate over a phase, and with `split` its two parts (rows from its own node, from
// others) in proportion, so that the parts' means add up to the total's.
void add_rate(const std::array<uint64_t, 2>& rows, uint64_t row_bytes, const std::optional<Time>& start,
              const std::optional<Time>& end, bool split, std::vector<double>& total,
              std::array<std::vector<double>, 2>& parts) {
  const uint64_t all = rows[0] + rows[1];
  const auto r = rate_gbps(all * row_bytes, start, end);
  if (!r) return;
  total.push_back(*r);
  for (size_t at = 0; at < 2 && split; ++at) {
    parts[at].push_back(*r * static_cast<double>(rows[at]) / static_cast<double>(all));
  }
}

std::optional<double> mean(const std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

SystemOutcome run_one(const Config& config, const Workload& built, const SystemEntry& entry,
                      const ExperimentOptions& options, const LayerFrame& frame) {
  const auto start = std::chrono::steady_clock::now();
  SystemOutcome out;
  out.name = entry.name;
  if (options.trace) out.trace = std::make_unique<TraceRecorder>();
  std::unique_ptr<MoeSystem> system = entry.make(config);
  const std::optional<Workload> own = system->own_workload(built);
  const Workload& workload = own ? *own : built;
  std::optional<FunctionalData> functional;
  if (options.functional) functional.emplace(workload, RunParams::from(config).seed);

  Simulator sim;
  Cluster cluster(sim, config, workload, out.trace.get(), functional ? &*functional : nullptr);
  system->start(cluster);
  Cluster::Progress progress;
  if (options.progress) {
    progress = [&](Time t, uint64_t events) { options.progress(entry.name, t, events, false); };
  }
  cluster.run_to_completion(entry.name, progress);
  if (options.progress) options.progress(entry.name, sim.now(), sim.events_executed(), true);
  if (cluster.checking()) {
    const std::vector<std::string> v = system->conservation_violations(cluster);
    if (!v.empty()) throw std::logic_error(fmt::format("conservation check failed in {}: {}", entry.name, fmt::join(v, "; ")));
  }
  out.events = sim.events_executed();
  out.sim_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int g = 0; g < cluster.gpus(); ++g) {
    if (!cluster.phases(g).done) {
      throw std::logic_error(fmt::format("system {} never finished the layer on GPU {} (simulation ended at {} us)",
                                         entry.name, g, sim.now().us()));
    }
  }

  // The layer ends when the last GPU is done; that GPU's timeline explains the layer time.
  int critical = 0;
  for (int g = 1; g < cluster.gpus(); ++g) {
    if (*cluster.phases(g).done > *cluster.phases(critical).done) critical = g;
  }
  const Time layer = *cluster.phases(critical).done;

  const ModelShape& m = workload.model();
  const DispatchPlan& plan = workload.plan();
  std::vector<double> dispatch, combine;
  // Across nodes the same rates split by the peer's node: [0] the GPU's own node, [1] others.
  const NetConfig& net = cluster.network().config();
  std::array<std::vector<double>, 2> dispatch_at, combine_at;
  Time window = Time::zero();
  bool have_window = false;
  for (int g = 0; g < cluster.gpus(); ++g) {
    const PhaseMarks& p = cluster.phases(g);
    std::array<uint64_t, 2> in_rows{}, back_rows{};
    for (int s = 0; s < cluster.gpus(); ++s) {
      if (s == g) continue;
      const size_t remote = net.scale_out() && s / net.gpus_per_node != g / net.gpus_per_node ? 1 : 0;
      in_rows[remote] += static_cast<uint64_t>(plan.rows(s, g));
      back_rows[remote] += static_cast<uint64_t>(plan.rows(g, s));
    }
    add_rate(in_rows, m.row_bytes(), p.dispatch_start, p.dispatch_end, net.scale_out(), dispatch, dispatch_at);
    add_rate(back_rows, m.row_bytes(), p.combine_start, p.combine_end, net.scale_out(), combine, combine_at);
    if (p.routing_start && p.gemm1_end) {
      window = max(window, *p.gemm1_end - *p.routing_start);
      have_window = true;
    }
  }

  LayerResult& r = out.result;
  r.system = entry.name;
  r.layer = layer;
  r.e2e_ms = frame.e2e_ms(layer);
  r.breakdown = cluster.activity(critical).breakdown(Time::zero(), layer);
  r.critical_gpu = critical;
  if (have_window) r.routing_to_gemm1 = window;
  r.dispatch_GBps = mean(dispatch);
  r.combine_GBps = mean(combine);
  r.dispatch_nvlink_GBps = mean(dispatch_at[0]);
  r.dispatch_rdma_GBps = mean(dispatch_at[1]);
  r.combine_nvlink_GBps = mean(combine_at[0]);
  r.combine_rdma_GBps = mean(combine_at[1]);
  r.events = out.events;
  for (int g = 0; g < cluster.gpus(); ++g) r.ops.push_back(cluster.host(g).ops());
  r.stats = system->stats(cluster);
  r.network = cluster.network().stats();
  if (functional) {
    r.functional = functional->report();
    out.functional_passed = functional->passed();
  }
  return out;
}

// Speedup of MoE-Hub over each system and each system's fraction of the ideal layer.
void add_comparisons(std::vector<SystemOutcome>& outcomes) {
  const SystemOutcome* moehub = nullptr;
  const SystemOutcome* ideal = nullptr;
  for (const auto& o : outcomes) {
    if (o.name == "moehub") moehub = &o;
    if (o.name == "ideal") ideal = &o;
  }
  for (auto& o : outcomes) o.result.compare(moehub ? &moehub->result : nullptr, ideal ? &ideal->result : nullptr);
}

}  // namespace

LayerFrame layer_frame(const Config& config, const Workload& workload) {
  // A throwaway cluster gives the GPU model's rates; the frame needs no simulation.
  Simulator sim;
  Cluster cluster(sim, config, workload, nullptr);
  SharedKernels kernels(cluster);
  const ModelShape& m = workload.model();
  int64_t max_tokens = 0;
  for (int64_t g = 0; g < workload.tokens().gpus(); ++g) max_tokens = std::max(max_tokens, workload.tokens().count(g));
  LayerFrame f;
  f.attention = kernels.roofline(attention_cost(m, max_tokens).total());
  f.shared_experts = kernels.roofline(shared_expert_cost(m, max_tokens));
  f.dense_ffn = kernels.roofline(dense_ffn_cost(m, max_tokens));
  f.layers = m.layers;
  f.moe_layers = m.moe_layers();
  return f;
}

unsigned experiment_threads(const ExperimentOptions& options, size_t systems) {
  return std::max(1u, std::min<unsigned>(options.threads, static_cast<unsigned>(systems)));
}

std::optional<Unmodelled> missing_model(const SystemEntry& system, const Config& config) {
  const int64_t tp = WorkloadConfig::from(config).tp;
  if (tp > 1 && !system.tensor_parallel) {
    const std::string why = system.no_tp_path.empty() ? "has no EP+TP model yet" : "has no EP+TP model: " + system.no_tp_path;
    return Unmodelled{"parallel.tp", fmt::format("{}; run it with parallel.tp = 1 (got {})", why, tp)};
  }
  if (tp > 1 && system.tp_refusal) {
    if (std::string why = system.tp_refusal(config); !why.empty()) return Unmodelled{"parallel.tp", std::move(why)};
  }
  if (system.refusal) {
    auto [param, why] = system.refusal(config);
    if (!why.empty()) return Unmodelled{std::move(param), std::move(why)};
  }
  return std::nullopt;
}

void require_modelled(const std::vector<const SystemEntry*>& systems, const Config& config) {
  for (const SystemEntry* s : systems) {
    if (const std::optional<Unmodelled> why = missing_model(*s, config)) {
      throw UserError(why->param, fmt::format("system '{}' {}", s->name, why->reason));
    }
  }
}

std::vector<std::pair<std::string, std::string>> drop_unmodelled(std::vector<const SystemEntry*>& systems,
                                                                 const Config& config) {
  std::vector<std::pair<std::string, std::string>> dropped;
  std::vector<const SystemEntry*> kept;
  for (const SystemEntry* s : systems) {
    if (const std::optional<Unmodelled> why = missing_model(*s, config)) {
      dropped.emplace_back(s->name, fmt::format("{} ({})", why->reason, why->param));
    } else {
      kept.push_back(s);
    }
  }
  systems = std::move(kept);
  return dropped;
}

std::vector<SystemOutcome> run_experiment(const Config& config, const Workload& workload,
                                          const std::vector<const SystemEntry*>& systems,
                                          const ExperimentOptions& options) {
  // A system that cannot hold the workload fails now, not after the others have run.
  require_modelled(systems, config);
  for (const SystemEntry* s : systems) {
    const std::unique_ptr<MoeSystem> system = s->make(config);
    const std::optional<Workload> own = system->own_workload(workload);
    system->check(config, own ? *own : workload);
  }
  const LayerFrame frame = layer_frame(config, workload);
  std::vector<SystemOutcome> outcomes(systems.size());
  std::vector<std::exception_ptr> errors(systems.size());
  // Longest first, roughly, for `all`: the registry lists the baselines first and the MoE-Hub
  // variants (the most packets and hub events) last, so the threads take systems from the end
  // and the short ones fill in at the finish. Results keep the requested order.
  std::atomic<size_t> taken{0};
  const auto worker = [&] {
    for (size_t n = taken++; n < systems.size(); n = taken++) {
      const size_t i = systems.size() - 1 - n;
      try {
        outcomes[i] = run_one(config, workload, *systems[i], options, frame);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  const unsigned threads = experiment_threads(options, systems.size());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  add_comparisons(outcomes);
  for (auto& o : outcomes) o.result.frame = frame;
  return outcomes;
}

}  // namespace moehub
