// torch.jit.script as a check of each call's arguments against the
// TorchScript types of the function's annotations (unannotated: Tensor), with
// PyTorch's message, before the function runs as Python; the body is not
// compiled, so code TorchScript would reject still runs.
// torch.jit.trace as PyTorch runs it: one recording run of the function, then
// (check_trace) a second recording, a run of the trace, a run of the Python
// function and a run of the second trace on clones of the inputs, in that
// order, so that a program drawing random numbers afterwards sees the same
// generator state as under PyTorch. The recording itself is capture's
// (compiler/capture/eager_trace.cpp, torch.jit._kiln_record); TorchScript's
// IR is not modelled, so .graph and .code are refused by name.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

Value jit_annotations(VM& vm, const CallArgs& a);  // jit_annotations.cpp

namespace {

const char* const kJitSource = R"PY(import _kiln_std
import torch
import warnings

_DATAFLOW = (" might cause the trace to be incorrect. We can't record the data flow of Python values, so this "
             "value will be treated as a constant in the future. This means that the trace might not generalize "
             "to other inputs!")
_tracing = [False]


class TracerWarning(Warning):
    pass


class TracingCheckError(Exception):
    pass


def is_tracing():
    return _tracing[0]


def _kiln_tracer_warning(what):
    warnings.warn("Converting a tensor to a Python " + what + _DATAFLOW, TracerWarning, stacklevel=2)


def _refuse_ir(what):
    _kiln_std.refuse(what + ": TorchScript's IR is not modelled by Kiln (the trace runs as recorded torch "
                              "calls; torch.compile's graphs are what Kiln shows)")


def _type_name(v):
    if isinstance(v, torch.Tensor):
        return "Tensor"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, (tuple, list)):
        return ("Tuple[" if isinstance(v, tuple) else "List[") + ", ".join([_type_name(x) for x in v]) + "]"
    return type(v).__name__


def _make_tuple(example_inputs):
    if isinstance(example_inputs, (torch.Tensor, dict)):
        return (example_inputs,)
    if not isinstance(example_inputs, tuple):
        return tuple(example_inputs)
    return example_inputs


def _positional_names(fn, count):
    import inspect
    try:
        params = list(inspect.signature(fn).parameters.values())
    except Exception:
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    while len(names) < count:
        names.append("input_" + str(len(names)))
    return names[:count]


def _record(fn, inputs, names):
    _tracing[0] = True
    try:
        return _kiln_record(fn, inputs, names)
    finally:
        _tracing[0] = False


def _clone_inputs(inputs):
    out = []
    for a in inputs:
        if isinstance(a, torch.Tensor):
            out.append(a.detach().clone().requires_grad_(a.requires_grad))
        else:
            out.append(a)
    return tuple(out)


def _tensor_outputs(v):
    outs = v if isinstance(v, tuple) else (v,)
    return [o for o in outs if isinstance(o, torch.Tensor)]


def _atol(a, b):
    def one(t):
        if t.dtype == torch.float64:
            return 1e-07
        if t.is_floating_point():
            return 1e-05
        return 0.0
    return max(one(a), one(b))


class _Check:
    def __init__(self, random_ops):
        self.random_ops = random_ops
        self.warned = False

    def maybe_warn_nondeterministic(self):
        if self.warned:
            return
        self.warned = True
        if self.random_ops:
            warnings.warn("Trace had nondeterministic nodes. Did you forget call .eval() on your model? Nodes:\n" +
                          "\n".join(["\t" + op for op in self.random_ops][:20]) +
                          "\nThis may cause errors in trace checking. To disable trace checking, pass "
                          "check_trace=False to torch.jit.trace()", TracerWarning, stacklevel=5)

    def compare_outputs(self, original, reference, match_what, check_tolerance):
        all_ok = True
        for i in range(min(len(original), len(reference))):
            orig, ref = original[i], reference[i]
            close = orig.shape == ref.shape and torch.allclose(orig.double(), ref.double(), rtol=check_tolerance,
                                                               atol=_atol(orig, ref), equal_nan=True)
            if not close:
                self.maybe_warn_nondeterministic()
                if orig.shape != ref.shape:
                    detail = "The values for attribute 'shape' do not match: " + str(orig.shape) + " != " + str(ref.shape) + "."
                else:
                    diff = (orig.double() - ref.double()).abs()
                    detail = ("Tensor-likes are not close!\n\nGreatest absolute difference: " + str(diff.max().item()))
                warnings.warn("Output nr " + str(i + 1) + ". of the traced function does not match the corresponding "
                              "output of the " + match_what + ". Detailed error:\n" + detail, TracerWarning, stacklevel=4)
                all_ok = False
        return all_ok


