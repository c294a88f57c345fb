#include "test_support.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <bit>
#include <limits>
#include <random>

#include "core/io/safetensors.h"
#include "core/ops/kernel_util.h"
#include "core/ops/reduce_util.h"
#include "core/tensor/parallel.h"

using namespace kiln;
using kiln::test::arange_f32;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::values;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Tensor randn(Shape sizes, uint32_t seed, DType dtype = DType::Float32) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> v(size_t(shape_numel(sizes)));
  for (float& f : v) f = dist(gen);
  return Tensor::from_vector(v, std::move(sizes)).to(dtype);
}

using kiln::test::ints;

// The expected reduction of x over `dims` (all when empty) computed naively in long double.
std::vector<double> naive_sum(const Tensor& x, const std::vector<int64_t>& dims) {
  std::vector<double> v = values(x);
  reduction::DimMask mask = reduction::dim_mask(x.dim(), std::span<const int64_t>(dims));
  Shape out_sizes = reduction::reduced_sizes(x.sizes(), mask, true);
  std::vector<long double> acc(size_t(shape_numel(out_sizes)), 0.0L);
  Shape idx(size_t(x.dim()), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t o = 0;
    for (int64_t d = 0; d < x.dim(); ++d) o = o * out_sizes[size_t(d)] + (mask[size_t(d)] ? 0 : idx[size_t(d)]);
    acc[size_t(o)] += v[i];
    for (int64_t d = x.dim() - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < x.size(d)) break;
      idx[size_t(d)] = 0;
    }
  }
  return std::vector<double>(acc.begin(), acc.end());
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol) {
  QCOMPARE(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i])))
      QFAIL(qPrintable(QString("element %1: got %2, want %3").arg(i).arg(got[i], 0, 'g', 12).arg(want[i], 0, 'g', 12)));
}

QString error_of(std::string_view op, const ValueList& args, const KwargList& kwargs = {}) {
  auto r = call_op(op, args, kwargs);
  return r ? QString() : QString::fromStdString(r.status().message());
}

}  // namespace

class TestOpsReduction : public QObject {
  Q_OBJECT
 private slots:
  void sum_dims_and_keepdim() {
    Tensor x = arange_f32({2, 3, 4});
    KILN_COMPARE_VALUES(call1("aten::sum", {x}), {276});
    Tensor s1 = call1("aten::sum.dim_IntList", {x, ints({1}), true});
    QCOMPARE(s1.sizes(), (Shape{2, 1, 4}));
    KILN_COMPARE_VALUES(s1, {12, 15, 18, 21, 48, 51, 54, 57});
    Tensor s02 = call1("aten::sum.dim_IntList", {x, ints({0, -1})});
    QCOMPARE(s02.sizes(), (Shape{3}));
    KILN_COMPARE_VALUES(s02, {60, 92, 124});
    // An empty list and None both mean every dim.
    KILN_COMPARE_VALUES(call1("aten::sum.dim_IntList", {x, ints({})}), {276});
    QCOMPARE(call1("aten::sum.dim_IntList", {x, Value(), true}).sizes(), (Shape{1, 1, 1}));
  }

  void sum_dtypes() {
    Tensor i = Tensor::from_vector<int32_t>({2000000000, 2000000000, 5}, {3});
    Tensor s = call1("aten::sum", {i});
    QCOMPARE(s.dtype(), DType::Int64);
    QCOMPARE(s.item().to_int(), int64_t(4000000005));
    Tensor b = Tensor::from_vector<bool>({true, false, true, true}, {4});
    QCOMPARE(call1("aten::sum", {b}).dtype(), DType::Int64);
    QCOMPARE(call1("aten::sum", {b}).item().to_int(), int64_t(3));
    // dtype= casts the input first: 1.7 + -2.3 + 0.9 as int64 is 1 - 2 + 0.
    Tensor f = Tensor::from_vector<float>({1.7f, -2.3f, 0.9f}, {3});
    Tensor si = call1("aten::sum", {f}, {{"dtype", DType::Int64}});
    QCOMPARE(si.dtype(), DType::Int64);
    QCOMPARE(si.item().to_int(), int64_t(-1));
    QCOMPARE(call1("aten::sum.dim_IntList", {f, ints({0})}, {{"dtype", DType::Float64}}).dtype(), DType::Float64);
    // Reduced floats accumulate in float and round once.
    Tensor h = Tensor::full({1000}, Scalar(0.1), DType::Float16);
    Tensor hs = call1("aten::sum", {h});
    QCOMPARE(hs.dtype(), DType::Float16);
    QCOMPARE(float(hs.item().to_double()), float(Half(float(Half(0.1f)) * 1000.0f)));
    Tensor bf = Tensor::full({3}, Scalar(1.0), DType::BFloat16);
    QCOMPARE(call1("aten::sum", {bf}).item().to_double(), 3.0);
  }

