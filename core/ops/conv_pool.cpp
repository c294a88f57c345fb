// Convolution (1-D to 3-D, grouped, dilated, transposed) and its backward.
// (Pooling lives in pooling.cpp.)
//
// Everything is im2col + GEMM. Between a large "image" and the small "grid" of
// kernel positions, image index = grid index * stride - padding + kernel index
// * dilation. Three primitives cover forward and backward of both directions:
//   image_to_grid: grid  = W @ im2col(image)         conv forward, transposed-conv grad_input
//   grid_to_image: image += col2im(W^T @ grid)       transposed-conv forward, conv grad_input
//   weight_grad:   W     = sum_n grid @ im2col(image)^T
// with W the weight as stored, viewed per group as [grid channels, image channels * kernel].
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>

#include "core/ops/gemm.h"
#include "core/ops/kernel_util.h"

namespace kiln {
namespace {

constexpr int64_t kMaxSpatial = 3;
using Dims3 = std::array<int64_t, 3>;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Spatial dims are right-aligned in 3 slots; unused leading slots are size 1.
struct Geometry {
  Dims3 image{1, 1, 1}, grid{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dil{1, 1, 1};
  int64_t image_numel() const { return image[0] * image[1] * image[2]; }
  int64_t grid_numel() const { return grid[0] * grid[1] * grid[2]; }
  int64_t kernel_numel() const { return kernel[0] * kernel[1] * kernel[2]; }
  // A 1x1 kernel at stride 1 without padding: im2col would be a plain copy.
  bool identity() const {
    return kernel == Dims3{1, 1, 1} && stride == Dims3{1, 1, 1} && pad == Dims3{0, 0, 0} && image == grid;
  }
};

// Channels of the image and grid tensors per group, and the batch they share.
struct ConvShape {
  int64_t batch = 0, groups = 1, image_ch = 0, grid_ch = 0;
  Geometry geo;
};

// For kernel offset kk, calls fn(grid_row, image_row, lo, hi) for every (d, h)
// row of the grid: image_row is the offset of the image element that grid
// column 0 would read (it may lie outside the row; nullopt when the whole row
// is padding), and [lo, hi) the grid columns whose image column is in bounds.
template <class Fn>
void for_each_row(const Geometry& g, int64_t kk, Fn&& fn) {
  int64_t kw = kk % g.kernel[2], kh = (kk / g.kernel[2]) % g.kernel[1], kd = kk / (g.kernel[2] * g.kernel[1]);
  int64_t off_w = kw * g.dil[2] - g.pad[2], s = g.stride[2], W = g.image[2], OW = g.grid[2];
  int64_t lo = std::min(off_w >= 0 ? 0 : ceil_div(-off_w, s), OW);
  int64_t hi = std::max(lo, W - off_w <= 0 ? 0 : std::min(OW, ceil_div(W - off_w, s)));
  for (int64_t od = 0; od < g.grid[0]; ++od) {
    int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dil[0];
    bool d_in = id >= 0 && id < g.image[0];
    for (int64_t oh = 0; oh < g.grid[1]; ++oh) {
      int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dil[1];
      int64_t grid_row = (od * g.grid[1] + oh) * OW;
      if (!d_in || ih < 0 || ih >= g.image[1]) fn(grid_row, std::optional<int64_t>(), lo, hi);
      else fn(grid_row, std::optional<int64_t>((id * g.image[1] + ih) * W + off_w), lo, hi);
    }
  }
}

// col[c * K + kk, l] = image[c] at the position grid element l reads through kernel offset kk.
template <class T>
void im2col(const T* img, int64_t channels, const Geometry& g, T* col, bool parallel) {
  int64_t K = g.kernel_numel(), L = g.grid_numel(), I = g.image_numel(), OW = g.grid[2], s = g.stride[2];
  auto rows = [&](int64_t lo_row, int64_t hi_row) {
    for (int64_t r = lo_row; r < hi_row; ++r) {
      const T* plane = img + (r / K) * I;
      T* dst = col + r * L;
      for_each_row(g, r % K, [&](int64_t grow, std::optional<int64_t> irow, int64_t lo, int64_t hi) {
        T* out = dst + grow;
        if (!irow) {
          std::fill(out, out + OW, T(0));
          return;
        }
        std::fill(out, out + lo, T(0));
        int64_t base = *irow;  // may be negative: only [lo, hi) is read
        if (s == 1) std::copy(plane + base + lo, plane + base + hi, out + lo);
        else
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] = plane[base + ow * s];
        std::fill(out + hi, out + OW, T(0));
      });
    }
  };
  if (parallel) parallel_for(0, channels * K, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(L, 1)), rows);
  else rows(0, channels * K);
}

// The adjoint of im2col: image[c] += every column entry at the position it was read from.
template <class T>
void col2im(const T* col, int64_t channels, const Geometry& g, T* img, bool parallel) {
  int64_t K = g.kernel_numel(), L = g.grid_numel(), I = g.image_numel(), s = g.stride[2];
  auto planes = [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      T* plane = img + c * I;
      for (int64_t kk = 0; kk < K; ++kk) {
        const T* src = col + (c * K + kk) * L;
        for_each_row(g, kk, [&](int64_t grow, std::optional<int64_t> irow, int64_t lo, int64_t hi) {
          if (!irow) return;
          int64_t base = *irow;
          for (int64_t ow = lo; ow < hi; ++ow) plane[base + ow * s] += src[grow + ow];
        });
      }
    }
  };
  if (parallel) parallel_for(0, channels, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(K * L, 1)), planes);
  else planes(0, channels);
}

