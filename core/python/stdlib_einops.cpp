// einops over Kiln's torch: rearrange, repeat, reduce, einsum, pack, unpack,
// parse_shape and the layers einops.layers.torch.Rearrange/Reduce, with the
// semantics and error texts of einops 0.8 for torch tensors. Model files
// (vit-pytorch, diffusion UNets) import it at the top; it is written here in
// the subset, so inside torch.compile its reshapes and permutes are traced as
// any Python function's (Dynamo keeps einops' functions as single graph calls:
// explain's op counts differ there).
#include "core/python/compiler.h"
#include "core/python/stdlib.h"

namespace kiln::py {

namespace {

const char* const kEinopsSource = R"PY(# einops: pattern parsing and the reshape/permute/expand plan it gives.
import torch

__version__ = "0.8.1"


class EinopsError(RuntimeError):
    pass


_ELLIPSIS = "\u2026"
_REDUCTIONS = ("min", "max", "sum", "mean", "prod", "any", "all")


class _Anonymous:
    # A numeric axis such as the 2 of "(h 2)": every occurrence is its own axis.
    def __init__(self, value):
        self.value = int(value)
        if self.value <= 1:
            if self.value == 1:
                raise EinopsError("No need to create anonymous axis of length 1. Report this as an issue")
            raise EinopsError("Anonymous axis should have positive length, not {}".format(self.value))

    def __repr__(self):
        return "{}-axis".format(str(self.value))


def _axis_name_problem(name, allow_underscore=False):
    if not str.isidentifier(name):
        return "not a valid python identifier"
    if name[0] == "_" or name[-1] == "_":
        if name == "_" and allow_underscore:
            return None
        return "axis name should should not start or end with underscore"
    return None


class _Expression:
    # One side of a pattern: `composition` lists, per tensor axis, the names
    # (or _Anonymous axes) it is made of; a bare ellipsis stands as itself.
    def __init__(self, expression, allow_underscore=False, allow_duplicates=False):
        self.has_ellipsis = False
        self.has_ellipsis_parenthesized = None
        self.identifiers = set()
        self.has_non_unitary_anonymous_axes = False
        self.composition = []
        if "." in expression:
            if "..." not in expression:
                raise EinopsError("Expression may contain dots only inside ellipsis (...)")
            if str.count(expression, "...") != 1 or str.count(expression, ".") != 3:
                raise EinopsError("Expression may contain dots only inside ellipsis (...); only one ellipsis for tensor ")
            expression = expression.replace("...", _ELLIPSIS)
            self.has_ellipsis = True
        group = None
        word = None
        for char in expression + " ":
            if char in "() ":
                if word is not None:
                    self._add(word, group, allow_underscore, allow_duplicates)
                word = None
                if char == "(":
                    if group is not None:
                        raise EinopsError("Axis composition is one-level (brackets inside brackets not allowed)")
                    group = []
                elif char == ")":
                    if group is None:
                        raise EinopsError("Brackets are not balanced")
                    self.composition.append(group)
                    group = None
            elif str.isalnum(char) or char == "_" or char == _ELLIPSIS:
                word = char if word is None else word + char
            else:
                raise EinopsError("Unknown character '{}'".format(char))
        if group is not None:
            raise EinopsError('Imbalanced parentheses in expression: "{}"'.format(expression))

