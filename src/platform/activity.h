#pragma once
// What each GPU spent the layer on, in the categories of the paper's Fig. 3. Systems log
// intervals (kernels by category, collectives, host synchronisations, polling); the breakdown
// then gives every instant of the layer to the most "useful" activity running at that instant,
// so the categories add up to the layer time and overlapped communication costs nothing.

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/time.h"

namespace moehub {

// In priority order: an instant covered by several activities counts for the first.
enum class Activity : uint8_t {
  ExpertCompute,
  Routing,
  Scaling,
  SharedCompute,    // shared experts and other per-token work every system does alike
  DataShuffle,      // permutes, sorts, copies that only exist to resolve addresses
  Polling,          // resident thread blocks spinning on flags
  Communication,    // data in flight with nothing useful running: exposed communication
  Synchronisation,  // the host blocked in a sync (count exchange, buffer sizing)
  Launch,           // nothing logged: the GPU waits for the host to issue the next kernel
};
constexpr size_t kActivityCount = 9;

const char* activity_name(Activity a);  // JSON key, e.g. "expert_compute"

struct ActivityInterval {
  Activity what;
  Time start;
  Time end;
};

class ActivityLog {
 public:
  void add(Activity what, Time start, Time end);
  const std::vector<ActivityInterval>& intervals() const { return intervals_; }
  // Splits [begin, end) among the categories; the parts sum to end - begin exactly.
  std::array<Time, kActivityCount> breakdown(Time begin, Time end) const;

 private:
  std::vector<ActivityInterval> intervals_;
};

nlohmann::json breakdown_json(const std::array<Time, kActivityCount>& parts);

}  // namespace moehub
