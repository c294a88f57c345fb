// Padding: constant_pad_nd (any number of dims, negative pads crop),
// reflection/replication padding for 1-D to 3-D with their backwards, and the
// `pad` composite. Pad lists name (left, right) pairs from the last dim backwards.
#include <algorithm>
#include <type_traits>

#include "core/ops/kernel_util.h"

namespace kiln {
namespace {

// ---------------------------------------------------------------- constant_pad_nd

Shape constant_pad_shape(const Tensor& self, const std::vector<int64_t>& pad) {
  KILN_USER_CHECK(pad.size() % 2 == 0, "Length of pad must be even but instead it equals ", pad.size());
  int64_t nd = self.dim(), np = int64_t(pad.size() / 2);
  KILN_USER_CHECK(nd >= np, "Length of pad should be no more than twice the number of dimensions of the input. "
                  "Pad length is ", pad.size(), " while the input has ", nd, " dimensions.");
  Shape out = self.sizes();
  for (int64_t i = 0; i < np; ++i) {
    int64_t d = nd - 1 - i;
    int64_t l = pad[size_t(2 * i)], r = pad[size_t(2 * i + 1)];
    out[size_t(d)] = self.size(d) + l + r;
    KILN_USER_CHECK(out[size_t(d)] >= 0, "The input size ", self.size(d), ", plus negative padding ", l, " and ", r,
                    " resulted in a negative output size, which is invalid. Check dimension ", d, " of your input.");
  }
  return out;
}

ValueList constant_pad_meta(const OpArgs& args) {
  return one(Tensor::meta(constant_pad_shape(args.tensor(0), args.ints(1)), args.tensor(0).dtype()));
}

// Fill with the value, then copy the part of the input that survives cropping
// into the part of the output that is not padding.
void constant_pad_into(const Tensor& self, const std::vector<int64_t>& pad, const Scalar& value, const Tensor& out) {
  out.fill_(value);
  Tensor src = self, dst = out;
  int64_t nd = self.dim();
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    int64_t d = nd - 1 - int64_t(i);
    int64_t l = pad[2 * i], r = pad[2 * i + 1];
    int64_t keep = self.size(d) + std::min<int64_t>(l, 0) + std::min<int64_t>(r, 0);
    if (keep <= 0) return;  // everything cropped: the output is all padding
    src = src.narrow(d, std::max<int64_t>(-l, 0), keep);
    dst = dst.narrow(d, std::max<int64_t>(l, 0), keep);
  }
  if (dst.numel() > 0) dst.copy_(src);
}

void constant_pad_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  constant_pad_into(args.tensor(0), args.ints(1), args.scalar(2), outs[0]);
}

// ---------------------------------------------------------------- reflection / replication

enum class PadMode { Reflect, Replicate, Circular };

const char* mode_name(PadMode m) {
  return m == PadMode::Reflect ? "reflection" : m == PadMode::Replicate ? "replication" : "circular";
}

// Source index of output position o along a dim of size n padded by (l, r).
int64_t source_index(int64_t o, int64_t n, int64_t l, PadMode m) {
  int64_t i = o - l;
  switch (m) {
    case PadMode::Reflect:
      if (i < 0) i = -i;
      if (i >= n) i = 2 * (n - 1) - i;
      return i;
    case PadMode::Replicate: return std::clamp<int64_t>(i, 0, n - 1);
    case PadMode::Circular: return ((i % n) + n) % n;
  }
  return i;
}

// The padded (last `dims`) dims: per dim a table of source indices.
struct PadPlan {
  int64_t dims = 0, planes = 1, in_plane = 1, out_plane = 1;
  Shape out_sizes;
  std::vector<std::vector<int64_t>> src;  // [dim][out index] -> in index
  std::vector<int64_t> in_sizes, out_spatial;
};

