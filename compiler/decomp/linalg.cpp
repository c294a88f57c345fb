// Matrix products down to mm and bmm (and the pointwise ops around them), and
// the convolution front-ends down to aten::convolution.
#include "compiler/decomp/decomp_util.h"

namespace kiln::decomp {
namespace {

// beta * self + alpha * product, leaving out what a 1 or a 0 makes redundant.
Var scale_and_add(Emitter& e, Var self, Var product, const Value& beta, const Value& alpha) {
  if (alpha.to_double() != 1.0) product = mul(e, product, alpha);
  if (beta.to_double() == 0.0) {
    // beta = 0 ignores self (NaNs included), but self still broadcasts into the shape.
    return product;
  }
  if (beta.to_double() != 1.0) self = mul(e, self, beta);
  return add(e, self, product);
}

std::vector<Var> addmm(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(scale_and_add(e, b.var(0), mm(e, b.var(1), b.var(2)), b.value(3), b.value(4)));
}
std::vector<Var> baddbmm(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var p = e.call1("aten::bmm.default", {b.var(1), b.var(2)});
  return one(scale_and_add(e, b.var(0), p, b.value(3), b.value(4)));
}

Var mv_of(Emitter& e, Var m, Var v) { return squeeze_dims(e, mm(e, m, unsqueeze(e, v, 1)), {1}); }
std::vector<Var> mv(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(mv_of(e, b.var(0), b.var(1)));
}
std::vector<Var> addmv(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(scale_and_add(e, b.var(0), mv_of(e, b.var(1), b.var(2)), b.value(3), b.value(4)));
}

std::vector<Var> dot(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0), y = b.var(1);
  KILN_USER_CHECK(e.dim(x) == 1 && e.dim(y) == 1, "1D tensors expected, but got ", e.dim(x), "D and ", e.dim(y),
                  "D tensors");
  return one(sum(e, mul(e, x, y), {0}, false));
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    KILN_USER_CHECK(x == y || x == 1 || y == 1, "matmul: batch dimensions ", shape_str(a), " and ", shape_str(b),
                    " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// torch.matmul's cases: dot, mv, mm, a folded batch against a matrix, and the
// broadcast batched product through bmm.
Var matmul_of(Emitter& e, Var a, Var b) {
  const int64_t da = e.dim(a), db = e.dim(b);
  KILN_USER_CHECK(da >= 1 && db >= 1, "both arguments to matmul need to be at least 1D, but they are ", da, "D and ",
                  db, "D");
  if (da == 1 && db == 1) return sum(e, mul(e, a, b), {0}, false);
  if (da == 2 && db == 1) return mv_of(e, a, b);
  if (da == 1 && db == 2) return squeeze_dims(e, mm(e, unsqueeze(e, a, 0), b), {0});
  if (da == 2 && db == 2) return mm(e, a, b);
  const Shape sa = e.sizes(a);
  if (da >= 3 && db <= 2) {
    Shape lead(sa.begin(), sa.end() - 1);
    int64_t rows = shape_numel(lead);
    Var folded = reshape(e, a, {rows, sa.back()});
    Var p = db == 1 ? mm(e, folded, unsqueeze(e, b, 1)) : mm(e, folded, b);
    if (db == 2) lead.push_back(e.sizes(b)[1]);
    return view(e, p, lead);
  }
  Var a1 = da == 1 ? unsqueeze(e, a, 0) : a, b1 = db == 1 ? unsqueeze(e, b, 1) : b;
  const Shape s1 = e.sizes(a1), s2 = e.sizes(b1);
  Shape batch = broadcast_shapes(Shape(s1.begin(), s1.end() - 2), Shape(s2.begin(), s2.end() - 2));
  const int64_t n = s1[s1.size() - 2], k = s1.back(), m = s2.back(), B = shape_numel(batch);
  auto batched = [&](Var x, int64_t r, int64_t c2) {
    Shape full_shape = batch;
    full_shape.push_back(r);
    full_shape.push_back(c2);
    return reshape(e, expand(e, x, full_shape), {B, r, c2});
  };
  Var p = e.call1("aten::bmm.default", {batched(a1, n, k), batched(b1, k, m)});
  Shape out = batch;
  if (da > 1) out.push_back(n);
  if (db > 1) out.push_back(m);
  return reshape(e, p, out);
}

std::vector<Var> matmul(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(matmul_of(e, b.var(0), b.var(1)));
}

// input @ weight^T + bias; a 2-D input with a bias is addmm, as in ATen.
std::vector<Var> linear(Emitter& e, const DecompCall& c) {
  Bound b(c);
  Var x = b.var(0), w = b.var(1);
  std::optional<Var> bias = b.opt_var(2);
  Var wt = e.dim(w) == 2 ? e.call1("aten::t.default", {w}) : w;
  if (e.dim(x) == 2 && bias && e.dim(w) == 2) return one(e.call1("aten::addmm.default", {*bias, x, wt}));
  Var out = matmul_of(e, x, wt);
  return one(bias ? add(e, out, *bias) : out);
}

// conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups); an
// unbatched input gets a batch dim of 1 for the call.
std::vector<Var> conv_nd(Emitter& e, const DecompCall& c, size_t k) {
  Bound b(c);
  Var x = b.var(0);
  bool unbatched = e.dim(x) == int64_t(k) + 1;
  if (unbatched) x = unsqueeze(e, x, 0);
  std::vector<int64_t> stride = b.ints(3, k), dilation = b.ints(5, k), padding;
  if (b.value(4).kind() == Value::Kind::String) {
    std::string mode = b.str(4);
    KILN_USER_CHECK(mode == "valid" || mode == "same", "Invalid padding string: '", mode, "'");
    padding.assign(k, 0);
    if (mode == "same") {
      for (int64_t s : stride) KILN_USER_CHECK(s == 1, "padding='same' is not supported for strided convolutions");
      const Shape ws = e.sizes(b.var(1));
      std::vector<int64_t> extra(2 * k, 0);
      bool asymmetric = false;
      for (size_t d = 0; d < k; ++d) {
        int64_t total = dilation[d] * (ws[2 + d] - 1);
        padding[d] = total / 2;
        int64_t right = total - 2 * padding[d];
        extra[2 * (k - 1 - d) + 1] = right;  // constant_pad_nd lists the last dim first
        asymmetric |= right != 0;
      }
      if (asymmetric) x = e.call1("aten::constant_pad_nd.default", {x, extra, 0.0});
    }
  } else {
    padding = b.ints(4, k);
  }
  Var out = e.call1("aten::convolution.default",
                    {x, b.var(1), b[2], stride, padding, dilation, false, std::vector<int64_t>(k, 0), b[6]});
  return one(unbatched ? squeeze_dims(e, out, {0}) : out);
}
std::vector<Var> conv1d(Emitter& e, const DecompCall& c) { return conv_nd(e, c, 1); }
std::vector<Var> conv2d(Emitter& e, const DecompCall& c) { return conv_nd(e, c, 2); }
std::vector<Var> conv3d(Emitter& e, const DecompCall& c) { return conv_nd(e, c, 3); }

// conv_transpose1d/2d/3d(input, weight, bias, stride, padding, output_padding, groups, dilation).
std::vector<Var> conv_transpose_nd(Emitter& e, const DecompCall& c, size_t k) {
  Bound b(c);
  Var x = b.var(0);
  bool unbatched = e.dim(x) == int64_t(k) + 1;
  if (unbatched) x = unsqueeze(e, x, 0);
  Var out = e.call1("aten::convolution.default",
                    {x, b.var(1), b[2], b.ints(3, k), b.ints(4, k), b.ints(7, k), true, b.ints(5, k), b[6]});
  return one(unbatched ? squeeze_dims(e, out, {0}) : out);
}
std::vector<Var> conv_transpose1d(Emitter& e, const DecompCall& c) { return conv_transpose_nd(e, c, 1); }
std::vector<Var> conv_transpose2d(Emitter& e, const DecompCall& c) { return conv_transpose_nd(e, c, 2); }
std::vector<Var> conv_transpose3d(Emitter& e, const DecompCall& c) { return conv_transpose_nd(e, c, 3); }

// _convolution: convolution plus backend flags that do not change the result.
std::vector<Var> convolution_private(Emitter& e, const DecompCall& c) {
  Bound b(c);
  return one(e.call1("aten::convolution.default", {b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8]}));
}

}  // namespace

void add_linalg_decomps(DecompTable& t) {
  t["aten::addmm.default"] = addmm;
  t["aten::baddbmm.default"] = baddbmm;
  t["aten::mv.default"] = mv;
  t["aten::addmv.default"] = addmv;
  t["aten::dot.default"] = dot;
  t["aten::vdot.default"] = dot;
  t["aten::matmul.default"] = matmul;
  t["aten::linear.default"] = linear;
  t["aten::conv1d.default"] = conv1d;
  t["aten::conv2d.default"] = conv2d;
  t["aten::conv3d.default"] = conv3d;
  t["aten::conv1d.padding"] = conv1d;
  t["aten::conv2d.padding"] = conv2d;
  t["aten::conv3d.padding"] = conv3d;
  t["aten::conv_transpose1d.default"] = conv_transpose1d;
  t["aten::conv_transpose2d.input"] = conv_transpose2d;
  t["aten::conv_transpose3d.input"] = conv_transpose3d;
  t["aten::_convolution.default"] = convolution_private;
}

}  // namespace kiln::decomp
