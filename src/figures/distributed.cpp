#include "figures/distributed.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fmt/format.h>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "figures/result_cache.h"
#include "sim/error.h"

#if MOEHUB_HAVE_MPI
// Only MPI's C interface: its C++ bindings were deprecated and removed from the standard.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace moehub {
namespace {

// How many ranks the launcher started, from its environment (Open MPI's mpirun, or a PMI
// launcher such as Slurm's srun): MPI is initialised only for more than one.
int launched_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* text = std::getenv(name);
    if (!text || !*text) continue;
    int n = 0;
    const std::string_view v(text);
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc() && end == v.data() + v.size()) return n;
  }
  return 1;
}

}  // namespace

#if MOEHUB_HAVE_MPI

namespace {

// Message tags: rank 0 sends tasks and the stop; workers send outcomes.
constexpr int kTaskTag = 1;
constexpr int kStopTag = 2;
constexpr int kOutcomeTag = 3;

struct Message {
  int source = 0;
  int tag = 0;
  std::string text;
};

void send_text(const std::string& text, int rank, int tag) {
  if (text.size() > static_cast<size_t>(INT_MAX)) throw std::logic_error("MPI message over 2 GiB");
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, rank, tag, MPI_COMM_WORLD);
}

// The next message from `source` with `tag` (MPI_ANY_SOURCE, MPI_ANY_TAG allowed), of any length.
// Polls with growing pauses (50 us to 5 ms): Open MPI's blocking probe spins a core at full
// speed, which would take it from the simulations (rank 0 waits through the whole sweep, the
// workers while rank 0 prepares configurations and draws the figures).
Message receive(int source, int tag) {
  MPI_Status status;
  auto pause = std::chrono::microseconds(50);
  for (int found = 0;;) {
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &found, &status);
    if (found) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(2 * pause, std::chrono::microseconds(5000));
  }
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  Message m{status.MPI_SOURCE, status.MPI_TAG, std::string(static_cast<size_t>(length), '\0')};
  MPI_Recv(m.text.data(), length, MPI_CHAR, m.source, m.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return m;
}

// Invalid UTF-8 (an error naming a file, say) is replaced rather than thrown: a worker whose
// reply cannot be written would leave rank 0 waiting for it.
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// A hash of the resolved configuration travels with the task, so a worker that resolves the
// settings differently (another program or config folder on its node) fails the run instead
// of computing something else.
uint64_t config_hash(const Config& config) { return fnv1a64(config.to_json().dump()); }

// One task on a worker: a failed outcome for anything that throws.
RunOutcome run_task(const std::string& text, const ConfigSource& configs, int rank) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const RunRequest request = RunRequest::from_json(j.at("request"));
    const Config config = configs.build(run_settings(request));
    if (config_hash(config) != j.at("config_hash").get<uint64_t>()) {
      throw std::logic_error("the settings resolve to another configuration than on rank 0 (another program or "
                             "config folder?)");
    }
    return simulate_run(request, config);
  } catch (const std::exception& e) {
    RunOutcome o;
    o.error = fmt::format("MPI rank {}: {}", rank, e.what());
    return o;
  }
}

}  // namespace

class MpiExecutor : public RunExecutor {
 public:
  explicit MpiExecutor(int size) : size_(size) {}

  void execute(const std::vector<RunTask>& tasks, const std::function<void(size_t, RunOutcome)>& finished) override {
    drain();  // outcomes of an execute() that ended in an exception
    const std::vector<size_t> order = longest_first(tasks);
    size_t next = 0;
    const auto hand_out = [&](int rank) {
      if (next >= order.size() || stop_requested()) return;
      const size_t t = order[next++];
      const nlohmann::json task{{"request", tasks[t].request->to_json()}, {"config_hash", config_hash(*tasks[t].config)}};
      send_text(dump(task), rank, kTaskTag);
      busy_[rank] = t;
    };
    for (int rank = 1; rank < size_; ++rank) hand_out(rank);
    while (!busy_.empty()) {
      const Message m = receive(MPI_ANY_SOURCE, kOutcomeTag);
      const auto it = busy_.find(m.source);
      if (it == busy_.end()) throw std::logic_error(fmt::format("an outcome from idle MPI rank {}", m.source));
      const size_t t = it->second;
      busy_.erase(it);
      finished(t, RunOutcome::from_json(nlohmann::json::parse(m.text)));
      hand_out(m.source);  // the worker that just finished takes the most expensive task left
    }
  }

  unsigned workers() const override { return static_cast<unsigned>(size_ - 1); }

  std::string describe(size_t tasks) const override {
    return fmt::format("{} MPI worker(s)", std::min<size_t>(workers(), std::max<size_t>(tasks, 1)));
  }

  // Waits for the runs still on workers (rank 0 left execute() by an exception), so that every
  // worker is back to waiting for a task when the stop arrives.
  void drain() {
    while (!busy_.empty()) busy_.erase(receive(MPI_ANY_SOURCE, kOutcomeTag).source);
  }

 private:
  int size_;
  std::map<int, size_t> busy_;  // worker rank -> the task it runs
};

DistributedSession::DistributedSession() {
  if (launched_ranks() <= 1) return;
  int provided = 0;
  // Only the main thread calls MPI; the runner's other threads only build configurations.
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  initialised_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (rank_ == 0 && size_ > 1) executor_ = std::make_unique<MpiExecutor>(size_);
}

DistributedSession::~DistributedSession() {
  if (!initialised_) return;
  try {
    if (executor_) {
      executor_->drain();
      for (int rank = 1; rank < size_; ++rank) send_text("", rank, kStopTag);
    }
  } catch (...) {
    // Only send_text's size check throws, and a stop message is empty.
  }
  MPI_Finalize();
}

int DistributedSession::serve(const ConfigSource& configs) {
  if (rank_ == 0) throw std::logic_error("serve() on MPI rank 0");
  for (;;) {
    const Message m = receive(0, MPI_ANY_TAG);
    if (m.tag == kStopTag) return 0;
    send_text(dump(run_task(m.text, configs, rank_).to_json()), 0, kOutcomeTag);
  }
}

#else  // no MPI in this build

class MpiExecutor : public RunExecutor {};  // never made: coordinator() throws

DistributedSession::DistributedSession() {
  if (const int n = launched_ranks(); n > 1) {
    throw UserError("mpirun", fmt::format("started as one of {} processes, but this moehub was built without MPI "
                                          "(install libopenmpi-dev and rebuild)", n));
  }
}

DistributedSession::~DistributedSession() = default;

int DistributedSession::serve(const ConfigSource&) { throw std::logic_error("serve() in a build without MPI"); }

#endif

RunExecutor& DistributedSession::coordinator() {
  if (!executor_) throw std::logic_error("coordinator() outside rank 0 of a distributed session");
  return *executor_;
}

int with_executor(const ConfigSource& configs, unsigned jobs, uint64_t jobs_memory,
                  const std::function<int(RunExecutor&)>& coordinate) {
  DistributedSession session;
  if (session.rank() > 0) return session.serve(configs);
  if (session.distributed()) return coordinate(session.coordinator());
  ThreadExecutor threads(jobs, simulate_run, jobs_memory);
  return coordinate(threads);
}

}  // namespace moehub
