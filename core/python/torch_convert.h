#pragma once
// Internal to the torch bindings (torch_module.cpp, torch_tensor.cpp): moving
// values between the interpreter's objects (py::Value) and the ops-level values
// torchapi works on (kiln::Value), running one torch callable eagerly or through
// the capture's Tracer, and the autograd bookkeeping Kiln keeps for printing
// (requires_grad, the grad_fn name shown by repr) without an autograd engine.
#include <functional>
#include <string>
#include <string_view>

#include "core/ops/value.h"
#include "core/python/eager_tape.h"
#include "core/python/object.h"
#include "core/python/torch_api.h"
#include "core/python/tracer.h"

namespace kiln::py {

class VM;

// ---- py -> ops ----

// None, bool, int, float, str, dtype, device (as "cpu"/"cuda:0"), tensors, and
// (nested) lists / tuples / torch.Size of them. Anything else is a TypeError
// naming `what` (the callable) and the Python type.
kiln::Value to_ops(const Value& v, std::string_view what);
kiln::ValueList to_ops_args(const CallArgs& a, std::string_view what);
kiln::KwargList to_ops_kwargs(const CallArgs& a, std::string_view what);

// The CPU generator behind a torch.Generator object (torch/_C/Generator.py's
// handle into this VM's generators); null for any other value.
CpuGenerator* explicit_generator(VM& vm, const Value& v);

// ---- ops -> py ----

// Tensors become new TensorObj; a List becomes a tuple (`as_list` for a list).
Value from_ops(const kiln::Value& v, bool as_list = false);

// A Status from torchapi as the Python exception PyTorch raises for it:
// argument-parser failures are TypeError, dimension and index range errors
// IndexError, everything else RuntimeError.
[[noreturn]] void raise_status(const Status& s);

// The tensor inside a TensorObj (TypeError naming `what` otherwise).
const Tensor& tensor_of(const Value& v, std::string_view what);
TensorObj* tensor_obj(const Value& v);  // nullptr unless a tensor

// ---- running torch callables ----

// Runs `c` now in `mode` on Python arguments and wraps the result as Python
// objects: tuples, named tuples (torch.return_types.*), torch.Size, lists, or
// the mutated argument itself for in-place calls.
Value run_torch(VM& vm, const torchapi::Callable& c, const CallArgs& args, torchapi::Mode mode);
// The entry point of every torch call: eager, or recorded by vm.tracer.
Value call_torch(VM& vm, const torchapi::Callable& c, const CallArgs& args);

// The device `with torch.device(d):` or torch.set_default_device(d) made the
// tensor constructors' default (PyTorch's DeviceContext), or null for none.
const Value* default_device(VM& vm);
void push_default_device(VM& vm, const Value& device);
void pop_default_device(VM& vm);
void set_default_device(VM& vm, const Value& device);

// Routes a call that is not a torchapi callable (operators, indexing, the
// bindings' own tensor methods): records `graph_target` with vm.tracer while
// tracing, running `run` in Meta mode; runs it in Eager mode otherwise.
Value call_traced(VM& vm, const torchapi::Callable* callable, std::string graph_target, bool is_method,
                  const CallArgs& args, const std::function<Value(const CallArgs&, torchapi::Mode)>& run);

// ---- autograd bookkeeping ----

// True when some tensor among `args` (lists included) requires grad and grad
// mode is on: the results of the call then require grad too.
bool any_requires_grad(VM& vm, const CallArgs& args);
// The tensors among `args` (lists included) that require grad, in argument
// order; none when grad mode is off.
std::vector<TensorObj*> inputs_requiring_grad(VM& vm, const CallArgs& args);
// PyTorch's error for in-place writes into a leaf that requires grad.
void check_inplace_allowed(VM& vm, const Value& target);
// Marks a floating result of a differentiable call as the output of `grad_fn`.
void mark_grad(TensorObj* t, const std::string& grad_fn);
// The autograd node name PyTorch gives the result of `name` ("AddmmBackward0").
std::string grad_fn_for(std::string_view name, const CallArgs& args);

// ---- reading values (graph breaks while tracing) ----

// Tensor.item(): a Python float, int or bool; breaks the graph while tracing.
// `read` is how the value leaves, for a recording tape (int(t) is an Integer).
Value tensor_item(VM& vm, const Value& t, ValueRead read = ValueRead::Number);
// The graph break Tensor.item() causes under Dynamo's default config.
[[noreturn]] void break_on_item(VM& vm);

// ---- misc ----

Value make_size(const Shape& sizes);          // torch.Size
Value grad_fn_object(VM& vm, const TensorObj& t);  // Tensor.grad_fn (torch_info.cpp)
Value make_dtype(VM& vm, DType d);            // this VM's torch.<dtype> object (`is` works)
std::optional<DType> dtype_arg(const Value& v);  // a torch.dtype, else nullopt
// The named-tuple class for torch.return_types.<name>.
Value make_named_tuple(VM& vm, const std::string& type_name, const std::vector<std::string>& fields,
                       ValueVec values);

// ---- installation (torch_tensor.cpp, nn_prelude.cpp) ----

// Registers the builtin classes torch.Tensor and torch.nn.Parameter (with every
// Tensor method) and returns torch.Tensor.
Ref<Class> install_tensor_types(VM& vm);
// Compiles and runs the Python sources of torch.nn.init and torch.nn's modules
// into the registered torch.nn.init / torch.nn module objects.
void install_nn_prelude(VM& vm);
void install_complex_prelude(VM& vm, const Ref<Module>& torch);  // complex_prelude.cpp
void install_sparse_prelude(VM& vm, const Ref<Module>& torch);   // sparse_prelude.cpp

}  // namespace kiln::py
