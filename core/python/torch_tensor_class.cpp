// The builtin classes torch.Tensor and torch.nn.Parameter. Methods are the
// torchapi "Tensor" callables, except those that read metadata or values
// (size, item, tolist, ...) or touch Kiln's autograd bookkeeping, which are
// written here: metadata reads go through Tracer::inspect_tensor while
// tracing, value reads break the graph first, as under TorchDynamo.
#include <cmath>

#include "core/python/autograd.h"
#include "core/python/numpy_bridge.h"
#include "core/python/torch_bridge.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"

namespace kiln::py {

using torchapi::Mode;

namespace {

Value metadata_view(VM& vm, const Value& t) {
  if (EagerTape* tape = active_eager_tape()) tape->metadata_read(vm, t);
  return vm.tracer ? vm.tracer->inspect_tensor(vm, t) : t;
}

void check_args(const CallArgs& a, size_t max_extra, const char* name) {
  if (a.npos > max_extra + 1)
    throw_type_error(std::string(name) + "() takes at most " + std::to_string(max_extra) + " argument" +
                     (max_extra == 1 ? "" : "s") + " (" + std::to_string(a.npos - 1) + " given)");
}

// An optional `dim` argument given positionally or by keyword.
const Value* dim_arg(const CallArgs& a) {
  if (a.npos > 1) return &a[1];
  return a.kwarg("dim");
}

std::string dim_range_error(int64_t dim, int64_t ndim) {
  int64_t n = std::max<int64_t>(ndim, 1);
  return "Dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " + std::to_string(n - 1) +
         "], but got " + std::to_string(dim) + ")";
}

Value scalar_of(const Tensor& t) {
  Scalar s = t.item();
  if (t.dtype() == DType::Bool) return Value(s.to_bool());
  if (is_floating(t.dtype())) return Value(s.to_double());
  return Value(s.to_int());
}

Value nested_list(const Tensor& t) {
  if (t.dim() == 0) return scalar_of(t);
  ValueVec items;
  items.reserve(size_t(t.size(0)));
  for (int64_t i = 0; i < t.size(0); ++i) items.push_back(nested_list(t.select(0, i)));
  return list_value(std::move(items));
}

// int(t), float(t): one-element tensors only, as PyTorch.
Value one_element(VM& vm, const Value& self, const char* what, ValueRead read) {
  if (vm.tracer) break_on_item(vm);
  const Tensor& t = tensor_of(self, what);
  if (t.numel() != 1) throw PyError("ValueError", "only one element tensors can be converted to Python scalars");
  return tensor_item(vm, self, read);
}

void add_method(const Ref<Class>& cls, const std::string& name, BuiltinFn fn) {
  set_attr_builtin(cls->dict, "Tensor." + name, name, std::move(fn));
}

void add_metadata_methods(const Ref<Class>& cls) {
  add_method(cls, "size", [](VM& vm, const CallArgs& a) {
    check_args(a, 1, "size");
    Value m = metadata_view(vm, a[0]);
    const Tensor& t = tensor_of(m, "size");
    const Value* d = dim_arg(a);
    if (!d || d->is_none()) return make_size(t.sizes());
    int64_t dim = to_index(*d, "dim");
    if (dim < -std::max<int64_t>(t.dim(), 1) || dim >= std::max<int64_t>(t.dim(), 1))
      throw PyError("IndexError", dim_range_error(dim, t.dim()));
    return Value(t.dim() == 0 ? int64_t(1) : t.size(dim));
  });
  add_method(cls, "stride", [](VM& vm, const CallArgs& a) {
    check_args(a, 1, "stride");
    Value m = metadata_view(vm, a[0]);
    const Tensor& t = tensor_of(m, "stride");
    const Value* d = dim_arg(a);
    if (!d || d->is_none()) {
      ValueVec items;
      for (int64_t s : t.strides()) items.push_back(Value(s));
      return tuple_value(std::move(items));
    }
    int64_t dim = to_index(*d, "dim");
    if (dim < -std::max<int64_t>(t.dim(), 1) || dim >= std::max<int64_t>(t.dim(), 1))
      throw PyError("IndexError", dim_range_error(dim, t.dim()));
    return Value(t.dim() == 0 ? int64_t(1) : t.stride(dim));
  });
  auto dim = [](VM& vm, const CallArgs& a) {
    check_args(a, 0, "dim");
    Value m = metadata_view(vm, a[0]);
    return Value(tensor_of(m, "dim").dim());
  };
  add_method(cls, "dim", dim);
  add_method(cls, "ndimension", dim);
  auto numel = [](VM& vm, const CallArgs& a) {
    check_args(a, 0, "numel");
    Value m = metadata_view(vm, a[0]);
    return Value(tensor_of(m, "numel").numel());
  };
  add_method(cls, "numel", numel);
  add_method(cls, "nelement", numel);
  add_method(cls, "is_contiguous", [](VM& vm, const CallArgs& a) {
    Value m = metadata_view(vm, a[0]);
    return Value(tensor_of(m, "is_contiguous").is_contiguous());
  });
  add_method(cls, "element_size", [](VM& vm, const CallArgs& a) {
    Value m = metadata_view(vm, a[0]);
    return Value(int64_t(element_size(tensor_of(m, "element_size").dtype())));
  });
  add_method(cls, "is_floating_point", [](VM& vm, const CallArgs& a) {
    Value m = metadata_view(vm, a[0]);
    return Value(is_floating(tensor_of(m, "is_floating_point").dtype()));
  });
  add_method(cls, "storage_offset", [](VM& vm, const CallArgs& a) {
    Value m = metadata_view(vm, a[0]);
    return Value(tensor_of(m, "storage_offset").storage_offset());
  });
  add_method(cls, "get_device", [](VM&, const CallArgs&) { return Value(int64_t(-1)); });
  add_method(cls, "type", [](VM& vm, const CallArgs& a) -> Value {
    if (a.npos == 1 && !a.has_kwargs()) {
      Value m = metadata_view(vm, a[0]);
      return str_value(torchapi::legacy_type_name(tensor_of(m, "type").dtype()));
    }
    if (a.npos == 2 && a[1].is(ObjKind::DType)) {
      const torchapi::Callable* to = torchapi::find("Tensor.to");
      KILN_CHECK(to, "Tensor.to is not in the torch API table");
      return call_torch(vm, *to, a);
    }
    // t.type('torch.FloatTensor') and t.type(torch.FloatTensor), the legacy
    // spelling older GAN code uses (`imgs.type(Tensor)`): the class names its type.
    const torchapi::Callable* by_name = torchapi::find("Tensor.type");
    KILN_CHECK(by_name, "Tensor.type is not in the torch API table");
    if (a.npos == 2 && a[1].is(ObjKind::Builtin)) {
      const std::string& legacy = a[1].as<Builtin>()->name;
      if (!legacy.starts_with("torch.") || !legacy.ends_with("Tensor"))
        throw_type_error("type(): argument 'dtype' must be torch.dtype or str, not " + legacy);
      ValueVec args{a[0], str_value(legacy)};
      return call_torch(vm, *by_name, CallArgs{args.data(), 2, a.kw});
    }
    return call_torch(vm, *by_name, a);
  });
}

Value tolist(VM& vm, const CallArgs& a) {
  check_args(a, 0, "tolist");
  if (vm.tracer) {
    BreakInfo info;
    info.kind = BreakKind::ListOutput;
    // Dynamo 2.11 turns tolist() into one item() per element; the first stops the graph.
    info.reason = "Data dependent operator";
    info.explanation =
        "  Explanation: Operator `aten._local_scalar_dense.default` has a non-Tensor output whose value is "
        "dependent on the data of Tensor inputs.\n"
        "  Hint: Enable tracing of data-dependent output operators with "
        "`torch._dynamo.config.capture_scalar_outputs = True`\n\n"
        "  Developer debug context: aten._local_scalar_dense.default\n";
    vm.tracer->graph_break(vm, info);
  }
  if (EagerTape* tape = active_eager_tape()) tape->value_read(vm, a[0], ValueRead::List);
  const Tensor& t = tensor_of(a[0], "tolist");
  if (t.is_meta()) throw PyError("RuntimeError", "Tensor.tolist() cannot be called on meta tensors");
  return nested_list(t);
}

void add_value_methods(const Ref<Class>& cls) {
  add_method(cls, "item", [](VM& vm, const CallArgs& a) {
    check_args(a, 0, "item");
    return tensor_item(vm, a[0]);
  });
  add_method(cls, "tolist", tolist);
  add_method(cls, "__int__", [](VM& vm, const CallArgs& a) {
    Value v = one_element(vm, a[0], "__int__", ValueRead::Integer);
    if (v.is_float()) {
      double d = v.as_float();
      if (std::isnan(d)) throw PyError("ValueError", "cannot convert float NaN to integer");
      if (std::isinf(d)) throw PyError("OverflowError", "cannot convert float infinity to integer");
      return Value(int64_t(d));
    }
    return v.is_bool() ? Value(int64_t(v.as_bool())) : v;
  });
  add_method(cls, "__float__", [](VM& vm, const CallArgs& a) {
    Value v = one_element(vm, a[0], "__float__", ValueRead::Float);
    return Value(v.is_float() ? v.as_float() : v.is_bool() ? double(v.as_bool()) : double(v.as_int()));
  });
  add_method(cls, "__index__", [](VM& vm, const CallArgs& a) {
    const char* msg = "only integer tensors of a single element can be converted to an index";
    if (tensor_of(a[0], "__index__").numel() != 1) throw_type_error(msg);
    Value v = one_element(vm, a[0], "__index__", ValueRead::Index);
    if (!v.is_int() && !v.is_bool() && !v.is(ObjKind::BigInt)) throw_type_error(msg);
    return v.is_bool() ? Value(int64_t(v.as_bool())) : v;
  });
  add_method(cls, "__bool__", [](VM& vm, const CallArgs& a) { return Value(vm.truth(a[0])); });
  add_method(cls, "__len__", [](VM& vm, const CallArgs& a) { return Value(vm.len(a[0])); });
  add_method(cls, "__format__", [](VM& vm, const CallArgs& a) {
    return str_value(tensor_format(vm, a[0], a.npos > 1 ? as_str(a[1]) : std::string()));
  });
}

void add_grad_methods(const Ref<Class>& cls) {
  add_method(cls, "requires_grad_", [](VM& vm, const CallArgs& a) {
    const Value* flag = a.npos > 1 ? &a[1] : a.kwarg("requires_grad");
    const bool wanted = flag ? vm.truth(*flag) : true;
    // Dynamo 2.11 does not trace a change of the flag in user code; a call
    // that leaves it as it is (a buffer's requires_grad_(False)) returns the
    // tensor without a break. Kiln's own torch code (parameters made inside
    // a region) keeps tracing.
    const TensorObj* t = tensor_obj(a[0]);
    if (vm.tracer && vm.current_frame && !vm.current_frame->code->filename.starts_with("torch/") &&
        (!t || t->requires_grad != wanted)) {
      BreakInfo info;
      info.reason = "Unsupported Tensor.requires_grad_() call";
      info.explanation =
          "  Explanation: Dynamo does not support changes to a Tensor's `requires_grad` through calling "
          "`requires_grad_()`.\n\n\n"
          "  Developer debug context: call_method TensorVariable() requires_grad_\n";
      vm.tracer->graph_break(vm, info);
    }
    if (vm.tracer && t && t->requires_grad == wanted) return a[0];
    vm.setattr(a[0], "requires_grad", Value(wanted));
    return a[0];
  });
  if (!torchapi::find("Tensor.detach"))
    add_method(cls, "detach", [](VM& vm, const CallArgs& a) {
      return call_traced(vm, nullptr, "detach", true, a,
                         [](const CallArgs& x, Mode) { return tensor_value(tensor_of(x[0], "detach")); });
    });
  add_method(cls, "detach_", [](VM&, const CallArgs& a) {
    TensorObj* t = tensor_obj(a[0]);
    t->requires_grad = false;
    t->grad_fn.clear();
    t->grad_node.reset();
    return a[0];
  });
  add_method(cls, "retain_grad", [](VM& vm, const CallArgs& a) {
    TensorObj* t = tensor_obj(a[0]);
    if (!t) throw_type_error("retain_grad() needs a tensor");
    if (vm.tracer) {
      BreakInfo info;
      info.reason = "Unsupported Tensor.retain_grad() call";
      info.explanation = "  Explanation: Kiln does not trace Tensor.retain_grad(); the call runs eagerly.\n";
      vm.tracer->graph_break(vm, info);
    }
    if (!t->requires_grad && !t->grad_node)
      throw PyError("RuntimeError", "can't retain_grad on Tensor that has requires_grad=False");
    if (t->grad_node) autograd::retain_grad(vm, t);
    return Value();
  });
  // backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)
  add_method(cls, "backward", [](VM& vm, const CallArgs& a) -> Value {
    if (vm.tracer) {
      BreakInfo info;
      info.reason = "Unsupported Tensor.backward() call";
      info.explanation =
          "  Explanation: Dynamo currently does not support tracing `Tensor.backward()` when trace_autograd_ops "
          "is off.\n"
          "  Hint: Set torch._dynamo.trace_autograd_ops=True\n\n"
          "  Developer debug context: call_method TensorVariable() backward None None None None\n";
      vm.tracer->graph_break(vm, info);
    }
    const Value* gradient = a.npos > 1 ? &a[1] : a.kwarg("gradient");
    const Value* retain_arg = a.npos > 2 ? &a[2] : a.kwarg("retain_graph");
    const Value* create = a.npos > 3 ? &a[3] : a.kwarg("create_graph");
    const bool create_graph = create && vm.truth(*create);
    if (a.kwarg("inputs") && !a.kwarg("inputs")->is_none()) throw_unsupported("Tensor.backward(inputs=...)");
    std::optional<autograd::GradValue> g;
    if (gradient && !gradient->is_none()) {
      TensorObj* given = tensor_obj(*gradient);
      if (!given) throw PyError("TypeError", "backward(): gradient must be a Tensor");
      g = autograd::grad_value_of(given);
    }
    auto& warned = vm.extensions["kiln.warned_create_graph_backward"];
    if (create_graph && !warned) {
      warned = std::make_shared<int>(1);
      vm.write_err("UserWarning: Using backward() with create_graph=True will create a reference cycle between the "
                   "parameter and its gradient which can cause a memory leak. We recommend using autograd.grad when "
                   "creating the graph to avoid this. If you have to use this function, make sure to reset the .grad "
                   "fields of your parameters to None after use to break the cycle and avoid the leak.\n");
    }
    // retain_graph defaults to create_graph, as in PyTorch.
    const bool retain = retain_arg && !retain_arg->is_none() ? vm.truth(*retain_arg) : create_graph;
    autograd::backward(vm, {tensor_obj(a[0])}, {g}, retain, create_graph);
    return Value();
  });
}

void add_device_methods(const Ref<Class>& cls) {
  // Through the table (torch_api_tensor_methods.cpp), so that the result is
  // placed on its device as every other call's is.
  for (const char* name : {"cpu", "cuda"}) {
    const torchapi::Callable* callable = torchapi::find(std::string("Tensor.") + name);
    KILN_CHECK(callable, "Tensor.", name, " is not in the torch API table");
    add_method(cls, name, [callable](VM& vm, const CallArgs& a) { return call_torch(vm, *callable, a); });
  }
  add_method(cls, "numpy", [](VM& vm, const CallArgs& a) -> Value {
    const Value* force = a.kwarg("force");
    if (force && vm.truth(*force)) throw_unsupported("Tensor.numpy(force=True)");
    return tensor_to_ndarray(vm, a[0]);
  });
  // One process holds every tensor Kiln runs, so a tensor is already where
  // every worker sees it: moving it to shared memory changes nothing.
  add_method(cls, "share_memory_", [](VM&, const CallArgs& a) { return a[0]; });
  add_method(cls, "is_shared", [](VM&, const CallArgs&) { return Value(false); });
  add_method(cls, "data_ptr", [](VM&, const CallArgs&) -> Value {
    throw_unsupported("Tensor.data_ptr() (memory addresses are not part of Kiln's Python subset)");
  });
}

Value new_parameter(VM& vm, const CallArgs& a) {
  const Value* data = a.npos > 0 ? &a[0] : a.kwarg("data");
  const Value* rg = a.npos > 1 ? &a[1] : a.kwarg("requires_grad");
  Tensor t = data && !data->is_none() ? tensor_of(*data, "Parameter") : Tensor::empty({0}, DType::Float32);
  auto p = make<TensorObj>(t);
  p->is_parameter = true;
  // A parameter lives where its data does (a meta tensor stays meta).
  if (data && !data->is_none())
    if (const TensorObj* source = tensor_obj(*data)) p->device = source->device;
  p->requires_grad = rg ? vm.truth(*rg) : true;
  if (p->requires_grad && !is_floating(t.dtype()))
    throw PyError("RuntimeError", "Only Tensors of floating point and complex dtype can require gradients");
  return Value(p);
}

// torch.Tensor(data) / torch.Tensor(*sizes): the legacy float32 constructor.
Value new_tensor(VM&, const CallArgs& a) {
  bool sizes = a.npos == 0 || a[0].is_int() || (a[0].is(ObjKind::Tuple) && a[0].as<Tuple>()->is_size);
  if (sizes) {
    Shape shape;
    if (a.npos == 1 && a[0].is(ObjKind::Tuple)) {
      for (const Value& v : a[0].as<Tuple>()->items) shape.push_back(to_index(v, "size"));
    } else {
      for (size_t i = 0; i < a.npos; ++i) shape.push_back(to_index(a[i], "size"));
    }
    return tensor_value(Tensor::zeros(shape, DType::Float32));
  }
  Expected<Tensor> t = torchapi::tensor_from_data(to_ops(a[0], "Tensor"), DType::Float32, Mode::Eager);
  if (!t.ok()) raise_status(t.status());
  return tensor_value(t.value());
}

}  // namespace

Ref<Class> install_tensor_types(VM& vm) {
  auto tensor = make<Class>("Tensor", Ref<Class>());
  tensor->module = "torch";
  tensor->builtin = 1;
  for (const torchapi::Callable* c : torchapi::callables_of("Tensor")) {
    Value fn = make_builtin("Tensor." + c->name, [c](VM& vm, const CallArgs& a) { return call_torch(vm, *c, a); });
    fn.as<Builtin>()->tag = c;
    tensor->dict->set(str_value(c->name), fn);
  }
  add_metadata_methods(tensor);
  add_value_methods(tensor);
  add_grad_methods(tensor);
  add_device_methods(tensor);
  tensor->dict->set(str_value("__new__"), make_builtin("Tensor", new_tensor));
  vm.register_type(tensor);

  auto parameter = make<Class>("Parameter", tensor);
  parameter->module = "torch.nn.parameter";
  parameter->builtin = 1;
  parameter->dict->set(str_value("__new__"), make_builtin("Parameter", new_parameter));
  vm.register_type(parameter);
  return tensor;
}

}  // namespace kiln::py