    def _add(self, name, group, allow_underscore, allow_duplicates):
        if name in self.identifiers and not (allow_underscore and name == "_") and not allow_duplicates:
            raise EinopsError('Indexing expression contains duplicate dimension "{}"'.format(name))
        if name == _ELLIPSIS:
            self.identifiers.add(_ELLIPSIS)
            if group is None:
                self.composition.append(_ELLIPSIS)
                self.has_ellipsis_parenthesized = False
            else:
                group.append(_ELLIPSIS)
                self.has_ellipsis_parenthesized = True
            return
        is_number = str.isdecimal(name)
        if is_number and int(name) == 1:
            if group is None:
                self.composition.append([])
            return
        problem = None if is_number else _axis_name_problem(name, allow_underscore)
        if problem is not None:
            raise EinopsError("Invalid axis identifier: {}\n{}".format(name, problem))
        axis = _Anonymous(name) if is_number else name
        self.identifiers.add(axis)
        if is_number:
            self.has_non_unitary_anonymous_axes = True
        if group is None:
            self.composition.append([axis])
        else:
            group.append(axis)


def _expand_ellipsis(composition, names):
    out = []
    for part in composition:
        if part == _ELLIPSIS:
            for n in names:
                out.append([n])
        else:
            group = []
            for axis in part:
                if axis == _ELLIPSIS:
                    group.extend(names)
                else:
                    group.append(axis)
            out.append(group)
    return out


def _plan(pattern, operation, axes_names, ndim):
    left_str, right_str = pattern.split("->")
    left = _Expression(left_str)
    right = _Expression(right_str)
    if not left.has_ellipsis and right.has_ellipsis:
        raise EinopsError("Ellipsis found in right side, but not left side of a pattern {}".format(pattern))
    if left.has_ellipsis and left.has_ellipsis_parenthesized:
        raise EinopsError("Ellipsis inside parenthesis in the left side is not allowed: {}".format(pattern))
    if operation == "rearrange":
        if left.has_non_unitary_anonymous_axes or right.has_non_unitary_anonymous_axes:
            raise EinopsError("Non-unitary anonymous axes are not supported in rearrange (exception is length 1)")
        difference = set.symmetric_difference(left.identifiers, right.identifiers)
        if len(difference) > 0:
            raise EinopsError("Identifiers only on one side of expression (should be on both): {}".format(difference))
    elif operation == "repeat":
        difference = set.difference(left.identifiers, right.identifiers)
        if len(difference) > 0:
            raise EinopsError("Unexpected identifiers on the left side of repeat: {}".format(difference))
        known = set(left.identifiers)
        known.update(axes_names)
        missing = set(ax for ax in right.identifiers if not isinstance(ax, _Anonymous) and ax not in known)
        if len(missing) > 0:
            raise EinopsError("Specify sizes for new axes in repeat: {}".format(missing))
    elif operation in _REDUCTIONS or callable(operation):
        difference = set.difference(right.identifiers, left.identifiers)
        if len(difference) > 0:
            raise EinopsError("Unexpected identifiers on the right side of reduce {}: {}".format(operation, difference))
    else:
        raise EinopsError("Unknown reduction {}. Expect one of {}.".format(operation, _REDUCTIONS))

    if left.has_ellipsis:
        n_other = len(left.composition) - 1
        if ndim < n_other:
            raise EinopsError("Wrong shape: expected >={} dims. Received {}-dim tensor.".format(n_other, ndim))
        ell = [_ELLIPSIS + str(i) for i in range(ndim - n_other)]
        left_comp = _expand_ellipsis(left.composition, ell)
        right_comp = _expand_ellipsis(right.composition, ell)
    else:
        if ndim != len(left.composition):
            raise EinopsError("Wrong shape: expected {} dims. Received {}-dim tensor.".format(len(left.composition), ndim))
        left_comp = left.composition
        right_comp = right.composition

