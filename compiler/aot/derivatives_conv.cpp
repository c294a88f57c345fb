// Convolutions through convolution_backward (all spellings reduce to
// aten::convolution), and im2col / col2im, each the other's transpose.
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

void convolution_grad(GradContext& x) {
  Emitter& e = x.e;
  Var input = x.var("input"), weight = x.var("weight");
  int64_t out_channels = e.sizes(x.out())[1];
  // All three gradients are always asked for: the kernel answers None for
  // unrequested ones, which an emitter cannot hold.
  std::vector<Var> g = e.call("aten::convolution_backward.default",
                              {x.grad(), input, weight, std::vector<int64_t>{out_channels}, x.arg("stride"),
                               x.arg("padding"), x.arg("dilation"), x.arg("transposed"), x.arg("output_padding"),
                               x.arg("groups"), Value(ValueList{true, true, true})});
  x.set("input", g[0]);
  x.set("weight", g[1]);
  if (x.needs("bias")) x.set("bias", g[2]);
}

// Double backward (create_graph=True through a convolution, as gradient
// penalties need). The forward F(x, w) is bilinear and convolution_backward
// gives gI = J_x(w)^T go, gW = J_w(x)^T go and gB = sum(go), so with ggI, ggW
// and ggB the gradients of those:
//   d go = F(ggI, w) + F(x, ggW) + ggB broadcast over go,
//   d w  = the weight gradient of F at input ggI for go,
//   d x  = the input gradient of F with weight ggW for go,
// for plain and transposed convolutions alike (PyTorch's _convolution_double_backward).
void convolution_backward_grad(GradContext& x) {
  Emitter& e = x.e;
  Var go = x.var("grad_output"), input = x.var("input"), weight = x.var("weight");
  auto forward = [&](Var in, Var w) {
    return e.call1("aten::convolution.default", {in, w, Value(), x.arg("stride"), x.arg("padding"), x.arg("dilation"),
                                                 x.arg("transposed"), x.arg("output_padding"), x.arg("groups")});
  };
  auto backward = [&](Var in, Var w) {
    return e.call("aten::convolution_backward.default",
                  {go, in, w, std::vector<int64_t>{e.sizes(go)[1]}, x.arg("stride"), x.arg("padding"),
                   x.arg("dilation"), x.arg("transposed"), x.arg("output_padding"), x.arg("groups"),
                   Value(ValueList{true, true, true})});
  };
  std::optional<Var> gg_input = x.grad(0), gg_weight = x.grad(1), gg_bias = x.grad(2);
  std::optional<Var> d_go;
  auto accumulate = [&](Var v) { d_go = d_go ? add(e, *d_go, v) : v; };
  if (gg_input) accumulate(forward(*gg_input, weight));
  if (gg_weight) accumulate(forward(input, *gg_weight));
  if (gg_bias) {
    Shape go_sizes = e.sizes(go);
    Shape per_channel(go_sizes.size(), 1);
    per_channel[1] = go_sizes[1];
    accumulate(expand(e, reshape(e, *gg_bias, per_channel), go_sizes));
  }
  if (d_go) x.set("grad_output", *d_go);
  if (gg_input && x.needs("weight")) x.set("weight", backward(*gg_input, weight)[1]);
  if (gg_weight && x.needs("input")) x.set("input", backward(input, *gg_weight)[0]);
}

// conv1d/2d/3d (and their str-padding forms) and conv_transpose*: aten::convolution.
Var convolution(Emitter& e, const GradContext& x, Var input, bool transposed, const EArg& padding,
                const EArg& output_padding) {
  return e.call1("aten::convolution.default", {input, x.var("weight"), x.arg("bias"), x.ints("stride"), padding,
                                               x.ints("dilation"), transposed, output_padding, x.arg("groups")});
}

std::vector<int64_t> zeros_for(const GradContext& x) {
  return std::vector<int64_t>(size_t(x.e.dim(x.var("weight")) - 2), 0);
}

void conv_nd_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var input = x.var("input");
    std::vector<int64_t> spatial_zeros = zeros_for(x);
    if (x.arg("padding").value.kind() != Value::Kind::String)
      return std::vector<Var>{convolution(e, x, input, false, x.ints("padding"), spatial_zeros)};
    // padding='valid' is zero padding; 'same' pads dilation * (k - 1) in
    // total, the odd unit on the right, as ATen's _convolution_mode does.
    std::string mode = x.str("padding");
    if (mode == "valid") return std::vector<Var>{convolution(e, x, input, false, spatial_zeros, spatial_zeros)};
    KILN_USER_CHECK(mode == "same", x.call.op, ": padding must be 'valid' or 'same', got '", mode, "'");
    Shape w = e.sizes(x.var("weight"));
    size_t nd = w.size() - 2;
    std::vector<int64_t> dilation = x.ints("dilation");
    std::vector<int64_t> left(nd), extra(2 * nd, 0);
    bool asymmetric = false;
    for (size_t d = 0; d < nd; ++d) {
      int64_t total = dilation[d] * (w[d + 2] - 1);
      left[d] = total / 2;
      int64_t right = total - left[d];
      if (right != left[d]) {
        asymmetric = true;
        extra[2 * (nd - 1 - d) + 1] = right - left[d];
      }
    }
    if (asymmetric) input = e.call1("aten::constant_pad_nd.default", {input, extra, 0.0});
    return std::vector<Var>{convolution(e, x, input, false, left, spatial_zeros)};
  });
}

void conv_transpose_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    return std::vector<Var>{convolution(e, x, x.var("input"), true, x.ints("padding"), x.ints("output_padding"))};
  });
}

void im2col_grad(GradContext& x) {
  Shape sizes = x.e.sizes(x.var("self"));
  std::vector<int64_t> out(sizes.end() - 2, sizes.end());
  x.set("self", x.e.call1("aten::col2im.default", {x.grad(), out, x.ints("kernel_size"), x.ints("dilation"),
                                                    x.ints("padding"), x.ints("stride")}));
}
void col2im_grad(GradContext& x) {
  x.set("self", x.e.call1("aten::im2col.default",
                          {x.grad(), x.ints("kernel_size"), x.ints("dilation"), x.ints("padding"), x.ints("stride")}));
}

}  // namespace

void register_conv_derivatives(DerivativeTable& t) {
  const std::vector<std::string> conv{"input", "weight", "bias"};
  t.add<convolution_grad>("aten::convolution.default", conv, kSavesInputs);
  t.add<convolution_grad>("aten::_convolution.default", conv, kSavesInputs);
  for (const char* op : {"aten::conv1d.default", "aten::conv2d.default", "aten::conv3d.default",
                         "aten::conv1d.padding", "aten::conv2d.padding", "aten::conv3d.padding"})
    t.add<conv_nd_grad>(op, conv, kSavesInputs);
  for (const char* op : {"aten::conv_transpose1d.default", "aten::conv_transpose2d.input",
                         "aten::conv_transpose3d.input"})
    t.add<conv_transpose_grad>(op, conv, kSavesInputs);
  t.add<convolution_backward_grad>("aten::convolution_backward.default", {"grad_output", "input", "weight"},
                                    kSavesInputs);
  t.add<im2col_grad>("aten::im2col.default", {"self"}, kSavesNothing);
  t.add<col2im_grad>("aten::col2im.default", {"self"}, kSavesNothing);
}

}  // namespace kiln::aot
