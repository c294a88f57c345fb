// Indexing ops against hand-computed PyTorch results (values checked with
// PyTorch 2.11 where the semantics are subtle: masks, non-adjacent advanced
// indices, scatter_reduce, per-step float16 accumulation).
#include "test_support.h"

#include <functional>

#include "core/ops/kernel_util.h"

using namespace kiln;
using kiln::test::arange_f32;
using kiln::test::call1;
using kiln::test::values;

namespace {
Tensor i64(std::vector<int64_t> v, Shape s = {}) {
  if (s.empty()) s = {int64_t(v.size())};
  return Tensor::from_vector(v, s);
}
Tensor f32(std::vector<float> v, Shape s = {}) {
  if (s.empty()) s = {int64_t(v.size())};
  return Tensor::from_vector(v, s);
}
Value list(std::vector<Value> v) { return Value(ValueList(std::move(v))); }

std::vector<double> ref(const Shape& sizes, const std::function<double(const Shape&)>& f) {
  std::vector<double> out;
  Shape idx(sizes.size(), 0);
  for (int64_t i = 0; i < shape_numel(sizes); ++i) {
    out.push_back(f(idx));
    for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}
}  // namespace

class TestOpsIndexing : public QObject {
  Q_OBJECT
 private slots:
  void index_select() {
    Tensor x = arange_f32({3, 4, 5});
    Tensor r = call1("aten::index_select", {x, 1, i64({3, 0, 3})});
    QCOMPARE(r.sizes(), (Shape{3, 3, 5}));
    int64_t pick[] = {3, 0, 3};
    KILN_COMPARE_VALUES(r, ref({3, 3, 5}, [&](const Shape& i) { return double(i[0] * 20 + pick[i[1]] * 5 + i[2]); }));
    Tensor rt = call1("aten::index_select", {x.transpose(0, 2), 0, Tensor::from_vector<int32_t>({4, 1}, {2})});
    KILN_COMPARE_VALUES(rt.select(1, 0), {4, 24, 44, 1, 21, 41});
    KILN_COMPARE_VALUES(call1("aten::index_select", {Tensor::scalar_tensor(3.0, DType::Float32), 0, i64({0})}), {3});
    KILN_EXPECT_OP_ERROR(call_op("aten::index_select", {arange_f32({5}), 0, i64({-1})}), "out of bounds");
    KILN_EXPECT_OP_ERROR(call_op("aten::index_select", {arange_f32({5}), 0, i64({7})}),
                      "index 7 is out of bounds for dimension 0 with size 5");
    KILN_EXPECT_OP_ERROR(call_op("aten::index_select", {arange_f32({5}), 0, i64({1}, {1, 1})}), "supposed to be a vector");
    KILN_EXPECT_OP_ERROR(call_op("aten::index_select", {arange_f32({5}), 0, f32({1})}), "int32 or int64");
  }

  void gather() {
    Tensor x = arange_f32({3, 4, 5});
    std::vector<int64_t> iv;
    for (int64_t i = 0; i < 24; ++i) iv.push_back((i * 7) % 5);
    Tensor idx = i64(iv, {3, 4, 2});
    Tensor g = call1("aten::gather", {x, 2, idx});
    QCOMPARE(g.sizes(), (Shape{3, 4, 2}));
    KILN_COMPARE_VALUES(g, ref({3, 4, 2}, [&](const Shape& i) {
                          return double(i[0] * 20 + i[1] * 5 + iv[size_t(i[0] * 8 + i[1] * 2 + i[2])]);
                        }));
    // Index smaller than self along other dims; non-contiguous self; int32 index.
    Tensor gt = call1("aten::gather", {arange_f32({4, 3}).t(), 1, Tensor::from_vector<int32_t>({3, 0}, {1, 2})});
    KILN_COMPARE_VALUES(gt, {9, 0});
    KILN_EXPECT_OP_ERROR(call_op("aten::gather", {arange_f32({5}), 0, i64({-1})}),
                      "index -1 is out of bounds for dimension 0 with size 5");
    KILN_EXPECT_OP_ERROR(call_op("aten::gather", {arange_f32({3, 4}), 1, i64({4}, {1, 1})}),
                      "index 4 is out of bounds for dimension 1 with size 4");
    KILN_EXPECT_OP_ERROR(call_op("aten::gather", {arange_f32({3, 4}), 1, i64({0, 0, 0, 0}, {4, 1})}),
                      "Size does not match at dimension 0");
    KILN_EXPECT_OP_ERROR(call_op("aten::gather", {arange_f32({3, 4}), 1, i64({0})}), "same number of dimensions");
    QCOMPARE(call1("aten::gather", {x, 0, Tensor::zeros({0, 4, 5}, DType::Int64)}).numel(), int64_t(0));
  }

