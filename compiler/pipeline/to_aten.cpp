#include "compiler/pipeline/to_aten.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "compiler/capture/capture.h"
#include "compiler/capture/graph_region.h"
#include "compiler/passes/functionalize.h"
#include "compiler/passes/op_properties.h"
#include "compiler/pipeline/emitter.h"
#include "core/python/torch_api.h"
#include "core/python/torch_api_binding.h"
#include "core/python/torch_bridge.h"
#include "core/python/vm.h"
#include "core/tensor/generator.h"
#include "core/trace/module_scopes.h"
#include "core/util/limits.h"

namespace kiln::pipeline {

namespace {


class Lowering : public torchapi::AtenObserver {
 public:
  explicit Lowering(Graph& g) : emit_(g) {}

  void add_input(const std::string& name, const Tensor& t) {
    bind(t, emit_.placeholder(name, t));
    inputs_.emplace_back(name, key_of(t));
  }
  // A symbolic size or number: a placeholder the graph passes through (its ops use the traced value).
  void add_scalar_input(const Node& n) {
    Node p;
    p.op = OpKind::Placeholder;
    p.name = p.target = n.name;
    p.meta.val = n.meta.val;
    emit_.add_node(std::move(p));
  }

  void begin_node(const std::string& torch_node, const std::vector<StackFrame>& stack) {
    emit_.set_origin(stack, {torch_node});
    current_ = torch_node;
    stack_ = stack;
  }

  void on_aten(std::string_view op, const ValueList& args, const KwargList& kwargs, const ValueList& results) override {
    if (!error_.empty()) return;
    if (updates_running_stats(op, args, kwargs)) return on_batch_norm_training(args, results);
    try {
      std::vector<EArg> eargs;
      for (const Value& a : args) eargs.push_back(to_earg(a));
      EKwargs ekw;
      for (const auto& [k, a] : kwargs) ekw.emplace_back(k, to_earg(a));
      std::vector<Var> outs = emit_.call(op, eargs, ekw);
      size_t i = 0;
      for (const Value& r : results) {
        if (r.is_tensor()) {
          if (i < outs.size()) bind(r.to_tensor(), outs[i++]);
        } else if (r.is_list()) {
          for (const Value& x : r.to_list())
            if (i < outs.size()) bind(x.to_tensor(), outs[i++]);
        }
      }
    } catch (const Error& e) {
      error_ = std::string(op) + " in " + current_ + ": " + e.what();
    }
  }

  // An in-place write into a whole tensor becomes the functional copy whose
  // result is the tensor's value from now on (functionalization as the
  // lowering goes). A write into part of a tensor (x[i] = v, a slice's copy_)
  // stays a write, aten::copy_ into the view's node: views of the storage
  // made before it stay what they are, aliases, and lower_to_aten runs the
  // functionalize pass afterwards to scatter the write into the base and
  // replay the views read later.
  void on_copy(const Tensor& dst, const Tensor& src) override {
    if (!error_.empty()) return;
    try {
      // The whole is the largest tensor known on the same storage.
      const TensorKey dkey = key_of(dst);
      bool into_part = false;
      for (const auto& [k, v] : vars_)
        if (dst.storage() && std::get<0>(k) == dst.storage().get() && k != dkey && shape_numel(std::get<2>(k)) >= dst.numel())
          into_part = true;
      Var d = var_of(dst), s = var_of(src);
      if (into_part) {
        Node write;
        write.op = OpKind::CallFunction;
        write.name = "copy_";
        write.target = "aten::copy_.default";
        write.args = {Arg::node(emit_.node(d)), Arg::node(emit_.node(s))};
        write.meta.val = Val::of_tensor(tensor_meta_of(dst));
        write.meta.stack = stack_;
        write.meta.from = {current_};
        emit_.add_node(std::move(write));
        writes_into_parts_ = true;
        // An input whose storage this is was written; its node stays the
        // input's value (functionalize makes reads of it read the new value).
        for (auto& [name, key] : inputs_)
          if (std::get<0>(key) == dst.storage().get())
            if (auto it = vars_.find(key); it != vars_.end()) mutated_[name] = it->second;
        return;
      }
      rebind_whole(dst, emit_.call1("aten::copy.default", {d, s}));
    } catch (const Error& e) {
      error_ = "copy_ in " + current_ + ": " + e.what();
    }
  }

