// The module tree a program imports: torch (its callables, dtypes, Tensor,
// Size, device, grad mode, RNG seeding, torch.compile), torch.nn (from the
// prelude), torch.nn.functional, torch._dynamo, torch.cuda and safetensors.
// The math module lives in torch_math.cpp.
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "core/io/safetensors.h"
#include "core/python/numpy_bridge.h"
#include "core/python/torch_api.h"
#include "core/python/torch_convert.h"
#include "core/tensor/tensor_repr.h"
#include "core/python/vm.h"
#include "core/tensor/generator.h"

namespace kiln::py {

void install_math(VM& vm);
void install_serialization(const Ref<Module>& torch);  // torch_serialization.cpp
void install_runtime_prelude(VM& vm);                 // runtime_prelude.cpp

static std::vector<std::unique_ptr<CpuGenerator>>& generators(VM& vm) {
  auto& slot = vm.extensions["kiln.generators"];
  if (!slot) slot = std::make_shared<std::vector<std::unique_ptr<CpuGenerator>>>();
  return *static_cast<std::vector<std::unique_ptr<CpuGenerator>>*>(slot.get());
}

static CpuGenerator& generator_at(VM& vm, const Value& handle) {
  auto& list = generators(vm);
  int64_t i = to_index(handle, "generator");
  if (i < 0 || size_t(i) >= list.size()) throw PyError("RuntimeError", "invalid torch.Generator handle");
  return *list[size_t(i)];
}

CpuGenerator* explicit_generator(VM& vm, const Value& v) {
  if (!v.is(ObjKind::Instance)) return nullptr;
  const Instance* inst = v.as<Instance>();
  if (inst->cls->name != "Generator" || inst->cls->module != "torch._C") return nullptr;
  const Value* handle = inst->dict->find_str("_handle");
  if (!handle) throw PyError("RuntimeError", "torch.Generator used before its __init__ ran");
  return &generator_at(vm, *handle);
}

namespace {

// torch.get_rng_state(): a uint8 tensor of ATen's state layout.
Value rng_state_tensor(const CpuGenerator& g) {
  const auto bytes = g.state_bytes();
  Tensor t = Tensor::empty({int64_t(bytes.size())}, DType::UInt8);
  std::copy(bytes.begin(), bytes.end(), t.data<uint8_t>());
  return tensor_value(t);
}

// torch.set_rng_state(state), with ATen's checks (check_rng_state, the size, mt19937::is_valid).
void set_rng_state_from(CpuGenerator& g, const Value& state) {
  const TensorObj* obj = tensor_obj(state);
  if (!obj) throw_type_error("expected a torch.ByteTensor, but got " + type_name(state));
  const Tensor& t = obj->t;
  if (t.dtype() != DType::UInt8 || obj->device != "cpu")
    throw PyError("TypeError", std::string("expected a torch.ByteTensor, but got ") +
                                   (obj->device == "cpu" ? torchapi::legacy_type_name(t.dtype()) : "a CUDA tensor"));
  if (t.numel() != int64_t(CpuGenerator::kStateBytes))
    throw PyError("RuntimeError", "Expected a CPUGeneratorImplState of size " + std::to_string(CpuGenerator::kStateBytes) +
                                      " but found the input RNG state size to be " + std::to_string(t.numel()));
  std::array<uint8_t, CpuGenerator::kStateBytes> bytes;
  Tensor c = t.contiguous();
  std::copy(c.data<uint8_t>(), c.data<uint8_t>() + bytes.size(), bytes.begin());
  if (!g.set_state_bytes(bytes)) throw PyError("RuntimeError", "Invalid mt19937 state");
}

const BuiltinFn* hook(VM& vm, const std::string& name);

// torch.cond(pred, true_fn, false_fn, operands=()): the branch pred picks,
// called with the operands, after PyTorch's checks of the arguments. Under
// capture a tensor predicate goes to capture's "torch.cond.traced" hook, which
// traces both branches into one higher-order node as Dynamo does; a Python
// predicate picks its branch at trace time (Dynamo specializes on it too).
Value torch_cond(VM& vm, const CallArgs& a) {
  static const char* const names[] = {"pred", "true_fn", "false_fn", "operands"};
  Value args[4] = {Value(), Value(), Value(), tuple_value({})};
  bool given[4] = {false, false, false, false};
  if (a.npos > 4) throw_type_error("cond() takes from 3 to 4 positional arguments but " + std::to_string(a.npos) + " were given");
  for (size_t i = 0; i < a.npos; ++i) args[i] = a[i], given[i] = true;
  if (a.kw)
    for (const auto& [k, v] : *a.kw) {
      size_t i = 0;
      while (i < 4 && k != names[i]) ++i;
      if (i == 4) throw_type_error("cond() got an unexpected keyword argument '" + k + "'");
      args[i] = v;
      given[i] = true;
    }
  for (size_t i = 0; i < 3; ++i)
    if (!given[i]) throw_type_error(std::string("cond() missing required argument: '") + names[i] + "'");
  if (!is_callable(args[1]) || !is_callable(args[2])) throw PyError("RuntimeError", "Expect both branches to be callable.");
  if (!args[3].is(ObjKind::Tuple) && !args[3].is(ObjKind::List))
    throw PyError("RuntimeError", "Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of "
                                  "tensor leaves, but got " + vm.repr_of(args[3]) + ".");
  ValueVec operands = vm.to_vector(args[3]);
  for (const Value& o : operands)
    if (!o.is(ObjKind::Tensor))
      throw PyError("RuntimeError", "Expect operands to be a tuple of possibly nested dict/list/tuple that only "
                                    "consists of tensor leaves, but got " + vm.repr_of(args[3]) + ".");
  const Value& pred = args[0];
  if (pred.is(ObjKind::Tensor) && pred.as<TensorObj>()->t.numel() != 1)
    throw PyError("RuntimeError", "Expected pred to be bool or single-element tensor, but got " + vm.repr_of(pred) + ".");
  if (vm.tracer && pred.is(ObjKind::Tensor)) {
    const BuiltinFn* traced = hook(vm, "torch.cond.traced");
    if (!traced) {
      BreakInfo info;
      info.reason = "Unsupported call: torch.cond";
      info.explanation = "  Explanation: this tracer does not trace torch.cond's branches; the call runs eagerly.\n";
      vm.tracer->graph_break(vm, info);
    }
    ValueVec hook_args{pred, args[1], args[2], tuple_value(operands)};
    return (*traced)(vm, CallArgs{hook_args.data(), hook_args.size(), nullptr});
  }
  return vm.call(vm.truth(pred) ? args[1] : args[2], operands);
}

Ref<Module> new_module(VM& vm, const std::string& name) {
  auto m = make<Module>(name);
  vm.add_module(m);
  return m;
}

void def(const Ref<Module>& m, const std::string& name, BuiltinFn fn) {
  set_attr_builtin(m->dict, m->name + "." + name, name, std::move(fn));
}

void add_callables(const Ref<Module>& m, std::string_view module) {
  for (const torchapi::Callable* c : torchapi::callables_of(module)) {
    Value fn = make_builtin(c->python_name, [c](VM& vm, const CallArgs& a) { return call_torch(vm, *c, a); });
    fn.as<Builtin>()->tag = c;
    m->dict->set(str_value(c->name), fn);
  }
}

// A hook capture registered in vm.extensions under the callable's dotted name.
const BuiltinFn* hook(VM& vm, const std::string& name) {
  auto it = vm.extensions.find(name);
  return it == vm.extensions.end() || !it->second ? nullptr : static_cast<const BuiltinFn*>(it->second.get());
}

// A builtin that defers to capture's hook when there is one.
void def_hooked(const Ref<Module>& m, const std::string& name, BuiltinFn fallback) {
  std::string qualified = m->name + "." + name;
  def(m, name, [qualified, fallback](VM& vm, const CallArgs& a) {
    if (const BuiltinFn* h = hook(vm, qualified)) return (*h)(vm, a);
    return fallback(vm, a);
  });
}

Ref<Class> new_class(VM& vm, const std::string& name, const std::string& module, Ref<Class> base = {}) {
  auto cls = make<Class>(name, std::move(base));
  cls->module = module;
  cls->builtin = 1;
  vm.register_type(cls);
  return cls;
}

// ---- grad mode ----

// Dynamo puts torch._C._set_grad_enabled(mode) nodes into graphs; capture's
// replay runs only torch callables and methods, so the mode is switched here
// and capture guards on it instead.
void set_grad_mode(VM& vm, bool enabled) { vm.grad_enabled = enabled; }

void install_grad_mode(VM& vm, const Ref<Module>& torch, const Ref<Module>& c_module) {
  auto no_grad = new_class(vm, "no_grad", "torch.autograd.grad_mode");
  set_attr_builtin(no_grad->dict, "no_grad", "__new__", [](VM&, const CallArgs&) { return Value(make<NoGradObj>(false)); });
  set_attr_builtin(no_grad->dict, "no_grad.__enter__", "__enter__", [](VM& vm, const CallArgs& a) {
    auto* ng = a[0].as<NoGradObj>();
    ng->saved = vm.grad_enabled;
    set_grad_mode(vm, ng->enable_grad);
    return Value();
  });
  set_attr_builtin(no_grad->dict, "no_grad.__exit__", "__exit__", [](VM& vm, const CallArgs& a) {
    set_grad_mode(vm, a[0].as<NoGradObj>()->saved);
    return Value(false);
  });
  // @torch.no_grad() / @torch.enable_grad(): the decorated function runs in that grad mode.
  set_attr_builtin(no_grad->dict, "no_grad.__call__", "__call__", [](VM&, const CallArgs& a) {
    if (a.npos != 2) throw_type_error("no_grad.__call__() takes 1 positional argument");
    bool enable = a[0].as<NoGradObj>()->enable_grad;
    Value fn = a[1];
    return make_builtin("decorate_context", [enable, fn](VM& vm, const CallArgs& b) {
      bool saved = vm.grad_enabled;
      set_grad_mode(vm, enable);
      Value r;
      try {
        r = vm.call(fn, b);
      } catch (...) {
        vm.grad_enabled = saved;
        throw;
      }
      set_grad_mode(vm, saved);
      return r;
    });
  });
  torch->dict->set(str_value("no_grad"), Value(no_grad));
  def(torch, "enable_grad", [](VM&, const CallArgs&) { return Value(make<NoGradObj>(true)); });
  def(torch, "inference_mode", [](VM& vm, const CallArgs& a) {
    bool mode = a.npos > 0 ? vm.truth(a[0]) : true;
    return Value(make<NoGradObj>(!mode));
  });
  def(torch, "is_grad_enabled", [](VM& vm, const CallArgs&) { return Value(vm.grad_enabled); });
  // torch.set_grad_enabled(mode): switches the mode at once, as a call or as
  // a context manager (`with torch.set_grad_enabled(phase == "train"):`), whose
  // exit restores the mode from before the call.
  auto set_grad_enabled = new_class(vm, "set_grad_enabled", "torch.autograd.grad_mode");
  set_attr_builtin(set_grad_enabled->dict, "set_grad_enabled", "__new__", [](VM& vm, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("set_grad_enabled.__init__() takes 1 argument");
    auto self = make<Instance>(vm.builtin_type("set_grad_enabled"));
    self->dict->set(str_value("prev"), Value(vm.grad_enabled));
    set_grad_mode(vm, vm.truth(a[0]));
    return Value(self);
  });
  set_attr_builtin(set_grad_enabled->dict, "set_grad_enabled.__enter__", "__enter__",
                   [](VM&, const CallArgs&) { return Value(); });
  set_attr_builtin(set_grad_enabled->dict, "set_grad_enabled.__exit__", "__exit__", [](VM& vm, const CallArgs& a) {
    if (const Value* prev = a[0].as<Instance>()->dict->find_str("prev")) set_grad_mode(vm, vm.truth(*prev));
    return Value(false);
  });
  torch->dict->set(str_value("set_grad_enabled"), Value(set_grad_enabled));
  def(c_module, "_set_grad_enabled", [](VM& vm, const CallArgs& a) {
    if (a.npos != 1 || !a[0].is_bool()) throw_type_error("_set_grad_enabled(): argument 'mode' must be bool");
    set_grad_mode(vm, a[0].as_bool());
    return Value();
  });
}

// ---- autocast state ----

// The state switches torch.autocast (amp_prelude.cpp) turns; the casts are
// torchapi's (torch_api_autocast.cpp). Capture records the state each op ran
// under, as it does grad mode.
void install_autocast_state(const Ref<Module>& torch) {
  using torchapi::autocast_state;
  // Which device type's state a call names: "cpu" or "cuda"; others are not Kiln's.
  auto device_of = [](VM& vm, const Value& v) -> bool {
    std::string d = v.is(ObjKind::Str) ? as_str(v) : vm.str_of(v);
    if (d == "cuda") return true;
    if (d == "cpu") return false;
    throw_unsupported("autocast for device_type '" + d + "' (Kiln has autocast for 'cpu' and 'cuda')");
  };
  def(torch, "is_autocast_enabled", [device_of](VM& vm, const CallArgs& a) {
    const Value* d = a.npos ? &a[0] : a.kwarg("device_type");
    // Without a device type PyTorch answers for CUDA.
    bool cuda = d ? device_of(vm, *d) : true;
    return Value(cuda ? autocast_state().cuda_enabled : autocast_state().cpu_enabled);
  });
  def(torch, "set_autocast_enabled", [device_of](VM& vm, const CallArgs& a) {
    if (a.npos == 1) {
      autocast_state().cuda_enabled = vm.truth(a[0]);
    } else if (a.npos == 2) {
      (device_of(vm, a[0]) ? autocast_state().cuda_enabled : autocast_state().cpu_enabled) = vm.truth(a[1]);
    } else {
      throw_type_error("set_autocast_enabled() takes (device_type, enabled)");
    }
    return Value();
  });
  def(torch, "get_autocast_dtype", [device_of](VM& vm, const CallArgs& a) {
    const Value* d = a.npos ? &a[0] : a.kwarg("device_type");
    if (!d) throw_type_error("get_autocast_dtype() missing required argument 'device_type'");
    return make_dtype(vm, device_of(vm, *d) ? autocast_state().cuda_dtype : autocast_state().cpu_dtype);
  });
  def(torch, "set_autocast_dtype", [device_of](VM& vm, const CallArgs& a) {
    if (a.npos != 2 || !a[1].is(ObjKind::DType)) throw_type_error("set_autocast_dtype() takes (device_type, dtype)");
    (device_of(vm, a[0]) ? autocast_state().cuda_dtype : autocast_state().cpu_dtype) = a[1].as<DTypeObj>()->dtype;
    return Value();
  });
  def(torch, "is_autocast_cpu_enabled", [](VM&, const CallArgs&) { return Value(autocast_state().cpu_enabled); });
  def(torch, "set_autocast_cpu_enabled", [](VM& vm, const CallArgs& a) {
    autocast_state().cpu_enabled = a.npos && vm.truth(a[0]);
    return Value();
  });
  def(torch, "get_autocast_cpu_dtype", [](VM& vm, const CallArgs&) { return make_dtype(vm, autocast_state().cpu_dtype); });
  def(torch, "get_autocast_gpu_dtype", [](VM& vm, const CallArgs&) { return make_dtype(vm, autocast_state().cuda_dtype); });
  def(torch, "set_autocast_cpu_dtype", [](VM&, const CallArgs& a) {
    if (a.npos != 1 || !a[0].is(ObjKind::DType)) throw_type_error("set_autocast_cpu_dtype() takes a dtype");
    autocast_state().cpu_dtype = a[0].as<DTypeObj>()->dtype;
    return Value();
  });
  def(torch, "set_autocast_gpu_dtype", [](VM&, const CallArgs& a) {
    if (a.npos != 1 || !a[0].is(ObjKind::DType)) throw_type_error("set_autocast_gpu_dtype() takes a dtype");
    autocast_state().cuda_dtype = a[0].as<DTypeObj>()->dtype;
    return Value();
  });
  def(torch, "is_autocast_cache_enabled", [](VM&, const CallArgs&) { return Value(autocast_state().cache_enabled); });
  def(torch, "set_autocast_cache_enabled", [](VM& vm, const CallArgs& a) {
    autocast_state().cache_enabled = a.npos && vm.truth(a[0]);
    return Value();
  });
  def(torch, "autocast_increment_nesting", [](VM&, const CallArgs&) { return Value(int64_t(++autocast_state().nesting)); });
  def(torch, "autocast_decrement_nesting", [](VM&, const CallArgs&) { return Value(int64_t(--autocast_state().nesting)); });
  // Kiln keeps no cast cache (each cast is made anew, with the same numbers).
  def(torch, "clear_autocast_cache", [](VM&, const CallArgs&) { return Value(); });
}

// ---- dtype, device, Size ----

void install_value_types(VM& vm, const Ref<Module>& torch) {
  static const std::pair<const char*, DType> names[] = {
      {"float32", DType::Float32}, {"float", DType::Float32},    {"float64", DType::Float64},
      {"double", DType::Float64},  {"float16", DType::Float16},  {"half", DType::Float16},
      {"bfloat16", DType::BFloat16}, {"int64", DType::Int64},    {"long", DType::Int64},
      {"int32", DType::Int32},     {"int", DType::Int32},        {"int16", DType::Int16},
      {"short", DType::Int16},     {"int8", DType::Int8},        {"uint8", DType::UInt8},
      {"bool", DType::Bool}};
  for (const auto& [name, d] : names) torch->dict->set(str_value(name), make_dtype(vm, d));

  auto dtype = new_class(vm, "dtype", "torch");
  auto prop = [&](const char* name, std::function<Value(DType)> f) {
    dtype->dict->set(str_value(name), make_builtin(std::string("@") + name, [f](VM&, const CallArgs& a) {
      return f(a[0].as<DTypeObj>()->dtype);
    }));
  };
  prop("is_floating_point", [](DType d) { return Value(is_floating(d)); });
  prop("is_complex", [](DType) { return Value(false); });
  prop("is_signed", [](DType d) { return Value(d != DType::Bool && d != DType::UInt8); });
  prop("itemsize", [](DType d) { return Value(int64_t(element_size(d))); });
  torch->dict->set(str_value("dtype"), Value(dtype));

  auto device = new_class(vm, "device", "torch");
  set_attr_builtin(device->dict, "device", "__new__", [](VM&, const CallArgs& a) {
    if (a.npos < 1 || a.npos > 2) throw_type_error("device() takes 1 or 2 arguments");
    if (a[0].is(ObjKind::Device)) return a[0];
    if (a[0].is_int()) return Value(make<DeviceObj>("cuda", int(a[0].as_int())));
    std::string s = as_str(a[0]);
    std::string type = s.substr(0, s.find(':'));
    int index = -1;
    if (s.find(':') != std::string::npos) {
      std::string digits = s.substr(s.find(':') + 1);
      if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit))
        throw PyError("RuntimeError", "Invalid device string: '" + s + "'");
      index = std::stoi(digits);
    }
    if (a.npos == 2 && !a[1].is_none()) index = int(to_index(a[1], "index"));
    static const char* const known[] = {"cpu", "cuda", "meta", "mps", "xpu", "xla", "hip", "mtia"};
    if (std::none_of(std::begin(known), std::end(known), [&](const char* k) { return type == k; }))
      throw PyError("RuntimeError", "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, "
                                    "maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start "
                                    "of device string: " + s);
    return Value(make<DeviceObj>(type, index));
  });
  // `with torch.device(d):` makes d the default device of the tensor
  // constructors (torch.empty, zeros, randn, tensor, ...) that are not given
  // one, as PyTorch's DeviceContext mode: nn layers built inside get their
  // parameters there (gpt-fast builds its model on "meta", then loads it).
  set_attr_builtin(device->dict, "device.__enter__", "__enter__", [](VM& vm, const CallArgs& a) {
    if (a.npos != 1 || !a[0].is(ObjKind::Device)) throw_type_error("device.__enter__() takes a device");
    push_default_device(vm, a[0]);
    return a[0];
  });
  set_attr_builtin(device->dict, "device.__exit__", "__exit__", [](VM& vm, const CallArgs&) {
    pop_default_device(vm);
    return Value(false);
  });
  torch->dict->set(str_value("device"), Value(device));
  set_attr_builtin(torch->dict, "torch.set_default_device", "set_default_device", [](VM& vm, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("set_default_device() takes exactly one argument");
    Value d = a[0];
    if (!d.is_none() && !d.is(ObjKind::Device))
      if (const Value* cls = vm.module("torch")->dict->find_str("device")) d = vm.call(*cls, ValueVec{d});
    set_default_device(vm, d);
    return Value();
  });
  set_attr_builtin(torch->dict, "torch.get_default_device", "get_default_device", [](VM& vm, const CallArgs&) -> Value {
    if (const Value* d = default_device(vm)) return *d;
    return Value(make<DeviceObj>("cpu", -1));
  });