  void scatter() {
    Tensor self = Tensor::zeros({2, 2}, DType::Float32);
    Tensor src = arange_f32({2, 3});
    KILN_COMPARE_VALUES(call1("aten::scatter.src", {self, 1, i64({1, 0}, {2, 1}), src}), {0, 0, 3, 0});
    // Along dim the index may be longer than self; the last write wins.
    KILN_COMPARE_VALUES(call1("aten::scatter.src", {self, 1, i64({1, 0, 1}, {1, 3}), src}), {1, 2, 0, 0});
    KILN_COMPARE_VALUES(call1("aten::scatter.value", {Tensor::zeros({3}, DType::Int32), 0, i64({1}), 2.7}), {0, 2, 0});
    KILN_EXPECT_OP_ERROR(call_op("aten::scatter.src", {self, 1, i64({1}, {1, 1}), Tensor::zeros({2, 3}, DType::Int64)}),
                      "Expected self.dtype to be equal to src.dtype");
    KILN_EXPECT_OP_ERROR(call_op("aten::scatter.value", {arange_f32({5}), 0, i64({-1}), 9.0}),
                      "index -1 is out of bounds for dimension 0 with size 5");
    Tensor sa = call1("aten::scatter_add", {Tensor::zeros({3}, DType::Float32), 0, i64({0, 2, 0, 0}), f32({1, 2, 3, 4})});
    KILN_COMPARE_VALUES(sa, {8, 0, 2});
    // float16 sums accumulate in float32 and round once (ATen's opmath path):
    // stepping in float16 would stop at 2048.
    Tensor h = call1("aten::scatter_add", {Tensor::zeros({1}, DType::Float16), 0, Tensor::zeros({3000}, DType::Int64),
                                           Tensor::full({3000}, 1.0, DType::Float16)});
    KILN_COMPARE_VALUES(h, {3000});
    // ...but the Scalar-value variants step in float16.
    Tensor hv = call1("aten::scatter.value_reduce", {Tensor::zeros({1}, DType::Float16), 0, Tensor::zeros({3000}, DType::Int64), 1.0},
                      {{"reduce", Value("add")}});
    KILN_COMPARE_VALUES(hv, {2048});
    Tensor hm = call1("aten::scatter_reduce.two", {Tensor::zeros({1}, DType::BFloat16), 0, Tensor::zeros({3000}, DType::Int64),
                                                   Tensor::full({3000}, 1.0, DType::BFloat16), "mean"});
    KILN_COMPARE_VALUES(hm, {1});
    KILN_COMPARE_VALUES(call1("aten::scatter.reduce", {f32({1, 2}), 0, i64({0, 0, 1}), f32({3, 4, 5})},
                              {{"reduce", Value("multiply")}}),
                        {12, 10});
    auto two = [](Tensor self, Tensor index, Tensor src, const char* reduce, bool include_self) {
      return call1("aten::scatter_reduce.two", {self, 0, index, src, reduce}, {{"include_self", Value(include_self)}});
    };
    KILN_COMPARE_VALUES(two(i64({10, 20, 30}), i64({0, 0, 2, 2}), i64({1, 2, 4, 5}), "mean", true), {4, 20, 13});
    KILN_COMPARE_VALUES(two(f32({10, 20, 30}), i64({0, 0, 2}), f32({1, 2, 4}), "mean", false), {1.5, 20, 4});
    KILN_COMPARE_VALUES(two(f32({10, 20, 30}), i64({0, 0, 2}), f32({1, 2, 4}), "amax", false), {2, 20, 4});
    KILN_COMPARE_VALUES(two(f32({10, 20, 30}), i64({0, 0, 2}), f32({1, 2, 4}), "prod", false), {2, 20, 4});
    KILN_COMPARE_VALUES(two(f32({10, 20, 30}), i64({0, 0, 2}), f32({1, 2, 4}), "sum", true), {13, 20, 34});
    std::vector<double> mn = values(two(f32({10, 20, 30}), i64({0, 0, 2}), f32({std::nanf(""), 2, 4}), "amin", true));
    QVERIFY(std::isnan(mn[0]));
    QCOMPARE(mn[2], 4.0);
    KILN_EXPECT_OP_ERROR(call_op("aten::scatter_reduce.two", {f32({1}), 0, i64({0}), f32({1}), "max"}), "reduce argument");
  }

