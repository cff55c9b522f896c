#pragma once
// One status line on a terminal, rewritten in place with '\r', with whole lines printed above
// it. Used for progress (`moehub run`, `sweep`, `figures`) only when stderr is a terminal:
// pipes, logs and JSON output never see it. Not thread-safe: callers serialise.

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <ostream>
#include <string>

namespace moehub {

class LiveLine {
 public:
  explicit LiveLine(std::ostream* out) : out_(out) {}
  LiveLine(const LiveLine&) = delete;
  LiveLine& operator=(const LiveLine&) = delete;
  ~LiveLine() { close(); }

  // Replaces the status line.
  void draw(const std::string& text) {
    if (!out_) return;
    const size_t pad = width_ > text.size() ? width_ - text.size() : 0;
    *out_ << "\r" << text << std::string(pad, ' ') << std::flush;
    width_ = std::max<size_t>(text.size(), 1);
  }
  // Prints `line` (ending in '\n') where the status line was; the next draw() shows it again.
  void say(const std::string& line) {
    if (!out_) return;
    if (width_) *out_ << "\r" << std::string(width_, ' ') << "\r";
    width_ = 0;
    *out_ << line << std::flush;
  }
  // Leaves the last status on screen and moves to the next line.
  void close() {
    if (out_ && width_) *out_ << "\n" << std::flush;
    width_ = 0;
  }

 private:
  std::ostream* out_;
  size_t width_ = 0;  // of the status line on screen; 0: none drawn
};

// "42 s", "3m05s", "2h10m": wall times for people.
inline std::string duration_text(double seconds) {
  const auto total = static_cast<int64_t>(seconds + 0.5);
  if (total < 60) return fmt::format("{} s", total);
  if (total < 3600) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}h{:02}m", total / 3600, total % 3600 / 60);
}

}  // namespace moehub
