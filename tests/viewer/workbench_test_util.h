#pragma once
// What the workbench tests share: reference traces, the bundled example, and
// waiting until the workbench has nothing queued or running.
#include <QCoreApplication>
#include <QDir>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QString>
#include <QtTest/QtTest>

#include <string>
#include <vector>

#include "test_support.h"
#include "viewer/code_editor.h"
#include "viewer/minifier_panel.h"
#include "viewer/workbench.h"

namespace kiln::test {

inline std::string trace_dir(const char* name) { return reference_dir() + "/traces/" + name; }
inline QString example() { return QString(KILN_SOURCE_DIR) + "/resources/examples/workbench_demo.py"; }

// Settings and the session workspace of this test only (QStandardPaths'
// test mode, a workspace file of its own under the temporary folder).
inline void isolate_settings(const char* workspace) {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName("kiln-tests");
  qputenv("KILN_WORKSPACE", QDir::temp().filePath(workspace).toUtf8());
}

// The lines a code editor marks (a node's kernel lines).
inline std::vector<int> marked_lines(const viewer::CodeEditor* e) {
  std::vector<int> lines;
  for (const auto& [line, tip] : e->markTooltips()) lines.push_back(line);
  return lines;
}

inline bool settle(viewer::Workbench& w, int ms = 60000) {
  return QTest::qWaitFor([&] { return w.isSettled(); }, ms);
}

// The bundled example opened at 0/0's forward graph, its minifier panel set to
// the accuracy check with relu miscompiled on purpose; null when it did not open.
inline viewer::MinifierPanel* example_ready_to_minify(viewer::Workbench& w) {
  QSignalSpy opened(&w, &viewer::Workbench::sessionOpened);
  w.setPendingSelection("0/0", "aot_forward_graph");
  w.open({example()});
  if (!opened.wait(60000) || !settle(w)) return nullptr;
  viewer::MinifierPanel* m = w.minifierPanel();
  m->setCheck("accuracy");
  m->setInjectBug("relu:accuracy");
  return m;
}

}  // namespace kiln::test
