// RegionProgress: run_region's steps placed on a progress bar. A real
// training region (resnet18_train.py's) reports its steps in order through
// load_program, and the bar they make moves forward only, through LLVM's
// optimization and code emission, not in one jump at the end.
#include <QtTest>

#include <string>
#include <vector>

#include "session/region_progress.h"
#include "session/session.h"
#include "test_support.h"

using namespace kiln::session;

class TestRegionProgress : public QObject {
  Q_OBJECT

 private slots:
  void stepsOfATrainingRegionMoveForward() {
    RegionProgress p;
    std::vector<double> at;
    const std::vector<std::pair<std::string, std::string>> steps = {
        {"", "to_aten"},          {"", "aot_joint_graph"},     {"forward", "passes"},   {"forward", "lower"},
        {"forward", "llvm_ir"},   {"forward", "optimize"},     {"forward", "assembly"}, {"forward", "object"},
        {"forward", "link"},      {"forward", "cuda_source"},  {"backward", "passes"},  {"backward", "optimize"},
        {"backward", "assembly"}, {"backward", "cuda_source"}};
    for (const auto& [group, name] : steps) {
      p.step(group, name);
      at.push_back(p.fraction);
    }
    for (size_t i = 1; i < at.size(); ++i) QVERIFY2(at[i] > at[i - 1], qPrintable(QString::number(i)));
    QVERIFY(at.back() < 1);
    QCOMPARE(QString::fromStdString(p.what), QString("backward: generating CUDA source"));
    // The forward half ends where the backward half starts.
    QVERIFY(at[9] < 0.55 && at[10] >= 0.55);
  }

  void anInferenceGraphTakesTheWholeRegion() {
    RegionProgress p;
    p.step("", "passes");
    QCOMPARE(p.fraction, 0.1);
    p.step("", "cuda_source");
    QVERIFY(p.fraction > 0.9);
    p.step("", "passes");  // a step again (Auto lowers twice): never back
    QVERIFY(p.fraction > 0.9);
    p.step("", "something new");
    QCOMPARE(QString::fromStdString(p.what), QString("something new"));
  }

  // Through load_program: many steps between the program's run and the end.
  void aProgramLoadReportsItsSteps() {
    const std::string program = std::string(KILN_SOURCE_DIR) + "/resources/examples/workbench_demo.py";
    std::vector<std::pair<double, std::string>> seen;
    std::string source;
    LoadOptions o;
    o.progress = [&](double f, const std::string& what) { seen.emplace_back(f, what); };
    o.source_ready = [&](const std::string& text) {
      source = text;
      QVERIFY(seen.size() <= 1);  // before the program runs
    };
    auto s = load_program(program, o);
    QVERIFY2(s, s ? "" : s.status().to_string().c_str());
    QCOMPARE(source, (*s)->source_text);
    int steps = 0, llvm = 0;
    for (size_t i = 1; i < seen.size(); ++i) {
      QVERIFY2(seen[i].first >= seen[i - 1].first, seen[i].second.c_str());
      steps += seen[i].first > 0.15 && seen[i].first < 1;
      llvm += seen[i].second.find("optimizing LLVM IR") != std::string::npos;
    }
    QVERIFY2(steps >= 10, qPrintable(QString::number(steps)));
    QVERIFY(llvm >= 1);
  }
};

QTEST_GUILESS_MAIN(TestRegionProgress)
#include "test_region_progress.moc"
