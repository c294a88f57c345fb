#include "compiler/pipeline/region_backends.h"

#include <memory>

#include "compiler/aot/joint.h"
#include "compiler/aot/partition.h"
#include "compiler/decomp/decompose.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/to_aten.h"
#include "core/python/autograd.h"
#include "core/python/torch_bridge.h"
#include "core/python/vm.h"

namespace kiln::pipeline {

namespace {

// The forward and backward graphs of a region run while gradients are
// recorded (AOTAutograd's compiled function), made on the first such run.
struct Training {
  bool tried = false;
  std::vector<bool> requires_grad;  // per placeholder, as when it was made
  std::shared_ptr<Graph> forward, backward;  // null when autodiff failed
  size_t num_forward_outputs = 0;
  std::vector<size_t> tangent_of_output;  // per tangent: its forward output
};

// One entry's lowered graph, made on its first run and kept.
struct Lowered {
  bool tried = false;
  std::shared_ptr<Graph> graph;  // null when the lowering failed
  bool decomposed = false;       // the training graphs are decomposed too
  Training training;
};

// The backward of one run of a compiled region: the backward graph on the
// tensors the forward saved, as PyTorch's CompiledFunctionBackward.
class RegionBackward : public py::autograd::Node {
 public:
  Grads apply(const Grads& grad_outputs) override {
    std::vector<Value> args(saved.begin(), saved.end());
    for (size_t k = 0; k < tangent_of_output.size(); ++k) {
      size_t out = tangent_of_output[k];
      int node_output = out < node_output_of.size() ? node_output_of[out] : -1;
      if (node_output >= 0 && size_t(node_output) < grad_outputs.size() && grad_outputs[size_t(node_output)])
        args.emplace_back(*grad_outputs[size_t(node_output)]);
      else
        args.emplace_back(Tensor::zeros(forward_output_meta[out].sizes(), forward_output_meta[out].dtype()));
    }
    Expected<std::vector<Value>> r = run_aten_graph(*backward, args);
    if (!r) throw Error("the backward graph of [" + compile_id + "]: " + r.status().message());
    Grads grads;
    for (size_t i = 0; i < r->size(); ++i)
      if (i < requires_grad.size() && requires_grad[i])
        grads.push_back((*r)[i].is_tensor() ? std::optional<Tensor>((*r)[i].to_tensor()) : std::nullopt);
    return grads;
  }
  void release() override { saved.clear(); }

