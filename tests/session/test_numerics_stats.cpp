// Element statistics of the numerics ladder (session/numerics_stats.h): exact
// counts for bool and integer outputs, an error that stays bounded where the
// reference is zero, NaN/Inf mismatches counted as such, the worst elements
// in order with their indices, and the decade histogram's edges.
#include <QtTest>

#include <cmath>
#include <limits>
#include <vector>

#include "core/tensor/tensor.h"
#include "session/numerics_stats.h"

using namespace kiln;
using namespace kiln::session;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

class TestNumericsStats : public QObject {
  Q_OBJECT

 private slots:
  // The user's `le`: one flipped element out of 64 is one mismatch, 1/64 of
  // the tensor, not "rel 1" and nothing more.
  void boolOutputsCountMismatches() {
    std::vector<uint8_t> ref(64, 0), got(64, 0);
    for (int i = 0; i < 64; i += 2) ref[size_t(i)] = got[size_t(i)] = 1;
    got[17] = 1;  // [2, 1] in a 4x16 tensor
    Tensor r = Tensor::from_vector(ref, {4, 16}).to(DType::Bool), g = Tensor::from_vector(got, {4, 16}).to(DType::Bool);
    TensorErrors e = compare_tensors(g, r, 1e-4);
    QVERIFY(e.measured);
    QVERIFY(e.exact);
    QCOMPARE(e.elements, int64_t(64));
    QCOMPARE(e.over, int64_t(1));
    QCOMPARE(e.share(), 1.0 / 64);
    QCOMPARE(e.non_finite, int64_t(0));
    QCOMPARE(e.worst.size(), size_t(1));
    QCOMPARE(e.worst[0].index, (std::vector<int64_t>{1, 1}));
    QCOMPARE(e.worst[0].reference, 0.0);
    QCOMPARE(e.worst[0].value, 1.0);
    QCOMPARE(e.histogram.counts[ErrorHistogram::kEqual], int64_t(63));
  }

  // Integers: any difference is a mismatch, however small next to the scale.
  void integerOutputsAreExact() {
    std::vector<int64_t> ref = {1000000, 5, 7, 9}, got = {1000000, 6, 7, 9};
    TensorErrors e = compare_tensors(Tensor::from_vector(got, {4}), Tensor::from_vector(ref, {4}), 1e-4);
    QVERIFY(e.exact);
    QCOMPARE(e.over, int64_t(1));
    QCOMPARE(e.max_abs, 1.0);
    QVERIFY(e.max_error < 1e-4);  // 1 in 1e6: a float would call it noise
    QCOMPARE(e.worst[0].index, (std::vector<int64_t>{1}));
  }

  // relu of a reference that is zero where Kiln is not: the error is relative
  // to the tensor's scale, never 1e+30; noise next to zeros stays under.
  void floatErrorsAtZeroStayBounded() {
    std::vector<float> ref = {0, 0, 0, 0}, got = {0, 0.5f, 0, 0};
    TensorErrors e = compare_tensors(Tensor::from_vector(got, {4}), Tensor::from_vector(ref, {4}), 1e-4);
    QVERIFY(!e.exact);
    QCOMPARE(e.scale, 0.5);
    QCOMPARE(e.max_error, 1.0);
    QCOMPARE(e.over, int64_t(1));
    QCOMPARE(e.histogram.counts[ErrorHistogram::kAbove], int64_t(1));

    // A value of 1e-9 where the reference is 0, in a tensor of scale 1: noise, 1e-9.
    std::vector<double> r2 = {1, -1, 0, 0.5}, g2 = {1, -1, 1e-9, 0.5 + 2e-3};
    e = compare_elements(g2, r2, {2, 2}, false, 1e-4);
    QCOMPARE(e.over, int64_t(1));  // only the 2e-3
    QCOMPARE(e.share(), 0.25);
    QCOMPARE(e.worst.size(), size_t(2));
    QCOMPARE(e.worst[0].index, (std::vector<int64_t>{1, 1}));
    QVERIFY(qFuzzyCompare(e.worst[0].error, 2e-3));
    QCOMPARE(e.worst[1].index, (std::vector<int64_t>{1, 0}));
    QVERIFY(qFuzzyCompare(e.worst[1].error, 1e-9));
    QCOMPARE(e.histogram.counts[ErrorHistogram::kFirstDecade + 1], int64_t(1));  // [1e-9, 1e-8)
    QCOMPARE(e.histogram.counts[ErrorHistogram::kFirstDecade + 7], int64_t(1));  // [1e-3, 1e-2)
    QCOMPARE(e.histogram.counts[ErrorHistogram::kEqual], int64_t(2));

    // All zeros on both sides: nothing differs, nothing divides by zero.
    e = compare_elements(std::vector<double>{0, 0}, std::vector<double>{0, 0}, {2}, false, 1e-4);
    QCOMPARE(e.max_error, 0.0);
    QCOMPARE(e.over, int64_t(0));
    QCOMPARE(e.histogram.counts[ErrorHistogram::kEqual], int64_t(2));
    QVERIFY(e.worst.empty());
  }

