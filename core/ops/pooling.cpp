// Pooling: max (with indices), average and adaptive average/max, 1-D to 3-D,
// forward and backward. One generic kernel per kind works on [planes, D, H, W]
// with unused leading spatial dims of size 1; the 1-D and 2-D ops are that
// kernel on a reshaped view. Indices are flat offsets into one input plane, as
// PyTorch's (h * W + w for 2-D).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/ops/kernel_util.h"

namespace kiln {
namespace {

constexpr int64_t kMaxSpatial = 3;
using Dims3 = std::array<int64_t, 3>;

// Spatial sizes right-aligned in 3 slots.
struct Planes {
  int64_t planes = 0;  // batch * channels
  Dims3 in{1, 1, 1}, out{1, 1, 1};
  int64_t in_numel() const { return in[0] * in[1] * in[2]; }
  int64_t out_numel() const { return out[0] * out[1] * out[2]; }
};

struct PoolSpec {
  Dims3 kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dil{1, 1, 1};
  bool ceil_mode = false;
};

const char* count_word(int64_t dims) { return dims == 1 ? "one" : dims == 2 ? "two" : "three"; }

std::string join_x(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += "x";
    s += std::to_string(v[i]);
  }
  return s;
}

template <class T>
constexpr bool is_reduced_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
using opmath_t = std::conditional_t<is_reduced_v<T>, float, T>;

template <class T>
bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

// Batched inputs have dims + 2 dims, unbatched dims + 1; everything before
// the spatial dims is folded into planes.
Planes planes_of(const Tensor& input, int64_t dims) {
  Planes p;
  p.planes = shape_numel(std::span(input.sizes()).first(size_t(input.dim() - dims)));
  for (int64_t d = 0; d < dims; ++d) p.in[kMaxSpatial - dims + d] = input.size(input.dim() - dims + d);
  return p;
}

Shape with_spatial(const Tensor& input, int64_t dims, const Dims3& out) {
  Shape s(input.sizes().begin(), input.sizes().end() - dims);
  for (int64_t d = 0; d < dims; ++d) s.push_back(out[kMaxSpatial - dims + d]);
  return s;
}

// Reads an int list that may name one value for all dims, or (empty_ok) none.
std::vector<int64_t> dims_param(const std::vector<int64_t>& v, int64_t dims, bool empty_ok, std::string_view op,
                                std::string_view name) {
  bool ok = v.size() == 1 || int64_t(v.size()) == dims || (empty_ok && v.empty());
  KILN_USER_CHECK(ok, op, ": ", name, " must either be ", empty_ok ? "omitted, " : "", "a single int, or a tuple of ",
                  count_word(dims), " ints");
  if (v.empty()) return {};
  return v.size() == 1 ? std::vector<int64_t>(size_t(dims), v[0]) : v;
}

void check_input_rank(const Tensor& input, int64_t dims, std::string_view op) {
  KILN_USER_CHECK(input.dim() == dims + 1 || input.dim() == dims + 2, op, ": Expected ", dims + 1, "D or ", dims + 2,
                  "D (batch mode) tensor with optional 0 dim batch size for input, but got:", shape_str(input.sizes()));
  for (int64_t d = input.dim() - dims - 1; d < input.dim(); ++d)
    KILN_USER_CHECK(input.size(d) > 0, op, ": Expected input's non-batch dimensions to have positive length, but input "
                    "has a shape of ", shape_str(input.sizes()), " and non-batch dimension ", input.size(d),
                    " has length zero!");
}

// PyTorch's pooling_output_shape with its checks.
int64_t pooling_output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  KILN_USER_CHECK(stride != 0, "stride should not be zero");
  KILN_USER_CHECK(pad >= 0, "pad must be non-negative, but got pad: ", pad);
  KILN_USER_CHECK(pad <= ((k - 1) * dil + 1) / 2, "pad should be at most half of effective kernel size, but got pad=",
                  pad, ", kernel_size=", k, " and dilation=", dil);
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;  // rounds toward -inf
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Parses kernel/stride/padding(/dilation) starting at argument `first` and
// computes the output size; `with_dilation` is false for average pooling.
PoolSpec parse_pool(const OpArgs& args, size_t first, int64_t dims, bool with_dilation, const Tensor& input,
                    std::string_view op, Planes& shape) {
  auto kernel = dims_param(args.ints(first), dims, false, op, "kernel_size");
  auto stride = dims_param(args.ints(first + 1), dims, true, op, "stride");
  auto pad = dims_param(args.ints(first + 2), dims, false, op, "padding");
  auto dil = with_dilation ? dims_param(args.ints(first + 3), dims, false, op, "dilation")
                           : std::vector<int64_t>(size_t(dims), 1);
  if (stride.empty()) stride = kernel;
  PoolSpec s;
  s.ceil_mode = args.boolean(first + (with_dilation ? 4 : 3));
  for (int64_t d = 0; d < dims; ++d) {
    KILN_USER_CHECK(kernel[d] > 0, op, ": kernel size should be greater than zero, but got ", shape_str(kernel));
    KILN_USER_CHECK(stride[d] != 0, "stride should not be zero");
    KILN_USER_CHECK(stride[d] > 0, op, ": stride should be greater than zero, but got ", shape_str(stride));
    KILN_USER_CHECK(dil[d] > 0, op, ": dilation should be greater than zero, but got ", shape_str(dil));
    int64_t i = kMaxSpatial - dims + d;
    s.kernel[i] = kernel[d];
    s.stride[i] = stride[d];
    s.pad[i] = pad[d];
    s.dil[i] = dil[d];
  }
  check_input_rank(input, dims, op);
  shape = planes_of(input, dims);
  int64_t channels = input.size(input.dim() - dims - 1);
  std::vector<int64_t> in_sizes{channels}, out_sizes{channels};
  bool ok = true;
  for (int64_t d = 0; d < dims; ++d) {
    int64_t i = kMaxSpatial - dims + d;
    shape.out[i] = pooling_output_size(shape.in[i], s.kernel[i], s.pad[i], s.stride[i], s.dil[i], s.ceil_mode);
    in_sizes.push_back(shape.in[i]);
    out_sizes.push_back(shape.out[i]);
    ok &= shape.out[i] >= 1;
  }
  KILN_USER_CHECK(ok, "Given input size: (", join_x(in_sizes), "). Calculated output size: (", join_x(out_sizes),
                  "). Output size is too small");
  return s;
}

// Runs fn(plane, od, oh) over all output rows in parallel; `row_cost` is the
// rough work per row, for the grain.
template <class Fn>
void for_rows(const Planes& p, int64_t row_cost, Fn&& fn) {
  int64_t rows = p.planes * p.out[0] * p.out[1];
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(row_cost, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r) fn(r / (p.out[0] * p.out[1]), (r / p.out[1]) % p.out[0], r % p.out[1]);
               });
}

