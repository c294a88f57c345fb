// What programs read about the PyTorch they run on and the compiler settings
// they assign: torch.version, torch.cuda's memory statistics, torch.hub.tqdm,
// the settings modules torch._inductor.config / torch._functorch.config (and
// more of torch._dynamo.config), the attention-backend switches
// (torch.backends.cuda.sdp_kernel, torch.nn.attention.sdpa_kernel) and
// torch.distributed.optim (importable; its optimizer refused).
//
// A settings module checks each assignment (the module's __kiln_setattr__,
// vm_ops.cpp): a setting Kiln does not list is refused by name, one that would
// change what is computed and that Kiln does not follow is kept and reported
// once on stderr, and tuning, caching and naming settings, which change how
// PyTorch's compiler works but not the numbers, are kept silently.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kRuntimeSource = R"PY(import _kiln_std
import torch
import warnings

# ---- torch.cuda memory statistics -------------------------------------------
# Without CUDA, PyTorch's caching allocator was never initialised: the getters
# read an empty statistics dict (0) and the resets reach the C++ binding with
# device None, which a CUDA build of PyTorch rejects with this message.
def _cuda_stat(name):
    def stat(device=None):
        if torch.cuda.is_available():
            _kiln_std.refuse("torch.cuda." + name + ": the statistics of PyTorch's CUDA caching allocator are not "
                             "modelled by Kiln")
        return 0
    _kiln_std.set_function_name(stat, name)
    return stat


def _cuda_reset(name):
    def reset(device=None):
        if torch.cuda.is_available() or device is not None:
            _kiln_std.refuse("torch.cuda." + name + ": the statistics of PyTorch's CUDA caching allocator are not "
                             "modelled by Kiln")
        _kiln_std.raise_error("RuntimeError", "invalid argument to " + name)
    _kiln_std.set_function_name(reset, name)
    return reset


def empty_cache():
    return None


# ---- torch.version -----------------------------------------------------------
# Kiln is not a CUDA or ROCm build of PyTorch (its GPU backend compiles through
# NVRTC at run time), so cuda and hip are None, as in a CPU build.
__version__ = torch.__version__
cuda = None
hip = None
git_version = "Unknown"
debug = False


# ---- compiler settings modules ------------------------------------------------
# Effects: "none" (tuning, caches, kernel names, debug output: the numbers are
# the same), "read" (Kiln's capture reads it), "numbers" (a value other than
# the default changes what PyTorch computes and Kiln does not follow it),
# "behaviour" (a value other than the default changes which graphs PyTorch
# compiles or when it recompiles, and Kiln's capture does not follow it).
_INDUCTOR = {
    "debug": (False, "none"),
    "verbose_progress": (False, "none"),
    "disable_progress": (True, "none"),
    "fx_graph_cache": (True, "none"),
    "fx_graph_remote_cache": (None, "none"),
    "autotune_local_cache": (True, "none"),
    "autotune_remote_cache": (None, "none"),
    "force_disable_caches": (False, "none"),
    "coordinate_descent_tuning": (False, "none"),
    "coordinate_descent_check_all_directions": (False, "none"),
    "max_autotune": (False, "none"),
    "max_autotune_pointwise": (False, "none"),
    "max_autotune_gemm": (False, "none"),
    "epilogue_fusion": (True, "none"),
    "aggressive_fusion": (False, "none"),
    "benchmark_kernel": (False, "none"),
    "shape_padding": (True, "none"),
    "split_reductions": (True, "none"),
    "conv_1x1_as_mm": (False, "none"),
    "layout_optimization": (True, "none"),
    "size_asserts": (True, "none"),
    "cpp_wrapper": (False, "none"),
    "fallback_random": (False, "numbers"),
    "emulate_precision_casts": (False, "numbers"),
    "force_same_precision": (True, "numbers"),
    "freezing": (False, "numbers"),
    "triton.unique_kernel_names": (True, "none"),
    "triton.cudagraphs": (False, "none"),
    "triton.cudagraph_trees": (True, "none"),
    "triton.autotune_pointwise": (True, "none"),
    "triton.descriptive_names": ("original_aten", "none"),
    "trace.enabled": (False, "none"),
}
_FUNCTORCH = {
    "enable_autograd_cache": (True, "none"),
    "donated_buffer": (True, "none"),
    "activation_memory_budget": (1.0, "none"),
    "functionalize_rng_ops": (False, "numbers"),
}
# Added to the torch._dynamo.config that torch_module.cpp makes (whose
# settings capture reads: capture_scalar_outputs, cache_size_limit, ...).
_DYNAMO_READ = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops", "cache_size_limit",
                "recompile_limit", "verbose", "suppress_errors", "reorderable_logging_functions")
