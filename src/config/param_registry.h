#pragma once
// Every parameter the simulator reads, declared explicitly by each layer (no static
// registration). Unknown keys in a config are errors because they are absent here.

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "config/param_spec.h"

namespace moehub {

class ParamRegistry {
 public:
  ParamSpec& integer(std::string path, std::string description);
  ParamSpec& real(std::string path, std::string description);
  ParamSpec& boolean(std::string path, std::string description);
  ParamSpec& string(std::string path, std::string description);
  ParamSpec& choice(std::string path, std::vector<std::string> choices, std::string description);
  ParamSpec& time(std::string path, std::string description);
  ParamSpec& bandwidth(std::string path, std::string description);
  ParamSpec& frequency(std::string path, std::string description);
  ParamSpec& bytes(std::string path, std::string description);
  ParamSpec& integer_list(std::string path, std::string description);
  // Declares a spec built elsewhere (a ParamTable's descriptor).
  void add(const ParamSpec& spec);

  const ParamSpec* find(const std::string& path) const;
  // True if `prefix` names a section (some parameter lives below it).
  bool is_section(const std::string& prefix) const;
  // In declaration order.
  const std::deque<ParamSpec>& all() const { return specs_; }

 private:
  ParamSpec& add(std::string path, ParamType type, std::string description);

  std::deque<ParamSpec> specs_;  // deque: references stay valid as specs are added
  std::map<std::string, size_t> index_;
};

}  // namespace moehub