// Runs fn(task, scratch, inner_parallel) for tasks [0, n). Small products run
// as parallel tasks (OpenBLAS keeps those on one thread); large ones one after
// another with the parallelism inside (im2col loops and OpenBLAS threads).
template <class T, class Fn>
void run_tasks(int64_t n, bool small, Fn&& fn) {
  if (small && n > 1) {
    parallel_for(0, n, 1, [&](int64_t lo, int64_t hi) {
      std::vector<T> scratch;
      for (int64_t t = lo; t < hi; ++t) fn(t, scratch, false);
    });
    return;
  }
  std::vector<T> scratch;
  for (int64_t t = 0; t < n; ++t) fn(t, scratch, true);
}

// One image channel and few grid channels per group (depthwise): out[co] +=
// w[co, kk] * shifted image, straight from the image. A GEMM this thin would
// spend more on building the columns than on multiplying.
template <class T>
void depthwise_image_to_grid(const T* plane, const T* w, int64_t grid_ch, const Geometry& g, T* out, bool accumulate) {
  int64_t K = g.kernel_numel(), L = g.grid_numel(), s = g.stride[2];
  if (!accumulate) std::fill(out, out + grid_ch * L, T(0));
  for (int64_t co = 0; co < grid_ch; ++co) {
    T* dst = out + co * L;
    for (int64_t kk = 0; kk < K; ++kk) {
      T wk = w[co * K + kk];
      for_each_row(g, kk, [&](int64_t grow, std::optional<int64_t> irow, int64_t lo, int64_t hi) {
        if (!irow) return;
        int64_t base = *irow;
        for (int64_t ow = lo; ow < hi; ++ow) dst[grow + ow] += wk * plane[base + ow * s];
      });
    }
  }
}

template <class T>
void image_to_grid(const ConvShape& cs, const T* image, const T* weight, T* grid, bool accumulate) {
  const Geometry& g = cs.geo;
  int64_t L = g.grid_numel(), I = g.image_numel(), rows = cs.image_ch * g.kernel_numel();
  constexpr int64_t kMaxDirectGridChannels = 8;
  if (cs.image_ch == 1 && cs.grid_ch <= kMaxDirectGridChannels && !g.identity()) {
    int64_t work = std::max<int64_t>(cs.grid_ch * rows * L, 1);
    parallel_for(0, cs.batch * cs.groups, std::max<int64_t>(1, kParallelGrain / work), [&](int64_t lo, int64_t hi) {
      for (int64_t t = lo; t < hi; ++t)
        depthwise_image_to_grid(image + t * I, weight + (t % cs.groups) * cs.grid_ch * rows, cs.grid_ch, g,
                                grid + t * cs.grid_ch * L, accumulate);
    });
    return;
  }
  bool small = gemm::is_small(cs.grid_ch, L, rows);
  run_tasks<T>(cs.batch * cs.groups, small, [&](int64_t t, std::vector<T>& scratch, bool inner) {
    const T* col = image + t * cs.image_ch * I;
    if (!g.identity()) {
      scratch.resize(size_t(rows * L));
      im2col(col, cs.image_ch, g, scratch.data(), inner);
      col = scratch.data();
    }
    const T* w = weight + (t % cs.groups) * cs.grid_ch * rows;
    gemm::gemm<T>(cs.grid_ch, L, rows, T(1), {w, rows, 1}, {col, L, 1}, T(accumulate ? 1 : 0),
                  grid + t * cs.grid_ch * L, L);
  });
}

// image must hold its starting values (bias or zeros): the result accumulates.
template <class T>
void grid_to_image(const ConvShape& cs, const T* grid, const T* weight, T* image) {
  const Geometry& g = cs.geo;
  int64_t L = g.grid_numel(), I = g.image_numel(), rows = cs.image_ch * g.kernel_numel();
  bool small = gemm::is_small(rows, L, cs.grid_ch);
  run_tasks<T>(cs.batch * cs.groups, small, [&](int64_t t, std::vector<T>& scratch, bool inner) {
    gemm::MatRef<T> wt{weight + (t % cs.groups) * cs.grid_ch * rows, 1, rows};  // W_g transposed
    gemm::MatRef<T> src{grid + t * cs.grid_ch * L, L, 1};
    T* img = image + t * cs.image_ch * I;
    if (g.identity()) {
      gemm::gemm<T>(rows, L, cs.grid_ch, T(1), wt, src, T(1), img, L);
      return;
    }
    scratch.resize(size_t(rows * L));
    gemm::gemm<T>(rows, L, cs.grid_ch, T(1), wt, src, T(0), scratch.data(), L);
    col2im(scratch.data(), cs.image_ch, g, img, inner);
  });
}