_DYNAMO = {
    "automatic_dynamic_shapes": (True, "behaviour"),
    "assume_static_by_default": (True, "behaviour"),
    "specialize_int": (False, "behaviour"),
    # False: an int attribute of an nn.Module is specialized (an EQUALS_MATCH
    # guard, so `self.step += 1` recompiles each call), which Kiln does.
    "allow_unspec_int_on_nn_module": (False, "behaviour"),
    "optimize_ddp": (True, "none"),
    "inline_inbuilt_nn_modules": (True, "behaviour"),
    "accumulated_cache_size_limit": (256, "behaviour"),
    "accumulated_recompile_limit": (256, "behaviour"),
    "error_on_recompile": (False, "behaviour"),
    "guard_nn_modules": (False, "behaviour"),
    "compiled_autograd": (False, "behaviour"),
    "log_compilation_metrics": (True, "none"),
}
_warned = set()


class _SubConfig:
    """A dotted group of settings (torch._inductor.config.triton)."""

    def __init__(self, owner, prefix, table):
        d = _kiln_std.instance_dict(self)
        d["_owner"] = owner
        d["_prefix"] = prefix
        d["_table"] = table
        for key, entry in table.items():
            if key.startswith(prefix + "."):
                d[key[len(prefix) + 1:]] = entry[0]

    def __setattr__(self, name, value):
        _check(self._owner, self._table, self._prefix + "." + name, value)
        _kiln_std.instance_dict(self)[name] = value

    def __repr__(self):
        return "<torch.utils._config_module.SubConfigProxy object>"


def _check(owner, table, key, value):
    if key not in table:
        _kiln_std.refuse(owner + "." + key + " is a compiler setting Kiln does not know (docs/python.md lists the "
                         "ones it keeps)")
    default, effect = table[key]
    if effect in ("numbers", "behaviour") and value != default and (owner + "." + key) not in _warned:
        _warned.add(owner + "." + key)
        what = ("changes what PyTorch computes" if effect == "numbers"
                else "changes which graphs PyTorch compiles and when it recompiles")
        warnings.warn(owner + "." + key + " = " + repr(value) + ": this setting " + what + "; Kiln keeps the "
                      "value but does not follow it", UserWarning, stacklevel=3)


def _install_settings(module, name, table, kept=()):
    table = dict(table)
    for key in kept:
        table[key] = (getattr(module, key), "read")
    groups = set()
    for key, entry in table.items():
        if "." in key:
            groups.add(key.split(".")[0])
        elif key not in kept:
            setattr(module, key, entry[0])
    for group in groups:
        setattr(module, group, _SubConfig(name, group, table))

    def hook(key, value):
        if key in groups:
            _kiln_std.refuse(name + "." + key + " is a group of settings; assign its members")
        _check(name, table, key, value)
    setattr(module, "__kiln_setattr__", hook)


# ---- attention backends -------------------------------------------------------
class SDPBackend:
    def __init__(self, name, value):
        self.name = name
        self.value = value

    def __repr__(self):
        return "<SDPBackend." + self.name + ": " + str(self.value) + ">"

    def __eq__(self, other):
        return isinstance(other, SDPBackend) and other.value == self.value

    def __hash__(self):
        return self.value


for _name, _value in (("ERROR", -1), ("MATH", 0), ("FLASH_ATTENTION", 1), ("EFFICIENT_ATTENTION", 2),
                      ("CUDNN_ATTENTION", 3), ("OVERRIDEABLE", 4)):
    setattr(SDPBackend, _name, SDPBackend(_name, _value))

# Kiln computes scaled_dot_product_attention by the math formula (softmax of
# q @ k^T * scale, then @ v): that is PyTorch's MATH backend. The fused
# backends round differently, so a context that leaves out MATH asks for
# numbers Kiln does not compute.
_sdp_enabled = {0: True, 1: True, 2: True, 3: True, 4: True}


def _sdp_flag(value):
    def enabled():
        return _sdp_enabled[value]

    def enable(on):
        _sdp_enabled[value] = bool(on)
        _warn_without_math()
    return enabled, enable


def _warn_without_math():
    if not _sdp_enabled[0] and "sdp" not in _warned:
        _warned.add("sdp")
        warnings.warn("scaled_dot_product_attention with the MATH backend disabled: PyTorch would use a fused "
                      "kernel, whose rounding differs; Kiln computes the math formula", UserWarning, stacklevel=3)


class _SdpaKernel:
    def __init__(self, backends, set_priority=False):
        if isinstance(backends, SDPBackend):
            backends = [backends]
        if not isinstance(backends, (list, tuple, set)):
            _kiln_std.raise_error("AssertionError", "Backend must be an instance of SDPBackend or a list of "
                                  "SDPBackend instances")
        for b in backends:
            if not isinstance(b, SDPBackend):
                _kiln_std.raise_error("AssertionError", "Backend must be an instance of SDPBackend or a list of "
                                      "SDPBackend instances")
        self.wanted = set([b.value for b in backends])
        self.saved = None

    def __enter__(self):
        self.saved = dict(_sdp_enabled)
        for value in (0, 1, 2, 3, 4):
            _sdp_enabled[value] = value in self.wanted
        _warn_without_math()
        return None

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            _sdp_enabled[k] = v
        return False


