#pragma once
// Counters of one unidirectional link (a GPU's links to one switch plane, or a plane's links
// to one GPU) and the coalescing of its busy periods into trace spans.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/time.h"
#include "sim/trace_recorder.h"

namespace moehub {

struct LinkStats {
  uint64_t packets = 0;
  uint64_t wire_bytes = 0;
  uint64_t payload_bytes = 0;
  int64_t busy_ps = 0;
  uint32_t peak_buffer_flits = 0;  // peak occupancy of the buffer this link feeds
  int64_t stall_ps = 0;            // time a ready packet waited for credits
  int64_t stall_since = -1;
  // Open busy span for the trace: back-to-back transmissions (gaps under `coalesce`) merge.
  int64_t span_start = -1;
  int64_t span_end = -1;

  void record_send(Time start, Time ser, uint32_t wire, uint32_t payload) {
    ++packets;
    wire_bytes += wire;
    payload_bytes += payload;
    busy_ps += ser.ps();
    if (stall_since >= 0) {
      stall_ps += start.ps() - stall_since;
      stall_since = -1;
    }
  }
  void stall(Time now) {
    if (stall_since < 0) stall_since = now.ps();
  }
  // The packet the link stalled for left on another link: the stall ends without a send here.
  void end_stall(Time now) {
    if (stall_since >= 0) {
      stall_ps += now.ps() - stall_since;
      stall_since = -1;
    }
  }
  void trace_busy(TraceRecorder* trace, int pid, int tid, Time start, Time end, Time coalesce) {
    if (!trace) return;
    if (span_start >= 0 && start.ps() <= span_end + coalesce.ps()) {
      span_end = end.ps();
      return;
    }
    flush_span(trace, pid, tid);
    span_start = start.ps();
    span_end = end.ps();
  }
  void flush_span(TraceRecorder* trace, int pid, int tid) {
    if (!trace || span_start < 0) return;
    trace->span(pid, tid, "busy", "net", Time::from_ps(span_start), Time::from_ps(span_end));
    span_start = span_end = -1;
  }
  nlohmann::json to_json(const std::string& from, const std::string& to, Time elapsed) const {
    const double util = elapsed.ps() > 0 ? static_cast<double>(busy_ps) / static_cast<double>(elapsed.ps()) : 0.0;
    return {{"from", from},         {"to", to},           {"packets", packets},
            {"bytes", wire_bytes},  {"payload_bytes", payload_bytes}, {"busy_ps", busy_ps},
            {"utilisation", util},  {"peak_queue_flits", peak_buffer_flits}, {"stall_ps", stall_ps}};
  }
};

}  // namespace moehub