template <class T>
void weight_grad(const ConvShape& cs, const T* image, const T* grid, T* gw) {
  const Geometry& g = cs.geo;
  int64_t L = g.grid_numel(), I = g.image_numel(), rows = cs.image_ch * g.kernel_numel();
  bool small = gemm::is_small(cs.grid_ch, rows, L);
  // One task per group: each owns its slice of the weight gradient, so the sum
  // over the batch needs no synchronisation.
  run_tasks<T>(cs.groups, small, [&](int64_t grp, std::vector<T>& scratch, bool inner) {
    T* dst = gw + grp * cs.grid_ch * rows;
    if (cs.batch == 0) std::fill(dst, dst + cs.grid_ch * rows, T(0));
    for (int64_t n = 0; n < cs.batch; ++n) {
      int64_t t = n * cs.groups + grp;
      const T* col = image + t * cs.image_ch * I;
      if (!g.identity()) {
        scratch.resize(size_t(rows * L));
        im2col(col, cs.image_ch, g, scratch.data(), inner);
        col = scratch.data();
      }
      gemm::gemm<T>(cs.grid_ch, rows, L, T(1), {grid + t * cs.grid_ch * L, L, 1}, {col, 1, L}, T(n == 0 ? 0 : 1),
                    dst, rows);
    }
  });
}

// Sum of grad_output over every dim but channels, accumulated in double.
template <class T>
void bias_grad(const T* grid, int64_t batch, int64_t channels, int64_t L, T* gb) {
  parallel_for(0, channels, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(batch * L, 1)),
               [&](int64_t c0, int64_t c1) {
                 for (int64_t c = c0; c < c1; ++c) {
                   double acc = 0;
                   for (int64_t n = 0; n < batch; ++n) {
                     const T* p = grid + (n * channels + c) * L;
                     for (int64_t l = 0; l < L; ++l) acc += double(p[l]);
                   }
                   gb[c] = T(acc);
                 }
               });
}

// ---------------------------------------------------------------- argument checks

struct ConvSetup {
  int64_t dims = 0;
  Shape stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

Shape expand_param(std::vector<int64_t> v, int64_t dims, std::string_view name) {
  if (v.size() == 1 && dims > 1) v.assign(size_t(dims), v[0]);
  KILN_USER_CHECK(int64_t(v.size()) == dims, "expected ", name, " to be a single integer value or a list of ", dims,
                  " values to match the convolution dimensions, but got ", name, "=", shape_str(v));
  return v;
}

ConvSetup make_setup(const Tensor& weight, const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                     const std::vector<int64_t>& dilation, bool transposed,
                     const std::vector<int64_t>& output_padding, int64_t groups) {
  KILN_USER_CHECK(weight.dim() >= 3, "weight should have at least three dimensions");
  ConvSetup s;
  s.dims = weight.dim() - 2;
  KILN_USER_CHECK(s.dims <= kMaxSpatial, "convolution: only 1-D, 2-D and 3-D convolutions are supported, got a ",
                  s.dims, "-D weight ", shape_str(weight.sizes()));
  s.stride = expand_param(stride, s.dims, "stride");
  s.padding = expand_param(padding, s.dims, "padding");
  s.dilation = expand_param(dilation, s.dims, "dilation");
  s.output_padding = expand_param(output_padding, s.dims, "output_padding");
  s.transposed = transposed;
  s.groups = groups;
  return s;
}

void check_conv_dtypes(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  KILN_USER_CHECK(input.dtype() == weight.dtype(), "Input type (", dtype_name(input.dtype()), ") and weight type (",
                  dtype_name(weight.dtype()), ") should be the same");
  KILN_USER_CHECK(!bias.defined() || bias.dtype() == input.dtype(), "Input type (", dtype_name(input.dtype()),
                  ") and bias type (", dtype_name(bias.dtype()), ") should be the same");
  KILN_USER_CHECK(is_floating(input.dtype()), "\"convolution\" not implemented for '", dtype_name(input.dtype()), "'");
}

std::string join_x(const Shape& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += " x ";
    s += std::to_string(v[i]);
  }
  return s;
}

void check_params(const ConvSetup& s) {
  for (int64_t d = 0; d < s.dims; ++d) {
    KILN_USER_CHECK(s.padding[d] >= 0, "negative padding is not supported");
    KILN_USER_CHECK(s.output_padding[d] >= 0, "negative output_padding is not supported");
    KILN_USER_CHECK(s.stride[d] > 0, "non-positive stride is not supported");
    KILN_USER_CHECK(s.dilation[d] > 0, "dilation should be greater than zero");
  }
  KILN_USER_CHECK(s.groups > 0, "expected groups to be greater than 0, but got groups=", s.groups);
}

// Non-transposed: channels, bias, and a kernel that fits the padded input.
Shape forward_shape(const Tensor& input, const Shape& ws, const Tensor& bias, const ConvSetup& s) {
  KILN_USER_CHECK(input.size(1) == ws[1] * s.groups, "Given groups=", s.groups, ", weight of size ", shape_str(ws),
                  ", expected input", shape_str(input.sizes()), " to have ", ws[1] * s.groups, " channels, but got ",
                  input.size(1), " channels instead");
  KILN_USER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == ws[0]), "Given weight of size ",
                  shape_str(ws), ", expected bias to be 1-dimensional with ", ws[0], " elements, but got bias of size ",
                  shape_str(bias.sizes()), " instead");
  Shape padded, kernel;
  bool fits = true;
  for (int64_t d = 0; d < s.dims; ++d) {
    padded.push_back(input.size(2 + d) + 2 * s.padding[d]);
    kernel.push_back(s.dilation[d] * (ws[2 + d] - 1) + 1);
    fits &= padded.back() >= kernel.back();
  }
  KILN_USER_CHECK(fits, "Calculated padded input size per channel: (", join_x(padded), "). Kernel size: (",
                  join_x(kernel), "). Kernel size can't be greater than actual input size");
  Shape out{input.size(0), ws[0]};
  for (int64_t d = 0; d < s.dims; ++d) out.push_back((padded[d] - kernel[d]) / s.stride[d] + 1);
  return out;
}