  void sum_empty_and_scalar() {
    Tensor e = Tensor::zeros({0, 3}, DType::Float32);
    KILN_COMPARE_VALUES(call1("aten::sum.dim_IntList", {e, ints({0})}), {0, 0, 0});
    QCOMPARE(call1("aten::sum.dim_IntList", {e, ints({1})}).sizes(), (Shape{0}));
    KILN_COMPARE_VALUES(call1("aten::prod", {e}), {1});
    Tensor z = Tensor::scalar_tensor(2.5, DType::Float32);
    Tensor zs = call1("aten::sum.dim_IntList", {z, ints({0}), true});
    QCOMPARE(zs.dim(), int64_t(0));
    KILN_COMPARE_VALUES(zs, {2.5});
  }

  // Below ATen's GRAIN_SIZE a contiguous float32 sum takes ATen's order
  // (SumKernel.cpp's cascade over AVX2 vectors): bit-equal to what torch
  // 1.13 printed for these inner, outer and short reductions and a mean.
  void float_sum_in_aten_order() {
    auto data = [](int64_t n, Shape sizes) {
      std::vector<float> v;
      for (int64_t i = 0; i < n; ++i) v.push_back(float(double((i * 7919) % 1000) / 997.0 - 0.5));
      return Tensor::from_vector(v, std::move(sizes));
    };
    auto bits = [](const Tensor& t, int64_t i) { return std::bit_cast<int32_t>(float(values(t)[size_t(i)])); };
    QCOMPARE(bits(call1("aten::sum", {data(2000, {2000})}), 0), 1073767065);
    QCOMPARE(bits(call1("aten::sum", {data(5, {5})}), 0), 1060313320);
    QCOMPARE(bits(call1("aten::mean", {data(37, {37})}), 0), -1137872867);
    Tensor cols = call1("aten::sum.dim_IntList", {data(2000, {50, 40}), ints({0})});
    QCOMPARE(bits(cols, 3), 1064141614);
    QCOMPARE(bits(cols, 35), -1087548952);
    QCOMPARE(bits(call1("aten::sum.dim_IntList", {data(2000, {50, 40}), ints({1})}), 7), -1096526527);
    Tensor narrow = call1("aten::sum.dim_IntList", {data(300, {50, 6}), ints({0})});
    QCOMPARE(bits(narrow, 1), -1096358243);
    QCOMPARE(bits(narrow, 5), -1090073106);
  }

  void sum_non_contiguous_matches_naive() {
    Tensor base = randn({6, 5, 7, 4}, 1);
    Tensor p = base.permute(std::vector<int64_t>{2, 0, 3, 1}).slice(0, 1, 7, 2);  // [3, 6, 4, 5]
    QVERIFY(!p.is_contiguous());
    for (auto dims : std::vector<std::vector<int64_t>>{{}, {0}, {1}, {3}, {0, 2}, {1, 3}, {0, 1, 3}}) {
      Tensor s = call1("aten::sum.dim_IntList", {p, ints(dims)});
      expect_close(values(s), naive_sum(p, dims), 1e-6, 1e-6);
    }
    // Expanded (zero-stride) input.
    Tensor ex = base.select(1, 0).select(1, 0).unsqueeze(1).expand({6, 9, 4});
    expect_close(values(call1("aten::sum.dim_IntList", {ex, ints({1})})), naive_sum(ex, {1}), 1e-6, 1e-6);
  }

  void sum_large_paths_accurate() {
    // Shapes that take each engine path: full split into partial chunks, rows
    // split over outputs, a vertical (outer dim) reduction, and a short inner run.
    struct Case {
      Shape sizes;
      std::vector<int64_t> dims;
    };
    std::vector<Case> cases = {{{1 << 20}, {}}, {{512, 2048}, {1}}, {{2048, 512}, {0}},
                               {{100000, 3}, {1}}, {{3, 100000}, {0}}, {{64, 300, 40}, {0, 2}}};
    uint32_t seed = 7;
    for (const Case& c : cases) {
      Tensor x = randn(c.sizes, seed++);
      Tensor s = call1("aten::sum.dim_IntList", {x, ints(c.dims)});
      expect_close(values(s), naive_sum(x, c.dims), 1.3e-6, 1e-5);
      Tensor m = call1("aten::mean.dim", {x, ints(c.dims)});
      std::vector<double> want = naive_sum(x, c.dims);
      double n = double(x.numel()) / double(want.size());
      for (double& w : want) w /= n;
      expect_close(values(m), want, 1.3e-6, 1e-6);
    }
  }

