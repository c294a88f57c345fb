// Prims that Inductor's decompositions put into the graphs it dumps
// (torch/_inductor/inductor_prims.py), so aot and post-grad graphs of models
// with max pooling run on the CPU kernels.
//
// Inductor lowers max_pool{2,3}d_with_indices to a pair of prims: the pooled
// values with, per output, the argmax's position inside its kernel window as a
// small int8 ("offset", flat over kernel_size: kh * kW + kw), and a second
// prim that turns offsets back into max_pool's indices (flat over the input
// plane: h * W + w). With p = o * stride - padding the window's first input
// position along a dim, input position = p + kernel position * dilation.
#include <functional>
#include <numeric>

#include "core/ops/kernel_util.h"

namespace kiln {
namespace {

constexpr std::string_view kWithOffsets = "prims::_low_memory_max_pool_with_offsets";
constexpr std::string_view kToIndices = "prims::_low_memory_max_pool_offsets_to_indices";

// Python's // on int64: rounds toward negative infinity.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// kernel_size and the per-dim lists that must match it. The prims take full
// lists (Inductor expands `stride=2` before calling them).
struct Window {
  std::vector<int64_t> kernel, stride, padding, dilation;
  size_t dims() const { return kernel.size(); }
};

Window read_window(const OpArgs& args, size_t kernel_i, size_t stride_i, size_t padding_i, size_t dilation_i,
                   std::string_view op) {
  Window w{args.ints(kernel_i), args.ints(stride_i), args.ints(padding_i), args.ints(dilation_i)};
  KILN_USER_CHECK(w.dims() == 2 || w.dims() == 3, op, ": kernel_size must have 2 or 3 entries (2-D or 3-D pooling), got ",
                  shape_str(w.kernel));
  auto same_length = [&](const std::vector<int64_t>& v, std::string_view name) {
    KILN_USER_CHECK(v.size() == w.dims(), op, ": ", name, " must have ", w.dims(), " entries like kernel_size ",
                    shape_str(w.kernel), ", got ", shape_str(v));
  };
  same_length(w.stride, "stride");
  same_length(w.padding, "padding");
  same_length(w.dilation, "dilation");
  for (size_t d = 0; d < w.dims(); ++d) {
    KILN_USER_CHECK(w.kernel[d] > 0, op, ": kernel_size must be greater than zero, got ", shape_str(w.kernel));
    KILN_USER_CHECK(w.stride[d] > 0, op, ": stride must be greater than zero, got ", shape_str(w.stride));
    KILN_USER_CHECK(w.dilation[d] > 0, op, ": dilation must be greater than zero, got ", shape_str(w.dilation));
  }
  return w;
}

int64_t window_numel(const Window& w) {
  return std::accumulate(w.kernel.begin(), w.kernel.end(), int64_t(1), std::multiplies<>());
}

// ---------------------------------------------------------------- _low_memory_max_pool_with_offsets

// (self, kernel_size, stride, padding, dilation, ceil_mode) -> (values, int8 offsets):
// max_pool{2,3}d_with_indices with each index rewritten as an offset.
ValueList max_pool_indices(const OpArgs& args, const Window& w) {
  std::string pool = w.dims() == 2 ? "aten::max_pool2d_with_indices" : "aten::max_pool3d_with_indices";
  KILN_USER_CHECK(window_numel(w) <= 127, kWithOffsets, ": a kernel window of ", window_numel(w),
                  " elements has offsets that do not fit int8 (Inductor keeps max_pool_with_indices for it)");
  return invoke(pool, {args[0], Value::int_list(w.kernel), Value::int_list(w.stride), Value::int_list(w.padding),
                       Value::int_list(w.dilation), args[5]});
}

ValueList with_offsets_meta(const OpArgs& args) {
  Window w = read_window(args, 1, 2, 3, 4, kWithOffsets);
  ValueList r = max_pool_indices(args, w);
  const Tensor& values = r[0].to_tensor();
  return {r[0], Value(Tensor::meta(values.sizes(), DType::Int8))};
}

ValueList with_offsets_cpu(const OpArgs& args) {
  if (any_meta(args)) return with_offsets_meta(args);
  Window w = read_window(args, 1, 2, 3, 4, kWithOffsets);
  ValueList r = max_pool_indices(args, w);
  Tensor indices = r[1].to_tensor().contiguous();
  const size_t dims = w.dims();
  const Shape& out_sizes = indices.sizes();
  const Shape& in_sizes = args.tensor(0).sizes();
  // Per spatial dim (innermost last): output size, input size.
  std::vector<int64_t> out_dim(dims), in_dim(dims);
  for (size_t d = 0; d < dims; ++d) {
    out_dim[d] = out_sizes[out_sizes.size() - dims + d];
    in_dim[d] = in_sizes[in_sizes.size() - dims + d];
  }
  int64_t out_plane = std::accumulate(out_dim.begin(), out_dim.end(), int64_t(1), std::multiplies<>());
  Tensor offsets = Tensor::empty(out_sizes, DType::Int8);
  const int64_t* ind = indices.data<int64_t>();
  int8_t* off = offsets.data<int8_t>();
  parallel_for(0, indices.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> out_pos(dims), in_pos(dims);
    for (int64_t i = lo; i < hi; ++i) {
      for (int64_t rest = i % out_plane, d = int64_t(dims) - 1; d >= 0; --d) {
        out_pos[size_t(d)] = rest % out_dim[size_t(d)];
        rest /= out_dim[size_t(d)];
      }
      for (int64_t rest = ind[i], d = int64_t(dims) - 1; d >= 0; --d) {
        in_pos[size_t(d)] = rest % in_dim[size_t(d)];
        rest /= in_dim[size_t(d)];
      }
      int64_t flat = 0;
      for (size_t d = 0; d < dims; ++d) {
        int64_t start = out_pos[d] * w.stride[d] - w.padding[d];
        flat = flat * w.kernel[d] + floor_div(in_pos[d] - start, w.dilation[d]);
      }
      off[i] = int8_t(flat);
    }
  });
  return {r[0], Value(offsets)};
}

// ---------------------------------------------------------------- _low_memory_max_pool_offsets_to_indices

// (offsets, kernel_size, input_size, stride, padding, dilation) -> int64 indices.
// input_size is the spatial size of the pooled input; the last len(kernel_size)
// dims of offsets are the output positions.
struct ToIndices {
  Window w;
  std::vector<int64_t> input_size;
};

ToIndices to_indices_args(const OpArgs& args) {
  ToIndices t{read_window(args, 1, 3, 4, 5, kToIndices), args.ints(2)};
  const Tensor& offsets = args.tensor(0);
  KILN_USER_CHECK(is_integral(offsets.dtype(), false), kToIndices, ": expected integer offsets, got a ",
                  dtype_name(offsets.dtype()), " tensor");
  KILN_USER_CHECK(t.input_size.size() == t.w.dims(), kToIndices, ": input_size must have ", t.w.dims(),
                  " entries like kernel_size ", shape_str(t.w.kernel), ", got ", shape_str(t.input_size));
  KILN_USER_CHECK(offsets.dim() >= int64_t(t.w.dims()), kToIndices, ": offsets of size ", shape_str(offsets.sizes()),
                  " have fewer dims than the ", t.w.dims(), " pooled dims");
  return t;
}

ValueList to_indices_meta(const OpArgs& args) {
  to_indices_args(args);
  return one(Tensor::meta(args.tensor(0).sizes(), DType::Int64));
}

void to_indices_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  ToIndices t = to_indices_args(args);
  const Window& w = t.w;
  const size_t dims = w.dims();
  Tensor offsets = args.tensor(0).to(DType::Int64).contiguous();
  const Shape& sizes = offsets.sizes();
  std::vector<int64_t> out_dim(dims);
  for (size_t d = 0; d < dims; ++d) out_dim[d] = sizes[sizes.size() - dims + d];
  int64_t out_plane = std::accumulate(out_dim.begin(), out_dim.end(), int64_t(1), std::multiplies<>());
  const int64_t* off = offsets.data<int64_t>();
  int64_t* ind = outs[0].data<int64_t>();
  parallel_for(0, offsets.numel(), kParallelGrain, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> out_pos(dims), kernel_pos(dims);
    for (int64_t i = lo; i < hi; ++i) {
      for (int64_t rest = i % out_plane, d = int64_t(dims) - 1; d >= 0; --d) {
        out_pos[size_t(d)] = rest % out_dim[size_t(d)];
        rest /= out_dim[size_t(d)];
      }
      // Outer kernel dims by floor division, as PyTorch's reference does, so a
      // negative offset maps where it does there.
      int64_t rest = off[i];
      for (size_t d = 0; d + 1 < dims; ++d) {
        int64_t inner = std::accumulate(w.kernel.begin() + int64_t(d) + 1, w.kernel.end(), int64_t(1),
                                        std::multiplies<>());
        kernel_pos[d] = floor_div(rest, inner);
        rest -= kernel_pos[d] * inner;
      }
      kernel_pos[dims - 1] = rest;
      int64_t flat = 0;
      for (size_t d = 0; d < dims; ++d)
        flat = flat * t.input_size[d] + out_pos[d] * w.stride[d] - w.padding[d] + kernel_pos[d] * w.dilation[d];
      ind[i] = flat;
    }
  });
}

}  // namespace

void register_inductor_prims_ops(OpRegistry& r) {
  r.add("prims::_low_memory_max_pool_with_offsets(Tensor self, SymInt[] kernel_size, SymInt[] stride, "
        "SymInt[] padding, SymInt[] dilation, bool ceil_mode) -> (Tensor, Tensor)",
        with_offsets_meta, with_offsets_cpu);
  // The 2D-only name of PyTorch 2.5 to 2.8, with the same arguments and the
  // same offsets (the row-major position within the kernel window).
  r.add("prims::_low_memory_max_pool2d_with_offsets(Tensor self, SymInt[2] kernel_size, SymInt[2] stride, "
        "SymInt[2] padding, SymInt[2] dilation, bool ceil_mode) -> (Tensor, Tensor)",
        with_offsets_meta, with_offsets_cpu);
  add_op_with_outputs(r,
                      "prims::_low_memory_max_pool_offsets_to_indices(Tensor self, SymInt[] kernel_size, "
                      "SymInt[] input_size, SymInt[] stride, SymInt[] padding, SymInt[] dilation) -> Tensor",
                      to_indices_meta, to_indices_compute);
}

}  // namespace kiln
