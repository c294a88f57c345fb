// torch.nn.utils.prune after PyTorch 2.11: a pruned tensor `name` becomes
// the parameter `name_orig` times the buffer `name_mask`, recomputed by a
// forward pre-hook (the pruning method itself) before every forward. Masks
// are drawn and ranked with the same torch calls PyTorch makes (rand_like +
// topk, topk of |t|, kthvalue of rand, norms along a dim), so they select the
// same units from the same random state; iterative pruning combines masks in
// a PruningContainer as PyTorch's does.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kPruneSource = R"PY(import torch
import torch._kiln as _kiln


def _raise(kind, message):
    _kiln.raise_error(kind, message)


def _is_integral(x):
    return isinstance(x, int)


def _check_amount(amount):
    if not isinstance(amount, (int, float)):
        _raise("TypeError", f"Invalid type for amount: {amount}. Must be int or float.")
    if (_is_integral(amount) and amount < 0) or (not _is_integral(amount) and (float(amount) > 1.0 or float(amount) < 0.0)):
        _raise("ValueError", f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count_to_prune(amount, size):
    return amount if _is_integral(amount) else round(amount * size)


def _check_count(amount, size):
    if _is_integral(amount) and amount > size:
        _raise("ValueError", f"amount={amount} should be smaller than the number of parameters to prune={size}")


def _check_structured(t):
    if len(t.shape) <= 1:
        _raise("ValueError", f"Structured pruning can only be applied to multidimensional tensors. Found tensor of shape {t.shape} with {len(t.shape)} dims")


def _check_dim(t, dim):
    if dim >= t.dim():
        _raise("IndexError", f"Invalid index {dim} for tensor of size {t.shape}")


def _channel_norm(t, n, dim):
    dims = list(range(t.dim()))
    if dim < 0:
        dim = dims[dim]
    dims.remove(dim)
    return torch.norm(t, p=n, dim=dims)


def _channel_index(t, dim, index):
    slc = [slice(None)] * len(t.shape)
    slc[dim] = index
    return tuple(slc)


class BasePruningMethod:
    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t, default_mask):
        _raise("NotImplementedError", "compute_mask")

    def apply_mask(self, module):
        if self._tensor_name is None:
            _raise("AssertionError", f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        # A method already pruning `name` is combined with the new one in a container.
        old_method = None
        found = []
        for key, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_method = hook
                found.append(key)
        if len(found) > 1:
            _raise("AssertionError", f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. Use a PruningContainer.")
        for key in found:
            del module._forward_pre_hooks[key]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old_method is not None:
            if isinstance(old_method, PruningContainer):
                old_method.add_pruning_method(method)
                method = old_method
            else:
                container = PruningContainer(old_method)
                container.add_pruning_method(method)
                method = container
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                _raise("AssertionError", f"importance_scores should have the same shape as parameter {name} of {module}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = torch.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().contiguous().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception as e:
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise e
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                _raise("AssertionError", "importance_scores should have the same shape as tensor t")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else torch.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        if self._tensor_name is None:
            _raise("AssertionError", f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    def __init__(self, *args):
        self._pruning_methods = tuple()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            _raise("TypeError", f"{type(method)} is not a BasePruningMethod subclass")
        elif method is not None and self._tensor_name != method._tensor_name:
            _raise("ValueError", f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods = self._pruning_methods + (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        # The newest method prunes only what the masks so far kept: unmasked
        # entries, channels not yet zeroed, or everything for a global method.
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                _raise("AttributeError", 'Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` defined.')
            n_dims = t.dim()
            dim = method.dim
            if dim < 0:
                dim = n_dims + dim
            if dim < 0:
                _raise("IndexError", f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = _channel_index(t, dim, keep_channel)
        elif method.PRUNING_TYPE == "global":
            slc = tuple([slice(None)] * len(t.shape))
        else:
            _raise("ValueError", f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial_mask = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super(Identity, cls).apply(module, name)


class _Unstructured(BasePruningMethod):
    # Prunes `amount` of the entries the mask still keeps: those _chosen picks.
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        size = t.nelement()
        count = _count_to_prune(self.amount, size)
        _check_count(count, size)
        mask = default_mask.contiguous().clone()
        if count != 0:
            mask.view(-1)[self._chosen(t, count)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    def _chosen(self, t, count):
        return torch.topk(torch.rand_like(t).view(-1), k=count).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super(RandomUnstructured, cls).apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    def _chosen(self, t, count):
        return torch.topk(torch.abs(t).view(-1), k=count, largest=False).indices

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super(L1Unstructured, cls).apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    # Prunes whole channels along `dim`: those _kept leaves out.
    PRUNING_TYPE = "structured"

    def compute_mask(self, t, default_mask):
        _check_structured(t)
        _check_dim(t, self.dim)
        size = t.shape[self.dim]
        count = _count_to_prune(self.amount, size)
        _check_count(count, size)
        kept = self._kept(t, size, count)
        if count == 0:
            return default_mask
        mask = torch.zeros_like(t)
        mask[_channel_index(t, self.dim, kept)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask


class RandomStructured(_Structured):
    def __init__(self, amount, dim=-1):
        _check_amount(amount)
        self.amount = amount
        self.dim = dim

    def _kept(self, t, size, count):
        # No draw when nothing is pruned, as in PyTorch.
        if count == 0:
            return None
        prob = torch.rand(size)
        return prob > torch.kthvalue(prob, k=count).values

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super(RandomStructured, cls).apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    def __init__(self, amount, n, dim=-1):
        _check_amount(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def _kept(self, t, size, count):
        return torch.topk(_channel_norm(t, self.n, self.dim), k=size - count, largest=True).indices

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super(LnStructured, cls).apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            _raise("AssertionError", "the mask's shape differs from the parameter's")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super(CustomFromMask, cls).apply(module, name, mask=mask)


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        _raise("TypeError", "global_unstructured(): importance_scores must be of type dict")
    scores = torch.nn.utils.parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name)) for (module, name) in parameters])
    default_mask = torch.nn.utils.parameters_to_vector(
        [getattr(module, name + "_mask", torch.ones_like(getattr(module, name))) for (module, name) in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        _raise("TypeError", f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method {pruning_method} of type {method.PRUNING_TYPE}')
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        count = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + count].view_as(param))
        pointer += count


def remove(module, name):
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    _raise("ValueError", f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    for _, submodule in module.named_modules():
        for _, hook in submodule._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
)PY";

void install_prune(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kPruneSource, "torch/nn/utils/prune.py");
  auto m = make<Module>("torch.nn.utils.prune");
  vm.add_module(m);
  Ref<Dict> globals = run_prelude(vm, code, m->name, "torch.nn.utils.prune");
  if (!globals) return;
  globals->for_each([&](const Value& k, const Value& v) {
    const std::string& name = as_str(k);
    if (name.starts_with("_") || name == "torch") return;
    if (v.is(ObjKind::Class)) v.as<Class>()->module = m->name;
    m->dict->set(k, v);
  });
  if (Ref<Module> utils = vm.module("torch.nn.utils")) utils->dict->set(str_value("prune"), Value(m));
}

}  // namespace

void install_prune_prelude(VM& vm) { vm.add_lazy_module("torch.nn.utils.prune", install_prune); }

}  // namespace kiln::py
