#include "compiler/capture/graph_region.h"

#include <map>

#include "core/python/object.h"
#include "core/python/torch_api.h"
#include "core/python/vm.h"

namespace kiln::capture {

namespace {

// torch functions, and Python operators other than getitem: in an ATen graph
// those appear only on SymInts, which the readers fold away first.
bool is_torch_call(const Node& n) {
  if (n.op != OpKind::CallFunction || n.target.find("::") != std::string::npos) return false;
  return n.target.starts_with("torch.") || (n.target.starts_with("operator.") && n.target != "operator.getitem");
}

// Constants the graph names by their Python spelling (torch.float32,
// device(type='cuda', index=0), math.inf) are what the interpreter makes of
// that spelling, so they are exactly the objects a program would pass.
class Constants {
 public:
  explicit Constants(py::VM& vm) : vm_(vm) {}

  py::Value eval(const std::string& expr) {
    auto it = cache_.find(expr);
    if (it != cache_.end()) return it->second;
    // Each run is a fresh __main__: the spellings' imports come with it.
    Status s = vm_.run_source("import torch\nfrom torch import device\nfrom math import inf, nan\n__kiln_graph_constant = (" +
                                  expr + ")\n",
                              "<graph constant>");
    if (!s.ok()) throw Error("'" + expr + "' is not a value Kiln's interpreter knows: " + s.message());
    const py::Value* v = vm_.module("__main__")->dict->find_str("__kiln_graph_constant");
    if (!v) throw Error("'" + expr + "' did not evaluate");
    return cache_.emplace(expr, *v).first->second;
  }

 private:
  py::VM& vm_;
  std::map<std::string, py::Value> cache_;
};

ArgTemplate constant(py::Value v) {
  ArgTemplate t;
  t.value = std::move(v);
  return t;
}

ArgTemplate template_of(const Arg& a, Constants& constants) {
  using K = Arg::Kind;
  switch (a.kind) {
    case K::None: return constant(py::Value());
    case K::Bool: return constant(py::Value(a.b));
    case K::Int: return constant(a.s.empty() ? py::Value(a.i) : constants.eval(a.s));
    case K::Float: return constant(py::Value(a.f));
    case K::Str: return constant(py::str_value(a.s));
    case K::Node: {
      ArgTemplate t;
      t.kind = ArgTemplate::Kind::Node;
      t.node = a.node_id();
      return t;
    }
    case K::DType:
    case K::Layout:
    case K::MemoryFormat: return constant(constants.eval("torch." + a.s));
    case K::Device: return constant(constants.eval("torch.device('" + a.s + "')"));
    case K::Global: return constant(constants.eval(a.s));
    case K::Sym: throw Error("a symbolic size (" + a.s + "); Kiln lowers graphs with concrete sizes only");
    case K::Ellipsis: return constant(constants.eval("..."));
    case K::List:
    case K::Tuple:
    case K::Slice:
    case K::Dict: {
      ArgTemplate t;
      t.kind = a.kind == K::List    ? ArgTemplate::Kind::List
               : a.kind == K::Tuple ? ArgTemplate::Kind::Tuple
               : a.kind == K::Slice ? ArgTemplate::Kind::Slice
                                    : ArgTemplate::Kind::Dict;
      for (const Arg& x : a.items) t.items.push_back(template_of(x, constants));
      return t;
    }
  }
  throw Error("an argument Kiln cannot pass");
}

// The torch binding a call_function target names, found as the program would
// find it: the longest registered module prefix, then the attribute.
const torchapi::Callable* binding_of(py::VM& vm, const std::string& target) {
  for (size_t dot = target.rfind('.'); dot != std::string::npos && dot > 0; dot = target.rfind('.', dot - 1)) {
    py::Ref<py::Module> m = vm.module(std::string_view(target).substr(0, dot));
    if (!m) continue;
    std::string rest = target.substr(dot + 1);
    if (rest.find('.') != std::string::npos) return nullptr;
    const py::Value* found = m->dict->find_str(rest);
    if (!found || !found->is(py::ObjKind::Builtin)) return nullptr;
    return static_cast<const torchapi::Callable*>(found->as<py::Builtin>()->tag);
  }
  return nullptr;
}

}  // namespace

bool is_torch_level(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == OpKind::CallMethod || n.op == OpKind::CallModule || is_torch_call(n)) return true;
  return false;
}

Expected<RegionResult> region_of_graph(py::VM& vm, const Graph& g, const std::vector<Tensor>& inputs) {
  RegionResult r;
  r.graph = g;
  r.returned = true;
  Constants constants(vm);
  size_t placeholders = 0;
  for (NodeId id = 0; id < NodeId(g.size()); ++id) {
    const Node& n = g[id];
    auto refuse = [&](const std::string& why) { return Status::error("node '" + n.name + "' " + why); };
    switch (n.op) {
      case OpKind::Placeholder: {
        // run_graph binds inputs to the first nodes, as a captured graph lists them.
        if (size_t(id) != placeholders) return refuse("is a placeholder after other nodes");
        if (placeholders >= inputs.size())
          return refuse("has no input value (" + std::to_string(inputs.size()) + " given)");
        r.input_values.push_back(py::Value(py::make<py::TensorObj>(inputs[placeholders++])));
        continue;
      }
      case OpKind::Output: continue;
      case OpKind::CallModule:
        return refuse("calls the submodule '" + n.target +
                      "', whose parameters and code are not in the graph (Kiln lowers graphs whose modules Dynamo "
                      "inlined: parameters as inputs, torch functions as calls)");
      case OpKind::GetAttr:
        return refuse("reads the attribute '" + n.target + "', a tensor the graph does not hold");
      case OpKind::CallFunction:
      case OpKind::CallMethod: break;
    }
    GraphStep step;
    step.node = id;
    if (n.op == OpKind::CallMethod) {
      step.kind = GraphStep::Kind::Method;
      step.name = n.target;
    } else if (n.target.starts_with("operator.")) {
      step.kind = GraphStep::Kind::Operator;
      step.name = n.target;
    } else if (n.target.find("::") != std::string::npos) {
      step.kind = GraphStep::Kind::Aten;  // torch.ops.aten.round(x) beside torch-level calls
      step.name = n.target;
    } else {
      step.kind = GraphStep::Kind::Call;
      step.callable = binding_of(vm, n.target);
      if (!step.callable) return refuse("calls " + n.target + ", which Kiln has no torch binding for");
    }
    try {
      for (const Arg& a : n.args) step.args.push_back(template_of(a, constants));
      for (const auto& [k, a] : n.kwargs) step.kwargs.emplace_back(k, template_of(a, constants));
    } catch (const Error& e) {
      return refuse(std::string("passes ") + e.what());
    }
    r.steps.push_back(std::move(step));
    ++r.op_count;
  }
  if (placeholders != inputs.size())
    return Status::error("the graph takes " + std::to_string(placeholders) + " inputs, but " + std::to_string(inputs.size()) +
                         " were given");
  const Node* out = g.output();
  if (!out || out->args.empty()) return Status::error("the graph has no output node");
  // run_graph returns the items of the output's tuple: a bare value is one item.
  if (out->args[0].is_node()) r.graph.nodes.back().args[0] = Arg::tuple({out->args[0]});
  return r;
}

}  // namespace kiln::capture
