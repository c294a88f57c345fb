// torch.fx.symbolic_trace as FX does it: the function runs on Proxy objects
// that record every operation made on them into a Graph of nodes
// (placeholder, get_attr, call_function, call_method, call_module, output);
// torch.nn's own modules are leaves (call_module), as FX's default Tracer keeps
// them. Branching on a Proxy raises FX's TraceError. The GraphModule runs the
// graph node by node, and gm.code / gm.graph.print_tabular() print it.
// Torch functions reach a Proxy through the bindings' __kiln_torch_dispatch__
// (torch_convert.cpp), as complex tensors do. Graphs are also built and
// rewritten by hand as FX's API allows: nodes form FX's doubly linked list (a
// walk survives erasing the node it stands on), inserts go to the graph's
// insertion point, and a node's users follow its args and kwargs.
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
        self.users = {}
        self.meta = {}
        self._input_nodes = {}
        self._args = ()
        self._kwargs = {}
        self._prev = self
        self._next = self
        self._erased = False
        self._update_args_kwargs(args, kwargs)

    def _update_args_kwargs(self, args, kwargs):
        # FX keeps each input's users in step with the args: the users of the old inputs lose this node first.
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._args = args
        self._kwargs = kwargs
        self._input_nodes = {}
        for n in _nodes_in((args, kwargs)):
            self._input_nodes[n] = None
        for n in self._input_nodes:
            n.users[self] = None

    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, value):
        self._update_args_kwargs(_map_arg(value, lambda x: x), self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value):
        self._update_args_kwargs(self._args, _map_arg(value, lambda x: x))

    @property
    def all_input_nodes(self):
        return list(self._input_nodes.keys())

    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    def prepend(self, x):
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        self._next.prepend(x)

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, propagate_meta=False):
        changed = []
        for user in list(self.users):
            if not delete_user_cb(user):
                continue

            def swap(n):
                return replace_with if n is self else n
            user._update_args_kwargs(_map_arg(user.args, swap), _map_arg(user.kwargs, swap))
            changed.append(user)
        return changed

    def replace_input_with(self, old_input, new_input):
        def swap(n):
            return new_input if n is old_input else n
        self._update_args_kwargs(_map_arg(self.args, swap), _map_arg(self.kwargs, swap))

    def format_node(self):
        return _format_node(self)

    def __repr__(self):
        return self.name


def map_arg(a, fn):
    return _map_arg(a, lambda x: fn(x) if isinstance(x, Node) else x)


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
        name = target
        if name.startswith("__") and name.endswith("__") and len(name) > 4:
            name = name[2:-2]
    else:
        name = getattr(target, "__name__", "node")
    return _snake(name)


class _NodeList:
    def __init__(self, graph, reverse=False):
        self.graph = graph
        self.reverse = reverse

    def __len__(self):
        return self.graph._len

    def __iter__(self):
        # A walk over the linked list that survives erasing the current node: an erased node keeps its links.
        root = self.graph._root
        cur = root._prev if self.reverse else root._next
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = cur._prev if self.reverse else cur._next

    def __reversed__(self):
        return iter(_NodeList(self.graph, not self.reverse))


class _InsertPoint:
    def __init__(self, graph, insert):
        self.graph = graph
        self.orig = graph._insert
        graph._insert = insert

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self.graph._insert = self.orig
        return False


_graphs = []


