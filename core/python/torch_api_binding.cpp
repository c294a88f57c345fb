// Signature parsing and the ATen forwarding helpers behind the torch tables.
// The overload matching itself is in torch_api.cpp.
#include "core/python/torch_api_binding.h"
#include "core/python/autograd.h"

#include <cctype>
#include <optional>
#include <mutex>

#include "core/ops/registry.h"

namespace kiln::torchapi::detail {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits at top-level commas (defaults such as [1, 1] contain commas).
std::vector<std::string_view> split_params(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '[' || s[i] == '(') ++depth;
    if (s[i] == ']' || s[i] == ')') --depth;
    if (s[i] == ',' && depth == 0) {
      out.push_back(trim(s.substr(begin, i - begin)));
      begin = i + 1;
    }
  }
  if (!trim(s.substr(begin)).empty()) out.push_back(trim(s.substr(begin)));
  return out;
}

ParamType parse_type(std::string_view t, std::string_view sig) {
  ParamType p;
  if (!t.empty() && t.back() == '?') {
    p.optional = true;
    t.remove_suffix(1);
  }
  bool list = false;
  if (size_t lb = t.find('['); lb != std::string_view::npos) {
    list = true;
    std::string_view n = t.substr(lb + 1, t.size() - lb - 2);
    if (!n.empty()) p.size = std::stoi(std::string(n));
    t = t.substr(0, lb);
  }
  using B = ParamType::Base;
  if (list) {
    if (t == "int" || t == "SymInt") p.base = B::IntList;
    else if (t == "float") p.base = B::FloatList;
    else if (t == "Tensor") p.base = B::TensorList;
    else KILN_CHECK(false, "bad list type in torch signature ", sig);
    return p;
  }
  static const std::pair<std::string_view, B> kBases[] = {
      {"Tensor", B::Tensor},       {"TensorOrNumber", B::TensorOrNumber},
      {"Scalar", B::Scalar},       {"int", B::Int},
      {"SymInt", B::Int},          {"float", B::Float},
      {"bool", B::Bool},           {"ScalarType", B::ScalarType},
      {"str", B::Str},             {"Device", B::Device},
      {"Layout", B::Layout},       {"MemoryFormat", B::MemoryFormat},
      {"Generator", B::Generator}, {"Any", B::Any},
  };
  for (const auto& [name, base] : kBases)
    if (t == name) {
      p.base = base;
      return p;
    }
  KILN_CHECK(false, "unknown type '", t, "' in torch signature ", sig);
  return p;
}

Value parse_default(std::string_view d, const ParamType& type) {
  if (d == "None") return Value();
  if (d == "True") return Value(true);
  if (d == "False") return Value(false);
  if (d.front() == '\'' || d.front() == '"') return Value(std::string(d.substr(1, d.size() - 2)));
  if (d.front() == '[') {
    ValueList items;
    for (std::string_view item : split_params(d.substr(1, d.size() - 2)))
      items.push_back(parse_default(item, ParamType{ParamType::Base::Int}));
    return Value(std::move(items));
  }
  bool is_number = std::isdigit(static_cast<unsigned char>(d.front())) || d.front() == '-';
  if (!is_number) return Value(std::string(d));  // contiguous_format and other enum names
  bool floating = d.find_first_of(".eE") != std::string_view::npos || type.base == ParamType::Base::Float;
  if (floating) return Value(std::stod(std::string(d)));
  return Value(int64_t(std::stoll(std::string(d))));
}

}  // namespace

std::string type_display(const ParamType& t) {
  using B = ParamType::Base;
  switch (t.base) {
    case B::Tensor:
    case B::TensorOrNumber: return "Tensor";
    case B::Scalar: return "Number";
    case B::Int: return "int";
    case B::Float: return "float";
    case B::Bool: return "bool";
    case B::IntList: return "tuple of ints";
    case B::FloatList: return "tuple of floats";
    case B::TensorList: return "tuple of Tensors";
    case B::ScalarType: return "torch.dtype";
    case B::Str: return "str";
    case B::Device: return "torch.device";
    case B::Layout: return "torch.layout";
    case B::MemoryFormat: return "torch.memory_format";
    case B::Generator: return "torch.Generator";
    case B::Any: return "object";
  }
  return "?";
}


