#pragma once
// A unit's statistics as a plain struct of counters with one descriptor per counter (its key in
// the report, its unit, what it counts). The descriptors sum the counters of many units and
// write them to the report, so a counter is declared once and never read back by its key.

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <vector>

namespace moehub {

template <class S>
class CounterTable {
 public:
  struct Counter {
    const char* key;
    const char* unit;  // "packets", "B", "cycles", ...
    const char* what;
    uint64_t S::*member;
  };

  CounterTable(std::initializer_list<Counter> counters) : counters_(counters) {}

  const std::vector<Counter>& counters() const { return counters_; }

  // into += from, counter by counter (the totals over every GPU's unit).
  void add(S& into, const S& from) const {
    for (const Counter& c : counters_) into.*c.member += from.*c.member;
  }

  nlohmann::json to_json(const S& s) const {
    nlohmann::json j = nlohmann::json::object();
    for (const Counter& c : counters_) j[c.key] = s.*c.member;
    return j;
  }

 private:
  std::vector<Counter> counters_;
};

}  // namespace moehub
