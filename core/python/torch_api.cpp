// The callable registry and PyTorch's overload matching: each overload is tried
// in table order; the first whose parameters accept the arguments runs. The
// conversion rules and error texts follow torch/csrc/utils/python_arg_parser.cpp.
#include "core/python/torch_api.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/python/torch_api_binding.h"
#include "core/util/limits.h"

namespace kiln::torchapi {
using namespace detail;

namespace {

// PyTorch's argument parser takes NumPy's names for four parameters of every
// function (python_arg_parser.cpp, numpy_compatibility_arg_names):
// torch.sum(x, axis=0, keepdims=True), torch.add(x1=a, x2=b).
bool is_numpy_alias(const std::string& given, const std::string& param) {
  if (param == "dim") return given == "axis";
  if (param == "keepdim") return given == "keepdims";
  if (param == "input") return given == "x" || given == "a" || given == "x1";
  if (param == "other") return given == "x2";
  return false;
}

struct Registry {
  Table table;
  std::map<std::string, const Callable*, std::less<>> by_name;
  std::map<std::string, std::vector<const Callable*>, std::less<>> by_module;
};

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    register_pointwise(reg.table);
    register_reductions(reg.table);
    register_shapes(reg.table);
    register_linalg(reg.table);
    register_creation(reg.table);
    register_tensor_methods(reg.table);
    register_nn_activations(reg.table);
    register_nn_functional(reg.table);
    register_nn_losses(reg.table);
    for (const auto& c : reg.table.callables) {
      KILN_CHECK(reg.by_name.emplace(c->python_name, c.get()).second, "torch callable defined twice: ",
                 c->python_name);
      reg.by_module[c->module].push_back(c.get());
    }
    // Callables that may draw from the default generator in eager mode.
    static const char* const kRandom[] = {
        "torch.rand", "torch.randn", "torch.randint", "torch.randperm", "torch.rand_like", "torch.randn_like",
        "torch.randint_like", "torch.normal", "torch.bernoulli", "Tensor.bernoulli", "Tensor.uniform_",
        "Tensor.normal_", "Tensor.bernoulli_", "Tensor.random_", "Tensor.exponential_", "torch.dropout",
        "torch.dropout_", "torch.feature_dropout", "torch.nn.functional.dropout", "torch.nn.functional.dropout1d",
        "torch.nn.functional.dropout2d", "torch.nn.functional.dropout3d",
        "torch.nn.functional.scaled_dot_product_attention", "torch.multinomial", "Tensor.multinomial"};
    for (const char* name : kRandom) {
      auto it = reg.by_name.find(name);
      KILN_CHECK(it != reg.by_name.end(), "random callable missing: ", name);
      const_cast<Callable*>(it->second)->uses_rng = true;
    }
    for (auto& [_, list] : reg.by_module)
      std::sort(list.begin(), list.end(), [](const Callable* a, const Callable* b) { return a->name < b->name; });
    return reg;
  }();
  return r;
}

// ---------------------------------------------------------------- argument conversion

// The Python type name of a value, as PyTorch's messages show it.
std::string type_desc(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::DType: return "torch.dtype";
    case Value::Kind::Tensor: return "Tensor";
    case Value::Kind::List: {
      std::string s = "tuple of (";
      const ValueList& l = v.to_list();
      for (size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + type_desc(l[i]);
      return s + ")";
    }
  }
  return "object";
}

bool is_python_int(const Value& v) { return v.is_int(); }  // bool is not an int here, as in PyTorch

bool is_integral_0d(const Value& v) {
  return v.is_tensor() && v.to_tensor().dim() == 0 && is_integral(v.to_tensor().dtype(), false);
}

