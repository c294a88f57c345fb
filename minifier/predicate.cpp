#include "minifier/predicate.h"
#include "core/util/output_text.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace kiln::minify {

namespace {

struct CheckName {
  CheckKind kind;
  const char* name;
};
constexpr CheckName kChecks[] = {{CheckKind::CompileError, "compile-error"},
                                 {CheckKind::Crash, "crash"},
                                 {CheckKind::Accuracy, "accuracy"},
                                 {CheckKind::CpuGpuMismatch, "cpu-gpu-mismatch"},
                                 {CheckKind::Oracle, "oracle"}};

}  // namespace

const char* check_name(CheckKind k) {
  for (const CheckName& c : kChecks)
    if (c.kind == k) return c.name;
  return "?";
}

Expected<CheckKind> check_from_name(const std::string& name) {
  for (const CheckName& c : kChecks)
    if (name == c.name) return c.kind;
  return Status::error("unknown check '" + name + "' (accuracy, compile-error, crash, cpu-gpu-mismatch, oracle)");
}

std::string predicate_to_json(const PredicateOptions& p, const std::string& signature) {
  nlohmann::json j = {{"check", check_name(p.kind)},
                      {"tolerance", p.tolerance},
                      {"check_non_float", p.check_non_float},
                      {"allow_drift", p.allow_drift}};
  if (!p.stage.empty()) j["stage"] = p.stage;
  if (!p.message_regex.empty()) j["message_regex"] = p.message_regex;
  if (!p.oracle_command.empty()) j["oracle_command"] = p.oracle_command;
  if (!p.oracle_match.empty()) j["oracle_match"] = p.oracle_match;
  if (!p.oracle_python.empty()) j["oracle_python"] = p.oracle_python;
  if (!p.oracle_worker.empty()) j["oracle_worker"] = p.oracle_worker;
  if (!p.repro_inject.empty()) j["repro_inject"] = p.repro_inject;
  if (p.oracle_memory_mb > 0) j["oracle_memory_mb"] = p.oracle_memory_mb;
  if (p.kind == CheckKind::Oracle) {
    j["torch_device"] = p.torch_device;
    j["torch_check"] = p.torch_check;
  }
  if (!p.inject_bug.empty()) j["inject_bug"] = p.inject_bug;
  if (!signature.empty()) j["signature"] = signature;
  return kiln::json_text(j, 1);
}

Expected<PredicateOptions> predicate_from_json(const std::string& text, std::string* signature) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::error("predicate: not a JSON object");
  PredicateOptions p;
  auto str = [&](const char* key, std::string& out) -> Status {
    if (!j.contains(key)) return {};
    if (!j[key].is_string()) return Status::error(std::string("predicate: '") + key + "' is not a string");
    out = j[key].get<std::string>();
    return {};
  };
  std::string check;
  if (!j.contains("check")) return Status::error("predicate: no 'check'");
  if (Status s = str("check", check); !s) return s;
  Expected<CheckKind> kind = check_from_name(check);
  if (!kind) return Status::error("predicate: " + kind.status().message());
  p.kind = *kind;
  for (auto [key, out] : {std::pair{"stage", &p.stage}, {"message_regex", &p.message_regex},
                          {"oracle_command", &p.oracle_command}, {"oracle_match", &p.oracle_match},
                          {"oracle_python", &p.oracle_python}, {"oracle_worker", &p.oracle_worker},
                          {"repro_inject", &p.repro_inject},
                          {"torch_device", &p.torch_device}, {"torch_check", &p.torch_check},
                          {"inject_bug", &p.inject_bug}})
    if (Status s = str(key, *out); !s) return s;
  if (j.contains("oracle_memory_mb")) {
    if (!j["oracle_memory_mb"].is_number_integer()) return Status::error("predicate: 'oracle_memory_mb' is not an integer");
    p.oracle_memory_mb = j["oracle_memory_mb"].get<int64_t>();
  }
  if (j.contains("tolerance")) {
    if (!j["tolerance"].is_number()) return Status::error("predicate: 'tolerance' is not a number");
    p.tolerance = j["tolerance"].get<double>();
  }
  for (auto [key, out] : {std::pair{"check_non_float", &p.check_non_float}, {"allow_drift", &p.allow_drift}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_boolean()) return Status::error(std::string("predicate: '") + key + "' is not true or false");
    *out = j[key].get<bool>();
  }
  if (signature) {
    signature->clear();
    if (Status s = str("signature", *signature); !s) return s;
  }
  return p;
}

std::string describe(const PredicateOptions& p) {
  std::string s = check_name(p.kind);
  char tol[64];
  std::snprintf(tol, sizeof tol, "%g", p.tolerance);
  switch (p.kind) {
    case CheckKind::CompileError:
      if (!p.stage.empty()) s += " at " + p.stage;
      if (!p.message_regex.empty()) s += " matching '" + p.message_regex + "'";
      break;
    case CheckKind::Crash: break;
    case CheckKind::Accuracy:
    case CheckKind::CpuGpuMismatch:
      s += std::string(" (tolerance ") + tol + (p.check_non_float ? ", non-float outputs too" : "") + ")";
      break;
    case CheckKind::Oracle:
      s += p.oracle_python.empty() ? " `" + p.oracle_command + "`" : " with persistent workers (" + p.oracle_python + ")";
      s += p.oracle_match.empty() ? " (non-zero exit)" : " matching '" + p.oracle_match + "'";
      break;
  }
  if (p.allow_drift) s += ", drift allowed";
  return s;
}

bool is_interesting(const Verdict& v, const Verdict& original, bool allow_drift) {
  if (!v.failed()) return false;
  // A hang or an out-of-memory is what isolation contains, not a failure to
  // minify towards, unless it was the original failure.
  if (allow_drift && v.kind != "timeout" && v.kind != "oom" && v.kind != "setup") return true;
  return v.kind == original.kind && v.signature == original.signature;
}

std::string error_signature(const std::string& stage, const std::string& message) {
  // First line only: later lines hold graph dumps and stacks that change with the candidate.
  std::string first = message.substr(0, message.find('\n'));
  std::string out;
  char quote = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    char c = first[i];
    if (quote) {
      if (c == quote) {
        out += c;
        quote = 0;
      }
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out += c;
      out += "...";
      continue;
    }
    if (c >= '0' && c <= '9') {
      if (out.empty() || out.back() != '#') out += '#';
      continue;
    }
    out += c;
  }
  return "compile-error at " + stage + ": " + out;
}

Verdict run_check(const PredicateOptions& p, const Candidate& c) {
  switch (p.kind) {
    case CheckKind::CompileError: return check_compile_error(p, c);
    case CheckKind::Crash: return check_crash(p, c);
    case CheckKind::Accuracy: return check_accuracy(p, c);
    case CheckKind::CpuGpuMismatch: return check_cpu_gpu(p, c);
    case CheckKind::Oracle: return check_oracle(p, c);
  }
  return {};
}

}  // namespace kiln::minify
