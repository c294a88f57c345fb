// Pooling through ATen's pooling backward kernels; the 1-d forms and the
// composite spellings through the flat-index scatter or their decompositions.
// The backward kernels are linear in grad_output, so their own gradients are
// the forward pools (average) or a gather at the saved indices (max).
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

const std::vector<bool> kValuesOnly{true, false};

// stride=[] means stride = kernel_size.
std::vector<int64_t> stride_of(const GradContext& x) {
  std::vector<int64_t> s = x.ints("stride");
  return s.empty() ? x.ints("kernel_size") : s;
}

void max_pool_with_indices_grad(GradContext& x) {
  const char* kernel = x.call.op == "aten::max_pool2d_with_indices.default"
                           ? "aten::max_pool2d_with_indices_backward.default"
                           : "aten::max_pool3d_with_indices_backward.default";
  x.set("self", x.e.call1(kernel, {x.grad(), x.var("self"), x.ints("kernel_size"), stride_of(x), x.ints("padding"),
                                   x.ints("dilation"), x.boolean("ceil_mode"), x.out(1)}));
}

// Indices of 1-d max pools count along the last dim: scatter-add there.
void scatter_last_dim_grad(GradContext& x) {
  Emitter& e = x.e;
  Var self = x.var("self");
  x.set("self", e.call1("aten::scatter_add.default",
                        {zeros(e, e.sizes(self), e.dtype(x.grad())), int64_t(-1), x.out(1), x.grad()}));
}

void adaptive_max_pool_grad(GradContext& x) {
  const char* kernel = x.call.op == "aten::adaptive_max_pool2d.default" ? "aten::adaptive_max_pool2d_backward.default"
                                                                        : "aten::adaptive_max_pool3d_backward.default";
  x.set("self", x.e.call1(kernel, {x.grad(), x.var("self"), x.out(1)}));
}

void max_pool_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    std::string with = x.call.op.substr(0, x.call.op.find('.')) + "_with_indices.default";
    return std::vector<Var>{e.call(with, {x.var("self"), x.ints("kernel_size"), stride_of(x), x.ints("padding"),
                                          x.ints("dilation"), x.boolean("ceil_mode")})[0]};
  });
}

void avg_pool_grad(GradContext& x) {
  const char* kernel =
      x.call.op == "aten::avg_pool2d.default" ? "aten::avg_pool2d_backward.default" : "aten::avg_pool3d_backward.default";
  x.set("self", x.e.call1(kernel, {x.grad(), x.var("self"), x.ints("kernel_size"), stride_of(x), x.ints("padding"),
                                   x.boolean("ceil_mode"), x.boolean("count_include_pad"), x.arg("divisor_override")}));
}

// avg_pool1d is avg_pool2d over a height of one.
void avg_pool1d_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    std::vector<int64_t> k = x.ints("kernel_size"), s = stride_of(x), p = x.ints("padding");
    Var y = e.call1("aten::avg_pool2d.default",
                    {unsqueeze(e, x.var("self"), -2), std::vector<int64_t>{1, k[0]}, std::vector<int64_t>{1, s[0]},
                     std::vector<int64_t>{0, p[0]}, x.boolean("ceil_mode"), x.boolean("count_include_pad")});
    return std::vector<Var>{squeeze(e, y, -2)};
  });
}

void adaptive_avg_pool_grad(GradContext& x) {
  const char* kernel = x.call.op == "aten::_adaptive_avg_pool2d.default"
                           ? "aten::_adaptive_avg_pool2d_backward.default"
                           : "aten::_adaptive_avg_pool3d_backward.default";
  x.set("self", x.e.call1(kernel, {x.grad(), x.var("self")}));
}

void adaptive_avg_pool_composite_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var self = x.var("self");
    std::vector<int64_t> size = x.ints("output_size");
    if (x.call.op == "aten::adaptive_avg_pool1d.default") {
      Var y = e.call1("aten::_adaptive_avg_pool2d.default",
                      {unsqueeze(e, self, -2), std::vector<int64_t>{1, size[0]}});
      return std::vector<Var>{squeeze(e, y, -2)};
    }
    const char* op = size.size() == 2 ? "aten::_adaptive_avg_pool2d.default" : "aten::_adaptive_avg_pool3d.default";
    return std::vector<Var>{e.call1(op, {self, size})};
  });
}

void adaptive_max_pool1d_grad(GradContext& x) { scatter_last_dim_grad(x); }

// ---- double backward ----