  std::string compile_id;
  std::shared_ptr<Graph> backward;
  std::vector<Tensor> saved;
  std::vector<bool> requires_grad;             // per primal
  std::vector<size_t> tangent_of_output;       // per tangent: its forward output
  std::vector<int> node_output_of;             // per forward output: this node's output, or -1
  std::vector<Tensor> forward_output_meta;     // per forward output: shape and dtype for a zero tangent
  size_t num_outputs_given = 0;
};

// Autodiff of the lowered graph: the joint graph, split by the default
// partitioner (decomposed as well for decomp_eager). Failures are warnings:
// the region then runs its torch-level graph, which eager autograd records.
void make_training(py::VM& vm, const Graph& lowered, Training& t, bool decompose, const std::string& compile_id,
                   const std::string& backend) {
  t.tried = true;
  aot::JointOptions jo;
  jo.requires_grad = t.requires_grad;
  Expected<aot::JointGraph> joint = aot::build_joint(lowered, jo);
  if (!joint.ok()) {
    vm.write_err("W kiln " + backend + ": [" + compile_id + "] backward runs eagerly: " + joint.status().message() + "\n");
    return;
  }
  aot::Partition part = aot::default_partition(*joint);
  if (decompose) {
    Expected<Graph> f = decomp::decompose(part.forward);
    Expected<Graph> b = decomp::decompose(part.backward);
    if (!f.ok() || !b.ok()) {
      vm.write_err("W kiln " + backend + ": [" + compile_id + "] backward runs eagerly: " +
                   (f.ok() ? b.status() : f.status()).message() + "\n");
      return;
    }
    part.forward = std::move(*f);
    part.backward = std::move(*b);
  }
  t.forward = std::make_shared<Graph>(std::move(part.forward));
  t.backward = std::make_shared<Graph>(std::move(part.backward));
  t.num_forward_outputs = part.num_forward_outputs;
  t.tangent_of_output = joint->tangent_of_output;
}

std::vector<bool> requires_grad_flags(py::VM& vm, const std::vector<py::Value>& inputs) {
  std::vector<bool> rg;
  bool any = false;
  for (const py::Value& v : inputs) {
    bool r = vm.grad_enabled && v.is(py::ObjKind::Tensor) && v.as<py::TensorObj>()->requires_grad;
    rg.push_back(r);
    any |= r;
  }
  return any ? rg : std::vector<bool>{};
}

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
    else if (g.ok() && decompose) {
      g = decomp::decompose(*g);
      lowered.decomposed = true;
    }
    if (g.ok()) lowered.graph = std::make_shared<Graph>(std::move(*g));
    else vm.write_err("W kiln " + backend + ": [" + compile_id + "] runs with the eager kernels: " + g.status().message() + "\n");
  }
  if (!lowered.graph) return capture::run_graph(vm, region, inputs);
  std::vector<bool> requires_grad = requires_grad_flags(vm, inputs);
  Training& training = lowered.training;
  if (!requires_grad.empty() && (!training.tried || training.requires_grad != requires_grad)) {
    training = Training{};
    training.requires_grad = requires_grad;
    make_training(vm, *lowered.graph, training, lowered.decomposed, compile_id, backend);
  }
  const bool train = !requires_grad.empty();
  if (train && !training.forward) return capture::run_graph(vm, region, inputs);
  const Graph& graph = train ? *training.forward : *lowered.graph;
  std::vector<Value> args;
  for (const py::Value& v : inputs) {
    if (v.is(py::ObjKind::Tensor)) args.emplace_back(v.as<py::TensorObj>()->t);
    else if (v.is_int()) args.emplace_back(v.as_int());
    else if (v.is_float()) args.emplace_back(v.as_float());
    else throw py::PyError("RuntimeError", "kiln " + backend + ": graph input of type " + py::type_name(v));
  }
  Expected<std::vector<Value>> r = run_aten_graph(graph, args);
  if (!r) throw py::PyError("RuntimeError", "kiln " + backend + ": [" + compile_id + "] " + r.status().message());
  // The lowering made in-place writes functional: write the new values back into the inputs.
  const Node& out = lowered.graph->nodes.back();
  std::vector<std::string> placeholders;
  for (const Node& n : lowered.graph->nodes)
    if (n.op == OpKind::Placeholder) placeholders.push_back(n.name);
  const size_t num_outputs = train ? training.num_forward_outputs : r->size();
  std::shared_ptr<RegionBackward> node;
  if (train) {
    node = std::make_shared<RegionBackward>();
    node->name = "CompiledFunctionBackward";
    node->compile_id = compile_id;
    node->backward = training.backward;
    node->requires_grad = requires_grad;
    node->tangent_of_output = training.tangent_of_output;
    for (size_t i = num_outputs; i < r->size(); ++i) node->saved.push_back((*r)[i].to_tensor());
    for (size_t i = 0; i < requires_grad.size(); ++i)
      if (requires_grad[i]) node->next.push_back(py::autograd::edge_of(inputs[i].as<py::TensorObj>()));
  }
  std::vector<py::Value> outs;
  for (size_t i = 0; i < num_outputs; ++i) {
    if (node) {
      node->forward_output_meta.push_back((*r)[i].to_tensor());
      node->node_output_of.push_back(-1);
    }
    const std::string desc = i < out.meta.output_descs.size() ? out.meta.output_descs[i] : "";
    if (desc.starts_with("mutated input ")) {
      std::string name = desc.substr(14);
      auto at = std::find(placeholders.begin(), placeholders.end(), name);
      if (at != placeholders.end() && inputs[size_t(at - placeholders.begin())].is(py::ObjKind::Tensor))
        inputs[size_t(at - placeholders.begin())].as<py::TensorObj>()->t.copy_((*r)[i].to_tensor());
      continue;
    }
    auto result = py::make<py::TensorObj>((*r)[i].to_tensor());
    if (node && is_floating(result->t.dtype())) {
      node->node_output_of.back() = int(node->num_outputs_given++);
      py::autograd::set_history(result.get(), node, uint32_t(node->node_output_of.back()));
      result->grad_fn = node->name;
    }
    outs.push_back(py::Value(result));
  }
  if (node) node->num_outputs = node->num_outputs_given;
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