// Runs fn(plane) over planes in parallel (backward kernels scatter within a plane).
template <class Fn>
void for_planes(const Planes& p, int64_t plane_cost, Fn&& fn) {
  parallel_for(0, p.planes, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(plane_cost, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t c = lo; c < hi; ++c) fn(c);
               });
}

// ---------------------------------------------------------------- max pooling

// The dilated window of output index o along one dim: [start, end) stepping by dil.
struct Window {
  int64_t start, end;
};

Window max_window(int64_t o, const PoolSpec& s, const Planes& p, int d) {
  int64_t start = o * s.stride[d] - s.pad[d];
  int64_t end = std::min(start + (s.kernel[d] - 1) * s.dil[d] + 1, p.in[d]);
  while (start < 0) start += s.dil[d];
  return {start, end};
}

template <class T>
void max_pool_kernel(const T* in, T* out, int64_t* ind, const Planes& p, const PoolSpec& s) {
  using Acc = opmath_t<T>;
  const Acc lowest = std::numeric_limits<Acc>::has_infinity ? -std::numeric_limits<Acc>::infinity()
                                                            : std::numeric_limits<Acc>::lowest();
  int64_t H = p.in[1], W = p.in[2], window = s.kernel[0] * s.kernel[1] * s.kernel[2];
  for_rows(p, p.out[2] * window, [&](int64_t c, int64_t od, int64_t oh) {
    const T* plane = in + c * p.in_numel();
    int64_t o = (c * p.out[0] + od) * p.out[1] * p.out[2] + oh * p.out[2];
    Window wd = max_window(od, s, p, 0), wh = max_window(oh, s, p, 1);
    for (int64_t ow = 0; ow < p.out[2]; ++ow) {
      Window ww = max_window(ow, s, p, 2);
      Acc best = lowest;
      int64_t best_i = (wd.start * H + wh.start) * W + ww.start;
      for (int64_t d = wd.start; d < wd.end; d += s.dil[0])
        for (int64_t h = wh.start; h < wh.end; h += s.dil[1])
          for (int64_t w = ww.start; w < ww.end; w += s.dil[2]) {
            int64_t i = (d * H + h) * W + w;
            Acc v = Acc(plane[i]);
            // NaN wins, as in PyTorch; branch-free, as random data mispredicts.
            bool take = (v > best) | is_nan_value(v);
            best = take ? v : best;
            best_i = take ? i : best_i;
          }
      out[o + ow] = T(best);
      ind[o + ow] = best_i;
    }
  });
}