  bool writes_into_parts() const { return writes_into_parts_; }

  // `written` is the whole of `dst` from now on. Views taken before the write
  // saw the old value: they are forgotten, so a later read derives them again
  // from the new one; a graph input written so is returned as mutated.
  void rebind_whole(const Tensor& dst, Var written) {
    const TensorKey dkey = key_of(dst);
    for (auto it = vars_.begin(); it != vars_.end();)
      it = std::get<0>(it->first) == dst.storage().get() && it->first != dkey ? vars_.erase(it) : std::next(it);
    bind(dst, written);
    for (auto& [name, key] : inputs_)
      if (key == dkey) mutated_[name] = written;
  }

  // Training-mode batch norm with running statistics writes them inside the
  // kernel, where neither the graph nor on_copy sees it.
  static bool updates_running_stats(std::string_view op, const ValueList& args, const KwargList& kwargs) {
    const bool batch_norm = op == "aten::batch_norm" || op == "aten::native_batch_norm" ||
                            op == "aten::_native_batch_norm_legit" || op == "aten::batch_norm.default" ||
                            op == "aten::native_batch_norm.default" || op == "aten::_native_batch_norm_legit.default";
    return batch_norm && kwargs.empty() && args.size() >= 8 && args[3].is_tensor() && args[4].is_tensor() &&
           args[5].is_bool() && args[5].to_bool();
  }

  // Recorded as AOTAutograd functionalizes it: _native_batch_norm_legit_functional
  // returns the statistics' new values, which become the running tensors' values
  // from here on and, for graph inputs, "mutated input" outputs.
  void on_batch_norm_training(const ValueList& args, const ValueList& results) {
    try {
      std::vector<EArg> eargs;
      for (size_t i = 0; i < 8; ++i) eargs.push_back(to_earg(args[i]));
      std::vector<Var> outs = emit_.call("aten::_native_batch_norm_legit_functional.default", eargs);
      size_t i = 0;
      for (const Value& r : results)
        if (r.is_tensor() && i < 3) bind(r.to_tensor(), outs[i++]);
      for (size_t k = 0; k < 2; ++k) rebind_whole(args[3 + k].to_tensor(), outs[3 + k]);
    } catch (const Error& e) {
      error_ = "batch_norm in " + current_ + ": " + e.what();
    }
  }

  Var var_of(const Tensor& t) {
    auto it = vars_.find(key_of(t));
    if (it != vars_.end()) return it->second;
    // A view made inside a binding without an ATen call: rebuild it from a
    // known tensor of the same storage with as_strided.
    for (const auto& [k, v] : vars_) {
      if (std::get<0>(k) != t.storage().get() || !t.storage()) continue;
      Var view = emit_.call1("aten::as_strided.default", {v, t.sizes(), t.strides(), t.storage_offset()});
      bind(t, view);
      return view;
    }
    // A constant the bindings made without an ATen call (a Python number turned into a tensor).
    if (t.dim() == 0 && !t.is_meta()) {
      Var c = emit_.call1("aten::scalar_tensor.default", {Value(t.item())}, {{"dtype", t.dtype()}});
      bind(t, c);
      return c;
    }
    KILN_FAIL("a tensor constant of shape ", torchapi::detail::shape_text(t.sizes()),
              " made without an ATen op (torch.tensor data) is not lowered yet");
  }

  // The region's outputs, then the new values of inputs the region wrote into
  // (a module's running statistics), as a functionalized AOT graph returns them.
  void output(const std::vector<py::Value>& values, std::vector<std::string>& mutated_inputs) {
    std::vector<Var> outs;
    for (const py::Value& v : values) {
      if (!v.is(py::ObjKind::Tensor)) KILN_FAIL("a graph output that is not a tensor");
      outs.push_back(var_of(v.as<py::TensorObj>()->t));
    }
    for (const auto& [name, key] : inputs_)
      if (mutated_.count(name)) {
        outs.push_back(mutated_[name]);
        mutated_inputs.push_back(name);
      }
    emit_.output(outs);
  }