def _check_trace(check_inputs, func, names, run, ops, random_ops, check_tolerance):
    with torch.no_grad():
        for inputs in check_inputs:
            inputs = _make_tuple(inputs)
            check_result, check_run, check_ops, _ = _record(func, _clone_inputs(inputs), names)
            check = _Check(random_ops)
            traced_outs = _tensor_outputs(run(*_clone_inputs(inputs)))
            fn_outs = _tensor_outputs(func(*_clone_inputs(inputs)))
            if check.compare_outputs(traced_outs, fn_outs, "Python function", check_tolerance):
                check_outs = _tensor_outputs(check_run(*_clone_inputs(inputs)))
                check.compare_outputs(traced_outs, check_outs, "repeated trace", check_tolerance)
            if list(ops) != list(check_ops):
                raise TracingCheckError("Tracing failed sanity checks!\nERROR: Graphs differed across invocations!\n"
                                        "\tfirst trace:  " + ", ".join(ops) + "\n\tsecond trace: " + ", ".join(check_ops))


class ScriptFunction:
    def __init__(self, fn, run, names):
        self._kiln_fn = fn
        self._kiln_run = run
        self._kiln_names = names
        self.__name__ = getattr(fn, "__name__", "forward")
        self.name = self.__name__

    def __call__(self, *args, **kwargs):
        if kwargs:
            args = list(args)
            for n in self._kiln_names[len(args):]:
                if n not in kwargs:
                    raise TypeError(self.name + "() is missing value for argument '" + n + "'.")
                args.append(kwargs.pop(n))
            if kwargs:
                raise TypeError(self.name + "() got an unexpected keyword argument '" + list(kwargs)[0] + "'")
        return self._kiln_run(*args)

    @property
    def graph(self):
        _refuse_ir("ScriptFunction.graph")

    @property
    def inlined_graph(self):
        _refuse_ir("ScriptFunction.inlined_graph")

    @property
    def code(self):
        _refuse_ir("ScriptFunction.code")

    def save(self, *args, **kwargs):
        _kiln_std.refuse("torch.jit.save (it writes a file)")


def _module_repr(m, head=None):
    # A traced module prints as its class (head None), a scripted one as RecursiveScriptModule.
    name = type(m).__name__
    shown = head or name
    children = list(m.named_children())
    if not children:
        return shown + "(original_name=" + name + ")"
    lines = [shown + "(", "  original_name=" + name]
    for child_name, child in children:
        lines.append("  (" + child_name + "): " + _module_repr(child, head).replace("\n", "\n  "))
    return "\n".join(lines) + "\n)"


class TopLevelTracedModule(ScriptFunction):
    def __init__(self, module, run, names):
        ScriptFunction.__init__(self, module.forward, run, names)
        self._kiln_module = module

    def __getattr__(self, name):
        return getattr(self._kiln_module, name)

    def forward(self, *args, **kwargs):
        return self(*args, **kwargs)

    def __repr__(self):
        return _module_repr(self._kiln_module)


def _split_types(text):
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


_SIMPLE_TYPES = {"Tensor": "Tensor", "int": "int", "float": "float", "bool": "bool", "str": "str", "None": "NoneType",
                 "NoneType": "NoneType", "device": "Device", "Device": "Device", "dtype": "int", "Any": "Any",
                 "number": "Scalar", "Number": "Scalar"}


