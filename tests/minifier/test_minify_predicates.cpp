// The predicates, run in this process on small graphs with Kiln's injected
// relu bugs; their JSON form; signatures and drift.
#include <QtTest/QtTest>
#include <QTemporaryDir>

#include <fstream>
#include <iterator>

#include "minifier/minify.h"
#include "minifier/predicate.h"
#include "minifier/repro.h"
#include "minify_test_util.h"

using namespace kiln;
using namespace kiln::minify;

namespace {

const char* kReluGraph = R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 8]"):
        sin: "f32[4, 8]" = torch.ops.aten.sin.default(x)
        relu: "f32[4, 8]" = torch.ops.aten.relu.default(sin)
        return (relu,)
)";

PredicateOptions with(CheckKind k, const std::string& bug) {
  PredicateOptions p;
  p.kind = k;
  p.inject_bug = bug;
  return p;
}

}  // namespace

class TestMinifyPredicates : public QObject {
  Q_OBJECT
 private slots:
  void compile_error_with_stage_and_regex() {
    Candidate c = test::candidate_of(kReluGraph);
    PredicateOptions p = with(CheckKind::CompileError, "relu:compile-error");
    Verdict v = run_check(p, c);
    QVERIFY(v.failed());
    QCOMPARE(v.kind, std::string("compile-error"));
    QVERIFY2(v.signature.rfind("compile-error at codegen: ", 0) == 0, v.signature.c_str());
    QVERIFY(v.detail.find("refuses relu") != std::string::npos);
    p.message_regex = "refuses re[l]u";
    QCOMPARE(run_check(p, c).signature, v.signature);
    p.message_regex = "no such message";
    QVERIFY(run_check(p, c).signature.rfind("unmatched ", 0) == 0);  // a different failure: drift
    p.message_regex.clear();
    p.stage = "passes";
    QVERIFY(run_check(p, c).signature.rfind("unmatched ", 0) == 0);
    QCOMPARE(run_check(with(CheckKind::CompileError, "none"), c).outcome, Verdict::Outcome::Pass);
  }

  void accuracy_against_fp64() {
    Candidate c = test::candidate_of(kReluGraph);
    Verdict bad = run_check(with(CheckKind::Accuracy, "relu:accuracy"), c);
    QVERIFY(bad.failed());
    QCOMPARE(bad.signature, std::string("accuracy"));
    QVERIFY2(bad.detail.find("output 0 (relu)") != std::string::npos, bad.detail.c_str());
    QVERIFY(bad.detail.find("RMSE") != std::string::npos);
    Verdict good = run_check(with(CheckKind::Accuracy, "none"), c);
    QCOMPARE(good.outcome, Verdict::Outcome::Pass);
    // A compile error under the accuracy check is a failure of another kind.
    Verdict other = run_check(with(CheckKind::Accuracy, "relu:compile-error"), c);
    QCOMPARE(other.kind, std::string("compile-error"));
    QVERIFY(!is_interesting(other, bad, false));
    QVERIFY(is_interesting(other, bad, true));
  }