  const std::string& error() const { return error_; }

 private:
  EArg to_earg(const Value& a) {
    return earg_of(a, [this](const Tensor& t) { return var_of(t); });
  }

  // Keys hold raw storage addresses: the storage is kept alive with its key,
  // so a tensor allocated later at a freed address is never taken for a view
  // of a value it has nothing to do with.
  void bind(const Tensor& t, Var v) {
    vars_[key_of(t)] = v;
    if (t.storage()) alive_.push_back(t.storage());
  }

  GraphEmitter emit_;
  std::map<TensorKey, Var> vars_;
  std::vector<std::shared_ptr<Storage>> alive_;
  std::vector<std::pair<std::string, TensorKey>> inputs_;  // placeholder name, identity
  std::map<std::string, Var> mutated_;                     // input written in place -> its new value
  std::string current_;
  std::vector<StackFrame> stack_;
  std::string error_;
  bool writes_into_parts_ = false;
};

// The lowering's writes into parts of tensors, made functional. Each written
// input is returned as an output already (its whole tensor's value at the
// end, which the pass makes read the final value), so the copy_ epilogue the
// pass adds for it is dropped: the lowered graph stays free of writes, as it
// was before views could be written.
Status functionalize_lowered(Graph& g) {
  PassContext ctx;
  PassResult r = functionalize(g, ctx);
  if (!r.changed) return Status();
  const Node& out = g.nodes.back();
  KILN_CHECK(out.op == OpKind::Output, "the lowered graph ends in its output");
  std::set<std::string> returned;  // inputs returned as "mutated input NAME"
  for (const std::string& desc : out.meta.output_descs)
    if (desc.starts_with("mutated input ")) returned.insert(desc.substr(14));
  std::vector<bool> remove(g.size(), false);
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.target != "aten::copy_.default" || n.args.empty() || !n.args[0].is_node()) continue;
    const Node& dst = g[n.args[0].node_id()];
    remove[i] = dst.op == OpKind::Placeholder && returned.count(dst.name);
  }
  remove_nodes(g, remove);
  return Status();
}

}  // namespace

