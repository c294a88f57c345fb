#include "session/numerics.h"

#include <algorithm>
#include <functional>
#include <map>

#include "compiler/passes/input_writes.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/pipeline/run_region.h"
#include "compiler/runtime/compiled_graph.h"
#include "core/ops/registry.h"
#include "core/ops/value.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"
#include "minifier/repro.h"

namespace kiln::session {

const char* rung_name(int rung) {
  static const char* names[kRungs] = {"eager", "aot_eager", "decomp_eager", "kiln"};
  return rung >= 0 && rung < kRungs ? names[rung] : "?";
}

double NodeNumerics::worst_rel() const {
  double w = std::numeric_limits<double>::quiet_NaN();
  for (double r : rel)
    if (!std::isnan(r) && (std::isnan(w) || r > w)) w = r;
  return w;
}

int64_t NodeNumerics::elements() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

bool NodeNumerics::over(int rung) const { return rung >= 0 && rung < kRungs && errors[rung].measured && errors[rung].over > 0; }

int NodeNumerics::worst_rung() const {
  int best = -1;
  for (int k = 0; k < kRungs; ++k) {
    if (!errors[k].measured) continue;
    if (best < 0 || errors[k].over > errors[best].over ||
        (errors[k].over == errors[best].over && errors[k].max_error > errors[best].max_error))
      best = k;
  }
  return best;
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

// The first call the eager kernels cannot run (kNoNode: none), such as a prims
// op Kiln has no kernel for.
NodeId first_unrunnable(const Graph& g) {
  for (NodeId i = 0; i < NodeId(g.size()); ++i) {
    const Node& n = g[i];
    if (n.op != OpKind::CallFunction || n.target == "operator.getitem") continue;
    if (op_registry().find(n.target) || pipeline::inplace_functional_twin(n.target) || pipeline::is_out_overload(n.target))
      continue;
    return i;
  }
  return kNoNode;
}

// `g` cut before node `stop`: every placeholder and the nodes before it, so
// what comes before an op Kiln cannot run is still measured. Nodes keep their
// ids (FX graphs list placeholders first); widen_outputs fills the output.
Graph prefix_before(const Graph& g, NodeId stop) {
  Graph p = g;
  p.nodes.resize(size_t(stop));
  for (NodeId i = stop; i < NodeId(g.size()); ++i)
    if (g[i].op == OpKind::Placeholder) p.add(g[i]);
  // Returning every value keeps the kiln rung's dead-code elimination from sweeping the prefix away.
  std::vector<Arg> values;
  for (NodeId i = 0; i < stop; ++i)
    if (p[i].op == OpKind::CallFunction && p[i].meta.val.is_tensor()) values.push_back(Arg::node(i));
  Node out;
  out.op = OpKind::Output;
  out.name = out.target = "output";
  out.args = {Arg::tuple(std::move(values))};
  p.add(std::move(out));
  return p;
}

// The node a run_aten_graph error names ("node add_3 (aten::add.Tensor): ..."); kNoNode when none.
NodeId failing_node(const Graph& g, const std::string& message) {
  if (!message.starts_with("node ")) return kNoNode;
  size_t end = message.find(" (");
  if (end == std::string::npos) return kNoNode;
  NodeId id = g.find(message.substr(5, end - 5));
  return id != kNoNode && g[id].op == OpKind::CallFunction ? id : kNoNode;
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

Expected<std::map<std::string, Tensor>> run_widened(const Graph& g, const std::vector<Value>& inputs,
                                                    const std::atomic<bool>* cancel) {
  std::vector<std::string> names;
  Graph w = widen_outputs(g, names);
  auto out = pipeline::run_aten_graph(w, inputs, cancel);
  if (!out) return out.status();
  std::map<std::string, Tensor> values;
  for (size_t i = 0; i < names.size() && i < out->size(); ++i)
    if ((*out)[i].is_tensor()) values[names[i]] = (*out)[i].to_tensor();
  return values;
}

// `g` through the named passes of the pipeline only, in the pipeline's order.
Expected<Graph> run_passes(const Graph& g, const std::vector<std::string>& keep, const std::atomic<bool>* cancel) {
  pipeline::RegionOptions ro;
  for (const std::string& p : pipeline::graph_pass_pipeline())
    if (std::find(keep.begin(), keep.end(), p) == keep.end()) ro.disabled_passes.push_back(p);
  ro.codegen = pipeline::RegionOptions::Codegen::None;
  ro.cancel = cancel;
  pipeline::RegionRun run = pipeline::run_region(pipeline::RegionInput::single(g), ro);
  if (!run.status.ok()) return Status::error("the passes failed: " + run.status.message());
  return std::move(run.parts.at(0).passes.graph);
}

}  // namespace

// The graph without its epilogue writes into inputs (an AOT graph's
// `copy_(num_batches_tracked, add)`, compiler/passes/input_writes.h): they
// change no value the table shows, and the code generator lowers no in-place op.
Graph without_input_writes(Graph g) {
  std::vector<bool> remove(g.size(), false);
  bool any = false;
  for (const pipeline::InputWrite& w : pipeline::epilogue_input_writes(g)) remove[size_t(w.copy)] = any = true;
  if (any) remove_nodes(g, remove);
  return g;
}

Expected<NumericsResult> measure_numerics(const Graph& shown, double tolerance, const std::atomic<bool>* cancel) {
  auto stop = [&] { return cancel && cancel->load(); };
  Graph g = shown;  // the same nodes, in the same order, as every rung can run them
  pipeline::make_runnable_on_cpu(g);
  std::vector<std::string> notes;
  // A repro's graph carries no annotations beyond its placeholders (load_args),
  // and dumps none for tuple results: the values every rung compares, and the
  // sizes the code generator reads, follow through the meta functions. Those
  // throw on what they refuse: a note, as a failed pass is.
  try {
    minify::propagate_meta_vals(g);
  } catch (const std::exception& e) {
    notes.push_back(std::string("some nodes' sizes are not known (") + e.what() + ") and are not measured");
  }
  std::string cut;
  if (NodeId stop = first_unrunnable(g); stop != kNoNode) {
    cut = "measured the nodes before " + g[stop].name + " (" + g[stop].target +
          "), which Kiln's eager kernels do not run; the nodes after it are not measured";
    g = prefix_before(g, stop);
  }
  std::vector<Value> inputs32, inputs64;
  uint64_t seed = 0x4b696c6e;
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    auto t = make_input(n, seed);
    if (!t) return t.status();
    inputs32.push_back(*t);
    inputs64.push_back(is_floating(t->dtype()) ? t->to(DType::Float64) : *t);
  }
  // Every run gets its own copies: a graph that writes an input (a dump's
  // `copy_(num_batches_tracked, add)`) would otherwise feed the next run a
  // changed value, and the integer inputs are shared by both widths.
  auto fresh = [](const std::vector<Value>& in) {
    std::vector<Value> out;
    for (const Value& v : in) out.push_back(v.is_tensor() ? Value(v.to_tensor().clone()) : v);
    return out;
  };
  NumericsResult r;
  r.tolerance = tolerance;
  r.notes = std::move(notes);
  if (!cut.empty()) r.notes.push_back(cut);
  // The fp64 reference: the same graph with widened inputs (ops that take an
  // explicit dtype keep theirs, as PyTorch's fp64 reference does).
  auto ref = run_widened(g, fresh(inputs64), cancel);
  if (stop()) return Status::error("cancelled");
  // A node the kernels refuse (an argument form they do not support): measure what comes before it.
  for (int retry = 0; !ref && retry < 8; ++retry) {
    NodeId bad = failing_node(g, ref.status().message());
    if (bad == kNoNode) break;
    r.notes.push_back("measured the nodes before " + g[bad].name + ", which failed on the eager kernels: " +
                      ref.status().message());
    g = prefix_before(g, bad);
    ref = run_widened(g, fresh(inputs64), cancel);
  }
  if (!ref) return Status::error("the float64 reference run failed: " + ref.status().message());
  if (stop()) return Status::error("cancelled");
  std::map<std::string, Tensor> rung[kRungs];
  auto run_rung = [&](int k, const Graph& graph) {
    bool has_constants = false;
    for (const Node& n : graph.nodes) has_constants |= n.op == OpKind::GetAttr;
    if (has_constants) r.notes.push_back(std::string(rung_name(k)) + ": graphs with get_attr constants are not run here");
    else if (auto v = run_widened(graph, fresh(inputs32), cancel)) rung[k] = std::move(*v);
    else r.notes.push_back(std::string(rung_name(k)) + ": " + v.status().message());
  };
  run_rung(kEagerRung, g);
  if (stop()) return Status::error("cancelled");
  // aot_eager and decomp_eager: the first passes of the pipeline alone, as
  // AOTAutograd (functionalization) and Inductor's decomposition table are
  // the first things a graph meets in PyTorch.
  for (int k : {kAotEagerRung, kDecompEagerRung}) {
    auto passed = run_passes(g,
                             k == kAotEagerRung ? std::vector<std::string>{"functionalize"}
                                                : std::vector<std::string>{"functionalize", "decompose"},
                             cancel);
    if (passed) run_rung(k, *passed);
    else r.notes.push_back(std::string(rung_name(k)) + ": " + passed.status().message());
    if (stop()) return Status::error("cancelled");
  }
  // Kiln: every pass and the CPU code, unfused so each node's value exists.
  // The code generator reads extern output sizes from the values annotated
  // above (dumps print none for tuple results, convolution_backward's).
  pipeline::RegionOptions ro;
  ro.codegen = pipeline::RegionOptions::Codegen::Machine;
  ro.cpu.fuse = false;
  ro.cancel = cancel;
  pipeline::RegionRun run = pipeline::run_region(pipeline::RegionInput::single(without_input_writes(g)), ro);
  if (run.cancelled) return Status::error("cancelled");
  const pipeline::RegionPart* part = run.parts.empty() ? nullptr : &run.parts.front();
  if (!part || !part->passes.status.ok()) {
    r.notes.push_back("kiln: the graph passes failed: " + (part ? part->passes.status.message() : run.status.message()));
  } else if (!part->code) {
    r.notes.push_back("kiln: " + part->codegen_status.message());
  } else {
    std::vector<Tensor> ts;
    for (const Value& v : fresh(inputs32)) ts.push_back(v.to_tensor());
    if (auto k = part->code->run_with_intermediates(ts)) rung[kKilnRung] = std::move(*k);
    else r.notes.push_back("kiln: " + k.status().message());
  }
  for (NodeId i = 0; i < NodeId(g.size()); ++i) {
    const Node& n = g[i];
    auto it = ref->find(n.name);
    if (it == ref->end()) continue;
    NodeNumerics row;
    row.node = i;
    row.name = n.name;
    row.target = shown[i].target;  // as the graph says it, before make_runnable_on_cpu
    // The graph's dtype (the reference ran widened to float64).
    row.dtype = std::string(dtype_name(it->second.dtype()));
    if (n.meta.val.is_tensor())
      if (auto d = dtype_from_name(n.meta.val.tensor.dtype)) row.dtype = std::string(dtype_name(*d));
    row.sizes = it->second.sizes();
    for (int k = 0; k < kRungs; ++k) {
      auto v = rung[k].find(n.name);
      if (v == rung[k].end()) continue;
      TensorErrors e = compare_tensors(v->second, it->second, tolerance);
      if (!e.measured) continue;
      row.abs[k] = e.max_abs;
      row.rel[k] = e.exact ? e.share() : e.max_error;
      row.errors[k] = std::move(e);
    }
    if (r.first_divergent < 0) {
      for (int k = kRungs - 1; k >= 0; --k)
        if (row.over(k)) r.first_divergent_rung = k;
      if (r.first_divergent_rung >= 0) r.first_divergent = int(r.rows.size());
    }
    r.rows.push_back(std::move(row));
  }
  // Nothing compared is no verdict: say so rather than "every node within".
  if (r.rows.empty()) {
    std::string why = "no node of the graph has a known tensor value to measure";
    for (const std::string& note : r.notes) why += "; " + note;
    return Status::error(why);
  }
  return r;
}

}  // namespace kiln::session