void avg_pool_backward_grad(GradContext& x) {
  Emitter& e = x.e;
  const char* pool =
      x.call.op == "aten::avg_pool2d_backward.default" ? "aten::avg_pool2d.default" : "aten::avg_pool3d.default";
  x.set("grad_output", e.call1(pool, {x.grad(), x.ints("kernel_size"), stride_of(x), x.ints("padding"),
                                      x.boolean("ceil_mode"), x.boolean("count_include_pad"), x.arg("divisor_override")}));
  x.set("self", zeros_like(e, x.var("self")));
}

void adaptive_avg_pool_backward_grad(GradContext& x) {
  Emitter& e = x.e;
  Shape go = e.sizes(x.var("grad_output"));
  bool two = x.call.op == "aten::_adaptive_avg_pool2d_backward.default";
  std::vector<int64_t> size(go.end() - (two ? 2 : 3), go.end());
  x.set("grad_output", e.call1(two ? "aten::_adaptive_avg_pool2d.default" : "aten::_adaptive_avg_pool3d.default",
                               {x.grad(), size}));
  x.set("self", zeros_like(e, x.var("self")));
}

// The transpose of scattering at flat plane indices: gather there.
void max_pool_backward_grad(GradContext& x) {
  Emitter& e = x.e;
  Var indices = x.var("indices");
  Shape is = e.sizes(indices), ss = e.sizes(x.var("self"));
  size_t spatial = x.call.op.find("3d") != std::string::npos ? 3 : 2;
  Shape plane_in(ss.begin(), ss.end() - spatial), plane_out(is.begin(), is.end() - spatial);
  plane_in.push_back(-1);
  plane_out.push_back(-1);
  Var picked = e.call1("aten::gather.default",
                       {reshape(e, x.grad(), plane_in), int64_t(-1), reshape(e, indices, plane_out)});
  x.set("grad_output", reshape(e, picked, is));
  x.set("self", zeros_like(e, x.var("self")));
}

}  // namespace

void register_pooling_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"}, go_self{"grad_output", "self"};
  t.add<max_pool_with_indices_grad>("aten::max_pool2d_with_indices.default", self, kSavesBoth, kValuesOnly);
  t.add<max_pool_with_indices_grad>("aten::max_pool3d_with_indices.default", self, kSavesBoth, kValuesOnly);
  t.add<scatter_last_dim_grad>("aten::max_pool1d_with_indices.default", self, kSavesOutputs, kValuesOnly);
  for (const char* op : {"aten::max_pool1d.default", "aten::max_pool2d.default", "aten::max_pool3d.default"})
    t.add<max_pool_grad>(op, self, kSavesInputs);
  t.add<adaptive_max_pool_grad>("aten::adaptive_max_pool2d.default", self, kSavesBoth, kValuesOnly);
  t.add<adaptive_max_pool_grad>("aten::adaptive_max_pool3d.default", self, kSavesBoth, kValuesOnly);
  t.add<adaptive_max_pool1d_grad>("aten::adaptive_max_pool1d.default", self, kSavesOutputs, kValuesOnly);
  t.add<avg_pool_grad>("aten::avg_pool2d.default", self, kSavesInputs);
  t.add<avg_pool_grad>("aten::avg_pool3d.default", self, kSavesInputs);
  t.add<avg_pool1d_grad>("aten::avg_pool1d.default", self, kSavesInputs);
  t.add<adaptive_avg_pool_grad>("aten::_adaptive_avg_pool2d.default", self, kSavesInputs);
  t.add<adaptive_avg_pool_grad>("aten::_adaptive_avg_pool3d.default", self, kSavesInputs);
  for (const char* op : {"aten::adaptive_avg_pool1d.default", "aten::adaptive_avg_pool2d.default",
                         "aten::adaptive_avg_pool3d.default"})
    t.add<adaptive_avg_pool_composite_grad>(op, self, kSavesInputs);
  t.add<avg_pool_backward_grad>("aten::avg_pool2d_backward.default", go_self, kSavesInputs);
  t.add<avg_pool_backward_grad>("aten::avg_pool3d_backward.default", go_self, kSavesInputs);
  t.add<adaptive_avg_pool_backward_grad>("aten::_adaptive_avg_pool2d_backward.default", go_self, kSavesInputs);
  t.add<adaptive_avg_pool_backward_grad>("aten::_adaptive_avg_pool3d_backward.default", go_self, kSavesInputs);
  for (const char* op : {"aten::max_pool2d_with_indices_backward.default", "aten::max_pool3d_with_indices_backward.default",
                         "aten::adaptive_max_pool2d_backward.default", "aten::adaptive_max_pool3d_backward.default"})
    t.add<max_pool_backward_grad>(op, go_self, kSavesInputs);
}

}  // namespace kiln::aot