// Transposed: the weight is [in_channels, out_channels / groups, kernel...].
Shape transposed_shape(const Tensor& input, const Shape& ws, const Tensor& bias, const ConvSetup& s) {
  KILN_USER_CHECK(input.size(1) == ws[0], "Given transposed=1, weight of size ", shape_str(ws), ", expected input",
                  shape_str(input.sizes()), " to have ", ws[0], " channels, but got ", input.size(1),
                  " channels instead");
  KILN_USER_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == ws[1] * s.groups),
                  "Given transposed=1, weight of size ", shape_str(ws), ", expected bias to be 1-dimensional with ",
                  ws[1] * s.groups, " elements, but got bias of size ", shape_str(bias.sizes()), " instead");
  Shape in_sp, out_sp;
  for (int64_t d = 0; d < s.dims; ++d) {
    KILN_USER_CHECK(s.output_padding[d] < s.stride[d] || s.output_padding[d] < s.dilation[d],
                    "output padding must be smaller than either stride or dilation, but got output_padding=",
                    shape_str(s.output_padding), ", stride=", shape_str(s.stride), ", dilation=",
                    shape_str(s.dilation));
    in_sp.push_back(input.size(2 + d));
    out_sp.push_back((input.size(2 + d) - 1) * s.stride[d] - 2 * s.padding[d] + s.dilation[d] * (ws[2 + d] - 1) +
                     s.output_padding[d] + 1);
  }
  for (int64_t v : out_sp)
    KILN_USER_CHECK(v > 0, "Given input size per channel: (", join_x(in_sp), "). Calculated output size per channel: (",
                    join_x(out_sp), "). Output size is too small");
  Shape out{input.size(0), ws[1] * s.groups};
  out.insert(out.end(), out_sp.begin(), out_sp.end());
  return out;
}

// PyTorch's check_shape_forward, then the output size.
Shape conv_output_shape(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvSetup& s) {
  check_params(s);
  const Shape& ws = weight.sizes();
  int64_t k = weight.dim();
  KILN_USER_CHECK(input.dim() == k, "Expected ", k, "-dimensional input for ", k, "-dimensional weight ",
                  shape_str(ws), ", but got ", input.dim(), "-dimensional input of size ", shape_str(input.sizes()),
                  " instead");
  KILN_USER_CHECK(ws[0] >= s.groups, "Given groups=", s.groups, ", expected weight to be at least ", s.groups,
                  " at dimension 0, but got weight of size ", shape_str(ws), " instead");
  KILN_USER_CHECK(ws[0] % s.groups == 0, "Given groups=", s.groups, ", expected weight to be divisible by ",
                  s.groups, " at dimension 0, but got weight of size ", shape_str(ws), " instead");
  return s.transposed ? transposed_shape(input, ws, bias, s) : forward_shape(input, ws, bias, s);
}

// Geometry with `image` and `grid` the full [N, C, spatial...] sizes.
Geometry make_geometry(const Shape& image, const Shape& grid, const Tensor& weight, const ConvSetup& s) {
  Geometry g;
  int64_t off = kMaxSpatial - s.dims;
  for (int64_t d = 0; d < s.dims; ++d) {
    g.image[off + d] = image[2 + d];
    g.grid[off + d] = grid[2 + d];
    g.kernel[off + d] = weight.size(2 + d);
    g.stride[off + d] = s.stride[d];
    g.pad[off + d] = s.padding[d];
    g.dil[off + d] = s.dilation[d];
  }
  return g;
}

// The three primitives on (float32 or float64) contiguous tensors.
enum class Primitive { ImageToGrid, GridToImage, WeightGrad };

// image/grid/weight as the primitive sees them; `dst` receives the result
// (grid for ImageToGrid, image for GridToImage, weight for WeightGrad).
void run_primitive(Primitive p, const ConvShape& cs, const Tensor& image, const Tensor& grid, const Tensor& weight,
                   bool accumulate) {
  dispatch_float(image.dtype(), "convolution", [&]<class T>() {
    switch (p) {
      case Primitive::ImageToGrid:
        return image_to_grid<T>(cs, image.data<T>(), weight.data<T>(), grid.data<T>(), accumulate);
      case Primitive::GridToImage: return grid_to_image<T>(cs, grid.data<T>(), weight.data<T>(), image.data<T>());
      case Primitive::WeightGrad: return weight_grad<T>(cs, image.data<T>(), grid.data<T>(), weight.data<T>());
    }
  });
}

// Starting value of a convolution output: bias per channel, else zeros.
void fill_with_bias(const Tensor& out, const Tensor& bias) {
  if (!bias.defined()) {
    out.fill_(Scalar(0.0));
    return;
  }
  Shape s(size_t(out.dim() - 1), 1);
  s[0] = bias.size(0);
  out.copy_(bias.view(s));
}

