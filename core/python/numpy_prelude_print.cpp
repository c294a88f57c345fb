// NumPy's array printing: array2string's choice of digits, padding, wrapping at
// the line width and summarisation, array_repr's dtype and shape suffixes.
#include "core/python/stdlib.h"

namespace kiln::py {

extern const char* const kNumpyPrintSource;
const char* const kNumpyPrintSource = R"PY(# NumPy's array printing (numpy/_core/arrayprint.py's rules) in Kiln's subset.

_options = {"precision": 8, "threshold": 1000, "edgeitems": 3, "linewidth": 75, "suppress": False,
            "nanstr": "nan", "infstr": "inf", "sign": "-", "floatmode": "maxprec", "legacy": False}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, suppress=None, nanstr=None,
                     infstr=None, formatter=None, sign=None, floatmode=None, legacy=None, override_repr=None):
    if formatter is not None:
        _refuse("np.set_printoptions(formatter=)")
    if legacy is not None and legacy is not False:
        _refuse("np.set_printoptions(legacy=)")
    if override_repr is not None:
        _refuse("np.set_printoptions(override_repr=)")
    if sign is not None and sign not in ("-", "+", " "):
        _raise("ValueError", "sign option must be one of ' ', '+', or '-'")
    if floatmode is not None and floatmode not in ("fixed", "unique", "maxprec", "maxprec_equal"):
        _raise("ValueError", "floatmode option must be one of 'fixed', 'unique', 'maxprec', 'maxprec_equal'")
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems), ("linewidth", linewidth),
                 ("suppress", suppress), ("nanstr", nanstr), ("infstr", infstr), ("sign", sign), ("floatmode", floatmode)):
        if v is not None:
            if k == "threshold" and isinstance(v, float) and v != v:
                _raise("ValueError", "threshold must be non-NAN, try sys.maxsize for untruncated representation")
            _options[k] = _pybool(v) if k == "suppress" else v


def get_printoptions():
    r = dict(_options)
    r["formatter"] = None
    return r


class printoptions:
    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __enter__(self):
        self.saved = dict(_options)
        set_printoptions(**self.kwargs)
        return get_printoptions()

    def __exit__(self, *args):
        _options.clear()
        _options.update(self.saved)
        return False


def _isfinite(v):
    return v == v and v != _INF and v != -_INF


class _FloatFormat:
    """FloatingFormat: digits chosen once for all the values printed, then each value padded to them."""

    def __init__(self, vals, bits, opts):
        self.bits = bits
        self.floatmode = opts["floatmode"]
        self.precision = None if self.floatmode == "unique" else opts["precision"]
        self.suppress = opts["suppress"]
        self.sign = opts["sign"]
        self.nanstr = opts["nanstr"]
        self.infstr = opts["infstr"]
        self.exp_format = False
        finite = [v for v in vals if _isfinite(v)]
        abs_non_zero = [_pyabs(v) for v in finite if v != 0]
        if abs_non_zero:
            mx = _pymax(abs_non_zero)
            mn = _pymin(abs_non_zero)
            # NumPy 2.3+ switches to scientific notation from 10**min(8, decimal
            # precision of the dtype) (1e6 for float32); the comparisons are in the
            # array's own precision (NEP 50: the Python float adapts).
            lim_hi = {64: 1.0e8, 32: 1.0e6, 16: 1.0e3}[bits]
            lim_lo = _nat.round_to(0.0001, bits)
            ratio = _nat.round_to(mx / mn, bits)
            if mx >= lim_hi or (not self.suppress and (mn < lim_lo or ratio > 1000.0)):
                self.exp_format = True
        prec = -1 if self.precision is None else self.precision
        plus = self.sign == "+"
        if not finite:
            self.pad_left = 0
            self.pad_right = 0
            self.trim = "."
            self.exp_size = -1
            self.unique = True
            self.min_digits = -1
        elif self.exp_format:
            trim = "."
            unique = True
            if self.floatmode == "fixed":
                trim = "k"
                unique = False
            strs = [_nat.fmt_sci(v, bits, prec, unique, trim, -1, -1, -1, plus) for v in finite]
            ints = []
            fracs = []
            exps = []
            for s in strs:
                m, _, ex = s.partition("e")
                ip, _, fp = m.partition(".")
                ints.append(ip)
                fracs.append(fp)
                exps.append(ex)
            self.exp_size = _pymax([len(x) for x in exps]) - 1
            self.trim = "k"
            self.precision = _pymax([len(x) for x in fracs])
            self.min_digits = self.precision
            self.unique = unique
            self.pad_left = _pymax([len(x) for x in ints])
            self.pad_right = self.exp_size + 2 + self.precision
        else:
            trim = "."
            unique = True
            if self.floatmode == "fixed":
                trim = "k"
                unique = False
            strs = [_nat.fmt_pos(v, bits, prec, unique, trim, -1, -1, -1, plus) for v in finite]
            ints = []
            fracs = []
            for s in strs:
                ip, _, fp = s.partition(".")
                ints.append(ip)
                fracs.append(fp)
            self.pad_left = _pymax([len(x) for x in ints])
            self.pad_right = _pymax([len(x) for x in fracs])
            self.exp_size = -1
            self.unique = unique
            if self.floatmode in ("fixed", "maxprec_equal"):
                self.precision = self.pad_right
                self.min_digits = self.pad_right
                self.trim = "k"
            else:
                self.trim = "."
                self.min_digits = 0
        if self.sign == " " and not _pyany([_math.copysign(1.0, v) < 0 for v in finite]):
            self.pad_left += 1
        if len(finite) != len(vals):
            neginf = self.sign != "-" or _pyany([v == -_INF for v in vals])
            offset = self.pad_right + 1
            self.pad_left = _pymax(self.pad_left, len(self.nanstr) - offset, len(self.infstr) + (1 if neginf else 0) - offset)

    def __call__(self, v):
        if not _isfinite(v):
            if v != v:
                ret = ("+" if self.sign == "+" else "") + self.nanstr
            else:
                ret = ("-" if v < 0 else "+" if self.sign == "+" else "") + self.infstr
            return " " * (self.pad_left + self.pad_right + 1 - len(ret)) + ret
        prec = -1 if self.precision is None else self.precision
        md = -1 if self.min_digits is None else self.min_digits
        plus = self.sign == "+"
        if self.exp_format:
            return _nat.fmt_sci(v, self.bits, prec, self.unique, self.trim, md, self.pad_left, self.exp_size, plus)
        return _nat.fmt_pos(v, self.bits, prec, self.unique, self.trim, md, self.pad_left, self.pad_right, plus)