  auto size = new_class(vm, "Size", "torch", vm.builtin_type("tuple"));
  set_attr_builtin(size->dict, "Size", "__new__", [](VM& vm, const CallArgs& a) {
    Shape s;
    if (a.npos > 0)
      for (const Value& v : vm.to_vector(a[0])) s.push_back(to_index(v, "torch.Size() element"));
    return make_size(s);
  });
  set_attr_builtin(size->dict, "Size.numel", "numel", [](VM&, const CallArgs& a) {
    int64_t n = 1;
    for (const Value& v : a[0].as<Tuple>()->items) n *= v.as_int();
    return Value(n);
  });
  torch->dict->set(str_value("Size"), Value(size));
}

// ---- torch.compile and torch._dynamo without capture ----

Value compile_fallback(VM& vm, const CallArgs& a) {
  if (a.npos > 1) throw_type_error("compile() takes from 0 to 1 positional arguments but " + std::to_string(a.npos) + " were given");
  const Value* mode = a.kwarg("mode");
  const Value* options = a.kwarg("options");
  if (mode && !mode->is_none() && options && !options->is_none())
    throw PyError("RuntimeError", "Either mode or options can be specified, but both can't be specified at the same time.");
  if (mode && !mode->is_none()) {
    static const char* const modes[] = {"default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune"};
    std::string m = vm.str_of(*mode);
    if (std::none_of(std::begin(modes), std::end(modes), [&](const char* k) { return m == k; }))
      throw PyError("RuntimeError", "Unrecognized mode=" + m +
                                        ", should be one of: default, lite, reduce-overhead, max-autotune-no-cudagraphs, max-autotune");
  }
  if (const Value* backend = a.kwarg("backend"); backend && backend->is(ObjKind::Str)) {
    static const char* const backends[] = {"inductor", "eager", "aot_eager", "aot_eager_decomp_partition", "cudagraphs",
                                           "onnxrt", "openxla", "tvm"};
    const std::string& b = backend->as<Str>()->s;
    if (std::none_of(std::begin(backends), std::end(backends), [&](const char* k) { return b == k; }))
      throw PyError("torch._dynamo.exc.InvalidBackend",
                    "Invalid backend: '" + b + "', see `torch._dynamo.list_backends()` for available backends.");
  }
  if (a.npos == 0 || a[0].is_none()) {
    // torch.compile(fullgraph=True)(fn): the options were checked; the decorator returns fn.
    return make_builtin("torch.compile.<locals>.fn", [](VM& vm, const CallArgs& b) -> Value {
      if (b.npos != 1) throw_type_error("fn() takes 1 positional argument");
      if (b[0].is_none()) throw PyError("RuntimeError", "Model can't be None");
      return compile_fallback(vm, b);
    });
  }
  if (!vm.truth(vm.call(*vm.builtins()->find_str("callable"), ValueVec{a[0]})))
    throw PyError("AssertionError", "A callable function is expected, but <class '" + type_name(a[0]) + "'> is provided.");
  return a[0];
}

