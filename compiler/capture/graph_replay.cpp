// Replays a captured region's graph with real values: each step calls the
// torch function, method or operator it recorded, in graph order.
#include "compiler/capture/region_tracer.h"

#include "core/ops/overloads.h"
#include "core/python/torch_api_binding.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"

namespace kiln::capture {

using py::ObjKind;
using py::Value;


void set_step_call(GraphStep& step, const py::TorchCall& call) {
  const std::string& target = call.graph_target;
  // A tensor's own == and != are recorded as methods (as Dynamo does) but run as operators.
  if (call.is_method && (target == "__eq__" || target == "__ne__")) {
    step.kind = GraphStep::Kind::Operator;
    step.name = "operator." + target.substr(2, 2);
  } else if (call.is_method) {
    step.kind = GraphStep::Kind::Method;
    step.name = target;
  } else if (target.starts_with("operator.") || target == "getattr") {
    step.kind = GraphStep::Kind::Operator;
    step.name = target;
  } else {
    step.kind = GraphStep::Kind::Call;
    step.callable = call.callable;
  }
}

Value build_arg(const ArgTemplate& a, const std::vector<Value>& env) {
  switch (a.kind) {
    case ArgTemplate::Kind::Const: return a.value;
    case ArgTemplate::Kind::Node: return env[size_t(a.node)];
    case ArgTemplate::Kind::Tuple:
    case ArgTemplate::Kind::List: {
      py::ValueVec items;
      for (const ArgTemplate& x : a.items) items.push_back(build_arg(x, env));
      if (a.kind == ArgTemplate::Kind::List) return py::list_value(std::move(items));
      bool size = a.value.is(ObjKind::Tuple) && a.value.as<py::Tuple>()->is_size;
      return Value(py::make<py::Tuple>(std::move(items), size));
    }
    case ArgTemplate::Kind::Slice:
      return Value(py::make<py::SliceObj>(build_arg(a.items[0], env), build_arg(a.items[1], env), build_arg(a.items[2], env)));
    case ArgTemplate::Kind::Dict: {
      auto d = py::make<py::Dict>();
      for (size_t i = 0; i + 1 < a.items.size(); i += 2) d->set(build_arg(a.items[i], env), build_arg(a.items[i + 1], env));
      return Value(d);
    }
  }
  return Value();
}

namespace {

Value run_operator(py::VM& vm, const std::string& name, const py::ValueVec& args) {
  using py::BinaryOpKind;
  using py::CompareKind;
  static const std::vector<std::pair<std::string, BinaryOpKind>> binary = {
      {"add", BinaryOpKind::Add}, {"sub", BinaryOpKind::Sub}, {"mul", BinaryOpKind::Mul}, {"truediv", BinaryOpKind::TrueDiv},
      {"floordiv", BinaryOpKind::FloorDiv}, {"mod", BinaryOpKind::Mod}, {"pow", BinaryOpKind::Pow}, {"matmul", BinaryOpKind::MatMul},
      {"lshift", BinaryOpKind::LShift}, {"rshift", BinaryOpKind::RShift}, {"and_", BinaryOpKind::And}, {"or_", BinaryOpKind::Or},
      {"xor", BinaryOpKind::Xor}};
  static const std::vector<std::pair<std::string, CompareKind>> compare = {
      {"lt", CompareKind::Lt}, {"le", CompareKind::Le}, {"eq", CompareKind::Eq}, {"ne", CompareKind::Ne}, {"gt", CompareKind::Gt}, {"ge", CompareKind::Ge}};
  std::string op = name.substr(name.find('.') + 1);
  for (const auto& [n, k] : binary) {
    if (op == n) return vm.binary(k, args.at(0), args.at(1));
    if (op == "i" + n || (n == "and_" && op == "iand") || (n == "or_" && op == "ior")) return vm.binary(k, args.at(0), args.at(1), true);
  }
  for (const auto& [n, k] : compare)
    if (op == n) return vm.compare(k, args.at(0), args.at(1));
  if (op == "neg") return vm.unary(py::UnaryOpKind::Neg, args.at(0));
  if (op == "pos") return vm.unary(py::UnaryOpKind::Pos, args.at(0));
  if (op == "invert" || op == "inv") return vm.unary(py::UnaryOpKind::Invert, args.at(0));
  if (op == "getitem") return vm.getitem(args.at(0), args.at(1));
  if (op == "getattr") return vm.getattr(args.at(0), py::as_str(args.at(1)));
  if (op == "setitem") {
    vm.setitem(args.at(0), args.at(1), args.at(2));
    return Value();
  }
  throw py::PyError("RuntimeError", "captured graph has an operator Kiln cannot run: " + name);
}

// An ATen op called directly, through the bindings' own entry so the
// lowering's observer sees it; an overload packet takes the first overload
// (default first) that accepts the arguments, as PyTorch's dispatch picks it.
Value run_aten(const std::string& op, const py::ValueVec& args, const std::vector<std::pair<std::string, Value>>& kwargs) {
  kiln::ValueList ops_args;
  for (const Value& a : args) ops_args.push_back(py::to_ops(a, op));
  kiln::KwargList ops_kwargs;
  for (const auto& [k, v] : kwargs) ops_kwargs.emplace_back(k, py::to_ops(v, op));
  const std::vector<std::string> overloads = is_overload_packet(op) ? registered_overloads(op) : std::vector<std::string>{op};
  std::string last = "no registered overload";
  for (const std::string& name : overloads) {
    try {
      kiln::ValueList r = torchapi::detail::aten(torchapi::Mode::Eager, name, ops_args, ops_kwargs);
      if (r.size() == 1) return py::from_ops(r[0]);
      py::ValueVec items;
      for (const kiln::Value& v : r) items.push_back(py::from_ops(v));
      return Value(py::make<py::Tuple>(std::move(items)));
    } catch (const Error& e) {
      last = e.what();
    }
  }
  throw py::PyError("RuntimeError", op + ": " + last);
}

}  // namespace

namespace {
thread_local int plain_python_depth = 0;
}  // namespace

PlainPython::PlainPython() { ++plain_python_depth; }
PlainPython::~PlainPython() { --plain_python_depth; }
bool PlainPython::active() { return plain_python_depth > 0; }

std::vector<Value> run_graph(py::VM& vm, const RegionResult& region, const std::vector<Value>& inputs,
                             const std::function<void(const GraphStep&)>& before_step) {
  std::vector<Value> env(region.graph.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[i] = inputs[i];
  // Each op runs under the grad mode it was traced under (a no_grad block
  // inside the region); the caller's mode is back afterwards.
  GradModeRestore restore(vm);
  for (const GraphStep& s : region.steps) {
    if (before_step) before_step(s);
    vm.grad_enabled = s.grad_enabled;
    torchapi::autocast_state() = s.autocast;
    py::ValueVec args;
    for (const ArgTemplate& a : s.args) args.push_back(build_arg(a, env));
    std::vector<std::pair<std::string, Value>> kwargs;
    for (const auto& [k, a] : s.kwargs) kwargs.emplace_back(k, build_arg(a, env));
    Value r;
    switch (s.kind) {
      case GraphStep::Kind::Call: {
        py::CallArgs ca{args.data(), args.size(), kwargs.empty() ? nullptr : &kwargs};
        r = py::call_torch(vm, *s.callable, ca);
        break;
      }
      case GraphStep::Kind::Method: {
        Value self = args.at(0);
        args.erase(args.begin());
        r = vm.call(vm.getattr(self, s.name), std::move(args), std::move(kwargs));
        break;
      }
      case GraphStep::Kind::Operator: r = run_operator(vm, s.name, args); break;
      case GraphStep::Kind::Aten: r = run_aten(s.name, args, kwargs); break;
      case GraphStep::Kind::Attr: break;    // a subgraph's name: the Cond step holds the subgraph itself
      case GraphStep::Kind::Marker: break;  // the steps carry their own autocast state
      case GraphStep::Kind::Cond: {
        // Only the branch the predicate picks runs, as torch.cond runs eagerly.
        const RegionResult& branch = *s.branches.at(vm.truth(args.at(0)) ? 0 : 1);
        py::ValueVec operands = result_items(args.at(3));
        std::vector<Value> outs = run_graph(vm, branch, std::vector<Value>(operands.begin(), operands.end()));
        r = Value(py::make<py::Tuple>(py::ValueVec(outs.begin(), outs.end())));
        break;
      }
      case GraphStep::Kind::FunctionApply: {
        // The class's apply, as eager code calls it: its forward runs without
        // grad and autograd records the class's own backward.
        PlainPython plain;
        Value out = vm.call(vm.getattr(s.function, "apply"), result_items(args.at(2)));
        r = s.single_output ? py::tuple_value({out}) : py::tuple_value(result_items(out));
        break;
      }
      case GraphStep::Kind::PyFunction: {
        PlainPython plain;
        r = vm.call(s.function, std::move(args), std::move(kwargs));
        break;
      }
      case GraphStep::Kind::GetItem: {
        const Value& parent = args.at(0);
        r = result_items(parent).at(size_t(s.index));
        break;
      }
    }
    env[size_t(s.node)] = std::move(r);
  }
  std::vector<Value> outs;
  const Node* out = region.graph.output();
  for (const Arg& a : out->args[0].items) outs.push_back(env[size_t(a.node_id())]);
  return outs;
}

}  // namespace kiln::capture