  void advanced_index() {
    Tensor x = arange_f32({3, 4, 5});
    Tensor r = call1("aten::index.Tensor", {x, list({i64({2, 0})})});
    QCOMPARE(r.sizes(), (Shape{2, 4, 5}));
    KILN_COMPARE_VALUES(r.select(1, 1), {45, 46, 47, 48, 49, 5, 6, 7, 8, 9});
    Tensor y = arange_f32({3, 4, 5, 6});
    Tensor i2 = i64({0, 2}), j2 = i64({1, 3});
    // Non-adjacent advanced indices move to the front.
    Tensor na = call1("aten::index.Tensor", {y, list({i2, Value(), j2})});
    QCOMPARE(na.sizes(), (Shape{2, 4, 6}));
    KILN_COMPARE_VALUES(na, ref({2, 4, 6}, [](const Shape& i) {
                          int64_t a = i[0] == 0 ? 0 : 2, c = i[0] == 0 ? 1 : 3;
                          return double(a * 120 + i[1] * 30 + c * 6 + i[2]);
                        }));
    QCOMPARE(call1("aten::index.Tensor", {y, list({Value(), i2, Value(), j2})}).sizes(), (Shape{2, 3, 5}));
    Tensor ad = call1("aten::index.Tensor", {y, list({Value(), i2, j2})});
    QCOMPARE(ad.sizes(), (Shape{3, 2, 6}));
    KILN_COMPARE_VALUES(ad.select(0, 1).select(1, 5), {120 + 0 * 30 + 1 * 6 + 5, 120 + 2 * 30 + 3 * 6 + 5});
    Tensor bc = call1("aten::index.Tensor", {y, list({Value(), i64({0, 1}, {2, 1}), i64({0, 1, 2})})});
    QCOMPARE(bc.sizes(), (Shape{3, 2, 3, 6}));
    KILN_COMPARE_VALUES(bc.select(0, 0).select(2, 0), {0, 6, 12, 30, 36, 42});
    // Negative (wrapping) int32 indices; non-contiguous self.
    Tensor x34 = arange_f32({3, 4});
    KILN_COMPARE_VALUES(call1("aten::index.Tensor", {x34, list({Tensor::from_vector<int32_t>({1, -1}, {2})})}),
                        {4, 5, 6, 7, 8, 9, 10, 11});
    KILN_COMPARE_VALUES(call1("aten::index.Tensor", {x34.t(), list({i64({3}), i64({-1})})}), {11});
    // Boolean masks.
    KILN_COMPARE_VALUES(call1("aten::index.Tensor", {x34, list({Tensor::from_vector<bool>({true, false, true}, {3})})}),
                        {0, 1, 2, 3, 8, 9, 10, 11});
    std::vector<bool> m(12);
    for (size_t i = 0; i < 12; ++i) m[i] = i > 5;
    KILN_COMPARE_VALUES(call1("aten::index.Tensor", {x34, list({Tensor::from_vector<bool>(m, {3, 4})})}),
                        {6, 7, 8, 9, 10, 11});
    KILN_COMPARE_VALUES(call1("aten::index.Tensor", {x34, list({Value(), Tensor::from_vector<uint8_t>({0, 1, 0, 1}, {4})})}),
                        {1, 3, 5, 7, 9, 11});
    KILN_EXPECT_OP_ERROR(call_op("aten::index.Tensor", {x34, list({Tensor::from_vector<bool>({true, false}, {2})})}),
                      "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0");
    KILN_EXPECT_OP_ERROR(call_op("aten::index.Tensor", {x34, list({Value(), i64({1, 4})})}),
                      "index 4 is out of bounds for dimension 1 with size 4");
    KILN_EXPECT_OP_ERROR(call_op("aten::index.Tensor", {x34, list({i2, i2, i2})}),
                      "too many indices for tensor of dimension 2 (got 3)");
    KILN_EXPECT_OP_ERROR(call_op("aten::index.Tensor", {x34, list({f32({1})})}), "must be long, int, byte or bool");
    KILN_EXPECT_OP_ERROR(call_op("aten::index.Tensor", {x34, list({i64({0, 1}), i64({0, 1, 2})})}),
                      "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]");
    KILN_EXPECT_OP_ERROR(call_op("aten::index.Tensor", {Tensor::scalar_tensor(5.0, DType::Float32), list({i64({0})})}),
                      "too many indices for tensor of dimension 0");
    QCOMPARE(call1("aten::index.Tensor", {x34, list({Tensor::zeros({0}, DType::Int64)})}).sizes(), (Shape{0, 4}));
    // Meta: shapes without data; masks make the shape data-dependent.
    auto mr = call_meta("aten::index.Tensor", {Tensor::meta({3, 4, 5, 6}, DType::Float32),
                                               list({i2, Value(), Tensor::meta({4, 1}, DType::Int64)})});
    QVERIFY(mr.ok());
    QCOMPARE((*mr)[0].to_tensor().sizes(), (Shape{4, 2, 4, 6}));
    KILN_EXPECT_OP_ERROR(call_meta("aten::index.Tensor", {Tensor::meta({3}, DType::Float32), list({Tensor::meta({3}, DType::Bool)})}),
                      "depends on the data");
  }