def _script_type(text, where):
    for prefix in ("torch.", "typing.", "t."):
        if text.startswith(prefix):
            text = text[len(prefix):]
    if text in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[text]
    if "[" in text and text.endswith("]"):
        head = text[:text.index("[")]
        for prefix in ("torch.", "typing.", "t."):
            if head.startswith(prefix):
                head = head[len(prefix):]
        args = [_script_type(a, where) for a in _split_types(text[text.index("[") + 1:-1])]
        if head in ("List", "list") and len(args) == 1:
            return "List[" + args[0] + "]"
        if head in ("Tuple", "tuple"):
            return "Tuple[" + ", ".join(args) + "]"
        if head in ("Dict", "dict") and len(args) == 2:
            return "Dict[" + args[0] + ", " + args[1] + "]"
        if head == "Optional" and len(args) == 1:
            return "Optional[" + args[0] + "]"
        if head == "Union":
            rest = [a for a in args if a != "NoneType"]
            if len(rest) == 1 and len(args) == 2:
                return "Optional[" + rest[0] + "]"
            return "Union[" + ", ".join(args) + "]"
    _kiln_std.refuse("torch.jit.script: the annotation '" + text + "' of " + where + " is not a TorchScript "
                              "type Kiln models (Tensor, int, float, bool, str, List, Tuple, Dict, Optional, Union)")


def _script_type_ok(v, t):
    if t == "Any":
        return True
    if t == "Tensor":
        return isinstance(v, torch.Tensor)
    if t == "int":
        return isinstance(v, int)
    if t == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t == "bool":
        return isinstance(v, bool)
    if t == "str":
        return isinstance(v, str)
    if t == "NoneType":
        return v is None
    if t == "Device":
        return isinstance(v, (torch.device, str))
    if t == "Scalar":
        return isinstance(v, (int, float))
    inner = _split_types(t[t.index("[") + 1:-1])
    if t.startswith("Optional["):
        return v is None or _script_type_ok(v, inner[0])
    if t.startswith("Union["):
        return any([_script_type_ok(v, x) for x in inner])
    if t.startswith("List["):
        return isinstance(v, list) and all([_script_type_ok(x, inner[0]) for x in v])
    if t.startswith("Tuple["):
        return isinstance(v, tuple) and len(v) == len(inner) and all([_script_type_ok(x, y) for x, y in zip(v, inner)])
    if t.startswith("Dict["):
        return isinstance(v, dict) and all([_script_type_ok(k, inner[0]) and _script_type_ok(x, inner[1])
                                            for k, x in v.items()])
    return False


def _script_python_type(v):
    if v is None or isinstance(v, (tuple, list, dict)):
        return type(v).__name__
    return _type_name(v)


class _ScriptSignature:
    def __init__(self, fn, name, skip_self):
        import inspect
        found = _kiln_annotations(fn)
        if found is None:
            _kiln_std.refuse("torch.jit.script: Kiln cannot find the source of " + name)
        params, returns = found
        if skip_self:
            params = params[1:]
        sig = inspect.signature(fn)
        self.name = name
        self.params = []
        for pname, annotation in params:
            p = sig.parameters[pname]
            inferred = annotation is None
            t = "Tensor" if inferred else _script_type(annotation, "parameter '" + pname + "'")
            if inferred and p.default is not p.empty and p.default is not None and not isinstance(p.default, torch.Tensor):
                raise RuntimeError("Expected a default value of type Tensor (inferred) on parameter \"" + pname +
                                   "\".Because \"" + pname + "\" was not annotated with an explicit type it is "
                                   "assumed to be type 'Tensor'.")
            self.params.append((pname, t, inferred))
        self.returns = None if returns is None else _script_type(returns, "the return value")

    def declaration(self):
        text = self.name + "(" + ", ".join([t + " " + n for n, t, _ in self.params]) + ")"
        return text if self.returns is None else text + " -> " + self.returns

    def check(self, args):
        for i in range(min(len(args), len(self.params))):
            pname, t, inferred = self.params[i]
            v = args[i]
            if _script_type_ok(v, t):
                continue
            message = (self.name + "() Expected a value of type '" + t + (" (inferred)" if inferred else "") +
                       "' for argument '" + pname + "' but instead found type '" + _script_python_type(v) + "'.\n")
            if inferred:
                message += ("Inferred '" + pname + "' to be of type 'Tensor' because it was not annotated with an "
                            "explicit type.\n")
            message += ("Position: " + str(i) + "\nValue: " + repr(v) + "\nDeclaration: " + self.declaration() +
                        "\nCast error details: Unable to cast " + repr(v) + " to " + t)
            raise RuntimeError(message)


class _ScriptedFunction(ScriptFunction):
    def __init__(self, fn):
        self._kiln_fn = fn
        self.__name__ = fn.__name__
        self.name = fn.__name__
        self._kiln_signature = _ScriptSignature(fn, fn.__name__, False)

    def __call__(self, *args, **kwargs):
        self._kiln_signature.check(args)
        return self._kiln_fn(*args, **kwargs)


