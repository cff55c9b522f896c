#include "platform/activity.h"

#include <algorithm>
#include <stdexcept>

namespace moehub {

const char* activity_name(Activity a) {
  switch (a) {
    case Activity::ExpertCompute: return "expert_compute";
    case Activity::Routing: return "routing";
    case Activity::Scaling: return "scaling";
    case Activity::SharedCompute: return "shared_compute";
    case Activity::DataShuffle: return "data_shuffles";
    case Activity::Polling: return "polling";
    case Activity::Communication: return "exposed_communication";
    case Activity::Synchronisation: return "synchronisation";
    case Activity::Launch: return "launches";
  }
  return "?";
}

void ActivityLog::add(Activity what, Time start, Time end) {
  if (end < start) throw std::logic_error("activity interval ends before it starts");
  if (end > start) intervals_.push_back({what, start, end});
}

std::array<Time, kActivityCount> ActivityLog::breakdown(Time begin, Time end) const {
  // Sweep over interval boundaries, keeping a count of open intervals per category.
  struct Edge {
    int64_t at;
    int delta;
    uint8_t what;
  };
  std::vector<Edge> edges;
  edges.reserve(intervals_.size() * 2);
  for (const auto& iv : intervals_) {
    const Time s = max(iv.start, begin);
    const Time e = min(iv.end, end);
    if (e <= s) continue;
    edges.push_back({s.ps(), +1, static_cast<uint8_t>(iv.what)});
    edges.push_back({e.ps(), -1, static_cast<uint8_t>(iv.what)});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.at < b.at; });
  std::array<Time, kActivityCount> parts{};
  std::array<int, kActivityCount> open{};
  int64_t cursor = begin.ps();
  size_t i = 0;
  while (cursor < end.ps()) {
    const int64_t next = i < edges.size() ? std::min(edges[i].at, end.ps()) : end.ps();
    if (next > cursor) {
      size_t winner = static_cast<size_t>(Activity::Launch);
      for (size_t c = 0; c < kActivityCount; ++c) {
        if (open[c] > 0) {
          winner = c;
          break;
        }
      }
      parts[winner] += Time::from_ps(next - cursor);
      cursor = next;
    }
    while (i < edges.size() && edges[i].at <= cursor) {
      open[edges[i].what] += edges[i].delta;
      ++i;
    }
  }
  return parts;
}

nlohmann::json breakdown_json(const std::array<Time, kActivityCount>& parts) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t c = 0; c < kActivityCount; ++c) j[activity_name(static_cast<Activity>(c))] = parts[c].us();
  return j;
}

}  // namespace moehub
