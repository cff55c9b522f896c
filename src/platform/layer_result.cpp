#include "platform/layer_result.h"

#include <cmath>

namespace moehub {
namespace {

// Times travel in microseconds; a double holds every picosecond count a layer reaches exactly
// enough that rounding recovers it.
Time time_of_us(double us) { return Time::from_ps(std::llround(us * 1e6)); }

nlohmann::json or_null(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::optional<double> double_or_none(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

nlohmann::json ops_json(const std::vector<gpu::HostOps>& ops) {
  nlohmann::json per_gpu = nlohmann::json::array();
  for (const gpu::HostOps& o : ops) {
    per_gpu.push_back({{"kernels", o.kernels},
                       {"host_ops", o.framework_ops},
                       {"nccl_calls", o.nccl_calls},
                       {"d2h_copies", o.d2h_copies},
                       {"h2d_copies", o.h2d_copies},
                       {"host_syncs", o.syncs},
                       {"event_calls", o.events},
                       {"host_busy_us", o.busy.us()}});
  }
  return per_gpu;
}

std::vector<gpu::HostOps> ops_of(const nlohmann::json& per_gpu) {
  std::vector<gpu::HostOps> ops;
  for (const auto& j : per_gpu) {
    gpu::HostOps o;
    o.kernels = j.value("kernels", uint64_t{0});
    o.framework_ops = j.value("host_ops", uint64_t{0});
    o.nccl_calls = j.value("nccl_calls", uint64_t{0});
    o.d2h_copies = j.value("d2h_copies", uint64_t{0});
    o.h2d_copies = j.value("h2d_copies", uint64_t{0});
    o.syncs = j.value("host_syncs", uint64_t{0});
    o.events = j.value("event_calls", uint64_t{0});
    o.busy = time_of_us(j.value("host_busy_us", 0.0));
    ops.push_back(o);
  }
  return ops;
}

}  // namespace

double LayerFrame::e2e_ms(Time moe_layer) const {
  const Time total = attention * layers + (moe_layer + shared_experts) * moe_layers + dense_ffn * (layers - moe_layers);
  return total.ms();
}

nlohmann::json LayerFrame::to_json() const {
  return {{"attention_us", attention.us()},
          {"shared_experts_us", shared_experts.us()},
          {"dense_ffn_us", dense_ffn.us()},
          {"layers", layers},
          {"moe_layers", moe_layers}};
}

LayerFrame LayerFrame::from_json(const nlohmann::json& j) {
  LayerFrame f;
  f.attention = time_of_us(j.value("attention_us", 0.0));
  f.shared_experts = time_of_us(j.value("shared_experts_us", 0.0));
  f.dense_ffn = time_of_us(j.value("dense_ffn_us", 0.0));
  f.layers = j.value("layers", int64_t{0});
  f.moe_layers = j.value("moe_layers", int64_t{0});
  return f;
}

namespace {
std::array<std::pair<const char*, std::optional<double>>, 4> split_rates(const LayerResult& r) {
  return {{{"dispatch_nvlink_GBps", r.dispatch_nvlink_GBps},
           {"dispatch_rdma_GBps", r.dispatch_rdma_GBps},
           {"combine_nvlink_GBps", r.combine_nvlink_GBps},
           {"combine_rdma_GBps", r.combine_rdma_GBps}}};
}
}  // namespace

nlohmann::json LayerResult::to_json() const {
  nlohmann::json r;
  r["system"] = system;
  r["layer_us"] = layer.us();
  r["e2e_ms"] = e2e_ms;
  r["breakdown_us"] = breakdown_json(breakdown);
  r["critical_gpu"] = critical_gpu;
  r["routing_to_gemm1_us"] = routing_to_gemm1 ? nlohmann::json(routing_to_gemm1->us()) : nlohmann::json(nullptr);
  r["dispatch_GBps"] = or_null(dispatch_GBps);
  r["combine_GBps"] = or_null(combine_GBps);
  // Only runs across nodes have the split (single-node reports keep their keys).
  for (const auto& [key, v] : split_rates(*this)) {
    if (v) r[key] = *v;
  }
  r["events"] = events;
  r["ops"] = ops_json(ops);
  if (!stats.is_null()) {
    // The hub's counters also stand at results[].hub, where issue 6's contract puts them.
    if (stats.is_object() && stats.contains("hub")) r["hub"] = stats["hub"];
    r["stats"] = stats;
  }
  r["network"] = network;
  if (!functional.is_null()) r["functional"] = functional;
  if (moehub_speedup) r["moehub_speedup"] = *moehub_speedup;
  if (fraction_of_ideal) r["fraction_of_ideal"] = *fraction_of_ideal;
  if (frame) r["frame"] = frame->to_json();
  return r;
}

void LayerResult::compare(const LayerResult* moehub, const LayerResult* ideal) {
  const double t = layer.us();
  if (moehub) moehub_speedup = t / moehub->layer.us();
  if (ideal) fraction_of_ideal = ideal->layer.us() / t;
}

LayerResult LayerResult::from_json(const nlohmann::json& j) {
  LayerResult r;
  r.system = j.value("system", "");
  r.layer = time_of_us(j.value("layer_us", 0.0));
  r.e2e_ms = j.value("e2e_ms", 0.0);
  if (const auto it = j.find("breakdown_us"); it != j.end() && it->is_object()) {
    for (size_t c = 0; c < kActivityCount; ++c) {
      r.breakdown[c] = time_of_us(it->value(activity_name(static_cast<Activity>(c)), 0.0));
    }
  }
  r.critical_gpu = j.value("critical_gpu", 0);
  if (auto w = double_or_none(j, "routing_to_gemm1_us")) r.routing_to_gemm1 = time_of_us(*w);
  r.dispatch_GBps = double_or_none(j, "dispatch_GBps");
  r.combine_GBps = double_or_none(j, "combine_GBps");
  r.dispatch_nvlink_GBps = double_or_none(j, "dispatch_nvlink_GBps");
  r.dispatch_rdma_GBps = double_or_none(j, "dispatch_rdma_GBps");
  r.combine_nvlink_GBps = double_or_none(j, "combine_nvlink_GBps");
  r.combine_rdma_GBps = double_or_none(j, "combine_rdma_GBps");
  r.events = j.value("events", uint64_t{0});
  if (const auto it = j.find("ops"); it != j.end()) r.ops = ops_of(*it);
  if (const auto it = j.find("stats"); it != j.end()) r.stats = *it;
  r.network = j.value("network", nlohmann::json());
  if (const auto it = j.find("functional"); it != j.end()) r.functional = *it;
  r.moehub_speedup = double_or_none(j, "moehub_speedup");
  r.fraction_of_ideal = double_or_none(j, "fraction_of_ideal");
  if (const auto it = j.find("frame"); it != j.end() && it->is_object()) r.frame = LayerFrame::from_json(*it);
  return r;
}

namespace {
std::vector<ResultField> make_result_fields() {
  std::vector<ResultField> fields{
      {"layer_us", "us", "the MoE layer, until the last GPU finished",
       [](const LayerResult& r) -> std::optional<double> { return r.layer.us(); }},
      {"e2e_ms", "ms", "the whole model's forward pass with this MoE layer",
       [](const LayerResult& r) -> std::optional<double> { return r.e2e_ms; }},
      {"routing_to_gemm1_us", "us", "from routing to the end of GEMM1 (Fig. 15), the longest over GPUs",
       [](const LayerResult& r) -> std::optional<double> {
         return r.routing_to_gemm1 ? std::optional<double>(r.routing_to_gemm1->us()) : std::nullopt;
       }},
      {"dispatch_GBps", "GB/s", "bytes received from peers over the dispatch, mean over GPUs",
       [](const LayerResult& r) { return r.dispatch_GBps; }},
      {"combine_GBps", "GB/s", "bytes returned to their tokens' GPUs over the combine, mean over GPUs",
       [](const LayerResult& r) { return r.combine_GBps; }},
      {"dispatch_nvlink_GBps", "GB/s", "runs across nodes: dispatch_GBps's bytes from peers of the receiver's node",
       [](const LayerResult& r) { return r.dispatch_nvlink_GBps; }},
      {"dispatch_rdma_GBps", "GB/s", "runs across nodes: dispatch_GBps's bytes from peers on other nodes",
       [](const LayerResult& r) { return r.dispatch_rdma_GBps; }},
      {"combine_nvlink_GBps", "GB/s", "runs across nodes: combine_GBps's bytes to GPUs of the expert's node",
       [](const LayerResult& r) { return r.combine_nvlink_GBps; }},
      {"combine_rdma_GBps", "GB/s", "runs across nodes: combine_GBps's bytes to GPUs on other nodes",
       [](const LayerResult& r) { return r.combine_rdma_GBps; }},
      {"moehub_speedup", "x", "this layer time over MoE-Hub's", [](const LayerResult& r) { return r.moehub_speedup; }},
      {"fraction_of_ideal", "x", "the ideal layer time over this one",
       [](const LayerResult& r) { return r.fraction_of_ideal; }}};
  // The Fig. 3 breakdown of the critical GPU's timeline, one field per activity.
  for (size_t c = 0; c < kActivityCount; ++c) {
    const std::string name = activity_name(static_cast<Activity>(c));
    fields.push_back({"breakdown_us." + name, "us", "the critical GPU's time in " + name,
                      [c](const LayerResult& r) -> std::optional<double> { return r.breakdown[c].us(); }});
  }
  return fields;
}
}  // namespace

const std::vector<ResultField>& result_fields() {
  static const std::vector<ResultField> fields = make_result_fields();
  return fields;
}

const ResultField* find_result_field(std::string_view key) {
  for (const ResultField& f : result_fields()) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

}  // namespace moehub