// out (batched, contiguous) = convolution of float32/float64 contiguous operands.
void conv_forward_compute(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvSetup& s,
                          const Tensor& out) {
  // Either way the weight is [groups * grid_ch, image_ch, kernel...].
  ConvShape cs;
  cs.batch = input.size(0);
  cs.groups = s.groups;
  cs.image_ch = weight.size(1);
  cs.grid_ch = weight.size(0) / s.groups;
  if (!s.transposed) {
    cs.geo = make_geometry(input.sizes(), out.sizes(), weight, s);
    if (bias.defined()) fill_with_bias(out, bias);
    run_primitive(Primitive::ImageToGrid, cs, input, out, weight, bias.defined());
  } else {
    cs.geo = make_geometry(out.sizes(), input.sizes(), weight, s);
    fill_with_bias(out, bias);
    run_primitive(Primitive::GridToImage, cs, out, input, weight, true);
  }
}

// Reduced floats compute in float32 and round once at the output.
void conv_forward_into(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvSetup& s,
                       const Tensor& out) {
  if (out.numel() == 0) return;
  gemm::sync_threads();
  if (is_reduced_float(out.dtype())) {
    Tensor acc = Tensor::empty(out.sizes(), DType::Float32);
    conv_forward_compute(upcast(input).contiguous(), upcast(weight).contiguous(),
                         bias.defined() ? upcast(bias).contiguous() : bias, s, acc);
    out.copy_(acc);
    return;
  }
  conv_forward_compute(input.contiguous(), weight.contiguous(), bias.defined() ? bias.contiguous() : bias, s, out);
}

// ---------------------------------------------------------------- aten::convolution

// convolution and _convolution share their first nine arguments.
ConvSetup setup_from_args(const OpArgs& args) {
  return make_setup(args.tensor(1), args.ints(3), args.ints(4), args.ints(5), args.boolean(6), args.ints(7),
                    args.integer(8));
}

ValueList convolution_meta(const OpArgs& args) {
  const Tensor &input = args.tensor(0), &weight = args.tensor(1);
  Tensor bias = args.opt_tensor(2);
  ConvSetup s = setup_from_args(args);
  check_conv_dtypes(input, weight, bias);
  return one(Tensor::meta(conv_output_shape(input, weight, bias, s), input.dtype()));
}

void convolution_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  conv_forward_into(args.tensor(0), args.tensor(1), args.opt_tensor(2), setup_from_args(args), outs[0]);
}

// ---------------------------------------------------------------- conv1d/2d/3d, conv_transpose

// conv2d and friends accept an unbatched input (one dim fewer) and squeeze the batch back out.
Tensor batchify(const Tensor& input, int64_t dims, std::string_view op) {
  bool batched = input.dim() == dims + 2;
  KILN_USER_CHECK(batched || input.dim() == dims + 1, "Expected ", dims + 1, "D (unbatched) or ", dims + 2,
                  "D (batched) input to ", op, ", but got input of size: ", shape_str(input.sizes()));
  return batched ? input : input.unsqueeze(0);
}

Shape unbatch_shape(Shape out, const Tensor& input, int64_t dims) {
  if (input.dim() == dims + 1) out.erase(out.begin());
  return out;
}

// 'same' padding may be asymmetric (even kernels); the extra right-side zeros
// are added to a copy of the input so the convolution itself stays symmetric.
struct SamePadding {
  Shape left;
  Shape extra_right;
};

SamePadding same_padding(const Tensor& weight, const ConvSetup& s) {
  SamePadding p;
  for (int64_t d = 0; d < s.dims; ++d) {
    KILN_USER_CHECK(s.stride[d] == 1, "padding='same' is not supported for strided convolutions");
    int64_t total = s.dilation[d] * (weight.size(2 + d) - 1);
    p.left.push_back(total / 2);
    p.extra_right.push_back(total - 2 * (total / 2));
  }
  return p;
}

Tensor pad_right(const Tensor& input, const Shape& extra) {
  Shape sizes = input.sizes();
  bool any = false;
  for (size_t d = 0; d < extra.size(); ++d) {
    sizes[2 + d] += extra[d];
    any |= extra[d] != 0;
  }
  if (!any || input.is_meta()) return any ? Tensor::meta(sizes, input.dtype()) : input;
  Tensor out = Tensor::zeros(sizes, input.dtype());
  Tensor view = out;
  for (size_t d = 0; d < extra.size(); ++d) view = view.narrow(int64_t(2 + d), 0, input.size(int64_t(2 + d)));
  view.copy_(input);
  return out;
}

// Arguments of the composite conv ops after batching and padding resolution.
struct Composite {
  Tensor input, weight, bias;
  ConvSetup setup;
};

// conv{1,2,3}d(input, weight, bias, stride, padding, dilation, groups), with
// padding an int list (.default) or a string (.padding).
Composite conv_nd_args(const OpArgs& args, int64_t dims, std::string_view op) {
  Composite c;
  c.weight = args.tensor(1);
  c.bias = args.opt_tensor(2);
  c.input = batchify(args.tensor(0), dims, op);
  check_conv_dtypes(c.input, c.weight, c.bias);
  if (args[4].kind() == Value::Kind::String) {
    std::string mode = args.str(4);
    c.setup = make_setup(c.weight, args.ints(3), {0}, args.ints(5), false, {0}, args.integer(6));
    if (mode == "same") {
      SamePadding p = same_padding(c.weight, c.setup);
      c.setup.padding = p.left;
      c.input = pad_right(c.input, p.extra_right);
    } else {
      KILN_USER_CHECK(mode == "valid", "Invalid padding string: '", mode, "'");
    }
  } else {
    c.setup = make_setup(c.weight, args.ints(3), args.ints(4), args.ints(5), false, {0}, args.integer(6));
  }
  KILN_USER_CHECK(c.setup.dims == dims, "Expected ", dims + 2, "-dimensional weight for ", op, ", but got weight of size ",
                  shape_str(c.weight.sizes()));
  return c;
}

