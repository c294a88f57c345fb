#pragma once
#include <functional>
// The layer between Python-level torch calls and the ATen op registry: what
// PyTorch's python_arg_parser and its torch / Tensor / torch.nn.functional
// function tables are. It works on ops-level values (core/ops/value.h) so it
// does not depend on the interpreter's object model; the interpreter converts
// int/float/bool/str/None to the scalar Values, tuples and lists (and
// torch.Size) to List, torch.dtype to DType, torch.device to String ("cpu",
// "cuda:0"), tensors to Tensor.
//
// Every entry point runs in one of two modes. Eager computes on CPU tensors;
// Meta takes meta tensors (sizes, strides, dtype, no data) and gives the meta
// tensors PyTorch's fake tensors would have, for capture. Both modes pick the
// same overload and agree on result sizes, strides and dtypes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ops/schema.h"
#include "core/ops/value.h"
#include "core/python/code.h"
#include "core/util/status.h"

namespace kiln {
class CpuGenerator;
}

namespace kiln::torchapi {

enum class Mode { Eager, Meta };

// Sees every ATen op the torch bindings run eagerly, and every write they make
// into an existing tensor: how a torch-level graph is lowered to ATen (as
// AOTAutograd traces through the dispatcher). One per thread; null when off.
class AtenObserver {
 public:
  virtual ~AtenObserver() = default;
  virtual void on_aten(std::string_view op, const ValueList& args, const KwargList& kwargs, const ValueList& results) = 0;
  // `dst` (an existing tensor or a view of one) is about to be overwritten:
  // the last chance to keep its old value.
  virtual void before_copy(const Tensor& /*dst*/) {}
  // `dst` (an existing tensor or a view of one) was overwritten with `src`.
  virtual void on_copy(const Tensor& dst, const Tensor& src) = 0;
};
AtenObserver* set_aten_observer(AtenObserver* observer);  // returns the previous one

// dst.copy_(src), seen by the observer: every in-place write of the bindings goes here.
void copy_observed(const Tensor& dst, const Tensor& src);

// torch.autocast's thread state, as ATen keeps it (at::autocast): per device
// type whether it is on and its lower-precision dtype, the cast cache flag
// (accepted; Kiln casts anew each time, which gives the same numbers) and the
// nesting depth of the Python context managers.
struct AutocastState {
  bool cpu_enabled = false;
  bool cuda_enabled = false;
  DType cpu_dtype = DType::BFloat16;
  DType cuda_dtype = DType::Float16;
  bool cache_enabled = true;
  int nesting = 0;
  bool any() const { return cpu_enabled || cuda_enabled; }
  bool operator==(const AutocastState&) const = default;
};
AutocastState& autocast_state();

// The device type ("cpu" / "cuda") of the torch call running on this thread,
// which decides whose autocast policy applies to its ATen ops (ATen asks each
// tensor; Kiln's ops-level tensors do not carry the CUDA label). Set by the
// interpreter around each torch call while autocast is on.
struct AutocastCallDevice {
  explicit AutocastCallDevice(bool cuda);
  ~AutocastCallDevice();
  AutocastCallDevice(const AutocastCallDevice&) = delete;
  AutocastCallDevice& operator=(const AutocastCallDevice&) = delete;
  bool saved;
};

namespace detail {
struct Signature;
}

// One Python-visible torch callable: a function of torch / torch.nn.functional
// / torch.special / torch.linalg, or a method of Tensor.
struct Callable {
  std::string python_name;   // "torch.sin", "torch.nn.functional.gelu", "Tensor.view"
  std::string module;        // "torch", "torch.nn.functional", "Tensor", ...
  std::string name;          // the attribute name in `module`: "sin", "gelu", "view"
  // How TorchDynamo 2.11 names it in dynamo_output_graph code: "torch.sin",
  // "torch._C._nn.gelu", "torch.nn.functional.relu", "torch.conv2d"; for methods
  // the bare method name ("view").
  std::string graph_target;
  // str() of the callable, as torch._dynamo.explain's "Ops per Graph" shows it:
  // "<built-in method sin of type object at 0x7f0000000000>", "<built-in function
  // linear>", "<function relu at 0x7f0000000000>" (one fixed fake address).
  std::string python_repr;
  bool is_method = false;    // called with self as args[0]
  bool inplace = false;      // mutates and returns args[0] (add_, relu_, F.relu(inplace=True) is not: see CallInfo)
  // A Python function Dynamo traces into (F.pad, F.rms_norm, F.threshold): the graph
  // shows the builtin it calls (graph_target), with every argument passed
  // positionally as the function body passes them, and python_repr is that
  // builtin's str(), as explain's "Ops per Graph" lists it.
  bool dynamo_inlines = false;
  bool uses_rng = false;     // may draw from the default CPU generator in eager mode (rand, dropout, ...)
  std::vector<const detail::Signature*> signatures;  // overloads, in the order they are tried
};

// Finds a callable by its Python name: "torch.sin", "torch.nn.functional.relu",
// "Tensor.sum", "torch.special.expit". Aliases (torch.nn.functional.conv2d is
// torch.conv2d) have their own entry with the aliased graph target.
const Callable* find(std::string_view python_name);
// The callables of one namespace ("torch", "torch.nn.functional", "Tensor",
// "torch.special", "torch.linalg"), sorted by name, for module dicts and dir().
std::vector<const Callable*> callables_of(std::string_view module);
// Every namespace callables_of knows.
std::vector<std::string> modules();
// docs/torch_api.md: one Markdown table per namespace listing each callable
// with its signatures as PyTorch prints them (tools/torch_api_table.cpp
// writes it; a test keeps the file equal to it).
std::string reference_markdown();

// How the values `call` returns become a Python object.
enum class ResultKind {
  Single,      // values[0] is the result (a List value here is a tuple, e.g. stride())
  Tuple,       // a tuple of `values` (split, chunk, unbind, var_mean, ...)
  NamedTuple,  // torch.return_types.<type_name> with `fields` (max(dim=), sort, topk)
  Size,        // values[0] is a List of Int shown as torch.Size (Tensor.size())
  PyList,      // values[0] is a (nested) List that is a Python list (Tensor.tolist())
};

// How many CUDA devices Kiln can run compiled regions on. The CUDA runtime
// lives in compiler/, which core does not depend on: the application installs
// the counter; it is asked once, on first need (probing loads the driver).
// Without one there are no CUDA devices.
void set_cuda_device_counter(std::function<int()> counter);
int cuda_device_count();

struct CallInfo {
  ResultKind kind = ResultKind::Single;
  std::string type_name;            // NamedTuple: "torch.return_types.max"
  std::vector<std::string> fields;  // NamedTuple: "values", "indices"
  // The result is args[index] itself, mutated in place (Tensor.add_, x.relu_(),
  // F.relu(x, inplace=True), torch.nn.init-style fills): the interpreter should
  // return the same object. -1 when the result is new.
  int returns_arg = -1;
  std::string signature;            // the overload that matched, as PyTorch prints it
  // The device= argument given ("cuda:0", "cpu", "meta"; device_name()), "" when none.
  std::string device;
};

// Calls `c` with Python positional and keyword arguments (for methods args[0] is
// self). Picks the first matching overload like PyTorch's parser; a mismatch is
// an error worded like PyTorch's ("sum() received an invalid combination of
// arguments - got (Tensor, str), but expected one of: ..."). Random draws come
// from `generator` when given (the call's torch.Generator, passed as None in
// `kwargs`), else from the default generator.
Expected<ValueList> call(const Callable& c, const ValueList& args, const KwargList& kwargs, Mode mode,
                         CallInfo* info = nullptr, CpuGenerator* generator = nullptr);

// The legacy tensor type name of a dtype, as Tensor.type() and autograd's
// messages print it: "torch.FloatTensor", "torch.LongTensor".
const char* legacy_type_name(DType d);

// ---- operators ----

// a <op> b where at least one of a, b is a Tensor; Python numbers take part as
// PyTorch's wrapped numbers (int tensor * 2.5 is float32, 2 - x is rsub, 1 / x is
// x.reciprocal() * 1). `inplace` is a <op>= b: with a Tensor `a` the result is
// written into `a` and `a` is returned (an error when the result dtype cannot be
// cast to a's, as PyTorch); otherwise (a number, or @=) it is a new value.
Expected<Value> binary(py::BinaryOpKind op, const Value& a, const Value& b, Mode mode, bool inplace = false);
// -x, +x, ~x on a Tensor (`not x` is the interpreter's business).
Expected<Value> unary(py::UnaryOpKind op, const Value& a, Mode mode);
// < <= == != > >= with at least one Tensor. `x == None` is False and `x != None`
// True, as Python's fallback gives.
Expected<Value> compare(py::CompareKind op, const Value& a, const Value& b, Mode mode);

// The `operator` module function Dynamo records for an operator node:
// graph_target "operator.mul" / "operator.iadd" / "operator.lt" / "operator.neg" /
// "operator.getitem", python_repr "<built-in function mul>".
const Callable& operator_callable(py::BinaryOpKind op, bool inplace = false);
const Callable& operator_callable(py::CompareKind op);
const Callable& operator_callable(py::UnaryOpKind op);
const Callable& getitem_callable();
const Callable& setitem_callable();

// ---- indexing: Tensor.__getitem__ / __setitem__ ----

struct IndexItem {
  enum class Kind { Int, Slice, None, Ellipsis, Bool, Tensor, Sequence };
  Kind kind = Kind::None;
  int64_t index = 0;                                // Int
  std::optional<int64_t> start, stop, step;         // Slice; unset parts are Python's None
  bool flag = false;                                // Bool
  Tensor tensor;                                    // Tensor (long/int or bool/uint8 mask)
  Value sequence;                                   // Sequence: a (nested) list of ints or bools -> a long/bool tensor

