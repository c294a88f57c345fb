// torch.fx.symbolic_trace as FX does it: the function runs on Proxy objects
// that record every operation made on them into a Graph of nodes
// (placeholder, get_attr, call_function, call_method, call_module, output);
// torch.nn's own modules are leaves (call_module), as FX's default Tracer keeps
// them. Branching on a Proxy raises FX's TraceError. The GraphModule runs the
// graph node by node, and gm.code / gm.graph.print_tabular() print it.
// Torch functions reach a Proxy through the bindings' __kiln_torch_dispatch__
// (torch_convert.cpp), as complex tensors do.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kFxSource = R"PY(import _kiln_std
import torch
import operator
import warnings

_BUILTIN_NAMES = {"abs", "all", "any", "bool", "dict", "divmod", "float", "format", "getattr", "hash", "id", "input",
                  "int", "iter", "len", "list", "map", "max", "min", "next", "object", "pow", "print", "range",
                  "round", "set", "slice", "sorted", "str", "sum", "tuple", "type", "vars", "zip", "and", "or",
                  "not", "is", "in", "if", "else", "for", "while", "def", "class", "return", "lambda", "None",
                  "True", "False"}


class TraceError(ValueError):
    pass


def _unmodelled(cls_name, name):
    # PyTorch's FX has far more API than Kiln models: its other names stop with Kiln's refusal, not an
    # AttributeError that reads like the program's own bug.
    if name.startswith("_"):
        raise AttributeError("'" + cls_name + "' object has no attribute '" + name + "'")
    _kiln_std.refuse("torch.fx." + cls_name + "." + name + " is not modelled by Kiln's torch.fx (docs/python.md lists "
                     "what it models)")


class Node:
    def __getattr__(self, name):
        _unmodelled("Node", name)

    def __init__(self, graph, name, op, target, args, kwargs):
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.args = args
        self.kwargs = kwargs
        self.users = {}

    def __repr__(self):
        return self.name


