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

  void batched_finds_what_sequential_finds() {
    // Interesting when 3 and 17 are kept and the sum is at least 60.
    auto test = [](const std::vector<size_t>& keep) {
      std::set<size_t> s(keep.begin(), keep.end());
      size_t sum = 0;
      for (size_t i : keep) sum += i;
      return s.count(3) && s.count(17) && sum >= 60;
    };
    std::vector<size_t> sequential = ddmin(40, test);
    for (size_t batch : {1, 2, 3, 8}) {
      int calls = 0;
      size_t largest = 0;
      auto first = [&](const std::vector<std::vector<size_t>>& cands) -> int {
        ++calls;
        largest = std::max(largest, cands.size());
        for (size_t i = 0; i < cands.size(); ++i)
          if (test(cands[i])) return int(i);
        return -1;
      };
      std::vector<size_t> batched = ddmin_batched(40, first, batch);
      QCOMPARE(batched, sequential);
      QVERIFY(calls > 0);
      QVERIFY(largest <= batch && largest >= std::min<size_t>(batch, 2));
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
