// The "Ranks and timeline" panel and the rank level of the session tree,
// offscreen: a folder of our own rank logs (rank 1 misses the cache where the
// others hit, rank 3 wrote nothing, one file is not a log) opens with a row
// per rank, the rank comparison names rank 1 and selects its compile on a
// double-click, the timeline draws a band per rank and selects a compile on a
// click. The models pass QAbstractItemModelTester.
#include "workbench_test_util.h"

#include <QAbstractItemModelTester>
#include <QTemporaryDir>
#include <QTreeView>

#include <fstream>

#include "core/trace_log_util.h"
#include "core/trace/reader.h"
#include "viewer/session_model.h"
#include "viewer/trace_panel.h"

using namespace kiln;
using namespace kiln::viewer;

namespace {

void write_run(const std::string& dir) {
  test::RankLog hit;
  hit.cache = {"hit", "hit"};
  hit.chromium = true;
  test::RankLog miss = hit;
  miss.cache = {"hit", "miss"};
  std::ofstream(dir + "/dedicated_log_torch_trace_rank_0_a.log") << test::rank_log(hit);
  std::ofstream(dir + "/dedicated_log_torch_trace_rank_1_b.log") << test::rank_log(miss);
  std::ofstream(dir + "/dedicated_log_torch_trace_rank_2_c.log") << test::rank_log(hit);
  std::ofstream(dir + "/dedicated_log_torch_trace_rank_4_d.log") << std::string("\x01\x02 not a log at all\n");
}

QModelIndex row_named(const QAbstractItemModel& m, const QString& what, const QModelIndex& parent = {}) {
  for (int r = 0; r < m.rowCount(parent); ++r)
    if (m.index(r, 0, parent).data().toString() == what) return m.index(r, 0, parent);
  return {};
}

}  // namespace

class TestTracePanel : public QObject {
  Q_OBJECT
 private slots:
  void models_and_timeline_alone() {
    QTemporaryDir tmp;
    write_run(tmp.path().toStdString());
    auto t = trace::open_trace(tmp.path().toStdString());
    QVERIFY2(t.ok(), t.status().to_string().c_str());
    RankReportModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setReport(trace::rank_report(*t));
    QVERIFY(row_named(model, "missing ranks").isValid());
    const QModelIndex cache = row_named(model, "cache");
    QVERIFY(cache.isValid());
    QVERIFY(model.data(cache, RankReportModel::DivergesRole).toBool());
    QCOMPARE(model.rowCount(cache), 3);  // ranks 0 and 2; rank 1; the file that is not a log
    const QModelIndex first = row_named(model, "first divergence");
    QVERIFY(first.isValid());
    // The file that is not a log compiled nothing: it leaves the others at once.
    QVERIFY(model.data(first, Qt::DisplayRole).isValid());
    const QModelIndex rank1 = row_named(model, "rank 1", first);
    QVERIFY(rank1.isValid());
    QCOMPARE(model.data(rank1, RankReportModel::CompileRole).toString(), QString("r1:0/1"));
    QVERIFY(model.index(rank1.row(), RankReportModel::Detail, first).data().toString().startsWith("cache"));
    model.clear();
    QCOMPARE(model.rowCount(), 0);

    TimelineView view;
    view.resize(800, 200);
    QSignalSpy clicked(&view, &TimelineView::compileClicked);
    view.setSpans(trace::timeline_spans(*t));
    QCOMPARE(view.spans().size(), size_t(6));  // two phases on each of three ranks
    int second_of_rank_1 = -1;
    for (int i = 0; i < int(view.spans().size()); ++i)
      if (view.spans()[size_t(i)].rank == 1 && view.spans()[size_t(i)].compile == "r1:0/1") second_of_rank_1 = i;
    QVERIFY(second_of_rank_1 >= 0);
    const QRect r = view.spanRect(second_of_rank_1);
    QVERIFY(r.width() > 2);
    QCOMPARE(view.spanAt(r.center()), second_of_rank_1);
    QTest::mouseClick(&view, Qt::LeftButton, {}, r.center());
    QCOMPARE(clicked.count(), 1);
    QCOMPARE(clicked.front().front().toString(), QString("r1:0/1"));
    const QImage img = view.grab().toImage();
    QVERIFY(img.pixel(r.center()) != img.pixel(QPoint(view.width() - 2, view.height() - 2)));
  }

  void workbench_rank_level_and_panel() {
    QTemporaryDir tmp;
    write_run(tmp.path().toStdString());
    Workbench w;
    w.show();
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({tmp.path()});
    QVERIFY(opened.wait(60000));
    QVERIFY2(test::settle(w), qPrintable(w.busyReason()));

    SessionModel* m = w.sessionModel();
    QAbstractItemModelTester tester(m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const QModelIndex entry = m->index(0, 0);
    QStringList ranks;
    for (int r = 0; r < m->rowCount(entry); ++r) ranks << m->index(r, 0, entry).data().toString();
    QCOMPARE(ranks, QStringList({"rank 0", "rank 1", "rank 2"}));
    const QModelIndex rank1 = m->index(1, 0, entry);
    QCOMPARE(m->ref(rank1).level, SessionModel::Level::Rank);
    QCOMPARE(m->index(1, SessionModel::Detail, entry).data().toString(), QString("2 compiles"));
    const QModelIndex frame = m->index(0, 0, rank1);
    QCOMPARE(frame.data().toString(), QString("frame 0"));  // without the rank's prefix
    QCOMPARE(m->rowCount(frame), 2);

    TracePanel* panel = w.tracePanel();
    QVERIFY(w.showPanel("ranks"));
    QVERIFY2(panel->rankSummary().contains("diverge"), qPrintable(panel->rankSummary()));
    const QModelIndex first = row_named(*panel->rankModel(), "first divergence");
    QVERIFY(first.isValid());
    const QModelIndex rank1_row = row_named(*panel->rankModel(), "rank 1", first);
    QVERIFY(rank1_row.isValid());
    emit panel->rankTree()->doubleClicked(rank1_row);
    QVERIFY(w.currentCompile());
    QCOMPARE(QString::fromStdString(w.currentCompile()->id), QString("r1:0/1"));

    QVERIFY(w.showPanel("timeline"));
    QCOMPARE(panel->currentIndex(), 1);
    QCOMPARE(panel->timeline()->spans().size(), size_t(6));
    const QString shot = qEnvironmentVariable("KILN_SCREENSHOT_DIR");
    if (!shot.isEmpty()) {
      QVERIFY(w.showPanel("ranks"));
      QVERIFY(w.grab().save(shot + "/workbench_ranks.png"));
      QVERIFY(w.showPanel("timeline"));
      QVERIFY(w.grab().save(shot + "/workbench_timeline.png"));
    }
  }

  // A program has no ranks: the panel says why it is empty.
  void program_clears_the_panel() {
    Workbench w;
    QSignalSpy opened(&w, &Workbench::sessionOpened);
    w.open({test::example()});
    QVERIFY(opened.wait(60000));
    QVERIFY(test::settle(w));
    QCOMPARE(w.tracePanel()->rankModel()->rowCount(), 0);
    QVERIFY(w.tracePanel()->rankSummary().contains("Kiln program"));
  }
};

QTEST_MAIN(TestTracePanel)
#include "test_trace_panel.moc"
