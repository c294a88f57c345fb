// torch.amp.GradScaler (torch/amp/grad_scaler.py), torch.cuda.amp.GradScaler
// and torch.cpu.amp.GradScaler, after PyTorch 2.11: the scale and the growth
// tracker are 0-dim tensors made at the first scale(), unscale_ checks each
// optimizer's gradients for inf/NaN as it divides them, step skips the
// optimizer's step when one was found, and update backs the scale off or grows
// it every growth_interval clean steps, as ATen's CPU kernels
// (_amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_) do.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kGradScalerSource = R"PY(# torch.amp.grad_scaler in Kiln's Python subset, after PyTorch 2.11.
import torch
import torch._kiln as _kiln
from collections import defaultdict
from enum import Enum


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _amp_foreach_non_finite_check_and_unscale_(scaled_grads, found_inf, inv_scale):
    # ATen's kernel: found_inf becomes 1.0 when any element is inf or NaN; every
    # gradient is multiplied by inv_scale in place (left as is when it is 1).
    with torch.no_grad():
        for g in scaled_grads:
            if not bool(torch.isfinite(g).all()):
                found_inf.fill_(1.0)
            if float(inv_scale) != 1.0:
                g.mul_(inv_scale)


def _amp_update_scale_(current_scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    # ATen's kernel: the products are taken in double and stored in float32; a
    # grown scale that would overflow float32 is not taken.
    with torch.no_grad():
        if float(found_inf) != 0.0:
            current_scale.fill_(float(current_scale) * backoff_factor)
            growth_tracker.fill_(0)
        else:
            successful = int(growth_tracker) + 1
            if successful == growth_interval:
                grown = torch.full((), float(current_scale) * growth_factor, dtype=torch.float32)
                if bool(torch.isfinite(grown)):
                    current_scale.copy_(grown)
                growth_tracker.fill_(0)
            else:
                growth_tracker.fill_(successful)
    return current_scale


# _per_optimizer_states is keyed by the optimizer itself (PyTorch: id(optimizer)):
# object addresses are not part of Kiln's subset, and an instance hashes by identity.
class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda":
            if enabled and not torch.cuda.is_available():
                _kiln.warn("UserWarning", "torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
                self._enabled = False
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + fix
        assert self._growth_tracker is not None, f"Attempted {funcname} but _growth_tracker is None.  " + fix
        return (self._scale, self._growth_tracker)

    def _lazy_init_scale_growth_tracker(self, dev):
        assert self._growth_tracker is None, "_growth_tracker initialized before _scale"
        self._scale = torch.full((), self._init_scale, dtype=torch.float32, device=dev)
        self._growth_tracker = torch.full((), self._init_growth_tracker, dtype=torch.int32, device=dev)

    def scale(self, outputs):
        if not self._enabled:
            return outputs
        if isinstance(outputs, torch.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        return self._apply_scale(outputs)

    def _apply_scale(self, val):
        if isinstance(val, torch.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(val.device)
            return val * self._scale.to(device=val.device)
        if isinstance(val, (list, tuple)):
            scaled = [self._apply_scale(v) for v in val]
            return scaled if isinstance(val, list) else tuple(scaled)
        if hasattr(val, "__iter__"):
            return map(self._apply_scale, val)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        # One found_inf per device (Kiln's tensors of one optimizer share one),
        # the gradients grouped by device and dtype as PyTorch groups them.
        per_device_found_inf = {}
        per_device_and_dtype_grads = {}
        with torch.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    assert isinstance(param, torch.Tensor)
                    if param.grad is None:
                        continue
                    if (not allow_fp16) and param.grad.dtype == torch.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if param.grad.is_sparse:
                        _kiln.raise_unsupported("GradScaler.unscale_ of a sparse gradient is not supported by Kiln")
                    to_unscale = param.grad
                    per_dtype = per_device_and_dtype_grads.setdefault(to_unscale.device, {})
                    per_dtype.setdefault(to_unscale.dtype, []).append(to_unscale)
            for device, per_dtype_grads in per_device_and_dtype_grads.items():
                if device not in per_device_found_inf:
                    per_device_found_inf[device] = found_inf.to(device=device, copy=True)
                device_inv_scale = inv_scale.to(device=device, copy=True)
                for grads in per_dtype_grads.values():
                    _amp_foreach_non_finite_check_and_unscale_(grads, per_device_found_inf[device], device_inv_scale)
        return per_device_found_inf

    def unscale_(self, optimizer):
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[optimizer]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        elif optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # The reciprocal in float64, as PyTorch takes it.
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = torch.full((), 0.0, dtype=torch.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        retval = None
        found_inf = any(v.item() for v in optimizer_state["found_inf_per_device"].values())
        if not found_inf:
            retval = optimizer.step(*args, **kwargs)
        return retval, found_inf

    def step(self, optimizer, *args, return_found_inf=False, **kwargs):
        if not self._enabled:
            retval = optimizer.step(*args, **kwargs)
            if not return_found_inf:
                return retval
            return retval, False
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[optimizer]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            _kiln.raise_unsupported("GradScaler.step with an optimizer that scales itself (_step_supports_amp_scaling) is not supported by Kiln")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert len(optimizer_state["found_inf_per_device"]) > 0, "No inf checks were recorded for this optimizer."
        retval, found_inf = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        if return_found_inf:
            return retval, found_inf
        return retval

    def update(self, new_scale=None):
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if not isinstance(new_scale, torch.Tensor):
                self._scale.fill_(new_scale)
            else:
                reason = "new_scale should be a float or a 1-element torch.cuda.FloatTensor or                     torch.FloatTensor with requires_grad=False."
                assert new_scale.device.type == self._device, reason
                assert new_scale.numel() == 1, reason
                assert new_scale.requires_grad is False, reason
                self._scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=_scale.device)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            assert len(found_infs) > 0, "No inf checks were recorded prior to update."
            found_inf_combined = found_infs[0]
            if len(found_infs) > 1:
                for i in range(1, len(found_infs)):
                    found_inf_combined += found_infs[i]
            _amp_update_scale_(_scale, _growth_tracker, found_inf_combined, self._growth_factor,
                               self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        if self._enabled:
            return self._init_scale if self._scale is None else self._scale.item()
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker.item()
        return 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        if self._enabled:
            return {
                "scale": self.get_scale(),
                "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker(),
            }
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def _check_inf_per_device(self, optimizer):
        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = torch.full((), 1.0, dtype=torch.float32, device=_scale.device)
        found_inf = torch.full((), 0.0, dtype=torch.float32, device=_scale.device)
        self._per_optimizer_states[optimizer]["found_inf_per_device"] = self._unscale_grads_(optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[optimizer]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[optimizer]["found_inf_per_device"]


class _CudaGradScaler(GradScaler):
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        _kiln.warn("FutureWarning", "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.")
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


class _CpuGradScaler(GradScaler):
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        _kiln.warn("FutureWarning", "`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cpu', args...)` instead.")
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
)PY";

}  // namespace

// Runs the prelude once as the module torch.amp.grad_scaler; the deprecated
// subclasses keep PyTorch's class name and module.
Ref<Module> install_grad_scaler(VM& vm) {
  if (Ref<Module> done = vm.module("torch.amp.grad_scaler")) return done;
  static const Expected<CodePtr> code = compile_module(kGradScalerSource, "torch/amp/grad_scaler.py");
  auto m = make<Module>("torch.amp.grad_scaler");
  Ref<Dict> globals = run_prelude(vm, code, m->name, "torch.amp.GradScaler");
  if (!globals) return {};
  m->dict = globals;
  vm.add_module(m);
  auto name_class = [&](const char* key, const char* module) {
    if (const Value* v = globals->find_str(key); v && v->is(ObjKind::Class)) {
      v->as<Class>()->name = v->as<Class>()->qualname = "GradScaler";
      v->as<Class>()->module = module;
    }
  };
  name_class("GradScaler", "torch.amp.grad_scaler");
  name_class("_CudaGradScaler", "torch.cuda.amp.grad_scaler");
  name_class("_CpuGradScaler", "torch.cpu.amp.grad_scaler");
  if (Ref<Module> torch = vm.module("torch"))
    for (const char* op : {"_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_"})
      if (const Value* v = globals->find_str(op)) torch->dict->set(str_value(op), *v);
  return m;
}

}  // namespace kiln::py
