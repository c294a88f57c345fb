// torch.nn.utils.parametrize after PyTorch 2.11: a parametrized tensor is a
// property of a generated subclass (ParametrizedLinear, ...) that the module
// is switched to, computing parametrizations[name]() from the `original` held
// in a ParametrizationList. Registration runs right_inverse and the
// consistency check exactly where PyTorch's does, so a parametrization that
// draws random numbers draws them in the same order. Tensor.set_ is PyTorch's
// way of keeping the original's identity; Kiln assigns its .data instead.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

void install_orthogonal_and_spectral_norm(VM& vm, const Ref<Module>& parametrizations);  // parametrizations_prelude.cpp

namespace {

const char* const kParametrizeSource = R"PY(import contextlib
import torch
import torch._kiln as _kiln
from torch.nn import Module, ModuleDict, ModuleList, Parameter


def _raise(kind, message):
    _kiln.raise_error(kind, message)


_cache_enabled = [0]
_cache = {}


@contextlib.contextmanager
def cached():
    _cache_enabled[0] += 1
    try:
        yield
    finally:
        _cache_enabled[0] -= 1
        if not _cache_enabled[0]:
            _cache.clear()


def _register_parameter_or_buffer(module, name, x):
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _maybe_set(dest, src):
    dest.data = src


def _is_sequence(x):
    return isinstance(x, (list, tuple))


class ParametrizationList(ModuleList):
    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            _raise("ValueError", "ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape = original.shape
        original_dtype = original.dtype
        with torch.no_grad():
            new = original
            for module in list(self)[::-1]:
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, torch.Tensor) and not _is_sequence(new):
            _raise("ValueError", f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, torch.Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                _raise("ValueError", f"When `right_inverse` outputs one tensor, it may not change the dtype.\noriginal.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            with torch.no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, torch.Tensor):
                    _raise("ValueError", f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got element {i} of the sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, torch.Tensor):
                _raise("ValueError", f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                _raise("ValueError", f"Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\nparametrized dtype: {z.dtype}")
            if z.shape != original_shape:
                _raise("ValueError", f"Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\nunparametrized shape: {original_shape}\nparametrized shape: {z.shape}")

    def right_inverse(self, value):
        with torch.no_grad():
            for module in list(self)[::-1]:
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    _raise("RuntimeError", f"parametrization {type(module).__name__} does not implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, torch.Tensor):
                    _raise("ValueError", f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    _raise("ValueError", f"The tensor returned by `right_inverse` has dtype {value.dtype} while `original` has dtype {self.original.dtype}")
                _maybe_set(self.original, value)
            else:
                if not _is_sequence(value):
                    _raise("ValueError", f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    _raise("ValueError", f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. Got a sequence of length {len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, torch.Tensor):
                        _raise("ValueError", f"`right_inverse` must return a sequence of tensors. Got element {i} of type {type(tensor).__name__}")
                    if original_i.dtype != tensor.dtype:
                        _raise("ValueError", f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} while `original{i}` has dtype {original_i.dtype}")
                    _maybe_set(original_i, tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*[getattr(self, f"original{i}") for i in range(self.ntensors)])
        i = 1
        while hasattr(self, str(i)):
            x = self[i](x)
            i += 1
        return x


def _inject_new_class(module):
    cls = module.__class__

    def getstate(self):
        _raise("RuntimeError", "Serialization of parametrized modules is only supported through state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate})


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled[0]:
            key = (self, tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = parametrization()
                _cache[key] = tensor
            return tensor
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _check_added(module, tensor_name, parametrization):
    y = getattr(module, tensor_name)
    x = parametrization(y)
    if not isinstance(x, torch.Tensor):
        _raise("ValueError", f"A parametrization must return a tensor. Got {type(x).__name__}.")
    if x.dtype != y.dtype:
        _raise("ValueError", f"Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\nparametrization(module.{tensor_name}).dtype: {x.dtype}")
    if x.shape != y.shape:
        _raise("ValueError", f"Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {y.shape}\nparametrization(module.{tensor_name}).shape: {x.shape}")
    if hasattr(parametrization, "right_inverse"):
        try:
            z = parametrization.right_inverse(x)
        except NotImplementedError:
            return
        if not isinstance(z, torch.Tensor):
            _raise("ValueError", f"parametrization.right_inverse must return a tensor. Got: {type(z).__name__}")
        if z.dtype != y.dtype:
            _raise("ValueError", f"The tensor returned by parametrization.right_inverse must have the same dtype as module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\nreturned dtype: {z.dtype}")
        if z.shape != y.shape:
            _raise("ValueError", f"The tensor returned by parametrization.right_inverse must have the same shape as module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {y.shape}\nreturned shape: {z.shape}")


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_added(module, tensor_name, parametrization)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe = module.parametrizations[tensor_name].unsafe or unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        _raise("ValueError", f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    if not is_parametrized(module, tensor_name):
        _raise("ValueError", f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with torch.no_grad():
                t = getattr(module, tensor_name)
            with torch.no_grad():
                _maybe_set(original, t)
    else:
        if leave_parametrized:
            t = getattr(module, tensor_name)
            original = Parameter(t) if t.requires_grad else t
        else:
            _raise("ValueError", "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


class _WeightNorm(Module):
    # torch.nn.utils.parametrizations.weight_norm's parametrization: original0
    # is g, original1 is v.
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return torch._weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return torch.norm_except_dim(weight, 2, self.dim), weight


def _parametrizations_weight_norm(module, name="weight", dim=0):
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module
)PY";

void install_parametrize(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kParametrizeSource, "torch/nn/utils/parametrize.py");
  auto m = make<Module>("torch.nn.utils.parametrize");
  vm.add_module(m);
  Ref<Dict> globals = run_prelude(vm, code, m->name, "torch.nn.utils.parametrize");
  if (!globals) return;
  for (const char* name : {"cached", "ParametrizationList", "register_parametrization", "is_parametrized",
                           "remove_parametrizations", "type_before_parametrizations"})
    if (const Value* v = globals->find_str(name)) {
      if (v->is(ObjKind::Class)) v->as<Class>()->module = m->name;
      m->dict->set(str_value(name), *v);
    }
  if (Ref<Module> utils = vm.module("torch.nn.utils")) utils->dict->set(str_value("parametrize"), Value(m));
  // torch.nn.utils.parametrizations: weight_norm over the same machinery,
  // orthogonal and spectral_norm from parametrizations_prelude.cpp.
  auto parametrizations = make<Module>("torch.nn.utils.parametrizations");
  vm.add_module(parametrizations);
  if (const Value* v = globals->find_str("_parametrizations_weight_norm"))
    parametrizations->dict->set(str_value("weight_norm"), *v);
  if (const Value* v = globals->find_str("_WeightNorm")) v->as<Class>()->module = parametrizations->name;
  install_orthogonal_and_spectral_norm(vm, parametrizations);
  if (Ref<Module> utils = vm.module("torch.nn.utils"))
    utils->dict->set(str_value("parametrizations"), Value(parametrizations));
}

}  // namespace

void install_parametrize_prelude(VM& vm) {
  vm.add_lazy_module("torch.nn.utils.parametrize", install_parametrize);
  vm.add_lazy_module("torch.nn.utils.parametrizations", install_parametrize);
}

}  // namespace kiln::py
