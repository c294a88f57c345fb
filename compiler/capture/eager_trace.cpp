#include "compiler/capture/eager_trace.h"

#include <memory>
#include <set>
#include <unordered_map>

#include "compiler/capture/region_tracer.h"
#include "core/graph/printer.h"
#include "core/python/eager_tape.h"

namespace kiln::capture {

namespace {

using py::ObjKind;
using py::Value;

// Ops whose replay draws new random numbers: PyTorch's check_trace warns
// about them rather than comparing outputs.
bool draws_random(const std::string& target) {
  for (const char* name : {"dropout", "rand", "randn", "randint", "randperm", "bernoulli", "multinomial", "normal",
                           "uniform_", "normal_", "exponential_", "rrelu", "feature_alpha_dropout", "alpha_dropout"})
    if (target == name || target.ends_with(std::string(".") + name) || target.ends_with(std::string("_") + name))
      return true;
  return false;
}

// What one recording run leaves: the graph and the steps that replay it, and
// the function's result as a template over the graph's nodes.
struct Trace {
  RegionResult region;
  ArgTemplate result;
  std::vector<Value> traced_args;      // the example arguments, one placeholder each
  bool read_metadata = false;          // Python read a traced tensor's sizes or dtype: replay needs the same
  std::vector<std::string> random_ops;
};

class Recorder final : public py::EagerTape {
 public:
  Recorder(py::VM& vm, Trace& trace) : vm_(vm), trace_(trace) {}

  NodeId add_input(const Value& v, const std::string& name) {
    Node n;
    n.op = OpKind::Placeholder;
    n.name = unique(name);
    n.target = name;
    NodeId id = trace_.region.graph.add(std::move(n));
    if (v.is(ObjKind::Tensor)) track(v, id);
    return id;
  }

  void record(py::VM&, const py::TorchCall& call, const Value& result) override {
    Node node;
    GraphStep step;
    for (size_t i = 0; i < call.args.npos; ++i) {
      Arg a;
      ArgTemplate t;
      to_template(call.args[i], a, t);
      node.args.push_back(std::move(a));
      step.args.push_back(std::move(t));
    }
    if (call.args.kw)
      for (const auto& [k, v] : *call.args.kw) {
        Arg a;
        ArgTemplate t;
        to_template(v, a, t);
        node.kwargs.emplace_back(k, std::move(a));
        step.kwargs.emplace_back(k, std::move(t));
      }
    // Calls on constants alone are recorded too: a factory (torch.zeros) runs
    // again on each call, as in PyTorch's trace.
    const std::string& target = call.graph_target;
    set_step_call(step, call);
    if (step.kind == GraphStep::Kind::Call && !step.callable) unsupported(vm_, target);
    if (draws_random(target)) trace_.random_ops.push_back(target);
    step.grad_enabled = vm_.grad_enabled;
    step.autocast = torchapi::autocast_state();
    node.op = call.is_method ? OpKind::CallMethod : OpKind::CallFunction;
    node.target = target;
    size_t dot = target.rfind('.');
    node.name = unique(dot == std::string::npos ? target : target.substr(dot + 1));
    NodeId id = add_step(std::move(node), std::move(step));
    if (result.is(ObjKind::Tensor)) {
      track(result, id);
      return;
    }
    const py::ValueVec items = result_items(result);
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is(ObjKind::Tensor)) continue;
      Node item;
      item.op = OpKind::CallFunction;
      item.target = "operator.getitem";
      item.name = unique("getitem");
      item.args = {Arg::node(id), Arg::integer(int64_t(i))};
      GraphStep get;
      get.kind = GraphStep::Kind::GetItem;
      get.index = int(i);
      ArgTemplate parent;
      parent.kind = ArgTemplate::Kind::Node;
      parent.node = id;
      get.args = {parent};
      get.grad_enabled = vm_.grad_enabled;
      get.autocast = torchapi::autocast_state();
      track(items[i], add_step(std::move(item), std::move(get)));
    }
  }

  void value_read(py::VM& vm, const Value& tensor, py::ValueRead read) override {
    if (!traced(tensor)) return;
    py::Ref<py::Module> jit = vm.module("torch.jit");
    const Value* hook = jit ? jit->dict->find_str("_kiln_tracer_warning") : nullptr;
    if (!hook) return;
    // Warnings raised here must not be recorded as part of the trace.
    py::TapePaused paused;
    vm.call(*hook, py::ValueVec{py::str_value(py::value_read_name(read))});
  }

  void metadata_read(py::VM&, const Value& tensor) override {
    if (traced(tensor)) trace_.read_metadata = true;
  }