  void sum_is_thread_count_independent() {
    Tensor x = randn({1 << 21}, 3);
    set_num_threads(1);
    double one_thread = call1("aten::sum", {x}).item().to_double();
    set_num_threads(2);
    double two_threads = call1("aten::sum", {x}).item().to_double();
    set_num_threads(0);
    QCOMPARE(one_thread, two_threads);
  }

  void mean_rules() {
    Tensor x = arange_f32({2, 3});
    KILN_COMPARE_VALUES(call1("aten::mean", {x}), {2.5});
    KILN_COMPARE_VALUES(call1("aten::mean.dim", {x, ints({-1}), true}), {1, 4});
    Tensor i = Tensor::from_vector<int64_t>({1, 2}, {2});
    QVERIFY(error_of("aten::mean", {i}).contains("mean(): could not infer output dtype"));
    Tensor mi = call1("aten::mean", {i}, {{"dtype", DType::Float32}});
    QCOMPARE(mi.dtype(), DType::Float32);
    KILN_COMPARE_VALUES(mi, {1.5});
    QVERIFY(std::isnan(call1("aten::mean", {Tensor::zeros({0}, DType::Float32)}).item().to_double()));
    Tensor h = Tensor::from_vector<float>({1, 2, 4}, {3}).to(DType::BFloat16);
    Tensor mh = call1("aten::mean", {h});
    QCOMPARE(mh.dtype(), DType::BFloat16);
    QCOMPARE(mh.item().to_double(), double(float(BFloat16(7.0f / 3.0f))));
  }

  void prod_ops() {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    KILN_COMPARE_VALUES(call1("aten::prod", {x}), {720});
    Tensor p = call1("aten::prod.dim_int", {x, int64_t(1), true});
    QCOMPARE(p.sizes(), (Shape{2, 1}));
    KILN_COMPARE_VALUES(p, {6, 120});
    Tensor i = Tensor::from_vector<int32_t>({3, -2, 7}, {3});
    Tensor pi = call1("aten::prod", {i});
    QCOMPARE(pi.dtype(), DType::Int64);
    QCOMPARE(pi.item().to_int(), int64_t(-42));
  }

  void amax_amin_nan_and_errors() {
    Tensor x = Tensor::from_vector<float>({1, 5, -2, 3, float(kNaN), 0}, {2, 3});
    KILN_COMPARE_VALUES(call1("aten::amax", {x, ints({1})}), {5, kNaN});
    KILN_COMPARE_VALUES(call1("aten::amin", {x, ints({0})}), {1, kNaN, -2});
    KILN_COMPARE_VALUES(call1("aten::amax", {x}), {kNaN});
    Tensor i = Tensor::from_vector<int64_t>({4, -9, 2}, {3});
    QCOMPARE(call1("aten::amin", {i}).item().to_int(), int64_t(-9));
    QCOMPARE(call1("aten::amax", {i}).dtype(), DType::Int64);
    Tensor b = Tensor::from_vector<bool>({false, true}, {2});
    QCOMPARE(call1("aten::amax", {b}).item().to_bool(), true);
    QCOMPARE(call1("aten::amin", {b}).item().to_bool(), false);
    Tensor e = Tensor::zeros({2, 0}, DType::Float32);
    QVERIFY(error_of("aten::amax", {e, ints({1})}).contains("Expected reduction dim 1 to have non-zero size"));
    QCOMPARE(call1("aten::amax", {e, ints({0})}).sizes(), (Shape{0}));
    QVERIFY(error_of("aten::max", {e}).contains("Expected reduction dim to be specified"));
    KILN_COMPARE_VALUES(call1("aten::max", {arange_f32({3, 2})}), {5});
    KILN_COMPARE_VALUES(call1("aten::min", {arange_f32({3, 2}, 1)}), {1});
  }

