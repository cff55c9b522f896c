// `moehub accuracy`: how far the simulator is from real hardware. Every point of
// <config-dir>/accuracy/*.toml is a published measurement (what, value, unit, source) and, where
// the simulator can reproduce the experiment, the moehub command line that does (`args`) and
// where its JSON holds the result (`metric`: JSON pointers, summed, times `scale`). The command
// runs each point as its own moehub process (so a user can rerun any point by hand), prints
// measured, simulated and error per point, then the mean absolute error per source and
// overall. A point whose measurement was the input of a constant (`input_to`) is shown but not
// counted; one the simulator cannot run yet says why (`unsupported`). `--jobs` points run at a
// time (default one per core); the output and the error reported do not depend on it.

#include <cerrno>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <thread>
#include <toml++/toml.h>

#include "cli/command.h"
#include "sim/error.h"

extern char** environ;

namespace moehub {
namespace {

struct Point {
  std::string file, id, category, hardware, setup, measured, unit, source, url, input_to, unsupported;
  double value = 0;
  std::vector<std::string> args;
  std::vector<std::string> metric;
  double scale = 1.0;
  std::string group;  // the source the point's error is averaged under (its URL's site and first two path parts)
};

std::string where(const Point& p) { return fmt::format("{}: point {}", p.file, p.id); }

std::string group_of(const std::string& url) {
  std::string s = url.substr(url.find("://") == std::string::npos ? 0 : url.find("://") + 3);
  size_t cut = 0;
  for (int slashes = 0; cut < s.size() && slashes < 3; ++cut) slashes += s[cut] == '/';
  return s.substr(0, cut == s.size() ? cut : cut - 1);
}

std::vector<std::string> strings(const toml::node* n, const std::string& at) {
  std::vector<std::string> out;
  if (!n) return out;
  if (n->is_string()) return {n->value<std::string>().value()};
  const toml::array* a = n->as_array();
  if (!a) throw UserError(at, "must be a string or an array of strings");
  for (const toml::node& e : *a) {
    if (!e.is_string()) throw UserError(at, "must be an array of strings");
    out.push_back(e.value<std::string>().value());
  }
  return out;
}

Point parse_point(const toml::table& t, const std::string& file, size_t index) {
  static const std::vector<std::string> known{"id",       "category", "hardware", "setup",  "measured", "value",
                                              "unit",     "source",   "url",      "commit", "confidence", "notes",
                                              "input_to", "args",     "metric",   "scale",  "unsupported", "read_from"};
  Point p;
  p.file = file;
  const std::string at = fmt::format("{}: point {}", file, index + 1);
  for (const auto& [key, node] : t) {
    if (std::find(known.begin(), known.end(), std::string(key.str())) == known.end()) {
      throw UserError(at, fmt::format("unknown key '{}'", key.str()));
    }
    (void)node;
  }
  const auto text = [&](const char* key, bool required) {
    const auto v = t[key].value<std::string>();
    if (!v && required) throw UserError(at, fmt::format("'{}' (a string) is required", key));
    return v.value_or("");
  };
  p.id = text("id", true);
  p.category = text("category", true);
  p.hardware = text("hardware", true);
  p.setup = text("setup", true);
  p.measured = text("measured", true);
  p.unit = text("unit", true);
  p.source = text("source", true);
  p.url = text("url", true);
  p.input_to = text("input_to", false);
  p.unsupported = text("unsupported", false);
  const auto value = t["value"].value<double>();
  if (!value || !std::isfinite(*value) || *value == 0) throw UserError(where(p), "'value' must be a non-zero number");
  p.value = *value;
  p.args = strings(t.get("args"), where(p) + ": args");
  p.metric = strings(t.get("metric"), where(p) + ": metric");
  p.scale = t["scale"].value<double>().value_or(1.0);
  if (p.args.empty() == p.unsupported.empty()) {
    throw UserError(where(p), "give either 'args' and 'metric' (how moehub reproduces it) or 'unsupported' (why not)");
  }
  if (!p.args.empty() && p.metric.empty()) throw UserError(where(p), "'metric' is required with 'args'");
  p.group = group_of(p.url);
  return p;
}

std::vector<Point> load_points(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw UserError(dir.string(), "no accuracy folder");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".toml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Point> points;
  for (const auto& f : files) {
    toml::table doc;
    try {
      doc = toml::parse_file(f.string());
    } catch (const toml::parse_error& e) {
      throw UserError(fmt::format("{}:{}", f.string(), e.source().begin.line), std::string(e.description()));
    }
    const toml::array* list = doc["point"].as_array();
    if (!list) throw UserError(f.string(), "no [[point]] tables");
    for (size_t i = 0; i < list->size(); ++i) {
      const toml::table* t = (*list)[i].as_table();
      if (!t) throw UserError(f.string(), "every point must be a [[point]] table");
      points.push_back(parse_point(*t, f.filename().string(), i));
    }
  }
  std::map<std::string, int> seen;
  for (const Point& p : points) {
    if (seen[p.id]++) throw UserError(where(p), "the id is used twice");
  }
  return points;
}

// Runs this moehub binary with `args`; returns its stdout, or throws naming the point.
std::string run_self(const Point& p, const std::string& config_dir) {
  std::vector<std::string> argv{"moehub", "--config-dir", config_dir};
  argv.insert(argv.end(), p.args.begin(), p.args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  // Close-on-exec: a point started at the same time on another thread must not inherit these
  // pipes' write ends (their reader would wait for that process too).
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("accuracy: pipe failed");
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    throw std::runtime_error("accuracy: pipe failed");
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, err[0]);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    throw std::runtime_error("accuracy: cannot start moehub");
  }
  // Both pipes at once: a child that fills one while the other is read would block forever.
  std::string text, errors;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&text, &errors};
  for (int open_fds = 2; open_fds > 0;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("accuracy: poll failed");
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_fds;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw UserError(where(p), fmt::format("its run failed: {}", errors.substr(0, errors.find('\n'))));
  }
  return text;
}

