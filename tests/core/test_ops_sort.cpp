// Sorting ops. Tie orders (the indices) were recorded from PyTorch 2.11 on
// the CPU: sort (unstable), topk and kthvalue must reproduce them exactly.
#include "test_support.h"

#include <cmath>

#include "core/ops/kernel_util.h"

using namespace kiln;
using kiln::test::arange_f32;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::values;

namespace {
std::vector<int64_t> ints_of(const Tensor& t) {
  std::vector<int64_t> out;
  for (double v : values(t)) out.push_back(int64_t(v));
  return out;
}
// sum(i * v[i]) over the row-major values: compares long index vectors.
int64_t checksum(const Tensor& t) {
  std::vector<double> v = values(t);
  int64_t s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += int64_t(i) * int64_t(v[i]);
  return s;
}
Tensor pattern(int64_t n, int64_t mul, int64_t mod, Shape shape = {}) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(float((i * mul) % mod));
  if (shape.empty()) shape = {n};
  return Tensor::from_vector(v, shape);
}
}  // namespace

class TestOpsSort : public QObject {
  Q_OBJECT
 private slots:
  void sort_basic() {
    Tensor x = Tensor::from_vector<float>({3, NAN, -1, INFINITY, NAN}, {5});
    ValueList r = call("aten::sort", {x, 0, true});
    std::vector<double> v = values(r[0].to_tensor());
    QVERIFY(std::isnan(v[0]) && std::isnan(v[1]));  // NaN sorts as the largest
    QCOMPARE(v[2], double(INFINITY));
    QCOMPARE(ints_of(r[1].to_tensor()), (std::vector<int64_t>{1, 4, 3, 0, 2}));
    ValueList a = call("aten::sort", {x});
    QCOMPARE(ints_of(a[1].to_tensor()), (std::vector<int64_t>{2, 0, 3, 1, 4}));
    // Output strides follow the input's dense layout.
    Tensor t = arange_f32({3, 4}).t();
    ValueList s = call("aten::sort", {t, 0, true});
    QCOMPARE(s[0].to_tensor().strides(), (Shape{1, 4}));
    KILN_COMPARE_VALUES(s[0].to_tensor(), {3, 7, 11, 2, 6, 10, 1, 5, 9, 0, 4, 8});
    ValueList z = call("aten::sort", {Tensor::scalar_tensor(2.0, DType::Float32)});
    QCOMPARE(z[1].to_tensor().dim(), int64_t(0));
    QCOMPARE(values(z[1].to_tensor())[0], 0.0);
    KILN_EXPECT_OP_ERROR(call_op("aten::sort", {arange_f32({3}), 1}), "Dimension out of range");
    auto m = call_meta("aten::sort", {Tensor::meta({2, 3}, DType::Float16)});
    QVERIFY(m.ok());
    QCOMPARE((*m)[1].to_tensor().dtype(), DType::Int64);
  }