  void accuracy_ignores_non_float_outputs_unless_asked() {
    // The injected bug adds 1 to integer relus too.
    Candidate c = test::candidate_of(R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "i64[16]"):
        relu: "i64[16]" = torch.ops.aten.relu.default(x)
        return (relu,)
)");
    PredicateOptions p = with(CheckKind::Accuracy, "relu:accuracy");
    QCOMPARE(run_check(p, c).outcome, Verdict::Outcome::Pass);
    p.check_non_float = true;
    Verdict v = run_check(p, c);
    QVERIFY(v.failed());
    QVERIFY(v.detail.find("differs") != std::string::npos);
  }

  void invalid_candidates_are_never_interesting() {
    // mm of mismatched shapes: the eager reference itself fails.
    Candidate c = test::candidate_of(kReluGraph);
    c.graph.nodes[1].target = "aten::mm.default";
    c.graph.nodes[1].args.push_back(Arg::node(0));
    Verdict v = run_check(with(CheckKind::Accuracy, "none"), c);
    QCOMPARE(v.outcome, Verdict::Outcome::Invalid);
    QVERIFY(!is_interesting(v, v, true));
  }

  void cpu_gpu_mismatch_says_why_it_cannot_run() {
    Candidate c = test::candidate_of(kReluGraph);
    Verdict v = run_check(with(CheckKind::CpuGpuMismatch, "none"), c);
    if (v.kind != "setup") QSKIP("a GPU is present: this test is for machines without one");
    QVERIFY(v.detail.find("needs a CUDA GPU") != std::string::npos);
    MinifyOptions o;
    o.predicate = with(CheckKind::CpuGpuMismatch, "none");
    auto r = minify::minify(c, o);
    QVERIFY(!r.ok());
    QVERIFY2(r.status().message().find("needs a CUDA GPU") != std::string::npos, r.status().message().c_str());
  }

  void oracle_runs_a_command_on_repro_py() {
    Candidate c = test::candidate_of(kReluGraph);
    PredicateOptions p = with(CheckKind::Oracle, "none");
    // Exit 0 passes; a non-zero exit is the failure (here: "relu is in repro.py").
    p.oracle_command = "grep -q 'aten.relu' {repro}";
    QCOMPARE(run_check(p, c).outcome, Verdict::Outcome::Pass);
    p.oracle_command = "! grep -q 'aten.relu' {repro}";
    Verdict v = run_check(p, c);
    QVERIFY(v.failed());
    QCOMPARE(v.signature, std::string("oracle: exit 1"));
    p.oracle_command = "grep -c 'aten.relu' {repro}; exit 3";
    v = run_check(p, c);
    QVERIFY(v.failed());
    QCOMPARE(v.signature, std::string("oracle: exit 3"));
    p.oracle_command = "cat {repro}";
    p.oracle_match = "torch\\.ops\\.aten\\.relu";
    v = run_check(p, c);
    QVERIFY(v.failed());
    QCOMPARE(v.signature, std::string("oracle: output matches"));
    p.oracle_match = "aten\\.tanh";
    QVERIFY(!run_check(p, c).failed());
  }

  // The same exit code for another reason is another failure: an accuracy
  // failure the original run reported is not the CUDA out-of-memory error a
  // crowded GPU gives a candidate (seen on the H200 with -j 6).
  void oracle_signature_says_what_failed() {
    Candidate c = test::candidate_of(kReluGraph);
    PredicateOptions p = with(CheckKind::Oracle, "none");
    p.oracle_command = "test -f {repro} && echo 'ACCURACY FAILURE: output 0: mismatch'; exit 1";
    QCOMPARE(run_check(p, c).signature, std::string("oracle: exit 1 (accuracy failure)"));
    p.oracle_command = "test -f {repro} && printf 'Traceback (most recent call last):\\n  File x\\nRuntimeError: CUDA error: out of memory\\n'; exit 1";
    QCOMPARE(run_check(p, c).signature, std::string("oracle: exit 1 (RuntimeError)"));
    p.oracle_command = "test -f {repro} && printf 'Traceback (most recent call last):\\n  File x\\n    y()\\ntorch._dynamo.exc.BackendCompilerFailed: boom\\n'; exit 1";
    QCOMPARE(run_check(p, c).signature, std::string("oracle: exit 1 (torch._dynamo.exc.BackendCompilerFailed)"));
  }

  // repro.py names the half that failed; an eager-side failure is not
  // minified unless asked (an Inductor prim eager could not find, seen on
  // the H200, minified 653 ops to 2 and meant nothing).
  void oracle_failure_class_and_eager_refusal() {
    Candidate c = test::candidate_of(kReluGraph);
    PredicateOptions p = with(CheckKind::Oracle, "none");
    p.oracle_command = "test -f {repro} && echo 'KILN_FAILURE_CLASS=eager-exception AttributeError: no prims op'; exit 1";
    QCOMPARE(run_check(p, c).signature, std::string("oracle: exit 1 (eager-exception AttributeError)"));
    MinifyOptions o;
    o.predicate = p;
    auto r = minify::minify(c, o);
    QVERIFY(!r.ok());
    QVERIFY2(r.status().message().find("fails in PyTorch's eager half") != std::string::npos, r.status().message().c_str());
    QVERIFY(r.status().message().find("--allow-eager-failure") != std::string::npos);
    o.predicate.allow_eager_failure = true;
    QVERIFY(minify::minify(c, o).ok());
    p.oracle_command = "test -f {repro} && echo 'KILN_FAILURE_CLASS=compile-error BackendCompilerFailed: boom'; exit 1";
    QCOMPARE(run_check(p, c).signature, std::string("oracle: exit 1 (compile-error BackendCompilerFailed)"));
    p.oracle_command = "test -f {repro} && echo KILN_FAILURE_CLASS=accuracy; echo 'ACCURACY FAILURE: output 0'; exit 1";
    QCOMPARE(run_check(p, c).signature, std::string("oracle: exit 1 (accuracy)"));
    // The script imports Inductor's prims and says which half failed.
    QTemporaryDir tmp;
    const std::string path = tmp.filePath("repro.py").toStdString();
    Repro repro;
    repro.graph = c.graph;
    repro.inputs = c.inputs;
    QVERIFY(write_torch_repro(path, repro, TorchReproOptions{}).ok());
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    QVERIFY(text.find("import torch._inductor.inductor_prims") != std::string::npos);
    QVERIFY(text.find("failure_class(\"eager-exception\", e)") != std::string::npos);
  }

  void json_round_trip() {
    PredicateOptions p = with(CheckKind::Oracle, "relu:accuracy");
    p.stage = "codegen";
    p.message_regex = "a\\\"b";
    p.tolerance = 0.25;
    p.check_non_float = true;
    p.oracle_command = "python {repro}";
    p.oracle_match = "Error";
    p.torch_device = "cuda";
    p.torch_check = "crash";
    p.allow_drift = true;
    std::string signature;
    Expected<PredicateOptions> back = predicate_from_json(predicate_to_json(p, "oracle: exit 1"), &signature);
    QVERIFY2(back.ok(), back.status().message().c_str());
    QCOMPARE(int(back->kind), int(p.kind));
    QCOMPARE(back->stage, p.stage);
    QCOMPARE(back->message_regex, p.message_regex);
    QCOMPARE(back->tolerance, p.tolerance);
    QCOMPARE(back->check_non_float, true);
    QCOMPARE(back->oracle_command, p.oracle_command);
    QCOMPARE(back->oracle_match, p.oracle_match);
    QCOMPARE(back->torch_device, p.torch_device);
    QCOMPARE(back->torch_check, p.torch_check);
    QCOMPARE(back->allow_drift, true);
    QCOMPARE(back->inject_bug, p.inject_bug);
    QCOMPARE(signature, std::string("oracle: exit 1"));
    KILN_EXPECT_OP_ERROR(predicate_from_json("[1]"), "not a JSON object");
    KILN_EXPECT_OP_ERROR(predicate_from_json(R"({"check": "fast"})"), "unknown check 'fast'");
    KILN_EXPECT_OP_ERROR(predicate_from_json(R"({"check": "accuracy", "tolerance": "x"})"), "'tolerance' is not a number");
    QVERIFY(describe(p).find("oracle `python {repro}` matching 'Error'") != std::string::npos);
  }

  void signatures_blank_specifics() {
    QCOMPARE(error_signature("codegen", "node 'relu_12' (#3): bad 42 dims\nstack..."),
             error_signature("codegen", "node 'relu' (#17): bad 7 dims\nother stack"));
    QVERIFY(error_signature("codegen", "x") != error_signature("decompose", "x"));
    Verdict seg{Verdict::Outcome::Fail, "crash", "crash: SIGSEGV", ""}, ill{Verdict::Outcome::Fail, "crash", "crash: SIGILL", ""};
    Verdict hang{Verdict::Outcome::Fail, "timeout", "timeout", ""};
    QVERIFY(is_interesting(seg, seg, false));
    QVERIFY(!is_interesting(ill, seg, false));
    QVERIFY(is_interesting(ill, seg, true));
    QVERIFY(!is_interesting(hang, seg, true));  // contained, never minified towards
  }

};

QTEST_GUILESS_MAIN(TestMinifyPredicates)
#include "test_minify_predicates.moc"