  void index_put() {
    Tensor x34 = arange_f32({3, 4});
    Tensor p = call1("aten::index_put", {x34, list({i64({0, 2})}), f32({1, 2, 3, 4})});
    KILN_COMPARE_VALUES(p, {1, 2, 3, 4, 4, 5, 6, 7, 1, 2, 3, 4});
    KILN_COMPARE_VALUES(x34.select(0, 0), {0, 1, 2, 3});  // functional
    Tensor acc = call1("aten::index_put", {x34, list({i64({0, 0, 2})}), Tensor::scalar_tensor(1.0, DType::Float32), true});
    KILN_COMPARE_VALUES(acc, {2, 3, 4, 5, 4, 5, 6, 7, 9, 10, 11, 12});
    Tensor two = call1("aten::index_put", {x34, list({i64({0, 2}), i64({3, -4})}), f32({-1, -2})});
    KILN_COMPARE_VALUES(two, {0, 1, 2, -1, 4, 5, 6, 7, -2, 9, 10, 11});
    Tensor mask = call1("aten::index_put", {x34, list({Tensor::from_vector<bool>({false, true, false}, {3})}),
                                            Tensor::scalar_tensor(0.0, DType::Float32)});
    KILN_COMPARE_VALUES(mask, {0, 1, 2, 3, 0, 0, 0, 0, 8, 9, 10, 11});
    KILN_EXPECT_OP_ERROR(call_op("aten::index_put", {x34, list({i64({0, 2})}), f32({1, 2, 3})}),
                      "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 4]");
    KILN_EXPECT_OP_ERROR(call_op("aten::index_put", {x34, list({i64({0})}), Tensor::scalar_tensor(1.0, DType::Int64)}),
                      "Index put requires the source and destination dtypes match");
    Tensor h = call1("aten::index_put", {Tensor::zeros({1}, DType::Float16), list({Tensor::zeros({3000}, DType::Int64)}),
                                         Tensor::full({3000}, 1.0, DType::Float16), true});
    KILN_COMPARE_VALUES(h, {2048});
    Tensor u = call1("aten::_unsafe_index_put", {x34, list({Value(), i64({1})}), Tensor::scalar_tensor(7.0, DType::Float32)});
    KILN_COMPARE_VALUES(u.select(1, 1), {7, 7, 7});
  }

