// Spatial transformers. grid_sampler_2d goes through ATen's backward kernel
// (derivatives.yaml: grid_sampler_2d_backward with the input-gradient mask);
// affine_grid_generator is linear in theta, its backward the transposed
// product with the same base grid, and that backward's own gradient the
// forward map again.
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

void grid_sampler_2d_grad(GradContext& x) {
  // The kernel computes the grid's gradient whatever the mask says (as ATen's
  // does); the input's only when asked, else it answers None.
  bool input_grad = x.needs("input");
  std::vector<Var> g = x.e.call("aten::grid_sampler_2d_backward.default",
                                {x.grad(), x.var("input"), x.var("grid"), x.arg("interpolation_mode"),
                                 x.arg("padding_mode"), x.arg("align_corners"),
                                 Value(ValueList{input_grad, x.needs("grid")})});
  if (input_grad) x.set("input", g[0]);
  x.set("grid", g[1]);
}

void affine_grid_generator_grad(GradContext& x) {
  x.set("theta", x.e.call1("aten::affine_grid_generator_backward.default",
                           {x.grad(), x.arg("size"), x.arg("align_corners")}));
}

void affine_grid_generator_backward_grad(GradContext& x) {
  x.set("grad", x.e.call1("aten::affine_grid_generator.default", {x.grad(), x.arg("size"), x.arg("align_corners")}));
}

}  // namespace

void register_grid_sample_derivatives(DerivativeTable& t) {
  t.add<grid_sampler_2d_grad>("aten::grid_sampler_2d.default", {"input", "grid"}, kSavesInputs);
  t.add<affine_grid_generator_grad>("aten::affine_grid_generator.default", {"theta"}, kSavesNothing);
  t.add<affine_grid_generator_backward_grad>("aten::affine_grid_generator_backward.default", {"grad"}, kSavesNothing);
}

}  // namespace kiln::aot