  void max_dim_indices() {
    // Ties resolve to the first index; a NaN wins at its first position.
    Tensor x = Tensor::from_vector<float>({3, 7, 7, 1, 2, float(kNaN), 5, float(kNaN)}, {2, 4});
    ValueList r = call("aten::max.dim", {x, int64_t(1)});
    KILN_COMPARE_VALUES(r[0].to_tensor(), {7, kNaN});
    KILN_COMPARE_VALUES(r[1].to_tensor(), {1, 1});
    QCOMPARE(r[1].to_tensor().dtype(), DType::Int64);
    ValueList m = call("aten::min.dim", {x, int64_t(0), true});
    QCOMPARE(m[0].to_tensor().sizes(), (Shape{1, 4}));
    KILN_COMPARE_VALUES(m[0].to_tensor(), {2, kNaN, 5, kNaN});
    KILN_COMPARE_VALUES(m[1].to_tensor(), {1, 1, 1, 1});
    // Strided input, reduced dim not innermost.
    Tensor t = arange_f32({3, 4}).t();
    ValueList tr = call("aten::max.dim", {t, int64_t(-1)});
    KILN_COMPARE_VALUES(tr[0].to_tensor(), {8, 9, 10, 11});
    KILN_COMPARE_VALUES(tr[1].to_tensor(), {2, 2, 2, 2});
    Tensor z = Tensor::scalar_tensor(4.0, DType::Float32);
    ValueList zr = call("aten::max.dim", {z, int64_t(0)});
    QCOMPARE(zr[1].to_tensor().item().to_int(), int64_t(0));
    QVERIFY(error_of("aten::max.dim", {Tensor::zeros({2, 0}, DType::Float32), int64_t(1)})
                .contains("Expected reduction dim 1 to have non-zero size"));
    QVERIFY(error_of("aten::max.dim", {x, int64_t(2)}).contains("Dimension out of range"));
  }

  void argmax_argmin() {
    Tensor x = Tensor::from_vector<float>({1, 9, 3, 9, -4, 0}, {2, 3});
    Tensor a = call1("aten::argmax", {x});
    QCOMPARE(a.dim(), int64_t(0));
    QCOMPARE(a.item().to_int(), int64_t(1));
    QCOMPARE(call1("aten::argmin", {x}).item().to_int(), int64_t(4));
    Tensor ak = call1("aten::argmax", {x, Value(), true});
    QCOMPARE(ak.sizes(), (Shape{1, 1}));
    KILN_COMPARE_VALUES(call1("aten::argmax", {x, int64_t(0)}), {1, 0, 0});
    KILN_COMPARE_VALUES(call1("aten::argmin", {x, int64_t(1), true}), {0, 1});
    Tensor h = x.to(DType::Float16).permute(std::vector<int64_t>{1, 0});
    KILN_COMPARE_VALUES(call1("aten::argmax", {h, int64_t(1)}), {1, 0, 0});
    QVERIFY(error_of("aten::argmax", {Tensor::zeros({0}, DType::Float32)}).contains("numel() == 0"));
  }