// conv_transpose{1,2,3}d(input, weight, bias, stride, padding, output_padding, groups, dilation).
Composite conv_transpose_args(const OpArgs& args, int64_t dims, std::string_view op) {
  Composite c;
  c.weight = args.tensor(1);
  c.bias = args.opt_tensor(2);
  c.input = batchify(args.tensor(0), dims, op);
  check_conv_dtypes(c.input, c.weight, c.bias);
  c.setup = make_setup(c.weight, args.ints(3), args.ints(4), args.ints(7), true, args.ints(5), args.integer(6));
  KILN_USER_CHECK(c.setup.dims == dims, "Expected ", dims + 2, "-dimensional weight for ", op, ", but got weight of size ",
                  shape_str(c.weight.sizes()));
  return c;
}

using CompositeParser = Composite (*)(const OpArgs&, int64_t, std::string_view);

void add_conv_composite(OpRegistry& r, std::string_view schema, int64_t dims, std::string op, CompositeParser parse) {
  OpFn meta = [dims, op, parse](const OpArgs& args) -> ValueList {
    Composite c = parse(args, dims, op);
    Shape out = conv_output_shape(c.input, c.weight, c.bias, c.setup);
    return one(Tensor::meta(unbatch_shape(out, args.tensor(0), dims), c.input.dtype()));
  };
  ComputeFn compute = [dims, op, parse](const OpArgs& args, const std::vector<Tensor>& outs) {
    Composite c = parse(args, dims, op);
    Tensor out = args.tensor(0).dim() == dims + 1 ? outs[0].unsqueeze(0) : outs[0];
    conv_forward_into(c.input, c.weight, c.bias, c.setup, out);
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// ---------------------------------------------------------------- convolution_backward

struct BackwardArgs {
  Tensor grad_output, input, weight;
  ConvSetup setup;
  std::array<bool, 3> mask{};
  Shape bias_size;
};

BackwardArgs backward_args(const OpArgs& args) {
  BackwardArgs b;
  b.grad_output = args.tensor(0);
  b.input = args.tensor(1);
  b.weight = args.tensor(2);
  b.setup = make_setup(b.weight, args.ints(4), args.ints(5), args.ints(6), args.boolean(7), args.ints(8),
                       args.integer(9));
  const ValueList& mask = args[10].to_list();
  KILN_USER_CHECK(mask.size() == 3, "convolution_backward: output_mask must have 3 entries, got ", mask.size());
  for (size_t i = 0; i < 3; ++i) b.mask[i] = mask[i].to_bool();
  check_conv_dtypes(b.input, b.weight, Tensor());
  KILN_USER_CHECK(b.grad_output.dtype() == b.input.dtype(), "convolution_backward: grad_output type (",
                  dtype_name(b.grad_output.dtype()), ") and input type (", dtype_name(b.input.dtype()),
                  ") should be the same");
  Shape expect = conv_output_shape(b.input, b.weight, Tensor(), b.setup);
  KILN_USER_CHECK(b.grad_output.sizes() == expect, "convolution_backward: expected grad_output of size ",
                  shape_str(expect), ", but got ", shape_str(b.grad_output.sizes()));
  // bias_sizes shapes only the bias gradient: PyTorch passes [0] for a
  // convolution without bias (and then output_mask[2] is false), so it is
  // checked only when that gradient is asked for.
  auto bias_sizes = args.opt_ints(3);
  b.bias_size = bias_sizes ? *bias_sizes : Shape{expect[1]};
  KILN_USER_CHECK(!b.mask[2] || shape_numel(b.bias_size) == expect[1], "convolution_backward: bias_sizes ",
                  shape_str(b.bias_size), " do not match the ", expect[1], " output channels");
  return b;
}

ValueList backward_results(const BackwardArgs& b, const std::array<Tensor, 3>& t) {
  ValueList out;
  for (size_t i = 0; i < 3; ++i) out.push_back(b.mask[i] ? Value(t[i]) : Value());
  return out;
}

ValueList convolution_backward_meta(const OpArgs& args) {
  BackwardArgs b = backward_args(args);
  DType dt = b.input.dtype();
  return backward_results(b, {Tensor::meta(b.input.sizes(), dt), Tensor::meta(b.weight.sizes(), dt),
                              Tensor::meta(b.bias_size, dt)});
}

// Gradients in float32/float64 of contiguous operands.
std::array<Tensor, 3> conv_backward_compute(const BackwardArgs& b, const Tensor& go, const Tensor& x, const Tensor& w) {
  DType dt = x.dtype();
  const ConvSetup& s = b.setup;
  std::array<Tensor, 3> r;
  ConvShape cs;
  cs.batch = x.size(0);
  cs.groups = s.groups;
  cs.image_ch = w.size(1);
  cs.grid_ch = w.size(0) / s.groups;
  // Non-transposed: the input is the image, grad_output the grid; transposed: the reverse.
  const Tensor& image = s.transposed ? go : x;
  const Tensor& grid = s.transposed ? x : go;
  cs.geo = make_geometry(image.sizes(), grid.sizes(), w, s);
  if (b.mask[0]) {
    r[0] = Tensor::zeros(x.sizes(), dt);
    if (x.numel() > 0) {
      if (s.transposed) run_primitive(Primitive::ImageToGrid, cs, go, r[0], w, false);
      else run_primitive(Primitive::GridToImage, cs, r[0], go, w, true);
    }
  }
  if (b.mask[1]) {
    r[1] = Tensor::zeros(w.sizes(), dt);
    if (w.numel() > 0) run_primitive(Primitive::WeightGrad, cs, image, grid, r[1], false);
  }
  if (b.mask[2]) {
    r[2] = Tensor::empty({go.size(1)}, dt);
    dispatch_float(dt, "convolution_backward", [&]<class T>() {
      bias_grad<T>(go.data<T>(), go.size(0), go.size(1), shape_numel(std::span(go.sizes()).subspan(2)),
                   r[2].data<T>());
    });
  }
  return r;
}

ValueList convolution_backward_cpu(const OpArgs& args) {
  if (any_meta(args)) return convolution_backward_meta(args);
  BackwardArgs b = backward_args(args);
  gemm::sync_threads();
  DType dt = b.input.dtype();
  std::array<Tensor, 3> r = conv_backward_compute(b, upcast(b.grad_output).contiguous(), upcast(b.input).contiguous(),
                                                  upcast(b.weight).contiguous());
  for (Tensor& t : r)
    if (t.defined()) t = t.to(dt);
  if (r[2].defined()) r[2] = r[2].view(b.bias_size);
  return backward_results(b, r);
}

// ---------------------------------------------------------------- im2col / col2im ops (unfold / fold)

// The sliding-block geometry of aten::im2col and aten::col2im (2-D only).
struct Blocks {
  Geometry geo;
  Shape kernel;
};

Blocks plan_blocks(const std::vector<int64_t>& image_hw, const OpArgs& args, size_t first, std::string_view op) {
  auto two = [&](size_t i, std::string_view name) {
    std::vector<int64_t> v = args.ints(i);
    KILN_USER_CHECK(v.size() == 2, op, ": It is expected ", name, " equals to 2, but got size ", v.size());
    return v;
  };
  std::vector<int64_t> k = two(first, "kernel_size"), dil = two(first + 1, "dilation"), pad = two(first + 2, "padding"),
                       st = two(first + 3, "stride");
  KILN_USER_CHECK(k[0] > 0 && k[1] > 0, op, ": kernel size should be greater than zero, but got kernel_height: ", k[0],
                  " kernel_width: ", k[1]);
  KILN_USER_CHECK(dil[0] > 0 && dil[1] > 0, op, ": dilation should be greater than zero, but got dilation_height: ",
                  dil[0], " dilation_width: ", dil[1]);
  KILN_USER_CHECK(pad[0] >= 0 && pad[1] >= 0, op, ": padding should be non-negative, but got pad_height: ", pad[0],
                  " pad_width: ", pad[1]);
  KILN_USER_CHECK(st[0] > 0 && st[1] > 0, op, ": stride should be greater than zero, but got stride_height: ", st[0],
                  " stride_width: ", st[1]);
  Blocks b;
  b.kernel = k;
  for (size_t d = 0; d < 2; ++d) {
    b.geo.image[1 + d] = image_hw[d];
    b.geo.kernel[1 + d] = k[d];
    b.geo.dil[1 + d] = dil[d];
    b.geo.pad[1 + d] = pad[d];
    b.geo.stride[1 + d] = st[d];
    b.geo.grid[1 + d] = (image_hw[d] + 2 * pad[d] - (dil[d] * (k[d] - 1) + 1)) / st[d] + 1;
  }
  KILN_USER_CHECK(b.geo.grid[1] >= 1 && b.geo.grid[2] >= 1, op, ": Given input with spatial size (", image_hw[0], ", ",
                  image_hw[1], "), kernel_size=(", k[0], ", ", k[1], "), dilation=(", dil[0], ", ", dil[1],
                  "), padding=(", pad[0], ", ", pad[1], "), calculated shape of the array of sliding blocks as (",
                  b.geo.grid[1], ", ", b.geo.grid[2], "), but its components must be at least one.");
  return b;
}

// im2col(self [N, C, H, W] or [C, H, W], kernel_size, dilation, padding, stride) -> [N, C*kh*kw, L]
ValueList im2col_meta(const OpArgs& args) {
  const Tensor& x = args.tensor(0);
  bool ok = (x.dim() == 3 || x.dim() == 4) && x.size(-1) > 0 && x.size(-2) > 0 && x.size(-3) > 0;
  KILN_USER_CHECK(ok, "Expected 3D or 4D (batch mode) tensor for input with possible 0 batch size and non-zero "
                  "dimensions, but got: ", shape_str(x.sizes()));
  Blocks b = plan_blocks({x.size(-2), x.size(-1)}, args, 1, "im2col");
  Shape out{x.size(-3) * b.kernel[0] * b.kernel[1], b.geo.grid_numel()};
  if (x.dim() == 4) out.insert(out.begin(), x.size(0));
  return one(Tensor::meta(out, x.dtype()));
}

void im2col_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  Tensor x = args.tensor(0).contiguous();
  Blocks b = plan_blocks({x.size(-2), x.size(-1)}, args, 1, "im2col");
  int64_t batch = x.dim() == 4 ? x.size(0) : 1, channels = x.size(-3);
  if (outs[0].numel() == 0) return;
  dispatch_all(x.dtype(), [&]<class T>() {
    int64_t per_image = channels * b.geo.image_numel(), per_col = channels * b.geo.kernel_numel() * b.geo.grid_numel();
    parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t n = lo; n < hi; ++n)
        im2col(x.data<T>() + n * per_image, channels, b.geo, outs[0].data<T>() + n * per_col, false);
    });
  });
}

