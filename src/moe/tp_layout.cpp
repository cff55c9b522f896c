#include "moe/tp_layout.h"

#include <fmt/format.h>

#include "sim/error.h"

namespace moehub {

TpLayout::TpLayout(int64_t gpus, int64_t tp, int64_t experts, int64_t ffn)
    : gpus_(gpus), tp_(tp), experts_(experts), ffn_(ffn) {
  if (tp < 1) throw UserError("parallel.tp", fmt::format("must be at least 1 (got {})", tp));
  if (tp == 1) return;  // pure expert parallelism: any placement (an expert map, replicas) goes
  if (gpus % tp != 0) throw UserError("parallel.tp", fmt::format("{} does not divide run.gpus = {}", tp, gpus));
  if (experts % (gpus / tp) != 0) {
    throw UserError("parallel.tp",
                    fmt::format("EP = run.gpus / parallel.tp = {} does not divide model.experts = {}", gpus / tp, experts));
  }
  if (ffn % tp != 0) {
    throw UserError("parallel.tp", fmt::format("{} does not divide the expert FFN width model.ffn_hidden = {}", tp, ffn));
  }
}

std::vector<int64_t> TpLayout::tp_group(int64_t gpu) const {
  std::vector<int64_t> g;
  for (int64_t r = 0; r < tp_; ++r) g.push_back(ep_rank(gpu) * tp_ + r);
  return g;
}

std::vector<int64_t> TpLayout::ep_group(int64_t gpu) const {
  std::vector<int64_t> g;
  for (int64_t e = 0; e < ep(); ++e) g.push_back(e * tp_ + tp_rank(gpu));
  return g;
}

std::vector<int64_t> TpLayout::shard_map() const {
  std::vector<int64_t> map;
  for (int64_t s = 0; s < shard_experts(); ++s) map.push_back(gpu_of_shard(s));
  return map;
}

}  // namespace moehub