  void index_add_fill_take() {
    Tensor r = call1("aten::index_add", {Tensor::zeros({3}, DType::Float32), 0, i64({0, 0, 2}), f32({1, 2, 3})},
                     {{"alpha", Value(2)}});
    KILN_COMPARE_VALUES(r, {6, 0, 6});
    Tensor r2 = call1("aten::index_add", {arange_f32({2, 3}), 1, i64({2, 0}), arange_f32({2, 2}, 10)});
    KILN_COMPARE_VALUES(r2, {11, 1, 12, 16, 4, 17});
    KILN_EXPECT_OP_ERROR(call_op("aten::index_add", {Tensor::zeros({3}, DType::Float32), 0, i64({-1}), f32({1})}),
                      "out of bounds");
    // 1-D (and middle dims, and alpha != 1) add step by step in float16; alpha == 1
    // along the first or last dim of an N-D tensor goes through scatter_add.
    Tensor h = call1("aten::index_add", {Tensor::zeros({1}, DType::Float16), 0, Tensor::zeros({3000}, DType::Int64),
                                         Tensor::full({3000}, 1.0, DType::Float16)});
    KILN_COMPARE_VALUES(h, {2048});
    Tensor h2 = call1("aten::index_add", {Tensor::zeros({1, 2}, DType::Float16), 0, Tensor::zeros({3000}, DType::Int64),
                                          Tensor::full({3000, 2}, 1.0, DType::Float16)});
    KILN_COMPARE_VALUES(h2, {3000, 3000});
    Tensor h3 = call1("aten::index_add", {Tensor::zeros({2, 1, 2}, DType::Float16), 1, Tensor::zeros({3000}, DType::Int64),
                                          Tensor::full({2, 3000, 2}, 1.0, DType::Float16)});
    KILN_COMPARE_VALUES(h3, {2048, 2048, 2048, 2048});
    Tensor f = call1("aten::index_fill.int_Scalar", {arange_f32({3, 4}), 1, i64({0, -1}), -1.0});
    KILN_COMPARE_VALUES(f, {-1, 1, 2, -1, -1, 5, 6, -1, -1, 9, 10, -1});
    Tensor t = call1("aten::take", {arange_f32({3, 4}), i64({-1, 0, 5, 11}, {2, 2})});
    QCOMPARE(t.sizes(), (Shape{2, 2}));
    KILN_COMPARE_VALUES(t, {11, 0, 5, 11});
    KILN_COMPARE_VALUES(call1("aten::take", {arange_f32({3, 4}).t(), i64({1})}), {4});
    KILN_EXPECT_OP_ERROR(call_op("aten::take", {arange_f32({3, 4}), i64({12})}), "out of bounds");
  }

  void nonzero_masked_select() {
    Tensor nz = call1("aten::nonzero", {f32({0, 1, std::nanf(""), 0}, {2, 2})});
    QCOMPARE(nz.sizes(), (Shape{2, 2}));
    QCOMPARE(nz.strides(), (Shape{1, 2}));
    KILN_COMPARE_VALUES(nz, {0, 1, 1, 0});
    QCOMPARE(call1("aten::nonzero", {Tensor::scalar_tensor(5.0, DType::Float32)}).sizes(), (Shape{1, 0}));
    QCOMPARE(call1("aten::nonzero", {Tensor::zeros({4, 3}, DType::Int32)}).sizes(), (Shape{0, 2}));
    KILN_EXPECT_OP_ERROR(call_meta("aten::nonzero", {arange_f32({3})}), "depends on the data");
    Tensor big = Tensor::zeros({100000}, DType::Bool);
    bool* bp = big.data<bool>();
    for (int64_t i = 0; i < 100000; i += 7) bp[i] = true;
    Tensor bnz = call1("aten::nonzero", {big});
    QCOMPARE(bnz.sizes(), (Shape{14286, 1}));
    QCOMPARE(values(bnz.select(0, 14285))[0], 99995.0);
    Tensor ms = call1("aten::masked_select", {arange_f32({3, 4}), Tensor::from_vector<bool>({true, false, false, true}, {4})});
    KILN_COMPARE_VALUES(ms, {0, 3, 4, 7, 8, 11});
    KILN_EXPECT_OP_ERROR(call_op("aten::masked_select", {arange_f32({4}), Tensor::from_vector<uint8_t>({1, 0, 0, 1}, {4})}),
                      "expected BoolTensor");
  }

  void large_gather_parallel() {
    Tensor x = arange_f32({400, 300});
    std::vector<int64_t> iv(size_t(400 * 300));
    for (size_t i = 0; i < iv.size(); ++i) iv[i] = int64_t((i * 31) % 300);
    Tensor g = call1("aten::gather", {x, 1, i64(iv, {400, 300})});
    std::vector<double> gv = values(g);
    bool ok = true;
    for (size_t i = 0; i < iv.size() && ok; ++i) ok = gv[i] == double(int64_t(i / 300) * 300 + iv[i]);
    QVERIFY(ok);
    std::vector<int64_t> rows(1000);
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = int64_t((i * 13) % 400);
    Tensor s = call1("aten::index.Tensor", {x, list({i64(rows)})});
    std::vector<double> sv = values(s);
    ok = true;
    for (size_t i = 0; i < 1000 && ok; ++i)
      for (size_t j = 0; j < 300 && ok; ++j) ok = sv[i * 300 + j] == double(rows[i] * 300 + int64_t(j));
    QVERIFY(ok);
  }
};

QTEST_APPLESS_MAIN(TestOpsIndexing)
#include "test_ops_indexing.moc"
