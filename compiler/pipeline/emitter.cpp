#include "compiler/pipeline/emitter.h"

#include <set>

#include "core/ops/registry.h"
#include "core/util/status.h"

namespace kiln::pipeline {

namespace {

// The op registry's form of an argument, with `tensor_of` giving each Var's tensor.
template <class TensorOf>
Value to_value(const EArg& a, TensorOf&& tensor_of) {
  switch (a.kind) {
    case EArg::Kind::Var: return Value(tensor_of(a.var));
    case EArg::Kind::VarList: {
      ValueList items;
      for (Var v : a.vars) items.push_back(v.valid() ? Value(tensor_of(v)) : Value());
      return Value(std::move(items));
    }
    case EArg::Kind::Const: return a.value;
  }
  return Value();
}

Arg const_arg(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None: return Arg::none();
    case Value::Kind::Bool: return Arg::boolean(v.to_bool());
    case Value::Kind::Int: return Arg::integer(v.to_int());
    case Value::Kind::Float: return Arg::real(v.to_double());
    case Value::Kind::String: return Arg::str(v.to_string());
    case Value::Kind::DType: return Arg::dtype(std::string(dtype_name(v.to_dtype())));
    case Value::Kind::List: {
      std::vector<Arg> items;
      for (const Value& x : v.to_list()) items.push_back(const_arg(x));
      return Arg::list(std::move(items));
    }
    case Value::Kind::Tensor: break;
  }
  KILN_FAIL("a tensor constant cannot be an argument of an emitted graph node; pass it as a Var");
}

}  // namespace

std::vector<Tensor> result_tensors(const ValueList& results, std::string_view op) {
  std::vector<Tensor> out;
  for (const Value& r : results) {
    if (r.is_tensor()) {
      out.push_back(r.to_tensor());
    } else if (r.is_none() || r.is_int()) {
      // An int result (a SymInt output: the CUDA flash attention's max_q and
      // max_k) has no Var, as a None one; formulas read it from shapes.
      out.push_back(Tensor());
    } else if (r.is_list()) {
      for (const Value& x : r.to_list()) out.push_back(x.to_tensor());
    } else {
      KILN_FAIL(op, " returned a ", kind_name(r.kind()), ", which an emitter cannot hold (only tensors)");
    }
  }
  return out;
}

EArg earg_of(const Value& a, const std::function<Var(const Tensor&)>& var_of) {
  if (a.is_tensor()) return var_of(a.to_tensor());
  if (a.is_list()) {
    bool tensors = false;
    for (const Value& x : a.to_list()) tensors |= x.is_tensor();
    if (tensors) {
      std::vector<Var> vs;
      for (const Value& x : a.to_list()) vs.push_back(x.is_none() ? Var{} : var_of(x.to_tensor()));
      return EArg::list(std::move(vs));
    }
  }
  return a;
}

TensorKey key_of(const Tensor& t) {
  return {t.storage().get(), t.storage_offset(), t.sizes(), t.strides(), t.dtype()};
}


Var Emitter::call1(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs) {
  std::vector<Var> r = call(op, args, kwargs);
  KILN_CHECK(r.size() == 1, op, " gave ", r.size(), " outputs where one was expected");
  return r[0];
}

std::string aten_base_name(std::string_view op) {
  size_t colon = op.find("::");
  std::string_view rest = colon == std::string_view::npos ? op : op.substr(colon + 2);
  return std::string(rest.substr(0, rest.find('.')));
}

TensorMeta tensor_meta_of(const Tensor& t) {
  TensorMeta m;
  m.dtype = std::string(dtype_name(t.dtype()));
  for (int64_t s : t.sizes()) m.sizes.push_back(SymInt::of(s));
  std::vector<SymInt> strides;
  for (int64_t s : t.strides()) strides.push_back(SymInt::of(s));
  m.strides = std::move(strides);
  m.device = "cpu";
  return m;
}

// ---- EagerEmitter ----

Var EagerEmitter::input(Tensor t) {
  values_.push_back(std::move(t));
  return Var{int32_t(values_.size() - 1)};
}

std::vector<Var> EagerEmitter::call(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs) {
  auto tensor_of = [this](Var v) { return tensor(v); };
  ValueList values;
  for (const EArg& a : args) values.push_back(to_value(a, tensor_of));
  KwargList kw;
  for (const auto& [k, a] : kwargs) kw.emplace_back(k, to_value(a, tensor_of));
  Expected<ValueList> r = call_op(op, values, kw);
  if (!r) throw Error(r.status().message());
  std::vector<Var> out;
  for (Tensor& t : result_tensors(*r, op)) out.push_back(t.defined() ? input(std::move(t)) : Var{});
  return out;
}

// ---- GraphEmitter ----

GraphEmitter::GraphEmitter(Graph& g) : g_(g) {
  for (const Node& n : g_.nodes) used_.insert(n.name);
}

