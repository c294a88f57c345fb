#pragma once
// Shared by the QtTest cases: where the reference data is, and tensor helpers.
#include <QtTest/QtTest>

#include <cmath>
#include <string>
#include <vector>

#include "core/ops/registry.h"
#include "core/tensor/tensor.h"

namespace kiln::test {

// KILN_REFERENCE_DIR, else ../shared/reference beside the checkout. Fails the
// calling test loudly when the folder is missing: a missing corpus is never a pass.
inline std::string reference_dir() {
  QByteArray env = qgetenv("KILN_REFERENCE_DIR");
  std::string dir = env.isEmpty() ? std::string(KILN_DEFAULT_REFERENCE_DIR) : env.toStdString();
  if (!QFileInfo(QString::fromStdString(dir + "/README.md")).exists())
    qFatal("reference data not found at '%s': set KILN_REFERENCE_DIR", dir.c_str());
  return dir;
}

// Element values as doubles, in row-major order, whatever the layout and dtype.
inline std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data<double>();
  return std::vector<double>(p, p + c.numel());
}

// kiln-cli run as a child process; a missing binary or a hang fails the test.
struct CliRun {
  int code = -1;
  QByteArray out, err;
};
inline CliRun run_cli(const QStringList& args, int timeout_ms = 300000, const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QString exe = QString::fromUtf8(KILN_CLI_PATH);
  if (!QFileInfo::exists(exe)) qFatal("kiln-cli not built at %s", qPrintable(exe));
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(exe, args);
  if (!p.waitForFinished(timeout_ms)) qFatal("kiln-cli %s did not finish", qPrintable(args.join(' ')));
  return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

// Two printed lines, word by word: numbers within `rel` relative, the rest exactly.
inline bool same_printed_line(const QString& a, const QString& b, double rel = 1e-4) {
  QStringList x = a.split(' ', Qt::SkipEmptyParts), y = b.split(' ', Qt::SkipEmptyParts);
  if (x.size() != y.size()) return false;
  for (int i = 0; i < x.size(); ++i) {
    static const QString punct = "[](),:";
    QString px = x[i], py = y[i];
    while (!px.isEmpty() && punct.contains(px.back()) && !py.isEmpty() && px.back() == py.back()) px.chop(1), py.chop(1);
    while (!px.isEmpty() && punct.contains(px.front()) && !py.isEmpty() && px.front() == py.front()) px.remove(0, 1), py.remove(0, 1);
    bool okx = false, oky = false;
    double dx = px.toDouble(&okx), dy = py.toDouble(&oky);
    if (okx && oky) {
      if (std::fabs(dx - dy) > rel * std::max(std::fabs(dy), 1e-12)) return false;
    } else if (px != py) {
      return false;
    }
  }
  return true;
}

inline Value ints(const std::vector<int64_t>& v) { return Value::int_list(v); }

inline Tensor arange_f32(Shape sizes, float start = 0.f, float step = 1.f) {
  std::vector<float> v(size_t(shape_numel(sizes)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * float(i);
  return Tensor::from_vector(v, std::move(sizes));
}

// Calls an op and fails the test (with the op's message) when it errors.
inline ValueList call(std::string_view op, const ValueList& args, const KwargList& kwargs = {}) {
  auto r = call_op(op, args, kwargs);
  if (!r) qFatal("%s failed: %s", std::string(op).c_str(), r.status().message().c_str());
  return *r;
}
inline Tensor call1(std::string_view op, const ValueList& args, const KwargList& kwargs = {}) {
  return call(op, args, kwargs).at(0).to_tensor();
}

}  // namespace kiln::test

#define KILN_COMPARE_VALUES(tensor, ...)                                            \
  do {                                                                              \
    std::vector<double> got_ = ::kiln::test::values(tensor);                        \
    std::vector<double> want_ = __VA_ARGS__;                                        \
    QCOMPARE(got_.size(), want_.size());                                            \
    for (size_t i_ = 0; i_ < got_.size(); ++i_)                                     \
      if (!(got_[i_] == want_[i_] ||                                                \
            std::abs(got_[i_] - want_[i_]) <= 1e-5 + 1e-5 * std::abs(want_[i_]) ||  \
            (std::isnan(got_[i_]) && std::isnan(want_[i_]))))                       \
        QFAIL(qPrintable(QString("element %1: got %2, want %3")                      \
                             .arg(i_).arg(got_[i_], 0, 'g', 10).arg(want_[i_], 0, 'g', 10))); \
  } while (0)

// `expected` (an Expected<...>) must be an error whose message contains `needle`.
#define KILN_EXPECT_OP_ERROR(expected, needle)                                   \
  do {                                                                           \
    const auto& r_ = (expected);                                                 \
    QVERIFY2(!r_.ok(), "expected an error");                                     \
    QVERIFY2(r_.status().message().find(needle) != std::string::npos,           \
             qPrintable(QString::fromStdString(r_.status().message())));         \
  } while (0)
