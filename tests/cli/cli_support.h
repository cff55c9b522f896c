#pragma once
// Runs the `moehub` program for end-to-end tests: exit status, stdout and stderr, each test in
// its own scratch folder. Shared by every tests/cli/*_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace moehub_test {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

inline fs::path scratch_path(const ::testing::TestInfo& info) {
  return fs::temp_directory_path() / fmt::format("moehub-cli-{}-{}-{}", ::getpid(), info.test_suite_name(), info.name());
}

// Removes each passing test's scratch folder when it ends (thousands accumulated in /tmp); a
// failed test's folder stays for a look at what the program wrote.
class ScratchCleanup : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result() != nullptr && info.result()->Failed()) return;
    std::error_code ec;
    fs::remove_all(scratch_path(info), ec);
  }
};
inline const bool kScratchCleanupInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ScratchCleanup);
  return true;
}();

// A folder of the running test's own (process, suite, test).
inline fs::path scratch_dir() {
  fs::path d = scratch_path(*::testing::UnitTest::GetInstance()->current_test_info());
  fs::create_directories(d);
  return d;
}

inline Result moehub(const std::vector<std::string>& args) {
  const fs::path dir = scratch_dir();
  std::string cmd = std::string("'") + MOEHUB_BINARY + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += fmt::format(" >'{}' 2>'{}' </dev/null", (dir / "stdout").string(), (dir / "stderr").string());
  Result r;
  const int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
  r.out = slurp(dir / "stdout");
  r.err = slurp(dir / "stderr");
  return r;
}

// A bad input: exit status 2 and exactly one line "moehub: error: <where>: <reason>".
inline void expect_bad_input(const std::vector<std::string>& args, const std::string& fragment) {
  const Result r = moehub(args);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err.rfind("moehub: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << "stderr: " << r.err << "\nexpected: " << fragment;
}

}  // namespace moehub_test