  [[noreturn]] void unsupported(py::VM&, const std::string& what) override {
    py::throw_unsupported("torch.jit.trace: Kiln cannot record " + what + " into a trace");
  }

  // The function returned `v`: the output node lists the graph values it holds.
  void finish(const Value& v) {
    Arg unused;
    to_template(v, unused, trace_.result);
    std::vector<Arg> outs;
    collect_nodes(trace_.result, outs);
    Node out;
    out.op = OpKind::Output;
    out.name = "output";
    out.target = "output";
    out.args = {Arg::tuple(std::move(outs))};
    trace_.region.graph.add(std::move(out));
    keep_.clear();
  }

 private:
  bool traced(const Value& v) const {
    return v.is(ObjKind::Tensor) && node_of_.count(v.as<py::TensorObj>()) > 0;
  }

  void track(const Value& t, NodeId id) {
    node_of_[t.as<py::TensorObj>()] = id;
    keep_.push_back(t);  // alive until the end, so that no new tensor reuses its address
  }

  NodeId add_step(Node node, GraphStep step) {
    NodeId id = trace_.region.graph.add(std::move(node));
    step.node = id;
    trace_.region.steps.push_back(std::move(step));
    return id;
  }

  std::string unique(std::string base) {
    for (char& c : base)
      if (!isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    std::string name = base;
    for (int k = 1; !used_.insert(name).second; ++k) name = base + "_" + std::to_string(k);
    return name;
  }

  // `v` as a step argument and as a graph argument; true when it holds a traced value.
  bool to_template(const Value& v, Arg& arg, ArgTemplate& t) {
    t.value = v;
    if (v.is(ObjKind::Tensor)) {
      auto it = node_of_.find(v.as<py::TensorObj>());
      if (it != node_of_.end()) {
        t.kind = ArgTemplate::Kind::Node;
        t.node = it->second;
        t.value = Value();
        arg = Arg::node(it->second);
        return true;
      }
      arg = Arg::global("_tensor_constant" + std::to_string(constants_++));
      return false;
    }
    if (v.is(ObjKind::Tuple) || v.is(ObjKind::List)) {
      py::NestingGuard nesting(" while recording a trace");
      const py::ValueVec& items = v.is(ObjKind::Tuple) ? v.as<py::Tuple>()->items : v.as<py::List>()->items;
      std::vector<Arg> args;
      std::vector<ArgTemplate> templates;
      bool any = false;
      for (const Value& x : items) {
        Arg a;
        ArgTemplate xt;
        any |= to_template(x, a, xt);
        args.push_back(std::move(a));
        templates.push_back(std::move(xt));
      }
      arg = v.is(ObjKind::Tuple) ? Arg::tuple(std::move(args)) : Arg::list(std::move(args));
      if (any) {
        t.kind = v.is(ObjKind::Tuple) ? ArgTemplate::Kind::Tuple : ArgTemplate::Kind::List;
        t.items = std::move(templates);
      }
      return any;
    }
    if (v.is(ObjKind::Dict)) {
      bool any = false;
      std::vector<ArgTemplate> templates;
      std::vector<std::pair<Arg, Arg>> entries;
      v.as<py::Dict>()->for_each([&](const Value& k, const Value& x) {
        Arg ka, xa;
        ArgTemplate kt, xt;
        any |= to_template(k, ka, kt);
        any |= to_template(x, xa, xt);
        entries.emplace_back(std::move(ka), std::move(xa));
        templates.push_back(std::move(kt));
        templates.push_back(std::move(xt));
      });
      arg = Arg::dict(std::move(entries));
      if (any) {
        t.kind = ArgTemplate::Kind::Dict;
        t.items = std::move(templates);
      }
      return any;
    }
    switch (v.tag()) {
      case Value::Tag::None: arg = Arg::none(); break;
      case Value::Tag::Bool: arg = Arg::boolean(v.as_bool()); break;
      case Value::Tag::Int: arg = Arg::integer(v.as_int()); break;
      case Value::Tag::Float: arg = Arg::real(v.as_float()); break;
      case Value::Tag::Obj:
        if (v.is(ObjKind::Str)) arg = Arg::str(v.as<py::Str>()->s);
        else if (v.is(ObjKind::DType)) arg = Arg::dtype(std::string(dtype_name(v.as<py::DTypeObj>()->dtype)));
        else if (v.is(ObjKind::Device)) arg = Arg::device(v.as<py::DeviceObj>()->str());
        else arg = Arg::global(py::type_name(v));
        break;
    }
    return false;
  }

  static void collect_nodes(const ArgTemplate& t, std::vector<Arg>& out) {
    if (t.kind == ArgTemplate::Kind::Node) out.push_back(Arg::node(t.node));
    for (const ArgTemplate& x : t.items) collect_nodes(x, out);
  }

  py::VM& vm_;
  Trace& trace_;
  std::unordered_map<const py::TensorObj*, NodeId> node_of_;
  std::vector<Value> keep_;
  std::set<std::string> used_;
  int constants_ = 0;
};

std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.sizes().size(); ++i) s += (i ? ", " : "") + std::to_string(t.sizes()[i]);
  return s + "]";
}

