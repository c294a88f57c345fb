// core/python/torch_api: Tensor.__getitem__ / __setitem__ and torch.tensor(data).
// Shapes and messages marked PyTorch 2.11 were measured with that version.
#include <QtTest/QtTest>

#include <cmath>

#include "torch_api_test_util.h"

using namespace kiln;
using namespace kiln::torchapi;
using namespace kiln::torchapi_test;
using kiln::test::values;

class TestTorchApiIndexing : public QObject {
  Q_OBJECT

 private slots:
  void indexingBasic();
  void indexingAdvanced();
  void setitem();
  void tensorFromData();
};

void TestTorchApiIndexing::indexingBasic() {
  Tensor x = kiln::test::arange_f32({2, 3, 4});
  using I = IndexItem;
  auto get = [&](std::vector<IndexItem> items, Mode mode = Mode::Eager) {
    auto r = getitem(mode == Mode::Meta ? to_meta(x).to_tensor() : x, items, mode);
    if (!r) qFatal("getitem: %s", r.status().message().c_str());
    return r->to_tensor();
  };
  Tensor a = get({I::integer(1)});
  QCOMPARE(a.sizes(), (Shape{3, 4}));
  QCOMPARE(a.storage(), x.storage());  // a view
  QCOMPARE(a.storage_offset(), int64_t(12));
  Tensor b = get({I::integer(-1), I::slice(1, std::nullopt, std::nullopt), I::slice(std::nullopt, std::nullopt, 2)});
  QCOMPARE(b.sizes(), (Shape{2, 2}));
  QCOMPARE(b.strides(), (Shape{4, 2}));
  KILN_COMPARE_VALUES(b, {16, 18, 20, 22});
  Tensor c = get({I::ellipsis(), I::integer(0)});
  QCOMPARE(c.sizes(), (Shape{2, 3}));
  KILN_COMPARE_VALUES(c, {0, 4, 8, 12, 16, 20});
  Tensor d = get({I::none(), I::integer(0), I::none(), I::ellipsis(), I::slice(-2, std::nullopt, std::nullopt)});
  QCOMPARE(d.sizes(), (Shape{1, 1, 3, 2}));
  Tensor e = get({I::slice(5, 10, std::nullopt)});  // out-of-range slices clamp
  QCOMPARE(e.sizes(), (Shape{0, 3, 4}));
  Tensor t = get({I::boolean(true)});
  QCOMPARE(t.sizes(), (Shape{1, 2, 3, 4}));
  QCOMPARE(get({I::boolean(false)}).sizes(), (Shape{0, 2, 3, 4}));
  Tensor whole = get({I::ellipsis()});
  QCOMPARE(whole.sizes(), x.sizes());
  QCOMPARE(whole.storage(), x.storage());
  // Meta mode: same metadata
  Tensor bm = get({I::integer(-1), I::slice(1, std::nullopt, std::nullopt), I::slice(std::nullopt, std::nullopt, 2)}, Mode::Meta);
  QCOMPARE(bm.type_str(), b.type_str());
  QCOMPARE(bm.storage_offset(), b.storage_offset());
  // errors
  auto err = [&](std::vector<IndexItem> items) {
    auto r = getitem(x, items, Mode::Eager);
    return r ? std::string("<no error>") : r.status().message();
  };
  QVERIFY(contains(err({I::integer(0), I::integer(0), I::integer(0), I::integer(0)}), "too many indices for tensor of dimension 3"));
  QVERIFY(contains(err({I::integer(2)}), "index 2 is out of bounds for dimension 0 with size 2"));
  QVERIFY(contains(err({I::slice(std::nullopt, std::nullopt, -1)}), "step must be greater than zero"));
  QVERIFY(contains(err({I::ellipsis(), I::ellipsis()}), "an index can only have a single ellipsis"));
  auto zero_dim = getitem(F32({1}, {}), {I::integer(0)}, Mode::Eager);
  QVERIFY(!zero_dim.ok() && contains(zero_dim.status().message(), "invalid index of a 0-dim tensor"));
}

