// Containment: every candidate runs in a child process, so one that
// segfaults, aborts, loops forever or allocates without bound is a verdict,
// never the minifier's end. The misbehaving candidates come from the
// evaluator's test hook (KILN_MINIFY_TEST_HOOK, evaluator.h).
#include <QtTest/QtTest>

#include <chrono>
#include <csignal>
#include <thread>

#include "minifier/isolation.h"
#include "minifier/minify.h"
#include "minify_test_util.h"

using namespace kiln;
using namespace kiln::minify;

namespace {

// relu (miscompiled on purpose) in the middle; c is constant, so the
// constant-inputs strategy proposes an aten.full node: the hooked target.
const char* kGraph = R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 8]", c: "f32[4, 8]"):
        mul: "f32[4, 8]" = torch.ops.aten.mul.Tensor(x, c)
        sigmoid: "f32[4, 8]" = torch.ops.aten.sigmoid.default(mul)
        relu: "f32[4, 8]" = torch.ops.aten.relu.default(mul)
        add: "f32[4, 8]" = torch.ops.aten.add.Tensor(relu, sigmoid)
        return (add,)
)";

Candidate graph_with_constant() {
  Candidate c = test::candidate_of(kGraph);
  c.inputs[1] = Tensor::full({4, 8}, Scalar(2.0), DType::Float32);
  return c;
}

struct HookEnv {
  explicit HookEnv(const char* value) { qputenv("KILN_MINIFY_TEST_HOOK", value); }
  ~HookEnv() { qunsetenv("KILN_MINIFY_TEST_HOOK"); }
};

// Accuracy with the relu bug, constant-inputs tried first: its candidate
// misbehaves and must be rejected; the minifier still ends at relu.
Expected<MinifyResult> minify_past_hook(double timeout_s, int64_t memory_mb = 8192) {
  MinifyOptions o;
  o.predicate.kind = CheckKind::Accuracy;
  o.predicate.inject_bug = "relu:accuracy";
  o.strategies = {"constant-inputs", "truncate", "replace-with-inputs"};
  o.limits.timeout_s = timeout_s;
  o.limits.memory_mb = memory_mb;
  o.jobs = 2;
  return minify::minify(graph_with_constant(), o);
}

}  // namespace

class TestMinifyIsolation : public QObject {
  Q_OBJECT
 private slots:
  void children_report_payload_exit_and_signal() {
    std::vector<ChildJob> jobs = {
        [] { return std::string("hello"); },
        []() -> std::string { ::_exit(7); },
        []() -> std::string { std::raise(SIGSEGV); return ""; },
        []() -> std::string { throw std::runtime_error("thrown"); },
        [] { return std::string(1 << 20, 'x'); },  // more than a pipe buffer
    };
    std::vector<ChildOutcome> out = run_in_children(jobs, Limits{10, 1024}, 3);
    QCOMPARE(out.size(), size_t(5));
    QCOMPARE(int(out[0].end), int(ChildOutcome::End::Exited));
    QCOMPARE(out[0].payload, std::string("hello"));
    QCOMPARE(out[1].exit_code, 7);
    QCOMPARE(int(out[2].end), int(ChildOutcome::End::Signaled));
    QCOMPARE(out[2].signal, SIGSEGV);
    QCOMPARE(out[3].exit_code, kExceptionExitCode);
    QCOMPARE(out[3].payload, std::string("thrown"));
    QCOMPARE(out[4].payload.size(), size_t(1) << 20);
  }

  void a_hang_is_killed_at_the_timeout() {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<ChildOutcome> out =
        run_in_children({[]() -> std::string { for (;;) std::this_thread::sleep_for(std::chrono::seconds(1)); }}, Limits{0.5, 1024}, 1);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QCOMPARE(int(out[0].end), int(ChildOutcome::End::TimedOut));
    QVERIFY2(s < 3, qPrintable(QString::number(s)));
  }

  void crash_check_minifies_towards_the_signal() {
    // sigmoid segfaults (hook): the crash check finds it and keeps SIGSEGV.
    HookEnv hook("segfault:aten::sigmoid.default");
    MinifyOptions o;
    o.predicate.kind = CheckKind::Crash;
    o.predicate.inject_bug = "none";
    o.jobs = 2;
    auto r = minify::minify(test::candidate_of(kGraph), o);
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(r->original.signature, std::string("crash: SIGSEGV"));
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::sigmoid.default"});
  }

  void abort_is_a_crash_of_its_own() {
    HookEnv hook("abort:aten::sigmoid.default");
    MinifyOptions o;
    o.predicate.kind = CheckKind::Crash;
    o.predicate.inject_bug = "none";
    auto r = minify::minify(test::candidate_of(kGraph), o);
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(r->original.signature, std::string("crash: SIGABRT"));
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::sigmoid.default"});
  }

  void segfaulting_candidate_is_contained() {
    HookEnv hook("segfault:aten::full.default");
    auto r = minify_past_hook(30);
    QVERIFY2(r.ok(), r.status().message().c_str());
    QVERIFY(r->stats.crashes >= 1);
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::relu.default"});
  }

  void aborting_candidate_is_contained() {
    HookEnv hook("abort:aten::full.default");
    auto r = minify_past_hook(30);
    QVERIFY2(r.ok(), r.status().message().c_str());
    QVERIFY(r->stats.crashes >= 1);
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::relu.default"});
  }

  void looping_candidate_is_contained() {
    HookEnv hook("hang:aten::full.default");
    QElapsedTimer t;
    t.start();
    auto r = minify_past_hook(1.0);
    QVERIFY2(r.ok(), r.status().message().c_str());
    QVERIFY(r->stats.timeouts >= 1);
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::relu.default"});
    QVERIFY2(t.elapsed() < 20000, qPrintable(QString::number(t.elapsed())));
  }

  void runaway_allocation_is_contained() {
    HookEnv hook("oom:aten::full.default");
    auto r = minify_past_hook(30, 512);
    QVERIFY2(r.ok(), r.status().message().c_str());
    QCOMPARE(test::op_targets(r->result.graph), std::vector<std::string>{"aten::relu.default"});
  }
};

QTEST_GUILESS_MAIN(TestMinifyIsolation)
#include "test_minify_isolation.moc"
