// affine_grid_generator and grid_sampler_2d with their backwards: cases worked
// out by hand (corner weights, the padding modes' folding, round half to even,
// Keys' cubic weights),
// an identity transform reproducing its input, PyTorch's own numbers bit for
// bit (grid_sample_cases.h), adjoint identities for the backwards, and
// PyTorch's error messages.
#include "nn_test_util.h"

#include "grid_sample_cases.h"

using namespace kiln;
using kiln::test::call;
using kiln::test::call1;
using kiln::test::dot_all;
using kiln::test::error_of;
using kiln::test::ints;
using kiln::test::random_tensor;
using kiln::test::values;
namespace gs = kiln::test::grid_sample;

namespace {

Tensor floats(const std::vector<float>& v, Shape s) { return Tensor::from_vector(v, std::move(s)); }

Tensor sample(const Tensor& x, const Tensor& grid, int64_t mode, int64_t padding, bool align) {
  return call1("aten::grid_sampler_2d", {x, grid, mode, padding, align});
}

// Bit-for-bit equality with PyTorch's float32 (or float64) results.
template <class T>
std::string exact_report(const Tensor& got, const std::vector<T>& want) {
  std::vector<double> g = values(got);
  if (g.size() != want.size()) return "size " + std::to_string(g.size()) + " vs " + std::to_string(want.size());
  for (size_t i = 0; i < g.size(); ++i)
    if (T(g[i]) != want[i])
      return "element " + std::to_string(i) + ": got " + QString::number(g[i], 'g', 17).toStdString() + ", want " +
             QString::number(double(want[i]), 'g', 17).toStdString();
  return "";
}
#define KILN_EXPECT_EXACT(got, want)                                  \
  do {                                                                \
    std::string r_ = exact_report((got), (want));                     \
    QVERIFY2(r_.empty(), (std::string(#got) + ": " + r_).c_str());   \
  } while (0)

}  // namespace

class TestOpsGridSample : public QObject {
  Q_OBJECT
 private slots:
  // [[1, 2], [3, 4]] at the centre, a corner, an edge midpoint and an inner
  // point. Without align_corners the corner (-1, -1) is pixel position
  // (-0.5, -0.5): a quarter of pixel (0, 0) with zeros, pixel (0, 0) itself
  // when border clips or reflection folds it back.
  void bilinear_by_hand() {
    Tensor x = floats({1, 2, 3, 4}, {1, 1, 2, 2});
    Tensor g = floats({0, 0, -1, -1, 1, -1, 0.5f, 0.25f}, {1, 1, 4, 2});
    KILN_COMPARE_VALUES(sample(x, g, 0, 0, false), {2.5, 0.25, 0.5, 3.5});
    KILN_COMPARE_VALUES(sample(x, g, 0, 1, false), {2.5, 1, 2, 3.5});
    KILN_COMPARE_VALUES(sample(x, g, 0, 2, false), {2.5, 1, 2, 3.5});
    // With align_corners, -1 and 1 are the outer pixels' centres: (0.5, 0.25)
    // is position (0.75, 0.625), 1.75 and 3.75 along the rows, 3 between them.
    for (int64_t pad : {0, 1, 2}) KILN_COMPARE_VALUES(sample(x, g, 0, pad, true), {2.5, 1, 2, 3});
    // Reflection folds x = 1.5 (grid 2) back to 0.5.
    KILN_COMPARE_VALUES(sample(x, floats({2, 0.5f}, {1, 1, 1, 2}), 0, 2, true), {3});
    // Channels and batch elements sample the same positions of their own planes.
    Tensor two = call1("aten::cat", {ValueList{x, call1("aten::mul.Scalar", {x, 10})}, 1});
    KILN_COMPARE_VALUES(sample(two, g, 0, 0, false), {2.5, 0.25, 0.5, 3.5, 25, 2.5, 5, 35});
  }

  // Positions -0.5, 0.5, 1.5, 2.5, 3.5 round half to even (-0, 0, 2, 2, 4):
  // pixel 4 lies outside a row of four (zeros), border clips 3.5 to 3,
  // reflection folds it onto 3.5 and then clips.
  void nearest_by_hand() {
    Tensor x = floats({10, 20, 30, 40}, {1, 1, 1, 4});
    Tensor g = floats({-1, 0, -0.5f, 0, 0, 0, 0.5f, 0, 1, 0}, {1, 1, 5, 2});
    KILN_COMPARE_VALUES(sample(x, g, 1, 0, false), {10, 10, 30, 30, 0});
    KILN_COMPARE_VALUES(sample(x, g, 1, 1, false), {10, 10, 30, 30, 40});
    KILN_COMPARE_VALUES(sample(x, g, 1, 2, false), {10, 10, 30, 30, 40});
  }

  // Keys' cubic (A = -0.75) over a row [4, 1, 0, 0]: position 1.5 weighs the
  // four pixels (-3, 19, 19, -3) / 32; position -0.5 reaches pixels -2..1,
  // which zeros padding drops, border repeats as pixel 0 and reflection
  // folds onto pixels 1 and 0.
  void bicubic_by_hand() {
    Tensor x = floats({4, 1, 0, 0}, {1, 1, 1, 4});
    Tensor g = floats({0, 0, -1, 0}, {1, 1, 2, 2});
    KILN_COMPARE_VALUES(sample(x, g, 2, 0, false), {0.21875, 2.28125});
    KILN_COMPARE_VALUES(sample(x, g, 2, 1, false), {0.21875, 4.28125});
    KILN_COMPARE_VALUES(sample(x, g, 2, 2, false), {0.21875, 4.5625});
  }

  // The identity theta with align_corners puts every output position on its
  // pixel's centre, so sampling gives the input back in every mode; the grid
  // itself is the pixel grid in [-1, 1].
  void identity_transform_reproduces_the_input() {
    Tensor theta = floats({1, 0, 0, 0, 1, 0}, {1, 2, 3});
    Tensor grid = call1("aten::affine_grid_generator", {theta, ints({1, 1, 5, 3}), true});
    QCOMPARE(grid.sizes(), (Shape{1, 5, 3, 2}));
    KILN_COMPARE_VALUES(grid, {-1, -1, 0, -1, 1, -1, -1, -0.5, 0, -0.5, 1, -0.5, -1, 0,   0, 0,
                               1,  0,  -1, 0.5, 0, 0.5, 1, 0.5, -1, 1,  0, 1,   1, 1});
    Tensor x = call1("aten::add.Scalar", {call1("aten::mul.Scalar", {kiln::test::arange_f32({1, 2, 5, 3}), 0.7}), -2});
    for (int64_t mode : {0, 1, 2})
      for (int64_t pad : {0, 1, 2}) QCOMPARE(values(sample(x, grid, mode, pad, true)), values(x));
    // Without align_corners the positions are pixel centres of a grid one pixel wider: -2/3, 0, 2/3.
    KILN_COMPARE_VALUES(call1("aten::affine_grid_generator", {theta, ints({1, 1, 2, 3}), false}),
                        {-0.6666666865348816, -0.5, 0, -0.5, 0.6666666865348816, -0.5, -0.6666666865348816, 0.5, 0,
                         0.5, 0.6666666865348816, 0.5});
  }

  // x, y = theta @ (x0, y0, 1) at each base position; the backward contracts
  // the gradient with the same base grid (PyTorch's values, float64).
  void affine_grid_values_and_backward() {
    Tensor theta = Tensor::from_vector<double>({0.5, -0.25, 0.125, 1.0, 0.75, -0.5}, {1, 2, 3});
    Tensor grid = call1("aten::affine_grid_generator", {theta, ints({1, 3, 2, 3}), false});
    KILN_EXPECT_CLOSE(grid,
                      (std::vector<double>{-0.08333333333333331, -1.5416666666666665, 0.25, -0.875, 0.5833333333333333,
                                           -0.20833333333333337, -0.3333333333333333, -0.7916666666666666, 0.0, -0.125,
                                           0.3333333333333333, 0.5416666666666665}),
                      1e-15, 1e-15);
    Tensor g = Tensor::from_vector<double>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {1, 2, 3, 2});
    Tensor gt = call1("aten::affine_grid_generator_backward", {g, ints({1, 3, 2, 3}), false});
    QCOMPARE(gt.sizes(), (Shape{1, 2, 3}));
    QCOMPARE(gt.strides(), (Shape{6, 1, 2}));  // a transposed [1, 3, 2] product, as ATen returns it
    KILN_EXPECT_CLOSE(gt, (std::vector<double>{5.333333333333332, 9.0, 30.0, 5.333333333333334, 9.0, 36.0}), 1e-15,
                      1e-15);
    // Adjoint of the forward, several batch elements, both conventions.
    for (bool align : {false, true}) {
      Tensor t = random_tensor({3, 2, 3}, 5, DType::Float64), gg = random_tensor({3, 4, 5, 2}, 6, DType::Float64);
      Tensor y = call1("aten::affine_grid_generator", {t, ints({3, 7, 4, 5}), align});
      Tensor gth = call1("aten::affine_grid_generator_backward", {gg, ints({3, 7, 4, 5}), align});
      QVERIFY(std::abs(dot_all(y, gg) - dot_all(t, gth)) < 1e-12);
    }
    // A single row or column sits at 0 (F.affine_grid warns about it with align_corners).
    Tensor unit = call1("aten::affine_grid_generator", {floats({1, 0, 0, 0, 1, 0}, {1, 2, 3}), ints({1, 1, 1, 2}), true});
    KILN_COMPARE_VALUES(unit, {-1, 0, 1, 0});
  }

  // PyTorch's outputs and gradients, equal to the last bit: the fused
  // multiply-adds of ATen's kernel and the lane order of its scatters.
  void matches_pytorch_bit_for_bit() {
    Tensor x = floats(gs::kInput, {1, 2, 2, 3}), grid = floats(gs::kGrid, {1, 3, 7, 2});
    Tensor go = floats(gs::kGradOut, {1, 2, 3, 7});
    for (const gs::SamplerCase& c : gs::kCases) {
      QString tag = QString("mode %1 padding %2 align %3").arg(c.mode).arg(c.padding).arg(c.align_corners);
      Tensor y = sample(x, grid, c.mode, c.padding, c.align_corners);
      std::string r = exact_report(y, c.out);
      QVERIFY2(r.empty(), qPrintable(tag + " out: " + QString::fromStdString(r)));
      ValueList g = call("aten::grid_sampler_2d_backward",
                         {go, x, grid, int64_t(c.mode), int64_t(c.padding), c.align_corners, ValueList{true, true}});
      r = exact_report(g[0].to_tensor(), c.grad_input);
      QVERIFY2(r.empty(), qPrintable(tag + " grad_input: " + QString::fromStdString(r)));
      std::vector<float> want_grid = c.grad_grid.empty() ? std::vector<float>(42, 0.0f) : c.grad_grid;
      r = exact_report(g[1].to_tensor(), want_grid);
      QVERIFY2(r.empty(), qPrintable(tag + " grad_grid: " + QString::fromStdString(r)));
    }
    // A permuted grid: ATen groups lanes row by row then, which changes the scatter order.
    Tensor rows = floats(gs::kGridRows, {1, 7, 3, 2}).permute(std::vector<int64_t>{0, 2, 1, 3});
    KILN_EXPECT_EXACT(sample(x, rows, 0, 0, false), gs::kRowsOut);
    ValueList g = call("aten::grid_sampler_2d_backward", {go, x, rows, int64_t(0), int64_t(0), false, ValueList{true, true}});
    KILN_EXPECT_EXACT(g[0].to_tensor(), gs::kRowsGradInput);
    KILN_EXPECT_EXACT(g[1].to_tensor(), gs::kRowsGradGrid);
    // float64 groups four lanes.
    Tensor x64 = x.to(DType::Float64), grid64 = grid.to(DType::Float64), go64 = go.to(DType::Float64);
    KILN_EXPECT_EXACT(sample(x64, grid64, 0, 2, true), gs::kOut64);
    g = call("aten::grid_sampler_2d_backward", {go64, x64, grid64, int64_t(0), int64_t(2), true, ValueList{true, true}});
    KILN_EXPECT_EXACT(g[0].to_tensor(), gs::kGradInput64);
    KILN_EXPECT_EXACT(g[1].to_tensor(), gs::kGradGrid64);
  }

  // The input gradient is the adjoint of sampling (linear in the input); it
  // is left out when output_mask says so, the grid's is computed regardless.
  void backward_is_the_adjoint() {
    Tensor x = random_tensor({2, 3, 4, 5}, 1, DType::Float64);
    Tensor grid = call1("aten::mul.Scalar", {random_tensor({2, 6, 7, 2}, 2, DType::Float64), 1.4});
    Tensor go = random_tensor({2, 3, 6, 7}, 3, DType::Float64);
    for (int64_t mode : {0, 1, 2})
      for (int64_t pad : {0, 1, 2})
        for (bool align : {false, true}) {
          Tensor y = sample(x, grid, mode, pad, align);
          ValueList g = call("aten::grid_sampler_2d_backward", {go, x, grid, mode, pad, align, ValueList{true, true}});
          QVERIFY(std::abs(dot_all(y, go) - dot_all(x, g[0].to_tensor())) < 1e-12);
          if (mode == 1) QCOMPARE(values(g[1].to_tensor()), std::vector<double>(size_t(2 * 6 * 7 * 2), 0.0));
        }
    ValueList g = call("aten::grid_sampler_2d_backward", {go, x, grid, int64_t(0), int64_t(0), false, ValueList{false, true}});
    QVERIFY(g[0].is_none());
    QCOMPARE(g[1].to_tensor().sizes(), grid.sizes());
  }

  // Empty batches, channels and outputs are fine; NaN positions sample
  // nothing with zeros padding and pixel 0 with the others (bicubic taps too,
  // whose backward folds NaN to pixel 0 as well, so it has nothing to refuse).
  void empty_and_nan() {
    QCOMPARE(sample(Tensor::zeros({0, 2, 3, 4}, DType::Float32), Tensor::zeros({0, 5, 6, 2}, DType::Float32), 0, 0, false)
                 .sizes(),
             (Shape{0, 2, 5, 6}));
    QCOMPARE(sample(random_tensor({2, 0, 3, 4}, 1), random_tensor({2, 5, 6, 2}, 2), 0, 0, false).sizes(),
             (Shape{2, 0, 5, 6}));
    Tensor x = floats({1, 2, 3, 4}, {1, 1, 2, 2});
    float nan = std::numeric_limits<float>::quiet_NaN();
    Tensor g = floats({nan, nan}, {1, 1, 1, 2});
    QVERIFY(std::isnan(values(sample(x, g, 0, 0, false))[0]));  // 0 * NaN weights, as ATen's gathers give
    QCOMPARE(values(sample(x, g, 1, 0, false))[0], 0.0);
    QCOMPARE(values(sample(x, g, 0, 1, false))[0], 1.0);
    QCOMPARE(values(sample(x, g, 1, 2, true))[0], 1.0);
    QVERIFY(std::isnan(values(sample(x, g, 2, 1, false))[0]));  // the cubic weights of a NaN distance
    QCOMPARE(call("aten::grid_sampler_2d_backward", {Tensor::zeros({1, 1, 1, 1}, DType::Float32), x, g, int64_t(2),
                                                     int64_t(1), false, ValueList{true, true}})
                 .size(),
             size_t(2));
    // ATen's backward then reads and writes out of bounds: refused, not guessed.
    KILN_EXPECT_ERROR(error_of("aten::grid_sampler_2d_backward",
                               {Tensor::zeros({1, 1, 1, 1}, DType::Float32), x, g, int64_t(0), int64_t(1), false,
                                ValueList{true, true}}),
                      "gives no sampling position");
  }

  void errors() {
    Tensor x = random_tensor({2, 3, 4, 5}, 1), grid = random_tensor({2, 6, 7, 2}, 2);
    auto err = [](const Tensor& a, const Tensor& b, int64_t mode = 0, int64_t pad = 0) {
      return error_of("aten::grid_sampler_2d", {a, b, mode, pad, false});
    };
    KILN_EXPECT_ERROR(err(x, random_tensor({3, 6, 7, 2}, 2)),
                      "grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
                      "[2, 3, 4, 5] and grid with sizes [3, 6, 7, 2]");
    KILN_EXPECT_ERROR(err(x, random_tensor({2, 6, 7, 3}, 2)),
                      "grid_sampler(): expected grid to have size 2 in last dimension, but got grid with sizes [2, 6, 7, 3]");
    KILN_EXPECT_ERROR(err(x, random_tensor({2, 6, 2}, 2)),
                      "grid_sampler(): expected 4D input and grid with same number of dimensions, but got input with "
                      "sizes [2, 3, 4, 5] and grid with sizes [2, 6, 2]");
    KILN_EXPECT_ERROR(err(random_tensor({2, 3, 0, 5}, 1), grid),
                      "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes "
                      "[2, 3, 0, 5] with dimension 2 being empty");
    KILN_EXPECT_ERROR(err(x.to(DType::Float16), grid.to(DType::Float16)), "grid_sampler_2d_cpu not implemented for Half");
    KILN_EXPECT_ERROR(err(x.to(DType::Int64), grid.to(DType::Int64)), "grid_sampler_2d_cpu not implemented for Long");
    KILN_EXPECT_ERROR(err(x, grid.to(DType::Float64)), "expected scalar type Float but found Double");
    KILN_EXPECT_ERROR(err(x, grid, 5), "interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got 5");
    KILN_EXPECT_ERROR(err(x, grid, 0, 3), "padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got 3");
    KILN_EXPECT_ERROR(error_of("aten::grid_sampler_2d_backward",
                               {random_tensor({2, 3, 6, 6}, 3), x, grid, int64_t(0), int64_t(0), false, ValueList{true, true}}),
                      "grid_sampler(): expected grad_output to have sizes [2, 3, 6, 7] but got grad_output with sizes "
                      "[2, 3, 6, 6]");
    Tensor theta = random_tensor({2, 2, 3}, 4);
    auto affine = [](const Tensor& t, std::vector<int64_t> size) {
      return error_of("aten::affine_grid_generator", {t, ints(size), false});
    };
    KILN_EXPECT_ERROR(affine(theta, {2, 1, 4}), "AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.");
    KILN_EXPECT_ERROR(affine(random_tensor({2, 3, 4}, 4), {2, 1, 3, 4, 5}), "5-D sizes (volumetric grids");
    KILN_EXPECT_ERROR(affine(theta, {3, 1, 4, 5}),
                      "Expected size for first two dimensions of batch2 tensor to be: [3, 3] but got: [2, 3].");
    KILN_EXPECT_ERROR(affine(random_tensor({2, 3, 3}, 4), {2, 1, 4, 5}),
                      "shape '[2, 4, 5, 2]' is invalid for input of size 120");
    KILN_EXPECT_ERROR(affine(theta.to(DType::Int64), {2, 1, 4, 5}), "theta of dtype int64 is not supported by Kiln");
  }
};

QTEST_GUILESS_MAIN(TestOpsGridSample)
#include "test_ops_grid_sample.moc"