void TestTorchApiIndexing::indexingAdvanced() {
  Tensor x = kiln::test::arange_f32({2, 3, 4});
  using I = IndexItem;
  auto get = [&](std::vector<IndexItem> items) {
    auto r = getitem(x, items, Mode::Eager);
    if (!r) qFatal("getitem: %s", r.status().message().c_str());
    return r->to_tensor();
  };
  // x[[1, 0]] and x[tensor]
  Tensor a = get({I::of_sequence(L({1, 0}))});
  QCOMPARE(a.sizes(), (Shape{2, 3, 4}));
  KILN_COMPARE_VALUES(run1("Tensor.select", {a, 0, 0}), std::vector<double>(values(run1("Tensor.select", {x, 0, 1}))));
  // adjacent advanced indices stay in place: x[:, [0, 2], [1, 3]] -> [2, 2]
  Tensor b = get({I::slice(std::nullopt, std::nullopt, std::nullopt), I::of_tensor(I64({0, 2}, {2})),
                  I::of_tensor(I64({1, 3}, {2}))});
  QCOMPARE(b.sizes(), (Shape{2, 2}));
  KILN_COMPARE_VALUES(b, {1, 11, 13, 23});
  // separated by a slice: the broadcast index dims go first -> [2, 3]
  Tensor c = get({I::of_tensor(I64({0, 1}, {2})), I::slice(std::nullopt, std::nullopt, std::nullopt),
                  I::of_tensor(I64({0, 3}, {2}))});
  QCOMPARE(c.sizes(), (Shape{2, 3}));
  KILN_COMPARE_VALUES(c, {0, 4, 8, 15, 19, 23});
  // int + tensor is advanced too (PyTorch 2.11: x[0, :, [1, 2]].shape == (3, 2))
  Tensor d = get({I::integer(0), I::slice(std::nullopt, std::nullopt, std::nullopt), I::of_sequence(L({1, 2}))});
  QCOMPARE(d.sizes(), (Shape{3, 2}));
  // boolean mask over the first two dims
  Tensor mask = B({true, false, true, false, false, true}, {2, 3});
  Tensor e = get({I::of_tensor(mask)});
  QCOMPARE(e.sizes(), (Shape{3, 4}));
  KILN_COMPARE_VALUES(run1("Tensor.select", {e, 1, 0}), {0, 8, 20});
  Tensor f = get({I::ellipsis(), I::of_tensor(B({true, false, false, true}, {4}))});
  QCOMPARE(f.sizes(), (Shape{2, 3, 2}));
  // a 2-D index tensor
  Tensor g = get({I::of_tensor(I64({0, 1, 1, 0}, {2, 2})), I::integer(2)});
  QCOMPARE(g.sizes(), (Shape{2, 2, 4}));
  // a 0-dim integer tensor selects (a view, as an int)
  Tensor h = get({I::of_tensor(Tensor::scalar_tensor(int64_t{1}, DType::Int64))});
  QCOMPARE(h.sizes(), (Shape{3, 4}));
  QCOMPARE(h.storage(), x.storage());
  // Meta mode: integer indices work, masks are data-dependent
  Tensor xm = to_meta(x).to_tensor();
  auto bm = getitem(xm, {I::slice(std::nullopt, std::nullopt, std::nullopt), I::of_tensor(I64({0, 2}, {2})),
                         I::of_tensor(I64({1, 3}, {2}))}, Mode::Meta);
  QVERIFY(bm.ok());
  QCOMPARE(bm->to_tensor().type_str(), b.type_str());
  QVERIFY(!getitem(xm, {I::of_tensor(mask)}, Mode::Meta).ok());
  QVERIFY(!getitem(x, {I::of_tensor(F32({0}, {1}))}, Mode::Eager).ok());
}