    left_axes = [ax for group in left_comp for ax in group]
    right_axes = [ax for group in right_comp for ax in group]
    for name in axes_names:
        if _axis_name_problem(name) is not None:
            raise EinopsError("Invalid name for an axis", name)
        if name not in left_axes and name not in right_axes:
            raise EinopsError("Axis {} is not used in transform".format(name))
    for group in left_comp:
        unknown = [ax for ax in group if not isinstance(ax, _Anonymous) and ax not in axes_names]
        if len(unknown) > 1:
            raise EinopsError("Could not infer sizes for {}".format(set(unknown)))
    return left_comp, right_comp, left_axes, right_axes


def _apply(tensor, pattern, operation, axes_lengths):
    shape = tensor.shape
    left_comp, right_comp, left_axes, right_axes = _plan(pattern, operation, list(axes_lengths), len(shape))
    lengths = {}
    for ax in left_axes + right_axes:
        if isinstance(ax, _Anonymous):
            lengths[ax] = ax.value
    for name, value in axes_lengths.items():
        lengths[name] = value
    for i in range(len(left_comp)):
        group = left_comp[i]
        length = shape[i]
        unknown = [ax for ax in group if ax not in lengths]
        known = 1
        for ax in group:
            if ax in lengths:
                known *= lengths[ax]
        if len(unknown) == 0:
            if length != known:
                raise EinopsError("Shape mismatch, {} != {}".format(length, known))
        else:
            if length % known != 0:
                raise EinopsError("Shape mismatch, can't divide axis of length {} in chunks of {}".format(length, known))
            lengths[unknown[0]] = length // known