PadPlan plan_pad(const Tensor& self, const std::vector<int64_t>& pad, int64_t dims, PadMode m, std::string_view op) {
  KILN_USER_CHECK(int64_t(pad.size()) == 2 * dims, op, ": padding size is expected to be ", 2 * dims,
                  ", but got: ", pad.size());
  bool rank_ok = self.dim() == dims + 1 || self.dim() == dims + 2;
  for (int64_t d = self.dim() - dims - (self.dim() == dims + 2 ? 1 : 0); rank_ok && d < self.dim(); ++d)
    rank_ok = self.size(d) != 0;
  KILN_USER_CHECK(rank_ok, op, ": Expected ", dims + 1, "D or ", dims + 2,
                  "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ",
                  shape_str(self.sizes()));
  PadPlan p;
  p.dims = dims;
  p.out_sizes = self.sizes();
  for (int64_t k = 0; k < dims; ++k) {
    int64_t d = self.dim() - dims + k;
    int64_t n = self.size(d);
    int64_t l = pad[size_t(2 * (dims - 1 - k))], r = pad[size_t(2 * (dims - 1 - k) + 1)];
    if (m == PadMode::Reflect)
      KILN_USER_CHECK(l < n && r < n, "Argument #4: Padding size should be less than the corresponding input "
                      "dimension, but got: padding (", l, ", ", r, ") at dimension ", d, " of input ",
                      shape_str(self.sizes()));
    if (m == PadMode::Circular)
      KILN_USER_CHECK(l <= n && r <= n, "Padding value causes wrapping around more than once.");
    int64_t o = n + l + r;
    KILN_USER_CHECK(o >= 1, op, ": input ", shape_str(self.sizes()), " is too small. Calculated output size at "
                    "dimension ", d, ": ", o);
    p.out_sizes[size_t(d)] = o;
    std::vector<int64_t> tab(static_cast<size_t>(o));
    for (int64_t j = 0; j < o; ++j) tab[size_t(j)] = source_index(j, n, l, m);
    p.src.push_back(std::move(tab));
    p.in_sizes.push_back(n);
    p.out_spatial.push_back(o);
    p.in_plane *= n;
    p.out_plane *= o;
  }
  p.planes = shape_numel(std::span(self.sizes()).first(size_t(self.dim() - dims)));
  return p;
}

// Offset in the input plane of output plane position `flat`.
int64_t source_offset(const PadPlan& p, int64_t flat) {
  int64_t off = 0, in_stride = 1;
  for (int64_t k = p.dims - 1; k >= 0; --k) {
    int64_t o = flat % p.out_spatial[size_t(k)];
    flat /= p.out_spatial[size_t(k)];
    off += p.src[size_t(k)][size_t(o)] * in_stride;
    in_stride *= p.in_sizes[size_t(k)];
  }
  return off;
}

template <class T>
void pad_gather(const T* in, T* out, const PadPlan& p) {
  std::vector<int64_t> offs(static_cast<size_t>(p.out_plane));
  for (int64_t j = 0; j < p.out_plane; ++j) offs[size_t(j)] = source_offset(p, j);
  parallel_for(0, p.planes, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(p.out_plane, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t c = lo; c < hi; ++c) {
                   const T* src = in + c * p.in_plane;
                   T* dst = out + c * p.out_plane;
                   for (int64_t j = 0; j < p.out_plane; ++j) dst[j] = src[offs[size_t(j)]];
                 }
               });
}

template <class T>
void pad_scatter(const T* grad_out, T* grad_in, const PadPlan& p) {
  std::vector<int64_t> offs(static_cast<size_t>(p.out_plane));
  for (int64_t j = 0; j < p.out_plane; ++j) offs[size_t(j)] = source_offset(p, j);
  parallel_for(0, p.planes, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(p.out_plane, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t c = lo; c < hi; ++c) {
                   const T* src = grad_out + c * p.out_plane;
                   T* dst = grad_in + c * p.in_plane;
                   for (int64_t j = 0; j < p.out_plane; ++j) dst[offs[size_t(j)]] += src[j];
                 }
               });
}

Tensor pad_forward(const Tensor& self, const std::vector<int64_t>& pad, int64_t dims, PadMode m, std::string_view op,
                   const Tensor* out_opt = nullptr) {
  PadPlan p = plan_pad(self, pad, dims, m, op);
  KILN_USER_CHECK(self.dtype() != DType::Bool, "\"", op, "\" not implemented for 'Bool'");
  Tensor out = out_opt ? *out_opt : Tensor::empty(p.out_sizes, self.dtype());
  if (out.numel() == 0) return out;
  Tensor x = self.contiguous();
  dispatch_all(x.dtype(), [&]<class T>() { pad_gather<T>(x.data<T>(), out.data<T>(), p); });
  return out;
}

