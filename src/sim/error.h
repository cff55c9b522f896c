#pragma once
// Errors caused by the user's input (config, flag, file): `main` maps them to exit status 2.
// Anything else that escapes is an internal fault (exit status 1).

#include <stdexcept>
#include <string>

namespace moehub {

class UserError : public std::runtime_error {
 public:
  // `where` is a key path (`gpu.sm_count`), a flag (`--gpus`) or a `file:line`.
  UserError(std::string where, std::string reason)
      : std::runtime_error(where + ": " + reason), where_(std::move(where)), reason_(std::move(reason)) {}
  const std::string& where() const { return where_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string where_;
  std::string reason_;
};

}  // namespace moehub