    if any(len(group) != 1 for group in left_comp):
        tensor = tensor.reshape([lengths[ax] for ax in left_axes])
    reduced = [i for i in range(len(left_axes)) if left_axes[i] not in right_axes]
    if len(reduced) > 0:
        if callable(operation):
            tensor = operation(tensor, tuple(reduced))
        elif operation == "min":
            tensor = tensor.amin(dim=tuple(reduced))
        elif operation == "max":
            tensor = tensor.amax(dim=tuple(reduced))
        elif operation == "sum":
            tensor = tensor.sum(dim=tuple(reduced))
        elif operation == "mean":
            tensor = tensor.mean(dim=tuple(reduced))
        else:
            for i in sorted(reduced)[::-1]:
                tensor = getattr(tensor, operation)(dim=i)
    kept = [ax for ax in left_axes if ax in right_axes]
    order = [kept.index(ax) for ax in right_axes if ax in kept]
    if order != list(range(len(order))):
        tensor = tensor.permute(order)
    if len(kept) != len(right_axes):
        repeats = []
        for pos in range(len(right_axes)):
            ax = right_axes[pos]
            if ax in kept:
                repeats.append(-1)
            else:
                tensor = torch.unsqueeze(tensor, pos)
                repeats.append(lengths[ax])
        tensor = tensor.expand(repeats)
    if any(len(group) != 1 for group in right_comp):
        final = []
        for group in right_comp:
            n = 1
            for ax in group:
                n *= lengths[ax]
            final.append(n)
        tensor = tensor.reshape(final)
    return tensor


def _reduce(tensor, pattern, reduction, axes_lengths):
    try:
        if isinstance(tensor, list):
            if len(tensor) == 0:
                raise TypeError("Rearrange/Reduce/Repeat can't be applied to an empty list")
            tensor = torch.stack(tensor)
        return _apply(tensor, pattern, reduction, axes_lengths)
    except EinopsError as e:
        message = ' Error while processing {}-reduction pattern "{}".'.format(reduction, pattern)
        if not isinstance(tensor, list):
            message += "\n Input tensor shape: {}. ".format(tensor.shape)
        else:
            message += "\n Input is list. "
        message += "Additional info: {}.".format(axes_lengths)
        raise EinopsError(message + "\n {}".format(e))


def reduce(tensor, pattern, reduction, **axes_lengths):
    return _reduce(tensor, pattern, reduction, axes_lengths)


def rearrange(tensor, pattern, **axes_lengths):
    return _reduce(tensor, pattern, "rearrange", axes_lengths)


def repeat(tensor, pattern, **axes_lengths):
    return _reduce(tensor, pattern, "repeat", axes_lengths)


def parse_shape(x, pattern):
    expr = _Expression(pattern, allow_underscore=True)
    shape = x.shape
    if expr.has_non_unitary_anonymous_axes:
        raise RuntimeError("Can't parse shape with this number of dimensions: {pattern}, {shape}".format(pattern=pattern, shape=shape))
    comp = expr.composition
    if expr.has_ellipsis:
        if len(shape) < len(comp) - 1:
            raise RuntimeError("Can't parse shape with this number of dimensions: {pattern}, {shape}".format(pattern=pattern, shape=shape))
        at = comp.index(_ELLIPSIS)
        comp = comp[:at] + [["_"]] * (len(shape) - len(comp) + 1) + comp[at + 1:]
    elif len(shape) != len(comp):
        raise RuntimeError("Can't parse shape with different number of dimensions: {pattern} {shape}".format(pattern=pattern, shape=shape))
    result = {}
    for group, length in zip(comp, shape):
        if len(group) == 0:
            if length != 1:
                raise RuntimeError("Length of axis is not 1: {pattern} {shape}".format(pattern=pattern, shape=shape))
        elif len(group) > 1:
            raise RuntimeError("Can't parse shape with composite axes: {pattern} {shape}".format(pattern=pattern, shape=shape))
        elif group[0] != "_":
            result[group[0]] = length
    return result


def _compact_einsum(pattern):
    if "->" not in pattern:
        raise ValueError("Einsum pattern must contain '->'.")
    lefts_str, right_str = pattern.split("->")
    lefts = [_Expression(left, allow_underscore=True, allow_duplicates=True) for left in lefts_str.split(",")]
    right = _Expression(right_str, allow_underscore=True)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    mapping = {}
    parts = []
    for expr in lefts + [right]:
        text = ""
        for group in expr.composition:
            if group == _ELLIPSIS:
                text += "..."
                continue
            if len(group) != 1:
                if len(group) == 0:
                    raise NotImplementedError("Singleton () axes are not yet supported in einsum.")
                raise NotImplementedError("Shape rearrangement is not yet supported in einsum.")
            name = group[0]
            if name not in mapping:
                if expr is right:
                    raise EinopsError("Unknown axis {} on right side of einsum {}.".format(name, pattern))
                if len(mapping) >= len(letters):
                    raise RuntimeError("Too many axes in einsum.")
                mapping[name] = letters[len(mapping)]
            text += mapping[name]
        parts.append(text)
    return ",".join(parts[:-1]) + "->" + parts[-1]


def einsum(*tensors_and_pattern):
    if len(tensors_and_pattern) <= 1:
        raise ValueError("`einops.einsum` takes at minimum two arguments: the tensors (at least one), followed by the pattern.")
    pattern = tensors_and_pattern[-1]
    if not isinstance(pattern, str):
        raise ValueError("The last argument passed to `einops.einsum` must be a string, representing the einsum pattern.")
    return torch.einsum(_compact_einsum(pattern), *tensors_and_pattern[:-1])


# einops registers these with torch._dynamo.allow_in_graph when imported
# (allow_ops_in_compiled_graph): Dynamo keeps each call as one node, which the
# replay runs as the functions above. The layers apply their pattern without
# them, as einops' layers do.
rearrange.__kiln_graph_target__ = "einops.einops.rearrange"
repeat.__kiln_graph_target__ = "einops.einops.repeat"
reduce.__kiln_graph_target__ = "einops.einops.reduce"
einsum.__kiln_graph_target__ = "einops.einops.einsum"


def _pack_axes(pattern, opname):
    axes = pattern.split()
    if len(axes) != len(set(axes)):
        raise EinopsError('Duplicates in axes names in {}(..., "{}")'.format(opname, pattern))
    if "*" not in axes:
        raise EinopsError('No *-axis in {}(..., "{}")'.format(opname, pattern))
    for axis in axes:
        if axis != "*" and _axis_name_problem(axis) is not None:
            raise EinopsError('Invalid axis name {} in {}(..., "{}")'.format(axis, opname, pattern))
    before = axes.index("*")
    return before, len(axes) - before - 1


def pack(tensors, pattern):
    before, after = _pack_axes(pattern, "pack")
    reshaped = []
    shapes = []
    for i, tensor in enumerate(tensors):
        shape = tensor.shape
        if len(shape) < before + after:
            raise EinopsError("packed tensor #{} (enumeration starts with 0) has shape {}, while pattern {} assumes at least {} axes".format(i, shape, pattern, before + after))
        end = len(shape) - after
        shapes.append(shape[before:end])
        reshaped.append(tensor.reshape(list(shape[:before]) + [-1] + list(shape[end:])))
    return torch.cat(reshaped, dim=before), shapes


def unpack(tensor, packed_shapes, pattern):
    before, after = _pack_axes(pattern, "unpack")
    shape = tensor.shape
    if len(shape) != before + 1 + after:
        raise EinopsError("unpack(..., {}) received input of wrong dim with shape {}".format(pattern, shape))
    sizes = []
    for p in packed_shapes:
        if -1 in p:
            sizes.append(-1)
        else:
            n = 1
            for d in p:
                n *= d
            sizes.append(n)
    if sizes.count(-1) > 1:
        raise EinopsError("unpack(..., {}) received more than one -1 in {} and can't infer dimensions".format(pattern, packed_shapes))
    bounds = [0] * len(packed_shapes) + [shape[before]]
    if -1 not in sizes:
        for i in range(len(sizes) - 1):
            bounds[i + 1] = bounds[i] + sizes[i]
    else:
        u = sizes.index(-1)
        for i in range(u):
            bounds[i + 1] = bounds[i] + sizes[i]
        for j in range(len(sizes) - 1, u, -1):
            bounds[j] = bounds[j + 1] - sizes[j]
    try:
        return [tensor.narrow(before, bounds[i], bounds[i + 1] - bounds[i]).reshape(list(shape[:before]) + list(packed_shapes[i]) + list(shape[before + 1:])) for i in range(len(packed_shapes))]
    except Exception:
        raise RuntimeError('Error during unpack(..., "{}"): could not split axis of size {} into requested {}'.format(pattern, bounds[-1], packed_shapes))


# einops marks these two for the graph as well (allow_ops_in_compiled_graph):
# pack's list of shapes is Python values, not tensors, so only its tensor
# gets a getitem node, and unpack takes the shapes as a constant argument.
pack.__kiln_graph_target__ = "einops.packing.pack"
unpack.__kiln_graph_target__ = "einops.packing.unpack"
)PY";

const char* const kEinopsLayersSource = R"PY(# einops.layers: the modules live in einops.layers.torch.
)PY";

