// torch.autocast (torch.amp.autocast_mode.autocast) and the deprecated
// torch.cuda.amp.autocast / torch.cpu.amp.autocast, after PyTorch 2.11's
// torch/amp/autocast_mode.py: a context manager and decorator over the state
// switches of torch_module.cpp. The casts themselves are torchapi's
// (torch_api_autocast.cpp).
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kAutocastSource = R"PY(import functools
import torch
import torch._kiln as _kiln


def is_autocast_available(device_type):
    return device_type in ("cpu", "cuda")


def _check_device(device_type):
    if not is_autocast_available(device_type):
        _kiln.raise_unsupported(f"torch.autocast(device_type='{device_type}'): Kiln has autocast for 'cpu' and 'cuda' only")


class autocast:
    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            _kiln.raise_error("ValueError", f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        # As given: Dynamo's _enter_autocast node takes these.
        self._kiln_given = (device_type, dtype, enabled, cache_enabled)
        _check_device(device_type)
        if dtype is None:
            dtype = torch.get_autocast_dtype(device_type)
        self.device = device_type
        self.fast_dtype = torch.get_autocast_dtype(device_type)
        self._cache_enabled = torch.is_autocast_cache_enabled()
        if enabled and device_type == "cuda" and not torch.cuda.is_available():
            _kiln.warn("UserWarning", "User provided device_type of 'cuda', but CUDA is not available. Disabling")
            enabled = False
        if dtype is not None:
            self.fast_dtype = dtype
        if cache_enabled is not None:
            self._cache_enabled = cache_enabled
        if device_type == "cpu":
            if self.fast_dtype not in (torch.bfloat16, torch.float16) and enabled:
                _kiln.warn("UserWarning", "In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.")
                enabled = False
        elif enabled and self.fast_dtype not in (torch.bfloat16, torch.float16):
            _kiln.raise_unsupported(f"torch.autocast('cuda', dtype={self.fast_dtype}): Kiln casts CUDA autocast regions to torch.float16 or torch.bfloat16 only")
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = torch.is_autocast_cache_enabled()
        self.prev = torch.is_autocast_enabled(self.device)
        self.prev_fastdtype = torch.get_autocast_dtype(self.device)
        torch.set_autocast_enabled(self.device, self._enabled)
        torch.set_autocast_dtype(self.device, self.fast_dtype)
        torch.autocast_increment_nesting()
        torch.set_autocast_cache_enabled(self._cache_enabled)
        _kiln.autocast_traced(self, True)

    def __exit__(self, exc_type, exc_val, exc_tb):
        _kiln.autocast_traced(self, False)
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        torch.set_autocast_enabled(self.device, self.prev)
        torch.set_autocast_dtype(self.device, self.prev_fastdtype)
        torch.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


class _CudaAutocast(autocast):
    def __init__(self, enabled=True, dtype=torch.float16, cache_enabled=True):
        _kiln.warn("FutureWarning", "`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` instead.")
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class _CpuAutocast(autocast):
    def __init__(self, enabled=True, dtype=torch.bfloat16, cache_enabled=True):
        _kiln.warn("FutureWarning", "`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.")
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)
)PY";

}  // namespace

// torch.autocast is an attribute of torch from the start; torch.amp and
// torch.cuda.amp (train_prelude.cpp) take theirs from here.
Ref<Module> install_grad_scaler(VM& vm);  // grad_scaler_prelude.cpp

void install_amp_prelude(VM& vm) {
  // autocast_traced(ctx, entering): capture's hook records the block's
  // _enter_autocast / _exit_autocast node; without a trace it does nothing.
  if (Ref<Module> k = vm.module("torch._kiln"))
    set_attr_builtin(k->dict, "torch._kiln.autocast_traced", "autocast_traced", [](VM& vm, const CallArgs& a) {
      if (!vm.tracer) return Value();
      auto it = vm.extensions.find("torch.amp.autocast.traced");
      if (it == vm.extensions.end() || !it->second) return Value();
      return (*static_cast<const BuiltinFn*>(it->second.get()))(vm, a);
    });
  static const Expected<CodePtr> code = compile_module(kAutocastSource, "torch/amp/autocast_mode.py");
  Ref<Dict> globals = run_prelude(vm, code, "torch.amp.autocast_mode", "torch.autocast");
  Ref<Module> torch = vm.module("torch");
  if (!globals || !torch) return;
  auto mode = make<Module>("torch.amp.autocast_mode");
  vm.add_module(mode);
  globals->for_each([&](const Value& k, const Value& v) { mode->dict->set(k, v); });
  if (const Value* cls = globals->find_str("autocast")) torch->dict->set(str_value("autocast"), *cls);
  auto name_class = [&](const char* key, const char* module) {
    if (const Value* cls = globals->find_str(key); cls && cls->is(ObjKind::Class)) {
      cls->as<Class>()->name = cls->as<Class>()->qualname = "autocast";
      cls->as<Class>()->module = module;
    }
  };
  name_class("autocast", "torch.amp.autocast_mode");
  name_class("_CudaAutocast", "torch.cuda.amp.autocast_mode");
  name_class("_CpuAutocast", "torch.cpu.amp.autocast_mode");
  // torch.cpu.amp.autocast: torch.cpu is a module of its own in PyTorch.
  Ref<Module> cpu = vm.module("torch.cpu");
  if (!cpu) {
    cpu = make<Module>("torch.cpu");
    vm.add_module(cpu);
    torch->dict->set(str_value("cpu"), Value(cpu));
  }
  // torch.cpu.amp (autocast, GradScaler) is made on first use: the GradScaler
  // prelude runs then.
  vm.add_lazy_module("torch.cpu.amp", [](VM& vm) {
    auto cpu_amp = make<Module>("torch.cpu.amp");
    vm.add_module(cpu_amp);
    if (Ref<Module> cpu = vm.module("torch.cpu")) cpu->dict->set(str_value("amp"), Value(cpu_amp));
    if (Ref<Module> mode = vm.module("torch.amp.autocast_mode"))
      if (const Value* cls = mode->dict->find_str("_CpuAutocast")) cpu_amp->dict->set(str_value("autocast"), *cls);
    if (Ref<Module> scaler = install_grad_scaler(vm))
      if (const Value* cls = scaler->dict->find_str("_CpuGradScaler")) cpu_amp->dict->set(str_value("GradScaler"), *cls);
  });
}

}  // namespace kiln::py
