#pragma once
// Results of single runs (one system on one resolved configuration), kept as one JSON file per
// run under DIR/cache/ and named by a hash of what determines the result: the program
// (a fingerprint of its executable), the system and the fully resolved configuration.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace moehub {

// 64-bit FNV-1a, for cache names (not security).
uint64_t fnv1a64(std::string_view data, uint64_t state = 0xcbf29ce484222325ULL);

// FNV-1a of the running executable (/proc/self/exe) as hex, so that a rebuilt program never
// reads results of an older one; "unknown-binary" where the file cannot be read.
std::string binary_fingerprint();

// The cache name of one run.
std::string run_key(const std::string& binary, const std::string& system, const nlohmann::json& config);

class ResultCache {
 public:
  explicit ResultCache(std::filesystem::path dir);  // creates the folder
  // The stored entry, or nothing if absent, unreadable, or stored under other key material.
  std::optional<nlohmann::json> load(const std::string& key, const std::string& binary, const std::string& system) const;
  // Written beside the target and renamed, so a killed run leaves no half entry.
  void store(const std::string& key, nlohmann::json entry, const std::string& binary, const std::string& system) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace moehub