class RecursiveScriptModule(_ScriptedFunction):
    def __init__(self, module):
        self._kiln_module = module
        self._kiln_fn = module
        self.__name__ = "forward"
        self.name = "forward"
        self._kiln_signature = _ScriptSignature(type(module).forward, "forward", True)

    def __getattr__(self, name):
        return getattr(self._kiln_module, name)

    def forward(self, *args, **kwargs):
        return self(*args, **kwargs)

    def __repr__(self):
        return _module_repr(self._kiln_module, "RecursiveScriptModule")


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    if isinstance(obj, (ScriptFunction, RecursiveScriptModule)):
        return obj
    if isinstance(obj, torch.nn.Module):
        return RecursiveScriptModule(obj)
    if isinstance(obj, type):
        _kiln_std.refuse("torch.jit.script of a class (TorchScript classes) is not modelled by Kiln")
    if not callable(obj):
        raise RuntimeError("Type '" + type(obj).__name__ + "' cannot be compiled since it inherits from nn.Module, "
                           "pass an instance instead")
    return _ScriptedFunction(obj)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-05,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    if example_kwarg_inputs is not None:
        _kiln_std.refuse("torch.jit.trace(example_kwarg_inputs=...) is not modelled by Kiln; pass "
                                  "example_inputs")
    if example_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs must be provided")
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with torch.jit.optimized_execution()` instead",
                      FutureWarning, stacklevel=2)
    inputs = _make_tuple(example_inputs)
    for v in inputs:
        if isinstance(v, (tuple, list, dict)):
            _kiln_std.refuse("torch.jit.trace with nested example inputs (a " + type(v).__name__ +
                                      ") is not modelled by Kiln; pass tensors")
        if not isinstance(v, torch.Tensor):
            raise RuntimeError("Type '" + _type_name(tuple(inputs)) + "' cannot be traced. Only Tensors and "
                               "(possibly nested) Lists, Dicts, and Tuples of Tensors can be traced")
    is_module = isinstance(func, torch.nn.Module)
    names = _positional_names(func.forward if is_module else func, len(inputs))
    result, run, ops, random_ops = _record(func, inputs, names)
    if check_trace:
        _check_trace(check_inputs if check_inputs is not None else [inputs], func, names, run, ops, random_ops,
                     check_tolerance)
    if is_module:
        return TopLevelTracedModule(func, run, names)
    return ScriptFunction(func, run, names)
)PY";

void install_jit(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kJitSource, "torch/jit/_trace.py");
  Ref<Module> jit = vm.module("torch.jit");
  if (!jit) return;
  // Capture records the trace (compiler/capture/eager_trace.cpp); an
  // interpreter without capture refuses it by name.
  set_attr_builtin(jit->dict, "torch.jit._kiln_record", "_kiln_record", [](VM& vm, const CallArgs& a) -> Value {
    auto it = vm.extensions.find("torch.jit._kiln_record");
    if (it == vm.extensions.end() || !it->second)
      throw_unsupported("torch.jit.trace needs Kiln's capture, which is not installed in this interpreter");
    return (*static_cast<const BuiltinFn*>(it->second.get()))(vm, a);
  });
  set_attr_builtin(jit->dict, "torch.jit._kiln_annotations", "_kiln_annotations", jit_annotations);
  Ref<Dict> globals = run_prelude(vm, code, "torch.jit", "torch.jit");
  if (!globals) return;
  if (const Value* record = jit->dict->find_str("_kiln_record")) globals->set(str_value("_kiln_record"), *record);
  if (const Value* annotations = jit->dict->find_str("_kiln_annotations"))
    globals->set(str_value("_kiln_annotations"), *annotations);
  for (const char* name : {"trace", "script", "is_tracing", "TracerWarning", "TracingCheckError", "ScriptFunction",
                           "TopLevelTracedModule", "RecursiveScriptModule", "_kiln_tracer_warning"})
    if (const Value* v = globals->find_str(name)) jit->dict->set(str_value(name), *v);
}

}  // namespace

void install_jit_prelude(VM& vm) { install_jit(vm); }

}  // namespace kiln::py