class Graph:
    def __getattr__(self, name):
        _unmodelled("Graph", name)

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        # A graph and its nodes hold each other (node.graph, the node list, users and args), and reference
        # counting never frees a cycle: every graph stays reachable from this module, so that the VM's
        # teardown, which empties what it can reach, breaks them (a traced graph lives as long as the program).
        _graphs.append(self)
        self._root = Node(self, "", "root", "", (), {})
        self._insert = self._root.prepend
        self._len = 0
        self._used = set()
        self._counts = {}
        self.owning_module = owning_module
        self._kiln_constants = {}
        self._kiln_specialized = {}

    @property
    def nodes(self):
        return _NodeList(self)

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

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        if op not in ("call_function", "call_method", "get_attr", "call_module", "placeholder", "output"):
            raise AssertionError(op)
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        node = Node(self, self._name(name if name is not None else _target_name(target)), op, target, args, kwargs)
        self._insert(node)
        self._len += 1
        return node

    def placeholder(self, name, type_expr=None, default_value=None):
        return self.create_node("placeholder", name, (), {}, None, type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, (), {}, None, type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, None, type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, None, type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs, None, type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), {}, None, type_expr)

    def inserting_before(self, n=None):
        if n is None:
            return self.inserting_after(self._root)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        if n is None:
            return self.inserting_before(self._root._next)
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase):
        if len(to_erase.users) > 0:
            raise RuntimeError("Tried to erase Node " + str(to_erase) + " but it still had " +
                               str(len(to_erase.users)) + " users in the graph: " + _users_repr(to_erase.users) + "!")
        if to_erase.graph is not self:
            raise RuntimeError("Attempting to remove " + str(to_erase) + " from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs(_map_arg(to_erase.args, lambda n: None if isinstance(n, Node) else n),
                                     _map_arg(to_erase.kwargs, lambda n: None if isinstance(n, Node) else n))

    def eliminate_dead_code(self):
        changed = False
        for node in reversed(self.nodes):
            if node.op not in ("placeholder", "output") and len(node.users) == 0 and not _is_impure(node):
                self.erase_node(node)
                changed = True
        return changed

    def node_copy(self, node, arg_transform=lambda x: x):
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def lint(self):
        seen = set()
        names = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError("Node " + str(node) + " does not belong to this Graph!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError("Argument '" + str(arg) + "' of Node '" + str(node) + "' does not belong to "
                                       "this Graph, but was used as an argument! If you are copying nodes from "
                                       "another graph, make sure to use ``arg_transform`` on node_copy() to remap "
                                       "values\n" + str(self))
                if arg not in seen:
                    raise RuntimeError("Argument '" + str(arg) + "' of Node '" + str(node) + "' was used before it "
                                       "has been defined! Please check that Nodes in the graph are topologically "
                                       "ordered\n" + str(self))
            if node.name in names:
                raise RuntimeError("Node redefined name " + node.name + "!")
            seen.add(node)
            names.add(node.name)

    def print_tabular(self):
        rows = [["opcode", "name", "target", "args", "kwargs"]]
        for n in self.nodes:
            target = n.target if isinstance(n.target, str) else str(n.target)
            rows.append([n.op, n.name, target, _format_arg(tuple(n.args)), _format_arg(n.kwargs)])
        widths = [max([len(r[c]) for r in rows]) for c in range(5)]

        def line(r):
            return "  ".join([r[c].ljust(widths[c]) for c in range(5)]).rstrip()
        print("\n".join([line(rows[0]), "  ".join(["-" * w for w in widths])] + [line(r) for r in rows[1:]]))

    def python_code(self, root_module="self"):
        return _python_code(self)

    def __str__(self):
        return "\n".join(["graph():"] + ["    " + _format_node(n) for n in self.nodes])


def _users_repr(users):
    return "{" + ", ".join([u.name + ": None" for u in users]) + "}"


def _is_impure(node):
    if node.op in ("placeholder", "output"):
        return True
    if node.op == "call_function":
        return node.target in (torch._assert,)
    if node.op == "call_module" and node.graph.owning_module is not None:
        return getattr(node.graph.owning_module._attr(node.target), "_is_impure", False)
    return False


