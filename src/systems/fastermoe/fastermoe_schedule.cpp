#include "systems/fastermoe/fastermoe_schedule.h"

#include <algorithm>
#include <fmt/format.h>

#include "sim/error.h"

namespace moehub {

FasterMoeSchedule::FasterMoeSchedule(int gpus, int group_size) : gpus_(gpus), group_(std::min(group_size, gpus)) {
  if (group_size < 1) throw UserError("systems.fastermoe.group_size", "must be at least 1");
  if (gpus_ % group_ != 0) {
    throw UserError("systems.fastermoe.group_size", fmt::format("{} does not divide the {} GPUs", group_, gpus_));
  }
}

std::vector<int> FasterMoeSchedule::send_peers(int rank, int step) const {
  const int groups = steps();
  const int base = ((rank / group_ + step) % groups) * group_;
  std::vector<int> peers;
  for (int j = 0; j < group_; ++j) peers.push_back(base + j);
  return peers;
}

std::vector<int> FasterMoeSchedule::recv_peers(int rank, int step) const {
  const int groups = steps();
  const int base = (((rank / group_ - step) % groups + groups) % groups) * group_;
  std::vector<int> peers;
  for (int j = 0; j < group_; ++j) peers.push_back(base + j);
  return peers;
}

}  // namespace moehub