  void sort_ties_match_pytorch() {
    std::vector<int64_t> alt;
    for (int64_t i = 0; i < 40; ++i) alt.push_back(i % 2 == 0 ? 1 : 0);
    Tensor a = Tensor::from_vector(alt, {40});
    QCOMPARE(ints_of(call("aten::sort", {a})[1].to_tensor()),
             (std::vector<int64_t>{1, 39, 37, 35, 33, 31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 3, 5, 7, 9, 11,
                                   6, 0, 38, 2, 36, 14, 34, 4, 32, 16, 30, 28, 12, 26, 8, 24, 18, 22, 10, 20}));
    QCOMPARE(ints_of(call("aten::sort", {a, 0, true})[1].to_tensor()),
             (std::vector<int64_t>{0, 26, 24, 28, 22, 20, 30, 18, 16, 32, 14, 12, 34, 10, 8, 36, 6, 4, 38, 2,
                                   33, 35, 31, 37, 29, 27, 39, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1}));
    Tensor v = pattern(150, 7, 5, {50, 3});
    Tensor asc = call("aten::sort", {v, 0})[1].to_tensor();
    QCOMPARE(ints_of(asc.select(1, 0)),
             (std::vector<int64_t>{35, 20, 15, 25, 30, 10, 40, 5, 45, 0, 36, 1, 31, 41, 26, 21, 46, 16, 11, 6,
                                   12, 7, 37, 32, 42, 27, 2, 22, 47, 17, 18, 43, 3, 38, 48, 8, 33, 28, 13, 23,
                                   34, 9, 39, 29, 4, 44, 24, 14, 19, 49}));
    QCOMPARE(checksum(asc), int64_t(272445));
    QCOMPARE(checksum(call("aten::sort", {v, 0, true})[1].to_tensor()), int64_t(267750));
    std::vector<float> w;
    for (int i = 0; i < 30; ++i) w.push_back(i % 5 == 0 ? NAN : float((i * 3) % 4));
    Tensor wt = Tensor::from_vector(w, {30});
    QCOMPARE(ints_of(call("aten::sort", {wt, 0, true})[1].to_tensor()),
             (std::vector<int64_t>{0, 25, 20, 5, 15, 10, 29, 21, 17, 13, 9, 1, 14, 26, 2, 6, 18, 22, 11, 27, 23, 3,
                                   19, 7, 4, 24, 16, 8, 28, 12}));
    QCOMPARE(ints_of(call("aten::sort", {wt})[1].to_tensor()),
             (std::vector<int64_t>{4, 28, 8, 16, 12, 24, 19, 3, 7, 27, 11, 23, 26, 18, 22, 14, 6, 2, 21, 1, 29, 17,
                                   13, 9, 20, 15, 25, 10, 5, 0}));
    // 1-D ascending integer sorts of >= 32768 elements are stable in ATen (radix sort).
    std::vector<int64_t> big;
    for (int64_t i = 0; i < 40000; ++i) big.push_back((i * 7919) % 100);
    Tensor bt = Tensor::from_vector(big, {40000});
    QCOMPARE(checksum(call("aten::sort", {bt})[1].to_tensor()), int64_t(16052793010000));
    QCOMPARE(checksum(call("aten::sort", {bt, 0, true})[1].to_tensor()), int64_t(15998888120500));
    Tensor k = pattern(50, 7, 5);
    std::vector<int64_t> sh = ints_of(call("aten::sort", {k.to(DType::Float16), 0, true})[1].to_tensor());
    QCOMPARE(std::vector<int64_t>(sh.begin(), sh.begin() + 12),
             (std::vector<int64_t>{2, 47, 27, 22, 7, 42, 32, 17, 12, 37, 49, 24}));
    std::vector<bool> bv;
    for (int i = 0; i < 40; ++i) bv.push_back(i % 3 != 0);
    QCOMPARE(ints_of(call("aten::sort", {Tensor::from_vector(bv, {40})})[1].to_tensor()),
             (std::vector<int64_t>{12, 24, 21, 0, 27, 18, 15, 30, 33, 9, 6, 36, 3, 39, 34, 32, 20, 31, 35, 29,
                                   28, 37, 38, 26, 25, 23, 22, 19, 17, 16, 14, 13, 11, 10, 8, 7, 5, 4, 2, 1}));
    // Expanded (stride-0) input keeps its order.
    Tensor e = Tensor::scalar_tensor(1.0, DType::Float32).expand({20});
    QCOMPARE(ints_of(call("aten::sort", {e})[1].to_tensor())[19], int64_t(19));
  }