Expected<Graph> lower_to_aten(py::VM& vm, const capture::RegionResult& region) {
  // Recording one run of a cond would keep only the branch its predicate took,
  // and the graph would compute that branch on every later call; recording an
  // autograd Function's forward would differentiate it instead of calling the
  // class's backward.
  for (const capture::GraphStep& s : region.steps)
    if (s.kind == capture::GraphStep::Kind::Cond || s.kind == capture::GraphStep::Kind::FunctionApply) {
      const Node& n = region.graph[s.node];
      const std::string at = n.meta.stack.empty() ? std::string()
                                                  : " at " + n.meta.stack.back().file + ":" + std::to_string(n.meta.stack.back().line);
      return Status::error("node '" + n.name + "'" + at + " is torch.ops." +
                           (s.kind == capture::GraphStep::Kind::Cond ? "higher_order.cond" : "higher_order.autograd_function_apply") +
                           ", which Kiln does not lower to ATen");
    }
  Graph g;
  Lowering lowering(g);
  // The graph runs on copies of the inputs: it may write into them (a module's
  // running statistics), and the program's tensors must not change twice.
  std::vector<py::Value> inputs;
  size_t input = 0;
  for (const Node& n : region.graph.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    const py::Value& v = region.input_values.at(input++);
    if (v.is(py::ObjKind::Tensor)) {
      const auto* obj = v.as<py::TensorObj>();
      Tensor copy = Tensor::empty_strided(obj->t.sizes(), obj->t.strides(), obj->t.dtype());
      copy.copy_(obj->t);
      auto clone = py::make<py::TensorObj>(copy);
      clone->requires_grad = obj->requires_grad;
      inputs.push_back(py::Value(clone));
      lowering.add_input(n.name, copy);
    } else {
      inputs.push_back(v);
      lowering.add_scalar_input(n);
    }
  }
  torchapi::AtenObserver* previous = torchapi::set_aten_observer(&lowering);
  std::vector<py::Value> outputs;
  // The recording run draws random numbers (dropout): the program's stream
  // must be where it was, so the region's own run draws what eager would.
  struct GeneratorRestore {
    CpuGenerator saved = default_cpu_generator();
    ~GeneratorRestore() { default_cpu_generator() = saved; }
  } restore_generator;
  // A binding that draws from the generator without an ATen op (randn_like
  // fills an empty_like in place) would leave the graph reading uninitialized
  // memory: each step's draws must show up as a recorded random op.
  std::string step_node;
  CpuGenerator step_start = default_cpu_generator();
  size_t nodes_at_step = 0;
  auto check_draws = [&] {
    if (step_node.empty() || default_cpu_generator() == step_start) return;
    for (size_t i = nodes_at_step; i < g.nodes.size(); ++i)
      if (is_random_op(g.nodes[i].target)) return;
    throw Error("node '" + step_node + "' draws random numbers without an ATen op Kiln records");
  };
  try {
    outputs = capture::run_graph(vm, region, inputs, [&](const capture::GraphStep& s) {
      check_draws();
      const Node& n = region.graph[s.node];
      step_node = n.name;
      step_start = default_cpu_generator();
      nodes_at_step = g.nodes.size();
      lowering.begin_node(n.name, n.meta.stack);
    });
    check_draws();
  } catch (py::PyError& e) {
    torchapi::set_aten_observer(previous);
    return Status::error("running the region to lower it: " + e.type() + ": " + e.message());
  } catch (const Error& e) {
    torchapi::set_aten_observer(previous);
    return Status::error(std::string("lowering to ATen: ") + e.what());
  }
  torchapi::set_aten_observer(previous);
  if (!lowering.error().empty()) return Status::error("lowering to ATen: " + lowering.error());
  std::vector<std::string> mutated;
  try {
    lowering.output(outputs, mutated);
  } catch (const Error& e) {
    return Status::error(std::string("lowering to ATen: ") + e.what());
  }
  // Module scopes: an ATen node lies where the torch-level node it came from
  // does; a parameter or buffer input in the module that owns it.
  std::unordered_map<std::string_view, const std::string*> scope_of;
  for (const Node& n : region.graph.nodes)
    if (!n.meta.scope.empty()) scope_of.emplace(n.name, &n.meta.scope);
  for (Node& n : g.nodes) {
    if (!n.meta.scope.empty()) continue;
    if (n.op == OpKind::Placeholder) {
      std::string path = trace::module_state_path(n.name);
      n.meta.scope = path.substr(0, path.rfind('.') == std::string::npos ? 0 : path.rfind('.'));
    } else if (n.meta.from.size() == 1) {
      if (auto it = scope_of.find(n.meta.from[0]); it != scope_of.end()) n.meta.scope = *it->second;
    }
  }
  // Say which outputs are the region's and which are written-back inputs.
  Node& out = g.nodes.back();
  for (size_t i = 0; i < outputs.size(); ++i) out.meta.output_descs.push_back("output " + std::to_string(i));
  for (const std::string& name : mutated) out.meta.output_descs.push_back("mutated input " + name);
  if (lowering.writes_into_parts()) {
    try {
      // Provenance: the pass's new nodes take the from (torch-level node) of the write they stand for.
      if (Status s = functionalize_lowered(g); !s.ok()) return s;
    } catch (const Error& e) {
      return Status::error(std::string("lowering to ATen: ") + e.what());
    }
  }
  return g;
}

Expected<Graph> lower_torch_graph(const Graph& g, const std::vector<Tensor>& inputs) {
  py::VMOptions options;
  options.out = [](std::string_view) {};
  options.err = [](std::string_view) {};  // errors come back as the Status
  py::VM vm(options);
  capture::install_capture(vm);
  // Registers the torch modules whose bindings the graph's targets name.
  if (Status s = vm.run_source("import torch\nimport torch.nn.functional\n", "<lowering>");
      !s.ok())
    return Status::error("cannot set up the interpreter to lower the graph: " + s.message());
  Expected<capture::RegionResult> region = capture::region_of_graph(vm, g, inputs);
  if (!region) return region.status();
  return lower_to_aten(vm, *region);
}

