#pragma once
// Internal to core/python/torch_api_*.cpp: PyTorch's Python argument parser in
// small (signatures written as in native_functions.yaml's python signatures,
// overload matching, its error messages) and the table the bindings are
// declared in. Each torch_api_<family>.cpp fills the table with its callables.
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/python/torch_api.h"
#include "core/tensor/generator.h"

namespace kiln::torchapi::detail {

struct ParamType {
  enum class Base {
    Tensor,          // a Tensor
    TensorOrNumber,  // a Tensor, or a Python number left as is (binary ops' `other`)
    Scalar,          // int, float, bool (or a 0-dim tensor's value)
    Int,             // int, not bool (or a 0-dim integer tensor's value)
    Float,           // float, int or bool, bound as float
    Bool,
    IntList,         // list of ints; a single int when `size` > 0 (int[2] stride=1)
    FloatList,
    TensorList,
    ScalarType,
    Str,
    Device,          // "cpu", "cuda:0", "meta" (an int means a CUDA ordinal)
    Layout, MemoryFormat, Generator,  // accepted and ignored (only None / strided / formats)
    Any,             // anything: the handler checks
  };
  Base base = Base::Any;
  bool optional = false;
  int size = 0;  // int[2]
};

struct Param {
  std::string name;
  ParamType type;
  std::optional<Value> default_value;  // set when the parameter may be left out
  bool kwarg_only = false;
  // `Tensor[] *tensors`: the positional arguments are the list (torch.meshgrid(a, b));
  // one list argument is taken as the list itself. Only as the sole positional parameter.
  bool varargs = false;
};

class Bound;
using Handler = std::function<ValueList(const Bound&)>;

struct Signature {
  std::string name;            // "sum"
  std::vector<Param> params;   // for methods params[0] is self
  Handler handler;
  std::string text;            // as written in the table
  bool varargs_intlist = false;  // x.view(2, 3) for x.view((2, 3)): set per callable kind
  ResultKind result = ResultKind::Single;
  std::string tuple_type;      // NamedTuple type ("torch.return_types.max")
  std::vector<std::string> fields;
  int returns_arg = -1;        // the result is this (mutated) argument
  // PyTorch's text of the overload in error messages: "(Tensor input, *, torch.dtype dtype = None)";
  // `skip_self` leaves self out for methods.
  std::string display(bool skip_self) const;
};

// "tuple of ints", "torch.dtype", "Number": a parameter type as PyTorch's messages name it.
std::string type_display(const ParamType& t);

// Parses "(Tensor input, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)".
// A malformed signature is a bug in the tables (KILN_CHECK).
Signature parse_signature(std::string_view name, std::string_view text);

// The bound arguments of one call, in signature order with defaults filled in.
class Bound {
 public:
  Bound(const Signature& sig, ValueList values, Mode mode, CpuGenerator* generator = nullptr)
      : sig_(&sig), v_(std::move(values)), mode_(mode), generator_(generator) {}
  Mode mode() const { return mode_; }
  bool meta() const { return mode_ == Mode::Meta; }
  const Signature& signature() const { return *sig_; }
  size_t size() const { return v_.size(); }
  const Value& operator[](size_t i) const { return v_[i]; }
  const ValueList& values() const { return v_; }
  const Value& arg(std::string_view name) const;  // by parameter name

  bool is_none(size_t i) const { return v_[i].is_none(); }
  const Tensor& tensor(size_t i) const { return v_[i].to_tensor(); }
  Tensor opt_tensor(size_t i) const { return v_[i].is_none() ? Tensor() : v_[i].to_tensor(); }
  int64_t integer(size_t i) const { return v_[i].to_int(); }
  std::optional<int64_t> opt_integer(size_t i) const;
  double real(size_t i) const { return v_[i].to_double(); }
  bool boolean(size_t i) const { return v_[i].to_bool(); }
  Scalar scalar(size_t i) const { return v_[i].to_scalar(); }
  std::vector<int64_t> ints(size_t i) const { return v_[i].to_int_list(); }
  std::optional<DType> opt_dtype(size_t i) const;
  const std::string& str(size_t i) const { return v_[i].to_string(); }
  // The generator random draws come from: the call's generator= or the default one.
  CpuGenerator& rng() const { return generator_ ? *generator_ : default_cpu_generator(); }

  // A handler that decides at run time to return argument `i` itself (mutated in
  // place, or unchanged: F.relu(x, inplace=True), F.dropout(x, training=False)).
  void set_returns_arg(int i) const { returns_arg_ = i; }
  int returns_arg() const { return returns_arg_; }

