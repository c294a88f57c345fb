#pragma once
// Comparing what a program printed in Kiln with what PyTorch printed for the
// same program (tests/data/<name>/expected.txt, written on the device): the
// output is cut into "== name" sections and compared line by line, word by
// word, numbers within a relative tolerance and everything else exactly.
#include <QFile>
#include <QString>
#include <QStringList>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::test {

inline std::string read_text(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(path));
  return f.readAll().toStdString();
}

// Lines grouped by "== name" headers; lines before the first header are section "".
using Sections = std::vector<std::pair<QString, QStringList>>;

inline Sections sections_of(const std::string& text) {
  Sections s{{QString(), {}}};
  for (const QString& line : QString::fromStdString(text).split('\n', Qt::SkipEmptyParts)) {
    if (line.startsWith("== ")) s.push_back({line.mid(3), {}});
    else s.back().second << line;
  }
  return s;
}

// Word by word: numbers within `rel` relative to max(|expected|, 1e-3), the rest exactly.
// The floor keeps values that are rounding noise around zero (an orthogonal
// matrix's off-diagonal products, ~1e-8) from demanding digits nobody has.
inline bool same_line(const QString& got, const QString& want, double rel) {
  QStringList x = got.split(' ', Qt::SkipEmptyParts), y = want.split(' ', Qt::SkipEmptyParts);
  if (x.size() != y.size()) return false;
  static const QString punct = "[](),:";
  for (int i = 0; i < x.size(); ++i) {
    QString a = x[i], b = y[i];
    if (a == b) continue;
    while (!a.isEmpty() && punct.contains(a.back()) && !b.isEmpty() && a.back() == b.back()) a.chop(1), b.chop(1);
    while (!a.isEmpty() && punct.contains(a.front()) && !b.isEmpty() && a.front() == b.front()) a.remove(0, 1), b.remove(0, 1);
    bool oka = false, okb = false;
    double da = a.toDouble(&oka), db = b.toDouble(&okb);
    if (oka && okb) {
      if (!(std::fabs(da - db) <= rel * std::max(std::fabs(db), 1e-3))) return false;
    } else if (a != b) {
      return false;
    }
  }
  return true;
}

// The "== name" headers of an output, in order (the unnamed first section left out).
inline QStringList section_names(const std::string& text) {
  QStringList names;
  for (auto& s : sections_of(text))
    if (!s.first.isEmpty()) names << s.first;
  return names;
}

// A data-driven QtTest function's rows, one per named section of `want`:
// columns "got" and "want" (QStringList), got's lines for the same name.
inline void add_section_rows(const std::string& got, const std::string& want) {
  QTest::addColumn<QStringList>("got");
  QTest::addColumn<QStringList>("want");
  std::map<QString, QStringList> by_name;
  for (auto& s : sections_of(got)) by_name[s.first] = s.second;
  for (auto& s : sections_of(want))
    if (!s.first.isEmpty()) QTest::newRow(qPrintable(s.first)) << by_name[s.first] << s.second;
}

// A data-driven QtTest function's body for the rows of add_section_rows.
inline QString compare_section(const QStringList& got, const QStringList& want, double rel);
inline void compare_fetched_section(double rel) {
  QFETCH(QStringList, got);
  QFETCH(QStringList, want);
  QVERIFY(!want.isEmpty());
  const QString diff = compare_section(got, want, rel);
  QVERIFY2(diff.isEmpty(), qPrintable(diff));
}

// A program's output has PyTorch's sections, in PyTorch's order, at least `at_least` of them.
inline void expect_same_sections(int exit_code, const std::string& err, const std::string& got,
                                 const std::string& want, qsizetype at_least) {
  QVERIFY2(exit_code == 0, err.c_str());
  const QStringList names = section_names(want);
  QVERIFY(names.size() >= at_least);
  QCOMPARE(section_names(got), names);
}

// Empty when the section's lines agree; else the first differing line, both ways.
inline QString compare_section(const QStringList& got, const QStringList& want, double rel) {
  for (int i = 0; i < std::max(got.size(), want.size()); ++i) {
    QString g = i < got.size() ? got[i] : "<missing>", w = i < want.size() ? want[i] : "<missing>";
    if (!same_line(g, w, rel)) return QString("line %1\n  kiln:    %2\n  pytorch: %3").arg(i + 1).arg(g, w);
  }
  return QString();
}

// `source` with its first `from` replaced by `to`; empty when `from` is absent
// (a program whose seed line moved).
inline std::string replaced_once(std::string source, std::string_view from, std::string_view to) {
  const std::string::size_type at = source.find(from);
  if (at == std::string::npos) return {};
  return source.replace(at, from.size(), to);
}

// The names of `want`'s sections that `got` prints otherwise (sections paired in order).
inline QStringList differing_sections(const std::string& got, const std::string& want, double rel) {
  Sections g = sections_of(got), w = sections_of(want);
  QStringList differing;
  for (size_t i = 0; i < w.size() && i < g.size(); ++i)
    if (!compare_section(g[i].second, w[i].second, rel).isEmpty()) differing << w[i].first;
  return differing;
}

}  // namespace kiln::test
