// Factory ops: dtype inference, layouts, arange / linspace numerics (bit
// patterns and values recorded from PyTorch 2.11 on the CPU).
#include "test_support.h"

#include <bit>

#include "core/ops/kernel_util.h"

using namespace kiln;
using kiln::test::arange_f32;
using kiln::test::call1;
using kiln::test::values;

namespace {
using kiln::test::ints;

std::vector<int32_t> float_bits(const Tensor& t) {
  std::vector<int32_t> out;
  Tensor c = t.contiguous();
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(std::bit_cast<int32_t>(c.data<float>()[i]));
  return out;
}
}  // namespace

class TestOpsFactory : public QObject {
  Q_OBJECT
 private slots:
  void full_dtype_inference() {
    Tensor b = call1("aten::full", {ints({2}), true});
    QCOMPARE(b.dtype(), DType::Bool);
    Tensor i = call1("aten::full", {ints({2, 3}), 3});
    QCOMPARE(i.dtype(), DType::Int64);
    KILN_COMPARE_VALUES(i, {3, 3, 3, 3, 3, 3});
    Tensor f = call1("aten::full", {ints({2}), 3.5});
    QCOMPARE(f.dtype(), DType::Float32);
    Tensor h = call1("aten::full", {ints({1}), 0.1}, {{"dtype", Value(DType::Float16)}});
    QCOMPARE(h.dtype(), DType::Float16);
    QCOMPARE(values(h)[0], double(float(Half(0.1f))));
    QCOMPARE(call1("aten::full", {ints({}), 2}).dim(), int64_t(0));
    // c10's checked Scalar conversion: out-of-range fills are errors, negative
    // ints wrap into unsigned types, infinities suit float types.
    KILN_EXPECT_OP_ERROR(call_op("aten::full", {ints({2}), 1e5}, {{"dtype", Value(DType::Float16)}}),
                      "cannot be converted to type float16 without overflow");
    KILN_EXPECT_OP_ERROR(call_op("aten::full", {ints({2}), 300}, {{"dtype", Value(DType::UInt8)}}), "without overflow");
    KILN_EXPECT_OP_ERROR(call_op("aten::full", {ints({2}), 1e10}, {{"dtype", Value(DType::Int32)}}), "without overflow");
    KILN_COMPARE_VALUES(call1("aten::full", {ints({2}), -1}, {{"dtype", Value(DType::UInt8)}}), {255, 255});
    QVERIFY(std::isinf(values(call1("aten::full", {ints({1}), INFINITY}, {{"dtype", Value(DType::Float16)}}))[0]));
    KILN_COMPARE_VALUES(call1("aten::full", {ints({1}), 2.5}, {{"dtype", Value(DType::Bool)}}), {1});
    KILN_EXPECT_OP_ERROR(call_op("aten::full", {ints({-1, 2}), 1.0}), "negative dimension");
    KILN_EXPECT_OP_ERROR(call_op("aten::full", {ints({2}), 1.0}, {{"device", Value("cuda")}}), "not supported");
    KILN_EXPECT_OP_ERROR(call_op("aten::full", {ints({2}), 1.0}, {{"layout", Value("torch.sparse_coo")}}), "strided");
    QCOMPARE(call1("aten::full", {ints({2}), 1.0}, {{"device", Value("cpu")}, {"pin_memory", Value(false)}}).numel(),
             int64_t(2));
    Tensor m = call1("aten::full", {ints({2, 3}), 1.0}, {{"device", Value("meta")}});
    QVERIFY(m.is_meta());
    QCOMPARE(m.sizes(), (Shape{2, 3}));
    auto meta = call_meta("aten::full", {ints({4}), 1});
    QVERIFY(meta.ok());
    QCOMPARE((*meta)[0].to_tensor().dtype(), DType::Int64);
  }

  void zeros_ones_empty() {
    Tensor z = call1("aten::zeros", {ints({2, 3})});
    QCOMPARE(z.dtype(), DType::Float32);
    KILN_COMPARE_VALUES(z, {0, 0, 0, 0, 0, 0});
    Tensor o = call1("aten::ones", {ints({3})}, {{"dtype", Value(DType::Int32)}});
    QCOMPARE(o.dtype(), DType::Int32);
    KILN_COMPARE_VALUES(o, {1, 1, 1});
    Tensor e = call1("aten::empty.memory_format", {ints({2, 3, 4, 5})}, {{"memory_format", Value("torch.channels_last")}});
    QCOMPARE(e.strides(), (Shape{60, 1, 15, 3}));
    Tensor es = call1("aten::empty_strided", {ints({2, 3}), ints({1, 2})}, {{"dtype", Value(DType::Float64)}});
    QCOMPARE(es.strides(), (Shape{1, 2}));
    QCOMPARE(es.dtype(), DType::Float64);
    KILN_EXPECT_OP_ERROR(call_op("aten::empty_strided", {ints({2, 3}), ints({1})}), "mismatch in length");
    Tensor st = call1("aten::scalar_tensor", {3});
    QCOMPARE(st.dtype(), DType::Float32);  // scalar_tensor defaults to float whatever the value
    QCOMPARE(st.dim(), int64_t(0));
    QCOMPARE(values(st)[0], 3.0);
    Tensor eye = call1("aten::eye.m", {2, 3});
    KILN_COMPARE_VALUES(eye, {1, 0, 0, 0, 1, 0});
    KILN_COMPARE_VALUES(call1("aten::eye", {2}, {{"dtype", Value(DType::Int64)}}), {1, 0, 0, 1});
    KILN_EXPECT_OP_ERROR(call_op("aten::eye", {-1}), "n must be greater or equal to 0, got -1");
  }