Expected<LoweredModule> lower_module_class(std::string_view class_source, const std::string& class_name,
                                           const std::vector<Tensor>& inputs) {
  py::VMOptions options;
  options.out = [](std::string_view) {};
  options.err = [](std::string_view) {};
  // The class comes from a file: its __init__ may ask for any layer size, so
  // no tensor it makes may pass the input byte bound (4-byte elements).
  options.max_tensor_numel = std::max<int64_t>(1, input_byte_limit() / 4);
  py::VM vm(options);
  capture::install_capture(vm);
  // The names after-dynamo files use unqualified: layers through torch.nn's
  // star import (which Kiln's subset spells out: every public name of its
  // torch.nn), tensor and device from torch, inf from math.
  if (Status s = vm.run_source("import torch\nimport torch.nn\n", "<" + class_name + ">"); !s.ok())
    return Status::error("cannot set up the interpreter: " + s.message());
  std::string layers;
  if (py::Ref<py::Module> nn = vm.module("torch.nn"))
    nn->dict->for_each([&](const py::Value& key, const py::Value&) {
      if (!key.is(py::ObjKind::Str)) return;
      const std::string name = py::as_str(key);
      if (!name.empty() && name[0] != '_') layers += (layers.empty() ? "" : ", ") + name;
    });
  std::string program = "import torch\nfrom torch import tensor, device\nfrom math import inf, nan\n";
  if (!layers.empty()) program += "from torch.nn import " + layers + "\n";
  program += class_source;
  program += "\n__kiln_module = " + class_name + "()\n";
  if (Status s = vm.run_source(program, "<" + class_name + ">"); !s.ok())
    return Status::error("running " + class_name + "'s class in Kiln's interpreter: " + s.message());
  const py::Value* module = vm.module("__main__")->dict->find_str("__kiln_module");
  const py::Value* cls = vm.module("__main__")->dict->find_str(class_name);
  if (!module || !cls || !cls->is(py::ObjKind::Class)) return Status::error(class_name + " did not define a class");
  const py::Value* forward = cls->as<py::Class>()->dict->find_str("forward");
  if (!forward || !forward->is(py::ObjKind::Function)) return Status::error(class_name + " has no forward method");
  py::ValueVec args = {*module};
  for (const Tensor& t : inputs) args.push_back(py::Value(py::make<py::TensorObj>(t)));
  capture::RegionResult region;
  try {
    py::Frame frame;
    vm.bind_frame(frame, forward->as<py::Function>(), py::CallArgs{args.data(), args.size(), nullptr});
    region = capture::trace_region(vm, frame, {});
  } catch (py::PyError& e) {
    return Status::error("capturing " + class_name + ".forward: " + e.type() + ": " + e.message());
  } catch (const Error& e) {
    return Status::error("capturing " + class_name + ".forward: " + std::string(e.what()));
  }
  if (!region.returned || region.break_info)
    return Status::error(class_name + ".forward does not capture into one graph" +
                         (region.break_info ? " (a graph break: " + region.break_record.reason + ")" : std::string()));
  Expected<Graph> aten = lower_to_aten(vm, region);
  if (!aten) return aten.status();
  LoweredModule out;
  out.graph = std::move(*aten);
  for (size_t k = 0; k < region.input_values.size(); ++k) {
    const py::Value& v = region.input_values[k];
    if (!v.is(py::ObjKind::Tensor))
      return Status::error(class_name + ".forward's graph takes a " + vm.type_of(v)->name + " input (" +
                           (k < region.inputs.size() && region.inputs[k] ? region.inputs[k]->str() : std::string("?")) +
                           "); Kiln replays tensor inputs only");
    out.inputs.push_back(v.as<py::TensorObj>()->t);
    out.names.push_back(k < region.inputs.size() && region.inputs[k] ? region.inputs[k]->str() : std::string());
  }
  return out;
}

}  // namespace kiln::pipeline