ValueList max_pool_outputs(const Tensor& input, int64_t dims, const Planes& p) {
  Shape s = with_spatial(input, dims, p.out);
  return {Value(Tensor::meta(s, input.dtype())), Value(Tensor::meta(s, DType::Int64))};
}

void check_max_pool_dtype(DType t, std::string_view op) {
  KILN_USER_CHECK(t != DType::Bool, "\"", op, "\" not implemented for 'Bool'");
}

void run_max_pool(const Tensor& input, const Planes& p, const PoolSpec& s, const Tensor& out, const Tensor& ind) {
  if (out.numel() == 0) return;
  Tensor x = input.contiguous();
  dispatch_all(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) max_pool_kernel<T>(x.data<T>(), out.data<T>(), ind.data<int64_t>(), p, s);
  });
}

// max_poolNd_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
void add_max_pool(OpRegistry& r, std::string_view schema, int64_t dims, std::string op) {
  OpFn meta = [dims, op](const OpArgs& args) -> ValueList {
    Planes p;
    parse_pool(args, 1, dims, true, args.tensor(0), op, p);
    check_max_pool_dtype(args.tensor(0).dtype(), op);
    return max_pool_outputs(args.tensor(0), dims, p);
  };
  ComputeFn compute = [dims, op](const OpArgs& args, const std::vector<Tensor>& outs) {
    Planes p;
    PoolSpec s = parse_pool(args, 1, dims, true, args.tensor(0), op, p);
    run_max_pool(args.tensor(0), p, s, outs[0], outs[1]);
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// max_poolNd (no indices): the same kernel, indices dropped.
void add_max_pool_values(OpRegistry& r, std::string_view schema, int64_t dims, std::string op) {
  OpFn meta = [dims, op](const OpArgs& args) -> ValueList {
    Planes p;
    parse_pool(args, 1, dims, true, args.tensor(0), op, p);
    check_max_pool_dtype(args.tensor(0).dtype(), op);
    return {max_pool_outputs(args.tensor(0), dims, p)[0]};
  };
  ComputeFn compute = [dims, op](const OpArgs& args, const std::vector<Tensor>& outs) {
    Planes p;
    PoolSpec s = parse_pool(args, 1, dims, true, args.tensor(0), op, p);
    Tensor ind = Tensor::empty(outs[0].sizes(), DType::Int64);
    run_max_pool(args.tensor(0), p, s, outs[0], ind);
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// grad_input[plane][ind] += grad_output, for max and adaptive max pooling.
void scatter_by_indices(const Tensor& grad_out, const Tensor& indices, const Planes& p, const Tensor& grad_in) {
  KILN_USER_CHECK(indices.dtype() == DType::Int64, "indices must be an int64 tensor, got ", dtype_name(indices.dtype()));
  Tensor go = upcast(grad_out).contiguous(), ind = indices.contiguous();
  const int64_t* ip = ind.data<int64_t>();
  int64_t plane_size = p.in_numel();
  for (int64_t i = 0; i < ind.numel(); ++i)
    KILN_USER_CHECK(ip[i] >= 0 && ip[i] < plane_size, "max pooling backward: index ", ip[i],
                    " is out of range for an input plane of ", plane_size, " elements");
  Tensor acc = Tensor::zeros(grad_in.sizes(), go.dtype());
  int64_t per_plane = p.out_numel();
  dispatch_float(go.dtype(), "max_pool_backward", [&]<class T>() {
    const T* g = go.data<T>();
    T* dst = acc.data<T>();
    for_planes(p, per_plane, [&](int64_t c) {
      for (int64_t o = 0; o < per_plane; ++o) dst[c * plane_size + ip[c * per_plane + o]] += g[c * per_plane + o];
    });
  });
  grad_in.copy_(acc);
}

void check_grad_shape(const Tensor& grad, const Shape& expected, std::string_view what) {
  KILN_USER_CHECK(grad.sizes() == expected, what, ": expected grad_output of size ", shape_str(expected), ", but got ",
                  shape_str(grad.sizes()));
}

// max_poolNd_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices)
void add_max_pool_backward(OpRegistry& r, std::string_view schema, int64_t dims, std::string op) {
  auto check = [dims, op](const OpArgs& args, Planes& p) {
    parse_pool(args, 2, dims, true, args.tensor(1), op, p);
    Shape out = with_spatial(args.tensor(1), dims, p.out);
    check_grad_shape(args.tensor(0), out, op);
    KILN_USER_CHECK(args.tensor(7).sizes() == out, op, ": expected indices of size ", shape_str(out), ", but got ",
                    shape_str(args.tensor(7).sizes()));
    KILN_USER_CHECK(is_floating(args.tensor(0).dtype()), "\"", op, "\" not implemented for '",
                    dtype_name(args.tensor(0).dtype()), "'");
  };
  OpFn meta = [check](const OpArgs& args) -> ValueList {
    Planes p;
    check(args, p);
    return one(Tensor::meta(args.tensor(1).sizes(), args.tensor(0).dtype()));
  };
  ComputeFn compute = [check](const OpArgs& args, const std::vector<Tensor>& outs) {
    Planes p;
    check(args, p);
    scatter_by_indices(args.tensor(0), args.tensor(7), p, outs[0]);
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// ---------------------------------------------------------------- average pooling

// Average-pool window of output o along one dim; `span` counts padding cells.
struct AvgWindow {
  int64_t start, end, span;
};

AvgWindow avg_window(int64_t o, const PoolSpec& s, const Planes& p, int d) {
  int64_t start = o * s.stride[d] - s.pad[d];
  int64_t end = std::min(start + s.kernel[d], p.in[d] + s.pad[d]);
  int64_t span = end - start;
  return {std::max<int64_t>(start, 0), std::min(end, p.in[d]), span};
}

struct AvgOptions {
  bool count_include_pad = true;
  std::optional<int64_t> divisor;
};

int64_t avg_divisor(const AvgWindow (&w)[3], const AvgOptions& o) {
  if (o.divisor) return *o.divisor;
  if (o.count_include_pad) return w[0].span * w[1].span * w[2].span;
  return (w[0].end - w[0].start) * (w[1].end - w[1].start) * (w[2].end - w[2].start);
}

template <class T>
void avg_pool_kernel(const T* in, T* out, const Planes& p, const PoolSpec& s, const AvgOptions& opt) {
  using Acc = opmath_t<T>;
  int64_t H = p.in[1], W = p.in[2], window = s.kernel[0] * s.kernel[1] * s.kernel[2];
  for_rows(p, p.out[2] * window, [&](int64_t c, int64_t od, int64_t oh) {
    const T* plane = in + c * p.in_numel();
    T* orow = out + (c * p.out[0] + od) * p.out[1] * p.out[2] + oh * p.out[2];
    for (int64_t ow = 0; ow < p.out[2]; ++ow) {
      AvgWindow w[3] = {avg_window(od, s, p, 0), avg_window(oh, s, p, 1), avg_window(ow, s, p, 2)};
      if (w[0].start >= w[0].end || w[1].start >= w[1].end || w[2].start >= w[2].end) {
        orow[ow] = T(0);
        continue;
      }
      Acc sum = 0;
      for (int64_t d = w[0].start; d < w[0].end; ++d)
        for (int64_t h = w[1].start; h < w[1].end; ++h)
          for (int64_t x = w[2].start; x < w[2].end; ++x) sum += Acc(plane[(d * H + h) * W + x]);
      orow[ow] = T(sum / Acc(avg_divisor(w, opt)));
    }
  });
}

template <class T>
void avg_pool_backward_kernel(const T* go, T* gi, const Planes& p, const PoolSpec& s, const AvgOptions& opt) {
  int64_t H = p.in[1], W = p.in[2];
  for_planes(p, p.out_numel() * s.kernel[0] * s.kernel[1] * s.kernel[2], [&](int64_t c) {
    T* plane = gi + c * p.in_numel();
    const T* g = go + c * p.out_numel();
    for (int64_t od = 0; od < p.out[0]; ++od)
      for (int64_t oh = 0; oh < p.out[1]; ++oh)
        for (int64_t ow = 0; ow < p.out[2]; ++ow) {
          AvgWindow w[3] = {avg_window(od, s, p, 0), avg_window(oh, s, p, 1), avg_window(ow, s, p, 2)};
          T delta = g[(od * p.out[1] + oh) * p.out[2] + ow] / T(avg_divisor(w, opt));
          for (int64_t d = w[0].start; d < w[0].end; ++d)
            for (int64_t h = w[1].start; h < w[1].end; ++h)
              for (int64_t x = w[2].start; x < w[2].end; ++x) plane[(d * H + h) * W + x] += delta;
        }
  });
}

void check_avg_dtype(DType t, std::string_view op, bool allow_int64) {
  KILN_USER_CHECK(is_floating(t) || (allow_int64 && t == DType::Int64), "\"", op, "\" not implemented for '",
                  dtype_name(t), "'");
}

// avg_poolNd(self, kernel_size, stride, padding, ceil_mode, count_include_pad[, divisor_override]),
// arguments starting at `first` (2 for the backward, after grad_output).
AvgOptions avg_options(const OpArgs& args, size_t first, bool has_divisor) {
  AvgOptions o;
  o.count_include_pad = args.boolean(first + 4);
  if (has_divisor) o.divisor = args.opt_integer(first + 5);
  KILN_USER_CHECK(!o.divisor || *o.divisor != 0, "divisor must be not zero");
  return o;
}

// 3-D average pooling also insists the kernel fits in the (unpadded) input.
void check_avg3d_input(const Planes& p, const PoolSpec& s, int64_t dims) {
  if (dims != 3) return;
  KILN_USER_CHECK(p.in[0] >= s.kernel[0] && p.in[1] >= s.kernel[1] && p.in[2] >= s.kernel[2], "input image (T: ",
                  p.in[0], " H: ", p.in[1], " W: ", p.in[2], ") smaller than kernel size (kT: ", s.kernel[0],
                  " kH: ", s.kernel[1], " kW: ", s.kernel[2], ")");
}

void add_avg_pool(OpRegistry& r, std::string_view schema, int64_t dims, std::string op, bool has_divisor) {
  OpFn meta = [dims, op, has_divisor](const OpArgs& args) -> ValueList {
    Planes p;
    PoolSpec s = parse_pool(args, 1, dims, false, args.tensor(0), op, p);
    avg_options(args, 1, has_divisor);
    check_avg3d_input(p, s, dims);
    check_avg_dtype(args.tensor(0).dtype(), op, true);
    return one(Tensor::meta(with_spatial(args.tensor(0), dims, p.out), args.tensor(0).dtype()));
  };
  ComputeFn compute = [dims, op, has_divisor](const OpArgs& args, const std::vector<Tensor>& outs) {
    Planes p;
    PoolSpec s = parse_pool(args, 1, dims, false, args.tensor(0), op, p);
    AvgOptions opt = avg_options(args, 1, has_divisor);
    if (outs[0].numel() == 0) return;
    Tensor x = args.tensor(0).contiguous();
    dispatch_all(x.dtype(), [&]<class T>() {
      if constexpr (is_floating_v<T> || std::is_same_v<T, int64_t>)
        avg_pool_kernel<T>(x.data<T>(), outs[0].data<T>(), p, s, opt);
    });
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// avg_poolNd_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
void add_avg_pool_backward(OpRegistry& r, std::string_view schema, int64_t dims, std::string op) {
  auto check = [dims, op](const OpArgs& args, Planes& p) {
    PoolSpec s = parse_pool(args, 2, dims, false, args.tensor(1), op, p);
    check_grad_shape(args.tensor(0), with_spatial(args.tensor(1), dims, p.out), op);
    check_avg_dtype(args.tensor(0).dtype(), op, true);
    return s;
  };
  OpFn meta = [check](const OpArgs& args) -> ValueList {
    Planes p;
    check(args, p);
    avg_options(args, 2, true);
    return one(Tensor::meta(args.tensor(1).sizes(), args.tensor(0).dtype()));
  };
  ComputeFn compute = [check, op](const OpArgs& args, const std::vector<Tensor>& outs) {
    Planes p;
    PoolSpec s = check(args, p);
    AvgOptions opt = avg_options(args, 2, true);
    Tensor go = upcast(args.tensor(0)).contiguous();
    Tensor acc = Tensor::zeros(outs[0].sizes(), go.dtype());
    dispatch_compute(go.dtype(), op, [&]<class T>() {
      if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, int64_t>)
        avg_pool_backward_kernel<T>(go.data<T>(), acc.data<T>(), p, s, opt);
    });
    outs[0].copy_(acc);
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// ---------------------------------------------------------------- adaptive pooling

// PyTorch's start_index/end_index: floor(o * in / out) and ceil((o + 1) * in / out).
int64_t adaptive_start(int64_t o, int64_t out, int64_t in) { return (o / out) * in + ((o % out) * in) / out; }
int64_t adaptive_end(int64_t o, int64_t out, int64_t in) { return 1 + ((o + 1) * in - 1) / out; }

Window adaptive_window(int64_t o, const Planes& p, int d) {
  return {adaptive_start(o, p.out[d], p.in[d]), adaptive_end(o, p.out[d], p.in[d])};
}

Planes parse_adaptive(const Tensor& input, const std::vector<int64_t>& output_size, int64_t dims,
                      std::string_view op) {
  KILN_USER_CHECK(int64_t(output_size.size()) == dims, op, ": output_size must be ", dims);
  for (int64_t v : output_size)
    KILN_USER_CHECK(v >= 0, op, ": elements of output_size must be greater than or equal to 0 but received ",
                    shape_str(output_size));
  KILN_USER_CHECK(input.dim() == dims + 1 || input.dim() == dims + 2, op, "(): Expected ", dims + 1, "D or ",
                  dims + 2, "D tensor, but got ", shape_str(input.sizes()));
  for (int64_t d = input.dim() == dims + 2 ? 1 : 0; d < input.dim(); ++d)
    KILN_USER_CHECK(input.size(d) > 0, op, "(): Expected input to have non-zero size for non-batch dimensions, but "
                    "input has sizes ", shape_str(input.sizes()), " with dimension ", d, " being empty");
  KILN_USER_CHECK(is_floating(input.dtype()), "\"", op, "\" not implemented for '", dtype_name(input.dtype()), "'");
  Planes p = planes_of(input, dims);
  for (int64_t d = 0; d < dims; ++d) p.out[kMaxSpatial - dims + d] = output_size[d];
  return p;
}

template <class T>
void adaptive_avg_kernel(const T* in, T* out, const Planes& p) {
  using Acc = opmath_t<T>;
  int64_t H = p.in[1], W = p.in[2];
  int64_t window = (p.in[0] / std::max<int64_t>(p.out[0], 1) + 1) * (p.in[1] / std::max<int64_t>(p.out[1], 1) + 1) *
                   (p.in[2] / std::max<int64_t>(p.out[2], 1) + 1);
  for_rows(p, p.out[2] * window, [&](int64_t c, int64_t od, int64_t oh) {
    const T* plane = in + c * p.in_numel();
    T* orow = out + (c * p.out[0] + od) * p.out[1] * p.out[2] + oh * p.out[2];
    Window wd = adaptive_window(od, p, 0), wh = adaptive_window(oh, p, 1);
    for (int64_t ow = 0; ow < p.out[2]; ++ow) {
      Window ww = adaptive_window(ow, p, 2);
      Acc sum = 0;
      for (int64_t d = wd.start; d < wd.end; ++d)
        for (int64_t h = wh.start; h < wh.end; ++h)
          for (int64_t w = ww.start; w < ww.end; ++w) sum += Acc(plane[(d * H + h) * W + w]);
      // Divided one extent at a time, as PyTorch's kernel does (the rounding
      // differs from one division by the product); unused dims divide by 1, exactly.
      orow[ow] = T(sum / Acc(wd.end - wd.start) / Acc(wh.end - wh.start) / Acc(ww.end - ww.start));
    }
  });
}

template <class T>
void adaptive_avg_backward_kernel(const T* go, T* gi, const Planes& p) {
  int64_t H = p.in[1], W = p.in[2];
  for_planes(p, p.in_numel(), [&](int64_t c) {
    T* plane = gi + c * p.in_numel();
    const T* g = go + c * p.out_numel();
    for (int64_t od = 0; od < p.out[0]; ++od) {
      Window wd = adaptive_window(od, p, 0);
      for (int64_t oh = 0; oh < p.out[1]; ++oh) {
        Window wh = adaptive_window(oh, p, 1);
        for (int64_t ow = 0; ow < p.out[2]; ++ow) {
          Window ww = adaptive_window(ow, p, 2);
          T delta = g[(od * p.out[1] + oh) * p.out[2] + ow] / T(wd.end - wd.start) / T(wh.end - wh.start) /
                    T(ww.end - ww.start);
          for (int64_t d = wd.start; d < wd.end; ++d)
            for (int64_t h = wh.start; h < wh.end; ++h)
              for (int64_t w = ww.start; w < ww.end; ++w) plane[(d * H + h) * W + w] += delta;
        }
      }
    }
  });
}

template <class T>
void adaptive_max_kernel(const T* in, T* out, int64_t* ind, const Planes& p) {
  using Acc = opmath_t<T>;
  int64_t H = p.in[1], W = p.in[2];
  for_rows(p, p.out[2] * 16, [&](int64_t c, int64_t od, int64_t oh) {
    const T* plane = in + c * p.in_numel();
    int64_t o = (c * p.out[0] + od) * p.out[1] * p.out[2] + oh * p.out[2];
    Window wd = adaptive_window(od, p, 0), wh = adaptive_window(oh, p, 1);
    for (int64_t ow = 0; ow < p.out[2]; ++ow) {
      Window ww = adaptive_window(ow, p, 2);
      Acc best = -std::numeric_limits<Acc>::infinity();
      int64_t best_i = (wd.start * H + wh.start) * W + ww.start;
      for (int64_t d = wd.start; d < wd.end; ++d)
        for (int64_t h = wh.start; h < wh.end; ++h)
          for (int64_t w = ww.start; w < ww.end; ++w) {
            int64_t i = (d * H + h) * W + w;
            Acc v = Acc(plane[i]);
            bool take = (v > best) | std::isnan(v);
            best = take ? v : best;
            best_i = take ? i : best_i;
          }
      out[o + ow] = T(best);
      ind[o + ow] = best_i;
    }
  });
}

// _adaptive_avg_poolNd(self, output_size) and the adaptive_avg_poolNd composites.
void add_adaptive_avg(OpRegistry& r, std::string_view schema, int64_t dims, std::string op) {
  OpFn meta = [dims, op](const OpArgs& args) -> ValueList {
    Planes p = parse_adaptive(args.tensor(0), args.ints(1), dims, op);
    return one(Tensor::meta(with_spatial(args.tensor(0), dims, p.out), args.tensor(0).dtype()));
  };
  ComputeFn compute = [dims, op](const OpArgs& args, const std::vector<Tensor>& outs) {
    Planes p = parse_adaptive(args.tensor(0), args.ints(1), dims, op);
    if (outs[0].numel() == 0) return;
    Tensor x = args.tensor(0).contiguous();
    dispatch_all(x.dtype(), [&]<class T>() {
      if constexpr (is_floating_v<T>) adaptive_avg_kernel<T>(x.data<T>(), outs[0].data<T>(), p);
    });
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// The output size of a backward is grad_output's spatial size.
Planes adaptive_backward_planes(const OpArgs& args, int64_t dims, std::string_view op) {
  const Tensor &go = args.tensor(0), &self = args.tensor(1);
  KILN_USER_CHECK(go.dim() == self.dim() && go.dim() >= dims + 1, op, ": grad_output of size ",
                  shape_str(go.sizes()), " does not match input of size ", shape_str(self.sizes()));
  std::vector<int64_t> out(go.sizes().end() - dims, go.sizes().end());
  Planes p = parse_adaptive(self, out, dims, op);
  check_grad_shape(go, with_spatial(self, dims, p.out), op);
  return p;
}

// _adaptive_avg_poolNd_backward(grad_output, self)
void add_adaptive_avg_backward(OpRegistry& r, std::string_view schema, int64_t dims, std::string op) {
  OpFn meta = [dims, op](const OpArgs& args) -> ValueList {
    adaptive_backward_planes(args, dims, op);
    return one(Tensor::meta(args.tensor(1).sizes(), args.tensor(0).dtype()));
  };
  ComputeFn compute = [dims, op](const OpArgs& args, const std::vector<Tensor>& outs) {
    Planes p = adaptive_backward_planes(args, dims, op);
    Tensor go = upcast(args.tensor(0)).contiguous();
    Tensor acc = Tensor::zeros(outs[0].sizes(), go.dtype());
    dispatch_float(go.dtype(), op, [&]<class T>() { adaptive_avg_backward_kernel<T>(go.data<T>(), acc.data<T>(), p); });
    outs[0].copy_(acc);
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// adaptive_max_poolNd(self, output_size) -> (values, indices)
void add_adaptive_max(OpRegistry& r, std::string_view schema, int64_t dims, std::string op) {
  OpFn meta = [dims, op](const OpArgs& args) -> ValueList {
    Planes p = parse_adaptive(args.tensor(0), args.ints(1), dims, op);
    return max_pool_outputs(args.tensor(0), dims, p);
  };
  ComputeFn compute = [dims, op](const OpArgs& args, const std::vector<Tensor>& outs) {
    Planes p = parse_adaptive(args.tensor(0), args.ints(1), dims, op);
    if (outs[0].numel() == 0) return;
    Tensor x = args.tensor(0).contiguous();
    dispatch_all(x.dtype(), [&]<class T>() {
      if constexpr (is_floating_v<T>)
        adaptive_max_kernel<T>(x.data<T>(), outs[0].data<T>(), outs[1].data<int64_t>(), p);
    });
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// adaptive_max_poolNd_backward(grad_output, self, indices)
void add_adaptive_max_backward(OpRegistry& r, std::string_view schema, int64_t dims, std::string op) {
  OpFn meta = [dims, op](const OpArgs& args) -> ValueList {
    adaptive_backward_planes(args, dims, op);
    return one(Tensor::meta(args.tensor(1).sizes(), args.tensor(0).dtype()));
  };
  ComputeFn compute = [dims, op](const OpArgs& args, const std::vector<Tensor>& outs) {
    Planes p = adaptive_backward_planes(args, dims, op);
    KILN_USER_CHECK(args.tensor(2).sizes() == args.tensor(0).sizes(), op, ": expected indices of size ",
                    shape_str(args.tensor(0).sizes()), ", but got ", shape_str(args.tensor(2).sizes()));
    scatter_by_indices(args.tensor(0), args.tensor(2), p, outs[0]);
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

}  // namespace

void register_pooling_ops(OpRegistry& r) {
  add_max_pool(r,
               "aten::max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, "
               "int[1] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
               1, "max_pool1d");
  add_max_pool(r,
               "aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
               "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
               2, "max_pool2d");
  add_max_pool(r,
               "aten::max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
               "int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
               3, "max_pool3d");
  add_max_pool_values(r,
                      "aten::max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, "
                      "int[1] dilation=1, bool ceil_mode=False) -> Tensor",
                      1, "max_pool1d");
  add_max_pool_values(r,
                      "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
                      "int[2] dilation=1, bool ceil_mode=False) -> Tensor",
                      2, "max_pool2d");
  add_max_pool_values(r,
                      "aten::max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
                      "int[3] dilation=1, bool ceil_mode=False) -> Tensor",
                      3, "max_pool3d");
  add_max_pool_backward(r,
                        "aten::max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "
                        "int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",
                        2, "max_pool2d_with_indices_backward");
  add_max_pool_backward(r,
                        "aten::max_pool3d_with_indices_backward(Tensor grad_output, Tensor self, int[3] kernel_size, "
                        "int[3] stride, int[3] padding, int[3] dilation, bool ceil_mode, Tensor indices) -> Tensor",
                        3, "max_pool3d_with_indices_backward");

  add_avg_pool(r,
               "aten::avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, "
               "bool ceil_mode=False, bool count_include_pad=True) -> Tensor",
               1, "avg_pool1d", false);
  add_avg_pool(r,
               "aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
               "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
               2, "avg_pool2d", true);
  add_avg_pool(r,
               "aten::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
               "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
               3, "avg_pool3d", true);
  add_avg_pool_backward(r,
                        "aten::avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
                        "int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor",
                        2, "avg_pool2d_backward");
  add_avg_pool_backward(r,
                        "aten::avg_pool3d_backward(Tensor grad_output, Tensor self, int[3] kernel_size, int[3] stride, "
                        "int[3] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor",
                        3, "avg_pool3d_backward");

  add_adaptive_avg(r, "aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", 2,
                   "adaptive_avg_pool2d");
  add_adaptive_avg(r, "aten::_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", 3,
                   "adaptive_avg_pool3d");
  add_adaptive_avg(r, "aten::adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor", 1, "adaptive_avg_pool1d");
  add_adaptive_avg(r, "aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", 2,
                   "adaptive_avg_pool2d");
  add_adaptive_avg(r, "aten::adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", 3,
                   "adaptive_avg_pool3d");
  add_adaptive_avg_backward(r, "aten::_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor", 2,
                            "adaptive_avg_pool2d_backward");
  add_adaptive_avg_backward(r, "aten::_adaptive_avg_pool3d_backward(Tensor grad_output, Tensor self) -> Tensor", 3,
                            "adaptive_avg_pool3d_backward");
  add_adaptive_max(r, "aten::adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)", 1,
                   "adaptive_max_pool1d");
  add_adaptive_max(r, "aten::adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)", 2,
                   "adaptive_max_pool2d");
  add_adaptive_max(r, "aten::adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)", 3,
                   "adaptive_max_pool3d");
  add_adaptive_max_backward(r,
                            "aten::adaptive_max_pool2d_backward(Tensor grad_output, Tensor self, Tensor indices) -> Tensor",
                            2, "adaptive_max_pool2d_backward");
  add_adaptive_max_backward(r,
                            "aten::adaptive_max_pool3d_backward(Tensor grad_output, Tensor self, Tensor indices) -> Tensor",
                            3, "adaptive_max_pool3d_backward");
}

}  // namespace kiln