 private:
  mutable int returns_arg_ = -1;
  const Signature* sig_;
  ValueList v_;
  Mode mode_;
  CpuGenerator* generator_;
};

// ---- autocast (torch_api_autocast.cpp) ----

enum class AutocastPolicy { LowerPrecision, Fp32, Fp32SetOptDtype, Fp32AppendDtype, Promote, Banned };
// The policy autocast gives the ATen op `name` ("aten::mm", "aten::softmax.int",
// or a torch callable's name) on the current call's device type; none while
// autocast is off there or excluded.
std::optional<AutocastPolicy> autocast_policy(std::string_view name);
// Casts `values` (`names` are their parameter names, for dtype=) as `policy` says.
void apply_autocast(AutocastPolicy policy, Mode mode, ValueList& values, const std::vector<std::string_view>& names);
// While one lives, no policy applies: a listed op runs below autocast, as ATen's
// wrappers redispatch with the Autocast keys excluded.
struct AutocastExcluded {
  AutocastExcluded();
  ~AutocastExcluded();
  AutocastExcluded(const AutocastExcluded&) = delete;
  AutocastExcluded& operator=(const AutocastExcluded&) = delete;
};

// ---- running ATen ops in a mode; errors are thrown as kiln::Error ----

ValueList aten(Mode mode, std::string_view op, const ValueList& args, const KwargList& kwargs = {});
Tensor aten_t(Mode mode, std::string_view op, const ValueList& args, const KwargList& kwargs = {});

// Handler that passes the bound values to `op`, matching parameters to the
// op's schema by name ("input" is the schema's first argument / "self"), kwarg-only
// schema arguments as keywords. Parameters the schema lacks are a table bug.
Handler to_aten(std::string op);
// As to_aten, for overloads whose Tensor-or-number parameter picks `tensor_op`
// when it is a Tensor and `scalar_op` (the .Scalar overload) for a number.
Handler to_aten_tensor_or_scalar(std::string tensor_op, std::string scalar_op);

// In-place: runs `f` out of place and writes its first result into args[0]
// with PyTorch's checks (the shape must not change, the result dtype must cast
// to self's); returns self.
Handler inplace(Handler f, std::string name);
// Writes `result` into `self` as an in-place op named `name` would.
void write_inplace(const Tensor& self, const Tensor& result, Mode mode, std::string_view name);
// c10::canCast: float -> integral and non-bool -> bool are refused.
bool can_cast(DType from, DType to);

// A Python number as the 0-dim tensor PyTorch's wrapped numbers become, in `dtype`.
Tensor scalar_to_tensor(const Scalar& s, DType dtype, Mode mode);
// The one element of a 0-dim (or one-element) tensor; a user error in meta mode,
// where the value is data-dependent.
Scalar item_of(const Tensor& t, Mode mode, std::string_view what);

// "cpu" and "meta" pass; "cuda" (or "cuda:N", or N) passes when a CUDA device
// of that index is there (cuda_device_count), other devices are refused.
void check_device(const Value& device);
// A device argument as tensors carry it: "cpu", "meta", "cuda:0" ("cuda" and 0
// mean the current device, cuda:0). "" for None.
std::string device_name(const Value& device);


// ---- the table ----

enum Where : unsigned {
  kTorch = 1,          // torch.<name>
  kMethod = 2,         // Tensor.<name>
  kInplaceMethod = 4,  // Tensor.<name>_ derived by `inplace`
  kTorchInplace = 8,   // torch.<name>_ derived by `inplace`
};

struct SigDef {
  const char* text;
  Handler handler;
  // How the result reaches Python: nullptr (one value), "tuple" (several values,
  // or one List whose items are the tuple's: ops returning Tensor[]), "size", "list",
  // or a named tuple "max(values,indices)" (torch.return_types.max).
  const char* result = nullptr;
};

// How a Python namespace's callable is implemented in PyTorch decides the
// graph target and the repr.
enum class PyKind {
  TorchBuiltin,   // torch.<name>: "<built-in method X of type object at ...>"
  NnBuiltin,      // torch._C._nn.<name>: "<built-in function X>"
  PyFunction,     // a Python function in `module`: "<function X at ...>"
  Dispatch,       // boolean_dispatch (max_pool2d): "<function boolean_dispatch.<locals>.fn at ...>"
  Method,         // Tensor.<name>
  SpecialBuiltin, // torch._C._special.special_<name>
  LinalgBuiltin,  // torch._C._linalg.linalg_<name>
};

class Table {
 public:
  // torch.<name> and/or Tensor.<name> (and the derived in-place variants).
  Table& def(const std::string& name, unsigned where, std::initializer_list<SigDef> sigs);
  // One callable of `module` ("torch.nn.functional", "torch.special", "torch").
  Callable& def_in(const std::string& module, const std::string& name, PyKind kind,
                   std::initializer_list<SigDef> sigs, const std::string& graph_target = "");
  // A callable with explicit signatures already parsed (for shared overload sets).
  Callable& add(const std::string& module, const std::string& name, PyKind kind,
                std::vector<Signature> sigs, const std::string& graph_target = "");
  Callable* get(std::string_view python_name);

  std::vector<std::unique_ptr<Callable>> callables;
  std::vector<std::unique_ptr<Signature>> signatures;
};

// Each family file registers its callables.
void register_pointwise(Table& t);
void register_reductions(Table& t);
void register_shapes(Table& t);
void register_linalg(Table& t);
void register_creation(Table& t);
void register_tensor_methods(Table& t);
void register_nn_activations(Table& t);
void register_nn_functional(Table& t);
void register_nn_losses(Table& t);

// Shared by the torch.nn.functional files.
extern const char* const kFunctional;  // "torch.nn.functional"
// The out-of-place result `r` of an activation, written into the input instead
// when `in_place` (F.relu(x, inplace=True)); the call then returns the input.
ValueList maybe_inplace(const Bound& b, bool in_place, const char* name, ValueList r);
// ATen's dropout: noise = empty_like(x).bernoulli_(1 - p) / (1 - p); x * noise.
// `feature`: one draw per (N, C) channel (dropout1d/2d/3d); `unbatched`: the
// input has no batch dim, one draw per channel C of dim 0.
ValueList dropout(const Bound& b, double p, bool training, bool in_place, bool feature, bool unbatched);

// Shape helpers shared by the families.
std::string shape_text(const Shape& s);  // "[2, 3]"

}  // namespace kiln::torchapi::detail