class _IntFormat:
    def __init__(self, vals, opts):
        sign = opts["sign"]
        width = 0
        if vals:
            mx = _pymax(vals)
            mn = _pymin(vals)
            wmax = len(str(mx))
            if sign == " " and mn < 0:
                sign = "-"
            if mx >= 0 and sign in "+ ":
                wmax += 1
            width = _pymax(wmax, len(str(mn)))
        self.width = width
        self.sign = sign

    def __call__(self, v):
        s = str(v)
        if v >= 0 and self.sign != "-":
            s = self.sign + s
        return " " * (self.width - len(s)) + s


class _BoolFormat:
    def __init__(self, zero_d):
        self.true = "True" if zero_d else " True"

    def __call__(self, v):
        return self.true if v else "False"


def _summarized(t, edge):
    """The edge items NumPy shows of a large array (its _leading_trailing)."""
    for ax in range(t.dim()):
        n = t.shape[ax]
        if n > 2 * edge:
            t = torch.cat([t.narrow(ax, 0, edge), t.narrow(ax, n - edge, edge)], ax)
    return t


def _formatter(a, t, opts):
    d = a._dt
    if d.kind == "U":
        return _StrFormat(a._s)
    vals = t.reshape(-1).tolist()
    if d.kind == "b":
        return _BoolFormat(a.ndim == 0)
    if d.kind in "iu":
        return _IntFormat(vals, opts)
    return _FloatFormat(vals, d._bits, opts)


def _extend_line(s, line, word, width, next_prefix):
    needs_wrap = len(line) + len(word) > width
    if len(line) <= len(next_prefix):
        needs_wrap = False
    if needs_wrap:
        s += line.rstrip() + "\n"
        line = next_prefix
    return s, line + word


def _format_array(data, summary, fmt, line_width, next_line_prefix, separator, edge):
    """_formatArray over nested lists (summarized dimensions hold only their edge items)."""
    return _format_rows((summary, fmt, separator, edge), data, 0, next_line_prefix, line_width)


# A module function rather than a closure that calls itself: Kiln counts
# references, and a recursive closure would keep itself alive after the call.
def _format_rows(ctx, node, axis, hanging_indent, curr_width):
    summary, fmt, separator, edge = ctx
    ndim = len(summary)
    axes_left = ndim - axis
    if axes_left == 0:
        return fmt(node)
    next_hanging = hanging_indent + " "
    next_width = curr_width - 1
    if summary[axis]:
        leading = node[:edge]
        trailing = node[edge:]
    else:
        leading = []
        trailing = node
    s = ""
    if axes_left == 1:
        elem_width = curr_width - _pymax(len(separator.rstrip()), 1)
        line = hanging_indent
        for x in leading:
            s, line = _extend_line(s, line, _format_rows(ctx, x, axis + 1, next_hanging, next_width), elem_width, hanging_indent)
            line += separator
        if summary[axis]:
            s, line = _extend_line(s, line, "...", elem_width, hanging_indent)
            line += separator
        for x in trailing[:-1]:
            s, line = _extend_line(s, line, _format_rows(ctx, x, axis + 1, next_hanging, next_width), elem_width, hanging_indent)
            line += separator
        s, line = _extend_line(s, line, _format_rows(ctx, trailing[-1], axis + 1, next_hanging, next_width), elem_width, hanging_indent)
        s += line
    else:
        line_sep = separator.rstrip() + "\n" * (axes_left - 1)
        for x in leading:
            s += hanging_indent + _format_rows(ctx, x, axis + 1, next_hanging, next_width) + line_sep
        if summary[axis]:
            s += hanging_indent + "..." + line_sep
        for x in trailing[:-1]:
            s += hanging_indent + _format_rows(ctx, x, axis + 1, next_hanging, next_width) + line_sep
        s += hanging_indent + _format_rows(ctx, trailing[-1], axis + 1, next_hanging, next_width)
    return "[" + s[len(hanging_indent):] + "]"