def _map_arg(a, fn):
    if isinstance(a, tuple):
        return tuple([_map_arg(x, fn) for x in a])
    if isinstance(a, list):
        return [_map_arg(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: _map_arg(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(_map_arg(a.start, fn), _map_arg(a.stop, fn), _map_arg(a.step, fn))
    return fn(a)


def _snake(name):
    out = ""
    for i, c in enumerate(name):
        if c.isupper() and i > 0 and name[i - 1].islower():
            out += "_"
        out += c.lower()
    return out


def _target_name(target):
    if isinstance(target, str):
        return target
    return getattr(target, "__name__", "node")


class Graph:
    def __getattr__(self, name):
        _unmodelled("Graph", name)

    def __init__(self):
        self.nodes = []
        self._used = set()
        self._counts = {}

    def _name(self, hint):
        base = "".join([c if (c.isalnum() or c == "_") else "_" for c in hint])
        if not base or base[0].isdigit():
            base = "_" + base
        candidate = base + "_1" if base in _BUILTIN_NAMES else base
        k = self._counts.get(base, 1 if base in _BUILTIN_NAMES else 0)
        while candidate in self._used:
            k += 1
            candidate = base + "_" + str(k)
        self._counts[base] = k
        self._used.add(candidate)
        return candidate

    def create_node(self, op, target, args=(), kwargs=None, name=None):
        node = Node(self, self._name(name if name is not None else _target_name(target)), op, target, args,
                    kwargs or {})
        for used in _nodes_in((args, kwargs or {})):
            used.users[node] = None
        self.nodes.append(node)
        return node

    def print_tabular(self):
        rows = [["opcode", "name", "target", "args", "kwargs"]]
        for n in self.nodes:
            target = n.target if isinstance(n.target, str) else str(n.target)
            rows.append([n.op, n.name, target, _format_arg(tuple(n.args)), _format_arg(n.kwargs)])
        widths = [max([len(r[c]) for r in rows]) for c in range(5)]

        def line(r):
            return "  ".join([r[c].ljust(widths[c]) for c in range(5)]).rstrip()
        print("\n".join([line(rows[0]), "  ".join(["-" * w for w in widths])] + [line(r) for r in rows[1:]]))

    def __str__(self):
        lines = ["graph():"]
        for n in self.nodes:
            if n.op == "placeholder" or n.op == "get_attr":
                lines.append("    %" + n.name + " : [num_users=" + str(len(n.users)) + "] = " + n.op + "[target=" +
                             str(n.target) + "]")
            elif n.op == "output":
                lines.append("    return " + _format_arg(n.args[0]))
            else:
                target = n.target if isinstance(n.target, str) else _qualified(n.target)
                lines.append("    %" + n.name + " : [num_users=" + str(len(n.users)) + "] = " + n.op + "[target=" +
                             target + "](args = " + _format_arg(tuple(n.args), "%") + ", kwargs = " +
                             _format_arg(n.kwargs, "%") + ")")
        return "\n".join(lines)


def _nodes_in(a):
    found = []
    _map_arg(a, lambda x: found.append(x) if isinstance(x, Node) else None)
    return found


def _format_arg(a, prefix=""):
    if isinstance(a, Node):
        return prefix + a.name
    if isinstance(a, tuple):
        inner = ", ".join([_format_arg(x, prefix) for x in a])
        return "(" + inner + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join([_format_arg(x, prefix) for x in a]) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join([repr(k) + ": " + _format_arg(v, prefix) for k, v in a.items()]) + "}"
    return repr(a)


_OPERATOR_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
                     "matmul": "@", "lshift": "<<", "rshift": ">>", "and_": "&", "or_": "|", "xor": "^", "lt": "<",
                     "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_UNARY_SYMBOLS = {"neg": "-", "pos": "+", "invert": "~"}


def _qualified(fn):
    name = getattr(fn, "__name__", repr(fn))
    for prefix, module in (("operator.", operator), ("torch.", torch), ("torch.nn.functional.", torch.nn.functional)):
        if getattr(module, name, None) is fn:
            return prefix + name
    module = getattr(fn, "__module__", None)
    return (module + "." if module else "") + name


def _python_code(graph):
    last_use = {}
    for n in graph.nodes:
        for used in _nodes_in((n.args, n.kwargs)):
            last_use[used] = n
    params = [n.name for n in graph.nodes if n.op == "placeholder"]
    body = []
    for n in graph.nodes:
        args = [_format_arg(a) for a in n.args]
        kwargs = [k + " = " + _format_arg(v) for k, v in n.kwargs.items()]
        if n.op == "placeholder":
            continue
        if n.op == "output":
            body.append("return " + _format_arg(n.args[0]))
            continue
        if n.op == "get_attr":
            line = n.name + " = self." + n.target
        elif n.op == "call_module":
            line = n.name + " = self." + n.target + "(" + ", ".join(args + kwargs) + ")"
        elif n.op == "call_method":
            line = n.name + " = " + args[0] + "." + n.target + "(" + ", ".join(args[1:] + kwargs) + ")"
        else:
            name = _target_name(n.target)
            qualified = _qualified(n.target)
            if qualified.startswith("operator.") and name in _OPERATOR_SYMBOLS and len(args) == 2 and not kwargs:
                line = n.name + " = " + args[0] + " " + _OPERATOR_SYMBOLS[name] + " " + args[1]
            elif qualified.startswith("operator.") and name in _UNARY_SYMBOLS and len(args) == 1:
                line = n.name + " = " + _UNARY_SYMBOLS[name] + args[0]
            elif qualified == "operator.getitem":
                line = n.name + " = " + args[0] + "[" + args[1] + "]"
            else:
                line = n.name + " = " + qualified + "(" + ", ".join(args + kwargs) + ")"
        dead = [u.name for u, last in last_use.items() if last is n]
        if dead:
            line += ";  " + " = ".join(dead) + " = None"
        body.append(line)
    return "\n\n\ndef forward(self, " + ", ".join(params) + "):\n" + "".join(["    " + b + "\n" for b in body]) + "    "


def _is_leaf(module):
    return type(module).__module__.startswith("torch.nn") and not isinstance(module, torch.nn.Sequential)


class Proxy:
    def __init__(self, node, tracer):
        self.node = node
        self.tracer = tracer

    def __repr__(self):
        return "Proxy(" + self.node.name + ")"

    def __getattr__(self, name):
        return _Attribute(self, name)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __bool__(self):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def __iter__(self):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop or "
                         "as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a more "
                         "detailed explanation of what types of control flow can be traced, and check out the Proxy "
                         "docstring for help troubleshooting Proxy iteration errors")

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    def __index__(self):
        raise TraceError("symbolically traced variables cannot be used as an index")

    def __kiln_torch_dispatch__(name, args, kwargs):
        tracer = _find_tracer((args, kwargs))
        return tracer.create_proxy("call_function", _resolve(name), args, kwargs)


class _Attribute(Proxy):
    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _resolve(dotted):
    parts = dotted.split(".")
    obj = torch
    for p in parts[1:]:
        obj = getattr(obj, p)
    return obj


def _find_tracer(a):
    found = []
    _map_arg(a, lambda x: found.append(x.tracer) if isinstance(x, Proxy) else None)
    return found[0]


def _binary(op, reflected):
    def forward(self, other):
        args = (other, self) if reflected else (self, other)
        return self.tracer.create_proxy("call_function", op, args, {})
    return forward


def _unary(op):
    def forward(self):
        return self.tracer.create_proxy("call_function", op, (self,), {})
    return forward


for _name, _op in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul), ("truediv", operator.truediv),
                   ("floordiv", operator.floordiv), ("mod", operator.mod), ("pow", operator.pow),
                   ("matmul", operator.matmul), ("lshift", operator.lshift), ("rshift", operator.rshift),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor)]:
    setattr(Proxy, "__" + _name + "__", _binary(_op, False))
    setattr(Proxy, "__r" + _name + "__", _binary(_op, True))
