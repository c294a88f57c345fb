#pragma once
// What the workbench tests share: reference traces, the bundled example, and
// waiting until the workbench has nothing queued or running.
#include <QString>
#include <QtTest/QtTest>

#include <string>

#include "test_support.h"
#include "viewer/workbench.h"

namespace kiln::test {

inline std::string trace_dir(const char* name) { return reference_dir() + "/traces/" + name; }
inline QString example() { return QString(KILN_SOURCE_DIR) + "/resources/examples/workbench_demo.py"; }

inline bool settle(viewer::Workbench& w, int ms = 60000) {
  return QTest::qWaitFor([&] { return w.isSettled(); }, ms);
}

}  // namespace kiln::test
