#pragma once
// A timeline of what happened, written as Chrome/Perfetto trace JSON (opens in ui.perfetto.dev).
// Components receive a TraceRecorder* (nullptr: tracing off) and record spans on named tracks:
// a process per GPU (or per switch), a track per stream, SM group or link.

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/time.h"

namespace moehub {

class TraceRecorder {
 public:
  void name_process(int pid, std::string name);
  // The id of the track called `name` inside process `pid`, created on first use.
  int track(int pid, const std::string& name);

  // A span [start, end) named `name` on a track; `args` are key/value strings shown on click.
  void span(int pid, int tid, std::string_view name, std::string_view category, Time start, Time end,
            std::vector<std::pair<std::string, std::string>> args = {});
  void instant(int pid, int tid, std::string_view name, std::string_view category, Time at);
  void counter(int pid, std::string_view name, Time at, double value);

  size_t size() const { return events_.size(); }
  // Copies another recorder's processes, tracks and events, shifting its process ids by
  // `pid_offset` and prefixing its process names (one timeline for several simulations).
  void append(const TraceRecorder& other, int pid_offset, const std::string& name_prefix);
  // Deterministic: events in recording order, numbers printed with fixed precision.
  void write(std::ostream& out) const;

 private:
  struct Event {
    char phase;  // 'X' span, 'i' instant, 'C' counter
    int pid;
    int tid;
    std::string name;
    std::string category;
    int64_t start_ps;
    int64_t duration_ps;
    double value;
    std::vector<std::pair<std::string, std::string>> args;
  };
  std::map<int, std::string> process_names_;
  std::map<std::pair<int, std::string>, int> tracks_;
  std::map<std::pair<int, int>, std::string> track_names_;
  std::map<int, int> next_tid_;
  std::vector<Event> events_;
};

}  // namespace moehub
