// compile-error and crash, and the compile both they and accuracy start from.
#include <regex>

#include "compiler/pipeline/run_region.h"
#include "minifier/output_match.h"
#include "minifier/predicate.h"
#include "minifier/predicate_util.h"

namespace kiln::minify {

CpuCompile compile_cpu(const Graph& g, const std::string& inject_bug, bool fuse) {
  pipeline::RegionOptions ro;
  ro.codegen = pipeline::RegionOptions::Codegen::Machine;
  ro.cpu.use_cache = false;
  ro.cpu.fuse = fuse;
  ro.cpu.inject_bug = inject_bug;
  pipeline::RegionRun run = pipeline::run_region(pipeline::RegionInput::single(g), ro);
  CpuCompile out;
  const pipeline::RegionPart* part = run.parts.empty() ? nullptr : &run.parts.front();
  if (part && part->code) {
    out.code = part->code;
    return out;
  }
  if (part && part->passes.status.ok()) {
    out.stage = "codegen";
    out.error = part->codegen_status.message();
    return out;
  }
  // A pass failed: the stage is the last one the pass manager recorded (the
  // broken pass's own when verification caught it), "input" when none ran.
  // Error signatures keep these names, so a repro's predicate still matches.
  out.stage = "input";
  for (const pipeline::Stage& st : run.stages)
    if (st.outcome != pipeline::Stage::Outcome::Failed) out.stage = st.name;
  out.error = part ? part->passes.status.message() : run.status.message();
  return out;
}

namespace {

bool stage_matches(const std::string& wanted, const std::string& stage) {
  if (wanted.empty() || wanted == stage) return true;
  return wanted == "passes" && stage != "codegen";
}

Verdict compile_failure(const CpuCompile& cc) {
  Verdict v;
  v.outcome = Verdict::Outcome::Fail;
  v.kind = "compile-error";
  v.signature = error_signature(cc.stage, cc.error);
  v.detail = "compile error at " + cc.stage + ": " + cc.error;
  return v;
}

}  // namespace

Verdict check_compile_error(const PredicateOptions& p, const Candidate& c) {
  CpuCompile cc = compile_cpu(c.graph, p.inject_bug);
  if (cc.error.empty()) return {Verdict::Outcome::Pass, "", "", "compiled"};
  bool matches = stage_matches(p.stage, cc.stage);
  if (matches && !p.message_regex.empty()) {
    Expected<bool> m = output_matches(cc.error, p.message_regex);
    if (!m) return {Verdict::Outcome::Invalid, "setup", "", "message pattern: " + m.status().message()};
    matches = *m;
  }
  Verdict v = compile_failure(cc);
  // A compile error the user did not ask about is a different failure: drift.
  if (!matches) v.signature = "unmatched " + v.signature;
  return v;
}

Verdict check_crash(const PredicateOptions& p, const Candidate& c) {
  CpuCompile cc = compile_cpu(c.graph, p.inject_bug);
  if (!cc.error.empty()) return compile_failure(cc);
  // A crash ends this process; the evaluator turns the signal into the verdict.
  Expected<std::vector<Tensor>> out = cc.code->run(c.inputs);
  if (!out) return {Verdict::Outcome::Fail, "run-error", "run-error", out.status().message()};
  return {Verdict::Outcome::Pass, "", "", "ran without crashing"};
}

}  // namespace kiln::minify
