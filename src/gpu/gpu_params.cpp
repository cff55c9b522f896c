#include "gpu/gpu_params.h"

namespace moehub {

void declare_gpu_params(ParamRegistry& r) {
  r.string("gpu.name", "GPU product modelled");
  r.integer("gpu.sm_count", "Streaming multiprocessors per GPU").at_least(1).at_most(1024).in_unit("SMs");
  r.frequency("gpu.clock", "SM clock used for cycle-denominated costs").positive();
  r.bandwidth("gpu.hbm_bandwidth", "Peak HBM bandwidth (datasheet)").positive();
}

}  // namespace moehub
