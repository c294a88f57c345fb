#include "compiler/pipeline/aten_interpreter.h"

#include "core/ops/registry.h"

namespace kiln::pipeline {

Expected<Value> constant_value(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: return Value();
    case Arg::Kind::Bool: return Value(a.b);
    case Arg::Kind::Int:
      if (!a.s.empty()) return Status::error("integer " + a.s + " does not fit in 64 bits");
      return Value(a.i);
    case Arg::Kind::Float: return Value(a.f);
    case Arg::Kind::Str: return Value(a.s);
    case Arg::Kind::DType: {
      std::optional<DType> d = dtype_from_name(a.s);
      if (!d) return Status::error("unknown dtype " + a.s);
      return Value(*d);
    }
    case Arg::Kind::Device:
    case Arg::Kind::Layout:
    case Arg::Kind::MemoryFormat: return Value(a.s);
    case Arg::Kind::List:
    case Arg::Kind::Tuple: {
      ValueList items;
      for (const Arg& x : a.items) {
        Expected<Value> v = constant_value(x);
        if (!v) return v.status();
        items.push_back(std::move(*v));
      }
      return Value(std::move(items));
    }
    default: break;
  }
  return Status::error("argument kind not supported by the ATen interpreter");
}

Expected<Value> arg_value(const Arg& a, const std::function<std::optional<Value>(NodeId)>& node_value) {
  if (a.kind == Arg::Kind::Node) {
    std::optional<Value> v = node_value(a.node_id());
    if (!v) return Status::error("the value of node " + std::to_string(a.node_id()) + " is not known");
    return std::move(*v);
  }
  if (a.kind == Arg::Kind::List || a.kind == Arg::Kind::Tuple) {
    ValueList items;
    for (const Arg& x : a.items) {
      Expected<Value> v = arg_value(x, node_value);
      if (!v) return v.status();
      items.push_back(std::move(*v));
    }
    return Value(std::move(items));
  }
  return constant_value(a);
}

Expected<std::vector<Value>> run_aten_graph(const Graph& g, const std::vector<Value>& inputs) {
  std::vector<Value> env(g.size());
  const auto read_env = [&env](NodeId id) -> std::optional<Value> { return env.at(size_t(id)); };
  size_t next_input = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.nodes[i];
    auto fail = [&](const std::string& why) { return Status::error("node " + n.name + " (" + n.target + "): " + why); };
    switch (n.op) {
      case OpKind::Placeholder:
        if (next_input >= inputs.size()) return fail("more placeholders than inputs (" + std::to_string(inputs.size()) + ")");
        env[i] = inputs[next_input++];
        break;
      case OpKind::CallFunction: {
        ValueList args;
        for (const Arg& a : n.args) {
          Expected<Value> v = arg_value(a, read_env);
          if (!v) return fail(v.status().message());
          args.push_back(std::move(*v));
        }
        if (n.target == "operator.getitem") {
          if (args.size() != 2 || !args[0].is_list()) return fail("getitem of a value that is not a tuple");
          const ValueList& items = args[0].to_list();
          int64_t k = args[1].to_int();
          if (k < 0 || size_t(k) >= items.size()) return fail("getitem index out of range");
          env[i] = items[size_t(k)];
          break;
        }
        KwargList kwargs;
        for (const auto& [k, a] : n.kwargs) {
          Expected<Value> v = arg_value(a, read_env);
          if (!v) return fail(v.status().message());
          kwargs.emplace_back(k, std::move(*v));
        }
        if (!op_registry().find(n.target)) return fail("not a registered ATen overload");
        Expected<ValueList> r = call_op(n.target, args, kwargs);
        if (!r) return fail(r.status().message());
        // A single result is the value itself; several are a tuple read by getitem.
        env[i] = r->size() == 1 ? std::move((*r)[0]) : Value(std::move(*r));
        break;
      }
      case OpKind::Output: {
        std::vector<Value> outs;
        const Arg& tree = n.args.at(0);
        if (tree.kind == Arg::Kind::Tuple || tree.kind == Arg::Kind::List) {
          for (const Arg& a : tree.items) {
            Expected<Value> v = arg_value(a, read_env);
            if (!v) return fail(v.status().message());
            outs.push_back(std::move(*v));
          }
        } else {
          Expected<Value> v = arg_value(tree, read_env);
          if (!v) return fail(v.status().message());
          outs.push_back(std::move(*v));
        }
        return outs;
      }
      default: return fail("only placeholder, call_function and output nodes run in an ATen graph");
    }
  }
  return Status::error("graph has no output node");
}

}  // namespace kiln::pipeline