  void stable_and_argsort() {
    Tensor k = pattern(50, 7, 5);
    std::vector<int64_t> sd = ints_of(call1("aten::argsort.stable", {k}, {{"stable", Value(true)}, {"descending", Value(true)}}));
    QCOMPARE(std::vector<int64_t>(sd.begin(), sd.begin() + 12), (std::vector<int64_t>{2, 7, 12, 17, 22, 27, 32, 37, 42, 47, 4, 9}));
    ValueList s = call("aten::sort.stable", {Tensor::from_vector<int64_t>({1, 0, 1, 0}, {4})}, {{"stable", Value(true)}});
    QCOMPARE(ints_of(s[1].to_tensor()), (std::vector<int64_t>{1, 3, 0, 2}));
    ValueList sn = call("aten::sort.stable", {Tensor::from_vector<int64_t>({1, 0, 1, 0}, {4})}, {{"stable", Value()}});
    QCOMPARE(ints_of(sn[0].to_tensor()), (std::vector<int64_t>{0, 0, 1, 1}));
    QCOMPARE(ints_of(call1("aten::argsort", {Tensor::from_vector<int64_t>({3, 1, 2}, {3})})), (std::vector<int64_t>{1, 2, 0}));
    KILN_COMPARE_VALUES(call1("aten::msort", {Tensor::from_vector<int64_t>({3, 1, 1, 2}, {2, 2})}), {1, 1, 3, 2});
  }

  void topk() {
    Tensor t = pattern(100, 7, 10);
    ValueList r = call("aten::topk", {t, 3});
    QCOMPARE(ints_of(r[1].to_tensor()), (std::vector<int64_t>{87, 37, 77}));
    KILN_COMPARE_VALUES(r[0].to_tensor(), {9, 9, 9});
    QCOMPARE(ints_of(call("aten::topk", {t, 5}, {{"largest", Value(false)}})[1].to_tensor()),
             (std::vector<int64_t>{50, 10, 80, 30, 20}));
    Tensor t2 = pattern(1000, 7, 10);
    QCOMPARE(ints_of(call("aten::topk", {t2, 3})[1].to_tensor()), (std::vector<int64_t>{27, 7, 17}));
    QCOMPARE(ints_of(call("aten::topk", {t2, 4}, {{"largest", Value(false)}})[1].to_tensor()),
             (std::vector<int64_t>{20, 0, 30, 10}));
    Tensor t3 = pattern(60, 7, 10, {6, 10}).t();
    ValueList r3 = call("aten::topk", {t3, 2, 0});
    QCOMPARE(r3[1].to_tensor().sizes(), (Shape{2, 6}));
    QCOMPARE(ints_of(r3[1].to_tensor()), (std::vector<int64_t>{7, 7, 7, 7, 7, 7, 4, 4, 4, 4, 4, 4}));
    ValueList nan = call("aten::topk", {Tensor::from_vector<float>({1, NAN, 3}, {3}), 2});
    QCOMPARE(ints_of(nan[1].to_tensor()), (std::vector<int64_t>{1, 2}));
    ValueList small = call("aten::topk", {Tensor::from_vector<float>({1, NAN, 3}, {3}), 3}, {{"largest", Value(false)}});
    QCOMPARE(ints_of(small[1].to_tensor()), (std::vector<int64_t>{0, 2, 1}));
    // The corpus case shape: [3, 4, 5], k=2 along dim 1.
    ValueList c = call("aten::topk", {arange_f32({3, 4, 5}), 2, 1});
    QCOMPARE(c[0].to_tensor().sizes(), (Shape{3, 2, 5}));
    KILN_COMPARE_VALUES(c[0].to_tensor().select(0, 0), {15, 16, 17, 18, 19, 10, 11, 12, 13, 14});
    KILN_EXPECT_OP_ERROR(call_op("aten::topk", {arange_f32({2}), 3}), "selected index k out of range");
    QCOMPARE(call("aten::topk", {arange_f32({4}), 0})[0].to_tensor().numel(), int64_t(0));
  }

