// diff_lines (session/text_diff.h): the rows of a side-by-side diff.
#include <QtTest>

#include <string>

#include "session/text_diff.h"

using namespace kiln::session;

namespace {

// One letter per row: = same, ~ changed, - removed, + added.
std::string shape(const TextDiff& d) {
  std::string s;
  for (const DiffRow& r : d.rows) s += "=~-+"[int(r.kind)];
  return s;
}

}  // namespace

class TestTextDiff : public QObject {
  Q_OBJECT
 private slots:
  void identical() {
    TextDiff d = diff_lines("a\nb\nc\n", "a\nb\nc\n");
    QVERIFY(d.identical());
    QCOMPARE(shape(d), std::string("==="));
    QCOMPARE(d.rows[2].left, 3);
    QCOMPARE(d.rows[2].right, 3);
  }

  void added_removed_changed() {
    TextDiff d = diff_lines("a\nb\nc\nd\n", "a\nx\nc\nd\ne\n");
    QCOMPARE(shape(d), std::string("=~==+"));
    QCOMPARE(d.rows[1].left, 2);
    QCOMPARE(d.rows[1].right, 2);
    QCOMPARE(d.rows[4].left, 0);
    QCOMPARE(d.rows[4].right, 5);
    QCOMPARE(d.changed, 1);
    QCOMPARE(d.added, 1);

    d = diff_lines("a\nb\nc\n", "a\nc\n");
    QCOMPARE(shape(d), std::string("=-="));
    QCOMPARE(d.rows[1].left, 2);
    QCOMPARE(d.rows[1].right, 0);
    QCOMPARE(d.rows[2].right, 2);
  }

  void moved_block_and_empty_sides() {
    TextDiff d = diff_lines("x\ny\na\nb\n", "a\nb\nx\ny\n");
    QCOMPARE(d.added + d.removed + d.changed > 0, true);
    // Every line of each side appears exactly once, in order.
    int l = 0, r = 0;
    for (const DiffRow& row : d.rows) {
      if (row.left) QCOMPARE(row.left, ++l);
      if (row.right) QCOMPARE(row.right, ++r);
    }
    QCOMPARE(l, 4);
    QCOMPARE(r, 4);
    QCOMPARE(shape(diff_lines("", "a\nb")), std::string("++"));
    QCOMPARE(shape(diff_lines("a\nb", "")), std::string("--"));
  }

  void past_the_budget_the_middle_is_one_change() {
    std::string a, b;
    for (int i = 0; i < 50; ++i) a += "left " + std::to_string(i) + "\n", b += "right " + std::to_string(i) + "\n";
    TextDiff d = diff_lines("head\n" + a + "tail\n", "head\n" + b + "tail\n", 10);
    QCOMPARE(d.changed, 50);
    QCOMPARE(d.rows.front().kind, DiffRowKind::Same);
    QCOMPARE(d.rows.back().kind, DiffRowKind::Same);
  }

  // Past the budget, lines found once on each side still line up (a forward's code against a backward's).
  void past_the_budget_unique_lines_anchor() {
    std::string a = "forward\n", b = "backward\n";
    for (int i = 0; i < 100; ++i) {
      a += "same " + std::to_string(i) + "\nleft " + std::to_string(i) + "\n";
      b += "same " + std::to_string(i) + "\nright " + std::to_string(i) + "\n";
    }
    TextDiff d = diff_lines(a, b, 10);
    QCOMPARE(d.changed, 101);
    QCOMPARE(d.added + d.removed, 0);
    int same = 0;
    for (const DiffRow& r : d.rows) same += r.kind == DiffRowKind::Same;
    QCOMPARE(same, 100);
    QCOMPARE(d.rows[1].kind, DiffRowKind::Same);
    QCOMPARE(d.rows[1].left, 2);
  }
};

QTEST_MAIN(TestTextDiff)
#include "test_text_diff.moc"
