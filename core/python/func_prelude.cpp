// torch.func (functorch's transforms) over Kiln's eager autograd: grad and
// vjp take gradients with torch.autograd.grad; vmap runs the function once
// per slice of the mapped dimension and stacks the results, which is vmap's
// meaning (PyTorch's batching rules compute the same values in one batched
// call, so results agree to float rounding); jacrev is one vjp per output
// element, and jacfwd the same reverse-mode Jacobian; jvp and linearize use
// the double-backward trick (J v as the derivative of the vjp with respect to
// its cotangents). functional_call swaps a module's tensors for the call, as
// torch.nn.utils.stateless does.
//
// Transforms nest (grad of grad, hessian as jacrev of jacrev): an inner one
// differentiates with create_graph=True, so the outer can differentiate its
// result again, and takes its inputs as fresh copies of the outer ones, so
// that a use of the outer variable inside is not mistaken for the inner's
// (functorch's levels).
// vmap's randomness="error" is kept: a function that draws from the global
// generator inside vmap raises PyTorch's error, with the generator restored.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kFuncSource = R"PY(import torch
import torch._kiln as _kiln


def _raise(kind, message):
    _kiln.raise_error(kind, message)


# ---- pytrees: tuples, lists and dicts of leaves, as torch.utils._pytree ----

def _flatten(tree):
    leaves = []
    spec = _flatten_into(tree, leaves)
    return leaves, spec


def _flatten_into(tree, leaves):
    if isinstance(tree, dict):
        keys = list(tree.keys())
        return ("dict", keys, [_flatten_into(tree[k], leaves) for k in keys])
    if isinstance(tree, list):
        return ("list", None, [_flatten_into(v, leaves) for v in tree])
    if isinstance(tree, tuple):
        return ("tuple", None, [_flatten_into(v, leaves) for v in tree])
    leaves.append(tree)
    return None


def _unflatten(leaves, spec):
    it = iter(leaves)
    return _build(it, spec)


def _build(it, spec):
    if spec is None:
        return next(it)
    kind, keys, children = spec
    built = [_build(it, c) for c in children]
    if kind == "dict":
        return {k: v for k, v in zip(keys, built)}
    if kind == "list":
        return built
    return tuple(built)


def _tree_map(fn, tree):
    leaves, spec = _flatten(tree)
    return _unflatten([fn(x) for x in leaves], spec)


# ---- functional_call ----

def _owner(module, name):
    parts = name.split(".")
    for p in parts[:-1]:
        module = getattr(module, p)
    return module, parts[-1]


def _swap(module, name, value):
    owner, attr = _owner(module, name)
    d = owner.__dict__
    for table in ("_parameters", "_buffers"):
        entries = d.get(table)
        if entries is not None and attr in entries:
            old = entries[attr]
            entries[attr] = value
            return (owner, table, attr, old)
    if attr in d:
        old = d[attr]
        d[attr] = value
        return (owner, "__dict__", attr, old)
    d[attr] = value
    return (owner, "__dict__", attr, _MISSING)


class _Missing:
    pass


_MISSING = _Missing()


def _restore(record):
    owner, table, attr, old = record
    d = owner.__dict__
    entries = d if table == "__dict__" else d[table]
    if old is _MISSING:
        del entries[attr]
    else:
        entries[attr] = old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = dict(parameter_and_buffer_dicts)
    else:
        tensors = {}
        seen = []
        for d in parameter_and_buffer_dicts:
            for k in d:
                if k in tensors:
                    seen.append(k)
                tensors[k] = d[k]
        if seen:
            _raise("ValueError", f"{seen} appeared in multiple dictionaries; behavior of functional call is ambiguous")
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(dict(module.named_buffers(remove_duplicate=False)))
    if strict:
        missing = [k for k in named if k not in tensors]
        unexpected = [k for k in tensors if k not in named]
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                parts.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            _raise("RuntimeError", "Error(s) in reparametrizing for " + type(module).__name__ + ":\n\t" + "\n\t".join(parts))
    if tie_weights:
        # A tensor reached under several names (tied weights) is replaced under all of them.
        for name, original in named.items():
            if name in tensors:
                continue
            for other, value in list(tensors.items()):
                if other in named and named[other] is original:
                    tensors[name] = value
                    break
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    if kwargs is None:
        kwargs = {}
    records = []
    try:
        for name, value in tensors.items():
            records.append(_swap(module, name, value))
        return module(*args, **kwargs)
    finally:
        for record in reversed(records):
            _restore(record)


