#include "viewer/numerics.h"

#include <algorithm>
#include <map>

#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/runtime/compiled_graph.h"
#include "core/ops/value.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"

namespace kiln::viewer {

const char* rung_name(int rung) {
  static const char* names[kRungs] = {"eager", "decomp_eager", "kiln"};
  return rung >= 0 && rung < kRungs ? names[rung] : "?";
}

double NodeNumerics::worst_rel() const {
  double w = std::numeric_limits<double>::quiet_NaN();
  for (double r : rel)
    if (!std::isnan(r) && (std::isnan(w) || r > w)) w = r;
  return w;
}

namespace {

// A deterministic input, so two runs of the panel agree.
Expected<Tensor> make_input(const Node& p, uint64_t& seed) {
  if (!p.meta.val.is_tensor()) return Status::error("input " + p.name + " is not a tensor with known meta");
  const TensorMeta& m = p.meta.val.tensor;
  Shape sizes;
  for (const SymInt& s : m.sizes) {
    if (s.is_symbolic()) return Status::error("input " + p.name + " has a symbolic size (" + s.expr + ")");
    sizes.push_back(s.value);
  }
  auto dt = dtype_from_name(m.dtype);
  if (!dt) return Status::error("input " + p.name + ": unknown dtype " + m.dtype);
  std::vector<float> v(size_t(shape_numel(sizes)));
  for (float& x : v) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    double u = double(seed >> 11) / double(1ull << 53);
    x = is_floating(*dt) ? float(2 * u - 1) : float(int(u * 3));
  }
  return Tensor::from_vector(v, sizes).to(*dt);
}

// The graph returning every tensor-valued call node, and those nodes' names.
Graph widen_outputs(const Graph& g, std::vector<std::string>& names) {
  Graph w = g;
  std::vector<Arg> outs;
  for (NodeId i = 0; i < NodeId(w.size()); ++i) {
    const Node& n = w[i];
    if (n.op != OpKind::CallFunction || !n.meta.val.is_tensor()) continue;
    outs.push_back(Arg::node(i));
    names.push_back(n.name);
  }
  for (Node& n : w.nodes)
    if (n.op == OpKind::Output) {
      n.args = {Arg::tuple(outs)};
      n.meta.output_descs.clear();
    }
  return w;
}

Expected<std::map<std::string, Tensor>> run_widened(const Graph& g, const std::vector<Value>& inputs) {
  std::vector<std::string> names;
  Graph w = widen_outputs(g, names);
  auto out = pipeline::run_aten_graph(w, inputs);
  if (!out) return out.status();
  std::map<std::string, Tensor> values;
  for (size_t i = 0; i < names.size() && i < out->size(); ++i)
    if ((*out)[i].is_tensor()) values[names[i]] = (*out)[i].to_tensor();
  return values;
}

void compare(const Tensor& got, const Tensor& ref, double& abs, double& rel) {
  if (got.sizes() != ref.sizes()) return;
  Tensor a = got.to(DType::Float64).contiguous(), b = ref.to(DType::Float64).contiguous();
  const double* pa = a.data<double>();
  const double* pb = b.data<double>();
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = std::fabs(pa[i] - pb[i]);
    if (std::isnan(pa[i]) != std::isnan(pb[i])) d = std::numeric_limits<double>::infinity();
    if (!std::isnan(d)) worst = std::max(worst, d);
    if (std::isfinite(pb[i])) scale = std::max(scale, std::fabs(pb[i]));
  }
  abs = worst;
  rel = worst / std::max(scale, 1e-30);
  if (worst == 0) rel = 0;
}

}  // namespace

Expected<NumericsResult> measure_numerics(const Graph& g, double tolerance, const std::atomic<bool>* cancel) {
  auto stop = [&] { return cancel && cancel->load(); };
  std::vector<Value> inputs32, inputs64;
  uint64_t seed = 0x4b696c6e;
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    auto t = make_input(n, seed);
    if (!t) return t.status();
    inputs32.push_back(*t);
    inputs64.push_back(is_floating(t->dtype()) ? t->to(DType::Float64) : *t);
  }
  NumericsResult r;
  r.tolerance = tolerance;
  // The fp64 reference: the same graph with widened inputs (ops that take an
  // explicit dtype keep theirs, as PyTorch's fp64 reference does).
  auto ref = run_widened(g, inputs64);
  if (!ref) return Status::error("the float64 reference run failed: " + ref.status().message());
  if (stop()) return Status::error("cancelled");
  std::map<std::string, Tensor> rung[kRungs];
  if (auto e = run_widened(g, inputs32)) rung[0] = std::move(*e);
  else r.notes.push_back(std::string("eager: ") + e.status().message());
  if (stop()) return Status::error("cancelled");
  pipeline::CompileResult compiled;
  try {
    compiled = pipeline::compile(g, {});
  } catch (const std::exception& e) {
    compiled.status = Status::error(e.what());
  }
  if (!compiled.status.ok()) {
    r.notes.push_back("decomp_eager, kiln: the graph passes failed: " + compiled.status.message());
  } else {
    bool has_constants = false;
    for (const Node& n : compiled.graph.nodes) has_constants |= n.op == OpKind::GetAttr;
    if (has_constants) r.notes.push_back("decomp_eager: folded constants are not re-run here");
    else if (auto d = run_widened(compiled.graph, inputs32)) rung[1] = std::move(*d);
    else r.notes.push_back(std::string("decomp_eager: ") + d.status().message());
    if (stop()) return Status::error("cancelled");
    runtime::CompileOptions co;
    co.fuse = false;
    auto code = runtime::CompiledGraph::compile(compiled.graph, co, compiled.constants.all());
    if (!code) {
      r.notes.push_back("kiln: " + code.status().message());
    } else {
      std::vector<Tensor> ts;
      for (const Value& v : inputs32) ts.push_back(v.to_tensor());
      if (auto k = (*code)->run_with_intermediates(ts)) rung[2] = std::move(*k);
      else r.notes.push_back("kiln: " + k.status().message());
    }
  }
  for (NodeId i = 0; i < NodeId(g.size()); ++i) {
    const Node& n = g[i];
    auto it = ref->find(n.name);
    if (it == ref->end()) continue;
    NodeNumerics row;
    row.node = i;
    row.name = n.name;
    row.target = n.target;
    for (int k = 0; k < kRungs; ++k) {
      auto v = rung[k].find(n.name);
      if (v != rung[k].end()) compare(v->second, it->second, row.abs[k], row.rel[k]);
    }
    double w = row.worst_rel();
    if (r.first_divergent < 0 && !std::isnan(w) && w > tolerance) r.first_divergent = int(r.rows.size());
    r.rows.push_back(std::move(row));
  }
  return r;
}

}  // namespace kiln::viewer