def _format_node(n):
    if n.op == "placeholder" or n.op == "get_attr":
        return "%" + n.name + " : [num_users=" + str(len(n.users)) + "] = " + n.op + "[target=" + str(n.target) + "]"
    if n.op == "output":
        return "return " + _format_arg(n.args[0])
    target = n.target if isinstance(n.target, str) else _qualified(n.target)
    return ("%" + n.name + " : [num_users=" + str(len(n.users)) + "] = " + n.op + "[target=" + target +
            "](args = " + _format_arg(tuple(n.args), "%") + ", kwargs = " + _format_arg(n.kwargs, "%", False) + ")")


def _nodes_in(a):
    found = []
    _map_arg(a, lambda x: found.append(x) if isinstance(x, Node) else None)
    return found


def _format_arg(a, prefix="", key_repr=True):
    if isinstance(a, Node):
        return prefix + a.name
    if isinstance(a, tuple):
        inner = ", ".join([_format_arg(x, prefix, key_repr) for x in a])
        return "(" + inner + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join([_format_arg(x, prefix, key_repr) for x in a]) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join([(repr(k) if key_repr else str(k)) + ": " + _format_arg(v, prefix, key_repr)
                                for k, v in a.items()]) + "}"
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
    # FX's delete_unused_values: walking backwards, a value dies at its last user, in that user's argument order.
    seen = set()
    dies_at = {}
    for n in reversed(graph.nodes):
        for used in _nodes_in((n.args, n.kwargs)):
            if used not in seen:
                seen.add(used)
                dies_at.setdefault(n, []).append(used)
    params = [n.name for n in graph.nodes if n.op == "placeholder"]
    body = []
    wrapped = []
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
                if not qualified.startswith("torch.") and not qualified.startswith("operator.") and qualified != "getattr":
                    # FX's codegen binds a function from outside torch to a global named after its qualified name.
                    qualified = "".join([c if (c.isalnum() or c == "_") else "_" for c in qualified])
                    if n.meta.get("is_wrapped", False) and qualified not in wrapped:
                        wrapped.append(qualified)
                line = n.name + " = " + qualified + "(" + ", ".join(args + kwargs) + ")"
        dead = [u.name for u in dies_at.get(n, [])]
        if len(n.users) == 0:
            dead.append(n.name)
        if dead:
            line += ";  " + " = ".join(dead) + " = None"
        body.append(line)
    wraps = "\n".join(['torch.fx._symbolic_trace.wrap("' + w + '")' for w in wrapped])
    return "\n" + wraps + "\n\ndef forward(self, " + ", ".join(params) + "):\n" + "".join(["    " + b + "\n" for b in body]) + "    "


def _is_leaf(module):
    return type(module).__module__.startswith("torch.nn") and not isinstance(module, torch.nn.Sequential)


