// Inputs and meta vals for repro graphs: the random inputs PyTorch's
// rand_strided would draw, and meta['val'] for graphs whose text had none.
#include <cstring>

#include "compiler/passes/graph_editor.h"
#include "compiler/pipeline/emitter.h"
#include "core/tensor/generator.h"
#include "minifier/candidate.h"
#include "core/ops/overloads.h"
#include "minifier/repro.h"
#include "minifier/repro_internal.h"
#include "core/util/limits.h"

namespace kiln::minify {

Tensor rand_strided(const Shape& sizes, const Shape& strides, DType dtype, CpuGenerator& gen) {
  // torch/_dynamo/testing.py: a flat buffer just large enough for the view,
  // then as_strided over it; one normal_ draw per buffer element.
  int64_t needed = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) {
      needed = 0;
      break;
    }
    needed += (sizes[d] - 1) * strides[d];
  }
  Tensor buffer = Tensor::zeros({needed}, dtype);
  if (is_floating(dtype) && needed > 0) normal_(buffer, 0.0, 1.0, gen);
  return buffer.as_strided(sizes, strides, 0);
}

Tensor plain_copy(const Tensor& src, const Shape& strides) {
  Tensor out = Tensor::empty_strided(src.sizes(), strides, src.dtype());
  const size_t itemsize = src.itemsize();
  const int64_t n = src.numel();
  const int64_t dims = src.dim();
  Shape index(size_t(dims), 0);
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(out.raw_data());
  for (int64_t e = 0; e < n; ++e) {
    int64_t a = 0, b = 0;
    for (int64_t d = 0; d < dims; ++d) {
      a += index[size_t(d)] * src.strides()[size_t(d)];
      b += index[size_t(d)] * strides[size_t(d)];
    }
    std::memcpy(to + b * int64_t(itemsize), from + a * int64_t(itemsize), itemsize);
    for (int64_t d = dims - 1; d >= 0; --d) {
      if (++index[size_t(d)] < src.sizes()[size_t(d)]) break;
      index[size_t(d)] = 0;
    }
  }
  return out;
}

Expected<std::vector<Tensor>> random_inputs(const Graph& g, uint64_t seed, const std::string& file) {
  CpuGenerator gen(seed);
  std::vector<Tensor> out;
  // What the annotations declare, against the memory budget, before any is drawn.
  int64_t declared = 0;
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    std::optional<Tensor> meta = pipeline::meta_tensor_of(n.meta.val);
    if (!meta) continue;
    int64_t elements = 1;
    bool overflow = false;
    for (size_t d = 0; d < meta->sizes().size(); ++d) {
      if (meta->sizes()[d] == 0) {
        elements = 0;
        break;
      }
      int64_t span = 0;
      overflow |= __builtin_mul_overflow(meta->sizes()[d] - 1, meta->strides()[d], &span);
      overflow |= __builtin_add_overflow(elements, span, &elements);
    }
    int64_t bytes = 0;
    overflow |= __builtin_mul_overflow(elements, int64_t(element_size(meta->dtype())), &bytes);
    overflow |= __builtin_add_overflow(declared, bytes, &declared);
    if (Status st = check_declared_bytes(overflow ? -1 : declared, "the graph's inputs (up to placeholder '" + n.name + "')",
                                         {file, 0});
        !st.ok())
      return st;
  }
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    std::optional<Tensor> meta = pipeline::meta_tensor_of(n.meta.val);
    if (!meta)
      return Status::error("placeholder '" + n.name +
                               "' has no tensor annotation with concrete sizes and a known dtype "
                               "(\"f32[8, 64]\"), so Kiln cannot make an input for it",
                           {file, 0});
    out.push_back(rand_strided(meta->sizes(), meta->strides(), meta->dtype(), gen));
  }
  return out;
}

namespace {

Val val_of(const Value& v) {
  if (v.is_tensor()) return Val::of_tensor(pipeline::tensor_meta_of(v.to_tensor()));
  if (v.is_list()) {
    std::vector<Val> items;
    for (const Value& item : v.to_list()) {
      if (!item.is_tensor() && !item.is_none()) return {};
      items.push_back(val_of(item));
    }
    return Val::tuple(std::move(items));
  }
  return {};
}

// Meta tensors for the placeholders when every one has a known tensor val (a
// dump's annotation, a repro's load_args); else none.
std::vector<Tensor> placeholder_metas(const Graph& g) {
  std::vector<Tensor> out;
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    std::optional<Tensor> t = pipeline::meta_tensor_of(n.meta.val);
    if (!t) return {};
    out.push_back(std::move(*t));
  }
  return out;
}

}  // namespace

void propagate_meta_vals(Graph& g, const std::vector<Tensor>& given) {
  // Without inputs, the placeholders' own vals stand for them, so numbers
  // PyTorch wraps into tensors (`aten.mul.Tensor(x, 2)`) are understood too.
  const std::vector<Tensor> inputs = given.empty() ? placeholder_metas(g) : given;
  size_t k = 0;
  for (Node& n : g.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    if (k < inputs.size() && inputs[k].defined() && n.meta.val.kind == Val::Kind::None)
      n.meta.val = Val::of_tensor(pipeline::tensor_meta_of(inputs[k]));
    ++k;
  }
  // annotate() also knows the arguments PyTorch's parser wraps into tensors
  // (`aten.mul.Tensor(x, 2)`), by trying the op's other overloads; only its
  // vals are taken, so the graph keeps the file's targets.
  std::vector<Val> vals(g.size());
  Candidate c{g, inputs};
  if (k == inputs.size() && annotate(c).ok() && c.graph.size() == g.size()) {
    for (size_t i = 0; i < g.size(); ++i) {
      vals[i] = c.graph.nodes[i].meta.val;
      // An overload packet (torch.ops.aten.round) names the overload its arguments call.
      Node& n = g.nodes[i];
      if (n.op == OpKind::CallFunction && is_overload_packet(n.target)) n.target = c.graph.nodes[i].target;
    }
  } else {
    std::vector<Value> metas = pipeline::compute_node_metas(g);
    for (size_t i = 0; i < g.size(); ++i) vals[i] = val_of(metas[i]);
  }
  for (size_t i = 0; i < g.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.op != OpKind::Output && n.meta.val.kind == Val::Kind::None) n.meta.val = vals[i];
  }
}

}  // namespace kiln::minify
