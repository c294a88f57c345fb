// oracle: a user's command judges a PyTorch repro.py of the candidate. This is
// how Kiln minifies bugs of real PyTorch: the command runs stock PyTorch on it.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include <sys/resource.h>
#include <sys/wait.h>

#include "minifier/predicate.h"
#include "minifier/repro.h"

namespace kiln::minify {

namespace {

// "accuracy failure" when repro.py's check says so, else the class of the
// last Python exception in the output ("RuntimeError"): the first unindented
// line after the last traceback's frames. "" when there is neither.
std::string oracle_failure_kind(const std::string& output) {
  if (output.find("ACCURACY FAILURE") != std::string::npos) return "accuracy failure";
  size_t at = output.rfind("Traceback (most recent call last):");
  if (at == std::string::npos) return "";
  size_t line = output.find('\n', at);
  while (line != std::string::npos) {
    size_t start = line + 1, stop = output.find('\n', start);
    std::string text = output.substr(start, stop == std::string::npos ? std::string::npos : stop - start);
    if (!text.empty() && text[0] != ' ' && text[0] != '\t') {
      static const std::regex name(R"(^([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)(?::|$))");
      std::smatch m;
      return std::regex_search(text, m, name) ? m[1].str() : "";
    }
    line = stop;
  }
  return "";
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

Verdict check_oracle(const PredicateOptions& p, const Candidate& c) {
  namespace fs = std::filesystem;
  if (p.oracle_command.find("{repro}") == std::string::npos)
    return {Verdict::Outcome::Invalid, "setup", "", "the oracle command has no {repro}"};
  std::string tmpl = (fs::temp_directory_path() / "kiln-oracle-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return {Verdict::Outcome::Invalid, "setup", "", "cannot make a temporary folder"};
  fs::path dir = tmpl;
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  Repro r;
  r.graph = c.graph;
  r.inputs = c.inputs;
  r.predicate_json = predicate_to_json(p);
  TorchReproOptions options;
  options.device = p.torch_device;
  options.tolerance = p.tolerance;
  options.check = p.torch_check;
  options.check_non_float = p.check_non_float;
  std::string repro = (dir / "repro.py").string();
  if (Status s = write_torch_repro(repro, r, options); !s)
    return {Verdict::Outcome::Invalid, "setup", "", "cannot write repro.py: " + s.message()};
  std::string command = p.oracle_command;
  for (size_t at; (at = command.find("{repro}")) != std::string::npos;)
    command.replace(at, 7, shell_quote(repro));
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
  std::string output;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  int status = ::pclose(pipe);
  std::string tail = output.size() > 2000 ? output.substr(output.size() - 2000) : output;
  if (!p.oracle_match.empty()) {
    bool matched = false;
    try {
      matched = std::regex_search(output, std::regex(p.oracle_match));
    } catch (const std::regex_error& e) {
      return {Verdict::Outcome::Invalid, "setup", "", std::string("bad --oracle-match regex: ") + e.what()};
    }
    if (matched) return {Verdict::Outcome::Fail, "oracle", "oracle: output matches", tail};
    return {Verdict::Outcome::Pass, "", "", "output does not match"};
  }
  if (WIFSIGNALED(status))
    return {Verdict::Outcome::Fail, "oracle", "oracle: signal " + std::to_string(WTERMSIG(status)), tail};
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 0) return {Verdict::Outcome::Pass, "", "", "oracle exited 0"};
  // What failed is part of the signature, so a candidate that exits 1 for
  // another reason (an exception, CUDA out of memory) is drift, not the bug.
  std::string kind = oracle_failure_kind(output);
  return {Verdict::Outcome::Fail, "oracle",
          "oracle: exit " + std::to_string(code) + (kind.empty() ? "" : " (" + kind + ")"), tail};
}

}  // namespace kiln::minify
