#include "compiler/pipeline/region_backends.h"

#include <algorithm>
#include <memory>

#include "compiler/aot/joint.h"
#include "compiler/aot/partition.h"
#include "compiler/decomp/decompose.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/cuda_region.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/runtime/compiled_graph.h"
#include "compiler/pipeline/to_aten.h"
#include "compiler/pipeline/run_region.h"
#include "compiler/pipeline/training_split.h"
#include "core/python/autograd.h"
#include "core/python/torch_bridge.h"
#include "core/python/vm.h"

namespace kiln::pipeline {

namespace {

// A graph as code (CPU or GPU): host tensors in, host tensors out.
using GraphCode = std::function<Expected<std::vector<Tensor>>(const std::vector<Tensor>&)>;

// Where backend kiln's code runs: the CPU, or the GPU when the region's inputs
// are on a CUDA device (or the backend is kiln-cuda).
struct Target {
  bool cuda = false;
  CudaRegionCode::Options gpu;  // torch.compile's mode and torch.backends' switches
};

// A torch.backends switch (torch.backends.cudnn.allow_tf32) as the program left it.
bool backend_flag(py::VM& vm, const std::string& module, const char* name, bool fallback) {
  auto m = vm.module(module);
  if (!m) return fallback;
  const py::Value* v = m->dict->find_str(name);
  return v ? vm.truth(*v) : fallback;
}

// The forward and backward graphs of a region run while gradients are
// recorded (AOTAutograd's compiled function), made on the first such run.
struct Training {
  bool tried = false;
  std::vector<bool> requires_grad;  // per placeholder, as when it was made
  std::shared_ptr<Graph> forward, backward;  // null when autodiff failed
  GraphCode compiled_forward, compiled_backward;  // backend kiln
  size_t num_forward_outputs = 0;
  std::vector<size_t> tangent_of_output;  // per tangent: its forward output
};

// One entry's lowered graph, made on its first run and kept.
struct Lowered {
  bool tried = false;
  std::shared_ptr<Graph> graph;  // null when the lowering failed
  std::shared_ptr<Graph> aten;   // backend kiln on the GPU: the graph before decomposition, for training
  bool decomposed = false;       // the training graphs are decomposed too
  Target target;
  std::string device = "cpu";    // where the region's outputs are
  GraphCode compiled;            // backend kiln: the inference graph as code
  Training training;
  bool warned_grad_mode = false;
};

// The runtimes return one tensor per entry of the graph's output, an
// undefined one where the graph returns None (a primal without a gradient):
// callers index outputs by position, so a backward graph's gradients land on
// their own parameters.
std::vector<Value> place_compiled_outputs(const std::vector<Tensor>& tensors) {
  std::vector<Value> values;
  for (const Tensor& t : tensors) values.push_back(t.defined() ? Value(t) : Value());
  return values;
}

// Runs a graph as code when the kiln backend compiled it, else on the eager kernels.
Expected<std::vector<Value>> run_graph(const Graph& g, const GraphCode& compiled, const std::vector<Value>& args) {
  if (!compiled) return run_aten_graph(g, args);
  std::vector<Tensor> tensors;
  for (const Value& v : args) {
    if (!v.is_tensor()) return Status::error("a compiled graph takes tensors only");
    tensors.push_back(v.to_tensor());
  }
  Expected<std::vector<Tensor>> r = compiled(tensors);
  if (!r) return r.status();
  return place_compiled_outputs(*r);
}

// Backend kiln: the graph through every graph pass, then lowered, fused and
// generated as CPU or CUDA code. What cannot be compiled runs on the eager
// kernels (the graph as given), with a warning naming the region and the reason.
GraphCode compile_for_kiln(py::VM& vm, const Graph& g, const std::string& compile_id, const std::string& what,
                           const Target& target) {
  if (target.cuda) {
    Expected<std::shared_ptr<CudaRegionCode>> code = CudaRegionCode::compile(g, target.gpu);
    if (!code) {
      vm.write_err("W kiln kiln-cuda: [" + compile_id + "] " + what + " runs on the eager kernels: " +
                   code.status().message() + "\n");
      return nullptr;
    }
    if (target.gpu.reduce_overhead && !(*code)->replays())
      vm.write_err("W kiln kiln-cuda: [" + compile_id + "] " + what +
                   " is not captured into a CUDA graph: it calls kernels that run on the host\n");
    std::shared_ptr<CudaRegionCode> shared = *code;
    return [shared](const std::vector<Tensor>& inputs) { return shared->run(inputs); };
  }
  runtime::CompileOptions options;
  options.cancel = vm.options().cancel;  // a cancelled program stops inside LLVM too
  Expected<std::shared_ptr<runtime::CompiledGraph>> code = compile_to_cpu(g, options);
  if (!code) {
    vm.write_err("W kiln kiln: [" + compile_id + "] " + what + " runs on the eager kernels: " + code.status().message() + "\n");
    return nullptr;
  }
  std::shared_ptr<const runtime::CompiledGraph> shared = *code;
  return [shared](const std::vector<Tensor>& inputs) { return shared->run(inputs); };
}

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
    Expected<std::vector<Value>> r = run_graph(*backward, compiled_backward, args);
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
  GraphCode compiled_backward;
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
void make_training(py::VM& vm, const Graph& decomposed, const Graph* undecomposed, Training& t, bool decompose,
                   const std::string& compile_id, const std::string& backend, const Target& target) {
  const bool kiln = backend == "kiln" || backend == "kiln-cuda";
  t.tried = true;
  // On the GPU, attention written out by hand trains as the fused kernels.
  std::optional<Graph> fused = target.cuda && undecomposed && attention_fusion_for_training_enabled()
                                   ? fuse_attention_for_gpu_training(*undecomposed)
                                   : std::nullopt;
  const Graph& lowered = fused ? *fused : decomposed;
  const std::vector<std::string> keep_whole = fused ? cuda_whole_ops() : std::vector<std::string>{};
  TrainingOptions to;
  to.requires_grad = t.requires_grad;  // grad mode was checked by the caller: the region does not change it
  // The joint graph and its split only: the graph passes and code come per half below.
  RegionOptions ro;
  ro.graph_passes = false;
  ro.codegen = RegionOptions::Codegen::None;
  RegionRun split = run_region(RegionInput::aten(lowered, to), ro);
  if (!split.trained) {
    const std::string why = split.inference_because.empty() ? split.status.message() : split.inference_because;
    vm.write_err("W kiln " + backend + ": [" + compile_id + "] backward runs eagerly: " + why + "\n");
    return;
  }
  aot::Partition& part = split.partition;
  const aot::JointGraph* joint = &split.joint;
  if (decompose) {
    Expected<Graph> f = decomp::decompose(part.forward, keep_whole);
    Expected<Graph> b = decomp::decompose(part.backward, keep_whole);
    if (!f.ok() || !b.ok()) {
      vm.write_err("W kiln " + backend + ": [" + compile_id + "] backward runs eagerly: " +
                   (f.ok() ? b.status() : f.status()).message() + "\n");
      return;
    }
    part.forward = std::move(*f);
    part.backward = std::move(*b);
  }
  // A region left undecomposed (training batch norm) stays on the eager kernels.
  if (kiln && decompose) {
    t.compiled_forward = compile_for_kiln(vm, part.forward, compile_id, "the forward graph", target);
    t.compiled_backward = compile_for_kiln(vm, part.backward, compile_id, "the backward graph", target);
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
                                   Lowered& lowered, bool decompose, const std::string& compile_id, const std::string& backend,
                                   const std::string& mode) {
  if (!lowered.tried) {
    lowered.tried = true;
    for (const py::Value& v : inputs)
      if (v.is(py::ObjKind::Tensor) && v.as<py::TensorObj>()->device.starts_with("cuda")) {
        lowered.device = v.as<py::TensorObj>()->device;
        break;
      }
    const bool kiln = backend == "kiln" || backend == "kiln-cuda";
    lowered.target.cuda = backend == "kiln-cuda" || (kiln && lowered.device.starts_with("cuda"));
    lowered.target.gpu = CudaRegionCode::options_for_mode(mode);
    lowered.target.gpu.conv_tf32 = backend_flag(vm, "torch.backends.cudnn", "allow_tf32", true);
    lowered.target.gpu.matmul_tf32 = backend_flag(vm, "torch.backends.cuda.matmul", "allow_tf32", false);
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
    // kernel. The lowering records it functionally (to_aten.cpp), the new
    // statistics returned as mutated inputs; a form it did not recognise would
    // lose the update in the decomposition, so such a region is not decomposed.
    bool writes_inside_kernel = false;
    if (g.ok())
      for (const Node& n : g->nodes)
        if (n.target.find("batch_norm") != std::string::npos && n.target.find("_functional") == std::string::npos &&
            n.args.size() > 5 && n.args[5].kind == Arg::Kind::Bool && n.args[5].b && n.args[3].is_node())
          writes_inside_kernel = true;
    if (g.ok() && decompose && writes_inside_kernel)
      vm.write_err("W kiln " + backend + ": [" + compile_id + "] not decomposed" + (kiln ? std::string(" and runs on the eager kernels") : std::string()) +
                   ": training-mode batch norm updates its running statistics in place\n");
    else if (g.ok() && decompose) {
      if (kiln && lowered.target.cuda && attention_fusion_for_training_enabled()) lowered.aten = std::make_shared<Graph>(*g);
      g = decomp::decompose(*g);
      lowered.decomposed = true;
    }
    if (g.ok() && kiln && lowered.decomposed) lowered.compiled = compile_for_kiln(vm, *g, compile_id, "the graph", lowered.target);
    if (g.ok()) lowered.graph = std::make_shared<Graph>(std::move(*g));
    else vm.write_err("W kiln " + backend + ": [" + compile_id + "] runs with the eager kernels: " + g.status().message() + "\n");
  }
  if (!lowered.graph) return capture::run_graph(vm, region, inputs);
  std::vector<bool> requires_grad = requires_grad_flags(vm, inputs);
  // A no_grad block inside the region: AOT autodiff of the whole graph would
  // give gradients to what the block computed. The torch-level graph runs
  // instead, each op under its own grad mode, which eager autograd records.
  // Entered with grad mode off (a break inside the block), the region may turn
  // it on, so the inputs' flags decide, not the mode at entry.
  const bool input_requires_grad = std::any_of(inputs.begin(), inputs.end(), [](const py::Value& v) {
    return v.is(py::ObjKind::Tensor) && v.as<py::TensorObj>()->requires_grad;
  });
  if (input_requires_grad && region.changes_grad_mode()) {
    if (!lowered.warned_grad_mode)
      vm.write_err("W kiln " + backend + ": [" + compile_id +
                   "] runs its torch-level graph: grad mode changes inside the region (torch.no_grad)\n");
    lowered.warned_grad_mode = true;
    return capture::run_graph(vm, region, inputs);
  }
  Training& training = lowered.training;
  if (!requires_grad.empty() && (!training.tried || training.requires_grad != requires_grad)) {
    training = Training{};
    training.requires_grad = requires_grad;
    make_training(vm, *lowered.graph, lowered.aten.get(), training, lowered.decomposed, compile_id, backend,
                  lowered.target);
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
  const GraphCode& compiled = train ? training.compiled_forward : lowered.compiled;
  Expected<std::vector<Value>> r = run_graph(graph, compiled, args);
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
    node->compiled_backward = training.compiled_backward;
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
      {
        const Tensor& dst = inputs[size_t(at - placeholders.begin())].as<py::TensorObj>()->t;
        dst.copy_((*r)[i].to_tensor());
        py::autograd::bump_storage_version(dst.storage().get());  // a copy resident on the GPU is stale now
      }
      continue;
    }
    auto result = py::make<py::TensorObj>((*r)[i].to_tensor());
    result->device = lowered.device;
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

capture::RegionRunner region_runner(py::VM& vm, const std::string& requested, const std::string& mode,
                                    const std::string& compile_id) {
  // torch.compile's default backend, inductor, is Kiln's own code generator
  // here: on the CPU, or on the GPU for regions whose inputs are there.
  const std::string backend = requested == "inductor" ? "kiln" : requested;
  if (backend != "aot_eager" && backend != "decomp_eager" && backend != "kiln" && backend != "kiln-cuda") return nullptr;
  auto lowered = std::make_shared<Lowered>();
  // kiln decomposes as part of its graph passes (compile_for_kiln).
  bool decompose = backend == "decomp_eager" || backend == "kiln" || backend == "kiln-cuda";
  py::VM* vmp = &vm;
  return [vmp, lowered, decompose, compile_id, backend, mode](const capture::RegionResult& region,
                                                              const std::vector<py::Value>& inputs) {
    return run_lowered(*vmp, region, inputs, *lowered, decompose, compile_id, backend, mode);
  };
}

}  // namespace kiln::pipeline
