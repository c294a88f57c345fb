// torch.nn and torch.nn.init, written in Kiln's Python subset and run by the
// interpreter when a VM starts: what model code calls is then ordinary Python
// that capture traces through, and the forward methods call the same
// torch.nn.functional functions PyTorch's do, so graphs show the same ops.
// The sources follow PyTorch 2.11's torch/nn/init.py and torch/nn/modules/*.py
// (reprs, traversal orders, state_dict keys, RNG draw order, messages); the
// subset has no `raise`, so errors go through torch._kiln.raise_error.
#include <map>
#include <string>

#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"

namespace kiln::py {

extern const char* const kNnInitSource;
extern const char* const kNnLayersSource;
extern const char* const kNnMoreLayersSource;
extern const char* const kNnRnnSource;
extern const char* const kNnTransformerSource;
extern const char* const kNnVisionSource;
extern const char* const kNnEmbeddingBagSource;

namespace {

// The Module base class and the containers; the layers (nn_prelude_layers.cpp) follow in the same file.
const char* const kNnModuleSource = R"PY(# torch.nn.Module and the containers in Kiln's Python subset, after PyTorch
# 2.11's torch/nn/modules/module.py and container.py: the same attribute
# routing, traversal orders, state_dict keys, reprs and error messages.
import math
from collections import OrderedDict
import torch
import torch._kiln as _kiln
import torch.nn.functional as F
from torch.nn import init
from torch.nn import Parameter


def _raise(kind, message):
    _kiln.raise_error(kind, message)


def _addindent(s_, num_spaces):
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


def _typename(obj):
    return torch.typename(obj)


class _IncompatibleKeys:
    def __init__(self, missing_keys, unexpected_keys):
        self.missing_keys = missing_keys
        self.unexpected_keys = unexpected_keys

    def __getitem__(self, i):
        return [self.missing_keys, self.unexpected_keys][i]

    def __iter__(self):
        return iter([self.missing_keys, self.unexpected_keys])

    def __len__(self):
        return 2

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys!r}, unexpected_keys={self.unexpected_keys!r})"


class RemovableHandle:
    """What a register_*_hook call returns (torch.utils.hooks.RemovableHandle)."""
    next_id = [0]

    def __init__(self, hooks_dict, extra_dicts=()):
        self.hooks_dict_ref = hooks_dict
        self.extra_dicts_ref = tuple(extra_dicts)
        self.id = RemovableHandle.next_id[0]
        RemovableHandle.next_id[0] += 1

    def remove(self):
        if self.id in self.hooks_dict_ref:
            del self.hooks_dict_ref[self.id]
        for d in self.extra_dicts_ref:
            if self.id in d:
                del d[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.remove()


def _hooks(module, kind):
    d = _kiln.instance_dict(module)
    if kind not in d:
        d[kind] = OrderedDict()
    return d[kind]


def _add_hook(module, kind, hook):
    table = _hooks(module, kind)
    handle = RemovableHandle(table)
    table[handle.id] = hook
    return handle


_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
                "_forward_hooks_always_called", "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks",
                "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")


def _add_forward_hook(module, kind, hook, prepend, with_kwargs):
    # PyTorch's hook tables: insertion order, `prepend` puts a hook first;
    # kind + "_with_kwargs" holds the ids of hooks that take the kwargs too.
    table = _hooks(module, kind)
    kwargs_table = _hooks(module, kind + "_with_kwargs")
    handle = RemovableHandle(table, (kwargs_table,))
    if prepend:
        rest = list(table.items())
        table.clear()
        table[handle.id] = hook
        for k, v in rest:
            table[k] = v
    else:
        table[handle.id] = hook
    if with_kwargs:
        kwargs_table[handle.id] = True
    return handle


# torch._C._log_api_usage_once, which Module.__init__ calls: Dynamo records the
# call as a node of the graph when a module is made inside compiled code.
def _log_api_usage_once(event):
    torch._C._log_api_usage_once(event)


_log_api_usage_once.__kiln_graph_target__ = "torch._C._log_api_usage_once"


