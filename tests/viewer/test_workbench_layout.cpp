// The workbench's dock layout: the side docks keep their share of the window
// when it is shrunk and restored, a separator dragged by hand sets a new
// share, and View > Reset layout undoes stray drags (a dock floated, moved
// to another side, closed).
#include <QAction>
#include <QDockWidget>
#include <QMenuBar>
#include <QStyle>
#include <QtTest/QtTest>

#include "test_support.h"
#include "workbench_test_util.h"
#include "viewer/workbench.h"

using namespace kiln;
using namespace kiln::viewer;

namespace {

QDockWidget* dock(Workbench& w, const char* name) { return w.findChild<QDockWidget*>(name); }

QAction* menu_action(Workbench& w, const QString& text) {
  for (QAction* menu : w.menuBar()->actions())
    if (menu->menu())
      for (QAction* a : menu->menu()->actions())
        if (a->text().remove('&') == text) return a;
  return nullptr;
}

}  // namespace

class TestWorkbenchLayout : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName("kiln-tests");
  }

  // The user's report: shrink the window, restore it, and the session tree is 60 px wide.
  void shrinkingAndRestoringKeepsTheDocksShare() {
    Workbench w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QDockWidget* session = dock(w, "session");
    QDockWidget* source = dock(w, "source");
    QVERIFY(session && source);
    QTRY_VERIFY(session->width() > 300);
    const int session_width = session->width(), source_width = source->width();
    w.resize(480, 360);
    QTRY_VERIFY_WITH_TIMEOUT(session->width() < session_width / 2, 10000);
    w.resize(1600, 1000);
    QTRY_VERIFY_WITH_TIMEOUT(w.width() == 1600, 10000);
    QTRY_VERIFY2_WITH_TIMEOUT(std::abs(session->width() - session_width) < 30,
                              qPrintable(QString("%1 px, was %2").arg(session->width()).arg(session_width)), 10000);
    QTRY_VERIFY2_WITH_TIMEOUT(std::abs(source->width() - source_width) < 30,
                              qPrintable(QString("%1 px, was %2").arg(source->width()).arg(source_width)), 10000);
  }

  // A separator dragged by hand: the new width is the one kept through a shrink.
  void aDraggedSeparatorSetsTheShare() {
    Workbench w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QDockWidget* session = dock(w, "session");
    QTRY_VERIFY(session->width() > 300);
    const int before = session->width();
    // The separator is the gap just right of the session dock.
    const int extent = w.style()->pixelMetric(QStyle::PM_DockWidgetSeparatorExtent, nullptr, &w);
    const QPoint from(session->geometry().right() + 1 + extent / 2, session->geometry().center().y());
    QVERIFY(w.childAt(from) == nullptr);
    QTest::mousePress(&w, Qt::LeftButton, Qt::NoModifier, from);
    QTest::mouseMove(&w, from - QPoint(50, 0));
    QTest::qWait(50);  // the layout applies a separator move on a zero timer
    QTest::mouseMove(&w, from - QPoint(150, 0));
    QTest::qWait(50);
    QTest::mouseRelease(&w, Qt::LeftButton, Qt::NoModifier, from - QPoint(150, 0));
    QTRY_VERIFY_WITH_TIMEOUT(session->width() < before - 100, 10000);
    QTest::qWait(100);  // the user lets go before resizing the window
    const int dragged = session->width();
    w.resize(480, 360);
    QTRY_VERIFY_WITH_TIMEOUT(session->width() < dragged / 2, 10000);
    w.resize(1600, 1000);
    QTRY_VERIFY2_WITH_TIMEOUT(std::abs(session->width() - dragged) < 30,
                              qPrintable(QString("%1 px, dragged to %2").arg(session->width()).arg(dragged)), 10000);
  }

  // View > Reset layout: every dock back where it started, shown, at its first size.
  void resetLayoutUndoesStrayDrags() {
    Workbench w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QDockWidget* session = dock(w, "session");
    QDockWidget* numerics = dock(w, "numerics");
    QDockWidget* guards = dock(w, "guards");
    QDockWidget* source = dock(w, "source");
    QTRY_VERIFY(session->width() > 300);
    const int session_width = session->width();
    const QList<QDockWidget*> bottom_tabs = w.tabifiedDockWidgets(guards);
    w.addDockWidget(Qt::RightDockWidgetArea, session);  // dragged to the other side
    source->setFloating(true);
    numerics->close();
    QTRY_VERIFY(!numerics->isVisible());
    QAction* reset = menu_action(w, "Reset layout");
    QVERIFY(reset);
    reset->trigger();
    QTRY_VERIFY(session->isVisible() && source->isVisible());
    QCOMPARE(w.dockWidgetArea(session), Qt::LeftDockWidgetArea);
    QVERIFY(!source->isFloating());
    QCOMPARE(w.dockWidgetArea(source), Qt::RightDockWidgetArea);
    QCOMPARE(w.dockWidgetArea(numerics), Qt::BottomDockWidgetArea);
    QVERIFY(w.tabifiedDockWidgets(guards).contains(numerics));
    QCOMPARE(w.tabifiedDockWidgets(guards).size(), bottom_tabs.size());
    QVERIFY(guards->isVisible());  // the first tab raised again
    QTRY_VERIFY2_WITH_TIMEOUT(std::abs(session->width() - session_width) < 30,
                              qPrintable(QString("%1 px, was %2").arg(session->width()).arg(session_width)), 10000);
  }
};

QTEST_MAIN(TestWorkbenchLayout)
#include "test_workbench_layout.moc"
