// Small parts of torch's surface that programs read to decide what to do:
// torch.finfo / torch.iinfo (a dtype's limits), torch.accelerator (the
// device-neutral availability checks pytorch/examples use), and the autograd
// node a tensor's grad_fn names.
#include <cmath>
#include <limits>

#include "core/python/object_address.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"
#include "core/tensor/half.h"

namespace kiln::py {

namespace {

Ref<Class> info_class(VM& vm, const char* name) {
  if (Ref<Class> c = vm.builtin_type(name)) return c;
  auto cls = make<Class>(name, Ref<Class>());
  cls->qualname = name;
  cls->module = "torch";
  set_attr_builtin(cls->dict, std::string(name) + ".__repr__", "__repr__", [name](VM& vm, const CallArgs& a) {
    // finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, ...)
    std::string out = std::string(name) + "(";
    bool first = true;
    a[0].as<Instance>()->dict->for_each([&](const Value& k, const Value& v) {
      out += (first ? "" : ", ") + as_str(k) + "=" + (v.is_float() ? [&] {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", v.as_float());
        return std::string(buf);
      }() : vm.str_of(v));
      first = false;
    });
    return str_value(out + ")");
  });
  vm.register_type(cls);
  return cls;
}

DType dtype_or_default(const CallArgs& a, DType fallback) {
  if (a.npos == 0 || a[0].is_none()) return fallback;
  std::optional<DType> d = dtype_arg(a[0]);
  if (!d) throw_type_error("finfo(): argument 'type' must be torch.dtype, not " + type_name(a[0]));
  return *d;
}

template <class T>
void float_limits(Instance* out, int bits, double resolution) {
  auto set = [&](const char* k, Value v) { out->dict->set(str_value(k), std::move(v)); };
  set("resolution", Value(resolution));
  set("min", Value(double(std::numeric_limits<T>::lowest())));
  set("max", Value(double(std::numeric_limits<T>::max())));
  set("eps", Value(double(std::numeric_limits<T>::epsilon())));
  set("smallest_normal", Value(double(std::numeric_limits<T>::min())));
  set("tiny", Value(double(std::numeric_limits<T>::min())));
  set("bits", Value(int64_t(bits)));
}

}  // namespace

namespace {

// torch.FloatTensor(...) and the other legacy constructors of CPU tensors:
// no argument an empty tensor, sizes an uninitialised one (zeros here), a
// sequence the tensor of that data, a tensor of the same dtype an alias of it.
void legacy_constructors(const Ref<Module>& torch) {
  static const std::pair<const char*, DType> kTypes[] = {
      {"FloatTensor", DType::Float32}, {"DoubleTensor", DType::Float64}, {"HalfTensor", DType::Float16},
      {"BFloat16Tensor", DType::BFloat16}, {"LongTensor", DType::Int64}, {"IntTensor", DType::Int32},
      {"ShortTensor", DType::Int16}, {"CharTensor", DType::Int8}, {"ByteTensor", DType::UInt8},
      {"BoolTensor", DType::Bool}};
  for (const auto& [name, dtype] : kTypes) {
    const std::string type_name = name;
    const DType d = dtype;
    set_attr_builtin(torch->dict, "torch." + type_name, type_name, [type_name, d](VM& vm, const CallArgs& a) -> Value {
      if (a.has_kwargs()) throw_unsupported("torch." + type_name + "() with keyword arguments (use torch.tensor or torch.empty)");
      Value torch_module = Value(vm.module("torch"));
      auto attr = [&](const char* n) {
        Value v;
        vm.try_getattr(torch_module, n, v);
        return v;
      };
      if (a.npos == 1 && a[0].is(ObjKind::Tensor)) {
        if (a[0].as<TensorObj>()->t.dtype() != d)
          throw_type_error("expected " + type_name.substr(0, type_name.size() - 6) + " but got a tensor of dtype " +
                           std::string(dtype_name(a[0].as<TensorObj>()->t.dtype())));
        // A new tensor object sharing the data, as PyTorch's legacy constructor gives.
        Value alias = tensor_value(a[0].as<TensorObj>()->t);
        alias.as<TensorObj>()->device = a[0].as<TensorObj>()->device;
        return alias;
      }
      bool sizes = true;
      for (size_t i = 0; i < a.npos; ++i) sizes = sizes && (a[i].is_int() && !a[i].is_bool());
      if (a.npos == 1 && a[0].is(ObjKind::Tuple) && a[0].as<Tuple>()->is_size) return vm.call(attr("zeros"), ValueVec{a[0]}, {{"dtype", make_dtype(vm, d)}});
      if (sizes) {
        ValueVec dims(a.pos, a.pos + a.npos);
        if (dims.empty()) dims.push_back(Value(int64_t(0)));
        return vm.call(attr("zeros"), ValueVec{tuple_value(std::move(dims))}, {{"dtype", make_dtype(vm, d)}});
      }
      if (a.npos == 1) return vm.call(attr("tensor"), ValueVec{a[0]}, {{"dtype", make_dtype(vm, d)}});
      throw_type_error("torch." + type_name + "(): expected sizes (ints) or one sequence of data");
    });
  }
}

}  // namespace

void install_torch_info(VM& vm, const Ref<Module>& torch) {
  legacy_constructors(torch);
  set_attr_builtin(torch->dict, "torch.finfo", "finfo", [](VM& vm, const CallArgs& a) {
    const DType d = dtype_or_default(a, kDefaultFloat);
    auto out = make<Instance>(info_class(vm, "finfo"));
    switch (d) {
      case DType::Float32: float_limits<float>(out.get(), 32, 1e-6); break;
      case DType::Float64: float_limits<double>(out.get(), 64, 1e-15); break;
      case DType::Float16:
        out->dict->set(str_value("resolution"), Value(0.001));
        out->dict->set(str_value("min"), Value(-65504.0));
        out->dict->set(str_value("max"), Value(65504.0));
        out->dict->set(str_value("eps"), Value(0.0009765625));
        out->dict->set(str_value("smallest_normal"), Value(6.103515625e-05));
        out->dict->set(str_value("tiny"), Value(6.103515625e-05));
        out->dict->set(str_value("bits"), Value(int64_t(16)));
        break;
      case DType::BFloat16:
        out->dict->set(str_value("resolution"), Value(0.01));
        out->dict->set(str_value("min"), Value(-3.3895313892515355e+38));
        out->dict->set(str_value("max"), Value(3.3895313892515355e+38));
        out->dict->set(str_value("eps"), Value(0.0078125));
        out->dict->set(str_value("smallest_normal"), Value(1.1754943508222875e-38));
        out->dict->set(str_value("tiny"), Value(1.1754943508222875e-38));
        out->dict->set(str_value("bits"), Value(int64_t(16)));
        break;
      default: throw_type_error("torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'");
    }
    out->dict->set(str_value("dtype"), str_value(std::string(dtype_name(d))));
    return Value(out);
  });
  set_attr_builtin(torch->dict, "torch.iinfo", "iinfo", [](VM& vm, const CallArgs& a) {
    std::optional<DType> d = a.npos == 1 ? dtype_arg(a[0]) : std::nullopt;
    if (!d || !is_integral(*d, true))
      throw_type_error("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'");
    auto out = make<Instance>(info_class(vm, "iinfo"));
    int64_t lo = 0, hi = 1, bits = 8;
    switch (*d) {
      case DType::Bool: break;
      case DType::UInt8: hi = 255; break;
      case DType::Int8: lo = -128, hi = 127; break;
      case DType::Int16: lo = -32768, hi = 32767, bits = 16; break;
      case DType::Int32: lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max(), bits = 32; break;
      default: lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max(), bits = 64; break;
    }
    out->dict->set(str_value("min"), Value(lo));
    out->dict->set(str_value("max"), Value(hi));
    out->dict->set(str_value("bits"), Value(bits));
    out->dict->set(str_value("dtype"), str_value(std::string(dtype_name(*d))));
    return Value(out);
  });

  // torch.accelerator: CUDA is Kiln's only accelerator.
  Ref<Module> acc = make<Module>("torch.accelerator");
  vm.add_module(acc);
  torch->dict->set(str_value("accelerator"), Value(acc));
  set_attr_builtin(acc->dict, "torch.accelerator.is_available", "is_available", [](VM& vm, const CallArgs&) {
    return vm.call(vm.getattr(Value(vm.module("torch.cuda")), "is_available"), ValueVec{});
  });
  set_attr_builtin(acc->dict, "torch.accelerator.device_count", "device_count", [](VM& vm, const CallArgs&) {
    return vm.call(vm.getattr(Value(vm.module("torch.cuda")), "device_count"), ValueVec{});
  });
  set_attr_builtin(acc->dict, "torch.accelerator.current_accelerator", "current_accelerator", [](VM& vm, const CallArgs& a) {
    const bool available = vm.truth(vm.call(vm.getattr(Value(vm.module("torch.cuda")), "is_available"), ValueVec{}));
    const Value* check = a.kwarg("check_available");
    if (!available && check && vm.truth(*check)) return Value();
    // PyTorch names the build's accelerator even when no device is present;
    // Kiln's build is a CUDA one.
    return Value(make<DeviceObj>("cuda", -1));
  });
  set_attr_builtin(acc->dict, "torch.accelerator.synchronize", "synchronize", [](VM&, const CallArgs&) { return Value(); });

  // Modules programs import for an optional path (an ONNX export behind a flag,
  // a hub download): importing works; calling their functions is refused by name.
  const std::pair<const char*, std::vector<std::pair<const char*, const char*>>> refused_modules[] = {
      {"torch.onnx", {{"export", "torch.onnx.export (it writes a file; Kiln's programs write none)"}}},
      {"torch.jit",
       {{"save", "torch.jit.save (it writes a file)"},
        {"load", "torch.jit.load (it reads a file)"}}},
      {"torch.distributed",
       {{"init_process_group", "torch.distributed.init_process_group (multi-process training is not modelled; Kiln runs one process)"},
        {"destroy_process_group", "torch.distributed.destroy_process_group (multi-process training is not modelled)"},
        {"barrier", "torch.distributed.barrier (multi-process training is not modelled)"},
        {"all_reduce", "torch.distributed.all_reduce (multi-process training is not modelled)"},
        {"all_gather", "torch.distributed.all_gather (multi-process training is not modelled)"},
        {"broadcast", "torch.distributed.broadcast (multi-process training is not modelled)"},
        {"reduce", "torch.distributed.reduce (multi-process training is not modelled)"},
        {"new_group", "torch.distributed.new_group (multi-process training is not modelled)"},
        {"get_rank", "torch.distributed.get_rank (no process group: Kiln runs one process)"},
        {"get_world_size", "torch.distributed.get_world_size (no process group: Kiln runs one process)"}}},
      // symbolic_trace, GraphModule and Tracer are fx_prelude.cpp's.
      {"torch.fx", {}},
      {"torch.hub",
       {{"load", "torch.hub.load (it downloads code and weights)"},
        {"load_state_dict_from_url", "torch.hub.load_state_dict_from_url (it downloads weights)"}}},
      {"torch.multiprocessing",
       {{"spawn", "torch.multiprocessing.spawn (it starts processes; Kiln runs one)"},
        {"Process", "torch.multiprocessing.Process (it starts a process; Kiln runs one)"},
        {"Pool", "torch.multiprocessing.Pool (it starts processes; Kiln runs one)"},
        {"Queue", "torch.multiprocessing.Queue (queues between processes; Kiln runs one)"},
        {"get_context", "torch.multiprocessing.get_context (processes are not modelled; Kiln runs one)"},
        {"set_start_method", "torch.multiprocessing.set_start_method (processes are not modelled; Kiln runs one)"}}},
      {"torch.utils.data.distributed",
       {{"DistributedSampler", "torch.utils.data.distributed.DistributedSampler (multi-process training is not "
                               "modelled; Kiln runs one process)"}}},
  };
  for (const auto& [name, functions] : refused_modules) {
    Ref<Module> m = make<Module>(name);
    vm.add_module(m);
    // torch.utils.data.distributed is reached through torch.utils.data, which
    // its own import makes; the others are attributes of torch itself.
    if (std::string_view(name).find('.', 6) == std::string_view::npos) torch->dict->set(str_value(std::string(name).substr(6)), Value(m));
    for (const auto& [fn, why] : functions) {
      const std::string message = why;
      set_attr_builtin(m->dict, std::string(name) + "." + fn, fn,
                       [message](VM&, const CallArgs&) -> Value { throw_unsupported(message); });
    }
  }
  // Library code asks whether it is being scripted or traced (torchvision's
  // models): it never is. torch.fx.wrap marks a function for fx tracing and
  // returns it, which changes nothing when nothing traces.
  if (Ref<Module> jit = vm.module("torch.jit")) {
    // is_tracing is jit_prelude.cpp's: true while torch.jit.trace records.
    set_attr_builtin(jit->dict, "torch.jit.is_scripting", "is_scripting", [](VM&, const CallArgs&) { return Value(false); });
    set_attr_builtin(jit->dict, "torch.jit.unused", "unused", [](VM&, const CallArgs& a) { return a[0]; });
    set_attr_builtin(jit->dict, "torch.jit.ignore", "ignore", [](VM&, const CallArgs& a) { return a.npos ? a[0] : Value(); });
    // TorchScript overload declarations (torchvision's DenseNet): in eager
    // Python the definition after them is the one that runs.
    for (const char* fn : {"_overload_method", "_overload"})
      set_attr_builtin(jit->dict, std::string("torch.jit.") + fn, fn, [](VM&, const CallArgs& a) { return a.npos ? a[0] : Value(); });
  }
  if (Ref<Module> fx = vm.module("torch.fx")) {
    set_attr_builtin(fx->dict, "torch.fx.wrap", "wrap", [](VM&, const CallArgs& a) {
      if (a.npos != 1) throw_type_error("wrap() takes 1 positional argument but " + std::to_string(a.npos) + " were given");
      return a[0];
    });
  }
  // torch._assert: Python's assert, spelled so that tracers keep it.
  set_attr_builtin(torch->dict, "torch._assert", "_assert", [](VM& vm, const CallArgs& a) {
    if (a.npos != 2) throw_type_error("_assert() takes 2 positional arguments but " + std::to_string(a.npos) + " were given");
    if (!vm.truth(a[0])) throw PyError("AssertionError", vm.str_of(a[1]));
    return Value();
  });
  // A single-process run: the package is there, no process group is.
  if (Ref<Module> dist = vm.module("torch.distributed")) {
    set_attr_builtin(dist->dict, "torch.distributed.is_available", "is_available", [](VM&, const CallArgs&) { return Value(true); });
    set_attr_builtin(dist->dict, "torch.distributed.is_initialized", "is_initialized", [](VM&, const CallArgs&) { return Value(false); });
  }
}

// Tensor.grad_fn: an object named as PyTorch names the node ("AddBackward0");
// its repr carries an object number where PyTorch prints an address.
Value grad_fn_object(VM& vm, const TensorObj& t) {
  if (t.grad_fn.empty()) return Value();
  Ref<Class> cls = vm.builtin_type(t.grad_fn);
  if (!cls || cls->module != "torch.autograd.graph") {
    cls = make<Class>(t.grad_fn, Ref<Class>());
    cls->qualname = t.grad_fn;
    cls->module = "torch.autograd.graph";
    const std::string name = t.grad_fn;
    set_attr_builtin(cls->dict, name + ".name", "name", [name](VM&, const CallArgs&) { return str_value(name); });
    set_attr_builtin(cls->dict, name + ".__repr__", "__repr__", [name](VM&, const CallArgs& a) {
      return str_value("<" + name + " object at " + object_address(*a[0].obj()) + ">");
    });
    vm.register_type(cls);
  }
  return Value(make<Instance>(cls));
}

}  // namespace kiln::py