  void variance_family() {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 2, 4, 6, 8}, {2, 4});
    KILN_COMPARE_VALUES(call1("aten::var.correction", {x, ints({1})}), {5.0 / 3, 20.0 / 3});
    KILN_COMPARE_VALUES(call1("aten::var.correction", {x, ints({1})}, {{"correction", int64_t(0)}}), {1.25, 5});
    KILN_COMPARE_VALUES(call1("aten::std.correction", {x, ints({1})}, {{"keepdim", true}}),
                        {std::sqrt(5.0 / 3), std::sqrt(20.0 / 3)});
    KILN_COMPARE_VALUES(call1("aten::var", {x, false}), {4.6875});
    KILN_COMPARE_VALUES(call1("aten::var.dim", {x, ints({0}), true}), {0.5, 2, 4.5, 8});
    ValueList vm = call("aten::var_mean.correction", {x, ints({1})});
    KILN_COMPARE_VALUES(vm[0].to_tensor(), {5.0 / 3, 20.0 / 3});
    KILN_COMPARE_VALUES(vm[1].to_tensor(), {2.5, 5});
    ValueList sm = call("aten::std_mean.dim", {x, Value(), false});
    KILN_COMPARE_VALUES(sm[0].to_tensor(), {std::sqrt(4.6875)});
    KILN_COMPARE_VALUES(sm[1].to_tensor(), {3.75});
    // One element with correction 1 divides by zero.
    QVERIFY(std::isnan(call1("aten::var.correction", {Tensor::full({1}, Scalar(3.0), DType::Float32)}).item().to_double()));
    QVERIFY(error_of("aten::var.correction", {Tensor::from_vector<int64_t>({1, 2}, {2})})
                .contains("std and var only support floating point"));
    // Large offset: a one-pass formula would lose everything here.
    Tensor big = Tensor::from_vector<double>({1e9 + 1, 1e9 + 2, 1e9 + 3}, {3});
    KILN_COMPARE_VALUES(call1("aten::var.correction", {big}), {1.0});
    Tensor h = x.to(DType::Float16);
    QCOMPARE(call1("aten::var.correction", {h}).dtype(), DType::Float16);
  }

  void cumulative() {
    Tensor x = arange_f32({2, 3}, 1);
    KILN_COMPARE_VALUES(call1("aten::cumsum", {x, int64_t(1)}), {1, 3, 6, 4, 9, 15});
    KILN_COMPARE_VALUES(call1("aten::cumsum", {x, int64_t(0)}), {1, 2, 3, 5, 7, 9});
    KILN_COMPARE_VALUES(call1("aten::cumprod", {x, int64_t(-1)}), {1, 2, 6, 4, 20, 120});
    Tensor i = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
    QCOMPARE(call1("aten::cumsum", {i, int64_t(0)}).dtype(), DType::Int64);
    Tensor cd = call1("aten::cumsum", {i, int64_t(0)}, {{"dtype", DType::Float64}});
    QCOMPARE(cd.dtype(), DType::Float64);
    KILN_COMPARE_VALUES(cd, {1, 3, 6});
    Tensor t = x.t();
    KILN_COMPARE_VALUES(call1("aten::cumsum", {t, int64_t(1)}), {1, 5, 2, 7, 3, 9});
  }

  void logsumexp_stable() {
    Tensor x = Tensor::from_vector<float>({1000, 1000, -float(kInf), -float(kInf), 1, 2}, {3, 2});
    std::vector<double> l = values(call1("aten::logsumexp", {x, ints({1})}));
    QCOMPARE(l.size(), size_t(3));
    QCOMPARE(float(l[0]), float(1000 + std::log(2.0)));
    QCOMPARE(l[1], -kInf);  // an all -inf row stays -inf instead of becoming nan
    QCOMPARE(float(l[2]), float(2 + std::log1p(std::exp(-1.0))));
    Tensor i = Tensor::from_vector<int64_t>({0, 0}, {2});
    Tensor li = call1("aten::logsumexp", {i, ints({0})});
    QCOMPARE(li.dtype(), DType::Float32);
    KILN_COMPARE_VALUES(li, {std::log(2.0)});
  }

  void any_all_norm_count() {
    Tensor x = Tensor::from_vector<float>({0, 0, 1, float(kNaN), 0, 2}, {2, 3});
    KILN_COMPARE_VALUES(call1("aten::any.dim", {x, int64_t(1)}), {1, 1});
    KILN_COMPARE_VALUES(call1("aten::all.dims", {x, ints({0})}), {0, 0, 1});
    QCOMPARE(call1("aten::any", {x}).dtype(), DType::Bool);
    Tensor u = Tensor::from_vector<uint8_t>({0, 3}, {2});
    QCOMPARE(call1("aten::all", {u}).dtype(), DType::UInt8);
    QCOMPARE(call1("aten::all", {u}).item().to_int(), int64_t(0));
    QCOMPARE(call1("aten::all", {Tensor::zeros({0}, DType::Float32)}).item().to_bool(), true);
    Tensor v = Tensor::from_vector<float>({3, -4, 0}, {3});
    KILN_COMPARE_VALUES(call1("aten::norm.Scalar", {v}), {5});
    KILN_COMPARE_VALUES(call1("aten::norm.ScalarOpt_dim", {v, Scalar(1.0), ints({0})}), {7});
    KILN_COMPARE_VALUES(call1("aten::norm.ScalarOpt_dim", {v, Scalar(kInf), ints({0})}), {4});
    KILN_COMPARE_VALUES(call1("aten::norm.ScalarOpt_dim", {v, Scalar(0.0), ints({0})}), {2});
    KILN_COMPARE_VALUES(call1("aten::norm.ScalarOpt_dim", {v, Scalar(3.0), ints({0})}), {std::cbrt(91.0)});
    QCOMPARE(call1("aten::count_nonzero", {x}).item().to_int(), int64_t(3));
    KILN_COMPARE_VALUES(call1("aten::count_nonzero.dim_IntList", {x, ints({0})}), {1, 0, 2});
  }

  void meta_shapes() {
    Tensor m = Tensor::meta({4, 5, 6}, DType::Int32);
    auto r = call_op("aten::sum.dim_IntList", {m, ints({1}), true});
    QVERIFY(r.ok());
    QCOMPARE((*r)[0].to_tensor().sizes(), (Shape{4, 1, 6}));
    QCOMPARE((*r)[0].to_tensor().dtype(), DType::Int64);
    QVERIFY((*r)[0].to_tensor().is_meta());
    auto mx = call_op("aten::max.dim", {Tensor::meta({4, 5}, DType::Float32), int64_t(0)});
    QVERIFY(mx.ok());
    QCOMPARE((*mx)[1].to_tensor().sizes(), (Shape{5}));
    QCOMPARE((*mx)[1].to_tensor().dtype(), DType::Int64);
    auto vm = call_meta("aten::var_mean.correction", {Tensor::meta({4, 5}, DType::Float16), ints({0})});
    QVERIFY(vm.ok());
    QCOMPARE((*vm)[1].to_tensor().dtype(), DType::Float16);
  }

  void bad_dims() {
    Tensor x = arange_f32({2, 3});
    QVERIFY(error_of("aten::sum.dim_IntList", {x, ints({1, -1})}).contains("appears multiple times"));
    QVERIFY(error_of("aten::sum.dim_IntList", {x, ints({2})}).contains("Dimension out of range"));
    QVERIFY(error_of("aten::cumsum", {x, int64_t(-3)}).contains("Dimension out of range"));
  }

  // Every reduction case of the op corpus, against PyTorch's outputs.
  void corpus_cases() {
    std::string dir = kiln::test::reference_dir() + "/opcorpus";
    auto st = read_safetensors(dir + "/ops.safetensors");
    QVERIFY2(st.ok(), st.status().message().c_str());
    QFile f(QString::fromStdString(dir + "/ops.json"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QJsonArray cases = QJsonDocument::fromJson(f.readAll()).object()["cases"].toArray();
    int checked = 0;
    std::function<Value(const QJsonValue&)> arg = [&](const QJsonValue& jv) -> Value {
      QJsonObject o = jv.toObject();
      if (o.contains("tensor")) return *st->find(o["tensor"].toString().toStdString());
      if (o.contains("int")) return int64_t(o["int"].toInteger());
      if (o.contains("float")) return o["float"].toDouble();
      if (o.contains("bool")) return o["bool"].toBool();
      if (o.contains("dtype")) return *dtype_from_name(o["dtype"].toString().toStdString());
      if (o.contains("list")) {
        ValueList l;
        for (const QJsonValue& e : o["list"].toArray()) l.push_back(arg(e));
        return Value(l);
      }
      return Value();
    };
    for (const QJsonValue& cv : cases) {
      QJsonObject c = cv.toObject();
      std::string op = c["op"].toString().toStdString();
      const OpDef* def = op_registry().find(op);
      if (!def || (def->family != "reduction" && def->family != "normalization" && def->family != "loss")) continue;
      ValueList args;
      for (const QJsonValue& a : c["args"].toArray()) args.push_back(arg(a));
      KwargList kwargs;
      QJsonObject kw = c["kwargs"].toObject();
      for (auto it = kw.begin(); it != kw.end(); ++it) kwargs.emplace_back(it.key().toStdString(), arg(it.value()));
      auto r = call_op(op, args, kwargs);
      QVERIFY2(r.ok(), (op + ": " + r.status().message()).c_str());
      QJsonArray outs = c["outputs"].toArray();
      QCOMPARE(qsizetype(r->size()), outs.size());
      for (qsizetype k = 0; k < outs.size(); ++k) {
        const Tensor& want = *st->find(outs[k].toObject()["tensor"].toString().toStdString());
        const Tensor& got = (*r)[size_t(k)].to_tensor();
        QVERIFY2(got.sizes() == want.sizes(), (op + " " + got.type_str() + " vs " + want.type_str()).c_str());
        QCOMPARE(got.dtype(), want.dtype());
        double rtol = want.dtype() == DType::Float32 ? 1.3e-6 : want.dtype() == DType::Float16 ? 1e-3 : 0;
        double atol = is_floating(want.dtype()) ? 1e-5 : 0;
        expect_close(values(got), values(want), rtol, atol);
      }
      ++checked;
    }
    QVERIFY(checked >= 10);
  }
};

QTEST_MAIN(TestOpsReduction)
#include "test_ops_reduction.moc"
