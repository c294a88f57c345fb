#include "core/python/torch_convert.h"

#include <array>
#include <cctype>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/python/autograd.h"
#include "core/python/eager_tape.h"
#include "core/python/bigint.h"
#include "core/python/torch_device.h"
#include "core/ops/pointwise_kernels.h"
#include "core/python/torch_api_binding.h"
#include "core/python/vm.h"

namespace kiln::py {

using torchapi::CallInfo;
using torchapi::Callable;
using torchapi::Mode;
using torchapi::ResultKind;

namespace {

// Objects the bindings create once per VM, so that `x.dtype is torch.float32`
// holds and named-tuple classes are shared by every result of one kind.
struct TorchState {
  std::array<Value, kNumDTypes> dtypes;
  std::map<std::string, Ref<Class>, std::less<>> named_tuples;
};

TorchState& torch_state(VM& vm) {
  auto& slot = vm.extensions["torch.state"];
  if (!slot) slot = std::make_shared<TorchState>();
  return *static_cast<TorchState*>(slot.get());
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// What a RecursionError says when a list handed to torch nests too deep (or
// contains itself).
constexpr const char* kConvertingList = " while converting a list for torch";

// Tensors among the arguments, lists and tuples included (torch.cat([a, b])).
template <class F>
void for_each_tensor(const Value& v, F&& f) {
  if (v.is(ObjKind::Tensor)) {
    f(v.as<TensorObj>());
  } else if (v.is(ObjKind::List) || v.is(ObjKind::Tuple)) {
    NestingGuard guard(kConvertingList);
    for (const Value& x : v.is(ObjKind::List) ? v.as<List>()->items : v.as<Tuple>()->items) for_each_tensor(x, f);
  }
}

// Calls whose results never require grad, whatever their inputs.
bool non_differentiable(std::string_view name) {
  static const char* const names[] = {
      "detach", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like",
      "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "argmax", "argmin", "argsort",
      "bernoulli", "multinomial", "numel", "size", "dim", "one_hot"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

// Calls that give back their input object itself when nothing needs changing
// (x.contiguous() on a contiguous tensor, x.float() on a float tensor). On
// meta tensors a same-looking result is taken for the input, so an op whose
// result only looks like its input (dropout's x * noise) must not be here:
// dropout says itself when it returns its input (set_returns_arg).
bool may_return_self(std::string_view name) {
  static const char* const names[] = {"contiguous", "to", "float", "double", "half", "bfloat16", "int", "long",
                                      "short", "bool", "byte", "char", "type", "type_as", "cpu", "cuda"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.storage_offset() == b.storage_offset() && a.sizes() == b.sizes() &&
         a.strides() == b.strides() && a.dtype() == b.dtype() && (a.storage() || a.is_meta());
}

int64_t arg_dim(const CallArgs& a, size_t i) {
  return i < a.npos && a[i].is(ObjKind::Tensor) ? a[i].as<TensorObj>()->t.dim() : -1;
}

// True when a reduction got a `dim` (positionally after self, or by keyword).
bool has_dim_arg(const CallArgs& a) {
  if (const Value* d = a.kwarg("dim")) return !d->is_none();
  return a.npos > 1 && !a[1].is(ObjKind::DType) && !a[1].is_none();
}

std::string camel(std::string_view name) {
  std::string out;
  bool up = true;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '_') {
      up = true;
      continue;
    }
    bool after_digit = i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1])) && c == 'd';
    out += (up || after_digit) ? char(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

std::string matmul_node(int64_t a, int64_t b) {
  if (a == 1 && b == 1) return "DotBackward0";
  if (a == 2 && b == 1) return "MvBackward0";
  if (a == 1 && b == 2) return "SqueezeBackward4";
  if (a == 2 && b == 2) return "MmBackward0";
  if (a == 3 && b == 3) return "BmmBackward0";
  return "UnsafeViewBackward0";
}

Ref<Class> named_tuple_class(VM& vm, const std::string& type_name, const std::vector<std::string>& fields) {
  TorchState& st = torch_state(vm);
  auto it = st.named_tuples.find(type_name);
  if (it != st.named_tuples.end()) return it->second;
  size_t dot = type_name.rfind('.');
  auto cls = make<Class>(type_name.substr(dot + 1), Ref<Class>());
  cls->module = dot == std::string::npos ? "torch.return_types" : type_name.substr(0, dot);
  ValueVec names;
  for (const std::string& f : fields) names.push_back(str_value(f));
  Value field_names = tuple_value(names);
  auto items = [field_names](const Value& self) {
    ValueVec out;
    for (const Value& f : field_names.as<Tuple>()->items) out.push_back(*self.as<Instance>()->dict->find(f));
    return out;
  };
  set_attr_builtin(cls->dict, type_name + ".__getitem__", "__getitem__", [items](VM& vm, const CallArgs& a) {
    return vm.getitem(tuple_value(items(a[0])), a[1]);
  });
  set_attr_builtin(cls->dict, type_name + ".__iter__", "__iter__", [items](VM& vm, const CallArgs& a) {
    return vm.iter(tuple_value(items(a[0])));
  });
  set_attr_builtin(cls->dict, type_name + ".__len__", "__len__",
                   [items](VM&, const CallArgs& a) { return Value(int64_t(items(a[0]).size())); });
  set_attr_builtin(cls->dict, type_name + ".__repr__", "__repr__", [type_name, field_names, items](VM& vm, const CallArgs& a) {
    // structseq's repr, as PyTorch prints torch.return_types: one field per line.
    std::string out = type_name + "(";
    ValueVec vals = items(a[0]);
    const ValueVec& names = field_names.as<Tuple>()->items;
    for (size_t i = 0; i < vals.size(); ++i) out += "\n" + as_str(names[i]) + "=" + vm.repr_of(vals[i]) + (i + 1 < vals.size() ? "," : "");
    return str_value(out + ")");
  });
  st.named_tuples[type_name] = cls;
  return cls;
}

// A Python int past int64, where PyTorch 2.11 reads one: tensor data and
// indices are unpacked as int64 and overflow; a Scalar argument takes
// [2**63, 2**64) as a uint64 and refuses anything further out.
[[noreturn]] void big_int_argument(const Value& v, std::string_view what) {
  for (std::string_view reader : {"tensor", "as_tensor", "new_tensor", "Tensor", "__getitem__", "__setitem__", "randint"})
    if (what == reader) throw PyError("ValueError", "Overflow when unpacking long long");
  const BigNum& n = v.as<BigInt>()->value;
  if (n.negative()) throw PyError("OverflowError", "can't convert negative int to unsigned");
  if (n.bit_length() > 64) throw PyError("OverflowError", "int too big to convert");
  throw_unsupported(std::string(what) + "(): the int " + n.to_string() +
                    ", which PyTorch takes as a uint64 scalar (Kiln's scalars are int64 or float)");
}

// Whether `v`, or an item of it at any depth, is `wanted`.
bool holds(const Value& v, bool (*wanted)(const Value&)) {
  if (wanted(v)) return true;
  if (!v.is(ObjKind::List) && !v.is(ObjKind::Tuple)) return false;
  NestingGuard guard(kConvertingList);
  for (const Value& x : v.is(ObjKind::List) ? v.as<List>()->items : v.as<Tuple>()->items)
    if (holds(x, wanted)) return true;
  return false;
}

// `data` with its big ints as floats.
Value big_ints_as_floats(const Value& data) {
  if (is_big(data)) return Value(int_to_double(data));
  if (!data.is(ObjKind::List) && !data.is(ObjKind::Tuple)) return data;
  NestingGuard guard(kConvertingList);
  ValueVec items = data.is(ObjKind::List) ? data.as<List>()->items : data.as<Tuple>()->items;
  for (Value& x : items) x = big_ints_as_floats(x);
  return data.is(ObjKind::List) ? list_value(std::move(items)) : tuple_value(std::move(items));
}

// The data argument of torch.tensor / as_tensor / Tensor.new_tensor, when the
// tensor it makes is a floating one (a float among the data, a floating dtype=,
// or new_tensor on a floating tensor): such a tensor takes an int of any size,
// rounded to a float, as PyTorch does (torch.tensor([1.0, 2**70])).
std::optional<size_t> float_data_index(const Callable& c, const CallArgs& a) {
  size_t data = c.name == "new_tensor" ? 1 : 0;
  if ((c.name != "tensor" && c.name != "as_tensor" && c.name != "new_tensor") || a.npos <= data) return std::nullopt;
  if (!holds(a[data], is_big)) return std::nullopt;
  bool floating;
  if (const Value* d = a.kwarg("dtype"); d && !d->is_none()) {
    std::optional<DType> dtype = dtype_arg(*d);
    floating = dtype && is_floating(*dtype);
  } else if (c.name == "new_tensor") {
    floating = a[0].is(ObjKind::Tensor) && is_floating(a[0].as<TensorObj>()->t.dtype());
  } else {
    floating = holds(a[data], [](const Value& v) { return v.is_float(); });
  }
  return floating ? std::optional<size_t>(data) : std::nullopt;
}

}  // namespace

// ---- py -> ops ----

kiln::Value to_ops(const Value& v, std::string_view what) {
  switch (v.tag()) {
    case Value::Tag::None: return kiln::Value();
    case Value::Tag::Bool: return kiln::Value(v.as_bool());
    case Value::Tag::Int: return kiln::Value(v.as_int());
    case Value::Tag::Float: return kiln::Value(v.as_float());
    case Value::Tag::Obj: break;
  }
  switch (v.obj()->kind) {
    case ObjKind::Str: return kiln::Value(v.as<Str>()->s);
    case ObjKind::DType: return kiln::Value(v.as<DTypeObj>()->dtype);
    case ObjKind::Device: return kiln::Value(v.as<DeviceObj>()->str());
    case ObjKind::Tensor: return kiln::Value(v.as<TensorObj>()->t);
    case ObjKind::BigInt: big_int_argument(v, what);
    case ObjKind::List:
    case ObjKind::Tuple: {
      // A list that contains itself would recurse without end.
      NestingGuard guard(kConvertingList);
      const ValueVec& items = v.is(ObjKind::List) ? v.as<List>()->items : v.as<Tuple>()->items;
      kiln::ValueList out;
      out.reserve(items.size());
      for (const Value& x : items) out.push_back(to_ops(x, what));
      return kiln::Value(std::move(out));
    }
    default: break;
  }
  if (v.is(ObjKind::Instance) && v.as<Instance>()->cls->name == "Generator" &&
      v.as<Instance>()->cls->module == "torch._C")
    throw PyError("NotImplementedError", std::string(what) +
                                             "(): a torch.Generator is only taken as the generator= keyword");
  throw_type_error(std::string(what) + "(): unsupported argument of type '" + type_name(v) + "'");
}

kiln::ValueList to_ops_args(const CallArgs& a, std::string_view what) {
  kiln::ValueList out;
  out.reserve(a.npos);
  for (size_t i = 0; i < a.npos; ++i) out.push_back(to_ops(a[i], what));
  return out;
}

kiln::KwargList to_ops_kwargs(const CallArgs& a, std::string_view what) {
  kiln::KwargList out;
  if (a.kw)
    for (const auto& [k, v] : *a.kw) out.emplace_back(k, to_ops(v, what));
  return out;
}

// ---- ops -> py ----

Value from_ops(const kiln::Value& v, bool as_list) {
  switch (v.kind()) {
    case kiln::Value::Kind::None: return Value();
    case kiln::Value::Kind::Bool: return Value(v.to_bool());
    case kiln::Value::Kind::Int: return Value(v.to_int());
    case kiln::Value::Kind::Float: return Value(v.to_double());
    case kiln::Value::Kind::String: return str_value(v.to_string());
    case kiln::Value::Kind::DType: return Value(make<DTypeObj>(v.to_dtype()));
    case kiln::Value::Kind::Tensor: return tensor_value(v.to_tensor());
    case kiln::Value::Kind::List: {
      ValueVec items;
      for (const kiln::Value& x : v.to_list()) items.push_back(from_ops(x, as_list));
      return as_list ? list_value(std::move(items)) : tuple_value(std::move(items));
    }
  }
  return Value();
}

void raise_status(const Status& s) {
  std::string m = s.message();
  // The op registry names the ATen overload first ("aten::linear.default: mat1 and ..."); PyTorch does not.
  if (m.starts_with("aten::")) {
    size_t colon = m.find(": ");
    if (colon != std::string::npos && m.find(' ') > colon) m = m.substr(colon + 2);
  }
  if (contains(m, "received an invalid combination of arguments") || contains(m, "(): argument '") ||
      contains(m, "got an unexpected keyword argument") || contains(m, "missing required argument") ||
      contains(m, "missing 1 required") || contains(m, "positional argument") || m.starts_with("descriptor '") ||
      contains(m, "got multiple values for argument"))
    throw PyError("TypeError", m);
  if (contains(m, "Dimension out of range") || contains(m, "out of bounds for dimension") ||
      contains(m, "index out of range"))
    throw PyError("IndexError", m);
  if (contains(m, "is not available in this build") || contains(m, "not supported by Kiln") ||
      contains(m, "outside Kiln's subset"))
    throw PyError("RuntimeError", m, /*unsupported=*/true);
  throw PyError("RuntimeError", m);
}

TensorObj* tensor_obj(const Value& v) { return v.is(ObjKind::Tensor) ? v.as<TensorObj>() : nullptr; }

const Tensor& tensor_of(const Value& v, std::string_view what) {
  if (!v.is(ObjKind::Tensor)) throw_type_error(std::string(what) + ": expected Tensor, got " + type_name(v));
  return v.as<TensorObj>()->t;
}

// ---- autograd bookkeeping ----

std::vector<TensorObj*> inputs_requiring_grad(VM& vm, const CallArgs& args) {
  std::vector<TensorObj*> found;
  if (!vm.grad_enabled) return found;
  auto visit = [&](TensorObj* t) {
    if (t->requires_grad) found.push_back(t);
  };
  for (size_t i = 0; i < args.npos; ++i) for_each_tensor(args[i], visit);
  if (args.kw)
    for (const auto& kv : *args.kw) for_each_tensor(kv.second, visit);
  return found;
}

bool any_requires_grad(VM& vm, const CallArgs& args) { return !inputs_requiring_grad(vm, args).empty(); }

void check_inplace_allowed(VM& vm, const Value& target) {
  const TensorObj* t = tensor_obj(target);
  if (t && vm.grad_enabled && t->requires_grad && t->grad_fn.empty())
    throw PyError("RuntimeError", "a leaf Variable that requires grad is being used in an in-place operation.");
  autograd::check_untracked_view_write(vm, t);
}

void mark_grad(TensorObj* t, const std::string& grad_fn) {
  if (!t || !is_floating(t->t.dtype())) return;
  t->requires_grad = true;
  t->grad_fn = grad_fn;
}

std::string grad_fn_for(std::string_view name, const CallArgs& a) {
  static const std::unordered_map<std::string_view, const char*> fixed = {
      {"t", "TBackward0"}, {"view", "ViewBackward0"}, {"view_as", "ViewBackward0"}, {"reshape", "ViewBackward0"},
      {"reshape_as", "ViewBackward0"}, {"flatten", "ViewBackward0"}, {"unflatten", "ViewBackward0"},
      {"contiguous", "CloneBackward0"}, {"clone", "CloneBackward0"}, {"cat", "CatBackward0"},
      {"concat", "CatBackward0"}, {"concatenate", "CatBackward0"}, {"split", "SplitBackward0"},
      {"chunk", "SplitBackward0"}, {"narrow", "SliceBackward0"}, {"clamp", "ClampBackward1"},
      {"clip", "ClampBackward1"}, {"square", "PowBackward0"}, {"norm", "LinalgVectorNormBackward0"},
      {"cross_entropy", "NllLossBackward0"}, {"l1_loss", "MeanBackward0"}, {"conv1d", "ConvolutionBackward0"},
      {"conv2d", "ConvolutionBackward0"}, {"conv3d", "ConvolutionBackward0"},
      {"conv_transpose2d", "ConvolutionBackward0"}, {"batch_norm", "NativeBatchNormBackward0"},
      {"layer_norm", "NativeLayerNormBackward0"}, {"group_norm", "NativeGroupNormBackward0"},
      {"max_pool2d", "MaxPool2DWithIndicesBackward0"}, {"max_pool1d", "SqueezeBackward1"},
      {"dropout", "MulBackward0"}, {"to", "ToCopyBackward0"}, {"float", "ToCopyBackward0"},
      {"double", "ToCopyBackward0"}, {"half", "ToCopyBackward0"}, {"bfloat16", "ToCopyBackward0"},
      {"type", "ToCopyBackward0"}, {"type_as", "ToCopyBackward0"}, {"true_divide", "DivBackward0"},
      {"divide", "DivBackward0"}, {"multiply", "MulBackward0"}, {"subtract", "SubBackward0"},
      {"absolute", "AbsBackward0"}, {"negative", "NegBackward0"}, {"unbind", "UnbindBackward0"},
      {"softmax", "SoftmaxBackward0"}, {"log_softmax", "LogSoftmaxBackward0"}, {"relu", "ReluBackward0"},
      {"relu_", "ReluBackward0"}, {"linalg_vector_norm", "LinalgVectorNormBackward0"},
      {"grid_sampler", "GridSampler2DBackward0"}, {"diff", "SubBackward0"}, {"solve", "LinalgSolveExBackward0"},
      // torch.linalg's checked forms run the _ex ops, whose nodes PyTorch names
      {"cholesky", "LinalgCholeskyExBackward0"}, {"cholesky_ex", "LinalgCholeskyExBackward0"},
      {"solve_triangular", "LinalgSolveTriangularBackward0"}, {"inv", "LinalgInvExBackward0"},
      {"inv_ex", "LinalgInvExBackward0"}, {"inverse", "LinalgInvExBackward0"},
      {"lu_factor", "LinalgLuFactorExBackward0"}, {"lu_factor_ex", "LinalgLuFactorExBackward0"},
      {"lu", "LinalgLuFactorExBackward0"}, {"linalg.lu", "LinalgLuBackward0"},
      {"det", "LinalgDetBackward0"}, {"slogdet", "LinalgSlogdetBackward0"}, {"logdet", "WhereBackward0"},  // the composite's 4-D op; 5-D is refused
      {"eigh", "LinalgEighBackward0"}, {"eigvalsh", "LinalgEighBackward0"},
      {"matrix_exp", "LinalgMatrixExpBackward0"}, {"householder_product", "LinalgHouseholderProductBackward0"},
      {"orgqr", "LinalgHouseholderProductBackward0"}};
  if (auto it = fixed.find(name); it != fixed.end()) return it->second;
  if (name == "linear") {
    bool bias = (a.npos > 2 && !a[2].is_none()) || (a.kwarg("bias") && !a.kwarg("bias")->is_none());
    int64_t d = arg_dim(a, 0);
    if (bias) return d == 2 ? "AddmmBackward0" : "ViewBackward0";
    return matmul_node(d, 2);
  }
  if (name == "matmul" || name == "mm" || name == "bmm" || name == "mv" || name == "dot")
    return matmul_node(arg_dim(a, 0), arg_dim(a, 1));
  if (name == "sum" || name == "mean" || name == "nansum")
    return camel(name) + (has_dim_arg(a) ? "Backward1" : "Backward0");
  if (name == "max" || name == "min") {
    if (a.npos > 1 && a[1].is(ObjKind::Tensor)) return name == "max" ? "MaximumBackward0" : "MinimumBackward0";
    return camel(name) + (has_dim_arg(a) ? "Backward0" : "Backward1");
  }
  if (name == "squeeze") return has_dim_arg(a) ? "SqueezeBackward1" : "SqueezeBackward0";
  // PyTorch 2's diag of a vector is diag_embed.
  if (name == "diag" && arg_dim(a, 0) == 1) return "DiagEmbedBackward0";
  if (name == "pow") return a.npos > 1 && a[1].is(ObjKind::Tensor) ? "PowBackward1" : "PowBackward0";
  if (name == "rsub") return a.npos > 1 && a[1].is(ObjKind::Tensor) ? "RsubBackward0" : "RsubBackward1";
  if (name == "adaptive_avg_pool2d") {
    // An output size of 1 is a mean over the spatial dims.
    const Value* size = a.npos > 1 ? &a[1] : a.kwarg("output_size");
    bool ones = size != nullptr;
    if (size && (size->is(ObjKind::Tuple) || size->is(ObjKind::List))) {
      for (const Value& v : size->is(ObjKind::Tuple) ? size->as<Tuple>()->items : size->as<List>()->items)
        ones = ones && v.is_int() && v.as_int() == 1;
    } else if (size) {
      ones = size->is_int() && size->as_int() == 1;
    }
    return ones ? "MeanBackward1" : "AdaptiveAvgPool2DBackward0";
  }
  if (name == "avg_pool2d") return "AvgPool2DBackward0";
  std::string base(name);
  if (base.ends_with("_") && !base.ends_with("__")) base.pop_back();  // add_ -> AddBackward0
  return camel(base) + "Backward0";
}

// ---- running torch callables ----

namespace {

// ATen's TORCH_WARN_ONCE: the first call in a program warns, through the
// warnings module as PyTorch's C++ warnings go (filters and catch_warnings
// apply; the location is the program's line that made the call).
void warn_once(VM& vm, const std::string& key, std::string_view text) {
  auto& slot = vm.extensions["kiln.warned." + key];
  if (slot) return;
  slot = std::make_shared<bool>(true);
  Ref<Module> warnings = vm.module("warnings");
  if (!warnings) return;
  vm.call(vm.getattr(Value(warnings), "warn"), ValueVec{str_value(std::string(text))});
}

// _lu_with_info's warning (torch.lu and Tensor.lu), in PyTorch 2.11's words.
constexpr std::string_view kTorchLuDeprecated =
    "torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be removed in a "
    "future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\nLU, pivots = "
    "torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, compute_pivots, "
    "get_infos=True)\nshould be replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)";

}  // namespace

Value run_torch(VM& vm, const Callable& c, const CallArgs& given, Mode mode) {
  ValueVec with_float_data;
  CallArgs a = given;
  // torch.tensor(collections.deque(...)): PyTorch reads any sequence as data;
  // an instance of a user-level class (deque is one here) as the list of its items.
  ValueVec with_list_data;
  if (const size_t data = c.name == "new_tensor" ? 1 : 0;
      (c.name == "tensor" || c.name == "as_tensor" || c.name == "new_tensor") && given.npos > data &&
      given[data].is(ObjKind::Instance)) {
    with_list_data.assign(given.pos, given.pos + given.npos);
    with_list_data[data] = list_value(vm.to_vector(given[data]));
    a.pos = with_list_data.data();
  }
  if (std::optional<size_t> data = float_data_index(c, a)) {
    with_float_data.assign(a.pos, a.pos + a.npos);
    with_float_data[*data] = big_ints_as_floats(with_float_data[*data]);
    a.pos = with_float_data.data();
  }
  if (c.inplace && a.npos > 0) check_inplace_allowed(vm, a[0]);
  // Factories take requires_grad=, which makes a leaf; torchapi leaves it to us.
  const Value* requires_grad = c.is_method ? nullptr : a.kwarg("requires_grad");
  // generator=torch.Generator(): torchapi draws from it and sees None.
  CpuGenerator* generator = nullptr;
  std::vector<std::pair<std::string, Value>> kw_without_generator;
  if (const Value* g = a.kwarg("generator"); g && (generator = explicit_generator(vm, *g))) {
    kw_without_generator = *a.kw;
    for (auto& [name, value] : kw_without_generator)
      if (name == "generator") value = Value();
    a.kw = &kw_without_generator;
  }
  kiln::ValueList args = to_ops_args(a, c.name);
  kiln::KwargList kwargs = to_ops_kwargs(a, c.name);
  if (requires_grad) std::erase_if(kwargs, [](const auto& kv) { return kv.first == "requires_grad"; });
  const bool grad = !non_differentiable(c.name) && any_requires_grad(vm, a);
  autograd::CallRecording recording(vm, a, grad && mode == Mode::Eager);
  if (c.inplace && a.npos > 0) recording.begin_write(vm, tensor_obj(a[0]));
  if (c.name == "lu" && c.python_name != "torch.linalg.lu") warn_once(vm, "torch.lu", kTorchLuDeprecated);
  CallInfo info;
  Expected<kiln::ValueList> r = torchapi::call(c, args, kwargs, mode, &info, generator);
  if (!r.ok()) raise_status(r.status());
  std::string moved_to = info.device;
  if (moved_to.empty() && c.name == "to" && a.npos > 1 && a[1].is(ObjKind::Tensor)) moved_to = a[1].as<TensorObj>()->device;
  if (moved_to.empty() && c.is_method && (c.name == "cpu" || c.name == "cuda")) moved_to = c.name == "cpu" ? "cpu" : "cuda:0";
  const std::string device = call_device(c.name, a, moved_to);
  kiln::ValueList& values = r.value();
  if (int64_t limit = vm.options().max_tensor_numel)
    for (const kiln::Value& v : values)
      if (v.is_tensor() && v.to_tensor().numel() > limit)
        throw PyError("RuntimeError", c.name + "() made a tensor of " + std::to_string(v.to_tensor().numel()) +
                                          " elements, over this interpreter's limit of " + std::to_string(limit));
  // torch.lu is _lu_with_info (a LinalgLuFactorEx node), torch.linalg.lu its own op.
  const std::string grad_name = c.python_name == "torch.linalg.lu" ? "linalg.lu" : c.name;
  std::string grad_fn = grad ? grad_fn_for(grad_name, a) : std::string();

  if (info.returns_arg >= 0 && size_t(info.returns_arg) < a.npos) {
    const Value& self = a[size_t(info.returns_arg)];
    if (grad) recording.finish_write(tensor_obj(self), grad_fn);
    return self;
  }
  if (may_return_self(c.name) && a.npos > 0 && a[0].is(ObjKind::Tensor) && values.size() == 1 &&
      values[0].is_tensor() && same_view(values[0].to_tensor(), a[0].as<TensorObj>()->t)) {
    const TensorObj* self = a[0].as<TensorObj>();
    if (self->device == device || moved_to.empty()) return a[0];
    // Another device is another tensor: writes to one must not show in the other.
    Tensor copy = self->t;
    if (mode == Mode::Eager) {
      const Tensor& t = self->t;
      copy = t.is_non_overlapping_and_dense() ? Tensor::empty_strided(t.sizes(), t.strides(), t.dtype())
                                              : Tensor::empty(t.sizes(), t.dtype());
      copy.copy_(t);
    }
    values[0] = kiln::Value(copy);
  }

  Value out;
  switch (info.kind) {
    case ResultKind::Single: out = values.empty() ? Value() : from_ops(values[0]); break;
    case ResultKind::Tuple: {
      ValueVec items;
      for (const kiln::Value& v : values) items.push_back(from_ops(v));
      out = tuple_value(std::move(items));
      break;
    }
    case ResultKind::NamedTuple: {
      ValueVec items;
      for (const kiln::Value& v : values) items.push_back(from_ops(v));
      out = make_named_tuple(vm, info.type_name, info.fields, std::move(items));
      break;
    }
    case ResultKind::Size: out = make_size(values.at(0).to_int_list()); break;
    case ResultKind::PyList: out = from_ops(values.at(0), /*as_list=*/true); break;
  }
  place_results(out, a, device);
  // Results sharing the first argument's memory are its views (detach's are not).
  if (mode == Mode::Eager && a.npos > 0 && c.name != "detach" && c.name != "detach_")
    if (const TensorObj* source = tensor_obj(a[0])) {
      if (out.is(ObjKind::Tuple))
        for (const Value& v : out.as<Tuple>()->items) autograd::note_view(tensor_obj(v), source);
      else
        autograd::note_view(tensor_obj(out), source);
    }
  if (requires_grad && vm.truth(*requires_grad))
    if (TensorObj* t = tensor_obj(out)) {
      if (!is_floating(t->t.dtype()))
        throw PyError("RuntimeError", "Only Tensors of floating point and complex dtype can require gradients");
      t->requires_grad = true;
    }
  if (grad) {
    std::vector<TensorObj*> differentiable;
    if (out.is(ObjKind::Tuple)) {
      for (const Value& v : out.as<Tuple>()->items) differentiable.push_back(tensor_obj(v));
    } else if (out.is(ObjKind::Instance)) {
      // Named tuples: only the first field (values) is differentiable; for
      // lu_unpack and linalg.lu the fields after the permutation P (L, U);
      // both of slogdet's (sign too, as PyTorch marks it), eigh's and geqrf's.
      if (c.name == "lu_unpack" || grad_name == "linalg.lu") {
        for (int64_t i : {1, 2}) differentiable.push_back(tensor_obj(vm.getitem(out, Value(i))));
      } else if (c.name == "slogdet" || c.name == "eigh" || c.name == "geqrf") {
        for (int64_t i : {0, 1}) differentiable.push_back(tensor_obj(vm.getitem(out, Value(i))));
      } else {
        differentiable.push_back(tensor_obj(vm.getitem(out, Value(int64_t(0)))));
      }
    } else {
      differentiable.push_back(tensor_obj(out));
    }
    for (TensorObj* t : differentiable) mark_grad(t, grad_fn);
    recording.finish(differentiable, grad_fn);
  }
  return out;
}

namespace {
// Whether a call's tensors are CUDA tensors: whose autocast state applies to it.
bool on_cuda(const Value& v) {
  if (v.is(ObjKind::Tensor)) return v.as<TensorObj>()->device.starts_with("cuda");
  if (v.is(ObjKind::List) || v.is(ObjKind::Tuple))
    for (const Value& x : v.is(ObjKind::List) ? v.as<List>()->items : v.as<Tuple>()->items)
      if (on_cuda(x)) return true;
  return false;
}
bool on_cuda(const CallArgs& args) {
  for (size_t i = 0; i < args.npos; ++i)
    if (on_cuda(args[i])) return true;
  if (args.kw)
    for (const auto& [k, v] : *args.kw)
      if (on_cuda(v)) return true;
  return false;
}
}  // namespace

Value call_traced(VM& vm, const Callable* callable, std::string graph_target, bool is_method, const CallArgs& args,
                  const std::function<Value(const CallArgs&, Mode)>& run) {
  std::optional<torchapi::AutocastCallDevice> autocast_device;
  if (torchapi::autocast_state().any()) autocast_device.emplace(on_cuda(args));
  // Table calls place their results themselves (run_torch: device= arguments);
  // operators, indexing and attributes follow their tensor arguments.
  const bool place = callable == nullptr;
  const std::string device = place ? call_device(graph_target, args, "") : std::string();
  Value out;
  if (vm.tracer) {
    TorchCall call{callable, graph_target, is_method, args};
    out = vm.tracer->record(vm, call, [&run](const CallArgs& a) { return run(a, Mode::Meta); });
  } else if (EagerTape* tape = active_eager_tape()) {
    {
      // The calls this one makes (a binding calling back into Python) are part of it.
      TapePaused paused;
      out = run(args, Mode::Eager);
      if (place) place_results(out, args, device);
    }
    tape->record(vm, TorchCall{callable, graph_target, is_method, args}, out);
    return out;
  } else {
    out = run(args, Mode::Eager);
  }
  if (place) place_results(out, args, device);
  return out;
}

EagerTape*& active_eager_tape() {
  thread_local EagerTape* tape = nullptr;
  return tape;
}

const char* value_read_name(ValueRead read) {
  switch (read) {
    case ValueRead::Boolean: return "boolean";
    case ValueRead::Number: return "number";
    case ValueRead::Float: return "float";
    case ValueRead::Integer: return "integer";
    case ValueRead::Index: return "index";
    case ValueRead::List: return "list";
  }
  return "value";
}

namespace {

// out= of a torch function: the result written into the given tensor (or
// tuple of tensors), resized when its shape differs, as ATen's out variants
// do; the call returns `out`.
Value write_out(VM& vm, const Callable& c, const Value& out, const Value& result) {
  ValueVec outs = out.is(ObjKind::Tuple) || out.is(ObjKind::List) ? vm.to_vector(out) : ValueVec{out};
  // (values, indices) results come as a tuple or a torch.return_types named tuple.
  ValueVec results = result.is(ObjKind::Tensor) ? ValueVec{result} : vm.to_vector(result);
  if (outs.size() != results.size())
    throw_type_error(c.name + "(): argument 'out' must be a tuple of " + std::to_string(results.size()) + " Tensors");
  for (size_t i = 0; i < outs.size(); ++i) {
    TensorObj* dst = tensor_obj(outs[i]);
    const TensorObj* src = tensor_obj(results[i]);
    if (!dst) throw_type_error(c.name + "(): argument 'out' must be Tensor, not " + type_name(outs[i]));
    if (!src) throw_type_error(c.name + "() with out= returned no tensor");
    const Tensor& r = src->t;
    if (!torchapi::detail::can_cast(r.dtype(), dst->t.dtype()))
      throw PyError("RuntimeError", std::string("result type ") + std::string(pointwise::aten_type_name(r.dtype())) +
                                        " can't be cast to the desired output type " +
                                        std::string(pointwise::aten_type_name(dst->t.dtype())));
    if (dst->t.sizes() == r.sizes()) {
      torchapi::copy_observed(dst->t, r);
    } else {
      if (dst->t.numel() != 0)
        vm.write_err("UserWarning: An output with one or more elements was resized since it had shape " +
                     shape_str(dst->t.sizes()) + ", which does not match the required output shape " +
                     shape_str(r.sizes()) + ". This behavior is deprecated, and in a future PyTorch release outputs "
                     "will not be resized unless they have zero elements. You can explicitly reuse an out tensor t "
                     "by resizing it, inplace, to zero elements with t.resize_(0).\n");
      dst->t = r.dtype() == dst->t.dtype() ? r.clone() : r.to(dst->t.dtype());
    }
    autograd::bump_storage_version(dst->t.storage().get());
  }
  // torch.max(x, 1, out=(v, i)) returns torch.return_types.max_out(values=v, indices=i).
  if (result.is(ObjKind::Instance) && result.as<Instance>()->cls->module == "torch.return_types") {
    const Class& cls = *result.as<Instance>()->cls;
    std::vector<std::string> fields;
    result.as<Instance>()->dict->for_each([&](const Value& k, const Value&) { fields.push_back(as_str(k)); });
    return make_named_tuple(vm, cls.module + "." + cls.name + "_out", fields, std::move(outs));
  }
  return out;
}

}  // namespace

namespace {
// The complex tensors of complex_prelude.cpp are Python objects: a torch
// function reached with one (also inside a list, as torch.cat's) is theirs.
const Value* dispatch_override(const CallArgs& args) {
  auto of = [](const Value& v) -> const Value* {
    return v.is(ObjKind::Instance) ? v.as<Instance>()->cls->lookup("__kiln_torch_dispatch__") : nullptr;
  };
  // Nested lists too: torch.tensor([[np.float32(1)], [np.float32(2)]]).
  std::function<const Value*(const Value&, int)> within = [&](const Value& v, int depth) -> const Value* {
    if (const Value* d = of(v)) return d;
    if (depth < 8 && (v.is(ObjKind::List) || v.is(ObjKind::Tuple)))
      for (const Value& item : v.is(ObjKind::List) ? v.as<List>()->items : v.as<Tuple>()->items)
        if (const Value* d = within(item, depth + 1)) return d;
    return nullptr;
  };
  for (size_t i = 0; i < args.npos; ++i)
    if (const Value* d = within(args[i], 0)) return d;
  if (args.kw)
    for (const auto& [name, value] : *args.kw)
      if (const Value* d = within(value, 0)) return d;
  return nullptr;
}
}  // namespace

namespace {

// The contexts entered (innermost last) above the default set_default_device set.
struct DefaultDevices {
  Value global;
  std::vector<Value> entered;
};

DefaultDevices& default_devices(VM& vm) {
  auto& slot = vm.extensions["kiln.default_device"];
  if (!slot) slot = std::make_shared<DefaultDevices>();
  return *static_cast<DefaultDevices*>(slot.get());
}

// torch.utils._device._device_constructors(): the functions a default device reaches.
bool is_device_constructor(const Callable& c) {
  if (c.is_method || c.module != "torch") return false;
  static const std::unordered_set<std::string_view> names = {
      "empty", "empty_permuted", "empty_strided", "ones", "arange", "bartlett_window", "blackman_window", "eye", "full",
      "hamming_window", "hann_window", "kaiser_window", "linspace", "logspace", "rand", "randn", "randint", "randperm",
      "range", "sparse_coo_tensor", "tril_indices", "triu_indices", "zeros", "asarray", "tensor", "as_tensor",
      "scalar_tensor"};
  return names.count(c.name) > 0;
}

}  // namespace

const Value* default_device(VM& vm) {
  auto it = vm.extensions.find("kiln.default_device");
  if (it == vm.extensions.end() || !it->second) return nullptr;
  const DefaultDevices& d = *static_cast<const DefaultDevices*>(it->second.get());
  if (!d.entered.empty()) return &d.entered.back();
  return d.global.is_none() ? nullptr : &d.global;
}

void push_default_device(VM& vm, const Value& device) { default_devices(vm).entered.push_back(device); }

void pop_default_device(VM& vm) {
  DefaultDevices& d = default_devices(vm);
  if (!d.entered.empty()) d.entered.pop_back();
}

void set_default_device(VM& vm, const Value& device) { default_devices(vm).global = device; }

Value call_torch(VM& vm, const Callable& c, const CallArgs& args) {
  if (const Value* device = is_device_constructor(c) ? default_device(vm) : nullptr) {
    const Value* given = args.kwarg("device");
    if (!given || given->is_none()) {
      std::vector<std::pair<std::string, Value>> kw = args.kw ? *args.kw : std::vector<std::pair<std::string, Value>>{};
      std::erase_if(kw, [](const auto& kv) { return kv.first == "device"; });
      kw.emplace_back("device", *device);
      return call_torch(vm, c, CallArgs{args.pos, args.npos, &kw});
    }
  }
  if (const Value* dispatch = dispatch_override(args)) {
    auto kwargs = make<Dict>();
    if (args.kw)
      for (const auto& [name, value] : *args.kw) kwargs->set(str_value(name), value);
    return vm.call(*dispatch, ValueVec{str_value(c.python_name), tuple_value(ValueVec(args.pos, args.pos + args.npos)),
                                       Value(kwargs)});
  }
  if (const Value* out = c.is_method ? nullptr : args.kwarg("out"); out && !out->is_none()) {
    if (EagerTape* tape = active_eager_tape()) tape->unsupported(vm, c.python_name + "(out=...)");
    if (vm.tracer) {
      BreakInfo info;
      info.reason = "Unsupported call: " + c.python_name + "(out=...)";
      info.explanation = "  Explanation: Kiln does not trace out= arguments; the call runs eagerly.\n";
      vm.tracer->graph_break(vm, info);
    }
    std::vector<std::pair<std::string, Value>> kw = *args.kw;
    std::erase_if(kw, [](const auto& kv) { return kv.first == "out"; });
    CallArgs without_out{args.pos, args.npos, kw.empty() ? nullptr : &kw};
    const bool grad = vm.grad_enabled && any_requires_grad(vm, args);
    if (grad)
      throw PyError("RuntimeError", c.name + "(): functions with out=... arguments don't support automatic "
                                             "differentiation, but one of the arguments requires grad.");
    return write_out(vm, c, *out, call_torch(vm, c, without_out));
  }
  if (vm.tracer)
    if (const Value* g = args.kwarg("generator"); g && explicit_generator(vm, *g)) {
      // Dynamo does not trace draws from a torch.Generator object either.
      BreakInfo info;
      info.reason = "Unsupported call: " + c.python_name + "(generator=torch.Generator)";
      info.explanation = "  Explanation: Kiln does not trace draws from an explicit torch.Generator; the call runs eagerly.\n";
      vm.tracer->graph_break(vm, info);
    }
  return call_traced(vm, &c, c.graph_target, c.is_method, args,
                     [&vm, &c](const CallArgs& a, Mode mode) { return run_torch(vm, c, a, mode); });
}

// ---- misc ----

Value make_size(const Shape& sizes) {
  ValueVec items;
  items.reserve(sizes.size());
  for (int64_t s : sizes) items.push_back(Value(s));
  return Value(make<Tuple>(std::move(items), /*size=*/true));
}

Value make_dtype(VM& vm, DType d) {
  Value& slot = torch_state(vm).dtypes[size_t(d)];
  if (slot.is_none()) slot = Value(make<DTypeObj>(d));
  return slot;
}

std::optional<DType> dtype_arg(const Value& v) {
  if (v.is(ObjKind::DType)) return v.as<DTypeObj>()->dtype;
  return std::nullopt;
}

Value make_named_tuple(VM& vm, const std::string& type_name, const std::vector<std::string>& fields, ValueVec values) {
  Ref<Class> cls = named_tuple_class(vm, type_name, fields);
  auto inst = make<Instance>(cls);
  for (size_t i = 0; i < fields.size() && i < values.size(); ++i) inst->dict->set(str_value(fields[i]), values[i]);
  return Value(inst);
}

}  // namespace kiln::py