for _name, _op in [("lt", operator.lt), ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                   ("eq", operator.eq), ("ne", operator.ne), ("getitem", operator.getitem)]:
    setattr(Proxy, "__" + _name + "__", _binary(_op, False))
for _name, _op in [("neg", operator.neg), ("pos", operator.pos), ("invert", operator.invert)]:
    setattr(Proxy, "__" + _name + "__", _unary(_op))


class Tracer:
    def __init__(self, root):
        self.root = root
        self.graph = Graph()
        self.constants = {}
        # (object, qualified name) pairs, found by identity: modules, then parameters and buffers.
        self.paths = []
        self.parameters = []
        if isinstance(root, torch.nn.Module):
            self.paths = [(m, path) for path, m in root.named_modules()]
            self.parameters = [(p, name) for name, p in root.named_parameters()]
            self.parameters += [(b, name) for name, b in root.named_buffers()]

    @staticmethod
    def _lookup(pairs, obj):
        for o, name in pairs:
            if o is obj:
                return name
        return None

    def create_arg(self, a):
        def one(x):
            if isinstance(x, Proxy):
                return x.node
            if isinstance(x, torch.Tensor):
                name = Tracer._lookup(self.parameters, x)
                if name is None:
                    name = "_tensor_constant" + str(len(self.constants))
                    self.constants[name] = x
                    self.parameters.append((x, name))
                return self.graph.create_node("get_attr", name, (), {}, name.replace(".", "_"))
            if isinstance(x, torch.nn.Module):
                _kiln_std.refuse("torch.fx.symbolic_trace: a module passed as an argument is not modelled")
            return x
        return _map_arg(a, one)

    def create_proxy(self, op, target, args, kwargs, name=None):
        node = self.graph.create_node(op, target, self.create_arg(args), self.create_arg(kwargs), name)
        return Proxy(node, self)

    def call_module(self, module, forward, args, kwargs):
        path = Tracer._lookup(self.paths, module)
        if path is not None and _is_leaf(module):
            return self.create_proxy("call_module", path, args, kwargs, _snake(path).replace(".", "_"))
        return forward(*args, **kwargs)


def symbolic_trace(root, concrete_args=None):
    import inspect
    concrete_args = concrete_args or {}
    is_module = isinstance(root, torch.nn.Module)
    fn = root.forward if is_module else root
    tracer = Tracer(root)
    params = list(inspect.signature(fn).parameters.values())
    args = []
    specialized = {}
    for p in params:
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            _kiln_std.refuse("torch.fx.symbolic_trace of a function with *args, **kwargs or keyword-only "
                                      "parameters is not modelled by Kiln (" + p.name + ")")
        node = tracer.graph.create_node("placeholder", p.name, (), {}, p.name)
        if p.name in concrete_args:
            value = concrete_args[p.name]
            args.append(value)
            specialized[p.name] = value
            if isinstance(value, torch.Tensor):
                warnings.warn("Was not able to add assertion to guarantee correct input " + p.name + " to specialized "
                              "function. It is up to the user to make sure that your inputs match the inputs you "
                              "specialized the function with.", stacklevel=2)
        else:
            args.append(Proxy(node, tracer))
    module_call = torch.nn.Module.__call__

    def traced_call(module, *a, **k):
        return tracer.call_module(module, lambda *x, **y: module_call(module, *x, **y), a, k)
    torch.nn.Module.__call__ = traced_call
    try:
        result = fn(*args)
    finally:
        torch.nn.Module.__call__ = module_call
    tracer.graph.create_node("output", "output", (tracer.create_arg(result),), {}, "output")
    return GraphModule(root, _Traced(tracer, specialized))


