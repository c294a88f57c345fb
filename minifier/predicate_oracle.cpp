// oracle: a user's command judges a PyTorch repro.py of the candidate. This is
// how Kiln minifies bugs of real PyTorch: the command runs stock PyTorch on it.
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <csignal>
#include <cerrno>
#include <unistd.h>

#include <sys/resource.h>
#include <sys/wait.h>

#include "minifier/predicate.h"
#include "minifier/repro.h"
#include "minifier/output_match.h"

namespace kiln::minify {

namespace {

// The dotted name at the start of "torch.OutOfMemoryError: ..." (or a bare
// "KeyboardInterrupt"), scanned by hand: a 200 KB line must not recurse.
std::string exception_class(const std::string& line) {
  auto ident_start = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  auto ident = [&](char c) { return ident_start(c) || (c >= '0' && c <= '9'); };
  size_t i = 0;
  while (true) {
    if (i >= line.size() || !ident_start(line[i])) return "";
    while (i < line.size() && ident(line[i])) ++i;
    if (i < line.size() && line[i] == '.') {
      ++i;
      continue;
    }
    break;
  }
  return i == line.size() || line[i] == ':' ? line.substr(0, i) : "";
}

// "accuracy failure" when repro.py's check says so, else the class of the
// last Python exception in the output ("RuntimeError"): the first unindented
// line after the last traceback's frames. "" when there is neither.
std::string oracle_failure_kind(const std::string& output) {
  // repro.py says which half failed: "KILN_FAILURE_CLASS=eager-exception AttributeError: ...".
  static constexpr std::string_view kClass = "KILN_FAILURE_CLASS=";
  if (size_t at = output.rfind(kClass); at != std::string::npos) {
    const size_t start = at + kClass.size();
    const std::string line = output.substr(start, output.find('\n', start) - start);
    const std::string cls = line.substr(0, line.find(' '));
    const size_t space = line.find(' ');
    const std::string exception = space == std::string::npos ? "" : exception_class(line.substr(space + 1));
    return exception.empty() ? cls : cls + " " + exception;
  }
  if (output.find("ACCURACY FAILURE") != std::string::npos) return "accuracy failure";
  size_t at = output.rfind("Traceback (most recent call last):");
  if (at == std::string::npos) return "";
  size_t line = output.find('\n', at);
  while (line != std::string::npos) {
    size_t start = line + 1, stop = output.find('\n', start);
    std::string text = output.substr(start, stop == std::string::npos ? std::string::npos : stop - start);
    if (!text.empty() && text[0] != ' ' && text[0] != '\t') return exception_class(text);
    line = stop;
  }
  return "";
}

}  // namespace

void remove_stale_oracle_folders() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(fs::temp_directory_path(ec), ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("kiln-oracle-", 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + 12, nullptr, 10);
    // Only folders of processes that are gone (and of the pid-named kind).
    if (pid <= 0 || (::kill(pid_t(pid), 0) != 0 && errno == ESRCH)) {
      std::error_code rm;
      if (pid > 0) fs::remove_all(it->path(), rm);
    }
  }
}

std::string make_oracle_folder() {
  namespace fs = std::filesystem;
  // The pid in the name lets the next run remove what a killed one left.
  std::error_code ec;
  std::string tmpl = (fs::temp_directory_path(ec) / ("kiln-oracle-" + std::to_string(::getpid()) + "-XXXXXX")).string();
  return ::mkdtemp(tmpl.data()) ? tmpl : "";
}

Status write_oracle_repro(const PredicateOptions& p, const Candidate& c, const std::string& repro_path) {
  Repro r;
  r.graph = c.graph;
  r.inputs = c.inputs;
  r.predicate_json = predicate_to_json(p);
  TorchReproOptions options;
  options.device = p.torch_device;
  options.tolerance = p.tolerance;
  options.check = p.torch_check;
  options.check_non_float = p.check_non_float;
  return write_torch_repro(repro_path, r, options);
}

double oracle_run_seconds(const std::string& output) {
  static constexpr std::string_view kTiming = "KILN_TIMING run_s=";
  const size_t at = output.rfind(kTiming);
  if (at == std::string::npos) return -1;
  char* end = nullptr;
  const double s = std::strtod(output.c_str() + at + kTiming.size(), &end);
  return end == output.c_str() + at + kTiming.size() ? -1 : s;
}

