#include "systems/param_catalog.h"

#include "config/run_params.h"
#include "gpu/gpu_params.h"
#include "hub/hub_params.h"
#include "moe/moe_params.h"
#include "net/net_params.h"
#include "systems/system_registry.h"

namespace moehub {

ParamRegistry build_param_registry() {
  ParamRegistry r;
  declare_run_params(r);
  declare_workload_params(r);
  declare_model_params(r);
  declare_gpu_params(r);
  declare_host_params(r);
  declare_net_params(r);
  declare_hub_params(r);
  declare_systems_params(r);
  return r;
}

}  // namespace moehub