struct Outcome {
  const Point* point;
  std::optional<double> simulated;
  std::optional<double> error;  // (simulated - measured) / measured
  std::string status;           // compared | input | unsupported
};

Outcome evaluate(const Point& p, const std::string& config_dir) {
  Outcome o{&p, std::nullopt, std::nullopt, "unsupported"};
  if (p.args.empty()) return o;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(run_self(p, config_dir));
  } catch (const nlohmann::json::exception&) {
    throw UserError(where(p), "its run did not print JSON (give --format json in args)");
  }
  double sum = 0;
  for (const std::string& m : p.metric) {
    nlohmann::json::json_pointer ptr;
    try {
      ptr = nlohmann::json::json_pointer(m);
    } catch (const nlohmann::json::exception&) {
      throw UserError(where(p), fmt::format("metric '{}' is not a JSON pointer", m));
    }
    if (!j.contains(ptr) || !j.at(ptr).is_number()) throw UserError(where(p), fmt::format("metric '{}' is not a number in its run's output", m));
    sum += j.at(ptr).get<double>();
  }
  o.simulated = sum * p.scale;
  o.error = (*o.simulated - p.value) / p.value;
  o.status = p.input_to.empty() ? "compared" : "input";
  return o;
}

// Every point's outcome in point order, `jobs` points at a time. Points are taken in order and
// none is started after a failure, so the error thrown is the first in point order, as with one job.
std::vector<Outcome> evaluate_all(const std::vector<Point>& points, const std::string& config_dir, unsigned jobs) {
  std::vector<std::optional<Outcome>> outcomes(points.size());
  std::vector<std::exception_ptr> errors(points.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  const auto work = [&] {
    for (size_t i; !failed && (i = next++) < points.size();) {
      try {
        outcomes[i] = evaluate(points[i], config_dir);
      } catch (...) {
        errors[i] = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::min<size_t>(jobs, points.size()); ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  std::vector<Outcome> out;
  for (const std::optional<Outcome>& o : outcomes) out.push_back(*o);
  return out;
}

struct Summary {
  std::map<std::string, std::pair<double, int>> by_group;  // sum of |error|, points
  double total = 0;
  int points = 0;
};

Summary summarise(const std::vector<Outcome>& outcomes) {
  Summary s;
  for (const Outcome& o : outcomes) {
    if (o.status != "compared") continue;
    auto& g = s.by_group[o.point->group];
    g.first += std::abs(*o.error);
    ++g.second;
    s.total += std::abs(*o.error);
    ++s.points;
  }
  return s;
}

std::string number(const std::optional<double>& v) { return v ? fmt::format("{:.4g}", *v) : "-"; }
std::string percent(const std::optional<double>& v) { return v ? fmt::format("{:+.1f} %", 100.0 * *v) : "-"; }

void print_text(const std::vector<Outcome>& outcomes, bool markdown) {
  const Summary s = summarise(outcomes);
  if (markdown) {
    std::cout << "# Accuracy against real hardware\n\n"
                 "Generated by `build/moehub accuracy --format md` from `configs/accuracy/*.toml` (do not edit by "
                 "hand). Each point is a published measurement; where the simulator can reproduce the experiment, "
                 "the point names the moehub command line that does, and the error is (simulated - measured) / "
                 "measured. `input` points were the measurement a constant was taken from and are not counted; "
                 "`not run` points say what the simulator lacks. Sources, setups and notes are in the TOML.\n\n";
    std::cout << "| point | measured | simulated | error | status | source | what was measured |\n|---|---|---|---|---|---|---|\n";
  } else {
    std::cout << fmt::format("{:<44} {:>10} {:>10} {:>9} {:<11} {}\n", "point", "measured", "simulated", "error", "status", "unit");
  }
  for (const Outcome& o : outcomes) {
    const Point& p = *o.point;
    const std::string status = o.status == "input" ? "input to " + p.input_to : o.status == "unsupported" ? "not run: " + p.unsupported : "compared";
    if (markdown) {
      std::cout << fmt::format("| `{}` | {} {} | {} | {} | {} | [{}]({}) | {} |\n", p.id, number(p.value), p.unit,
                               number(o.simulated), percent(o.error), status, p.source, p.url, p.measured);
    } else {
      std::cout << fmt::format("{:<44} {:>10} {:>10} {:>9} {:<11} {}\n", p.id, number(p.value), number(o.simulated),
                               percent(o.error), o.status, p.unit);
    }
  }
  std::cout << (markdown ? "\n| source | points compared | mean absolute error |\n|---|---|---|\n" : "\nmean absolute error per source\n");
  for (const auto& [group, e] : s.by_group) {
    const double mae = 100.0 * e.first / e.second;
    std::cout << (markdown ? fmt::format("| {} | {} | {:.1f} % |\n", group, e.second, mae)
                           : fmt::format("  {:<44} {:>3} points {:>7.1f} %\n", group, e.second, mae));
  }
  const double overall = s.points ? 100.0 * s.total / s.points : 0.0;
  std::cout << (markdown ? fmt::format("| all | {} | {:.1f} % |\n", s.points, overall)
                         : fmt::format("  {:<44} {:>3} points {:>7.1f} %\n", "all", s.points, overall));
}

nlohmann::json to_json(const std::vector<Outcome>& outcomes) {
  nlohmann::json j;
  j["points"] = nlohmann::json::array();
  for (const Outcome& o : outcomes) {
    const Point& p = *o.point;
    j["points"].push_back({{"id", p.id}, {"category", p.category}, {"file", p.file}, {"source", p.source}, {"url", p.url},
                           {"group", p.group}, {"measured", p.value}, {"unit", p.unit},
                           {"simulated", o.simulated ? nlohmann::json(*o.simulated) : nlohmann::json(nullptr)},
                           {"error", o.error ? nlohmann::json(*o.error) : nlohmann::json(nullptr)}, {"status", o.status},
                           {"input_to", p.input_to}, {"unsupported", p.unsupported}});
  }
  const Summary s = summarise(outcomes);
  for (const auto& [group, e] : s.by_group) j["mean_abs_error"][group] = e.first / e.second;
  j["mean_abs_error"]["all"] = s.points ? s.total / s.points : 0.0;
  j["compared"] = s.points;
  return j;
}

void print_csv(const std::vector<Outcome>& outcomes) {
  std::cout << "id,category,group,measured,unit,simulated,error,status\n";
  for (const Outcome& o : outcomes) {
    const Point& p = *o.point;
    std::cout << fmt::format("{},{},{},{},{},{},{},{}\n", p.id, p.category, p.group, p.value, p.unit,
                             o.simulated ? fmt::format("{}", *o.simulated) : "", o.error ? fmt::format("{}", *o.error) : "",
                             o.status);
  }
}

}  // namespace

void add_accuracy_command(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("accuracy", "Run every published real-hardware point and print the simulator's error");
  auto format = std::make_shared<std::string>("table");
  auto dir = std::make_shared<std::string>();
  auto jobs = std::make_shared<int>(0);
  cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember({"table", "json", "csv", "md"}));
  cmd->add_option("--points", *dir, "Folder of point files (default: <config-dir>/accuracy)");
  auto* jobs_option = cmd->add_option("--jobs", *jobs, "Points run at a time (default: one per core)");
  cmd->callback([&ctx, format, dir, jobs, jobs_option] {
    const bool jobs_given = jobs_option->count() > 0;
    ctx.action = [&ctx, format, dir, jobs, jobs_given]() -> int {
      if (jobs_given && *jobs < 1) throw UserError("--jobs", fmt::format("expected a positive number of jobs, got {}", *jobs));
      const unsigned n = jobs_given ? static_cast<unsigned>(*jobs) : std::max(1u, std::thread::hardware_concurrency());
      const std::filesystem::path folder = dir->empty() ? std::filesystem::path(ctx.config_dir) / "accuracy" : std::filesystem::path(*dir);
      const std::vector<Point> points = load_points(folder);
      const std::vector<Outcome> outcomes = evaluate_all(points, ctx.config_dir, n);
      if (*format == "json") std::cout << to_json(outcomes).dump(2) << "\n";
      else if (*format == "csv") print_csv(outcomes);
      else print_text(outcomes, *format == "md");
      return 0;
    };
  });
}

}  // namespace moehub
