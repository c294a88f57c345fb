#include "test_support.h"

#include "core/ops/kernel_util.h"

using namespace kiln;
using kiln::test::values;

class TestTensor : public QObject {
  Q_OBJECT
 private slots:
  void promotion() {
    QCOMPARE(promote_types(DType::UInt8, DType::Int8), DType::Int16);
    QCOMPARE(promote_types(DType::Float16, DType::BFloat16), DType::Float32);
    QCOMPARE(promote_types(DType::Bool, DType::Int32), DType::Int32);
    QCOMPARE(promote_types(DType::Int64, DType::Float16), DType::Float16);
    Tensor i64 = Tensor::zeros({3}, DType::Int64), f16 = Tensor::zeros({3}, DType::Float16);
    Tensor f64_0d = Tensor::zeros({}, DType::Float64), i32_0d = Tensor::zeros({}, DType::Int32);
    QCOMPARE(result_type({i64, Scalar(2.5)}), DType::Float32);     // float scalar lifts category
    QCOMPARE(result_type({f16, Scalar(2.5)}), DType::Float16);     // same category keeps tensor
    QCOMPARE(result_type({f16, f64_0d}), DType::Float16);          // 0-dim does not widen
    QCOMPARE(result_type({i64, f64_0d}), DType::Float64);          // ...unless category is higher
    QCOMPARE(result_type({Tensor::zeros({2}, DType::UInt8), i32_0d}), DType::UInt8);
    QCOMPARE(result_type({Tensor::zeros({2}, DType::Bool), Scalar(int64_t(3))}), DType::Int64);
  }

  void half_rounding() {
    QCOMPARE(float(Half(1.0f)), 1.0f);
    QCOMPARE(float(Half(65504.f)), 65504.f);
    QVERIFY(std::isinf(float(Half(65520.f))));
    QCOMPARE(float(Half(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
    QCOMPARE(float(Half(5.96046448e-08f)), 5.96046448e-08f);  // smallest subnormal
    QCOMPARE(float(BFloat16(1.00390625f)), 1.0f);
    QCOMPARE(float(BFloat16(1.01171875f)), 1.015625f);
    QVERIFY(std::isnan(float(BFloat16(std::nanf("")))));
  }

  void views_share_storage() {
    Tensor x = kiln::test::arange_f32({2, 3, 4});
    Tensor p = x.permute(std::vector<int64_t>{2, 0, 1});
    QCOMPARE(p.sizes(), (Shape{4, 2, 3}));
    QCOMPARE(p.strides(), (Shape{1, 12, 4}));
    QVERIFY(!p.is_contiguous());
    QCOMPARE(p.storage().get(), x.storage().get());
    Tensor s = x.slice(2, 1, 4, 2);
    QCOMPARE(s.sizes(), (Shape{2, 3, 2}));
    KILN_COMPARE_VALUES(s.select(0, 1).select(0, 2), {21, 23});
    Tensor e = x.select(2, 0).unsqueeze(2).expand({2, 3, 5});
    QCOMPARE(e.strides(), (Shape{12, 4, 0}));
    Tensor d = kiln::test::arange_f32({3, 3}).diagonal(1);
    KILN_COMPARE_VALUES(d, {1, 5});
  }

  void view_and_reshape() {
    Tensor x = kiln::test::arange_f32({4, 6});
    QCOMPARE(x.view({2, -1, 3}).sizes(), (Shape{2, 4, 3}));
    Tensor tr = x.t();
    bool threw = false;
    try {
      tr.view({24});
    } catch (const Error&) {
      threw = true;
    }
    QVERIFY(threw);
    Tensor r = tr.reshape({24});
    QVERIFY(r.storage() != x.storage());
    KILN_COMPARE_VALUES(r.slice(0, 0, 4), {0, 6, 12, 18});
    // A transposed-then-split view is still a view when dims stay contiguous chunks.
    QCOMPARE(x.view({4, 2, 3}).transpose(1, 2).reshape({4, 3, 2}).storage(), x.storage());
  }

  void copy_converts_and_broadcasts() {
    Tensor src = Tensor::from_vector<float>({1.5f, -2.7f, 3.2f}, {3});
    Tensor dst = Tensor::empty({2, 3}, DType::Int32);
    dst.copy_(src);
    KILN_COMPARE_VALUES(dst, {1, -2, 3, 1, -2, 3});
    Tensor b = src.to(DType::Bool);
    KILN_COMPARE_VALUES(b, {1, 1, 1});
    QCOMPARE(src.select(0, 0).to(DType::BFloat16).to(DType::Float32).item().to_double(), 1.5);
  }

  void bad_views_are_user_errors() {
    Tensor x = Tensor::zeros({2, 3}, DType::Float32);
    auto throws = [](auto f) {
      try {
        f();
      } catch (const Error&) {
        return true;
      }
      return false;
    };
    QVERIFY(throws([&] { x.view({5}); }));
    QVERIFY(throws([&] { x.expand({4, 3, 4}); }));
    QVERIFY(throws([&] { x.select(1, 3); }));
    QVERIFY(throws([&] { x.as_strided({10}, {1}, 0); }));
    QVERIFY(throws([&] { x.permute(std::vector<int64_t>{0, 0}); }));
  }
};

QTEST_APPLESS_MAIN(TestTensor)
#include "test_tensor.moc"