void install_dynamo(VM& vm, const Ref<Module>& torch) {
  def_hooked(torch, "compile", compile_fallback);
  auto dynamo = new_module(vm, "torch._dynamo");
  def_hooked(dynamo, "reset", [](VM&, const CallArgs&) { return Value(); });
  def_hooked(dynamo, "list_backends", [](VM&, const CallArgs&) {
    return list_value({str_value("cudagraphs"), str_value("inductor"), str_value("openxla"), str_value("tvm")});
  });
  // Without capture nothing is compiled: disable hands its function back.
  auto disable_fallback = [](VM&, const CallArgs& a) -> Value {
    if (a.npos >= 1 && !a[0].is_none()) return a[0];
    return make_builtin("torch.compiler.disable.<decorator>", [](VM&, const CallArgs& b) -> Value { return b[0]; });
  };
  def_hooked(dynamo, "disable", disable_fallback);
  auto compiler = new_module(vm, "torch.compiler");
  torch->dict->set(str_value("compiler"), Value(compiler));
  compiler->dict->set(str_value("disable"), *dynamo->dict->find_str("disable"));
  compiler->dict->set(str_value("reset"), *dynamo->dict->find_str("reset"));
  set_attr_builtin(compiler->dict, "torch.compiler.is_compiling", "is_compiling",
                   [](VM& vm, const CallArgs&) { return Value(vm.tracer != nullptr); });
  set_attr_builtin(compiler->dict, "torch.compiler.is_dynamo_compiling", "is_dynamo_compiling",
                   [](VM& vm, const CallArgs&) { return Value(vm.tracer != nullptr); });
  def_hooked(dynamo, "explain", [](VM&, const CallArgs&) -> Value {
    throw_unsupported("torch._dynamo.explain needs Kiln's capture, which is not installed in this interpreter");
  });
  def_hooked(dynamo, "graph_break", [](VM& vm, const CallArgs&) {
    if (vm.tracer) {
      BreakInfo info;
      info.kind = BreakKind::Explicit;
      info.reason = "Call to `torch._dynamo.graph_break()`";
      info.explanation =
          "  Explanation: User-inserted graph break. Message: None\n"
          "  Hint: Remove the `torch._dynamo.graph_break()` call.\n\n"
          "  Developer debug context: Called `torch._dynamo.graph_break()` with args `[]`, kwargs `{}`\n";
      vm.tracer->graph_break(vm, info);
    }
    return Value();
  });
  // Settings programs assign (torch._dynamo.config.capture_scalar_outputs = True); capture reads them.
  auto config = new_module(vm, "torch._dynamo.config");
  config->dict->set(str_value("capture_scalar_outputs"), Value(false));
  config->dict->set(str_value("capture_dynamic_output_shape_ops"), Value(false));
  config->dict->set(str_value("cache_size_limit"), Value(int64_t(8)));
  config->dict->set(str_value("recompile_limit"), Value(int64_t(8)));
  config->dict->set(str_value("verbose"), Value(false));
  config->dict->set(str_value("suppress_errors"), Value(false));
  // Functions Dynamo calls after the graph instead of breaking it (print):
  // empty, as in PyTorch; capture defers calls of what a program adds.
  if (Ref<Class> set_cls = vm.builtin_type("set"))
    config->dict->set(str_value("reorderable_logging_functions"), vm.call(Value(set_cls), ValueVec{}));
  def(torch, "cond", torch_cond);
}