  void like_and_new() {
    Tensor x = Tensor::zeros({2, 3}, DType::Int32).t();
    Tensor z = call1("aten::zeros_like", {x});
    QCOMPARE(z.dtype(), DType::Int32);
    QCOMPARE(z.strides(), (Shape{1, 3}));  // preserve_format
    Tensor o = call1("aten::ones_like", {x}, {{"dtype", Value(DType::Float64)}, {"memory_format", Value("torch.contiguous_format")}});
    QCOMPARE(o.dtype(), DType::Float64);
    QVERIFY(o.is_contiguous());
    KILN_COMPARE_VALUES(o, {1, 1, 1, 1, 1, 1});
    Tensor f = call1("aten::full_like", {Tensor::zeros({2}, DType::Int32), 2.7});
    QCOMPARE(f.dtype(), DType::Int32);  // full_like keeps self's dtype
    KILN_COMPARE_VALUES(f, {2, 2});
    QCOMPARE(call1("aten::empty_like", {x}).sizes(), (Shape{3, 2}));
    Tensor nf = call1("aten::new_full", {Tensor::zeros({2}, DType::Int32), ints({2, 2}), 2.7});
    QCOMPARE(nf.dtype(), DType::Int32);
    KILN_COMPARE_VALUES(nf, {2, 2, 2, 2});
    Tensor nz = call1("aten::new_zeros", {x, ints({4})}, {{"dtype", Value(DType::BFloat16)}});
    QCOMPARE(nz.dtype(), DType::BFloat16);
    KILN_COMPARE_VALUES(call1("aten::new_ones", {arange_f32({1}), ints({2})}), {1, 1});
    QCOMPARE(call1("aten::new_empty_strided", {arange_f32({1}), ints({2, 2}), ints({1, 2})}).strides(), (Shape{1, 2}));
    Tensor meta = call1("aten::zeros_like", {Tensor::meta({3}, DType::Float16)});
    QVERIFY(meta.is_meta());
    QCOMPARE(meta.dtype(), DType::Float16);
  }

