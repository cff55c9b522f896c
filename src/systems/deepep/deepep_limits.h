// What DeepEP's runs may hold and what its own code refuses, before anything runs: the memory
// estimate's bounds and the refusals (SystemEntry::flow_messages_bound, state_bytes, refusal).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "config/config.h"

namespace moehub {

std::optional<uint64_t> deepep_flow_messages_bound(const Config& c);
uint64_t deepep_state_bytes(const Config& c);
std::pair<std::string, std::string> deepep_refusal(const Config& c);

}  // namespace moehub