// ---- safetensors ----

void install_safetensors(VM& vm) {
  new_module(vm, "safetensors");
  auto st = new_module(vm, "safetensors.torch");
  def(st, "load_file", [](VM& vm, const CallArgs& a) {
    const Value* path = a.npos > 0 ? &a[0] : a.kwarg("filename");
    if (!path) throw_type_error("load_file() missing 1 required positional argument: 'filename'");
    const Value* device = a.npos > 1 ? &a[1] : a.kwarg("device");
    if (device && vm.str_of(*device) != "cpu") throw_unsupported("safetensors load_file(device=" + vm.repr_of(*device) + "): Kiln tensors live on the CPU");
    Expected<SafetensorsFile> f = read_safetensors(program_file_path(vm, as_str(*path), false));
    if (!f.ok()) throw PyError("SafetensorError", f.status().to_string());
    NamedTensors tensors = f.value().tensors;
    // safe_open.keys() lists names sorted, so load_file's dict is in name order.
    std::sort(tensors.begin(), tensors.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    auto d = make<Dict>();
    for (auto& [name, t] : tensors) d->set(str_value(name), tensor_value(t));
    return Value(d);
  });
  def(st, "save_file", [](VM& vm, const CallArgs& a) {
    const Value* tensors = a.npos > 0 ? &a[0] : a.kwarg("tensors");
    const Value* path = a.npos > 1 ? &a[1] : a.kwarg("filename");
    if (!tensors || !path) throw_type_error("save_file() missing required arguments: 'tensors' and 'filename'");
    if (!tensors->is(ObjKind::Dict)) throw_type_error("save_file(): tensors must be a dict, not " + type_name(*tensors));
    NamedTensors named;
    tensors->as<Dict>()->for_each([&](const Value& k, const Value& v) {
      const std::string& name = as_str(k);
      const Tensor& t = tensor_of(v, "save_file");
      if (!t.is_contiguous())
        throw PyError("ValueError", "You are trying to save a non contiguous tensor: `" + name +
                                        "` which is not allowed. It either means you are trying to save tensors which "
                                        "are reference of each other in which case it's recommended to save only the "
                                        "full tensors, and reslice at load time, or simply call `.contiguous()` on your "
                                        "tensor to pack it before saving.");
      named.emplace_back(name, t);
    });
    std::map<std::string, std::string> metadata;
    const Value* meta = a.npos > 2 ? &a[2] : a.kwarg("metadata");
    if (meta && meta->is(ObjKind::Dict))
      meta->as<Dict>()->for_each([&](const Value& k, const Value& v) { metadata[as_str(k)] = as_str(v); });
    Status s = write_safetensors(program_file_path(vm, as_str(*path), true), named, metadata);
    if (!s.ok()) throw PyError("SafetensorError", s.to_string());
    return Value();
  });
}


// Helpers the nn prelude needs and the subset lacks (it has no `raise` and no __dict__).
// What a prelude's printer shows beside the values of the tensor it prints
// (a complex tensor's pair, a sparse one's values); `node`, when not None,
// is the name PyTorch's op gives the result's node.
TensorReprExtras prelude_repr_extras(const TensorObj& t, const Value& node) {
  TensorReprExtras extras;
  extras.requires_grad = t.requires_grad && t.grad_fn.empty();
  extras.grad_fn = t.grad_fn.empty() || node.is_none() ? t.grad_fn : as_str(node);
  if (t.device != "cpu") extras.device = t.device;
  return extras;
}

void install_prelude_helpers(VM& vm) {
  auto k = new_module(vm, "torch._kiln");
  def(k, "raise_error", [](VM&, const CallArgs& a) -> Value { throw PyError(as_str(a[0]), as_str(a[1])); });
  // What the preludes cannot do exactly: NotImplementedError, exit code 3.
  def(k, "raise_unsupported", [](VM&, const CallArgs& a) -> Value { throw_unsupported(as_str(a[0])); });
  def(k, "instance_dict", [](VM&, const CallArgs& a) -> Value {
    if (!a[0].is(ObjKind::Instance)) throw_type_error("instance_dict() expects an instance");
    return Value(a[0].as<Instance>()->dict);
  });
  // state_dict's _metadata (each module's version), which PyTorch keeps as an
  // attribute of the OrderedDict and the subset's dict cannot carry: kept
  // beside the dict for as long as the program holds it.
  // state_dict_metadata(d) -> the metadata or None; state_dict_metadata(d, m) sets it.
  def(k, "state_dict_metadata", [](VM& vm, const CallArgs& a) -> Value {
    using Table = std::vector<std::pair<Value, Value>>;
    auto& slot = vm.extensions["kiln.state_dict_metadata"];
    if (!slot) slot = std::make_shared<Table>();
    Table& table = *static_cast<Table*>(slot.get());
    if (!a[0].is_obj()) return Value();
    if (a.npos < 2) {
      for (const auto& [d, m] : table)
        if (d.obj() == a[0].obj()) return m;
      return Value();
    }
    // Dicts only this table still holds are gone for the program.
    std::erase_if(table, [&](const auto& e) { return e.first.obj()->refs == 1 || e.first.obj() == a[0].obj(); });
    table.emplace_back(a[0], a[1]);
    return Value();
  });
  // An instance of a user class made without running __init__: the nn prelude's
  // deep copy of a module (the subset has no copy module and no object.__new__).
  def(k, "new_instance", [](VM&, const CallArgs& a) -> Value {
    if (!a[0].is(ObjKind::Class) || a[0].as<Class>()->builtin >= 0)
      throw_type_error("new_instance() expects a user-defined class");
    return Value(make<Instance>(Ref<Class>(a[0].as<Class>())));
  });
  // True while capture traces the calling frame (torch.compiler.is_compiling() in PyTorch).
  def(k, "is_compiling", [](VM& vm, const CallArgs&) { return Value(vm.tracer != nullptr); });
  // torch.Generator objects: a handle into this VM's list of CPU generators,
  // which torch's random functions take as generator= (explicit_generator).
  def(k, "generator_new", [](VM& vm, const CallArgs&) {
    auto& list = generators(vm);
    list.push_back(std::make_unique<CpuGenerator>());
    return Value(int64_t(list.size() - 1));
  });
  def(k, "generator_manual_seed", [](VM& vm, const CallArgs& a) {
    generator_at(vm, a[0]).manual_seed(uint64_t(to_index(a[1], "seed")));
    return Value();
  });
  def(k, "generator_initial_seed", [](VM& vm, const CallArgs& a) {
    return Value(int64_t(generator_at(vm, a[0]).initial_seed()));
  });
  def(k, "generator_get_state", [](VM& vm, const CallArgs& a) { return rng_state_tensor(generator_at(vm, a[0])); });
  def(k, "generator_set_state", [](VM& vm, const CallArgs& a) {
    set_rng_state_from(generator_at(vm, a[0]), a[1]);
    return Value();
  });
  // warnings.warn(message, category) as Python shows it, without the source
  // location PyTorch's own file would give.
  def(k, "warn", [](VM& vm, const CallArgs& a) {
    vm.write_err(as_str(a[0]) + ": " + as_str(a[1]) + "\n");
    return Value();
  });
  // repr of a complex tensor (complex_prelude.cpp) from its view_as_real pair.
  def(k, "complex_repr", [](VM&, const CallArgs& a) {
    const TensorObj* t = a.npos == 2 ? tensor_obj(a[0]) : nullptr;
    if (!t) throw_type_error("complex_repr() takes the pair tensor and the name of its node");
    TensorReprExtras extras = prelude_repr_extras(*t, a[1]);
    extras.complex_pair = true;
    return str_value(tensor_repr(t->t, extras));
  });
  // repr of a sparse COO tensor (sparse_prelude.cpp): indices, values, size, node name.
  def(k, "sparse_repr", [](VM& vm, const CallArgs& a) {
    const TensorObj* indices = a.npos == 4 ? tensor_obj(a[0]) : nullptr;
    const TensorObj* values = a.npos == 4 ? tensor_obj(a[1]) : nullptr;
    if (!indices || !values) throw_type_error("sparse_repr() takes indices, values, size and the node's name");
    Shape sizes;
    for (const Value& v : vm.to_vector(a[2])) sizes.push_back(to_index(v, "size"));
    return str_value(sparse_coo_repr(indices->t, values->t, sizes, prelude_repr_extras(*values, a[3])));
  });
  // Kiln's Python that builds an op from others (a sparse product from index_add)
  // names its result's node as PyTorch's op does.
  // x.unsqueeze_(0) and the other in-place view methods: x becomes the view
  // (its values, shape and gradient history), as PyTorch changes x's metadata.
  def(k, "become", [](VM& vm, const CallArgs& a) {
    TensorObj* dst = a.npos == 2 ? tensor_obj(a[0]) : nullptr;
    const TensorObj* src = a.npos == 2 ? tensor_obj(a[1]) : nullptr;
    if (!dst || !src) throw_type_error("become() takes two tensors");
    if (vm.tracer) throw_unsupported("in-place view methods (Tensor.unsqueeze_, t_, ...) inside a compiled function");
    check_inplace_allowed(vm, a[0]);
    dst->t = src->t;
    dst->grad_node = src->grad_node;
    dst->output_nr = src->output_nr;
    dst->grad_fn = src->grad_fn;
    dst->requires_grad = src->requires_grad;
    dst->view_base = src->view_base;
    dst->history_seen = src->history_seen;
    return a[0];
  });
  def(k, "name_grad_fn", [](VM&, const CallArgs& a) {
    TensorObj* t = a.npos == 2 ? tensor_obj(a[0]) : nullptr;
    if (!t) throw_type_error("name_grad_fn() takes a tensor and a name");
    if (!t->grad_fn.empty()) t->grad_fn = as_str(a[1]);
    return a[0];
  });
  // Identity as a dict key: memo tables of modules and parameters (the subset has no set or id()).
  def(k, "identity", [](VM&, const CallArgs& a) {
    return Value(int64_t(reinterpret_cast<intptr_t>(a[0].is_obj() ? a[0].obj() : nullptr)));
  });
}

}  // namespace