class Proxy:
    def __init__(self, node, tracer=None):
        self.node = node
        self.tracer = tracer if tracer is not None else GraphAppendingTracer(node.graph)

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
    def __init__(self, autowrap_modules=None, autowrap_functions=()):
        self.root = None
        self.graph = None
        self.paths = []
        self.parameters = []

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
                    name = "_tensor_constant" + str(len(self.graph._kiln_constants))
                    self.graph._kiln_constants[name] = x
                    self.parameters.append((x, name))
                return self.create_node("get_attr", name, (), {}, name.replace(".", "_"))
            if isinstance(x, torch.nn.Module):
                _kiln_std.refuse("torch.fx.symbolic_trace: a module passed as an argument is not modelled")
            return x
        return _map_arg(a, one)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.proxy(self.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs), name,
                                           type_expr))

    def is_leaf_module(self, m, module_qualified_name):
        return _is_leaf(m)

    def path_of_module(self, mod):
        path = Tracer._lookup(self.paths, mod)
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m, forward, args, kwargs):
        path = Tracer._lookup(self.paths, m)
        if path is not None and self.is_leaf_module(m, path):
            return self.create_proxy("call_module", path, args, kwargs, _snake(path).replace(".", "_"))
        return forward(*args, **kwargs)

    def trace(self, root, concrete_args=None):
        import inspect
        concrete_args = concrete_args or {}
        self.root = root
        self.graph = Graph(tracer_cls=type(self))
        self.paths = []
        self.parameters = []
        if isinstance(root, torch.nn.Module):
            self.paths = [(m, path) for path, m in root.named_modules()]
            self.parameters = [(p, name) for name, p in root.named_parameters()]
            self.parameters += [(b, name) for name, b in root.named_buffers()]
        fn = root.forward if isinstance(root, torch.nn.Module) else root
        params = list(inspect.signature(fn).parameters.values())
        args = []
        for p in params:
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                _kiln_std.refuse("torch.fx.symbolic_trace of a function with *args, **kwargs or keyword-only "
                                 "parameters is not modelled by Kiln (" + p.name + ")")
            node = self.create_node("placeholder", p.name, (), {}, p.name)
            if p.name in concrete_args:
                value = concrete_args[p.name]
                args.append(value)
                self.graph._kiln_specialized[p.name] = value
                if isinstance(value, torch.Tensor):
                    warnings.warn("Was not able to add assertion to guarantee correct input " + p.name + " to "
                                  "specialized function. It is up to the user to make sure that your inputs match "
                                  "the inputs you specialized the function with.", stacklevel=2)
            else:
                args.append(self.proxy(node))
        module_call = torch.nn.Module.__call__
        tracer = self

        def traced_call(module, *a, **k):
            return tracer.call_module(module, lambda *x, **y: module_call(module, *x, **y), a, k)
        torch.nn.Module.__call__ = traced_call
        patched = _patch_wrapped(self, getattr(fn, "__globals__", None))
        try:
            result = fn(*args)
        finally:
            torch.nn.Module.__call__ = module_call
            _unpatch_wrapped(patched)
        self.create_node("output", "output", (self.create_arg(result),), {}, "output")
        return self.graph


class GraphAppendingTracer(Tracer):
    def __init__(self, graph):
        Tracer.__init__(self)
        self.graph = graph


# torch.fx.wrap's registry: (the globals of the module that called wrap, the function's name).
_wrapped = []


def wrap(fn_or_name):
    # FX patches the globals of wrap's caller; Kiln has no caller frames, so a name is looked up in the globals
    # of the traced code (the same module in a one-file program), a function in the globals it was defined in.
    if isinstance(fn_or_name, str):
        _wrapped.append((None, fn_or_name))
    else:
        _wrapped.append((fn_or_name.__globals__, fn_or_name.__name__))
    return fn_or_name


# The builtins a program may name in torch.fx.wrap (Kiln has no builtins module to look them up in).
_WRAPPABLE_BUILTINS = {"len": len, "abs": abs, "min": min, "max": max, "sum": sum, "round": round, "int": int,
                       "float": float, "bool": bool, "isinstance": isinstance, "getattr": getattr, "range": range}


def _patch_wrapped(tracer, traced_globals):
    patched = []
    for globs, name in _wrapped:
        globs = traced_globals if globs is None else globs
        if globs is None:
            continue
        orig = globs.get(name)
        if orig is None:
            orig = _WRAPPABLE_BUILTINS.get(name)
        if orig is None:
            continue

        def make(orig):
            def wrapper(*args, **kwargs):
                found = []
                _map_arg((args, kwargs), lambda x: found.append(x) if isinstance(x, Proxy) else None)
                if not found:
                    return orig(*args, **kwargs)
                proxy = found[0].tracer.create_proxy("call_function", orig, args, kwargs)
                proxy.node.meta["is_wrapped"] = True
                return proxy
            return wrapper
        patched.append((globs, name, orig, name in globs))
        globs[name] = make(orig)
    return patched


def _unpatch_wrapped(patched):
    for globs, name, orig, had in patched:
        if had:
            globs[name] = orig
        else:
            del globs[name]


