// Padding and upsampling: linear maps whose transposes ATen provides as
// *_backward kernels; those kernels' own gradients are the forward maps.
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

// ---- padding ----

void constant_pad_grad(GradContext& x) {
  std::vector<int64_t> pad = x.ints("pad");
  for (int64_t& p : pad) p = -p;  // negative padding crops
  x.set("self", x.e.call1("aten::constant_pad_nd.default", {x.grad(), pad, 0.0}));
}

void mode_pad_grad(GradContext& x) {
  std::string backward = x.call.op.substr(0, x.call.op.find('.')) + "_backward.default";
  x.set("self", x.e.call1(backward, {x.grad(), x.var("self"), x.ints("padding")}));
}

void mode_pad_backward_grad(GradContext& x) {
  std::string forward = x.call.op.substr(0, x.call.op.find("_backward")) + ".default";
  x.set("grad_output", x.e.call1(forward, {x.grad(), x.ints("padding")}));
  x.set("self", zeros_like(x.e, x.var("self")));
}

// F.pad's modes, spelled with the ops above (circular as slices and cat).
void pad_grad(GradContext& x) {
  x.via([&](Emitter& e) {
    Var self = x.var("self");
    std::vector<int64_t> pad = x.ints("pad");
    std::string mode = x.str("mode");
    if (mode == "constant")
      return std::vector<Var>{e.call1("aten::constant_pad_nd.default", {self, pad, x.opt_real("value").value_or(0.0)})};
    int64_t k = int64_t(pad.size() / 2);
    if (mode == "reflect" || mode == "replicate") {
      std::string op = std::string(mode == "reflect" ? "aten::reflection_pad" : "aten::replication_pad") +
                       std::to_string(k) + "d.default";
      return std::vector<Var>{e.call1(op, {self, pad})};
    }
    KILN_USER_CHECK(mode == "circular", "pad: unknown mode '", mode, "'");
    Var y = self;
    int64_t nd = e.dim(self);
    for (int64_t i = 0; i < k; ++i) {
      int64_t dim = nd - 1 - i, l = pad[size_t(2 * i)], r = pad[size_t(2 * i + 1)];
      int64_t n = e.sizes(y)[size_t(dim)];
      std::vector<Var> parts;
      if (l > 0) parts.push_back(e.call1("aten::narrow.default", {y, dim, n - l, l}));
      parts.push_back(y);
      if (r > 0) parts.push_back(e.call1("aten::narrow.default", {y, dim, int64_t(0), r}));
      y = e.call1("aten::cat.default", {EArg::list(parts), dim});
    }
    return std::vector<Var>{y};
  });
}

// ---- upsampling ----

// Spatial dims and interpolation flavour of an upsample op, from its name.
struct Upsample {
  std::string base;  // "aten::upsample_bilinear2d"
  size_t dims = 2;
  bool align = false;  // takes align_corners (the linear and cubic ones)
};
Upsample upsample_of(const std::string& op) {
  Upsample u;
  u.base = op.substr(0, op.find('.'));
  if (u.base.size() > 9 && u.base.compare(u.base.size() - 9, 9, "_backward") == 0)
    u.base = u.base.substr(0, u.base.size() - 9);
  u.dims = size_t(u.base[u.base.size() - 2] - '0');
  u.align = u.base.find("linear") != std::string::npos || u.base.find("cubic") != std::string::npos;
  return u;
}
std::vector<const char*> scale_names(size_t dims) {
  if (dims == 1) return {"scales"};
  if (dims == 2) return {"scales_h", "scales_w"};
  return {"scales_d", "scales_h", "scales_w"};
}

void upsample_grad(GradContext& x) {
  Emitter& e = x.e;
  Upsample u = upsample_of(x.call.op);
  bool vec = x.call.op.size() > 4 && x.call.op.compare(x.call.op.size() - 4, 4, ".vec") == 0;
  Var input = x.var(vec ? "input" : "self");
  Shape in = e.sizes(input), out = e.sizes(x.out());
  std::vector<int64_t> output_size(out.end() - int64_t(u.dims), out.end());
  std::vector<EArg> args{x.grad(), output_size, std::vector<int64_t>(in.begin(), in.end())};
  if (u.align) args.push_back(x.arg("align_corners"));
  if (vec) {
    // The .vec forms pass scale_factors on as the scales the kernels index with.
    std::optional<std::vector<double>> factors;
    if (!x.is_none("scale_factors")) {
      factors.emplace();
      for (const Value& f : x.value("scale_factors").to_list()) factors->push_back(f.to_double());
    }
    for (size_t d = 0; d < u.dims; ++d) args.push_back(factors ? EArg((*factors)[d]) : EArg::none());
  } else {
    for (const char* s : scale_names(u.dims)) args.push_back(x.arg(s));
  }
  x.set(vec ? "input" : "self", e.call1(u.base + "_backward.default", args));
}

void upsample_backward_grad(GradContext& x) {
  Upsample u = upsample_of(x.call.op);
  std::vector<EArg> args{x.grad(), x.ints("output_size")};
  if (u.align) args.push_back(x.arg("align_corners"));
  for (const char* s : scale_names(u.dims)) args.push_back(x.arg(s));
  x.set("grad_output", x.e.call1(u.base + ".default", args));
}

}  // namespace

void register_pad_upsample_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"};
  t.add<constant_pad_grad>("aten::constant_pad_nd.default", self, kSavesNothing);
  t.add<pad_grad>("aten::pad.default", self, kSavesNothing);
  for (const char* kind : {"reflection", "replication"})
    for (int d = 1; d <= 3; ++d) {
      std::string base = std::string("aten::") + kind + "_pad" + std::to_string(d) + "d";
      t.add<mode_pad_grad>(base + ".default", self, kSavesNothing);
      t.add<mode_pad_backward_grad>(base + "_backward.default", {"grad_output", "self"}, kSavesNothing);
    }
  for (const char* name : {"upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d",
                           "_upsample_nearest_exact2d", "_upsample_nearest_exact3d", "upsample_linear1d",
                           "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d"}) {
    std::string base = std::string("aten::") + name;
    t.add<upsample_grad>(base + ".default", self, kSavesNothing);
    t.add<upsample_grad>(base + ".vec", {"input"}, kSavesNothing);
    t.add<upsample_backward_grad>(base + "_backward.default", {"grad_output"}, kSavesNothing);
  }
  // PyTorch's interpolating backward kernels accumulate reduced floats in float32.
  for (const char* name : {"upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d", "upsample_bicubic2d"}) {
    t.float32_for_reduced(std::string("aten::") + name + ".default");
    t.float32_for_reduced(std::string("aten::") + name + ".vec");
  }
}

}  // namespace kiln::aot
