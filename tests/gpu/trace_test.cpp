// The timeline: kernels on stream tracks, blocks coalesced per SM group, waits by name.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "gpu/gemm.h"
#include "gpu/gpu.h"
#include "gpu/host.h"
#include "gpu_test_support.h"

namespace moehub::gpu {
namespace {

using testing::h800;

nlohmann::json written(const TraceRecorder& t) {
  std::ostringstream out;
  t.write(out);
  return nlohmann::json::parse(out.str());
}

TEST(Trace, GemmAppearsOnItsStreamAndOnSmGroupTracks) {
  Simulator sim;
  TraceRecorder trace;
  Gpu gpu(sim, h800(), 2, &trace);
  GemmModel m(gpu.config(), {{896}, 2432, 4096});  // 133 tiles, two waves
  gpu.create_stream("compute").launch(m.kernel("expert gemm"));
  sim.run();
  const nlohmann::json j = written(trace);
  std::set<std::string> track_names;
  int kernel_spans = 0, block_spans = 0, gaps = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") track_names.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] != "X") continue;
    EXPECT_EQ(e["pid"], 2);
    if (e["cat"] == "kernel") ++kernel_spans;
    if (e["cat"] == "blocks") ++block_spans;
    if (e["name"] == "launch gap") ++gaps;
  }
  EXPECT_TRUE(track_names.count("stream compute"));
  EXPECT_TRUE(track_names.count("SMs 0-11"));
  EXPECT_TRUE(track_names.count("SMs 120-131"));
  EXPECT_EQ(kernel_spans, 1);
  EXPECT_EQ(gaps, 1);
  // 133 blocks become one span per SM group: the 133rd tile follows the first on SM 0 without
  // a gap, so its group's span is continuous.
  EXPECT_EQ(block_spans, 11);
}

TEST(Trace, WaitsAndHostWorkAreNamed) {
  Simulator sim;
  TraceRecorder trace;
  Gpu gpu(sim, h800(), 0, &trace);
  Host host(sim, testing::host(), 0, &trace);
  const SignalId flag = gpu.create_signal("flag");
  Stream& s = gpu.create_stream("s");
  KernelSpec poll;
  poll.name = "poller";
  poll.blocks = 2;
  poll.program = std::make_shared<StepListProgram>(std::vector<Step>{Step::wait(flag, 1, WaitMode::Poll)});
  KernelSpec gated;
  gated.name = "dam";
  gated.blocks = 2;
  gated.program = std::make_shared<StepListProgram>(std::vector<Step>{Step::wait(flag, 1, WaitMode::Hardware)});
  host.launch(s, std::move(poll));
  host.launch(gpu.create_stream("t"), std::move(gated));
  host.sync(s, 4);
  sim.schedule_at(Time::from_us(20), [&] { gpu.signal_add(flag, 1); });
  sim.run();
  std::set<std::string> names;
  const nlohmann::json j = written(trace);
  for (const auto& e : j["traceEvents"]) names.insert(e["name"].get<std::string>());
  for (const char* n : {"poller", "poller poll wait", "dam gated", "launch poller", "issue D2H copy", "sync wait",
                        "sync wakeup", "D2H copy"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
}

}  // namespace
}  // namespace moehub::gpu