def _array2string(a, opts, separator, prefix, suffix=""):
    if a.size == 0:
        return "[]"
    width = opts["linewidth"] - len(suffix)
    edge = opts["edgeitems"]
    summarize = a.size > opts["threshold"]
    t = _summarized(_data(a), edge) if summarize else _data(a)
    fmt = _formatter(a, t, opts)
    summary = [summarize and n > 2 * edge for n in a.shape]
    data = t.tolist()
    return _format_array(data, summary, fmt, width, " " + " " * len(prefix), separator, edge)


def _opts(max_line_width=None, precision=None, suppress_small=None, threshold=None, edgeitems=None, sign=None,
          floatmode=None):
    o = dict(_options)
    for k, v in (("linewidth", max_line_width), ("precision", precision), ("suppress", suppress_small),
                 ("threshold", threshold), ("edgeitems", edgeitems), ("sign", sign), ("floatmode", floatmode)):
        if v is not None:
            o[k] = v
    return o


def array2string(a, max_line_width=None, precision=None, suppress_small=None, separator=" ", prefix="", style=None,
                 formatter=None, threshold=None, edgeitems=None, sign=None, floatmode=None, suffix="", legacy=None):
    if formatter is not None:
        _refuse("np.array2string(formatter=)")
    a = asarray(a)
    return _array2string(a, _opts(max_line_width, precision, suppress_small, threshold, edgeitems, sign, floatmode),
                         separator, prefix, suffix)


_IMPLIED = (_float64_dt, _int64_dt, _bool_dt)


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    a = asarray(arr)
    o = _opts(max_line_width, precision, suppress_small)
    prefix = "array("
    if a.size == 0:
        body = "[]"
    elif a.ndim == 0:
        body = _formatter(a, _data(a), o)(_data(a).item())
    else:
        body = _array2string(a, o, ", ", prefix, ")")
    extras = []
    # NumPy 2.2 names the shape of arrays it summarizes (1.x did not).
    if (a.size == 0 and a.shape != (0,)) or a.size > o["threshold"]:
        extras.append("shape=" + repr(a.shape))
    if a._dt not in _IMPLIED or a.size == 0:
        extras.append("dtype=" + (repr(a._dt._str) if a._dt.kind == "U" else a._dt.name))
    if not extras:
        return prefix + body + ")"
    arr_str = prefix + body + ","
    extra = ", ".join(extras) + ")"
    last = len(arr_str) - (arr_str.rfind("\n") + 1)
    spacer = " "
    if last + len(extra) + 1 > o["linewidth"]:
        spacer = "\n" + " " * len(prefix)
    return arr_str + spacer + extra


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    a = asarray(a)
    if a.ndim == 0:
        return str(a[()])
    return _array2string(a, _opts(max_line_width, precision, suppress_small), " ", "")


def format_float_positional(x, precision=None, unique=True, fractional=True, trim="k", sign=False, pad_left=None,
                            pad_right=None, min_digits=None):
    if not fractional:
        _refuse("np.format_float_positional(fractional=False)")
    bits = x._dtype._bits if isinstance(x, floating) else 64
    v = float(x)
    if not _isfinite(v):
        return _float_scalar_str(v, bits)
    return _nat.fmt_pos(v, bits, -1 if precision is None else precision, unique, trim, -1 if min_digits is None else min_digits,
                        -1 if pad_left is None else pad_left, -1 if pad_right is None else pad_right, sign)


def format_float_scientific(x, precision=None, unique=True, trim="k", sign=False, pad_left=None, exp_digits=None,
                            min_digits=None):
    bits = x._dtype._bits if isinstance(x, floating) else 64
    v = float(x)
    if not _isfinite(v):
        return _float_scalar_str(v, bits)
    return _nat.fmt_sci(v, bits, -1 if precision is None else precision, unique, trim, -1 if min_digits is None else min_digits,
                        -1 if pad_left is None else pad_left, -1 if exp_digits is None else exp_digits, sign)
)PY";

}  // namespace kiln::py