void TestTorchApiIndexing::setitem() {
  using I = IndexItem;
  auto all = I::slice(std::nullopt, std::nullopt, std::nullopt);
  Tensor x = Tensor::zeros({2, 3}, DType::Float32);
  QVERIFY(kiln::torchapi::setitem(x, {I::integer(0)}, 1.5, Mode::Eager).ok());
  KILN_COMPARE_VALUES(x, {1.5, 1.5, 1.5, 0, 0, 0});
  QVERIFY(kiln::torchapi::setitem(x, {all, I::integer(1)}, F32({7, 8}, {2}), Mode::Eager).ok());
  KILN_COMPARE_VALUES(x, {1.5, 7, 1.5, 0, 8, 0});
  // a broadcast row, and a value with extra leading 1-dims
  QVERIFY(kiln::torchapi::setitem(x, {I::slice(1, std::nullopt, std::nullopt)}, F32({1, 2, 3}, {1, 1, 3}), Mode::Eager).ok());
  KILN_COMPARE_VALUES(x, {1.5, 7, 1.5, 1, 2, 3});
  // advanced: index_put_ with a list and with a mask
  QVERIFY(kiln::torchapi::setitem(x, {I::of_sequence(L({0, 1})), I::of_sequence(L({2, 0}))}, -1, Mode::Eager).ok());
  KILN_COMPARE_VALUES(x, {1.5, 7, -1, -1, 2, 3});
  Tensor mask = run1("torch.gt", {x, 2});
  QVERIFY(kiln::torchapi::setitem(x, {I::of_tensor(mask)}, 0, Mode::Eager).ok());
  KILN_COMPARE_VALUES(x, {1.5, 0, -1, -1, 2, 0});
  QVERIFY(kiln::torchapi::setitem(x, {all, I::of_sequence(L({0}))}, F32({5, 6}, {2, 1}), Mode::Eager).ok());
  KILN_COMPARE_VALUES(x, {5, 0, -1, 6, 2, 0});
  // a Python list value becomes a tensor of x's dtype
  QVERIFY(kiln::torchapi::setitem(x, {I::integer(1)}, LT({1, 2, 3}), Mode::Eager).ok());
  KILN_COMPARE_VALUES(x, {5, 0, -1, 1, 2, 3});
  // errors: shape mismatch, dtype mismatch for index_put (PyTorch 2.11's message), overflow
  Status s = kiln::torchapi::setitem(x, {I::integer(0)}, F32({1, 2}, {2}), Mode::Eager);
  QVERIFY(!s.ok());
  s = kiln::torchapi::setitem(x, {I::of_sequence(L({0}))}, I64({1, 2, 3}, {3}), Mode::Eager);
  QVERIFY(!s.ok() && contains(s.message(), "Index put requires the source and destination dtypes match"));
  Tensor u8 = Tensor::zeros({2}, DType::UInt8);
  QVERIFY(!kiln::torchapi::setitem(u8, {I::integer(0)}, 300, Mode::Eager).ok());
  // Meta mode checks and does not write
  Tensor m = Tensor::meta({2, 3}, DType::Float32);
  QVERIFY(kiln::torchapi::setitem(m, {all, I::integer(1)}, Tensor::meta({2}, DType::Float32), Mode::Meta).ok());
  QVERIFY(!kiln::torchapi::setitem(m, {I::integer(0)}, Tensor::meta({2}, DType::Float32), Mode::Meta).ok());
}

void TestTorchApiIndexing::tensorFromData() {
  auto t = [](const Value& v, std::optional<DType> d = std::nullopt) {
    auto r = tensor_from_data(v, d, Mode::Eager);
    if (!r) qFatal("tensor_from_data: %s", r.status().message().c_str());
    return *r;
  };
  QCOMPARE(t(ValueList{true, false}).dtype(), DType::Bool);
  QCOMPARE(t(ValueList{1, 2}).dtype(), DType::Int64);
  QCOMPARE(t(ValueList{1, 2.5}).dtype(), DType::Float32);
  QCOMPARE(t(ValueList{true, 2}).dtype(), DType::Int64);
  QCOMPARE(t(3.5).sizes(), Shape{});
  Tensor n = t(ValueList{ValueList{1, 2, 3}, ValueList{4, 5, 6}});
  QCOMPARE(n.sizes(), (Shape{2, 3}));
  KILN_COMPARE_VALUES(n, {1, 2, 3, 4, 5, 6});
  QCOMPARE(t(ValueList{}).sizes(), (Shape{0}));
  QCOMPARE(t(ValueList{}).dtype(), DType::Float32);
  QCOMPARE(t(ValueList{ValueList{}, ValueList{}}).sizes(), (Shape{2, 0}));
  Tensor c = t(ValueList{1.7, -1.7}, DType::Int64);
  KILN_COMPARE_VALUES(c, {1, -1});
  QCOMPARE(t(ValueList{Tensor::scalar_tensor(1.0, DType::Float64), 2}).dtype(), DType::Float64);
  auto ragged = tensor_from_data(ValueList{ValueList{1, 2}, ValueList{3}}, std::nullopt, Mode::Eager);
  QVERIFY(!ragged.ok());
  QVERIFY2(contains(ragged.status().message(), "expected sequence of length 2 at dim 1 (got 1)"),
           ragged.status().message().c_str());
  QVERIFY(!tensor_from_data(ValueList{1, ValueList{2}}, std::nullopt, Mode::Eager).ok());
  QVERIFY(!tensor_from_data(ValueList{Value()}, std::nullopt, Mode::Eager).ok());
  auto meta = tensor_from_data(LT({LT({1, 2})}), std::nullopt, Mode::Meta);
  QVERIFY(meta.ok() && meta->is_meta() && meta->sizes() == (Shape{1, 2}));
  // torch.tensor through the table; new_tensor takes self's dtype
  QCOMPARE(run1("torch.tensor", {LT({1, 2})}, {{"dtype", DType::Float16}}).dtype(), DType::Float16);
  QCOMPARE(run1("Tensor.new_tensor", {F32({1}, {1}), LT({1, 2})}).dtype(), DType::Float32);
}

QTEST_APPLESS_MAIN(TestTorchApiIndexing)
#include "test_torch_api_indexing.moc"