  // NaN where the reference is finite (and the other way round), an Inf of
  // the wrong sign: over, infinite error, first among the worst; a NaN or Inf
  // both sides have is equal.
  void nanAndInfAreMismatchesUnlessBothHaveThem() {
    std::vector<double> ref = {1, 2, kNaN, kInf, -kInf, 3, kNaN, kInf};
    std::vector<double> got = {1, kNaN, 5, kInf, kInf, 3.5, kNaN, 7};
    TensorErrors e = compare_elements(got, ref, {8}, false, 1e-4);
    QCOMPARE(e.non_finite, int64_t(4));  // [1], [2], [4], [7]
    QCOMPARE(e.over, int64_t(5));        // and the 3.5
    QCOMPARE(e.max_error, kInf);
    QCOMPARE(e.max_abs, kInf);
    QCOMPARE(e.scale, 7.0);  // finite values only
    QCOMPARE(e.histogram.counts[ErrorHistogram::kNonFinite], int64_t(4));
    QCOMPARE(e.histogram.counts[ErrorHistogram::kEqual], int64_t(3));  // [0], [3], [6]
    QCOMPARE(e.worst.size(), size_t(5));
    for (int i = 0; i < 4; ++i) QCOMPARE(e.worst[size_t(i)].error, kInf);
    QCOMPARE(e.worst[0].index, (std::vector<int64_t>{1}));
    QVERIFY(std::isnan(e.worst[0].value));
    QCOMPARE(e.worst[0].reference, 2.0);
    QCOMPARE(e.worst[1].index, (std::vector<int64_t>{2}));
    QVERIFY(std::isnan(e.worst[1].reference));
    QCOMPARE(e.worst[4].index, (std::vector<int64_t>{5}));
  }

  // The k worst of many, largest first, ties in index order; indices in
  // three dimensions.
  void worstElementsInOrder() {
    const std::vector<int64_t> sizes = {3, 4, 5};
    std::vector<double> ref(60), got(60);
    for (int i = 0; i < 60; ++i) ref[size_t(i)] = got[size_t(i)] = 1 + i % 7;
    // Errors i * 1e-3 at i = 10 .. 59 of 60; two ties at the top.
    for (int i = 10; i < 60; ++i) got[size_t(i)] += double(i) * 1e-3;
    got[3] += 59e-3;
    TensorErrors e = compare_elements(got, ref, sizes, false, 1e-4, 4);
    QCOMPARE(e.worst.size(), size_t(4));
    QCOMPARE(e.worst[0].index, (std::vector<int64_t>{0, 0, 3}));   // 3: 59e-3, earlier than 59
    QCOMPARE(e.worst[1].index, (std::vector<int64_t>{2, 3, 4}));   // 59
    QCOMPARE(e.worst[2].index, (std::vector<int64_t>{2, 3, 3}));   // 58
    QCOMPARE(e.worst[3].index, (std::vector<int64_t>{2, 3, 2}));   // 57
    for (size_t i = 1; i < e.worst.size(); ++i) QVERIFY(e.worst[i - 1].error >= e.worst[i].error);
    QCOMPARE(e.over, int64_t(51));
    QCOMPARE(e.elements, int64_t(60));
  }

  // Bucket edges are the decades themselves: 1e-4 belongs to [1e-4, 1e-3).
  void histogramBucketEdges() {
    QCOMPARE(ErrorHistogram::bucket_of(0), ErrorHistogram::kEqual);
    QCOMPARE(ErrorHistogram::bucket_of(1e-12), ErrorHistogram::kBelow);
    QCOMPARE(ErrorHistogram::bucket_of(1e-10), ErrorHistogram::kFirstDecade);
    QCOMPARE(ErrorHistogram::bucket_of(1e-4), ErrorHistogram::kFirstDecade + 6);
    QCOMPARE(ErrorHistogram::bucket_of(9.99e-4), ErrorHistogram::kFirstDecade + 6);
    QCOMPARE(ErrorHistogram::bucket_of(0.5), ErrorHistogram::kFirstDecade + 9);
    QCOMPARE(ErrorHistogram::bucket_of(1), ErrorHistogram::kAbove);
    QCOMPARE(ErrorHistogram::bucket_of(2), ErrorHistogram::kAbove);
    QCOMPARE(ErrorHistogram::bucket_of(kInf), ErrorHistogram::kNonFinite);
    QCOMPARE(ErrorHistogram::label(ErrorHistogram::kFirstDecade + 6), std::string("1e-4"));
    QCOMPARE(ErrorHistogram::lower_edge(ErrorHistogram::kFirstDecade + 6), 1e-4);
    int64_t total = 0;
    std::vector<double> ref(1000), got(1000);
    for (int i = 0; i < 1000; ++i) {
      ref[size_t(i)] = 1;
      got[size_t(i)] = 1 + std::pow(10.0, -12 + 12.0 * i / 1000);
    }
    TensorErrors e = compare_elements(got, ref, {1000}, false, 1e-4);
    for (int64_t c : e.histogram.counts) total += c;
    QCOMPARE(total, int64_t(1000));
  }

  // Different shapes are not compared.
  void shapeMismatchIsNotMeasured() {
    TensorErrors e = compare_tensors(Tensor::from_vector(std::vector<float>{1, 2}, {2}),
                                     Tensor::from_vector(std::vector<float>{1, 2}, {1, 2}), 1e-4);
    QVERIFY(!e.measured);
  }
};

QTEST_GUILESS_MAIN(TestNumericsStats)
#include "test_numerics_stats.moc"