std::string GraphEmitter::fresh_name(std::string_view base) {
  // FX does not name a node after a Python builtin: abs_1, sum_1, max_1.
  static const std::set<std::string, std::less<>> builtins = {"abs", "sum", "max", "min", "pow", "round", "all", "any",
                                                              "len", "list", "tuple", "dict", "int", "float", "bool",
                                                              "str", "slice", "range", "divmod", "input", "id", "hash"};
  std::string name(base);
  if (builtins.count(base)) name += "_1";
  int& k = next_suffix_[name];
  while (used_.count(name)) name = std::string(base) + "_" + std::to_string(++k);
  used_.insert(name);
  return name;
}

Var GraphEmitter::add_var(NodeId node, Tensor meta) {
  nodes_.push_back(node);
  metas_.push_back(std::move(meta));
  return Var{int32_t(nodes_.size() - 1)};
}

Var GraphEmitter::placeholder(const std::string& name, const Tensor& example) {
  Node n;
  n.op = OpKind::Placeholder;
  n.name = fresh_name(name);
  n.target = n.name;
  n.meta.val = Val::of_tensor(tensor_meta_of(example));
  NodeId id = g_.add(std::move(n));
  return add_var(id, Tensor::meta_strided(example.sizes(), example.strides(), example.dtype()));
}

Var GraphEmitter::adopt(NodeId node, const Tensor& meta) { return add_var(node, meta); }

void GraphEmitter::set_origin(std::vector<StackFrame> stack, std::vector<std::string> from) {
  stack_ = std::move(stack);
  from_ = std::move(from);
}

std::vector<Var> GraphEmitter::call(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs) {
  auto meta_of = [this](Var v) { return tensor(v); };
  ValueList values;
  for (const EArg& a : args) values.push_back(to_value(a, meta_of));
  KwargList kw;
  for (const auto& [k, a] : kwargs) kw.emplace_back(k, to_value(a, meta_of));
  Expected<ValueList> r = call_meta(op, values, kw);
  if (!r) throw Error(r.status().message());
  std::vector<Tensor> outs = result_tensors(*r, op);

  auto graph_arg = [this](const EArg& a) {
    switch (a.kind) {
      case EArg::Kind::Var: return Arg::node(node(a.var));
      case EArg::Kind::VarList: {
        std::vector<Arg> items;
        for (Var v : a.vars) items.push_back(v.valid() ? Arg::node(node(v)) : Arg::none());
        return Arg::list(std::move(items));
      }
      case EArg::Kind::Const: return const_arg(a.value);
    }
    return Arg::none();
  };
  Node n;
  n.op = OpKind::CallFunction;
  // The registered overload's full name ("aten::linear" -> "aten::linear.default"),
  // and keyword arguments that follow the positional ones moved into place, so
  // a node reads as AOT graphs print it however the caller spelled the call.
  const OpDef* def = op_registry().find(op);
  n.target = def ? def->schema.full_name() : std::string(op);
  n.name = fresh_name(aten_base_name(op));
  for (const EArg& a : args) n.args.push_back(graph_arg(a));
  std::vector<bool> placed(kwargs.size(), false);
  if (def) {
    for (size_t i = args.size(); i < def->schema.args.size() && !def->schema.args[i].kwarg_only; ++i) {
      size_t k = 0;
      while (k < kwargs.size() && kwargs[k].first != def->schema.args[i].name) ++k;
      if (k == kwargs.size()) break;
      n.args.push_back(graph_arg(kwargs[k].second));
      placed[k] = true;
    }
  }
  for (size_t k = 0; k < kwargs.size(); ++k)
    if (!placed[k]) n.kwargs.emplace_back(kwargs[k].first, graph_arg(kwargs[k].second));
  n.meta.stack = stack_;
  n.meta.from = from_;
  bool single = r->size() == 1 && (*r)[0].is_tensor();
  if (single) {
    n.meta.val = Val::of_tensor(tensor_meta_of(outs[0]));
  } else {
    std::vector<Val> items;
    for (const Tensor& t : outs) items.push_back(t.defined() ? Val::of_tensor(tensor_meta_of(t)) : Val());
    n.meta.val = Val::tuple(std::move(items));
  }
  NodeId id = g_.add(std::move(n));
  if (single) return {add_var(id, outs[0])};
  // Multi-output ops are read through getitem nodes, as in AOT graphs.
  std::vector<Var> vars;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].defined()) {
      vars.push_back(Var{});
      continue;
    }
    Node gi;
    gi.op = OpKind::CallFunction;
    gi.target = "operator.getitem";
    gi.name = fresh_name("getitem");
    gi.args = {Arg::node(id), Arg::integer(int64_t(i))};
    gi.meta.val = Val::of_tensor(tensor_meta_of(outs[i]));
    gi.meta.stack = stack_;
    gi.meta.from = from_;
    vars.push_back(add_var(g_.add(std::move(gi)), outs[i]));
  }
  return vars;
}

NodeId GraphEmitter::add_node(Node n) {
  n.name = fresh_name(n.name);
  return g_.add(std::move(n));
}

void GraphEmitter::output(const std::vector<Var>& vars) {
  std::vector<Arg> items;
  for (Var v : vars) items.push_back(v.valid() ? Arg::node(node(v)) : Arg::none());  // a None result
  Node out;
  out.op = OpKind::Output;
  out.name = "output";
  out.target = "output";
  out.args = {Arg::tuple(std::move(items))};
  g_.add(std::move(out));
}

}  // namespace kiln::pipeline
