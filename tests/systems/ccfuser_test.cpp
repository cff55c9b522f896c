// CCFuser: mechanism-level facts on small layers (hand-checkable, not the paper's numbers).

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "systems/system_run.h"

namespace moehub {
namespace {

using test::DefaultsRun;

TEST(Ccfuser, RemoteRowsArePulledAsReadRequestsAndResponses) {
  DefaultsRun r("ccfuser", {"run.tokens=1024", "model.hidden=1024", "model.ffn_hidden=1024"});
  const nlohmann::json k = r.cluster->network().stats()["packets_delivered_by_kind"];
  // Every remote row is read as row_bytes / 128 header-only requests, each answered by a 128 B response.
  const uint64_t expected = static_cast<uint64_t>(r.workload.plan().remote_rows()) * r.workload.model().row_bytes() / 128;
  EXPECT_GT(expected, 0u);
  EXPECT_EQ(k["read_request"].get<uint64_t>(), expected);
  EXPECT_EQ(k["read_response"].get<uint64_t>(), expected);
  EXPECT_EQ(r.stats["remote_read_bytes"].get<uint64_t>(), expected * 128);
  uint64_t loads = 0;
  for (int g = 0; g < r.cluster->gpus(); ++g) loads += r.stats["gpus"][g]["loads"].get<uint64_t>();
  EXPECT_EQ(loads, r.stats["remote_reads"].get<uint64_t>());  // every read came from a thread block
}

TEST(Ccfuser, FunctionalOutputMatchesTheReference) {
  for (const char* schedule : {"work_queue", "static_pairs"}) {
    DefaultsRun r("ccfuser", {"run.tokens=256", "model.hidden=64", "model.ffn_hidden=96", "run.functional=true",
                            std::string("systems.ccfuser.schedule=") + schedule},
                true);
    EXPECT_TRUE(r.functional->passed()) << schedule << r.functional->report().dump();
  }
}

TEST(Ccfuser, FunctionalOutputMatchesTheReferenceAtFlowFidelity) {
  DefaultsRun r("ccfuser", {"run.tokens=256", "model.hidden=64", "model.ffn_hidden=96", "run.functional=true",
                          "net.fidelity=flow"},
              true);
  EXPECT_TRUE(r.functional->passed()) << r.functional->report().dump();
}

}  // namespace
}  // namespace moehub