class Module:
    # state_dict's metadata records it; a module whose layout of state changed
    # (BatchNorm: 2) reads an older version in _load_from_state_dict.
    _version = 1

    def __init__(self, *args, **kwargs):
        _log_api_usage_once("python.nn_module")
        if args or kwargs:
            _raise("TypeError", f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were given")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", {})
        object.__setattr__(self, "_modules", {})

    def forward(self, *args, **kwargs):
        _raise("NotImplementedError", f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        d = _kiln.instance_dict(self)
        pre = d.get("_forward_pre_hooks")
        post = d.get("_forward_hooks")
        if not pre and not post:
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(pre, post, args, kwargs)

    def _call_with_hooks(self, pre, post, args, kwargs):
        # PyTorch 2.11's _call_impl: pre-hooks may replace the arguments, hooks the result.
        if pre:
            with_kwargs = _hooks(self, "_forward_pre_hooks_with_kwargs")
            for hook_id, hook in list(pre.items()):
                if hook_id in with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if isinstance(result, tuple) and len(result) == 2:
                            args, kwargs = result
                        else:
                            _raise("RuntimeError", f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got {result}.")
                else:
                    result = hook(self, args)
                    if result is not None:
                        if not isinstance(result, tuple):
                            result = (result,)
                        args = result
        output = self.forward(*args, **kwargs)
        if post:
            with_kwargs = _hooks(self, "_forward_hooks_with_kwargs")
            for hook_id, hook in list(post.items()):
                if hook_id in with_kwargs:
                    result = hook(self, args, kwargs, output)
                else:
                    result = hook(self, args, output)
                if result is not None:
                    output = result
        return output

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        return _add_forward_hook(self, "_forward_pre_hooks", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        if always_call:
            _kiln.raise_unsupported("Module.register_forward_hook(always_call=True) (a hook run when forward raises) is not supported by Kiln")
        return _add_forward_hook(self, "_forward_hooks", hook, prepend, with_kwargs)

    def register_full_backward_hook(self, hook, prepend=False):
        _kiln.raise_unsupported("Module.register_full_backward_hook: module backward hooks are not supported by Kiln")

    def register_full_backward_pre_hook(self, hook, prepend=False):
        _kiln.raise_unsupported("Module.register_full_backward_pre_hook: module backward hooks are not supported by Kiln")

    def register_backward_hook(self, hook):
        _kiln.raise_unsupported("Module.register_backward_hook: module backward hooks are not supported by Kiln")

    # ---- attributes ----

    def __getattr__(self, name):
        d = _kiln.instance_dict(self)
        if "_parameters" in d:
            params = d["_parameters"]
            if name in params:
                return params[name]
        if "_buffers" in d:
            buffers = d["_buffers"]
            if name in buffers:
                return buffers[name]
        if "_modules" in d:
            modules = d["_modules"]
            if name in modules:
                return modules[name]
        if name in _HOOK_TABLES:
            # PyTorch's modules carry these tables from __init__; Kiln makes them on first use.
            return _hooks(self, name)
        _raise("AttributeError", f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = _kiln.instance_dict(self)
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                _raise("AttributeError", "cannot assign parameters before Module.__init__() call")
            self._remove_attr(name, d, False, True, True)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                _raise("TypeError", f"cannot assign '{_typename(value)}' as parameter '{name}' (torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                _raise("AttributeError", "cannot assign module before Module.__init__() call")
            self._remove_attr(name, d, True, True, False)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                _raise("TypeError", f"cannot assign '{_typename(value)}' as child module '{name}' (torch.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, torch.Tensor):
                _raise("TypeError", f"cannot assign '{_typename(value)}' as buffer '{name}' (torch.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        d = _kiln.instance_dict(self)
        if name in d.get("_parameters", {}):
            d["_parameters"].pop(name)
        elif name in d.get("_buffers", {}):
            d["_buffers"].pop(name)
            d["_non_persistent_buffers_set"].pop(name, None)
        elif name in d.get("_modules", {}):
            d["_modules"].pop(name)
        elif name in d:
            d.pop(name)
        else:
            _raise("AttributeError", f"'{type(self).__name__}' object has no attribute '{name}'")

    def _remove_attr(self, name, d, params, buffers, modules):
        if name in d:
            d.pop(name)
        if params and name in d["_parameters"]:
            d["_parameters"].pop(name)
        if buffers:
            if name in d["_buffers"]:
                d["_buffers"].pop(name)
            if name in d["_non_persistent_buffers_set"]:
                d["_non_persistent_buffers_set"].pop(name)
        if modules and name in d["_modules"]:
            d["_modules"].pop(name)

    def _check_new_name(self, kind, name, table):
        if not isinstance(name, str):
            _raise("TypeError", f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            _raise("KeyError", repr(f'{kind} name can\'t contain ".", got: {name}'))
        if name == "":
            _raise("KeyError", repr(f'{kind} name can\'t be empty string ""'))
        if hasattr(self, name) and name not in table:
            _raise("KeyError", repr(f"attribute '{name}' already exists"))

    def register_parameter(self, name, param):
        d = _kiln.instance_dict(self)
        if "_parameters" not in d:
            _raise("AttributeError", "cannot assign parameter before Module.__init__() call")
        self._check_new_name("parameter", name, d["_parameters"])
        if param is not None and not isinstance(param, Parameter):
            _raise("TypeError", f"cannot assign '{_typename(param)}' object to parameter '{name}' (torch.nn.Parameter or None required)")
        d["_parameters"][name] = param

    def register_buffer(self, name, tensor, persistent=True):
        d = _kiln.instance_dict(self)
        if "_buffers" not in d:
            _raise("AttributeError", "cannot assign buffer before Module.__init__() call")
        if tensor is not None and not isinstance(tensor, torch.Tensor):
            _raise("TypeError", f"cannot assign '{_typename(tensor)}' object to buffer '{name}' (torch Tensor or None required)")
        self._check_new_name("buffer", name, d["_buffers"])
        d["_buffers"][name] = tensor
        if persistent:
            if name in d["_non_persistent_buffers_set"]:
                d["_non_persistent_buffers_set"].pop(name)
        else:
            d["_non_persistent_buffers_set"][name] = True

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            _raise("TypeError", f"{_typename(module)} is not a Module subclass")
        self._check_new_name("module", name, self._modules)
        self._modules[name] = module

    def register_module(self, name, module):
        self.add_module(name, module)

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if item not in mod._modules:
                _raise("AttributeError", mod._get_name() + " has no attribute `" + item + "`")
            mod = mod._modules[item]
        return mod

    # ---- traversal ----

    def _collect_modules(self, memo, prefix, remove_duplicate, out):
        if remove_duplicate:
            key = _kiln.identity(self)
            if key in memo:
                return
            memo[key] = True
        out.append((prefix, self))
        for name, module in self._modules.items():
            if module is None:
                continue
            module._collect_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate, out)

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        out = []
        self._collect_modules({} if memo is None else memo, prefix, remove_duplicate, out)
        return iter(out)

    def modules(self):
        return iter([m for _, m in self.named_modules()])

    def named_children(self):
        out = []
        memo = {}
        for name, module in self._modules.items():
            if module is not None and _kiln.identity(module) not in memo:
                memo[_kiln.identity(module)] = True
                out.append((name, module))
        return iter(out)

    def children(self):
        return iter([m for _, m in self.named_children()])

    def _named_members(self, table, prefix, recurse, remove_duplicate):
        memo = {}
        out = []
        if recurse:
            modules = list(self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate))
        else:
            modules = [(prefix, self)]
        for module_prefix, module in modules:
            members = _kiln.instance_dict(module)[table]
            for k, v in members.items():
                if v is None:
                    continue
                if remove_duplicate:
                    key = _kiln.identity(v)
                    if key in memo:
                        continue
                    memo[key] = True
                out.append((module_prefix + ("." if module_prefix else "") + k, v))
        return out

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return iter(self._named_members("_parameters", prefix, recurse, remove_duplicate))

    def parameters(self, recurse=True):
        return iter([p for _, p in self._named_members("_parameters", "", recurse, True)])

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return iter(self._named_members("_buffers", prefix, recurse, remove_duplicate))

    def buffers(self, recurse=True):
        return iter([b for _, b in self._named_members("_buffers", "", recurse, True)])

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- modes ----

    def train(self, mode=True):
        if not isinstance(mode, bool):
            _raise("ValueError", "training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    # ---- dtype and device ----

    def _apply(self, fn):
        for module in self.children():
            module._apply(fn)
        for key, param in self._parameters.items():
            if param is not None:
                param.data = fn(param.data)
                if param.grad is not None:
                    param.grad = fn(param.grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def _convert_floats(self, dtype):
        def convert(t):
            if t.is_floating_point():
                return t.to(dtype)
            return t

        return self._apply(convert)

    def to(self, *args, **kwargs):
        dtype = kwargs.get("dtype")
        device = kwargs.get("device")
        for a in args:
            if isinstance(a, torch.dtype):
                dtype = a
            elif isinstance(a, torch.Tensor):
                dtype = a.dtype
            else:
                device = a
        if dtype is not None and not dtype.is_floating_point:
            _raise("TypeError", f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}")
        if device is not None:
            self._apply(lambda t: t.to(device))
        if dtype is None:
            return self
        return self._convert_floats(dtype)

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def share_memory(self):
        return self._apply(lambda t: t.share_memory_())

    def float(self):
        return self._convert_floats(torch.float32)

    def double(self):
        return self._convert_floats(torch.float64)

    def half(self):
        return self._convert_floats(torch.float16)

    def bfloat16(self):
        return self._convert_floats(torch.bfloat16)

    # ---- state_dict ----

    # ---- state_dict hooks (PyTorch 2.11's order: pre-hooks before a module's own entries) ----

    def register_state_dict_pre_hook(self, hook):
        return _add_hook(self, "_state_dict_pre_hooks", hook)

    def _register_state_dict_hook(self, hook):
        return _add_hook(self, "_state_dict_hooks", hook)

    def register_state_dict_post_hook(self, hook):
        def post(module, state_dict, prefix, local_metadata):
            hook(module, state_dict, prefix, local_metadata)
        return _add_hook(self, "_state_dict_hooks", post)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        if with_module:
            module = self
            return _add_hook(self, "_load_state_dict_pre_hooks", lambda *a: hook(module, *a))
        return _add_hook(self, "_load_state_dict_pre_hooks", hook)

    def register_load_state_dict_pre_hook(self, hook):
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        return _add_hook(self, "_load_state_dict_post_hooks", hook)

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        for hook in list(_hooks(self, "_state_dict_pre_hooks").values()):
            hook(self, prefix, keep_vars)
        if destination is None:
            destination = OrderedDict()
            _kiln.state_dict_metadata(destination, OrderedDict())
        metadata = _kiln.state_dict_metadata(destination)
        if metadata is not None:
            metadata[prefix[:-1]] = {"version": type(self)._version}
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in list(_hooks(self, "_state_dict_hooks").values()):
            result = hook(self, destination, prefix, {} if metadata is None else metadata[prefix[:-1]])
            if result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        for hook in list(_hooks(self, "_load_state_dict_pre_hooks").values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        assign = local_metadata.get("assign_to_params_buffers", False)
        local_state = {}
        for name, param in self._parameters.items():
            if param is not None:
                local_state[name] = param
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                local_state[name] = buf
        for name, param in local_state.items():
            key = prefix + name
            if key in state_dict:
                input_param = state_dict[key]
                if not isinstance(input_param, torch.Tensor):
                    error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like object from checkpoint but received {type(input_param)}')
                    continue
                if input_param.shape != param.shape:
                    error_msgs.append(f"size mismatch for {key}: copying a param with shape {input_param.shape} from checkpoint, the shape in current model is {param.shape}.")
                    continue
                if assign:
                    # The state dict's tensor itself becomes the parameter (its dtype and storage), keeping
                    # the module's requires_grad.
                    if isinstance(param, Parameter):
                        if not isinstance(input_param, Parameter):
                            input_param = Parameter(input_param, requires_grad=param.requires_grad)
                        else:
                            input_param.requires_grad_(param.requires_grad)
                    setattr(self, name, input_param)
                else:
                    with torch.no_grad():
                        param.copy_(input_param)
            else:
                missing_keys.append(key)
        for key in state_dict.keys():
            if key.startswith(prefix):
                rest = key[len(prefix):]
                head = rest.split(".")[0]
                if "." in rest:
                    if head not in self._modules:
                        unexpected_keys.append(key)
                elif head not in local_state:
                    unexpected_keys.append(key)

    def _load_recursive(self, state_dict, prefix, missing_keys, unexpected_keys, error_msgs, metadata=None, assign=False):
        # PyTorch's signature, which modules overriding it (torchvision's ViT) call back with. Each child
        # sees the entries under its prefix in a dict of its own, as in PyTorch, so that what a
        # load-state-dict pre-hook changes stays with that module and its children.
        local_metadata = dict((metadata or {}).get(prefix[:-1], {}))
        if assign:
            local_metadata["assign_to_params_buffers"] = True
        self._load_from_state_dict(state_dict, prefix, local_metadata, True, missing_keys, unexpected_keys,
                                   error_msgs)
        for name, child in self._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                child_state = {k: v for k, v in state_dict.items() if k.startswith(child_prefix)}
                child._load_recursive(child_state, child_prefix, missing_keys, unexpected_keys, error_msgs, metadata, assign)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not isinstance(state_dict, dict):
            _raise("TypeError", f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys = []
        unexpected_keys = []
        error_msgs = []
        # The versions state_dict() recorded (none for a dict made by hand, as in PyTorch).
        metadata = _kiln.state_dict_metadata(state_dict)
        self._load_recursive(dict(state_dict), "", missing_keys, unexpected_keys, error_msgs, metadata, assign)
        incompatible = _IncompatibleKeys(missing_keys, unexpected_keys)
        for module in self.modules():
            for hook in list(_hooks(module, "_load_state_dict_post_hooks").values()):
                if hook(module, incompatible) is not None:
                    _raise("RuntimeError", "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                           "expected to return new values, if incompatible_keys need to be modified, it should "
                           "be done inplace.")
        if strict:
            if len(unexpected_keys) > 0:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: " + ", ".join([f'"{k}"' for k in unexpected_keys]) + ". ")
            if len(missing_keys) > 0:
                error_msgs.insert(0, "Missing key(s) in state_dict: " + ", ".join([f'"{k}"' for k in missing_keys]) + ". ")
        if len(error_msgs) > 0:
            _raise("RuntimeError", f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(error_msgs))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ---- repr ----

    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"


# ---- containers ----

def _index_of(n, idx, what):
    if not (-n <= idx < n):
        _raise("IndexError", f"index {idx} is out of range")
    if idx < 0:
        idx += n
    return idx


class Sequential(Module):
    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], dict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(dict(items[idx]))
        return items[_index_of(len(items), idx, "Sequential")][1]

    def __setitem__(self, idx, module):
        key = list(self._modules.keys())[_index_of(len(self._modules), idx, "Sequential")]
        setattr(self, key, module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.values()))

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, sequential):
        for layer in sequential:
            self.append(layer)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        values = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(values[idx])
        return values[_index_of(len(values), idx, "ModuleList")]

    def __setitem__(self, idx, module):
        idx = _index_of(len(self._modules), idx, "ModuleList")
        setattr(self, str(idx), module)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.values()))

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self

    def insert(self, index, module):
        values = list(self._modules.values())
        values.insert(index, module)
        object.__setattr__(self, "_modules", {})
        for i, m in enumerate(values):
            self._modules[str(i)] = m

    def __repr__(self):
        reprs = [repr(item) for item in self]
        if len(reprs) == 0:
            return self._get_name() + "()"
        starts = [0]
        ends = [0]
        blocks = [reprs[0]]
        for i in range(1, len(reprs)):
            if reprs[i] == blocks[-1]:
                ends[-1] = i
                continue
            starts.append(i)
            ends.append(i)
            blocks.append(reprs[i])
        lines = []
        for j in range(len(blocks)):
            local_repr = f"({starts[j]}): {blocks[j]}"
            if starts[j] != ends[j]:
                local_repr = f"({starts[j]}-{ends[j]}): {ends[j] - starts[j] + 1} x {blocks[j]}"
            lines.append(_addindent(local_repr, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def forward(self, *args, **kwargs):
        _raise("NotImplementedError", f'Module [{type(self).__name__}] is missing the required "forward" function')


class ModuleDict(Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules.keys()))

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        v = self._modules[key]
        self._modules.pop(key)
        return v

    def update(self, modules):
        if isinstance(modules, dict) or isinstance(modules, ModuleDict):
            for key, module in modules.items():
                self[key] = module
        else:
            for key, module in modules:
                self[key] = module

    def forward(self, *args, **kwargs):
        _raise("NotImplementedError", f'Module [{type(self).__name__}] is missing the required "forward" function')


class _OptimizedModule(Module):
    # What torch.compile(module) returns (torch._dynamo.eval_frame.OptimizedModule):
    # the module is its child `_orig_mod`, so state_dict keys start "_orig_mod.";
    # calls run the compiled forward; other attributes are the module's.
    def __init__(self, mod, compiled_forward):
        super().__init__()
        self._orig_mod = mod
        d = _kiln.instance_dict(self)
        d.pop("training")
        d["_compiled_forward"] = compiled_forward

    def forward(self, *args, **kwargs):
        return _kiln.instance_dict(self)["_compiled_forward"](*args, **kwargs)

    def __getattr__(self, name):
        orig = _kiln.instance_dict(self)["_modules"]["_orig_mod"]
        if name == "_orig_mod":
            return orig
        return getattr(orig, name)

    # As torch 2.x: a name of the class (forward, train) or of the wrapper's own
    # stays on the wrapper; any other goes to the module, so `model.hidden = ...`
    # in a training loop is what the compiled forward reads.
    _opt_mod_attributes = {"_orig_mod", "dynamo_ctx", "_torchdynamo_orig_callable", "get_compiler_config",
                           "forward", "_forward", "__dict__", "named_children_walk", "_super_module_initialized",
                           "_compiled_forward"}

    def _keeps(self, name):
        modules = _kiln.instance_dict(self).get("_modules")
        return (modules is None or "_orig_mod" not in modules or hasattr(type(self), name)
                or name in _OptimizedModule._opt_mod_attributes)

    def __setattr__(self, name, value):
        if self._keeps(name):
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if self._keeps(name):
            return super().__delattr__(name)
        return delattr(self._orig_mod, name)
)PY";

// Where PyTorch defines each class: shown by repr(cls) and type(m).__module__.
const std::map<std::string, std::string, std::less<>>& class_modules() {
  static const std::map<std::string, std::string, std::less<>> m = {
      {"Module", "torch.nn.modules.module"},         {"Sequential", "torch.nn.modules.container"},
      {"ModuleList", "torch.nn.modules.container"},  {"ModuleDict", "torch.nn.modules.container"},
      {"Identity", "torch.nn.modules.linear"},       {"Linear", "torch.nn.modules.linear"},
      {"DataParallel", "torch.nn.parallel.data_parallel"},
      {"Conv1d", "torch.nn.modules.conv"},           {"Conv2d", "torch.nn.modules.conv"},
      {"BatchNorm1d", "torch.nn.modules.batchnorm"}, {"BatchNorm2d", "torch.nn.modules.batchnorm"},
      {"LayerNorm", "torch.nn.modules.normalization"}, {"Embedding", "torch.nn.modules.sparse"},
      {"Dropout", "torch.nn.modules.dropout"},       {"MaxPool2d", "torch.nn.modules.pooling"},
      {"_DropoutNd", "torch.nn.modules.dropout"},    {"Dropout1d", "torch.nn.modules.dropout"},
      {"Dropout2d", "torch.nn.modules.dropout"},     {"Dropout3d", "torch.nn.modules.dropout"},
      {"AvgPool2d", "torch.nn.modules.pooling"},     {"AdaptiveAvgPool2d", "torch.nn.modules.pooling"},
      {"Flatten", "torch.nn.modules.flatten"},       {"MSELoss", "torch.nn.modules.loss"},
      {"L1Loss", "torch.nn.modules.loss"},           {"CrossEntropyLoss", "torch.nn.modules.loss"},
      {"NLLLoss", "torch.nn.modules.loss"},          {"ReLU", "torch.nn.modules.activation"},
      {"LeakyReLU", "torch.nn.modules.activation"},  {"PReLU", "torch.nn.modules.activation"},  {"GELU", "torch.nn.modules.activation"},
      {"Hardtanh", "torch.nn.modules.activation"},   {"ReLU6", "torch.nn.modules.activation"},
      {"SiLU", "torch.nn.modules.activation"},       {"Tanh", "torch.nn.modules.activation"},
      {"Sigmoid", "torch.nn.modules.activation"},    {"Softmax", "torch.nn.modules.activation"},
      {"LogSoftmax", "torch.nn.modules.activation"},
      {"Threshold", "torch.nn.modules.activation"}, {"RReLU", "torch.nn.modules.activation"}, {"Hardsigmoid", "torch.nn.modules.activation"},
      {"Hardswish", "torch.nn.modules.activation"}, {"Mish", "torch.nn.modules.activation"}, {"ELU", "torch.nn.modules.activation"},
      {"CELU", "torch.nn.modules.activation"}, {"SELU", "torch.nn.modules.activation"}, {"GLU", "torch.nn.modules.activation"},
      {"Hardshrink", "torch.nn.modules.activation"}, {"LogSigmoid", "torch.nn.modules.activation"}, {"Softplus", "torch.nn.modules.activation"},
      {"Softshrink", "torch.nn.modules.activation"}, {"Softsign", "torch.nn.modules.activation"}, {"Tanhshrink", "torch.nn.modules.activation"},
      {"Softmin", "torch.nn.modules.activation"}, {"Softmax2d", "torch.nn.modules.activation"},
      {"GroupNorm", "torch.nn.modules.normalization"},
      {"InstanceNorm1d", "torch.nn.modules.instancenorm"}, {"InstanceNorm2d", "torch.nn.modules.instancenorm"},
      {"InstanceNorm3d", "torch.nn.modules.instancenorm"},
      {"ConvTranspose1d", "torch.nn.modules.conv"},  {"ConvTranspose2d", "torch.nn.modules.conv"},
      {"ConvTranspose3d", "torch.nn.modules.conv"},  {"UpsamplingNearest2d", "torch.nn.modules.upsampling"},
      {"UpsamplingBilinear2d", "torch.nn.modules.upsampling"},
      {"PixelShuffle", "torch.nn.modules.pixelshuffle"}, {"PixelUnshuffle", "torch.nn.modules.pixelshuffle"},
      {"ConstantPad1d", "torch.nn.modules.padding"}, {"ConstantPad2d", "torch.nn.modules.padding"},
      {"ConstantPad3d", "torch.nn.modules.padding"}, {"ZeroPad1d", "torch.nn.modules.padding"},
      {"ZeroPad2d", "torch.nn.modules.padding"},     {"ZeroPad3d", "torch.nn.modules.padding"},
      {"ReflectionPad1d", "torch.nn.modules.padding"}, {"ReflectionPad2d", "torch.nn.modules.padding"},
      {"ReflectionPad3d", "torch.nn.modules.padding"}, {"ReplicationPad1d", "torch.nn.modules.padding"},
      {"ReplicationPad2d", "torch.nn.modules.padding"}, {"ReplicationPad3d", "torch.nn.modules.padding"},
      {"Upsample", "torch.nn.modules.upsampling"},   {"BCELoss", "torch.nn.modules.loss"}, {"KLDivLoss", "torch.nn.modules.loss"},
      {"BCEWithLogitsLoss", "torch.nn.modules.loss"}, {"RNNBase", "torch.nn.modules.rnn"},
      {"RNN", "torch.nn.modules.rnn"},               {"LSTM", "torch.nn.modules.rnn"},
      {"GRU", "torch.nn.modules.rnn"},               {"RNNCellBase", "torch.nn.modules.rnn"},
      {"RNNCell", "torch.nn.modules.rnn"},           {"LSTMCell", "torch.nn.modules.rnn"},
      {"GRUCell", "torch.nn.modules.rnn"},
      {"NonDynamicallyQuantizableLinear", "torch.nn.modules.linear"},
      {"MultiheadAttention", "torch.nn.modules.activation"},
      {"TransformerEncoderLayer", "torch.nn.modules.transformer"},
      {"TransformerDecoderLayer", "torch.nn.modules.transformer"},
      {"TransformerEncoder", "torch.nn.modules.transformer"},
      {"TransformerDecoder", "torch.nn.modules.transformer"}, {"Transformer", "torch.nn.modules.transformer"}};
  return m;
}

// Compiles `source` once per process (code objects are immutable and shared).
const Expected<CodePtr>& compiled(const char* which) {
  static const Expected<CodePtr> init = compile_module(kNnInitSource, "torch/nn/init.py");
  static const Expected<CodePtr> modules =
      compile_module(std::string(kNnModuleSource) + kNnLayersSource + kNnMoreLayersSource + kNnRnnSource +
                         kNnTransformerSource + kNnVisionSource + kNnEmbeddingBagSource,
                     "torch/nn/modules.py");
  return std::string_view(which) == "init" ? init : modules;
}

// Runs one prelude file in a fresh namespace and copies the functions and
// classes it defines into `target`. A failure is Kiln's bug; it is reported on
// the VM's error stream so that programs not using torch.nn still run.
bool run_into(VM& vm, const char* which, const Ref<Module>& target) {
  Ref<Dict> globals = run_prelude(vm, compiled(which), target->name, "torch.nn");
  if (!globals) return false;
  globals->for_each([&](const Value& k, const Value& v) {
    const std::string& name = as_str(k);
    if (name.starts_with("__")) return;
    if (v.is(ObjKind::Class)) {
      Class* cls = v.as<Class>();
      if (cls->builtin >= 0 || cls->module != target->name) return;  // imported (Parameter), not defined here
      auto it = class_modules().find(name);
      cls->module = it != class_modules().end() ? it->second : "torch.nn.modules.module";
      if (name == "_OptimizedModule") {
        cls->name = cls->qualname = "OptimizedModule";
        cls->module = "torch._dynamo.eval_frame";
        if (Ref<Module> dynamo = vm.module("torch._dynamo")) dynamo->dict->set(k, v);
      }
      if (!name.starts_with("_")) target->dict->set(k, v);
    } else if (v.is(ObjKind::Function)) {
      if (!name.starts_with("_") || target->name == "torch.nn.init") target->dict->set(k, v);
    }
  });
  if (target->name == "torch.nn") {
    auto parallel = make<Module>("torch.nn.parallel");
    vm.add_module(parallel);
    if (const Value* dp = globals->find_str("DataParallel")) parallel->dict->set(str_value("DataParallel"), *dp);
    if (const Value* f = globals->find_str("_data_parallel")) parallel->dict->set(str_value("data_parallel"), *f);
    // Imported by training scripts for an optional multi-process path: the
    // class exists (isinstance works); making one is refused.
    auto ddp = make<Class>("DistributedDataParallel", Ref<Class>());
    ddp->module = "torch.nn.parallel.distributed";
    set_attr_builtin(ddp->dict, "DistributedDataParallel.__init__", "__init__", [](VM&, const CallArgs&) -> Value {
      throw_unsupported("torch.nn.parallel.DistributedDataParallel (multi-process training is not modelled; Kiln runs one process)");
    });
    parallel->dict->set(str_value("DistributedDataParallel"), Value(ddp));
  }
  // torch.nn.utils.rnn: packed sequences live beside the recurrent layers that take them.
  if (target->name == "torch.nn") {
    auto rnn_utils = make<Module>("torch.nn.utils.rnn");
    vm.add_module(rnn_utils);
    if (const Value* packed = globals->find_str("_PackedSequence"); packed && packed->is(ObjKind::Class)) {
      Class* cls = packed->as<Class>();
      cls->name = cls->qualname = "PackedSequence";
      cls->module = "torch.nn.utils.rnn";
      rnn_utils->dict->set(str_value("PackedSequence"), *packed);
    }
    for (const char* name : {"pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "pack_sequence",
                             "invert_permutation"})
      if (const Value* f = globals->find_str(std::string("_") + name)) rnn_utils->dict->set(str_value(name), *f);
  }
  // The recurrent cells are ATen builtins in PyTorch, reached as torch.lstm_cell
  // or through torch._VF (what nn.LSTMCell calls, and what copies of it call).
  if (target->name == "torch.nn")
    if (Ref<Module> torch = vm.module("torch")) {
      auto vf = make<Module>("torch._VF");
      vm.add_module(vf);
      for (const char* name : {"lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"})
        if (const Value* f = globals->find_str(std::string("_") + name)) {
          vf->dict->set(str_value(name), *f);
          torch->dict->set(str_value(name), *f);
        }
      torch->dict->set(str_value("_VF"), Value(vf));
    }
  // PyTorch's functional.py defines these; here they live beside the modules that call them.
  if (target->name == "torch.nn")
    if (Ref<Module> functional = vm.module("torch.nn.functional"))
      for (const char* name : {"multi_head_attention_forward", "_canonical_mask", "_none_or_dtype", "affine_grid",
                               "grid_sample", "embedding_bag", "dropout2d"}) {
        std::string local = name[0] == '_' ? name : std::string("_") + name;
        if (const Value* f = globals->find_str(local)) functional->dict->set(str_value(name), *f);
      }
  return true;
}

}  // namespace

void install_optim_prelude(VM& vm);  // optim_prelude.cpp

Ref<Dict> run_prelude(VM& vm, const Expected<CodePtr>& code, const std::string& module_name, const std::string& what) {
  if (!code.ok()) {
    vm.write_err("internal error: Kiln's " + what + " prelude does not compile: " + code.status().to_string() + "\n");
    return {};
  }
  auto globals = make<Dict>();
  globals->set(str_value("__name__"), str_value(module_name));
  Frame frame;
  frame.code = code.value().get();
  frame.consts = vm.consts_of(code.value()).get();
  frame.globals = globals;
  frame.ns = globals;
  try {
    vm.run_frame(frame);
  } catch (PyError& e) {
    vm.write_err("internal error: Kiln's " + what + " prelude failed: " + e.type() + ": " + e.message() + "\n");
    return {};
  }
  return globals;
}

void install_nn_prelude(VM& vm) {
  if (run_into(vm, "init", vm.module("torch.nn.init"))) run_into(vm, "modules", vm.module("torch.nn"));
  install_optim_prelude(vm);
}

}  // namespace kiln::py