// Runs the trace on new arguments; refuses arguments the trace cannot stand for.
Value replay(py::VM& vm, const Trace& trace, const py::CallArgs& a) {
  if (a.npos != trace.traced_args.size() || a.has_kwargs())
    throw py::PyError("TypeError", "forward() of a traced function expected " +
                                       std::to_string(trace.traced_args.size()) + " positional arguments, got " +
                                       std::to_string(a.npos) + (a.has_kwargs() ? " and keyword arguments" : ""));
  std::vector<Value> inputs(a.pos, a.pos + a.npos);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is(ObjKind::Tensor))
      throw py::PyError("RuntimeError", "argument " + std::to_string(i) + " of a traced function must be a Tensor, not " +
                                            py::type_name(inputs[i]));
    const Tensor& now = inputs[i].as<py::TensorObj>()->t;
    const Tensor& then = trace.traced_args[i].as<py::TensorObj>()->t;
    if (trace.read_metadata && (now.sizes() != then.sizes() || now.dtype() != then.dtype()))
      py::throw_unsupported("torch.jit.trace result called with argument " + std::to_string(i) + " of shape " +
                            shape_text(now) + " " + std::string(dtype_name(now.dtype())) + "; it was traced with " +
                            shape_text(then) + " " + std::string(dtype_name(then.dtype())) +
                            " and the traced code read tensor sizes or dtypes, which Kiln's trace keeps as constants "
                            "(PyTorch's trace may record them as ops)");
  }
  std::vector<Value> outs = run_graph(vm, trace.region, inputs);
  // Placeholders are the graph's first nodes; a returned input comes back as itself.
  std::vector<Value> env(trace.region.graph.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[i] = inputs[i];
  const Node* out = trace.region.graph.output();
  for (size_t i = 0; i < outs.size(); ++i) env[size_t(out->args[0].items[i].node_id())] = outs[i];
  return build_arg(trace.result, env);
}

// torch.jit._kiln_record(fn, args, names) -> (result, replay, ops, random ops, graph module):
// runs fn(*args) once with the tape recording; args are tensors, one placeholder each.
Value kiln_record(py::VM& vm, const py::CallArgs& a) {
  if (a.npos != 3) py::throw_type_error("_kiln_record(fn, args, names)");
  if (py::active_eager_tape() || vm.tracer)
    py::throw_unsupported("torch.jit.trace inside another trace or inside a torch.compile region");
  auto trace = std::make_shared<Trace>();
  trace->traced_args = vm.to_vector(a[1]);
  py::ValueVec names = vm.to_vector(a[2]);
  Recorder recorder(vm, *trace);
  for (size_t i = 0; i < trace->traced_args.size(); ++i) {
    if (!trace->traced_args[i].is(ObjKind::Tensor)) py::throw_type_error("_kiln_record: arguments must be tensors");
    recorder.add_input(trace->traced_args[i], py::as_str(names.at(i)));
  }
  Value result;
  {
    struct Stop {
      ~Stop() { py::active_eager_tape() = nullptr; }
    } stop;
    py::active_eager_tape() = &recorder;
    result = vm.call(a[0], trace->traced_args);
  }
  recorder.finish(result);
  py::ValueVec ops;
  for (const Node& n : trace->region.graph.nodes)
    if (n.op == OpKind::CallFunction || n.op == OpKind::CallMethod) ops.push_back(py::str_value(n.target));
  py::ValueVec random;
  for (const std::string& r : trace->random_ops) random.push_back(py::str_value(r));
  Value run = py::make_builtin("torch.jit.trace.<replay>",
                               [trace](py::VM& vm, const py::CallArgs& args) { return replay(vm, *trace, args); });
  return py::tuple_value({result, run, py::list_value(std::move(ops)), py::list_value(std::move(random))});
}

}  // namespace

void install_eager_trace(py::VM& vm) {
  vm.extensions["torch.jit._kiln_record"] = std::make_shared<py::BuiltinFn>(kiln_record);
}

}  // namespace kiln::capture