class _Traced:
    def __init__(self, tracer, specialized):
        self.tracer = tracer
        self.specialized = specialized


class GraphModule:
    def __init__(self, root, graph, class_name="GraphModule"):
        if not isinstance(graph, _Traced):
            _kiln_std.refuse("torch.fx.GraphModule(root, graph) from a hand-built torch.fx.Graph is not "
                                      "modelled by Kiln; GraphModules come from torch.fx.symbolic_trace and from "
                                      "torch.compile backends")
        self._kiln_root = root
        self._kiln_traced = graph
        self.graph = graph.tracer.graph
        self.code = _python_code(self.graph)

    def __getattr__(self, name):
        if isinstance(self._kiln_root, torch.nn.Module):
            return getattr(self._kiln_root, name)
        raise AttributeError("'GraphModule' object has no attribute '" + name + "'")

    def _attr(self, path):
        constants = self._kiln_traced.tracer.constants
        if path in constants:
            return constants[path]
        obj = self._kiln_root
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj

    def forward(self, *args):
        env = {}
        i = 0
        for n in self.graph.nodes:
            def load(a):
                return env[a] if isinstance(a, Node) else a
            if n.op == "placeholder":
                if i >= len(args):
                    raise TypeError("forward() missing required positional argument: '" + n.name + "'")
                value = args[i]
                i += 1
                if n.name in self._kiln_traced.specialized:
                    expected = self._kiln_traced.specialized[n.name]
                    if not isinstance(expected, torch.Tensor) and value != expected:
                        raise AssertionError(n.name + " has been specialized to have value " + str(expected) +
                                             " but got another value")
                env[n] = value
            elif n.op == "get_attr":
                env[n] = self._attr(n.target)
            elif n.op == "call_function":
                env[n] = n.target(*_map_arg(n.args, load), **_map_arg(n.kwargs, load))
            elif n.op == "call_method":
                a = _map_arg(n.args, load)
                env[n] = getattr(a[0], n.target)(*a[1:], **_map_arg(n.kwargs, load))
            elif n.op == "call_module":
                env[n] = self._attr(n.target)(*_map_arg(n.args, load), **_map_arg(n.kwargs, load))
            else:
                return _map_arg(n.args[0], load)

    def __call__(self, *args, **kwargs):
        if kwargs:
            _kiln_std.refuse("calling a torch.fx GraphModule with keyword arguments is not modelled by Kiln")
        return self.forward(*args)

    def print_readable(self, print_output=True):
        text = "class GraphModule(torch.nn.Module):\n" + "\n".join(["    " + l if l else l for l in self.code.split("\n")])
        if print_output:
            print(text)
        return text
)PY";

void install_fx(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kFxSource, "torch/fx/_symbolic_trace.py");
  Ref<Module> fx = vm.module("torch.fx");
  if (!fx) return;
  Ref<Dict> globals = run_prelude(vm, code, "torch.fx", "torch.fx");
  if (!globals) return;
  for (const char* name : {"symbolic_trace", "GraphModule", "Graph", "Node", "Proxy", "Tracer"})
    if (const Value* v = globals->find_str(name)) fx->dict->set(str_value(name), *v);
  auto proxy_module = make<Module>("torch.fx.proxy");
  vm.add_module(proxy_module);
  fx->dict->set(str_value("proxy"), Value(proxy_module));
  for (const char* name : {"TraceError", "Proxy"})
    if (const Value* v = globals->find_str(name)) {
      proxy_module->dict->set(str_value(name), *v);
      if (v->is(ObjKind::Class)) v->as<Class>()->module = "torch.fx.proxy";
    }
}

}  // namespace

void install_fx_prelude(VM& vm) { install_fx(vm); }

}  // namespace kiln::py