// col2im(self [N, C*kh*kw, L] or [C*kh*kw, L], output_size, kernel_size, dilation, padding, stride) -> [N, C, oh, ow]
ValueList col2im_meta(const OpArgs& args) {
  const Tensor& x = args.tensor(0);
  KILN_USER_CHECK((x.dim() == 2 || x.dim() == 3) && x.size(-1) > 0 && x.size(-2) > 0,
                  "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                  "dimensions, but got: ", shape_str(x.sizes()));
  std::vector<int64_t> out_hw = args.ints(1);
  KILN_USER_CHECK(out_hw.size() == 2, "col2im: It is expected output_size equals to 2, but got size ", out_hw.size());
  Blocks b = plan_blocks(out_hw, args, 2, "col2im");
  int64_t kk = b.kernel[0] * b.kernel[1];
  KILN_USER_CHECK(x.size(-2) % kk == 0, "Expected size of input's dimension 1 to be divisible by the product of "
                  "kernel_size, but got input.size(1)=", x.size(-2), " and kernel_size=(", b.kernel[0], ", ",
                  b.kernel[1], ")");
  KILN_USER_CHECK(x.size(-1) == b.geo.grid_numel(), "Given output_size=(", out_hw[0], ", ", out_hw[1],
                  "), expected size of input's dimension 2 to match the calculated number of sliding blocks ",
                  b.geo.grid[1], " * ", b.geo.grid[2], " = ", b.geo.grid_numel(), ", but got input.size(2)=",
                  x.size(-1));
  KILN_USER_CHECK(x.dtype() != DType::Bool, "\"col2im\" not implemented for 'Bool'");
  Shape out{x.size(-2) / kk, out_hw[0], out_hw[1]};
  if (x.dim() == 3) out.insert(out.begin(), x.size(0));
  return one(Tensor::meta(out, x.dtype()));
}

// Sums overlapping blocks in float32 for the 16-bit floats, rounding once.
void col2im_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  Tensor x = upcast(args.tensor(0)).contiguous();
  Blocks b = plan_blocks(args.ints(1), args, 2, "col2im");
  int64_t batch = x.dim() == 3 ? x.size(0) : 1, channels = x.size(-2) / b.geo.kernel_numel();
  Tensor acc = Tensor::zeros(outs[0].sizes(), x.dtype());
  if (acc.numel() > 0) {
    dispatch_compute(x.dtype(), "col2im", [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        int64_t per_col = x.size(-2) * x.size(-1), per_image = channels * b.geo.image_numel();
        parallel_for(0, batch, 1, [&](int64_t lo, int64_t hi) {
          for (int64_t n = lo; n < hi; ++n)
            col2im(x.data<T>() + n * per_col, channels, b.geo, acc.data<T>() + n * per_image, false);
        });
      }
    });
  }
  outs[0].copy_(acc);
}

}  // namespace

