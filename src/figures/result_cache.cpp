#include "figures/result_cache.h"

#include <fmt/format.h>
#include <fstream>
#include <unistd.h>

#include "sim/error.h"

namespace moehub {

namespace fs = std::filesystem;

uint64_t fnv1a64(std::string_view data, uint64_t state) {
  for (unsigned char c : data) {
    state ^= c;
    state *= 0x100000001b3ULL;
  }
  return state;
}

std::string binary_fingerprint() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  if (!in) return "unknown-binary";
  uint64_t h = 0xcbf29ce484222325ULL;
  std::string buf(1 << 16, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h = fnv1a64(std::string_view(buf.data(), static_cast<size_t>(in.gcount())), h);
  }
  return fmt::format("{:016x}", h);
}

std::string run_key(const std::string& binary, const std::string& system, const nlohmann::json& config) {
  // dump() of nlohmann's default (sorted) object is canonical.
  const std::string material = binary + "\n" + system + "\n" + config.dump();
  return fmt::format("{:016x}", fnv1a64(material));
}

ResultCache::ResultCache(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_, ec)) {
    throw UserError("--out", fmt::format("cannot create the cache folder '{}'", dir_.string()));
  }
}

std::optional<nlohmann::json> ResultCache::load(const std::string& key, const std::string& binary,
                                                const std::string& system) const {
  std::ifstream in(dir_ / (key + ".json"));
  if (!in) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.value("binary", "") != binary || j.value("system", "") != system ||
      !j.contains("result")) {
    return std::nullopt;
  }
  return j;
}

void ResultCache::store(const std::string& key, nlohmann::json entry, const std::string& binary,
                        const std::string& system) const {
  entry["binary"] = binary;
  entry["system"] = system;
  const fs::path target = dir_ / (key + ".json");
  const fs::path temp = dir_ / fmt::format(".{}.{}.tmp", key, ::getpid());
  {
    std::ofstream out(temp);
    out << entry.dump() << "\n";
    if (!out) throw UserError(temp.string(), "cannot write a cache entry");
  }
  fs::rename(temp, target);
}

}  // namespace moehub