def stack_module_state(models):
    if len(models) == 0:
        _raise("RuntimeError", "stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        _raise("RuntimeError", "stack_module_state: Expected all models to have the same training/eval mode.")
    first = type(models[0])
    if not all(type(m) == first for m in models):
        _raise("RuntimeError", "stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors):
        result = torch.stack(tensors)
        if all(t.requires_grad for t in tensors):
            result = result.detach().requires_grad_()
        return result

    params = {k: stacked([dict(m.named_parameters())[k] for m in models]) for k, _ in models[0].named_parameters()}
    buffers = {k: stacked([dict(m.named_buffers())[k] for m in models]) for k, _ in models[0].named_buffers()}
    return params, buffers


# ---- grad, grad_and_value, vjp, jacrev ----

_depth = [0]


def _enter(what):
    _depth[0] += 1


def _leave():
    _depth[0] -= 1


def _nested():
    # Inside another gradient transform: results stay differentiable for it.
    return _depth[0] > 1


def _level_input(t):
    # A copy, not a view: Kiln's recorder would take a full view for the tensor itself.
    if _nested() and t.requires_grad:
        return t.clone()
    return t.detach().requires_grad_(True)


def _argnums_tuple(argnums, nargs, what):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if len(nums) == 0:
        _raise("RuntimeError", f"{what}: argnums must be non-empty")
    out = []
    for n in nums:
        if not isinstance(n, int):
            _raise("RuntimeError", f"{what}: argnums must be int or Tuple[int, ...], got: {type(n)}")
        if n < -nargs or n >= nargs:
            _raise("RuntimeError", f"Got argnums={n}, but only {nargs} positional inputs")
        out.append(n % nargs)
    return tuple(out)


def _differentiable_args(args, nums):
    args = list(args)
    for n in nums:
        args[n] = _tree_map(lambda t: _level_input(t) if isinstance(t, torch.Tensor) else t, args[n])
    return args


def _grads_of(outputs, cotangents, args, nums, per_arg_tuple, retain_graph=False, create_graph=None):
    # The gradients of `outputs` (weighted by `cotangents`, None for a scalar)
    # with respect to the tensors of args[n] for n in nums, shaped as those
    # arguments; zeros where no gradient arrives, as functorch gives.
    specs = []
    flat = []
    for n in nums:
        leaves, spec = _flatten(args[n])
        for leaf in leaves:
            if not isinstance(leaf, torch.Tensor):
                _raise("RuntimeError", f"Expected all leaves of argument {n} to be Tensors, got {type(leaf).__name__}")
        specs.append((len(leaves), spec))
        flat.extend(leaves)
    live = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if live:
        if create_graph is None:
            create_graph = _nested()
        grads = torch.autograd.grad([o for o, _ in live], flat, grad_outputs=[c for _, c in live],
                                    retain_graph=retain_graph or create_graph, create_graph=create_graph, allow_unused=True)
    else:
        grads = [None] * len(flat)
    grads = [torch.zeros_like(x) if g is None else g for g, x in zip(grads, flat)]
    per_arg = []
    at = 0
    for count, spec in specs:
        per_arg.append(_unflatten(grads[at:at + count], spec))
        at += count
    return tuple(per_arg) if per_arg_tuple else per_arg[0]


def _detach_tree(tree):
    # What a transform returns: cut from its own level's graph, unless an
    # enclosing transform still differentiates it.
    if _nested():
        return tree
    return _tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, tree)


def _split_aux(output, has_aux, what):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        _raise("RuntimeError", f"{what}(f, ...)(*args): output of function f should be a tuple: (output, aux) if has_aux is True")
    return output[0], output[1]


def grad_and_value(func, argnums=0, has_aux=False):
    def wrapper(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad_and_value(f)(*args)")
        _enter("grad")
        try:
            with torch.enable_grad():
                args = _differentiable_args(args, nums)
                output, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
                if not isinstance(output, torch.Tensor):
                    _raise("RuntimeError", f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
                if output.dim() != 0:
                    _raise("RuntimeError", f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
                grads = _grads_of([output], [None], args, nums, isinstance(argnums, tuple))
                value = _detach_tree(output)
                aux = _detach_tree(aux)
        finally:
            _leave()
        if has_aux:
            return grads, (value, aux)
        return grads, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    inner = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        grads, value = inner(*args, **kwargs)
        if has_aux:
            return grads, value[1]
        return grads
    return wrapper


def vjp(func, *primals, has_aux=False):
    nums = tuple(range(len(primals)))
    _enter("vjp")
    try:
        nested = _nested()
        with torch.enable_grad():
            args = _differentiable_args(primals, nums)
            output, aux = _split_aux(func(*args), has_aux, "vjp")
            value = _detach_tree(output)
            aux = _detach_tree(aux)
    finally:
        _leave()
    out_leaves, out_spec = _flatten(output)
    for leaf in out_leaves:
        if not isinstance(leaf, torch.Tensor):
            _raise("RuntimeError", f"vjp(f, *primals): Expected f to be a function that has non-empty output, and whose outputs are Tensors, got {type(leaf)}")

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        cot_leaves, _ = _flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            _raise("RuntimeError", "Expected pytree structure of cotangents to be the same as pytree structure of outputs to the function")
        # Differentiable again when vjp ran inside another transform, or when asked to be.
        return _grads_of(out_leaves, cot_leaves, args, nums, True, retain_graph, nested or bool(create_graph))

    if has_aux:
        return value, vjp_fn, aux
    return value, vjp_fn


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    def wrapper(*args):
        nums = _argnums_tuple(argnums, len(args), "jacrev(f, ...)(*args)")
        _enter("jacrev")
        try:
            with torch.enable_grad():
                diff_args = _differentiable_args(args, nums)
                output, aux = _split_aux(func(*diff_args), has_aux, "jacrev")
                out_leaves, out_spec = _flatten(output)
                in_leaves = []
                in_specs = []
                for n in nums:
                    leaves, spec = _flatten(diff_args[n])
                    in_specs.append((len(leaves), spec))
                    in_leaves.extend(leaves)
                per_output = []
                for o in out_leaves:
                    if not isinstance(o, torch.Tensor):
                        _raise("RuntimeError", f"jacrev(f, ...)(*args): expected f(*args) to return only tensors, got unsupported type {type(o)}")
                    flat_o = o.reshape(-1)
                    rows = []
                    for j in range(flat_o.numel()):
                        if o.requires_grad:
                            g = torch.autograd.grad(flat_o[j], in_leaves, retain_graph=True, create_graph=_nested(),
                                                    allow_unused=True)
                        else:
                            g = [None] * len(in_leaves)
                        rows.append([torch.zeros_like(x) if gi is None else gi for gi, x in zip(g, in_leaves)])
                    jac = []
                    for k, x in enumerate(in_leaves):
                        if rows:
                            jac.append(torch.stack([r[k] for r in rows]).reshape(tuple(o.shape) + tuple(x.shape)))
                        else:
                            jac.append(x.new_zeros(tuple(o.shape) + tuple(x.shape)))
                    per_arg = []
                    at = 0
                    for count, spec in in_specs:
                        per_arg.append(_unflatten(jac[at:at + count], spec))
                        at += count
                    per_output.append(per_arg[0] if not isinstance(argnums, tuple) else tuple(per_arg))
                aux = _detach_tree(aux)
        finally:
            _leave()
        result = _unflatten(per_output, out_spec)
        if has_aux:
            return result, aux
        return result
    return wrapper


def _tangents_of(outputs, inputs, tangents, create_graph):
    # J v by the double-backward trick: the vjp is linear in its cotangents,
    # so differentiating it with respect to them (at zero) along v gives J v.
    # Values agree with PyTorch's forward-mode AD to float rounding.
    cotangents = [torch.zeros_like(o, requires_grad=True) for o in outputs]
    live = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not live:
        return [torch.zeros_like(o) for o in outputs]
    vjps = torch.autograd.grad([o for o, _ in live], inputs, [c for _, c in live], create_graph=True,
                               retain_graph=True, allow_unused=True)
    pairs = [(g, t) for g, t in zip(vjps, tangents) if g is not None and g.requires_grad]
    if not pairs:
        return [torch.zeros_like(o) for o in outputs]
    out = torch.autograd.grad([g for g, _ in pairs], cotangents, [t for _, t in pairs], create_graph=create_graph,
                              retain_graph=True, allow_unused=True)
    return [torch.zeros_like(o) if t is None else t for t, o in zip(out, outputs)]


def _check_jvp_args(primals, tangents, what):
    if not isinstance(primals, (tuple, list)):
        _raise("RuntimeError", f"{what}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_primals, primals_spec = _flatten(tuple(primals))
    flat_tangents, tangents_spec = _flatten(tuple(tangents) if isinstance(tangents, (tuple, list)) else tangents)
    if primals_spec != tangents_spec:
        _raise("RuntimeError", f"{what}: Expected primals and tangents to have the same python structure. For example, if primals is a tuple of 3 tensors, tangents also must be.")
    for name, flat in (("primals", flat_primals), ("tangents", flat_tangents)):
        if len(flat) == 0:
            _raise("RuntimeError", f"{what}: Expected {name} to be a non-empty list of Tensors.")
        for leaf in flat:
            if not isinstance(leaf, torch.Tensor):
                _raise("RuntimeError", f"{what}: Expected {name} to only contain Tensors, got {type(leaf)}")
    return flat_primals, flat_tangents, primals_spec


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    what = "jvp(f, primals, tangents)"
    flat_primals, flat_tangents, spec = _check_jvp_args(primals, tangents, what)
    _enter("jvp")
    try:
        nested = _nested()
        with torch.enable_grad():
            flat_inputs = [_level_input(p) for p in flat_primals]
            output, aux = _split_aux(func(*_unflatten(flat_inputs, spec)), has_aux, "jvp")
            out_leaves, out_spec = _flatten(output)
            for leaf in out_leaves:
                if not isinstance(leaf, torch.Tensor):
                    _raise("RuntimeError", f"{what}: Expected f(*primals) to return only tensors, got unsupported type {type(leaf)}")
            tangents_out = _tangents_of(out_leaves, flat_inputs, flat_tangents, nested)
            value = _detach_tree(output)
            tangents_out = _detach_tree(tangents_out)
            aux = _detach_tree(aux)
    finally:
        _leave()
    value_tree = value
    tangent_tree = _unflatten(tangents_out, out_spec)
    if has_aux:
        return value_tree, tangent_tree, aux
    return value_tree, tangent_tree


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    # The same Jacobian, computed in reverse mode (Kiln has no forward-mode AD):
    # equal to PyTorch's to float rounding, as jacrev's is.
    if randomness not in ("error", "different", "same"):
        _raise("RuntimeError", f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func, argnums=0):
    # PyTorch's jacfwd(jacrev(func)); Kiln's jacfwd is the reverse-mode Jacobian.
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    # The output, and a function computing jvp at these primals for any
    # tangents: the graph is kept and the double-backward trick runs per call.
    what = "linearize"
    flat_primals, _, spec = _check_jvp_args(primals, primals, what)
    with torch.enable_grad():
        flat_inputs = [p.detach().requires_grad_(True) for p in flat_primals]
        output = func(*_unflatten(flat_inputs, spec))
    out_leaves, out_spec = _flatten(output)

    def jvp_fn(*tangents):
        flat_tangents, tangents_spec = _flatten(tuple(tangents))
        if tangents_spec != spec:
            _raise("RuntimeError", "linearize: jvp_fn expected tangents with the structure of the primals")
        with torch.enable_grad():
            out = _tangents_of(out_leaves, flat_inputs, flat_tangents, False)
        return _unflatten([t.detach() for t in out], out_spec)

    return _detach_tree(output), jvp_fn


def functionalize(func, *, remove="mutations"):
    # Functionalization changes how a graph is written, not what it computes.
    return func


# ---- vmap ----

def _in_dims_of(arg, dims, index):
    leaves, spec = _flatten(arg)
    if dims is None or isinstance(dims, int):
        return leaves, spec, [dims] * len(leaves)
    dim_leaves, dim_spec = _flatten(dims)
    if dim_spec != spec:
        _raise("ValueError", f"vmap(f, in_dims={dims}, ...)(<inputs>): in_dims is not compatible with the structure of `inputs`. in_dims has structure {dim_spec} but inputs has structure {spec}.")
    return leaves, spec, dim_leaves


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    if randomness not in ("error", "different", "same"):
        _raise("RuntimeError", f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if randomness != "error":
        _kiln.raise_unsupported(f"torch.func.vmap(randomness={randomness!r}): Kiln runs vmap one sample at a time and cannot draw PyTorch's batched random numbers")
    name = getattr(func, "__name__", "fn")

    def wrapper(*args, **kwargs):
        if isinstance(in_dims, tuple):
            if len(in_dims) != len(args):
                _raise("ValueError", f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of `inputs`. in_dims has structure of length {len(in_dims)} but inputs has {len(args)} elements.")
            dims_per_arg = in_dims
        elif in_dims is None or isinstance(in_dims, int):
            dims_per_arg = (in_dims,) * len(args)
        else:
            _raise("ValueError", f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a (potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
        flat_args = []
        size = None
        for i, (arg, dims) in enumerate(zip(args, dims_per_arg)):
            leaves, spec, leaf_dims = _in_dims_of(arg, dims, i)
            for leaf, d in zip(leaves, leaf_dims):
                if d is None:
                    continue
                if not isinstance(leaf, torch.Tensor):
                    _raise("ValueError", f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the input is of type {type(leaf)}. We cannot vmap over non-Tensor arguments, please use None as the respective in_dim")
                if d < -leaf.dim() or d >= leaf.dim():
                    _raise("ValueError", f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but that input is a Tensor of dimensionality {leaf.dim()} so expected in_dim to satisfy -{leaf.dim()} <= in_dim < {leaf.dim()}.")
                n = leaf.shape[d]
                if size is None:
                    size = n
                elif n != size:
                    _raise("ValueError", f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {size} and {n} for the mapped dimension")
            flat_args.append((leaves, spec, leaf_dims))
        if size is None:
            _raise("ValueError", f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): At least one of the inputs must be batched (got in_dims that are all None).")
        results = []
        for b in range(size):
            sliced = []
            for leaves, spec, leaf_dims in flat_args:
                sliced.append(_unflatten([x if d is None else x.select(d, b) for x, d in zip(leaves, leaf_dims)], spec))
            state = torch.get_rng_state()
            out = func(*sliced, **kwargs)
            if not torch.equal(state, torch.get_rng_state()):
                torch.set_rng_state(state)
                _raise("RuntimeError", "vmap: called random operation while in randomness error mode. Please either use the 'same' or 'different' randomness flags on vmap or perform the randomness operation out of vmap")
            results.append(out)
        out_leaves0, out_spec = _flatten(results[0])
        flat_results = [_flatten(r)[0] for r in results]
        if isinstance(out_dims, int) or out_dims is None:
            leaf_out_dims = [out_dims] * len(out_leaves0)
        else:
            leaf_out_dims, dims_spec = _flatten(out_dims)
            if dims_spec != out_spec:
                _raise("ValueError", f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the structure of `outputs`.")
        stacked = []
        for k, d in enumerate(leaf_out_dims):
            column = [r[k] for r in flat_results]
            if not isinstance(column[0], torch.Tensor):
                _raise("ValueError", f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(column[0])}. Did you mean to set out_dims= to None for output?")
            if d is None:
                stacked.append(column[0])
            else:
                stacked.append(torch.stack(column, dim=d))
        return _unflatten(stacked, out_spec)
    return wrapper
)PY";

// torch.autograd.functional after PyTorch 2.11's (torch/autograd/functional.py):
// reverse-mode Jacobians one output element at a time, and jvp/hvp through
// the double-backward trick PyTorch itself uses, so only create_graph=True
// gradients are needed. Inputs that keep a graph are copies (clone), where
// PyTorch takes views: Kiln's recorder would merge a full view with its base.
const char* const kAutogradFunctionalSource = R"PY(import torch
import torch._kiln as _kiln


def _raise(kind, message):
    _kiln.raise_error(kind, message)


def _as_tuple(inp, arg_name, fn_name):
    if isinstance(inp, tuple):
        is_tuple = True
    elif isinstance(inp, list):
        is_tuple = True
        inp = tuple(inp)
    else:
        is_tuple = False
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, torch.Tensor):
            if is_tuple:
                _raise("TypeError", f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the value at index {i} has type {type(el)}.")
            _raise("TypeError", f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the given {arg_name} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.clone())
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], torch.Tensor):
        if not create_graph:
            return tuple(inp.detach() for inp in inputs)
        return inputs
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            _raise("RuntimeError", f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        _raise("RuntimeError", "The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            _raise("RuntimeError", f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


def _check_requires_grad(inputs, input_type, strict):
    # strict=True: PyTorch's errors for an output, gradient or Jacobian that does not depend on the inputs.
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            _raise("RuntimeError", f"The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.")
        if not inp.requires_grad:
            if input_type == "hessian":
                _raise("RuntimeError", f"The hessian of the user-provided function with respect to input {i} is independent of the input. This is not allowed in strict mode. You should ensure that your function is thrice differentiable and that the hessian depends on the inputs.")
            if input_type == "jacobian":
                _raise("RuntimeError", f"While computing the hessian, found that the jacobian of the user-provided function with respect to input {i} is independent of the input. This is not allowed in strict mode. You should ensure that your function is twice differentiable and that the jacobian depends on the inputs (this would be violated by a linear function for example).")
            if input_type == "grad_inputs":
                _raise("RuntimeError", f"The gradient with respect to input {i} is independent of the inputs of the user-provided function. This is not allowed in strict mode.")
            _raise("RuntimeError", f"Output {i} of the user-provided function does not require gradients. The outputs must be computed in a differentiable manner from the input when running in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs = []
    new_grad_outputs = []
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(grad_out)
    if len(new_outputs) == 0:
        return (None,) * len(inputs)
    return torch.autograd.grad(new_outputs, inputs, new_grad_outputs, allow_unused=True, create_graph=create_graph,
                               retain_graph=retain_graph)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. This is not allowed in strict mode as it prevents from using the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                _raise("RuntimeError", _INDEPENDENT[stage].format(i=i))
            g = torch.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            _raise("RuntimeError", f"The {what} of the user-provided function is independent of input {i}. This is not allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _v_like_inputs(v, inputs, is_inputs_tuple, create_graph, fn_name):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_inputs_tuple)
    elif len(inputs) != 1 or inputs[0].nelement() != 1:
        _raise("RuntimeError", "The vector v can only be None if the input to the user-provided function is a single Tensor with a single element.")
    return v


def _call_with_v(func, inputs, v, create_graph, strict, fn_name):
    # jvp/vhp/hvp: inputs prepared, v shaped like them, and func called on them (under enable_grad).
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    v = _v_like_inputs(v, inputs, is_inputs_tuple, create_graph, fn_name)
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs


def _single_output(outputs, is_outputs_tuple, fn_name):
    if is_outputs_tuple or not isinstance(outputs[0], torch.Tensor):
        _raise("RuntimeError", f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        _raise("RuntimeError", f"The Tensor returned by the function given to {fn_name} should contain a single element")


def _last_grad(outputs, inputs, v, create_graph, refs, strict, stage):
    # The final differentiation keeps a graph only when asked to, as PyTorch's.
    with torch.set_grad_enabled(True if create_graph else torch.is_grad_enabled()):
        return _fill_in_zeros(_autograd_grad(outputs, inputs, v, create_graph=create_graph), refs, strict,
                              create_graph, stage)


def _results(outputs, is_outputs_tuple, result, is_result_tuple, create_graph):
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_result_tuple))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    with torch.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            _raise("RuntimeError", "The vector v can only be None if the user-provided function returns a single Tensor with a single element.")
    result = _last_grad(outputs, inputs, v, create_graph, inputs, strict, "back")
    return _results(outputs, is_outputs_tuple, result, is_inputs_tuple, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    with torch.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _call_with_v(func, inputs, v, create_graph, strict,
                                                                             "jvp")
        # The double-backward trick: the vjp is linear in its cotangents, so
        # differentiating it with respect to them (at zero) by v gives J v.
        grad_outputs = tuple(torch.zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    result = _last_grad(grad_inputs, grad_outputs, v, create_graph, outputs, strict, "back_trick")
    return _results(outputs, is_outputs_tuple, result, is_outputs_tuple, create_graph)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    # vectorize and strategy change how PyTorch batches the same Jacobian, not its values.
    if strategy not in ("forward-mode", "reverse-mode"):
        _raise("AssertionError", 'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            _raise("NotImplementedError", 'torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"` are not supported together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            _raise("RuntimeError", 'torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            _raise("NotImplementedError", "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly implemented for `vectorize=True`.")
    elif vectorize and strict:
        _raise("RuntimeError", "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported together. Please either set `strict=False` or `vectorize=False`.")
    with torch.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        jac = []
        for i, out in enumerate(outputs):
            per_input = [[] for _ in inputs]
            flat = out.reshape(-1)
            for j in range(flat.nelement()):
                if out.requires_grad:
                    rows = torch.autograd.grad(flat[j], inputs, retain_graph=True, create_graph=create_graph,
                                               allow_unused=True)
                else:
                    rows = (None,) * len(inputs)
                for k, (row, inp) in enumerate(zip(rows, inputs)):
                    if row is not None and strict and create_graph and not row.requires_grad:
                        _raise("RuntimeError", f"The jacobian of the user-provided function is independent of input {i}. This is not allowed in strict mode when create_graph=True.")
                    if row is None and strict:
                        _raise("RuntimeError", f"Output {i} of the user-provided function is independent of input {k}. This is not allowed in strict mode.")
                    per_input[k].append(torch.zeros_like(inp) if row is None else row)
            jac_i = []
            for k, inp in enumerate(inputs):
                if per_input[k]:
                    jac_i.append(torch.stack(per_input[k], dim=0).view(out.size() + inp.size()))
                else:
                    jac_i.append(torch.zeros(out.size() + inp.size(), dtype=inp.dtype))
            jac.append(tuple(jac_i))
        jac = _grad_postprocess(tuple(jac), create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        _raise("AssertionError", 'Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if is_out_tuple or not isinstance(out, torch.Tensor):
            _raise("RuntimeError", "The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            _raise("RuntimeError", "The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    with torch.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _call_with_v(func, inputs, v, create_graph, strict,
                                                                             "vhp")
        _single_output(outputs, is_outputs_tuple, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    result = _last_grad(jac, inputs, v, create_graph, inputs, strict, "double_back")
    return _results(outputs, is_outputs_tuple, result, is_inputs_tuple, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    with torch.enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs = _call_with_v(func, inputs, v, create_graph, strict,
                                                                             "hvp")
        _single_output(outputs, is_outputs_tuple, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_jac = tuple(torch.zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    result = _last_grad(double_back, grad_jac, v, create_graph, inputs, strict, "double_back_trick")
    return _results(outputs, is_outputs_tuple, result, is_inputs_tuple, create_graph)
)PY";

void install_autograd_functional(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kAutogradFunctionalSource, "torch/autograd/functional.py");
  auto m = make<Module>("torch.autograd.functional");
  vm.add_module(m);
  Ref<Dict> globals = run_prelude(vm, code, m->name, "torch.autograd.functional");
  if (!globals) return;
  for (const char* name : {"vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"})
    if (const Value* v = globals->find_str(name)) m->dict->set(str_value(name), *v);
  if (Ref<Module> autograd = vm.module("torch.autograd")) autograd->dict->set(str_value("functional"), Value(m));
}

void install_func(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kFuncSource, "torch/_functorch/apis.py");
  auto m = make<Module>("torch.func");
  vm.add_module(m);
  Ref<Dict> globals = run_prelude(vm, code, m->name, "torch.func");
  if (!globals) return;
  for (const char* name : {"functional_call", "stack_module_state", "grad", "grad_and_value", "vjp", "jacrev", "jvp",
                           "jacfwd", "hessian", "linearize", "functionalize", "vmap"})
    if (const Value* v = globals->find_str(name)) m->dict->set(str_value(name), *v);
}

}  // namespace

void install_func_prelude(VM& vm) {
  vm.add_lazy_module("torch.func", install_func);
  vm.add_lazy_module("torch.autograd.functional", install_autograd_functional);
  // torch.vmap is torch.func.vmap, made when first called.
  if (Ref<Module> torch = vm.module("torch"))
    set_attr_builtin(torch->dict, "torch.vmap", "vmap", [](VM& vm, const CallArgs& a) -> Value {
      Ref<Module> func = vm.module("torch.func");
      const Value* vmap = func ? func->dict->find_str("vmap") : nullptr;
      if (!vmap) throw PyError("RuntimeError", "torch.func did not install");
      return vm.call(*vmap, a);
    });
}

}  // namespace kiln::py
