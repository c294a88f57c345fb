// Joins and rearrangements: cat/stack and their wrappers, flips, rolls,
// repeats, triangles.
#include "compiler/aot/grad_context.h"
#include "compiler/aot/grad_ops.h"

namespace kiln::aot {
namespace {

void cat_grad(GradContext& x) {
  Emitter& e = x.e;
  std::vector<Var> ts = x.vars("tensors");
  Var g = x.grad();
  int64_t nd = e.dim(g);
  int64_t dim = wrap(x.integer("dim"), nd);
  GradList gs;
  int64_t at = 0;
  for (Var t : ts) {
    Shape s = e.sizes(t);
    // cat skips legacy empty 1-d inputs whatever their rank.
    if (s.size() == 1 && s[0] == 0 && nd != 1) {
      gs.push_back(zeros_like(e, t));
      continue;
    }
    int64_t n = s[size_t(dim)];
    gs.push_back(e.call1("aten::narrow.default", {g, dim, at, n}));
    at += n;
  }
  x.set_list("tensors", gs);
}

void stack_grad(GradContext& x) {
  Emitter& e = x.e;
  std::vector<Var> ts = x.vars("tensors");
  int64_t dim = wrap(x.integer("dim"), e.dim(x.grad()));
  GradList gs;
  for (size_t i = 0; i < ts.size(); ++i) gs.push_back(e.call1("aten::select.int", {x.grad(), dim, int64_t(i)}));
  x.set_list("tensors", gs);
}

// hstack / vstack: cat after raising every input to at least 1-d / 2-d.
std::vector<Var> stack_like(Emitter& e, const std::vector<Var>& ts, bool vertical) {
  std::vector<Var> raised;
  for (Var t : ts) {
    Shape s = e.sizes(t);
    if (vertical && s.size() < 2) raised.push_back(reshape(e, t, {1, s.empty() ? 1 : s[0]}));
    else if (s.empty()) raised.push_back(reshape(e, t, {1}));
    else raised.push_back(t);
  }
  int64_t dim = vertical ? 0 : (e.dim(raised[0]) == 1 ? 0 : 1);
  return {e.call1("aten::cat.default", {EArg::list(raised), dim})};
}
void hstack_grad(GradContext& x) { x.via([&](Emitter& e) { return stack_like(e, x.vars("tensors"), false); }); }
void vstack_grad(GradContext& x) { x.via([&](Emitter& e) { return stack_like(e, x.vars("tensors"), true); }); }

void flip_grad(GradContext& x) {
  std::vector<int64_t> dims;
  if (x.call.op == "aten::flip.default") dims = x.ints("dims");
  else dims = {x.call.op == "aten::fliplr.default" ? 1 : 0};
  x.set("self", x.e.call1("aten::flip.default", {x.grad(), dims}));
}

void roll_grad(GradContext& x) {
  std::vector<int64_t> shifts = x.ints("shifts");
  for (int64_t& s : shifts) s = -s;
  x.set("self", x.e.call1("aten::roll.default", {x.grad(), shifts, x.ints("dims")}));
}

// repeat: the gradient of each input element sums over its copies; splitting
// every output dim into (copies, size) and summing the copies does that.
Var repeat_backward(Emitter& e, Var g, const std::vector<int64_t>& repeats, Shape in_sizes) {
  size_t lead = repeats.size() - in_sizes.size();
  Shape split;
  std::vector<int64_t> copies;
  for (size_t i = 0; i < repeats.size(); ++i) {
    int64_t size = i < lead ? 1 : in_sizes[i - lead];
    copies.push_back(int64_t(split.size()));
    split.push_back(repeats[i]);
    split.push_back(size);
  }
  Var s = sum(e, reshape(e, g, split), copies, false);
  return reshape(e, s, in_sizes);
}
void repeat_grad(GradContext& x) {
  Shape sizes = x.e.sizes(x.var("self"));
  x.set("self", repeat_backward(x.e, x.grad(), x.ints("repeats"), sizes));
}
void tile_grad(GradContext& x) {
  Shape sizes = x.e.sizes(x.var("self"));
  std::vector<int64_t> dims = x.ints("dims");
  while (dims.size() < sizes.size()) dims.insert(dims.begin(), 1);
  x.set("self", repeat_backward(x.e, x.grad(), dims, sizes));
}

void tril_grad(GradContext& x) {
  x.set("self", x.e.call1(x.call.op, {x.grad(), x.integer("diagonal")}));
}

}  // namespace

void register_join_derivatives(DerivativeTable& t) {
  const std::vector<std::string> self{"self"}, tensors{"tensors"};
  t.add<cat_grad>("aten::cat.default", tensors, kSavesNothing);
  t.add<stack_grad>("aten::stack.default", tensors, kSavesNothing);
  t.add<hstack_grad>("aten::hstack.default", tensors, kSavesNothing);
  t.add<vstack_grad>("aten::vstack.default", tensors, kSavesNothing);
  for (const char* op : {"aten::flip.default", "aten::fliplr.default", "aten::flipud.default"})
    t.add<flip_grad>(op, self, kSavesNothing);
  t.add<roll_grad>("aten::roll.default", self, kSavesNothing);
  t.add<repeat_grad>("aten::repeat.default", self, kSavesNothing);
  t.add<tile_grad>("aten::tile.default", self, kSavesNothing);
  t.add<tril_grad>("aten::tril.default", self, kSavesNothing);
  t.add<tril_grad>("aten::triu.default", self, kSavesNothing);
}

}  // namespace kiln::aot