// Converts `v` for a parameter of type `t`; false when the type does not accept it.
bool convert(const ParamType& t, const Value& v, Mode mode, Value& out) {
  using B = ParamType::Base;
  if (v.is_none()) {
    out = Value();
    return t.optional || t.base == B::Any || t.base == B::Layout || t.base == B::MemoryFormat ||
           t.base == B::Generator || t.base == B::Device;
  }
  switch (t.base) {
    case B::Tensor:
      out = v;
      return v.is_tensor();
    case B::TensorOrNumber:
      out = v;
      return v.is_tensor() || v.is_int() || v.is_float() || v.is_bool();
    case B::Scalar:
      if (v.is_int() || v.is_float() || v.is_bool()) {
        out = v;
        return true;
      }
      if (v.is_tensor() && v.to_tensor().dim() == 0) {
        out = Value(item_of(v.to_tensor(), mode, "Scalar argument"));
        return true;
      }
      return false;
    case B::Int:
      if (is_python_int(v)) {
        out = v;
        return true;
      }
      if (is_integral_0d(v)) {
        out = Value(item_of(v.to_tensor(), mode, "int argument").to_int());
        return true;
      }
      return false;
    case B::Float:
      if (v.is_int() || v.is_float() || v.is_bool()) {
        out = Value(v.to_double());
        return true;
      }
      if (v.is_tensor() && v.to_tensor().dim() == 0) {
        out = Value(item_of(v.to_tensor(), mode, "float argument").to_double());
        return true;
      }
      return false;
    case B::Bool:
      out = v;
      return v.is_bool();
    case B::IntList: {
      if (t.size > 0 && is_python_int(v)) {
        out = Value::int_list(std::vector<int64_t>(size_t(t.size), v.to_int()));
        return true;
      }
      if (!v.is_list()) return false;
      ValueList items;
      for (const Value& e : v.to_list()) {
        Value c;
        if (!convert(ParamType{B::Int}, e, mode, c)) return false;
        items.push_back(c);
      }
      out = Value(std::move(items));
      return true;
    }
    case B::FloatList: {
      if (t.size > 0 && (v.is_int() || v.is_float())) {
        out = Value(ValueList(size_t(t.size), Value(v.to_double())));
        return true;
      }
      if (!v.is_list()) return false;
      ValueList items;
      for (const Value& e : v.to_list()) {
        if (!(e.is_int() || e.is_float())) return false;
        items.emplace_back(e.to_double());
      }
      out = Value(std::move(items));
      return true;
    }
    case B::TensorList:
      out = v;
      if (!v.is_list()) return false;
      return std::all_of(v.to_list().begin(), v.to_list().end(), [](const Value& e) { return e.is_tensor(); });
    case B::ScalarType:
      out = v;
      return v.kind() == Value::Kind::DType;
    case B::Str:
      out = v;
      return v.kind() == Value::Kind::String;
    case B::Device:
      out = v.is_int() ? Value("cuda:" + std::to_string(v.to_int())) : v;
      return v.kind() == Value::Kind::String || v.is_int();
    case B::Layout:
    case B::MemoryFormat:
      out = v;
      return v.kind() == Value::Kind::String || v.is_int();
    case B::Generator:
    case B::Any:
      out = v;
      return true;
  }
  return false;
}

// ---------------------------------------------------------------- binding

