// View ops, copies and joining ops against hand-computed PyTorch results.
#include "test_support.h"

#include <climits>
#include <functional>

#include "core/ops/kernel_util.h"

using namespace kiln;
using kiln::test::arange_f32;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::values;

namespace {
using kiln::test::ints;

// Row-major values of `sizes`, element = f(multi-index): the reference side.
std::vector<double> ref(const Shape& sizes, const std::function<double(const Shape&)>& f) {
  std::vector<double> out;
  Shape idx(sizes.size(), 0);
  int64_t n = shape_numel(sizes);
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(f(idx));
    for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

Tensor arange_i64(Shape sizes) {
  std::vector<int64_t> v(size_t(shape_numel(sizes)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(i);
  return Tensor::from_vector(v, std::move(sizes));
}
}  // namespace

class TestOpsShape : public QObject {
  Q_OBJECT
 private slots:
  void views_share_storage() {
    Tensor x = arange_f32({3, 4, 5});
    Tensor v = call1("aten::view", {x, ints({12, 5})});
    QCOMPARE(v.sizes(), (Shape{12, 5}));
    QCOMPARE(v.storage().get(), x.storage().get());
    Tensor p = call1("aten::permute", {x, ints({2, 0, 1})});
    QCOMPARE(p.strides(), (Shape{1, 20, 5}));
    KILN_COMPARE_VALUES(p.select(0, 1).select(0, 2), {41, 46, 51, 56});
    Tensor e = call1("aten::expand", {arange_f32({3, 1, 5}), ints({3, 4, 5})});
    QCOMPARE(e.strides(), (Shape{5, 0, 1}));
    Tensor e2 = call1("aten::expand", {arange_f32({3, 1}), ints({2, -1, 4})}, {{"implicit", Value(true)}});
    QCOMPARE(e2.sizes(), (Shape{2, 3, 4}));
    QCOMPARE(call1("aten::squeeze.dim", {arange_f32({3, 1, 5}), 1}).sizes(), (Shape{3, 5}));
    QCOMPARE(call1("aten::squeeze.dim", {arange_f32({3, 2}), -1}).sizes(), (Shape{3, 2}));
    QCOMPARE(call1("aten::squeeze.dims", {arange_f32({1, 3, 1, 1}), ints({0, -1})}).sizes(), (Shape{3, 1}));
    QCOMPARE(call1("aten::squeeze", {arange_f32({1, 3, 1})}).sizes(), (Shape{3}));
    QCOMPARE(call1("aten::unsqueeze", {x, -1}).sizes(), (Shape{3, 4, 5, 1}));
    QCOMPARE(call1("aten::unsqueeze", {x, 1}).strides(), (Shape{20, 20, 5, 1}));  // size(1) * stride(1)
    Tensor t = call1("aten::t", {arange_f32({4, 5})});
    QCOMPARE(t.sizes(), (Shape{5, 4}));
    KILN_COMPARE_VALUES(t.select(0, 1), {1, 6, 11, 16});
    QCOMPARE(call1("aten::t", {arange_f32({4})}).sizes(), (Shape{4}));
    QCOMPARE(call1("aten::transpose.int", {x, 0, -1}).sizes(), (Shape{5, 4, 3}));
    QCOMPARE(call1("aten::numpy_T", {x}).strides(), (Shape{1, 5, 20}));
    Tensor al = call1("aten::alias", {x});
    QCOMPARE(al.storage().get(), x.storage().get());
    QCOMPARE(call1("aten::view_as", {x, arange_f32({60})}).sizes(), (Shape{60}));
    QCOMPARE(call1("aten::expand_as", {arange_f32({1, 5}), x}).sizes(), (Shape{3, 4, 5}));
  }

  void slice_select_narrow() {
    Tensor x = arange_f32({3, 4, 5});
    Tensor s = call1("aten::slice.Tensor", {x, 2, 1, 5, 2});
    QCOMPARE(s.sizes(), (Shape{3, 4, 2}));
    KILN_COMPARE_VALUES(s.select(0, 0).select(0, 0), {1, 3});
    QCOMPARE(s.storage_offset(), int64_t(1));
    Tensor r = arange_i64({5});
    // Python semantics: defaults, negative bounds, clamping, empty when start >= end.
    KILN_COMPARE_VALUES(call1("aten::slice.Tensor", {r}), {0, 1, 2, 3, 4});
    KILN_COMPARE_VALUES(call1("aten::slice.Tensor", {r, 0, -2}), {3, 4});
    KILN_COMPARE_VALUES(call1("aten::slice.Tensor", {r, 0, Value(), -3}), {0, 1});
    KILN_COMPARE_VALUES(call1("aten::slice.Tensor", {r, 0, 1, INT64_MAX, 3}), {1, 4});
    KILN_COMPARE_VALUES(call1("aten::slice.Tensor", {r, 0, -100, 100}), {0, 1, 2, 3, 4});
    QCOMPARE(call1("aten::slice.Tensor", {r, 0, 4, 1}).numel(), int64_t(0));
    QCOMPARE(call1("aten::slice.Tensor", {r, 0, 7, 9}).numel(), int64_t(0));
    KILN_EXPECT_OP_ERROR(call_op("aten::slice.Tensor", {r, 0, 0, 5, 0}), "slice step must be positive");
    KILN_EXPECT_OP_ERROR(call_op("aten::slice.Tensor", {r, 0, 0, 5, -1}), "slice step must be positive");
    KILN_EXPECT_OP_ERROR(call_op("aten::slice.Tensor", {r, 1}), "Dimension out of range");

    KILN_COMPARE_VALUES(call1("aten::select.int", {x, 1, -1}).select(0, 0), {15, 16, 17, 18, 19});
    KILN_EXPECT_OP_ERROR(call_op("aten::select.int", {arange_f32({3, 4}), 0, 3}), "out of range");
    KILN_COMPARE_VALUES(call1("aten::narrow", {r, 0, -2, 2}), {3, 4});
    KILN_EXPECT_OP_ERROR(call_op("aten::narrow", {r, 0, 4, 2}), "exceeds dimension size");
    KILN_EXPECT_OP_ERROR(call_op("aten::narrow", {r, 0, -6, 2}), "start out of range");
    KILN_EXPECT_OP_ERROR(call_op("aten::narrow", {Tensor::scalar_tensor(1.0, DType::Float32), 0, 0, 1}), "0-dim");
    KILN_COMPARE_VALUES(call1("aten::diagonal", {arange_f32({3, 4}), 1}), {1, 6, 11});
    KILN_COMPARE_VALUES(call1("aten::diagonal", {arange_f32({2, 3, 3}), 0, 1, 2}), {0, 4, 8, 9, 13, 17});
    KILN_EXPECT_OP_ERROR(call_op("aten::diagonal", {arange_f32({3})}), "Dimension out of range");
    Tensor u = call1("aten::unfold", {arange_i64({7}), 0, 3, 2});
    QCOMPARE(u.sizes(), (Shape{3, 3}));
    KILN_COMPARE_VALUES(u, {0, 1, 2, 2, 3, 4, 4, 5, 6});
    KILN_EXPECT_OP_ERROR(call_op("aten::unfold", {arange_i64({3}), 0, 4, 1}), "maximum size");
    Tensor as = call1("aten::as_strided", {arange_f32({6}).slice(0, 1, 6), ints({2, 2}), ints({1, 2})});
    KILN_COMPARE_VALUES(as, {1, 3, 2, 4});  // storage offset None keeps the input's offset
    KILN_EXPECT_OP_ERROR(call_op("aten::as_strided", {arange_f32({4}), ints({3}), ints({2})}), "out of bounds");
  }

  void view_errors_and_reshape() {
    Tensor x = arange_f32({4, 6});
    KILN_EXPECT_OP_ERROR(call_op("aten::view", {x.t(), ints({24})}), "view size");
    KILN_EXPECT_OP_ERROR(call_op("aten::view", {x, ints({5, -1})}), "invalid for input of size 24");
    Tensor r = call1("aten::reshape", {x.t(), ints({24})});
    KILN_COMPARE_VALUES(r.slice(0, 0, 5), {0, 6, 12, 18, 1});
    QCOMPARE(call1("aten::reshape", {x, ints({-1, 4})}).storage().get(), x.storage().get());
    QCOMPARE(call1("aten::_unsafe_view", {x, ints({2, 12})}).sizes(), (Shape{2, 12}));
    KILN_EXPECT_OP_ERROR(call_op("aten::transpose.int", {Tensor::scalar_tensor(1.0, DType::Float32), 0, 1}),
                      "Dimension out of range");
    QCOMPARE(call1("aten::transpose.int", {Tensor::scalar_tensor(1.0, DType::Float32), 0, -1}).dim(), int64_t(0));
    KILN_EXPECT_OP_ERROR(call_op("aten::unsqueeze", {arange_f32({3, 4}), 3}), "Dimension out of range");
    KILN_EXPECT_OP_ERROR(call_op("aten::permute", {x, ints({0, 0})}), "repeated dim");
    KILN_EXPECT_OP_ERROR(call_op("aten::expand", {x, ints({4, 5})}), "must match the existing size");
    KILN_EXPECT_OP_ERROR(call_op("aten::squeeze.dims", {arange_f32({1, 2, 1}), ints({0, 0})}), "appears multiple times");
  }

  void flatten_unflatten_movedim() {
    Tensor x = arange_f32({2, 3, 4, 5});
    QCOMPARE(call1("aten::flatten.using_ints", {x, 1, 2}).sizes(), (Shape{2, 12, 5}));
    QCOMPARE(call1("aten::flatten.using_ints", {x}).sizes(), (Shape{120}));
    QCOMPARE(call1("aten::flatten.using_ints", {Tensor::scalar_tensor(2.0, DType::Float32)}).sizes(), (Shape{1}));
    KILN_EXPECT_OP_ERROR(call_op("aten::flatten.using_ints", {x, 2, 1}), "start_dim cannot come after end_dim");
    Tensor fl = call1("aten::flatten.using_ints", {x.transpose(0, 3), 0, 1});  // needs a copy
    QCOMPARE(fl.sizes(), (Shape{15, 4, 2}));
    KILN_COMPARE_VALUES(fl.select(1, 0).slice(0, 0, 3), {0, 60, 20, 80, 40, 100});
    QCOMPARE(call1("aten::unflatten.int", {arange_f32({3, 4}), 1, ints({2, -1})}).sizes(), (Shape{3, 2, 2}));
    KILN_EXPECT_OP_ERROR(call_op("aten::unflatten.int", {arange_f32({3, 4}), 1, ints({3, -1})}),
                      "don't multiply up to the size of dim 1 (4)");
    Tensor m = call1("aten::movedim.intlist", {x, ints({0, 1}), ints({3, 0})});
    QCOMPARE(m.sizes(), (Shape{3, 4, 5, 2}));
    QCOMPARE(m.strides(), (Shape{20, 5, 1, 60}));
    QCOMPARE(call1("aten::movedim.int", {x, -1, 0}).sizes(), (Shape{5, 2, 3, 4}));
    KILN_EXPECT_OP_ERROR(call_op("aten::movedim.intlist", {x, ints({0, 0}), ints({3, 1})}), "repeated dim in `source`");
    QCOMPARE(call1("aten::ravel", {x.transpose(0, 1)}).sizes(), (Shape{120}));
  }

  void splits() {
    Tensor x = arange_f32({6, 4});
    ValueList parts = call("aten::split.Tensor", {x, 4});
    QCOMPARE(parts.size(), size_t(1));
    std::vector<Tensor> ts = parts[0].to_tensor_list();
    QCOMPARE(ts.size(), size_t(2));
    QCOMPARE(ts[0].sizes(), (Shape{4, 4}));
    QCOMPARE(ts[1].sizes(), (Shape{2, 4}));
    QCOMPARE(ts[1].storage().get(), x.storage().get());
    KILN_COMPARE_VALUES(ts[1].select(1, 0), {16, 20});
    auto sizes_of = [](const ValueList& v) {
      std::vector<int64_t> s;
      for (const Tensor& t : v[0].to_tensor_list()) s.push_back(t.numel());
      return s;
    };
    Tensor r5 = arange_i64({5});
    QCOMPARE(sizes_of(call("aten::chunk", {r5, 3})), (std::vector<int64_t>{2, 2, 1}));
    QCOMPARE(sizes_of(call("aten::chunk", {arange_i64({6}), 4})), (std::vector<int64_t>{2, 2, 2}));
    QCOMPARE(sizes_of(call("aten::chunk", {Tensor::zeros({0}, DType::Float32), 3})), (std::vector<int64_t>{0, 0, 0}));
    QCOMPARE(sizes_of(call("aten::split.Tensor", {Tensor::zeros({0}, DType::Float32), 2})), (std::vector<int64_t>{0}));
    KILN_EXPECT_OP_ERROR(call_op("aten::split.Tensor", {Tensor::zeros({3}, DType::Float32), 0}),
                      "split_size can only be 0 if dimension size is 0");
    QCOMPARE(sizes_of(call("aten::split_with_sizes", {r5, ints({1, 4})})), (std::vector<int64_t>{1, 4}));
    KILN_EXPECT_OP_ERROR(call_op("aten::split_with_sizes", {r5, ints({1, 2})}), "sum exactly to 5");
    Tensor r7 = arange_i64({7});
    QCOMPARE(sizes_of(call("aten::tensor_split.sections", {r7, 3})), (std::vector<int64_t>{3, 2, 2}));
    ValueList ti = call("aten::tensor_split.indices", {r7, ints({1, 5, 3, 10})});
    QCOMPARE(sizes_of(ti), (std::vector<int64_t>{1, 4, 0, 4, 0}));
    KILN_COMPARE_VALUES(ti[0].to_tensor_list()[3], {3, 4, 5, 6});
    QCOMPARE(sizes_of(call("aten::tensor_split.indices", {r7, ints({-2})})), (std::vector<int64_t>{5, 2}));
    std::vector<Tensor> ub = call("aten::unbind.int", {arange_f32({2, 3}), 1})[0].to_tensor_list();
    QCOMPARE(ub.size(), size_t(3));
    KILN_COMPARE_VALUES(ub[2], {2, 5});
    KILN_EXPECT_OP_ERROR(call_op("aten::chunk", {Tensor::scalar_tensor(1.0, DType::Float32), 2}), "1-dimensional");
    // The functional twins copy.
    std::vector<Tensor> cp = call("aten::split_copy.Tensor", {x, 4})[0].to_tensor_list();
    QVERIFY(cp[1].storage().get() != x.storage().get());
    KILN_COMPARE_VALUES(cp[1].select(1, 1), {17, 21});
  }

  void meta_views() {
    Tensor m = Tensor::meta({3, 4, 5}, DType::Float16);
    Tensor p = call1("aten::permute", {m, ints({2, 0, 1})});
    QVERIFY(p.is_meta());
    QCOMPARE(p.strides(), (Shape{1, 20, 5}));
    Tensor s = call1("aten::slice.Tensor", {m, 1, 1, 3});
    QCOMPARE(s.storage_offset(), int64_t(5));
    // The meta entry reports a real input's view without touching its data.
    auto mv = call_meta("aten::transpose.int", {arange_f32({3, 4}), 0, 1});
    QVERIFY(mv.ok());
    QVERIFY((*mv)[0].to_tensor().is_meta());
    QCOMPARE((*mv)[0].to_tensor().strides(), (Shape{1, 4}));
    auto mr = call_meta("aten::reshape", {arange_f32({3, 4}).t(), ints({12})});
    QVERIFY(mr.ok());
    QCOMPARE((*mr)[0].to_tensor().strides(), (Shape{1}));
    auto ms = call_meta("aten::split.Tensor", {m, 2});
    QVERIFY(ms.ok());
    QCOMPARE((*ms)[0].to_tensor_list().size(), size_t(2));
    QCOMPARE(call1("aten::clone", {m.permute(std::vector<int64_t>{2, 0, 1})}).strides(), (Shape{1, 20, 5}));
    Tensor c = call1("aten::cat", {Value::tensor_list({m, m}), 1});
    QVERIFY(c.is_meta());
    QCOMPARE(c.sizes(), (Shape{3, 8, 5}));
  }

  void clone_and_memory_format() {
    Tensor x = arange_f32({2, 3, 4});
    Tensor c = call1("aten::clone", {x.permute(std::vector<int64_t>{2, 0, 1})});
    QCOMPARE(c.strides(), (Shape{1, 12, 4}));  // preserve_format keeps a dense layout
    QVERIFY(c.storage().get() != x.storage().get());
    KILN_COMPARE_VALUES(c.select(0, 1).select(0, 1), {13, 17, 21});
    // Not dense: strides follow the input's dim order.
    Tensor nd = call1("aten::clone", {arange_f32({4, 6}).slice(1, 0, 6, 2).t()});
    QCOMPARE(nd.strides(), (Shape{1, 3}));
    KILN_COMPARE_VALUES(nd.select(0, 1), {2, 8, 14, 20});
    QCOMPARE(call1("aten::clone", {arange_f32({3, 1}).expand({3, 4})}).strides(), (Shape{4, 1}));
    QCOMPARE(call1("aten::clone", {arange_f32({1, 3}).expand({4, 3})}).strides(), (Shape{3, 1}));
    Tensor cl = call1("aten::clone", {arange_f32({2, 3, 4, 5})}, {{"memory_format", Value("torch.channels_last")}});
    QCOMPARE(cl.strides(), (Shape{60, 1, 15, 3}));
    KILN_COMPARE_VALUES(cl.select(0, 0).select(1, 0).select(1, 1), {1, 21, 41});
    Tensor cc = call1("aten::clone", {x.transpose(0, 2)}, {{"memory_format", Value("contiguous_format")}});
    QVERIFY(cc.is_contiguous());
    Tensor k = call1("aten::contiguous", {x});
    QCOMPARE(k.storage().get(), x.storage().get());
    Tensor k2 = call1("aten::contiguous", {x.transpose(1, 2)});
    QVERIFY(k2.is_contiguous());
    KILN_COMPARE_VALUES(k2.select(0, 0).select(0, 1), {1, 5, 9});
    Tensor k3 = call1("aten::contiguous", {cl}, {{"memory_format", Value("torch.channels_last")}});
    QCOMPARE(k3.storage().get(), cl.storage().get());
    Tensor pc = call1("aten::permute_copy", {x, ints({2, 0, 1})});
    QVERIFY(pc.is_contiguous());
    KILN_COMPARE_VALUES(pc.select(0, 3).select(0, 1), {15, 19, 23});
  }

  void to_copy_conversions() {
    Tensor f = Tensor::from_vector<float>({300.7f, -1.5f, -200.2f, 1e10f, std::nanf("")}, {5});
    Tensor i8 = call1("aten::_to_copy", {f}, {{"dtype", Value(DType::Int8)}});
    QCOMPARE(i8.dtype(), DType::Int8);
    KILN_COMPARE_VALUES(i8, {44, -1, 56, 0, 0});
    Tensor u8 = call1("aten::_to_copy", {f.slice(0, 0, 3)}, {{"dtype", Value(DType::UInt8)}});
    KILN_COMPARE_VALUES(u8, {44, 255, 56});
    Tensor b = call1("aten::_to_copy", {Tensor::from_vector<float>({0.1f, -0.0f, std::nanf("")}, {3})},
                     {{"dtype", Value(DType::Bool)}});
    KILN_COMPARE_VALUES(b, {1, 0, 1});
    Tensor bf = call1("aten::_to_copy", {Tensor::from_vector<float>({1.00390625f, 1.01171875f}, {2})},
                      {{"dtype", Value(DType::BFloat16)}});
    KILN_COMPARE_VALUES(bf, {1.0, 1.015625});
    Tensor h = call1("aten::_to_copy", {Tensor::from_vector<double>({65520.0, 1.0 + 1.0 / 4096}, {2})},
                     {{"dtype", Value(DType::Float16)}});
    QVERIFY(std::isinf(values(h)[0]));
    QCOMPARE(values(h)[1], 1.0);
    Tensor perm = call1("aten::_to_copy", {arange_f32({2, 3}).t()}, {{"dtype", Value(DType::Float64)}});
    QCOMPARE(perm.strides(), (Shape{1, 3}));
    KILN_COMPARE_VALUES(perm, {0, 3, 1, 4, 2, 5});
    Tensor meta = call1("aten::_to_copy", {arange_f32({2, 3})}, {{"device", Value("meta")}});
    QVERIFY(meta.is_meta());
    KILN_EXPECT_OP_ERROR(call_op("aten::_to_copy", {arange_f32({2})}, {{"device", Value("cuda:0")}}), "not supported");
    // to() aliases when nothing changes and copies otherwise.
    Tensor x = arange_f32({3});
    QCOMPARE(call1("aten::to.dtype", {x, Value(DType::Float32)}).storage().get(), x.storage().get());
    QVERIFY(call1("aten::to.dtype", {x, Value(DType::Float32), false, true}).storage().get() != x.storage().get());
    Tensor xi = call1("aten::to.dtype", {Tensor::from_vector<float>({2.9f, -2.9f}, {2}), Value(DType::Int64)});
    QCOMPARE(xi.dtype(), DType::Int64);
    KILN_COMPARE_VALUES(xi, {2, -2});
    QCOMPARE(call1("aten::to.dtype", {x, Value(int64_t{7})}).dtype(), DType::Float64);  // ScalarType code
  }

  void copy_fill_zero() {
    Tensor self = Tensor::zeros({2, 3}, DType::Float32).t();
    Tensor c = call1("aten::copy", {self, Tensor::from_vector<int64_t>({1, 2}, {2})});
    QCOMPARE(c.dtype(), DType::Float32);
    QCOMPARE(c.strides(), (Shape{1, 3}));
    KILN_COMPARE_VALUES(c, {1, 2, 1, 2, 1, 2});
    KILN_COMPARE_VALUES(self, {0, 0, 0, 0, 0, 0});  // functional: self is untouched
    KILN_EXPECT_OP_ERROR(call_op("aten::copy", {Tensor::zeros({2, 3}, DType::Float32), Tensor::zeros({3, 3}, DType::Float32)}),
                      "must match");
    Tensor f = call1("aten::fill.Scalar", {Tensor::zeros({2, 2}, DType::Int32), 2.7});
    QCOMPARE(f.dtype(), DType::Int32);
    KILN_COMPARE_VALUES(f, {2, 2, 2, 2});
    KILN_COMPARE_VALUES(call1("aten::fill.Tensor", {arange_f32({2}), Tensor::scalar_tensor(1.5, DType::Float64)}), {1.5, 1.5});
    KILN_EXPECT_OP_ERROR(call_op("aten::fill.Tensor", {arange_f32({2}), arange_f32({1})}), "0-dimension value tensor");
    KILN_COMPARE_VALUES(call1("aten::zero", {arange_f32({3})}), {0, 0, 0});
  }

  void cat_stack() {
    Tensor a = arange_f32({3, 2, 5}), b = arange_f32({3, 4, 5}, 100);
    Tensor c = call1("aten::cat", {Value::tensor_list({a, b}), 1});
    QCOMPARE(c.sizes(), (Shape{3, 6, 5}));
    KILN_COMPARE_VALUES(c.select(0, 1).select(1, 0), {10, 15, 120, 125, 130, 135});
    // Promotion, and legacy 1-D empty tensors are skipped but still promote.
    Tensor p = call1("aten::cat", {Value::tensor_list({Tensor::from_vector<int64_t>({1, 2}, {2}),
                                                       Tensor::from_vector<float>({0.5f}, {1}),
                                                       Tensor::zeros({0}, DType::Float32)})});
    QCOMPARE(p.dtype(), DType::Float32);
    KILN_COMPARE_VALUES(p, {1, 2, 0.5});
    Tensor l = call1("aten::cat", {Value::tensor_list({Tensor::zeros({2, 3}, DType::Int32), Tensor::zeros({0}, DType::Float64)}), 1});
    QCOMPARE(l.dtype(), DType::Float64);
    QCOMPARE(l.sizes(), (Shape{2, 3}));
    QCOMPARE(call1("aten::cat", {Value::tensor_list({Tensor::zeros({0}, DType::Int32)})}).sizes(), (Shape{0}));
    Tensor ub = call1("aten::cat", {Value::tensor_list({Tensor::from_vector<bool>({true}, {1}),
                                                        Tensor::from_vector<uint8_t>({2}, {1})})});
    QCOMPARE(ub.dtype(), DType::UInt8);
    KILN_EXPECT_OP_ERROR(call_op("aten::cat", {Value::tensor_list({Tensor::scalar_tensor(1.0, DType::Float32)})}),
                      "zero-dimensional tensor (at position 0) cannot be concatenated");
    KILN_EXPECT_OP_ERROR(call_op("aten::cat", {Value::tensor_list({Tensor::zeros({2, 3}, DType::Float32),
                                                                Tensor::zeros({3, 3}, DType::Float32)}), 1}),
                      "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1");
    KILN_EXPECT_OP_ERROR(call_op("aten::cat", {Value::tensor_list({Tensor::zeros({2, 3}, DType::Float32),
                                                                Tensor::zeros({3}, DType::Float32)})}),
                      "same number of dimensions");
    // Non-contiguous inputs, negative dim.
    Tensor nc = call1("aten::cat", {Value::tensor_list({arange_f32({3, 2}).t(), arange_f32({2, 1}, 50)}), -1});
    KILN_COMPARE_VALUES(nc, {0, 2, 4, 50, 1, 3, 5, 51});
    // All channels_last inputs give a channels_last result.
    Tensor cl = arange_f32({2, 3, 4, 5}).permute(std::vector<int64_t>{0, 2, 3, 1}).contiguous()
                    .permute(std::vector<int64_t>{0, 3, 1, 2});
    QCOMPARE(call1("aten::cat", {Value::tensor_list({cl, cl}), 1}).strides(), (Shape{120, 1, 30, 6}));

    Tensor s = call1("aten::stack", {Value::tensor_list({arange_f32({3, 4}), arange_f32({3, 4}, 12), arange_f32({3, 4}, 24)}), 1});
    QCOMPARE(s.sizes(), (Shape{3, 3, 4}));
    KILN_COMPARE_VALUES(s.select(0, 1).select(1, 0), {4, 16, 28});
    QCOMPARE(call1("aten::stack", {Value::tensor_list({arange_f32({2}), arange_f32({2})}), -1}).sizes(), (Shape{2, 2}));
    KILN_EXPECT_OP_ERROR(call_op("aten::stack", {Value::tensor_list({arange_f32({3, 4}), arange_f32({3, 5})})}),
                      "stack expects each tensor to be equal size, but got [3, 4] at entry 0 and [3, 5] at entry 1");
    KILN_COMPARE_VALUES(call1("aten::hstack", {Value::tensor_list({Tensor::scalar_tensor(1.0, DType::Float32), arange_f32({2}, 2)})}),
                        {1, 2, 3});
    Tensor v = call1("aten::vstack", {Value::tensor_list({arange_f32({2}), arange_f32({1, 2}, 3)})});
    QCOMPARE(v.sizes(), (Shape{2, 2}));
    KILN_COMPARE_VALUES(v, {0, 1, 3, 4});
  }

  void repeat_tile() {
    Tensor x = arange_f32({2, 3});
    Tensor r = call1("aten::repeat", {x, ints({2, 1, 2})});
    QCOMPARE(r.sizes(), (Shape{2, 2, 6}));
    KILN_COMPARE_VALUES(r, ref({2, 2, 6}, [](const Shape& i) { return double(i[1] * 3 + i[2] % 3); }));
    Tensor rt = call1("aten::repeat", {x.t(), ints({2, 2})});
    KILN_COMPARE_VALUES(rt, ref({6, 4}, [](const Shape& i) { return double((i[1] % 2) * 3 + i[0] % 3); }));
    QCOMPARE(call1("aten::repeat", {Tensor::scalar_tensor(3.0, DType::Float32), ints({})}).dim(), int64_t(0));
    KILN_COMPARE_VALUES(call1("aten::repeat", {Tensor::scalar_tensor(3.0, DType::Float32), ints({2, 2})}), {3, 3, 3, 3});
    KILN_EXPECT_OP_ERROR(call_op("aten::repeat", {x, ints({2})}), "can not be smaller");
    KILN_EXPECT_OP_ERROR(call_op("aten::repeat", {x, ints({2, -1})}), "negative dimension");
    QCOMPARE(call1("aten::repeat", {x, ints({0, 2})}).sizes(), (Shape{0, 6}));
    Tensor t = call1("aten::tile", {arange_i64({3}), ints({2, 2})});
    QCOMPARE(t.sizes(), (Shape{2, 6}));
    KILN_COMPARE_VALUES(t, {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2});
  }

  void flip_roll() {
    Tensor x = arange_f32({3, 4, 5});
    Tensor f = call1("aten::flip", {x, ints({0, 2})});
    KILN_COMPARE_VALUES(f, ref({3, 4, 5}, [](const Shape& i) { return double((2 - i[0]) * 20 + i[1] * 5 + 4 - i[2]); }));
    Tensor fp = call1("aten::flip", {x.permute(std::vector<int64_t>{2, 0, 1}), ints({-1})});
    QCOMPARE(fp.strides(), (Shape{1, 20, 5}));  // preserve_format
    KILN_COMPARE_VALUES(fp, ref({5, 3, 4}, [](const Shape& i) { return double(i[1] * 20 + (3 - i[2]) * 5 + i[0]); }));
    Tensor fi = call1("aten::flip", {arange_i64({2, 3}), ints({1})});
    QCOMPARE(fi.dtype(), DType::Int64);
    KILN_COMPARE_VALUES(fi, {2, 1, 0, 5, 4, 3});
    KILN_COMPARE_VALUES(call1("aten::flip", {Tensor::scalar_tensor(1.0, DType::Float32), ints({0})}), {1});
    KILN_EXPECT_OP_ERROR(call_op("aten::flip", {x, ints({0, -3})}), "appears multiple times");
    KILN_COMPARE_VALUES(call1("aten::fliplr", {arange_f32({2, 2})}), {1, 0, 3, 2});

    Tensor y = arange_f32({3, 4});
    KILN_COMPARE_VALUES(call1("aten::roll", {y, ints({-1, 5}), ints({0, 1})}),
                        {7, 4, 5, 6, 11, 8, 9, 10, 3, 0, 1, 2});
    KILN_COMPARE_VALUES(call1("aten::roll", {y, ints({5})}), {7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6});
    KILN_COMPARE_VALUES(call1("aten::roll", {y.t(), 1, 0}), {3, 7, 11, 0, 4, 8, 1, 5, 9, 2, 6, 10});
    KILN_EXPECT_OP_ERROR(call_op("aten::roll", {y, ints({1, 2})}), "shifts and dimensions must align");
    QCOMPARE(call1("aten::roll", {Tensor::zeros({0, 3}, DType::Float32), 1, 0}).sizes(), (Shape{0, 3}));
    Tensor r3 = call1("aten::roll", {x, ints({1}), ints({2})});
    KILN_COMPARE_VALUES(r3.select(0, 0).select(0, 0), {4, 0, 1, 2, 3});
  }

  void triu_tril() {
    Tensor x = arange_f32({5, 5});
    KILN_COMPARE_VALUES(call1("aten::triu", {x, 1}), ref({5, 5}, [](const Shape& i) {
                          return i[1] - i[0] >= 1 ? double(i[0] * 5 + i[1]) : 0.0;
                        }));
    Tensor b = arange_f32({2, 3, 4});
    KILN_COMPARE_VALUES(call1("aten::tril", {b, -1}), ref({2, 3, 4}, [](const Shape& i) {
                          return i[2] - i[1] <= -1 ? double(i[0] * 12 + i[1] * 4 + i[2]) : 0.0;
                        }));
    KILN_COMPARE_VALUES(call1("aten::triu", {arange_f32({3, 4}), -5}), ref({3, 4}, [](const Shape& i) {
                          return double(i[0] * 4 + i[1]);
                        }));
    Tensor t = call1("aten::tril", {arange_f32({4, 3}).t(), 0});  // non-contiguous input
    KILN_COMPARE_VALUES(t, ref({3, 4}, [](const Shape& i) { return i[1] <= i[0] ? double(i[1] * 3 + i[0]) : 0.0; }));
    Tensor tb = call1("aten::tril", {Tensor::full({2, 3}, true, DType::Bool), 1});
    QCOMPARE(tb.dtype(), DType::Bool);
    KILN_COMPARE_VALUES(tb, {1, 1, 0, 1, 1, 1});
    KILN_EXPECT_OP_ERROR(call_op("aten::triu", {arange_f32({3})}), "at least 2 dimensions");
  }

  void large_copies_parallel() {
    // Big enough to split across threads; checks every element.
    Tensor x = arange_f32({300, 500});
    Tensor f = call1("aten::flip", {x, ints({1})});
    std::vector<double> fv = values(f);
    bool ok = true;
    for (int64_t i = 0; i < 300 && ok; ++i)
      for (int64_t j = 0; j < 500 && ok; ++j) ok = fv[size_t(i * 500 + j)] == double(i * 500 + 499 - j);
    QVERIFY(ok);
    // Transposing copies take the cache-blocked path (sizes not multiples of the tile).
    Tensor tc = call1("aten::contiguous", {x.t()});
    std::vector<double> tv = values(tc);
    ok = true;
    for (int64_t i = 0; i < 500 && ok; ++i)
      for (int64_t j = 0; j < 300 && ok; ++j) ok = tv[size_t(i * 300 + j)] == double(j * 500 + i);
    QVERIFY(ok);
    Tensor y = arange_f32({5, 70, 90});
    Tensor pc = call1("aten::clone", {y.permute(std::vector<int64_t>{2, 0, 1})}, {{"memory_format", Value("contiguous_format")}});
    KILN_COMPARE_VALUES(pc, ref({90, 5, 70}, [](const Shape& i) { return double(i[1] * 6300 + i[2] * 90 + i[0]); }));
    Tensor c = call1("aten::cat", {Value::tensor_list({x.t(), x.t()}), 0});
    std::vector<double> cv = values(c);
    ok = true;
    for (int64_t i = 0; i < 1000 && ok; ++i)
      for (int64_t j = 0; j < 300 && ok; ++j) ok = cv[size_t(i * 300 + j)] == double(j * 500 + i % 500);
    QVERIFY(ok);
  }
};

QTEST_APPLESS_MAIN(TestOpsShape)
#include "test_ops_shape.moc"