Signature parse_signature(std::string_view name, std::string_view text) {
  Signature sig;
  sig.name = std::string(name);
  sig.text = std::string(text);
  std::string_view body = trim(text);
  KILN_CHECK(body.size() >= 2 && body.front() == '(' && body.back() == ')', "bad torch signature ", text);
  bool kwarg_only = false;
  for (std::string_view p : split_params(body.substr(1, body.size() - 2))) {
    if (p == "*") {
      kwarg_only = true;
      continue;
    }
    Param param;
    std::string_view decl = p, def;
    if (size_t eq = p.find('='); eq != std::string_view::npos) {
      decl = trim(p.substr(0, eq));
      def = trim(p.substr(eq + 1));
    }
    size_t sp = decl.rfind(' ');
    KILN_CHECK(sp != std::string_view::npos, "bad parameter '", p, "' in torch signature ", text);
    param.type = parse_type(trim(decl.substr(0, sp)), text);
    param.name = std::string(trim(decl.substr(sp + 1)));
    if (param.name.front() == '*') {
      param.varargs = true;
      param.name.erase(0, 1);
    }
    if (!def.empty()) param.default_value = parse_default(def, param.type);
    param.kwarg_only = kwarg_only;
    sig.params.push_back(std::move(param));
  }
  return sig;
}

std::string Signature::display(bool skip_self) const {
  std::string out = "(";
  bool first = true, star = false;
  for (size_t i = skip_self ? 1 : 0; i < params.size(); ++i) {
    const Param& p = params[i];
    if (!first) out += ", ";
    first = false;
    if (p.kwarg_only && !star) {
      out += "*, ";
      star = true;
    }
    out += type_display(p.type) + " " + (p.varargs ? "*" : "") + p.name;
    if (p.default_value) {
      const Value& d = *p.default_value;
      std::string text = d.repr();
      // Lists print as tuples, strings with double quotes, as PyTorch's messages do.
      if (d.kind() == Value::Kind::List) {
        text.front() = '(';
        text.back() = ')';
      }
      if (d.kind() == Value::Kind::String) {
        text.front() = '"';
        text.back() = '"';
      }
      out += " = ";
      out += text;
    }
  }
  return out + ")";
}

const Value& Bound::arg(std::string_view name) const {
  for (size_t i = 0; i < sig_->params.size(); ++i)
    if (sig_->params[i].name == name) return v_[i];
  KILN_CHECK(false, "no parameter '", name, "' in ", sig_->name, sig_->text);
  return v_[0];
}

std::optional<int64_t> Bound::opt_integer(size_t i) const {
  if (v_[i].is_none()) return std::nullopt;
  return v_[i].to_int();
}

std::optional<DType> Bound::opt_dtype(size_t i) const {
  if (v_[i].is_none()) return std::nullopt;
  return v_[i].to_dtype();
}

// ---------------------------------------------------------------- ATen calls

namespace {
thread_local AtenObserver* g_observer = nullptr;
}

}  // namespace kiln::torchapi::detail

namespace kiln::torchapi {

AtenObserver* set_aten_observer(AtenObserver* observer) {
  AtenObserver* previous = detail::g_observer;
  detail::g_observer = observer;
  return previous;
}

void copy_observed(const Tensor& dst, const Tensor& src) {
  if (detail::g_observer) detail::g_observer->before_copy(dst);
  dst.copy_(src);
  py::autograd::bump_storage_version(dst.storage().get());
  if (detail::g_observer) detail::g_observer->on_copy(dst, src);
}

}  // namespace kiln::torchapi