def symbolic_trace(root, concrete_args=None):
    graph = Tracer().trace(root, concrete_args)
    return GraphModule(root, graph)


class _Match:
    def __init__(self, anchor, nodes_map):
        self.anchor = anchor
        self.nodes_map = nodes_map

    def __repr__(self):
        return "Match(anchor=" + str(self.anchor) + ", nodes_map=" + str(self.nodes_map) + ")"


def _match_value(pv, gv, nodes_map):
    if isinstance(pv, Node) and isinstance(gv, Node):
        return _match_node(pv, gv, nodes_map)
    if isinstance(pv, Node) or isinstance(gv, Node):
        return False
    if isinstance(pv, (list, tuple)) and isinstance(gv, (list, tuple)):
        if type(pv) is not type(gv) or len(pv) != len(gv):
            return False
        for p, g in zip(pv, gv):
            if not _match_value(p, g, nodes_map):
                return False
        return True
    if isinstance(pv, dict) or isinstance(gv, dict):
        if not isinstance(pv, dict) or not isinstance(gv, dict) or set(pv.keys()) != set(gv.keys()):
            return False
        for k in pv:
            if not _match_value(pv[k], gv[k], nodes_map):
                return False
        return True
    return type(pv) is type(gv) and pv == gv


def _match_node(pn, gn, nodes_map):
    if pn in nodes_map:
        return nodes_map[pn] is gn
    if pn.op == "placeholder":
        nodes_map[pn] = gn
        return True
    if pn.op != gn.op or not (pn.target is gn.target or pn.target == gn.target):
        return False
    if gn in nodes_map.values():
        return False
    nodes_map[pn] = gn
    return _match_value(tuple(pn.args), tuple(gn.args), nodes_map) and _match_value(pn.kwargs, gn.kwargs, nodes_map)


def replace_pattern(gm, pattern, replacement):
    # FX's subgraph rewriter: placeholders of the pattern match any value, the other nodes match by op, target and
    # arguments; matches do not overlap; each replacement goes in before the first user of the matched output.
    pattern_graph = symbolic_trace(pattern).graph
    replacement_graph = symbolic_trace(replacement).graph
    pattern_nodes = list(pattern_graph.nodes)
    pattern_placeholders = [n for n in pattern_nodes if n.op == "placeholder"]
    replacement_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    returned = pattern_nodes[-1].args[0]
    if not isinstance(returned, Node):
        _kiln_std.refuse("torch.fx.replace_pattern with a pattern that returns several values is not modelled by Kiln")
    if len(pattern_placeholders) != len(replacement_placeholders):
        raise AssertionError("replace_pattern: the pattern and the replacement take different numbers of inputs")
    graph = gm.graph
    matches = []
    taken = set()
    for gn in graph.nodes:
        nodes_map = {}
        if not _match_node(returned, gn, nodes_map):
            continue
        inner = [nodes_map[pn] for pn in pattern_nodes if pn.op not in ("placeholder", "output")]
        if any([n in taken for n in inner]):
            continue
        # A node the match would remove must have no user outside the match, except the returned one.
        contained = True
        for pn in pattern_nodes:
            if pn.op in ("placeholder", "output") or pn is returned:
                continue
            for user in nodes_map[pn].users:
                if user not in inner:
                    contained = False
        if not contained:
            continue
        for n in inner:
            taken.add(n)
        matches.append(_Match(returned, nodes_map))
    changed = {}
    for match in matches:
        val_map = {}
        for rn, pn in zip(replacement_placeholders, pattern_placeholders):
            gn = match.nodes_map[pn]
            val_map[rn] = changed.get(gn, gn)
        returning = match.nodes_map[returned]
        first_user = None
        for n in graph.nodes:
            if n in returning.users:
                first_user = n
                break
        with graph.inserting_before(first_user):
            copied = graph.graph_copy(replacement_graph, val_map)
        returning.replace_all_uses_with(copied)
        changed[returning] = copied
        for pn in reversed(pattern_nodes):
            if pn.op != "placeholder" and pn.op != "output":
                graph.erase_node(match.nodes_map[pn])
    gm.recompile()
    if isinstance(replacement, torch.nn.Module):
        _kiln_std.refuse("torch.fx.replace_pattern with a module as the replacement is not modelled by Kiln")
    return matches


