#include <QtTest/QtTest>

#include <algorithm>
#include <set>

#include "minifier/ddmin.h"

using namespace kiln;

class TestDdmin : public QObject {
  Q_OBJECT
 private slots:
  void finds_the_single_culprit() {
    DdminStats st;
    auto kept = ddmin(22, [](const std::vector<size_t>& keep) {
      return std::find(keep.begin(), keep.end(), 13) != keep.end();
    }, &st);
    QCOMPARE(kept, (std::vector<size_t>{13}));
    QVERIFY(st.tests < 22 * 2);  // far fewer than trying pairs
  }

  void keeps_interacting_pairs() {
    // Failure needs both 3 and 17 (and 17 only fails with 3): 1-minimal result is {3, 17}.
    auto kept = ddmin(40, [](const std::vector<size_t>& keep) {
      std::set<size_t> s(keep.begin(), keep.end());
      return s.count(3) && s.count(17);
    });
    QCOMPARE(kept, (std::vector<size_t>{3, 17}));
  }

  void result_is_one_minimal() {
    // Interesting when the kept sum of indices is >= 50: any single removal must break it.
    auto test = [](const std::vector<size_t>& keep) {
      size_t sum = 0;
      for (size_t i : keep) sum += i;
      return sum >= 50;
    };
    auto kept = ddmin(30, test);
    QVERIFY(test(kept));
    for (size_t i = 0; i < kept.size(); ++i) {
      auto fewer = kept;
      fewer.erase(fewer.begin() + std::ptrdiff_t(i));
      QVERIFY(!test(fewer));
    }
  }

  void cancellation_stops_early() {
    int calls = 0;
    auto kept = ddmin(64, [&](const std::vector<size_t>&) { ++calls; return false; }, nullptr,
                      [&] { return calls >= 3; });
    QCOMPARE(calls, 3);
    QCOMPARE(kept.size(), size_t(64));
  }
};

QTEST_APPLESS_MAIN(TestDdmin)
#include "test_ddmin.moc"
