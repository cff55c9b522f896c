#pragma once
// FasterMoE's smart-schedule step structure (laekov/fastmoe cuda/fastermoe/smart_schedule.h,
// GEN_BASE; smart_schedule.cpp reads FMOE_FASTER_GROUP_SIZE; docs/research/systems.md 2.3):
// ranks form N / g groups of g consecutive ranks; in step s rank r sends to every rank of
// group (r/g + s) mod (N/g) and receives from every rank of group (r/g - s) mod (N/g). With
// g = 1 this is the paper's pairwise schedule (step 0 the self exchange, then peers r +- s).

#include <vector>

namespace moehub {

class FasterMoeSchedule {
 public:
  // Throws UserError (systems.fastermoe.group_size) unless group_size >= 1 divides the GPU
  // count after clamping to it (the code clamps pipeline_gran to world_size).
  FasterMoeSchedule(int gpus, int group_size);

  int gpus() const { return gpus_; }
  int group_size() const { return group_; }
  int steps() const { return gpus_ / group_; }
  std::vector<int> send_peers(int rank, int step) const;
  std::vector<int> recv_peers(int rank, int step) const;

 private:
  int gpus_;
  int group_;
};

}  // namespace moehub