def sdpa_kernel(backends, set_priority=False):
    return _SdpaKernel(backends, set_priority)


def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=2)
    backends = []
    if enable_flash:
        backends.append(SDPBackend.FLASH_ATTENTION)
    if enable_mem_efficient:
        backends.append(SDPBackend.EFFICIENT_ATTENTION)
    if enable_math:
        backends.append(SDPBackend.MATH)
    if enable_cudnn:
        backends.append(SDPBackend.CUDNN_ATTENTION)
    return _SdpaKernel(backends)


flash_sdp_enabled, enable_flash_sdp = _sdp_flag(1)
math_sdp_enabled, enable_math_sdp = _sdp_flag(0)
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _sdp_flag(2)
cudnn_sdp_enabled, enable_cudnn_sdp = _sdp_flag(3)


# ---- torch.distributed.optim -------------------------------------------------
class ZeroRedundancyOptimizer:
    def __init__(self, *args, **kwargs):
        _kiln_std.refuse("torch.distributed.optim.ZeroRedundancyOptimizer (it shards optimizer state across "
                         "processes; multi-process training is not modelled, Kiln runs one process)")
)PY";

Ref<Module> submodule(VM& vm, const std::string& name) {
  if (Ref<Module> m = vm.module(name)) return m;
  auto m = make<Module>(name);
  vm.add_module(m);
  const size_t dot = name.rfind('.');
  if (Ref<Module> parent = vm.module(name.substr(0, dot))) parent->dict->set(str_value(name.substr(dot + 1)), Value(m));
  return m;
}

void copy(const Ref<Dict>& globals, const Ref<Module>& to, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const Value* v = globals->find_str(name)) to->dict->set(str_value(name), *v);
}

}  // namespace

void install_runtime_prelude(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kRuntimeSource, "torch/_kiln_runtime.py");
  Ref<Module> version = submodule(vm, "torch.version");
  submodule(vm, "torch._inductor");
  Ref<Module> inductor = submodule(vm, "torch._inductor.config");
  submodule(vm, "torch._functorch");
  Ref<Module> functorch = submodule(vm, "torch._functorch.config");
  Ref<Module> attention = submodule(vm, "torch.nn.attention");
  Ref<Module> dist_optim = submodule(vm, "torch.distributed.optim");
  Ref<Dict> globals = run_prelude(vm, code, "torch._kiln_runtime", "torch runtime settings");
  if (!globals) return;
  copy(globals, version, {"__version__", "cuda", "hip", "git_version", "debug"});
  if (Ref<Module> cuda = vm.module("torch.cuda")) {
    for (const char* name : {"max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved"})
      cuda->dict->set(str_value(name), vm.call(*globals->find_str("_cuda_stat"), ValueVec{str_value(name)}));
    for (const char* name : {"reset_peak_memory_stats", "reset_accumulated_memory_stats"})
      cuda->dict->set(str_value(name), vm.call(*globals->find_str("_cuda_reset"), ValueVec{str_value(name)}));
    copy(globals, cuda, {"empty_cache"});
  }
  if (Ref<Module> backends_cuda = vm.module("torch.backends.cuda"))
    copy(globals, backends_cuda, {"sdp_kernel", "flash_sdp_enabled", "enable_flash_sdp", "math_sdp_enabled",
                                  "enable_math_sdp", "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp",
                                  "cudnn_sdp_enabled", "enable_cudnn_sdp"});
  copy(globals, attention, {"SDPBackend", "sdpa_kernel"});
  if (const Value* cls = globals->find_str("SDPBackend"); cls && cls->is(ObjKind::Class))
    cls->as<Class>()->module = "torch._C";
  copy(globals, dist_optim, {"ZeroRedundancyOptimizer"});
  if (const Value* cls = globals->find_str("ZeroRedundancyOptimizer"); cls && cls->is(ObjKind::Class))
    cls->as<Class>()->module = "torch.distributed.optim.zero_redundancy_optimizer";
  // torch.hub takes tqdm from the tqdm package when it is installed, as it is here (stdlib_small.cpp).
  if (Ref<Module> hub = vm.module("torch.hub"))
    if (Ref<Module> tqdm = load_stdlib_module(vm, "tqdm"))
      if (const Value* t = tqdm->dict->find_str("tqdm")) hub->dict->set(str_value("tqdm"), *t);
  const Value* install = globals->find_str("_install_settings");
  if (!install) return;
  vm.call(*install, ValueVec{Value(inductor), str_value(inductor->name), *globals->find_str("_INDUCTOR")});
  vm.call(*install, ValueVec{Value(functorch), str_value(functorch->name), *globals->find_str("_FUNCTORCH")});
  if (Ref<Module> dynamo = vm.module("torch._dynamo.config"))
    vm.call(*install, ValueVec{Value(dynamo), str_value(dynamo->name), *globals->find_str("_DYNAMO"),
                               *globals->find_str("_DYNAMO_READ")});
}

}  // namespace kiln::py
