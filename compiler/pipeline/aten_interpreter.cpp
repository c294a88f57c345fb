#include "compiler/pipeline/aten_interpreter.h"

#include <algorithm>
#include <functional>

#include "core/ops/overloads.h"
#include "core/ops/registry.h"

namespace kiln::pipeline {

namespace {

struct OpName {
  std::string_view base;      // "add_"
  std::string_view overload;  // "Tensor"; "default" when the target has none
};

std::optional<OpName> split_aten(std::string_view target) {
  if (!target.starts_with("aten::")) return std::nullopt;
  std::string_view rest = target.substr(6);
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return OpName{rest, "default"};
  return OpName{rest.substr(0, dot), rest.substr(dot + 1)};
}

Value as_meta_value(const Value& v) {
  if (v.is_tensor()) {
    const Tensor& t = v.to_tensor();
    return Value(Tensor::meta_strided(t.sizes(), t.strides(), t.dtype()));
  }
  if (v.is_list()) {
    ValueList items;
    for (const Value& x : v.to_list()) items.push_back(as_meta_value(x));
    return Value(std::move(items));
  }
  return v;
}

// Eager semantics of a write: the result must already have the written
// tensor's shape (an in-place op never resizes self); its dtype is converted.
Status write_result(const Tensor& dst, const Value& result, std::string_view what) {
  if (!result.is_tensor()) return Status::error(std::string(what) + " gives no single tensor");
  const Tensor& r = result.to_tensor();
  if (r.sizes() != dst.sizes())
    return Status::error("output with shape " + shape_str(dst.sizes()) + " doesn't match the broadcast shape " +
                         shape_str(r.sizes()));
  dst.copy_(r);
  return Status();
}

}  // namespace

std::optional<std::string> inplace_functional_twin(std::string_view target) {
  std::optional<OpName> name = split_aten(target);
  if (!name) return std::nullopt;
  std::string base(name->base);
  if (base.size() > 5 && base.starts_with("__i") && base.ends_with("__")) {
    base = "__" + base.substr(3);
  } else if (base.size() > 1 && base.back() == '_' && !base.ends_with("__")) {
    base.pop_back();
  } else {
    return std::nullopt;
  }
  std::string twin = "aten::" + base + "." + std::string(name->overload);
  if (!op_registry().find(twin)) return std::nullopt;
  return twin;
}

bool is_view_op(std::string_view target) {
  const OpDef* def = op_registry().find(target);
  return def && !def->schema.args.empty() && def->schema.args[0].is_alias && !def->schema.args[0].is_write;
}

// A dump's graph as the CPU rungs can run it, computing the same: PyTorch
// wraps a Python number given for a Tensor argument into a 0-d tensor (dumps
// hold `aten.add.Tensor(num_batches_tracked, 1)`) where the op registry does
// not, so such nodes run their `.Scalar` overload; and devices become the CPU.
void make_runnable_on_cpu(Graph& g) {
  for (Node& n : g.nodes) {
    // The rungs run on the CPU: a dump made on a GPU names its device in factory calls.
    std::function<void(Arg&)> to_cpu = [&](Arg& a) {
      if (a.kind == Arg::Kind::Device && a.s.starts_with("cuda")) a.s = "cpu";
      for (Arg& item : a.items) to_cpu(item);
    };
    for (Arg& a : n.args) to_cpu(a);
    for (auto& kv : n.kwargs) to_cpu(kv.second);
    if (n.op != OpKind::CallFunction || !n.target.ends_with(".Tensor") || n.args.size() < 2) continue;
    Arg::Kind k = n.args[1].kind;
    if (k != Arg::Kind::Int && k != Arg::Kind::Float && k != Arg::Kind::Bool) continue;
    std::string scalar = n.target.substr(0, n.target.size() - 7) + ".Scalar";
    if (op_registry().find(scalar)) n.target = scalar;
  }
}

bool is_out_overload(std::string_view target) {
  std::optional<OpName> name = split_aten(target);
  return name && (name->overload == "out" || name->overload.ends_with("_out"));
}

Expected<std::string> out_functional_overload(std::string_view target, const ValueList& args, const KwargList& kwargs) {
  std::optional<OpName> name = split_aten(target);
  if (!name) return Status::error(std::string(target) + " is not an ATen overload");
  std::string prefix = "aten::" + std::string(name->base) + ".";
  std::vector<std::string> candidates = registered_overloads("aten::" + std::string(name->base));
  auto rank = [&](const std::string& s) { return s == prefix + "default" ? 0 : s == prefix + "Tensor" ? 1 : 2; };
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  ValueList meta_args;
  for (const Value& v : args) meta_args.push_back(as_meta_value(v));
  KwargList meta_kwargs;
  for (const auto& [k, v] : kwargs) meta_kwargs.emplace_back(k, as_meta_value(v));
  for (const std::string& c : candidates)
    if (call_meta(c, meta_args, meta_kwargs)) return c;
  return Status::error("no functional overload of " + std::string(target) + " takes these arguments (" +
                       std::to_string(candidates.size()) + " tried)");
}

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

Expected<std::vector<Value>> run_aten_graph(const Graph& g, const std::vector<Value>& inputs,
                                            const std::atomic<bool>* cancel) {
  std::vector<Value> env(g.size());
  const auto read_env = [&env](NodeId id) -> std::optional<Value> { return env.at(size_t(id)); };
  size_t next_input = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (cancel && cancel->load(std::memory_order_relaxed)) return Status::error("cancelled");
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
        if (!op_registry().find(n.target)) {
          if (std::optional<std::string> twin = inplace_functional_twin(n.target)) {
            if (args.empty() || !args[0].is_tensor()) return fail("in-place op without a tensor self");
            Expected<ValueList> r = call_op(*twin, args, kwargs);
            if (!r) return fail(r.status().message());
            // unsqueeze_, transpose_, t_: an in-place view changes self's
            // sizes and strides, not its values; self is that view from here on.
            if (is_view_op(*twin)) {
              env[i] = (*r)[0];
              if (n.args[0].is_node()) env[size_t(n.args[0].node_id())] = (*r)[0];
              break;
            }
            if (Status s = write_result(args[0].to_tensor(), (*r)[0], *twin); !s.ok()) return fail(s.message());
            env[i] = args[0];
            break;
          }
          if (is_out_overload(n.target)) {
            auto out = std::find_if(kwargs.begin(), kwargs.end(), [](const auto& kv) { return kv.first == "out"; });
            if (out == kwargs.end() || !out->second.is_tensor()) return fail("out= overload without one out= tensor");
            Value dst = out->second;
            kwargs.erase(out);
            Expected<std::string> overload = out_functional_overload(n.target, args, kwargs);
            if (!overload) return fail(overload.status().message());
            Expected<ValueList> r = call_op(*overload, args, kwargs);
            if (!r) return fail(r.status().message());
            if (Status s = write_result(dst.to_tensor(), (*r)[0], *overload); !s.ok()) return fail(s.message());
            env[i] = dst;
            break;
          }
          return fail("not a registered ATen overload");
        }
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