void register_conv_pool_ops(OpRegistry& r) {
  add_op_with_outputs(r,
                      "aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
                      "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
                      convolution_meta, convolution_compute);
  add_op_with_outputs(r,
                      "aten::_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
                      "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool benchmark, "
                      "bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor",
                      convolution_meta, convolution_compute);
  r.add("aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, "
        "SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, "
        "SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
        convolution_backward_meta, convolution_backward_cpu);
  add_op_with_outputs(r, "aten::im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor",
                      im2col_meta, im2col_compute);
  add_op_with_outputs(r,
                      "aten::col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, "
                      "int[2] padding, int[2] stride) -> Tensor",
                      col2im_meta, col2im_compute);

  static const char* kDims[] = {"1", "2", "3"};
  for (int64_t d = 1; d <= kMaxSpatial; ++d) {
    std::string n = kDims[d - 1];
    std::string conv = "conv" + n + "d";
    std::string ints = "SymInt[" + n + "]";
    add_conv_composite(r,
                       "aten::" + conv + "(Tensor input, Tensor weight, Tensor? bias=None, " + ints + " stride=1, " +
                           ints + " padding=0, " + ints + " dilation=1, SymInt groups=1) -> Tensor",
                       d, conv, conv_nd_args);
    add_conv_composite(r,
                       "aten::" + conv + ".padding(Tensor input, Tensor weight, Tensor? bias=None, " + ints +
                           " stride=1, str padding=\"valid\", " + ints + " dilation=1, SymInt groups=1) -> Tensor",
                       d, conv, conv_nd_args);
    std::string tconv = "conv_transpose" + n + "d";
    add_conv_composite(r,
                       "aten::" + tconv + (d == 1 ? "" : ".input") + "(Tensor input, Tensor weight, Tensor? bias=None, " +
                           ints + " stride=1, " + ints + " padding=0, " + ints + " output_padding=0, SymInt groups=1, " +
                           ints + " dilation=1) -> Tensor",
                       d, tconv, conv_transpose_args);
  }
}

}  // namespace kiln
