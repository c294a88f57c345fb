#include "compiler/pipeline/region_backends.h"

#include <memory>

#include "compiler/decomp/decompose.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/to_aten.h"
#include "core/python/torch_bridge.h"
#include "core/python/vm.h"

namespace kiln::pipeline {

namespace {

// One entry's lowered graph, made on its first run and kept.
struct Lowered {
  bool tried = false;
  std::shared_ptr<Graph> graph;  // null when the lowering failed
};

std::vector<py::Value> run_lowered(py::VM& vm, const capture::RegionResult& region, const std::vector<py::Value>& inputs,
                                   Lowered& lowered, bool decompose, const std::string& compile_id, const std::string& backend) {
  if (!lowered.tried) {
    lowered.tried = true;
    // The lowering records the sizes and numbers of the traced call: a region
    // with symbolic sizes or number inputs runs as the eager backend does.
    bool symbolic = false;
    for (const Node& n : region.graph.nodes) {
      if (n.op != OpKind::Placeholder) continue;
      if (!n.meta.val.is_tensor()) symbolic = true;
      for (const SymInt& d : n.meta.val.tensor.sizes) symbolic |= d.is_symbolic();
    }
    if (symbolic) return capture::run_graph(vm, region, inputs);
    Expected<Graph> g = lower_to_aten(vm, region);
    // Training-mode batch norm updates its running statistics inside the
    // kernel; its decomposition is functional and would drop that update
    // (until functionalization returns them), so such regions are not decomposed.
    bool writes_inside_kernel = false;
    if (g.ok())
      for (const Node& n : g->nodes)
        if (n.target.find("batch_norm") != std::string::npos && n.args.size() > 5 && n.args[5].kind == Arg::Kind::Bool && n.args[5].b)
          writes_inside_kernel = true;
    if (g.ok() && decompose && writes_inside_kernel)
      vm.write_err("W kiln " + backend + ": [" + compile_id + "] not decomposed: training-mode batch norm updates its running statistics in place\n");
    else if (g.ok() && decompose)
      g = decomp::decompose(*g);
    if (g.ok()) lowered.graph = std::make_shared<Graph>(std::move(*g));
    else vm.write_err("W kiln " + backend + ": [" + compile_id + "] runs with the eager kernels: " + g.status().message() + "\n");
  }
  if (!lowered.graph) return capture::run_graph(vm, region, inputs);
  std::vector<Value> args;
  for (const py::Value& v : inputs) {
    if (v.is(py::ObjKind::Tensor)) args.emplace_back(v.as<py::TensorObj>()->t);
    else if (v.is_int()) args.emplace_back(v.as_int());
    else if (v.is_float()) args.emplace_back(v.as_float());
    else throw py::PyError("RuntimeError", "kiln " + backend + ": graph input of type " + py::type_name(v));
  }
  Expected<std::vector<Value>> r = run_aten_graph(*lowered.graph, args);
  if (!r) throw py::PyError("RuntimeError", "kiln " + backend + ": [" + compile_id + "] " + r.status().message());
  // The lowering made in-place writes functional: write the new values back into the inputs.
  const Node& out = lowered.graph->nodes.back();
  std::vector<std::string> placeholders;
  for (const Node& n : lowered.graph->nodes)
    if (n.op == OpKind::Placeholder) placeholders.push_back(n.name);
  std::vector<py::Value> outs;
  for (size_t i = 0; i < r->size(); ++i) {
    const std::string desc = i < out.meta.output_descs.size() ? out.meta.output_descs[i] : "";
    if (desc.starts_with("mutated input ")) {
      std::string name = desc.substr(14);
      auto at = std::find(placeholders.begin(), placeholders.end(), name);
      if (at != placeholders.end() && inputs[size_t(at - placeholders.begin())].is(py::ObjKind::Tensor))
        inputs[size_t(at - placeholders.begin())].as<py::TensorObj>()->t.copy_((*r)[i].to_tensor());
      continue;
    }
    outs.push_back(py::Value(py::make<py::TensorObj>((*r)[i].to_tensor())));
  }
  return outs;
}

}  // namespace

capture::RegionRunner region_runner(py::VM& vm, const std::string& backend, const std::string& compile_id) {
  if (backend != "aot_eager" && backend != "decomp_eager") return nullptr;
  auto lowered = std::make_shared<Lowered>();
  bool decompose = backend == "decomp_eager";
  py::VM* vmp = &vm;
  return [vmp, lowered, decompose, compile_id, backend](const capture::RegionResult& region, const std::vector<py::Value>& inputs) {
    return run_lowered(*vmp, region, inputs, *lowered, decompose, compile_id, backend);
  };
}

}  // namespace kiln::pipeline