  static IndexItem integer(int64_t i);
  static IndexItem slice(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step);
  static IndexItem none();
  static IndexItem ellipsis();
  static IndexItem boolean(bool b);
  static IndexItem of_tensor(Tensor t);
  static IndexItem of_sequence(Value list);
};

// x[items] with PyTorch's rules: ints select, slices slice (views), None adds a
// dim, ... fills, tensors and int lists index (advanced indexing; separated
// advanced indices put their dims first, as NumPy). Basic indexing gives views.
// A single non-tuple key is a one-item list.
Expected<Value> getitem(const Tensor& self, const std::vector<IndexItem>& items, Mode mode);
// x[items] = value (a number or a Tensor broadcast to the indexed shape). Eager
// writes into self's storage; Meta only checks shapes and dtypes.
Status setitem(const Tensor& self, const std::vector<IndexItem>& items, const Value& value, Mode mode);

// ---- construction from Python data ----

// torch.tensor(data, dtype=None): data is a number, a bool or a nested List of
// them (or of 0-dim tensors). Python's inference: all bools -> bool, ints ->
// int64, any float -> float32. Ragged lists are an error naming the position.
// Meta mode gives a meta tensor of the same shape and dtype.
Expected<Tensor> tensor_from_data(const Value& data, std::optional<DType> dtype, Mode mode);

// Tensor attributes that are not calls: "shape" (torch.Size), "ndim", "dtype",
// "device" ("cpu"), "T", "mT", "H", "mH", "is_cuda", "is_meta"... `info` says
// how to wrap the result (Size for shape). Unknown names give nullopt.
std::optional<Expected<Value>> tensor_attribute(const Tensor& self, std::string_view name, Mode mode,
                                                CallInfo* info = nullptr);

}  // namespace kiln::torchapi
