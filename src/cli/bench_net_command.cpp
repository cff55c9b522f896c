// `moehub bench net`: one traffic pattern on the interconnect alone. B is what each sender
// sends: p2p (GPU 0 to GPU 1), alltoall (every GPU spreads B over the others, NCCL-style),
// incast (every other GPU sends B to GPU 0), ring (B is an all-gather's or reduce-scatter's
// size as nccl-tests counts it; each GPU sends (n-1)/n of it to the next). achieved_GBps = what
// each sender sends / time to deliver everything (for ring: nccl-tests' busbw).

#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "config/run_params.h"
#include "cli/command.h"
#include "config/config_builder.h"
#include "net/collectives.h"
#include "net/network.h"
#include "sim/error.h"
#include "sim/units.h"

namespace moehub {
namespace {

struct BenchNetOptions {
  ConfigRequest request;
  std::string pattern;
  std::string bytes;
  std::string gpus;
  std::string fidelity;
  std::string hardware;
  std::string format = "table";
};

uint64_t parse_bytes_flag(const std::string& text) {
  uint64_t bytes = 0;
  try {
    const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    bytes = digits ? std::stoull(text) : parse_bytes(text);
  } catch (const std::exception& e) {
    throw UserError("--bytes", fmt::format("'{}': {}", text, e.what()));
  }
  if (bytes == 0) throw UserError("--bytes", "must be greater than 0");
  return bytes;
}

void print_table(const nlohmann::json& r) {
  std::cout << fmt::format("pattern {}  fidelity {}  gpus {}  bytes per sender {}\n", r["pattern"].get<std::string>(),
                           r["fidelity"].get<std::string>(), r["gpus"].get<int>(), r["bytes_per_sender"].get<uint64_t>());
  std::cout << fmt::format("time_us {:.3f}  achieved_GBps {:.2f}\n\n", r["time_us"].get<double>(),
                           r["achieved_GBps"].get<double>());
  std::cout << fmt::format("{:<14} {:>14} {:>12} {:>17} {:>10}\n", "link", "bytes", "utilisation", "peak_queue_flits",
                           "stall_us");
  for (const auto& l : r["net"]["links"]) {
    std::cout << fmt::format("{:<14} {:>14} {:>12.3f} {:>17} {:>10.3f}\n",
                             l["from"].get<std::string>() + "->" + l["to"].get<std::string>(), l["bytes"].get<uint64_t>(),
                             l["utilisation"].get<double>(), l["peak_queue_flits"].get<uint64_t>(),
                             static_cast<double>(l["stall_ps"].get<int64_t>()) / 1e6);
  }
}

int bench_net(const CliContext& ctx, BenchNetOptions& o) {
  const auto flag = [&](const std::string& value, const char* path, const char* name) {
    if (!value.empty()) o.request.flags.push_back({path, value, name});
  };
  flag(o.hardware, "run.hardware", "--hardware");
  flag(o.gpus, "run.gpus", "--gpus");
  flag(o.fidelity, "net.fidelity", "--fidelity");
  const uint64_t bytes = parse_bytes_flag(o.bytes);
  const Config cfg = build_config(ctx.catalog(), *ctx.registry, o.request);
  const int gpus = static_cast<int>(RunParams::from(cfg).gpus);
  if (gpus < 2) throw UserError(o.gpus.empty() ? "run.gpus" : "--gpus", fmt::format("pattern {} needs at least 2 GPUs", o.pattern));
  const NetConfig net_cfg = NetConfig::from(cfg, gpus);
  const uint64_t per_sender = o.pattern == "ring" ? bytes / static_cast<uint64_t>(gpus) * static_cast<uint64_t>(gpus - 1) : bytes;
  // The packet model costs an event or two per packet: refuse what would run for hours.
  constexpr uint64_t kMaxPackets = uint64_t{1} << 31;
  const uint64_t senders = o.pattern == "p2p" ? 1 : static_cast<uint64_t>(gpus - (o.pattern == "incast" ? 1 : 0));
  const uint64_t packets = (per_sender / net_cfg.max_payload_bytes + 1) * senders;
  if (net_cfg.fidelity == NetFidelity::Packet && (bytes / net_cfg.max_payload_bytes >= kMaxPackets || packets > kMaxPackets)) {
    throw UserError("--bytes", fmt::format("{} B per sender is about {} packets at packet fidelity (at most {}); use "
                                           "--fidelity flow or fewer bytes", bytes, packets, kMaxPackets));
  }

  const auto start = std::chrono::steady_clock::now();
  Simulator sim;
  std::unique_ptr<Network> net = make_network(net_cfg, sim);
  Time finish;
  const auto done = [&sim, &finish] { finish = max(finish, sim.now()); };
  AllToAll a2a(*net, sim, NcclConfig::from(cfg));
  if (o.pattern == "p2p") {
    net->transfer(0, 1, bytes, 0, done);
  } else if (o.pattern == "incast") {
    for (int g = 1; g < gpus; ++g) net->transfer(g, 0, bytes, 0, done);
  } else if (o.pattern == "ring") {
    // A ring all-gather or reduce-scatter of `bytes` (nccl-tests' size): each rank sends
    // (n - 1) / n of it to its successor through NCCL's chunked slots. Reduction: the step-to-step
    // forwarding dependency is left out (it adds n - 1 chunk latencies, microseconds against the
    // large sizes this pattern is for), so achieved_GBps is nccl-tests' busbw.
    PerPair<uint64_t> m(gpus, 0);
    for (int g = 0; g < gpus; ++g) m(g, (g + 1) % gpus) = per_sender;
    a2a.start(std::move(m), 0, done);
  } else {
    a2a.start(AllToAll::uniform(gpus, bytes), 0, done);
  }
  sim.run();
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  nlohmann::json r;
  r["pattern"] = o.pattern;
  r["fidelity"] = net_cfg.fidelity == NetFidelity::Flow ? "flow" : "packet";
  r["gpus"] = gpus;
  r["bytes_per_sender"] = per_sender;
  r["time_ps"] = finish.ps();
  r["time_us"] = finish.us();
  r["achieved_GBps"] = finish.ps() > 0 ? static_cast<double>(per_sender) / finish.seconds() / 1e9 : 0.0;
  r["net"] = net->stats();
  if (o.format == "json") {
    nlohmann::json out{{"config", cfg.to_json()}, {"results", r}, {"perf", {{"wall_s", wall_s}, {"events", sim.events_executed()}}}};
    std::cout << out.dump(2) << "\n";
  } else {
    print_table(r);
  }
  return 0;
}

}  // namespace

void add_bench_net_command(CLI::App& bench, CliContext& ctx) {
  auto* cmd = bench.add_subcommand("net", "Interconnect microbenchmark: p2p, alltoall, incast or ring (all-gather / reduce-scatter)");
  auto o = std::make_shared<BenchNetOptions>();
  cmd->add_option("--pattern", o->pattern, "Traffic pattern")->required()->check(CLI::IsMember({"p2p", "alltoall", "incast", "ring"}));
  cmd->add_option("--bytes", o->bytes, "Payload each sender sends, e.g. 16MiB or 4096")->required();
  cmd->add_option("--gpus", o->gpus, "GPUs (default run.gpus = 8)");
  cmd->add_option("--fidelity", o->fidelity, "Network model (default net.fidelity)")->check(CLI::IsMember({"packet", "flow"}));
  cmd->add_option("--hardware", o->hardware, "Hardware preset name or TOML file (default: dgx-h800)");
  cmd->add_option("--config", o->request.config_files, "Experiment TOML file(s) applied over the presets");
  cmd->add_option("--set", o->request.assignments, "Override any parameter: KEY=VALUE (repeatable)");
  cmd->add_option("--format", o->format, "Output format")->check(CLI::IsMember({"table", "json"}));
  cmd->callback([&ctx, o] { ctx.action = [&ctx, o] { return bench_net(ctx, *o); }; });
}

}  // namespace moehub