  void kthvalue_median() {
    Tensor k = pattern(50, 7, 5);
    std::vector<int64_t> got;
    for (int64_t kk : {1, 10, 25, 26, 50}) got.push_back(ints_of(call("aten::kthvalue", {k, kk})[1].to_tensor())[0]);
    QCOMPARE(got, (std::vector<int64_t>{35, 0, 1, 11, 32}));
    ValueList kv = call("aten::kthvalue", {Tensor::from_vector<float>({2, 1, 2, 2, 1}, {5}), 3});
    QCOMPARE(values(kv[0].to_tensor())[0], 2.0);
    QCOMPARE(ints_of(kv[1].to_tensor())[0], int64_t(0));
    ValueList kd = call("aten::kthvalue", {arange_f32({3, 4}), 2, 0, true});
    QCOMPARE(kd[0].to_tensor().sizes(), (Shape{1, 4}));
    KILN_COMPARE_VALUES(kd[0].to_tensor(), {4, 5, 6, 7});
    KILN_EXPECT_OP_ERROR(call_op("aten::kthvalue", {arange_f32({2}), 3}), "selected number k out of range");

    QCOMPARE(ints_of(call("aten::median.dim", {k, 0})[1].to_tensor())[0], int64_t(21));
    std::vector<float> m2;
    for (int i = 0; i < 40; ++i) m2.push_back(float((i * 3) % 7));
    ValueList md = call("aten::median.dim", {Tensor::from_vector(m2, {8, 5}), 0});
    QCOMPARE(ints_of(md[1].to_tensor()), (std::vector<int64_t>{2, 0, 4, 7, 5}));
    ValueList mn = call("aten::median.dim", {Tensor::from_vector<float>({1, NAN, 2, NAN}, {4}), 0});
    QVERIFY(std::isnan(values(mn[0].to_tensor())[0]));
    QCOMPARE(ints_of(mn[1].to_tensor())[0], int64_t(1));
    QCOMPARE(values(call1("aten::median", {Tensor::from_vector<int64_t>({3, 1, 2, 4}, {4})}))[0], 2.0);
    QVERIFY(std::isnan(values(call1("aten::median", {Tensor::zeros({0}, DType::Float32)}))[0]));
    QVERIFY(std::isnan(values(call1("aten::median", {Tensor::from_vector<float>({1, NAN}, {2})}))[0]));
  }

  void unique() {
    ValueList u = call("aten::_unique2", {Tensor::from_vector<int64_t>({3, 1, 3, 2, 1, 7}, {6}), true, true, true});
    KILN_COMPARE_VALUES(u[0].to_tensor(), {1, 2, 3, 7});
    KILN_COMPARE_VALUES(u[1].to_tensor(), {2, 0, 2, 1, 0, 3});
    KILN_COMPARE_VALUES(u[2].to_tensor(), {2, 1, 2, 1});
    ValueList n = call("aten::_unique2", {Tensor::from_vector<int64_t>({3, 1, 3}, {3})});
    QCOMPARE(n[1].to_tensor().sizes(), (Shape{0}));
    ValueList f = call("aten::_unique2", {Tensor::from_vector<float>({NAN, 1, NAN}, {3}), true, true, true});
    QCOMPARE(f[0].to_tensor().numel(), int64_t(3));  // NaNs never compare equal
    KILN_COMPARE_VALUES(f[1].to_tensor(), {1, 0, 2});
    ValueList c = call("aten::unique_consecutive", {Tensor::from_vector<int64_t>({1, 1, 2, 2, 3, 1}, {6}), true, true});
    KILN_COMPARE_VALUES(c[0].to_tensor(), {1, 2, 3, 1});
    KILN_COMPARE_VALUES(c[1].to_tensor(), {0, 0, 1, 1, 2, 3});
    KILN_COMPARE_VALUES(c[2].to_tensor(), {2, 2, 1, 1});
    KILN_EXPECT_OP_ERROR(call_meta("aten::_unique2", {Tensor::meta({3}, DType::Float32)}), "depends on the data");
  }
};

QTEST_APPLESS_MAIN(TestOpsSort)
#include "test_ops_sort.moc"