void install_torch_info(VM& vm, const Ref<Module>& torch);  // torch_info.cpp

void install_torch(VM& vm) {
  auto torch = new_module(vm, "torch");
  add_callables(torch, "torch");
  torch->dict->set(str_value("__version__"), str_value("2.11.0"));
  torch->dict->set(str_value("Tensor"), Value(install_tensor_types(vm)));
  auto c_module = new_module(vm, "torch._C");
  install_value_types(vm, torch);
  install_grad_mode(vm, torch, c_module);
  install_autocast_state(torch);
  install_torch_info(vm, torch);
  // PyTorch logs the event only when a logger is registered, which none is here.
  def(c_module, "_log_api_usage_once", [](VM&, const CallArgs& a) {
    if (a.npos != 1 || a.has_kwargs() || !a[0].is(ObjKind::Str))
      throw_type_error("_log_api_usage_once(): incompatible function arguments. The following argument types are "
                       "supported:\n    1. (arg0: str) -> None\n");
    return Value();
  });

  def(torch, "manual_seed", [](VM&, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("manual_seed() takes 1 positional argument but " + std::to_string(a.npos) + " were given");
    default_cpu_generator().manual_seed(uint64_t(to_index(a[0], "seed")));
    return Value();
  });
  def(torch, "initial_seed", [](VM&, const CallArgs&) { return Value(int64_t(default_cpu_generator().initial_seed())); });
  def(torch, "get_rng_state", [](VM&, const CallArgs&) { return rng_state_tensor(default_cpu_generator()); });
  def(torch, "set_rng_state", [](VM&, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("set_rng_state() takes 1 positional argument but " + std::to_string(a.npos) + " were given");
    set_rng_state_from(default_cpu_generator(), a[0]);
    return Value();
  });
  def(torch, "get_default_dtype", [](VM& vm, const CallArgs&) { return make_dtype(vm, DType::Float32); });
  def(torch, "set_default_dtype", [](VM&, const CallArgs& a) {
    if (a.npos != 1 || !a[0].is(ObjKind::DType) || a[0].as<DTypeObj>()->dtype != DType::Float32)
      throw_unsupported("torch.set_default_dtype to anything but torch.float32");
    return Value();
  });
  def(torch, "is_tensor", [](VM&, const CallArgs& a) { return Value(a.npos == 1 && a[0].is(ObjKind::Tensor)); });
  // The tensor shares the array's memory (numpy_prelude.cpp keeps it in a torch tensor).
  def(torch, "from_numpy", [](VM&, const CallArgs& a) -> Value {
    if (a.npos != 1) throw_type_error("from_numpy() takes exactly one argument (" + std::to_string(a.npos) + " given)");
    TensorObj* t = ndarray_tensor(a[0], "torch.from_numpy");
    if (!t) throw_type_error("expected np.ndarray (got " + type_name(a[0]) + ")");
    return Value(make<TensorObj>(t->t));
  });
  if (!torchapi::find("torch.numel"))
    def(torch, "numel", [](VM& vm, const CallArgs& a) { return vm.call(vm.getattr(a[0], "numel"), ValueVec{}); });
  def(torch, "typename", [](VM& vm, const CallArgs& a) {
    if (a[0].is(ObjKind::Tensor)) return vm.call(vm.getattr(a[0], "type"), ValueVec{});
    return str_value(type_name(a[0]));
  });
  install_dynamo(vm, torch);

  auto cuda = new_module(vm, "torch.cuda");
  def(cuda, "is_available", [](VM&, const CallArgs&) { return Value(torchapi::cuda_device_count() > 0); });
  def(cuda, "device_count", [](VM&, const CallArgs&) { return Value(int64_t(torchapi::cuda_device_count())); });
  def(cuda, "current_device", [](VM&, const CallArgs&) {
    if (torchapi::cuda_device_count() == 0) throw PyError("RuntimeError", "No CUDA GPUs are available");
    return Value(int64_t(0));
  });
  // Eager work is done by the time a call returns, and compiled regions wait
  // for their GPU work before handing back results: nothing is outstanding.
  def(cuda, "synchronize", [](VM&, const CallArgs&) { return Value(); });
  def(cuda, "manual_seed", [](VM&, const CallArgs&) { return Value(); });
  def(cuda, "manual_seed_all", [](VM&, const CallArgs&) { return Value(); });

  // The precision switches PyTorch's CUDA kernels read; Kiln's GPU backend
  // reads them when it compiles a region (compiler/pipeline/region_backends.cpp).
  new_module(vm, "torch.backends");
  auto cudnn = new_module(vm, "torch.backends.cudnn");
  cudnn->dict->set(str_value("allow_tf32"), Value(true));
  cudnn->dict->set(str_value("enabled"), Value(true));
  cudnn->dict->set(str_value("benchmark"), Value(false));
  cudnn->dict->set(str_value("deterministic"), Value(false));
  // An Apple GPU is never there (the device-selection idiom of pytorch/examples).
  auto mps = new_module(vm, "torch.backends.mps");
  def(mps, "is_available", [](VM&, const CallArgs&) { return Value(false); });
  def(mps, "is_built", [](VM&, const CallArgs&) { return Value(false); });
  new_module(vm, "torch.backends.cuda");
  new_module(vm, "torch.backends.cuda.matmul")->dict->set(str_value("allow_tf32"), Value(false));

  auto nn = new_module(vm, "torch.nn");
  nn->dict->set(str_value("Parameter"), Value(vm.builtin_type("Parameter")));
  new_module(vm, "torch.nn.parameter")->dict->set(str_value("Parameter"), Value(vm.builtin_type("Parameter")));
  add_callables(new_module(vm, "torch.nn.functional"), "torch.nn.functional");
  for (const std::string& m : torchapi::modules())
    if (m != "torch" && m != "Tensor" && m != "torch.nn.functional" && !vm.module(m)) add_callables(new_module(vm, m), m);
  // torch._C._nn.<name>: the spelling Dynamo's graphs use for the C-implemented functionals.
  auto c_nn = new_module(vm, "torch._C._nn");
  for (const torchapi::Callable* c : torchapi::callables_of("torch.nn.functional"))
    if (c->graph_target.starts_with("torch._C._nn.")) c_nn->dict->set(str_value(c->graph_target.substr(13)), *vm.module("torch.nn.functional")->dict->find_str(c->name));
  new_module(vm, "torch.nn.init");
  install_prelude_helpers(vm);
  install_safetensors(vm);
  install_serialization(torch);
  install_math(vm);
  install_nn_prelude(vm);
  install_complex_prelude(vm, torch);
  install_sparse_prelude(vm, torch);
  install_runtime_prelude(vm);
}

}  // namespace kiln::py