// {reflection,replication}_pad{1,2,3}d(self, padding)
void add_pad(OpRegistry& r, int64_t dims, PadMode m) {
  std::string op = std::string(mode_name(m)) + "_pad" + std::to_string(dims) + "d";
  std::string schema = "aten::" + op + "(Tensor self, SymInt[" + std::to_string(2 * dims) + "] padding) -> Tensor";
  OpFn meta = [dims, m, op](const OpArgs& args) -> ValueList {
    PadPlan p = plan_pad(args.tensor(0), args.ints(1), dims, m, op);
    KILN_USER_CHECK(args.tensor(0).dtype() != DType::Bool, "\"", op, "\" not implemented for 'Bool'");
    return one(Tensor::meta(p.out_sizes, args.tensor(0).dtype()));
  };
  ComputeFn compute = [dims, m, op](const OpArgs& args, const std::vector<Tensor>& outs) {
    pad_forward(args.tensor(0), args.ints(1), dims, m, op, &outs[0]);
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// {reflection,replication}_pad{1,2,3}d_backward(grad_output, self, padding)
void add_pad_backward(OpRegistry& r, int64_t dims, PadMode m) {
  std::string op = std::string(mode_name(m)) + "_pad" + std::to_string(dims) + "d_backward";
  std::string schema = "aten::" + op + "(Tensor grad_output, Tensor self, SymInt[" + std::to_string(2 * dims) +
                       "] padding) -> Tensor";
  auto check = [dims, m, op](const OpArgs& args) {
    PadPlan p = plan_pad(args.tensor(1), args.ints(2), dims, m, op);
    KILN_USER_CHECK(args.tensor(0).sizes() == p.out_sizes, op, ": expected grad_output of size ",
                    shape_str(p.out_sizes), ", but got ", shape_str(args.tensor(0).sizes()));
    KILN_USER_CHECK(is_floating(args.tensor(0).dtype()), "\"", op, "\" not implemented for '",
                    dtype_name(args.tensor(0).dtype()), "'");
    return p;
  };
  OpFn meta = [check](const OpArgs& args) -> ValueList {
    check(args);
    return one(Tensor::meta(args.tensor(1).sizes(), args.tensor(0).dtype()));
  };
  ComputeFn compute = [check](const OpArgs& args, const std::vector<Tensor>& outs) {
    PadPlan p = check(args);
    Tensor go = upcast(args.tensor(0)).contiguous();
    Tensor acc = Tensor::zeros(outs[0].sizes(), go.dtype());
    if (acc.numel() > 0)
      dispatch_float(go.dtype(), "pad_backward", [&]<class T>() { pad_scatter<T>(go.data<T>(), acc.data<T>(), p); });
    outs[0].copy_(acc);
  };
  add_op_with_outputs(r, schema, std::move(meta), std::move(compute));
}

// ---------------------------------------------------------------- pad composite

struct PadCall {
  std::string mode;
  std::optional<double> value;
};

// aten::pad(self, pad, mode, value): constant goes to constant_pad_nd, the
// others to the N-d kernels where N = len(pad) / 2 (PyTorch's _pad_enum).
int64_t non_constant_dims(const Tensor& self, const std::vector<int64_t>& pad, const PadCall& c) {
  KILN_USER_CHECK(!c.value || *c.value == 0.0, "Padding mode \"", c.mode, "\" doesn't take in value argument");
  int64_t dims = int64_t(pad.size() / 2);
  bool supported = pad.size() % 2 == 0 && dims >= 1 && dims <= 3 && (self.dim() == dims + 1 || self.dim() == dims + 2);
  KILN_USER_CHECK(supported, "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  return dims;
}

PadMode pad_mode(const std::string& mode) {
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "replicate") return PadMode::Replicate;
  KILN_USER_CHECK(mode == "circular", "Unrecognised padding mode ", mode);
  return PadMode::Circular;
}

ValueList pad_meta(const OpArgs& args) {
  const Tensor& self = args.tensor(0);
  std::vector<int64_t> pad = args.ints(1);
  PadCall c{args.str(2), args.opt_real(3)};
  KILN_USER_CHECK(pad.size() % 2 == 0, "Padding length must be divisible by 2");
  KILN_USER_CHECK(int64_t(pad.size()) <= 2 * self.dim(), "Padding length should be less than or equal to two times "
                  "the input dimension but got padding length ", pad.size(), " and input of dimension ", self.dim());
  if (c.mode == "constant") return one(Tensor::meta(constant_pad_shape(self, pad), self.dtype()));
  int64_t dims = non_constant_dims(self, pad, c);
  PadMode m = pad_mode(c.mode);
  return one(Tensor::meta(plan_pad(self, pad, dims, m, "pad").out_sizes, self.dtype()));
}

void pad_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& self = args.tensor(0);
  std::vector<int64_t> pad = args.ints(1);
  PadCall c{args.str(2), args.opt_real(3)};
  if (c.mode == "constant") {
    // The value is a Python float: integer tensors get it truncated, as fill_ does.
    constant_pad_into(self, pad, Scalar(c.value.value_or(0.0)), outs[0]);
    return;
  }
  int64_t dims = non_constant_dims(self, pad, c);
  pad_forward(self, pad, dims, pad_mode(c.mode), "pad", &outs[0]);
}

}  // namespace

void register_padding_ops(OpRegistry& r) {
  add_op_with_outputs(r, "aten::constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor",
                      constant_pad_meta, constant_pad_compute);
  for (int64_t dims = 1; dims <= 3; ++dims) {
    for (PadMode m : {PadMode::Reflect, PadMode::Replicate}) {
      add_pad(r, dims, m);
      add_pad_backward(r, dims, m);
    }
  }
  add_op_with_outputs(r, "aten::pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor",
                      pad_meta, pad_compute);
}

}  // namespace kiln