  void arange() {
    Tensor a = call1("aten::arange.start_step", {0, 10, 3}, {{"dtype", Value(DType::Int64)}});
    KILN_COMPARE_VALUES(a, {0, 3, 6, 9});
    QCOMPARE(call1("aten::arange", {5}).dtype(), DType::Int64);
    Tensor af = call1("aten::arange", {2.5});
    QCOMPARE(af.dtype(), DType::Float32);
    KILN_COMPARE_VALUES(af, {0, 1, 2});
    KILN_COMPARE_VALUES(call1("aten::arange.start_step", {5, 0, -2}), {5, 3, 1});
    KILN_COMPARE_VALUES(call1("aten::arange.start", {-2, 2}), {-2, -1, 0, 1});
    // Float bounds with an integer dtype truncate first, as ATen does.
    KILN_COMPARE_VALUES(call1("aten::arange.start_step", {0.5, 5.5, 1}, {{"dtype", Value(DType::Int64)}}), {0, 1, 2, 3, 4});
    KILN_COMPARE_VALUES(call1("aten::arange.start_step", {0.5, 5.5, 1}, {{"dtype", Value(DType::Int32)}}), {0, 1, 2, 3, 4});
    KILN_EXPECT_OP_ERROR(call_op("aten::arange.start_step", {0, 5, -1}), "upper bound and lower bound inconsistent");
    KILN_EXPECT_OP_ERROR(call_op("aten::arange.start_step", {0, 5, 0}), "step must be nonzero");
    KILN_EXPECT_OP_ERROR(call_op("aten::arange.start_step", {0, 5, 0.5}, {{"dtype", Value(DType::Int64)}}), "step must be nonzero");
    QCOMPARE(call1("aten::arange.start_step", {0, 1, 0.1}).numel(), int64_t(10));
    QCOMPARE(call1("aten::arange.start_step", {0, 1, 0.1}, {{"dtype", Value(DType::Float64)}}).numel(), int64_t(10));
    // Bit-exact with PyTorch's vectorized float32 loop (base rounded per 8-lane vector).
    std::vector<int32_t> want = {
        -1077936128, -1078774989, -1079613850, -1080452710, -1081291571, -1082130432, -1083808154, -1085485875,
        -1087163597, -1088841319, -1090519040, -1093874484, -1097229927, -1102263092, -1110651701, 843893965,
        1036831949,  1045220557,  1050253722,  1053609165,  1056964608,  1058642330,  1060320051,  1061997773,
        1063675494,  1065353216,  1066192077,  1067030937,  1067869798,  1068708659,  1069547520,  1070386381,
        1071225242,  1072064102,  1072902963,  1073741824,  1074161254,  1074580685};
    QCOMPARE(float_bits(call1("aten::arange.start_step", {-1.5, 2.3, 0.1})), want);
    Tensor h = call1("aten::arange.start_step", {-1.5, 2.3, 0.1}, {{"dtype", Value(DType::Float16)}});
    std::vector<double> hv = values(h);
    QCOMPARE(hv.size(), size_t(38));
    QCOMPARE(hv[1], -1.400390625);
    QCOMPARE(hv[13], -0.199951171875);
    QCOMPARE(hv[14], -0.0999755859375);
    QCOMPARE(hv[15], 0.0);
    QCOMPARE(hv[37], 2.19921875);
    std::vector<double> bf = values(call1("aten::arange.start_step", {0, 300, 7.3}, {{"dtype", Value(DType::BFloat16)}}));
    QCOMPARE(bf.size(), size_t(42));
    QCOMPARE(bf[1], 7.3125);
    QCOMPARE(bf[35], 256.0);
    QCOMPARE(bf[36], 262.0);
    QCOMPARE(bf[41], 300.0);
    QVERIFY(call1("aten::arange", {4}, {{"device", Value("meta")}}).is_meta());
  }

  void linspace() {
    std::vector<int32_t> want = {-1079613850, -1083808154, -1090519042, -1110651708, 1050253724, 1060320052,
                                 1066192077,  1069547520,  1072902964,  1075000115,  1076677837};
    QCOMPARE(float_bits(call1("aten::linspace", {-1.3, 2.7, 11})), want);
    std::vector<int32_t> want_b = {
        1036831949, 1106958746, 1115321139, 1119599821, 1123696640, 1125933466, 1127981875, 1130030285, 1132078695,
        1133294592, 1134318797, 1135343002, 1136367207, 1137391411, 1138415616, 1139439821, 1140464025, 1141169459,
        1141681561, 1142193664, 1142705766, 1143217869, 1143729971, 1144242073, 1144754176, 1145266278, 1145778381,
        1146290483, 1146802585, 1147314688, 1147826790, 1148338893, 1148850995};
    QCOMPARE(float_bits(call1("aten::linspace", {0.1, 1000.3, 33})), want_b);
    KILN_COMPARE_VALUES(call1("aten::linspace", {-1.3, 2.7, 11}, {{"dtype", Value(DType::Float16)}}),
                        {-1.2998046875, -0.89990234375, -0.5, -0.1005859375, 0.2998046875, 0.69921875, 1.099609375, 1.5,
                         1.8994140625, 2.298828125, 2.69921875});
    KILN_COMPARE_VALUES(call1("aten::linspace", {-1.3, 2.7, 11}, {{"dtype", Value(DType::BFloat16)}}),
                        {-1.296875, -0.8984375, -0.49609375, -0.09375, 0.3046875, 0.703125, 1.1015625, 1.5, 1.90625,
                         2.296875, 2.703125});
    std::vector<double> d = values(call1("aten::linspace", {-1.3, 2.7, 11}, {{"dtype", Value(DType::Float64)}}));
    QCOMPARE(d[3], -0.09999999999999998);
    QCOMPARE(d[8], 1.9000000000000001);
    QCOMPARE(d[10], 2.7);
    KILN_COMPARE_VALUES(call1("aten::linspace", {-7, 12, 6}, {{"dtype", Value(DType::Int32)}}), {-7, -3, 0, 4, 8, 12});
    KILN_COMPARE_VALUES(call1("aten::linspace", {0, 10, 4}, {{"dtype", Value(DType::Int64)}}), {0, 3, 6, 10});
    KILN_COMPARE_VALUES(call1("aten::linspace", {3, 10, 1}), {3});
    QCOMPARE(call1("aten::linspace", {3, 10, 0}).numel(), int64_t(0));
    KILN_EXPECT_OP_ERROR(call_op("aten::linspace", {0, 1, -1}), "non-negative");
  }
};

QTEST_APPLESS_MAIN(TestOpsFactory)
#include "test_ops_factory.moc"