class GraphModule:
    def __init__(self, root, graph, class_name="GraphModule"):
        if not isinstance(graph, Graph):
            raise RuntimeError("GraphModule(root, graph): graph must be a torch.fx.Graph")
        self._kiln_root = root
        self._kiln_attrs = root if isinstance(root, dict) else None
        self.graph = graph
        graph.owning_module = self
        for n in graph.nodes:
            if n.op in ("get_attr", "call_module") and n.target not in graph._kiln_constants:
                try:
                    self._attr(n.target)
                except AttributeError:
                    if isinstance(root, dict):
                        raise RuntimeError("Node " + n.name + " referenced target " + n.target + " but that target "
                                           "was not provided in ``root``!")
                    raise RuntimeError("Node " + n.name + " target " + n.target + " does not reference an "
                                       "nn.Module" if n.op == "call_module" else "Node " + n.name + " target " +
                                       n.target + " is not an attribute of the root module")
        self.recompile()

    def recompile(self):
        self.code = _python_code(self.graph)

    def __getattr__(self, name):
        if isinstance(self._kiln_root, torch.nn.Module):
            return getattr(self._kiln_root, name)
        if self._kiln_attrs is not None and name in self._kiln_attrs:
            return self._kiln_attrs[name]
        raise AttributeError("'GraphModule' object has no attribute '" + name + "'")

    def _attr(self, path):
        constants = self.graph._kiln_constants
        if path in constants:
            return constants[path]
        parts = path.split(".")
        if self._kiln_attrs is not None:
            # FX copies a dict root's entries by the nodes' whole qualified targets.
            if path in self._kiln_attrs:
                return self._kiln_attrs[path]
            raise AttributeError(path)
        obj = self._kiln_root
        for part in parts:
            obj = getattr(obj, part)
        return obj

    def forward(self, *args):
        env = {}
        i = 0
        specialized = self.graph._kiln_specialized
        for n in self.graph.nodes:
            def load(a):
                return env[a] if isinstance(a, Node) else a
            if n.op == "placeholder":
                if i >= len(args):
                    raise TypeError("forward() missing required positional argument: '" + n.name + "'")
                value = args[i]
                i += 1
                if n.name in specialized:
                    expected = specialized[n.name]
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
        return None

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
  for (const char* name : {"symbolic_trace", "GraphModule", "Graph", "Node", "Proxy", "Tracer", "wrap", "replace_pattern"})
    if (const Value* v = globals->find_str(name)) fx->dict->set(str_value(name), *v);
  // FX's submodules, with the names programs import from them.
  auto submodule = [&](const char* leaf, std::initializer_list<const char*> names, bool rename_classes) {
    auto m = make<Module>(std::string("torch.fx.") + leaf);
    vm.add_module(m);
    fx->dict->set(str_value(leaf), Value(m));
    for (const char* name : names)
      if (const Value* v = globals->find_str(name)) {
        m->dict->set(str_value(name), *v);
        if (rename_classes && v->is(ObjKind::Class)) v->as<Class>()->module = std::string("torch.fx.") + leaf;
      }
  };
  submodule("proxy", {"TraceError", "Proxy", "GraphAppendingTracer"}, true);
  submodule("node", {"Node", "map_arg"}, true);
  submodule("graph", {"Graph"}, true);
  submodule("graph_module", {"GraphModule"}, true);
  submodule("subgraph_rewriter", {"replace_pattern"}, false);
}

}  // namespace

void install_fx_prelude(VM& vm) { install_fx(vm); }

}  // namespace kiln::py