Verdict oracle_verdict(const PredicateOptions& p, const OracleRun& run) {
  switch (run.end) {
    case OracleRun::End::Failed: return {Verdict::Outcome::Invalid, "setup", "", run.detail};
    case OracleRun::End::Cancelled: return {Verdict::Outcome::Invalid, "cancelled", "", "cancelled"};
    case OracleRun::End::TimedOut: {
      char buf[96];
      std::snprintf(buf, sizeof buf, "the oracle gave no verdict within %.3g s", run.wall_s);
      return {Verdict::Outcome::Fail, "timeout", "timeout", buf};
    }
    case OracleRun::End::OutOfMemory:
      return {Verdict::Outcome::Fail, "oom", "oom",
              "the oracle worker passed its resident memory bound (--oracle-memory-mb) on this candidate"};
    case OracleRun::End::Exited:
    case OracleRun::End::Signaled: break;
  }
  const std::string& output = run.output;
  std::string tail = output.size() > 2000 ? output.substr(output.size() - 2000) : output;
  if (!p.oracle_match.empty()) {
    Expected<bool> matched = output_matches(output, p.oracle_match);
    if (!matched) return {Verdict::Outcome::Invalid, "setup", "", "--oracle-match: " + matched.status().message()};
    if (*matched) return {Verdict::Outcome::Fail, "oracle", "oracle: output matches", tail};
    return {Verdict::Outcome::Pass, "", "", "output does not match"};
  }
  if (run.end == OracleRun::End::Signaled)
    return {Verdict::Outcome::Fail, "oracle", "oracle: signal " + std::to_string(run.signal), tail};
  if (run.exit_code == 0) return {Verdict::Outcome::Pass, "", "", "oracle exited 0"};
  // What failed is part of the signature, so a candidate that exits 1 for
  // another reason (an exception, CUDA out of memory) is drift, not the bug.
  std::string kind = oracle_failure_kind(output);
  return {Verdict::Outcome::Fail, "oracle",
          "oracle: exit " + std::to_string(run.exit_code) + (kind.empty() ? "" : " (" + kind + ")"), tail};
}

OraclePoolOptions oracle_pool_options(const PredicateOptions& p) {
  OraclePoolOptions o;
  o.python = p.oracle_python;
  o.worker_script = p.oracle_worker;
  o.memory_mb = p.oracle_memory_mb;
  o.warm_up_device = p.torch_device;
  if (!p.repro_inject.empty()) o.env.push_back("KILN_REPRO_INJECT=" + p.repro_inject);
  return o;
}

namespace {

// The persistent workers for one candidate (the evaluator pools them over
// many; this path serves a check run on its own).
Verdict check_with_workers(const PredicateOptions& p, const std::string& dir) {
  OraclePool pool(oracle_pool_options(p));
  std::vector<OracleRun> runs = pool.run({{dir + "/repro.py", dir + "/output.txt"}});
  return oracle_verdict(p, runs.at(0));
}

}  // namespace

Verdict check_oracle(const PredicateOptions& p, const Candidate& c) {
  namespace fs = std::filesystem;
  if (p.oracle_python.empty() && p.oracle_command.find("{repro}") == std::string::npos)
    return {Verdict::Outcome::Invalid, "setup", "", "the oracle command has no {repro}"};
  const std::string folder = make_oracle_folder();
  if (folder.empty()) return {Verdict::Outcome::Invalid, "setup", "", "cannot make a temporary folder"};
  fs::path dir = folder;
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  std::string repro = (dir / "repro.py").string();
  if (Status s = write_oracle_repro(p, c, repro); !s)
    return {Verdict::Outcome::Invalid, "setup", "", "cannot write repro.py: " + s.message()};
  if (!p.oracle_python.empty()) return check_with_workers(p, dir.string());
  std::string command = p.oracle_command;
  for (size_t at; (at = command.find("{repro}")) != std::string::npos;)
    command.replace(at, 7, shell_quote(repro));
  if (!p.repro_inject.empty()) command = "KILN_REPRO_INJECT=" + shell_quote(p.repro_inject) + "; export KILN_REPRO_INJECT; " + command;
  command = "cd " + shell_quote(dir.string()) + " && (" + command + ") 2>&1";
  // The command is not Kiln's compiler: the evaluator's address-space cap
  // (meant for runaway compiles) would make CUDA's initialisation fail.
  struct rlimit as;
  if (::getrlimit(RLIMIT_AS, &as) == 0) {
    as.rlim_cur = as.rlim_max;
    ::setrlimit(RLIMIT_AS, &as);
  }
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {Verdict::Outcome::Invalid, "setup", "", "cannot run the oracle command"};
  // Bounded: `yes {repro}` prints forever (the wall timeout ends it); what
  // is kept is the first kOracleOutputKeep bytes and the last kOracleTailKeep.
  std::string output, last;
  bool cut = false;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) {
    if (output.size() + n <= kOracleOutputKeep) {
      output.append(buf, n);
      continue;
    }
    cut = true;
    last.append(buf, n);
    if (last.size() > 2 * kOracleTailKeep) last.erase(0, last.size() - kOracleTailKeep);
  }
  int status = ::pclose(pipe);
  if (cut) {
    if (last.size() > kOracleTailKeep) last.erase(0, last.size() - kOracleTailKeep);
    output = cut_oracle_output(output, last);
  }
  OracleRun run;
  run.output = std::move(output);
  if (WIFSIGNALED(status)) {
    run.end = OracleRun::End::Signaled;
    run.signal = WTERMSIG(status);
  } else {
    run.end = OracleRun::End::Exited;
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return oracle_verdict(p, run);
}

}  // namespace kiln::minify
