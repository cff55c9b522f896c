#include "report/output_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include "sim/error.h"

namespace moehub {

OutputFile::OutputFile(std::filesystem::path target, std::string flag)
    : target_(std::move(target)), flag_(std::move(flag)) {
  std::error_code ec;
  const auto dir = target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(dir, ec)) {
    throw UserError(flag_, fmt::format("cannot write '{}': no such directory", target_.string()));
  }
  if (std::filesystem::is_directory(target_, ec)) {
    throw UserError(flag_, fmt::format("cannot write '{}': it is a directory", target_.string()));
  }
  direct_ = std::filesystem::exists(target_, ec) && !std::filesystem::is_regular_file(target_, ec);
  if (direct_) {
    temp_ = target_;
  } else {
    temp_ = target_;
    temp_ += fmt::format(".tmp-{}", static_cast<long>(::getpid()));
  }
  out_.open(temp_, std::ios::binary | (direct_ ? std::ios::out : std::ios::trunc));
  if (!out_) throw UserError(flag_, fmt::format("cannot write '{}'", target_.string()));
}

OutputFile::~OutputFile() {
  if (!committed_ && !direct_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

void OutputFile::commit() {
  out_.flush();
  if (!out_) throw UserError(flag_, fmt::format("writing '{}' failed", target_.string()));
  out_.close();
  if (!out_) throw UserError(flag_, fmt::format("writing '{}' failed", target_.string()));
  if (direct_) {
    committed_ = true;
    return;
  }
  std::error_code ec;
  std::filesystem::rename(temp_, target_, ec);
  if (ec) throw UserError(flag_, fmt::format("cannot write '{}': {}", target_.string(), ec.message()));
  committed_ = true;
}

void write_output_file(const std::filesystem::path& file, const std::string& text, const std::string& flag) {
  OutputFile out(file, flag);
  out.stream() << text;
  out.commit();
}

}  // namespace moehub