namespace kiln::torchapi::detail {

ValueList aten(Mode mode, std::string_view op, const ValueList& args, const KwargList& kwargs) {
  if (autocast_state().any())
    if (std::optional<AutocastPolicy> policy = autocast_policy(op)) {
      ValueList values = args;
      std::vector<std::string_view> names;
      if (const OpDef* def = op_registry().find(std::string(op)))
        for (size_t i = 0; i < args.size() && i < def->schema.args.size(); ++i) names.push_back(def->schema.args[i].name);
      names.resize(args.size());
      for (const auto& [k, v] : kwargs) {
        values.push_back(v);
        names.push_back(k);
      }
      apply_autocast(*policy, mode, values, names);
      KwargList cast_kwargs = kwargs;
      for (size_t i = 0; i < cast_kwargs.size(); ++i) cast_kwargs[i].second = values[args.size() + i];
      values.resize(args.size());
      AutocastExcluded below;
      return aten(mode, op, values, cast_kwargs);
    }
  auto r = mode == Mode::Meta ? call_meta(op, args, kwargs) : call_op(op, args, kwargs);
  if (!r) throw Error(r.status().message());
  if (g_observer && mode == Mode::Eager) g_observer->on_aten(op, args, kwargs, *r);
  return std::move(*r);
}

Tensor aten_t(Mode mode, std::string_view op, const ValueList& args, const KwargList& kwargs) {
  ValueList r = aten(mode, op, args, kwargs);
  KILN_CHECK(!r.empty() && r[0].is_tensor(), op, " returned no tensor");
  return r[0].to_tensor();
}

namespace {
// The bound values as keyword arguments of `op`'s schema.
KwargList schema_kwargs(const Bound& b, const Schema& s) {
  KwargList kw;
  for (size_t i = 0; i < b.size(); ++i) {
    const std::string& name = b.signature().params[i].name;
    int j = s.index_of(name);
    if (j < 0 && (i == 0 || name == "input")) j = s.index_of("self") >= 0 ? s.index_of("self") : 0;
    KILN_CHECK(j >= 0, "torch binding ", b.signature().name, ": parameter '", name, "' is not in ", s.text);
    kw.emplace_back(s.args[size_t(j)].name, b[i]);
  }
  return kw;
}

Handler forward(std::string op) {
  return [op = std::move(op)](const Bound& b) {
    const OpDef* def = op_registry().find(op);
    KILN_CHECK(def, "torch binding to unknown op ", op);
    return aten(b.mode(), op, {}, schema_kwargs(b, def->schema));
  };
}
}  // namespace

Handler to_aten(std::string op) { return forward(std::move(op)); }

Handler to_aten_tensor_or_scalar(std::string tensor_op, std::string scalar_op) {
  Handler t = forward(std::move(tensor_op)), s = forward(std::move(scalar_op));
  return [t, s](const Bound& b) {
    for (size_t i = 0; i < b.size(); ++i)
      if (b.signature().params[i].type.base == ParamType::Base::TensorOrNumber && !b[i].is_tensor())
        return s(b);
    return t(b);
  };
}

// ---------------------------------------------------------------- in place

bool can_cast(DType from, DType to) {
  if (is_floating(from) && !is_floating(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

void write_inplace(const Tensor& self, const Tensor& result, Mode mode, std::string_view name) {
  for (int64_t d = 0; d < self.dim(); ++d)
    KILN_USER_CHECK(self.sizes()[d] <= 1 || self.strides()[d] != 0,
                    name, ": unsupported operation: more than one element of the written-to tensor refers to a "
                    "single memory location. Please clone() the tensor before performing the operation.");
  KILN_USER_CHECK(result.sizes() == self.sizes(), name, ": output with shape ", shape_text(self.sizes()),
                  " doesn't match the broadcast shape ", shape_text(result.sizes()));
  KILN_USER_CHECK(can_cast(result.dtype(), self.dtype()), name, ": result type ",
                  dtype_name(result.dtype()), " can't be cast to the desired output type ",
                  dtype_name(self.dtype()));
  if (mode == Mode::Eager && !self.is_meta()) copy_observed(self, result);
}

Handler inplace(Handler f, std::string name) {
  return [f = std::move(f), name = std::move(name)](const Bound& b) {
    const Tensor& self = b.tensor(0);
    // ATen's autocast lists name out-of-place ops only: x.exp_() is not cast.
    AutocastExcluded in_place;
    ValueList r = f(b);
    KILN_CHECK(!r.empty() && r[0].is_tensor(), name, ": out-of-place variant returned no tensor");
    write_inplace(self, r[0].to_tensor(), b.mode(), name);
    return ValueList{Value(self)};
  };
}

Tensor scalar_to_tensor(const Scalar& s, DType dtype, Mode mode) {
  if (mode == Mode::Meta) return Tensor::meta({}, dtype);
  return Tensor::scalar_tensor(s, dtype);
}

Scalar item_of(const Tensor& t, Mode mode, std::string_view what) {
  KILN_USER_CHECK(t.numel() == 1, what, ": a Tensor with ", t.numel(),
                  " elements cannot be converted to Scalar");
  KILN_USER_CHECK(mode == Mode::Eager && !t.is_meta(), what,
                  ": the value of a tensor is data-dependent and not known while capturing "
                  "(Tensor.item() on a fake tensor)");
  return t.item();
}

std::string device_name(const Value& device) {
  if (device.is_none()) return "";
  if (device.is_int()) return "cuda:" + std::to_string(device.to_int());
  std::string d = device.to_string();
  if (d == "cuda") return "cuda:0";
  return d;
}

void check_device(const Value& device) {
  if (device.is_none()) return;
  std::string d = device_name(device);
  std::string type = d.substr(0, d.find(':'));
  if (type == "cuda") {
    const int count = cuda_device_count();
    if (count == 0) KILN_FAIL("CUDA device is not available here (device '", d, "'): no CUDA driver or GPU was found");
    int index = std::atoi(d.c_str() + 5);
    KILN_USER_CHECK(index >= 0 && index < count, "CUDA error: invalid device ordinal (device '", d, "'; ", count,
                    " device(s) here)");
    return;
  }
  KILN_USER_CHECK(type == "cpu" || type == "meta", "device '", d,
                  "' is not available in this build: tensors live on the CPU or a CUDA device");
}

std::string shape_text(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// ---------------------------------------------------------------- the table

namespace {
constexpr const char* kFakeAddress = "0x7f0000000000";

std::string last_component(const std::string& dotted) { return dotted.substr(dotted.rfind('.') + 1); }

std::string repr_for(PyKind kind, const std::string& name, const std::string& target) {
  switch (kind) {
    case PyKind::TorchBuiltin:
      return "<built-in method " + last_component(target) + " of type object at " + kFakeAddress + ">";
    case PyKind::NnBuiltin:
    case PyKind::SpecialBuiltin:
    case PyKind::LinalgBuiltin: return "<built-in function " + last_component(target) + ">";
    case PyKind::PyFunction: return "<function " + name + " at " + kFakeAddress + ">";
    case PyKind::Dispatch: return std::string("<function boolean_dispatch.<locals>.fn at ") + kFakeAddress + ">";
    case PyKind::Method: return "<method '" + name + "' of 'torch._C.TensorBase' objects>";
  }
  return name;
}

std::string target_for(PyKind kind, const std::string& module, const std::string& name) {
  switch (kind) {
    case PyKind::TorchBuiltin: return "torch." + name;
    case PyKind::NnBuiltin: return "torch._C._nn." + name;
    case PyKind::SpecialBuiltin: return "torch._C._special.special_" + name;
    case PyKind::LinalgBuiltin: return "torch._C._linalg.linalg_" + name;
    case PyKind::PyFunction:
    case PyKind::Dispatch: return module + "." + name;
    case PyKind::Method: return name;
  }
  return name;
}

Signature inplace_variant(const Signature& s, const std::string& name) {
  Signature out = s;
  out.name = name;
  out.handler = inplace(s.handler, name);
  out.returns_arg = 0;
  out.result = ResultKind::Single;
  return out;
}
}  // namespace

Callable& Table::add(const std::string& module, const std::string& name, PyKind kind, std::vector<Signature> sigs,
                     const std::string& graph_target) {
  auto c = std::make_unique<Callable>();
  c->module = module;
  c->name = name;
  c->python_name = module + "." + name;
  c->graph_target = graph_target.empty() ? target_for(kind, module, name) : graph_target;
  c->python_repr = repr_for(kind, name, c->graph_target);
  c->is_method = kind == PyKind::Method;
  c->inplace = !sigs.empty();
  for (Signature& s : sigs) {
    if (c->is_method)
      KILN_CHECK(!s.params.empty() && s.params[0].type.base == ParamType::Base::Tensor,
                 "method ", name, " needs a Tensor self: ", s.text);
    c->inplace &= s.returns_arg == 0;
    signatures.push_back(std::make_unique<Signature>(std::move(s)));
    c->signatures.push_back(signatures.back().get());
  }
  callables.push_back(std::move(c));
  return *callables.back();
}

namespace {
void apply_result_spec(Signature& s, const char* spec) {
  if (!spec) return;
  std::string_view r = spec;
  if (r == "tuple") s.result = ResultKind::Tuple;
  else if (r == "size") s.result = ResultKind::Size;
  else if (r == "list") s.result = ResultKind::PyList;
  else {
    size_t lp = r.find('(');
    KILN_CHECK(lp != std::string_view::npos && r.back() == ')', "bad result spec ", r);
    s.result = ResultKind::NamedTuple;
    s.tuple_type = "torch.return_types." + std::string(r.substr(0, lp));
    for (std::string_view f : split_params(r.substr(lp + 1, r.size() - lp - 2))) s.fields.emplace_back(f);
  }
}

std::vector<Signature> parse_defs(const std::string& name, std::initializer_list<SigDef> defs) {
  std::vector<Signature> sigs;
  for (const SigDef& d : defs) {
    sigs.push_back(parse_signature(name, d.text));
    sigs.back().handler = d.handler;
    apply_result_spec(sigs.back(), d.result);
  }
  return sigs;
}
}  // namespace

Callable& Table::def_in(const std::string& module, const std::string& name, PyKind kind,
                        std::initializer_list<SigDef> defs, const std::string& graph_target) {
  return add(module, name, kind, parse_defs(name, defs), graph_target);
}

Table& Table::def(const std::string& name, unsigned where, std::initializer_list<SigDef> defs) {
  std::vector<Signature> sigs = parse_defs(name, defs);
  // Overloads whose first parameter is not a Tensor (pow(Scalar self, Tensor
  // exponent)) exist only as functions.
  std::vector<Signature> method_sigs;
  for (const Signature& s : sigs)
    if (!s.params.empty() && s.params[0].type.base == ParamType::Base::Tensor) method_sigs.push_back(s);
  auto variants = [&](const std::string& n) {
    std::vector<Signature> out;
    for (const Signature& s : method_sigs) out.push_back(inplace_variant(s, n));
    return out;
  };
  if (where & kTorch) add("torch", name, PyKind::TorchBuiltin, sigs);
  if (where & kMethod) add("Tensor", name, PyKind::Method, method_sigs);
  if (where & kInplaceMethod) add("Tensor", name + "_", PyKind::Method, variants(name + "_"));
  if (where & kTorchInplace) {
    add("torch", name + "_", PyKind::TorchBuiltin, variants(name + "_"));
  }
  return *this;
}

Callable* Table::get(std::string_view python_name) {
  for (auto& c : callables)
    if (c->python_name == python_name) return c.get();
  return nullptr;
}

}  // namespace kiln::torchapi::detail

namespace kiln::torchapi {

namespace {
std::mutex g_cuda_count_mutex;
std::function<int()> g_cuda_counter;
std::optional<int> g_cuda_count;
}  // namespace

void set_cuda_device_counter(std::function<int()> counter) {
  std::lock_guard lock(g_cuda_count_mutex);
  g_cuda_counter = std::move(counter);
  g_cuda_count.reset();
}

int cuda_device_count() {
  std::lock_guard lock(g_cuda_count_mutex);
  if (!g_cuda_count) g_cuda_count = g_cuda_counter ? g_cuda_counter() : 0;
  return *g_cuda_count;
}

}  // namespace kiln::torchapi