std::string plural(size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// Why an overload did not match: PyTorch's one-overload message, and what its
// "didn't match because ..." line under each overload marks.
struct Mismatch {
  std::string message;
  int bad_position = -1;     // a positional argument of the wrong type (0 = first after self)
  std::string bad_keyword;   // a keyword argument of the wrong type
  std::string unknown_keyword;
};

// Binds args/kwargs to `sig` or says why not (PyTorch's wording).
bool bind(const Signature& sig, bool is_method, const ValueList& args, const KwargList& kwargs, Mode mode,
          ValueList& out, Mismatch& mismatch) {
  std::string& why = mismatch.message;
  const size_t first = is_method ? 1 : 0;
  const std::string fn = sig.name + "()";
  std::vector<size_t> positional;  // parameter indices that may be given by position
  for (size_t i = first; i < sig.params.size(); ++i)
    if (!sig.params[i].kwarg_only) positional.push_back(i);
  std::vector<std::optional<Value>> bound(sig.params.size());
  if (is_method) bound[0] = args[0];

  const size_t nargs = args.size() - first;
  // x.view(2, 3) for x.view((2, 3)): PyTorch's allow_varargs_intlist; and `*tensors` parameters.
  bool varargs = positional.size() == 1 && sig.params[positional[0]].type.base == ParamType::Base::IntList &&
                 nargs >= 1 && (is_python_int(args[first]) || is_integral_0d(args[first]));
  varargs |= positional.size() == 1 && sig.params[positional[0]].varargs && !(nargs == 1 && args[first].is_list());
  if (varargs) {
    ValueList items(args.begin() + long(first), args.end());
    Value converted;
    if (!convert(sig.params[positional[0]].type, Value(std::move(items)), mode, converted)) {
      why = fn + ": argument '" + sig.params[positional[0]].name + "' must be " +
            type_display(sig.params[positional[0]].type) + ", but found element of another type";
      return false;
    }
    bound[positional[0]] = converted;
  } else {
    if (nargs > positional.size()) {
      size_t required = 0;
      for (size_t i : positional)
        if (!sig.params[i].default_value) ++required;
      why = fn + " takes " +
            (required == positional.size() ? plural(positional.size(), "positional argument")
                                           : "from " + std::to_string(required) + " to " +
                                                 plural(positional.size(), "positional argument")) +
            " but " + std::to_string(nargs) + (nargs == 1 ? " was" : " were") + " given";
      return false;
    }
    for (size_t k = 0; k < nargs; ++k) {
      const Param& p = sig.params[positional[k]];
      Value converted;
      if (!convert(p.type, args[first + k], mode, converted)) {
        why = fn + ": argument '" + p.name + "' (position " + std::to_string(k + 1) + ") must be " +
              type_display(p.type) + ", not " + type_desc(args[first + k]);
        mismatch.bad_position = int(k);
        return false;
      }
      bound[positional[k]] = std::move(converted);
    }
  }
  for (const auto& [name, value] : kwargs) {
    size_t idx = sig.params.size();
    for (size_t i = first; i < sig.params.size(); ++i)
      if (sig.params[i].name == name) idx = i;
    for (size_t i = first; i < sig.params.size() && idx == sig.params.size(); ++i)
      if (is_numpy_alias(name, sig.params[i].name)) idx = i;
    if (idx == sig.params.size()) {
      why = fn + " got an unexpected keyword argument '" + name + "'";
      mismatch.unknown_keyword = name;
      return false;
    }
    if (bound[idx]) {
      why = fn + " got multiple values for argument '" + name + "'";
      return false;
    }
    Value converted;
    if (!convert(sig.params[idx].type, value, mode, converted)) {
      why = fn + ": argument '" + name + "' must be " + type_display(sig.params[idx].type) + ", not " +
            type_desc(value);
      mismatch.bad_keyword = name;
      return false;
    }
    bound[idx] = std::move(converted);
  }
  std::vector<std::string> missing;
  for (size_t i = first; i < sig.params.size(); ++i) {
    if (bound[i]) continue;
    const Param& p = sig.params[i];
    if (!p.default_value) {
      missing.push_back("\"" + p.name + "\"");
      continue;
    }
    Value converted;
    bool ok = convert(p.type, *p.default_value, mode, converted);
    KILN_CHECK(ok, "default of ", p.name, " does not fit its type in ", sig.name, sig.text);
    bound[i] = std::move(converted);
  }
  if (!missing.empty()) {
    // PyTorch says "arguments" even for one.
    why = fn + " missing " + std::to_string(missing.size()) + " required positional arguments: ";
    for (size_t i = 0; i < missing.size(); ++i) why += (i ? ", " : "") + missing[i];
    return false;
  }
  out.clear();
  for (auto& b : bound) out.push_back(std::move(*b));
  return true;
}

// "(Tensor, str)"; with a mismatch, the offending argument as "!str!".
std::string got_text(bool is_method, const ValueList& args, const KwargList& kwargs, const Mismatch* m = nullptr) {
  std::string s = "(";
  bool first = true;
  size_t first_arg = is_method ? 1 : 0;
  for (size_t i = first_arg; i < args.size(); ++i) {
    std::string t = type_desc(args[i]);
    if (m && m->bad_position == int(i - first_arg)) t = "!" + t + "!";
    s += (first ? "" : ", ") + t;
    first = false;
  }
  for (const auto& [name, v] : kwargs) {
    std::string t = type_desc(v);
    if (m && m->bad_keyword == name) t = "!" + t + "!";
    s += (first ? "" : ", ") + name + "=" + t;
    first = false;
  }
  return s + ")";
}

}  // namespace

const Callable* find(std::string_view python_name) {
  const auto& m = registry().by_name;
  auto it = m.find(python_name);
  return it == m.end() ? nullptr : it->second;
}

std::vector<const Callable*> callables_of(std::string_view module) {
  const auto& m = registry().by_module;
  auto it = m.find(module);
  return it == m.end() ? std::vector<const Callable*>{} : it->second;
}

std::vector<std::string> modules() {
  std::vector<std::string> out;
  for (const auto& [name, _] : registry().by_module) out.push_back(name);
  return out;
}

