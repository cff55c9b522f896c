#include "sim/trace_recorder.h"

#include <fmt/format.h>

namespace moehub {
namespace {

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<int>(c));
        else out += c;
    }
  }
  return out;
}

// Chrome traces count in microseconds; six decimals keep picosecond resolution.
std::string micros(int64_t ps) { return fmt::format("{}.{:06d}", ps / 1000000, ps % 1000000); }

}  // namespace

void TraceRecorder::name_process(int pid, std::string name) { process_names_[pid] = std::move(name); }

int TraceRecorder::track(int pid, const std::string& name) {
  auto key = std::make_pair(pid, name);
  auto it = tracks_.find(key);
  if (it != tracks_.end()) return it->second;
  const int tid = ++next_tid_[pid];
  tracks_.emplace(key, tid);
  track_names_[{pid, tid}] = name;
  return tid;
}

void TraceRecorder::span(int pid, int tid, std::string_view name, std::string_view category, Time start, Time end,
                         std::vector<std::pair<std::string, std::string>> args) {
  events_.push_back(Event{'X', pid, tid, std::string(name), std::string(category), start.ps(),
                          (end - start).ps(), 0.0, std::move(args)});
}

void TraceRecorder::instant(int pid, int tid, std::string_view name, std::string_view category, Time at) {
  events_.push_back(Event{'i', pid, tid, std::string(name), std::string(category), at.ps(), 0, 0.0, {}});
}

void TraceRecorder::counter(int pid, std::string_view name, Time at, double value) {
  events_.push_back(Event{'C', pid, 0, std::string(name), "counter", at.ps(), 0, value, {}});
}

void TraceRecorder::append(const TraceRecorder& other, int pid_offset, const std::string& name_prefix) {
  for (const auto& [pid, name] : other.process_names_) process_names_[pid + pid_offset] = name_prefix + name;
  for (const auto& [key, tid] : other.tracks_) {
    const auto shifted = std::make_pair(key.first + pid_offset, key.second);
    tracks_[shifted] = tid;
    track_names_[{shifted.first, tid}] = key.second;
    next_tid_[shifted.first] = std::max(next_tid_[shifted.first], tid);
  }
  for (Event e : other.events_) {
    e.pid += pid_offset;
    events_.push_back(std::move(e));
  }
}

void TraceRecorder::write(std::ostream& out) const {
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first = true;
  const auto sep = [&] {
    if (!first) out << ",";
    first = false;
    out << "\n";
  };
  for (const auto& [pid, name] : process_names_) {
    sep();
    out << fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"{}"}}}})", pid,
                       escape(name));
    sep();
    out << fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})", pid,
                       pid);
  }
  for (const auto& [key, name] : track_names_) {
    sep();
    out << fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}"}}}})", key.first,
                       key.second, escape(name));
  }
  for (const Event& e : events_) {
    sep();
    if (e.phase == 'C') {
      out << fmt::format(R"({{"ph":"C","name":"{}","pid":{},"ts":{},"args":{{"value":{}}}}})", escape(e.name), e.pid,
                         micros(e.start_ps), e.value);
      continue;
    }
    out << fmt::format(R"({{"ph":"{}","name":"{}","cat":"{}","pid":{},"tid":{},"ts":{})", e.phase, escape(e.name),
                       escape(e.category), e.pid, e.tid, micros(e.start_ps));
    if (e.phase == 'X') out << fmt::format(R"(,"dur":{})", micros(e.duration_ps));
    if (e.phase == 'i') out << R"(,"s":"t")";
    if (!e.args.empty()) {
      out << ",\"args\":{";
      for (size_t i = 0; i < e.args.size(); ++i) {
        out << fmt::format(R"({}"{}":"{}")", i ? "," : "", escape(e.args[i].first), escape(e.args[i].second));
      }
      out << "}";
    }
    out << "}";
  }
  out << "\n]}\n";
}

}  // namespace moehub
