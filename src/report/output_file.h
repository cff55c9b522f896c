#pragma once
// An output file that appears only when complete: written to a temporary beside the target
// and renamed on commit(); destroyed uncommitted (an error happened), it leaves nothing behind.
// A target that exists and is not a regular file (a device such as /dev/null or /dev/full, a
// pipe) is written directly, never replaced. Every write is checked at commit().

#include <filesystem>
#include <fstream>
#include <string>

namespace moehub {

class OutputFile {
 public:
  // `flag` names the option that gave the path, for error messages.
  OutputFile(std::filesystem::path target, std::string flag);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  std::ostream& stream() { return out_; }
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path temp_;
  std::string flag_;
  std::ofstream out_;
  bool direct_ = false;  // writing straight to a device or pipe
  bool committed_ = false;
};

// Writes `text` as the whole of `file` through an OutputFile (`flag` is named in errors).
void write_output_file(const std::filesystem::path& file, const std::string& text, const std::string& flag);

}  // namespace moehub