std::string reference_markdown() {
  std::string out =
      "# The torch callables\n\n"
      "Generated from Kiln's binding table (`core/python/torch_api_*.cpp`) by `kiln-torch-api-table`;\n"
      "`tests/core/test_torch_api.cpp` fails when this file and the table differ. Each row is one\n"
      "callable with its overloads, tried in order, written as PyTorch's argument parser prints\n"
      "them. The Python-level parts of torch (`torch.nn` modules, `torch.optim`,\n"
      "`torch.utils.data`, `torch.distributions`, `torch.autograd`) are listed in\n"
      "[python.md](python.md).\n";
  auto escape = [](std::string s) {
    std::string r;
    for (char ch : s) {
      if (ch == '|') r += "\\|";
      else r += ch;
    }
    return r;
  };
  for (const std::string& module : modules()) {
    std::vector<const Callable*> list = callables_of(module);
    out += "\n## `";
    out += module;
    out += "` (";
    out += std::to_string(list.size());
    out += ")\n\n| name | signatures |\n| --- | --- |\n";
    for (const Callable* c : list) {
      std::string sigs;
      for (const detail::Signature* s : c->signatures) {
        if (!sigs.empty()) sigs += "<br>";
        sigs += '`';
        sigs += escape(s->display(c->is_method));
        sigs += '`';
      }
      out += "| `";
      out += c->name;
      out += "` | ";
      out += sigs;
      out += " |\n";
    }
  }
  return out;
}

Expected<ValueList> call(const Callable& c, const ValueList& args, const KwargList& kwargs, Mode mode,
                         CallInfo* info, CpuGenerator* generator) {
  if (c.is_method && (args.empty() || !args[0].is_tensor()))
    return Status::error("descriptor '" + c.name + "' for 'torch._C.TensorBase' objects needs a Tensor as self");
  try {
    std::vector<Mismatch> reasons;
    for (const Signature* sig : c.signatures) {
      ValueList bound;
      Mismatch why;
      if (!bind(*sig, c.is_method, args, kwargs, mode, bound, why)) {
        reasons.push_back(std::move(why));
        continue;
      }
      std::string device;
      for (size_t i = 0; i < sig->params.size(); ++i)
        if (sig->params[i].type.base == ParamType::Base::Device) {
          check_device(bound[i]);
          if (!bound[i].is_none()) device = device_name(bound[i]);
        }
      std::optional<AutocastExcluded> below_autocast;
      if (autocast_state().any())
        if (std::optional<AutocastPolicy> policy = autocast_policy(c.name)) {
          std::vector<std::string_view> names;
          for (const Param& p : sig->params) names.push_back(p.name);
          apply_autocast(*policy, mode, bound, names);
          below_autocast.emplace();
        }
      Bound b(*sig, std::move(bound), mode, generator);
      ValueList result = sig->handler(b);
      // Ops returning Tensor[] give one List; the Python tuple holds its items.
      if (sig->result == ResultKind::Tuple && result.size() == 1 && result[0].is_list())
        result = ValueList(result[0].to_list());
      if (info) {
        info->kind = sig->result;
        // Optional extra results (torch.unique(return_counts=True)) make a tuple.
        if (info->kind == ResultKind::Single && result.size() > 1) info->kind = ResultKind::Tuple;
        info->type_name = sig->tuple_type;
        info->fields = sig->fields;
        info->returns_arg = b.returns_arg() >= 0 ? b.returns_arg() : sig->returns_arg;
        info->signature = c.name + sig->display(c.is_method);
        info->device = device;
      }
      return result;
    }
    // names= is PyTorch's (prototype) named-tensor API: a gap of Kiln, not the
    // program's TypeError. names=None, its default, names no dimension: the call
    // is the one without it.
    if (std::all_of(reasons.begin(), reasons.end(), [](const Mismatch& m) { return m.unknown_keyword == "names"; })) {
      KwargList rest;
      for (const auto& kv : kwargs)
        if (kv.first != "names" || !kv.second.is_none()) rest.push_back(kv);
      if (rest.size() < kwargs.size()) return call(c, args, rest, mode, info, generator);
      return Status::error(c.name + "(names=...): named tensors (PyTorch's prototype named-tensor API) are not "
                           "supported by Kiln");
    }
    if (reasons.size() == 1) return Status::error(reasons[0].message);
    std::string msg = c.name + "() received an invalid combination of arguments - got " +
                      got_text(c.is_method, args, kwargs) + ", but expected one of:";
    for (size_t i = 0; i < c.signatures.size(); ++i) {
      msg += "\n * " + c.signatures[i]->display(c.is_method);
      const Mismatch& m = reasons[i];
      if (m.bad_position >= 0 || !m.bad_keyword.empty())
        msg += "\n      didn't match because some of the arguments have invalid types: " +
               got_text(c.is_method, args, kwargs, &m);
      else if (!m.unknown_keyword.empty())
        msg += "\n      didn't match because some of the keywords were incorrect: " + m.unknown_keyword;
    }
    return Status::error(msg);
  } catch (const Error& e) {
    return Status::error(e.what());
  } catch (const std::bad_alloc& e) {
    return Status::error(c.python_name + ": " + out_of_memory_text(e));
  }
}

}  // namespace kiln::torchapi