const char* const kEinopsTorchLayersSource = R"PY(# einops.layers.torch: Rearrange and Reduce as nn.Modules.
import torch
import einops


class Rearrange(torch.nn.Module):
    def __init__(self, pattern, **axes_lengths):
        super().__init__()
        self.pattern = pattern
        self.axes_lengths = axes_lengths

    def __repr__(self):
        params = repr(self.pattern)
        for axis, length in self.axes_lengths.items():
            params += ", {}={}".format(axis, length)
        return "{}({})".format(self.__class__.__name__, params)

    def forward(self, input):
        return einops._reduce(input, self.pattern, "rearrange", self.axes_lengths)


class Reduce(torch.nn.Module):
    def __init__(self, pattern, reduction, **axes_lengths):
        super().__init__()
        self.pattern = pattern
        self.reduction = reduction
        self.axes_lengths = axes_lengths

    def __repr__(self):
        params = "{!r}, {!r}".format(self.pattern, self.reduction)
        for axis, length in self.axes_lengths.items():
            params += ", {}={}".format(axis, length)
        return "{}({})".format(self.__class__.__name__, params)

    def forward(self, input):
        return einops._reduce(input, self.pattern, self.reduction, self.axes_lengths)
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_einops, kEinopsSource, "einops/__init__.py")
KILN_STDLIB_SOURCE(load_einops_layers, kEinopsLayersSource, "einops/layers/__init__.py")
KILN_STDLIB_SOURCE(load_einops_layers_torch, kEinopsTorchLayersSource, "einops/layers/torch.py")

}  // namespace kiln::py
