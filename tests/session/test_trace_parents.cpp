// A dump's stages chain by their role in PyTorch's pipeline, whatever the
// version names them (session_trace.cpp trace_parent): the stepper's "diff
// against the previous stage" and the provenance links follow this chain.
// Our own training log with the 2.8-era names: before_/after_ pairs, the
// post-grad graphs of the forward and the backward under one compile id.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "core/trace_log_util.h"
#include "session/session.h"

using namespace kiln;
using namespace kiln::session;

class TestTraceParents : public QObject {
  Q_OBJECT
 private slots:
  void chain_by_role() {
    const std::string at = test::compile_ids(0, 0);
    const std::string g = test::kPostGraph;
    std::string log = test::log_record("{\"dynamo_start\": {\"stack\": []}, " + at + "}") +
                      test::log_record_with_payload("dynamo_output_graph", "{}", g, at);
    for (const char* name : {"before_pre_grad_graph", "after_pre_grad_graph"}) log += test::artifact_record(name, "string", g, at);
    for (const char* tag : {"aot_joint_graph", "aot_forward_graph", "aot_backward_graph"}) log += test::log_record_with_payload(tag, "{}", g, at);
    for (int pass = 0; pass < 2; ++pass)
      for (const char* name : {"fx_graph_runnable", "before_post_grad_graph", "after_post_grad_graph"})
        log += test::artifact_record(name, "string", g, at);
    QTemporaryDir tmp;
    const std::string path = tmp.path().toStdString() + "/train.log";
    std::ofstream(path) << log;
    LoadOptions o;
    o.kiln_stages = false;
    auto s = load_trace(path, o);
    QVERIFY2(s.ok(), s.status().to_string().c_str());
    const SessionCompile& c = (*s)->compiles.front();
    auto parent = [&](const char* stage) -> std::string {
      const SessionStage* st = c.stage(stage);
      if (!st) qFatal("no stage %s", stage);
      return st->parent < 0 ? std::string("-") : c.stages[size_t(st->parent)].name;
    };
    QCOMPARE(parent("dynamo_output_graph"), std::string("-"));
    QCOMPARE(parent("before_pre_grad_graph"), std::string("dynamo_output_graph"));
    QCOMPARE(parent("after_pre_grad_graph"), std::string("before_pre_grad_graph"));
    QCOMPARE(parent("aot_joint_graph"), std::string("after_pre_grad_graph"));
    QCOMPARE(parent("aot_forward_graph"), std::string("aot_joint_graph"));
    QCOMPARE(parent("aot_backward_graph"), std::string("aot_joint_graph"));
    QCOMPARE(parent("fx_graph_runnable"), std::string("aot_forward_graph"));  // the forward's Inductor compile
    QCOMPARE(parent("before_post_grad_graph"), std::string("fx_graph_runnable"));
    QCOMPARE(parent("after_post_grad_graph"), std::string("before_post_grad_graph"));
    QCOMPARE(parent("fx_graph_runnable#2"), std::string("aot_backward_graph"));  // the backward's
    QCOMPARE(parent("before_post_grad_graph#2"), std::string("fx_graph_runnable#2"));
    QCOMPARE(parent("after_post_grad_graph#2"), std::string("before_post_grad_graph#2"));
  }
};

QTEST_GUILESS_MAIN(TestTraceParents)
#include "test_trace_parents.moc"
