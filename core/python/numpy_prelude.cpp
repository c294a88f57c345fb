// Kiln's NumPy subset: `import numpy` gives ndarray, NumPy's scalar types and
// dtypes, the functions model code uses around its models, NumPy's printing
// and the legacy numpy.random. An ndarray is a Python class holding a CPU
// torch tensor (`_t`), so Tensor.numpy() and torch.from_numpy share memory as
// in PyTorch, and arithmetic runs on Kiln's kernels once NumPy's own type
// promotion (NEP 50, NumPy 2) has chosen the dtype. The numbers NumPy makes
// in its own order (sums, random draws, printed digits) come from
// numpy_native.cpp. What is not modelled is refused by name at its line
// (exit 3), never approximated.
//
// The module runs from several sources, one namespace: this file's (dtypes,
// scalar types), numpy_prelude_array.cpp, _make, _math, _print; numpy.random
// is numpy_prelude_random.cpp.
#include <string>
#include <vector>

#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

extern const char* const kNumpyScalarsSource;  // below
extern const char* const kNumpyArraySource;    // numpy_prelude_array.cpp
extern const char* const kNumpyMakeSource;     // numpy_prelude_make.cpp
extern const char* const kNumpyMathSource;     // numpy_prelude_math.cpp
extern const char* const kNumpyPrintSource;    // numpy_prelude_print.cpp
extern const char* const kNumpyStringsSource;  // numpy_prelude_strings.cpp
extern const char* const kNumpyRandomSource;   // numpy_prelude_random.cpp
extern const char* const kNumpyGeneratorSource;  // numpy_prelude_generator.cpp

namespace {

struct Part {
  const char* const* text;
  const char* name;
  const char* dev_file;
};

}  // namespace

void load_numpy(VM& vm, const Ref<Module>& m) {
  static const Part parts[] = {{&kNumpyScalarsSource, "numpy/__init__.py", "core.py"},
                               {&kNumpyArraySource, "numpy/_array.py", "core.py"},
                               {&kNumpyMakeSource, "numpy/_make.py", "funcs.py"},
                               {&kNumpyMathSource, "numpy/_math.py", "funcs.py"},
                               {&kNumpyPrintSource, "numpy/_print.py", "print.py"},
                               {&kNumpyStringsSource, "numpy/_strings.py", "strings.py"}};
  // Compiled once per process; each VM runs them into its own module.
  static const std::vector<Expected<CodePtr>> codes = [] {
    std::vector<Expected<CodePtr>> c;
    for (const Part& p : parts) c.push_back(compile_module(*p.text, p.name));
    return c;
  }();
  for (const Expected<CodePtr>& code : codes) run_module_source(vm, m, code);
  if (Ref<Module> random = vm.module("numpy.random")) m->dict->set(str_value("random"), Value(random));
}

void load_numpy_random(VM& vm, const Ref<Module>& m) {
  static const Expected<CodePtr> code = compile_module(kNumpyRandomSource, "numpy/random.py");
  static const Expected<CodePtr> generator = compile_module(kNumpyGeneratorSource, "numpy/random/_generator.py");
  run_module_source(vm, m, code);
  run_module_source(vm, m, generator);
}

// dtypes and NumPy's scalar types (float64, float32, int64, ..., bool_), and
// what torch does when handed an array or a NumPy scalar.
const char* const kNumpyScalarsSource = R"PY(# numpy in Kiln's Python subset: dtypes, scalar types, ndarray.
import math as _math
import torch
import torch._kiln as _kiln
import _kiln_std
import _kiln_numpy as _nat

# numpy's own sum, any, all, max, min, round, abs and bool hide the builtins in
# this module: its code uses these names for the builtins.
_pybool = bool
_pyany = any
_pyall = all
_pysum = sum
_pymax = max
_pymin = min
_pyround = round
_pyabs = abs

# The printing and promotion rules followed are NumPy 2.3's.
__version__ = "2.3.0"


def _refuse(what):
    _kiln_std.refuse(what + " is outside Kiln's NumPy subset (docs/python.md lists what it models)")


def _raise(kind, message):
    _kiln_std.raise_error(kind, message)


def _check_eager():
    # Dynamo traces NumPy into torch ops; Kiln's capture does not: NumPy inside
    # a compiled function would put this prelude's tensor ops into the graph.
    if _kiln.is_compiling():
        _refuse("NumPy inside a torch.compile'd function")


# ---- dtypes ----


class dtype:
    def __repr__(self):
        return "dtype('" + (self._str if self.kind == "U" else self.name) + "')"

    def __str__(self):
        return self._str if self.kind == "U" else self.name

    def __eq__(self, other):
        return _dtype_or_none(other) is self

    def __ne__(self, other):
        return _dtype_or_none(other) is not self

    def __hash__(self):
        return self.num

    @property
    def type(self):
        return self._type

    @property
    def str(self):
        return self._str

    @property
    def descr(self):
        return [("", self._str)]

    @property
    def byteorder(self):
        return "|" if self.itemsize == 1 else "="

    @property
    def isnative(self):
        return True

    @property
    def names(self):
        return None

    @property
    def shape(self):
        return ()

    @property
    def ndim(self):
        return 0

    @property
    def alignment(self):
        return self.itemsize

    @property
    def base(self):
        return self

    def __getattr__(self, name):
        if name == "_torch":
            # A dtype no torch dtype holds (uint16+, str): code not written for it stops here.
            _refuse_dtype(self)
        _raise("AttributeError", "'numpy.dtype' object has no attribute '" + name + "'")


def _make_dtype(name, kind, itemsize, char, num, tdt, bits, back=None):
    """A NumPy dtype. `tdt` is the torch dtype holding its arrays; a dtype torch
    lacks (uint16, uint32) has none and is `_wide`: its arrays keep their data in
    `_w`, a tensor of the wider signed dtype `back` (None: not modelled)."""
    d = _kiln_std.new_instance(dtype)
    d.name = name
    d.kind = kind
    d.itemsize = itemsize
    d.char = char
    d.num = num
    if tdt is not None:
        d._torch = tdt
    d._back = tdt if tdt is not None else back
    d._wide = tdt is None
    d._bits = bits
    d._str = ("|" if itemsize == 1 else "<") + kind + str(itemsize)
    return d


def _outer_numpy_name():
    """The outermost function of this module on the stack: what the program called."""
    name = None
    depth = 1
    while depth < 40:
        f = _kiln_std.caller(depth)
        if not f[0].startswith("numpy/"):
            break
        if not f[3].startswith("_") or f[3].startswith("__") or name is None:
            name = f[3]
        depth += 1
    if name is None or name == "<module>":
        return ""
    if name.startswith("__"):
        return "ndarray." + name
    if name.startswith("_"):
        return ""
    return "np." + name


def _dt_label(d):
    return "str (" + d._str + ")" if d.kind == "U" else d.name


def _refuse_dtype(d):
    """Refuses an operation Kiln does not model for dtype d, naming the function the program called."""
    where = _outer_numpy_name()
    if d.kind == "U":
        what = " a NumPy string array (dtype " + d._str + ")"
    elif d._back is None:
        what = " a numpy." + d.name + " array (no Kiln tensor holds uint64 exactly)"
    else:
        what = " a numpy." + d.name + " array (Kiln keeps it in " + str(d._back).split(".")[-1] + ")"
    _refuse((where + " of" if where else "this operation on") + what)


_bool_dt = _make_dtype("bool", "b", 1, "?", 0, torch.bool, 8)
_int8_dt = _make_dtype("int8", "i", 1, "b", 1, torch.int8, 8)
_uint8_dt = _make_dtype("uint8", "u", 1, "B", 2, torch.uint8, 8)
_int16_dt = _make_dtype("int16", "i", 2, "h", 3, torch.int16, 16)
_int32_dt = _make_dtype("int32", "i", 4, "i", 5, torch.int32, 32)
_int64_dt = _make_dtype("int64", "i", 8, "l", 7, torch.int64, 64)
_float16_dt = _make_dtype("float16", "f", 2, "e", 23, torch.float16, 16)
_float32_dt = _make_dtype("float32", "f", 4, "f", 11, torch.float32, 32)
_float64_dt = _make_dtype("float64", "f", 8, "d", 12, torch.float64, 64)
# Kiln's tensors have no uint16/uint32/uint64: those arrays keep NumPy's
# dtype over a wider signed tensor holding the same values (int32 for uint16,
# int64 for uint32), every result wrapped modulo 2**bits; uint64 is scalars only.
_uint16_dt = _make_dtype("uint16", "u", 2, "H", 4, None, 16, torch.int32)
_uint32_dt = _make_dtype("uint32", "u", 4, "I", 6, None, 32, torch.int64)
_uint64_dt = _make_dtype("uint64", "u", 8, "L", 8, None, 64, None)
_ALL_DT = [_bool_dt, _int8_dt, _uint8_dt, _int16_dt, _int32_dt, _int64_dt, _float16_dt, _float32_dt, _float64_dt,
           _uint16_dt, _uint32_dt, _uint64_dt]
_DT_OF_TORCH = {}
for _d in _ALL_DT:
    if not _d._wide:
        _DT_OF_TORCH[_d._torch] = _d

_DT_NAMES = {"bool": _bool_dt, "?": _bool_dt, "b1": _bool_dt, "bool_": _bool_dt,
             "int8": _int8_dt, "i1": _int8_dt, "b": _int8_dt, "byte": _int8_dt,
             "uint8": _uint8_dt, "u1": _uint8_dt, "B": _uint8_dt, "ubyte": _uint8_dt,
             "int16": _int16_dt, "i2": _int16_dt, "h": _int16_dt, "short": _int16_dt,
             "int32": _int32_dt, "i4": _int32_dt, "i": _int32_dt, "intc": _int32_dt,
             "int64": _int64_dt, "i8": _int64_dt, "l": _int64_dt, "q": _int64_dt, "int": _int64_dt, "int_": _int64_dt,
             "long": _int64_dt, "longlong": _int64_dt, "intp": _int64_dt, "p": _int64_dt,
             "float16": _float16_dt, "f2": _float16_dt, "e": _float16_dt, "half": _float16_dt,
             "float32": _float32_dt, "f4": _float32_dt, "f": _float32_dt, "single": _float32_dt,
             "float64": _float64_dt, "f8": _float64_dt, "d": _float64_dt, "float": _float64_dt, "double": _float64_dt,
             "uint16": _uint16_dt, "u2": _uint16_dt, "H": _uint16_dt, "ushort": _uint16_dt,
             "uint32": _uint32_dt, "u4": _uint32_dt, "I": _uint32_dt, "uintc": _uint32_dt,
             "uint64": _uint64_dt, "u8": _uint64_dt, "L": _uint64_dt, "Q": _uint64_dt, "uint": _uint64_dt,
             "uintp": _uint64_dt, "ulonglong": _uint64_dt, "ulong": _uint64_dt, "P": _uint64_dt}

# NumPy's string dtypes: '<U6' holds up to 6 characters (4 bytes each).
_STR_DT = {}


def _str_dtype(n):
    d = _STR_DT.get(n, None)
    if d is None:
        d = _make_dtype("str" + str(32 * n) if n else "str", "U", 4 * n, "U", 19, None, 0)
        d._str = "<U" + str(n) if n else "<U"
        d._type = str
        _STR_DT[n] = d
    return d


def _dtype_or_none(x):
    if isinstance(x, dtype):
        return x
    if x is None:
        return None
    if _kiln_std.is_class(x):
        d = _kiln_std.class_dict(x).get("_dtype", None)
        if d is not None:
            return d
        if x is float:
            return _float64_dt
        if x is int:
            return _int64_dt
        if x is _pybool:
            return _bool_dt
        if x is str:
            return _str_dtype(0)
        return None
    if isinstance(x, str):
        key = x[1:] if len(x) > 2 and x[0] in "<=|" else x
        if key == "str" or key == "unicode" or key == "U":
            return _str_dtype(0)
        if len(key) > 1 and key[0] == "U" and key[1:].isdigit():
            return _str_dtype(int(key[1:]))
        return _DT_NAMES.get(key, None)
    return None


def _as_dtype(x, what="dtype"):
    """NumPy's dtype for a dtype argument; None is float64 as np.dtype(None)."""
    if x is None:
        return _float64_dt
    d = _dtype_or_none(x)
    if d is None:
        if isinstance(x, torch.dtype):
            _raise("TypeError", "Cannot interpret '" + repr(x) + "' as a data type")
        name = x if isinstance(x, str) else getattr(x, "__name__", type(x).__name__)
        _refuse("the NumPy dtype " + repr(name))
    return d


def _dtype_new(obj=None, align=False, copy=False):
    return _as_dtype(obj)


dtype.__new__ = _dtype_new


# ---- scalar types ----


class _Operators:
    """The operators arrays and scalars share: NumPy's promotion, then torch on the promoted dtype."""

    def __neg__(self):
        return negative(self)

    def __pos__(self):
        return positive(self)

    def __abs__(self):
        return absolute(self)

    def __invert__(self):
        return invert(self)

    def __add__(self, o):
        return _binary("add", self, o)

    def __radd__(self, o):
        return _binary("add", o, self)

    def __sub__(self, o):
        return _binary("subtract", self, o)

    def __rsub__(self, o):
        return _binary("subtract", o, self)

    def __mul__(self, o):
        return _binary("multiply", self, o)

    def __rmul__(self, o):
        return _binary("multiply", o, self)

    def __truediv__(self, o):
        return _binary("true_divide", self, o)

    def __rtruediv__(self, o):
        return _binary("true_divide", o, self)

    def __floordiv__(self, o):
        return _binary("floor_divide", self, o)

    def __rfloordiv__(self, o):
        return _binary("floor_divide", o, self)

    def __mod__(self, o):
        return _binary("remainder", self, o)

    def __rmod__(self, o):
        return _binary("remainder", o, self)

    def __pow__(self, o):
        return _binary("power", self, o)

    def __rpow__(self, o):
        return _binary("power", o, self)

    def __and__(self, o):
        return _binary("bitwise_and", self, o)

    def __rand__(self, o):
        return _binary("bitwise_and", o, self)

    def __or__(self, o):
        return _binary("bitwise_or", self, o)

    def __ror__(self, o):
        return _binary("bitwise_or", o, self)

    def __xor__(self, o):
        return _binary("bitwise_xor", self, o)

    def __rxor__(self, o):
        return _binary("bitwise_xor", o, self)

    def __matmul__(self, o):
        return matmul(self, o)

    def __rmatmul__(self, o):
        return matmul(o, self)

    def __eq__(self, o):
        return _compare("equal", self, o)

    def __ne__(self, o):
        return _compare("not_equal", self, o)

    def __lt__(self, o):
        return _compare("less", self, o)

    def __le__(self, o):
        return _compare("less_equal", self, o)

    def __gt__(self, o):
        return _compare("greater", self, o)

    def __ge__(self, o):
        return _compare("greater_equal", self, o)


class generic(_Operators):
    """NumPy's scalars: `_v` holds the Python number (a float32 value exactly)."""

    def __repr__(self):
        return "np." + type(self).__name__ + "(" + _scalar_str(self) + ")"

    def __str__(self):
        return _scalar_str(self)

    def __format__(self, spec):
        if spec == "":
            return str(self)
        return format(self._v, spec)

    def item(self, *args):
        return self._v

    def tolist(self):
        return self._v

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return ()

    @property
    def ndim(self):
        return 0

    @property
    def size(self):
        return 1

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return self._dtype.itemsize

    @property
    def T(self):
        return self

    @property
    def real(self):
        return self

    def astype(self, dt, copy=True):
        return _scalar(_as_dtype(dt), self._v)

    def __array__(self):
        return _scalar_array(self)

    def __float__(self):
        return float(self._v)

    def __int__(self):
        if self._dtype.kind == "f" and not _math.isfinite(self._v):
            _raise("OverflowError" if _math.isinf(self._v) else "ValueError",
                   "cannot convert float infinity to integer" if _math.isinf(self._v) else "cannot convert float NaN to integer")
        return int(self._v)

    def __bool__(self):
        return _pybool(self._v)

    def __hash__(self):
        return hash(self._v)

    def __round__(self, ndigits=None):
        if ndigits is None:
            if self._dtype.kind == "f":
                return _pyround(self._v)
            return int(self._v)
        return around(self, ndigits)

    def __rmul__(self, o):
        # A sequence times an integer scalar repeats it (list.__mul__ takes
        # the scalar's __index__ before NumPy is asked).
        if isinstance(o, (str, list, tuple)) and self._dtype.kind in "iu":
            return o * self._v
        return _binary("multiply", o, self)

    def __rmod__(self, o):
        if isinstance(o, str):
            return o % self._v
        return _binary("remainder", o, self)

    def __getattr__(self, name):
        _missing_attribute(type(self).__name__, name)

    def __kiln_torch_dispatch__(name, args, kwargs):
        return _torch_dispatch(name, args, kwargs)


class number(generic):
    pass


class integer(number):
    def __index__(self):
        return self._v

    def is_integer(self):
        return True


class signedinteger(integer):
    pass


class unsignedinteger(integer):
    pass


class inexact(number):
    pass


class floating(inexact):
    def is_integer(self):
        return _math.isfinite(self._v) and self._v == int(self._v)


class bool_(generic):
    def __repr__(self):
        return "np.True_" if self._v else "np.False_"


class int8(signedinteger):
    pass


class int16(signedinteger):
    pass


class int32(signedinteger):
    pass


class int64(signedinteger):
    pass


class uint8(unsignedinteger):
    pass


class uint16(unsignedinteger):
    pass


class uint32(unsignedinteger):
    pass


class uint64(unsignedinteger):
    pass


class float16(floating):
    pass


class float32(floating):
    pass


class float64(floating):
    pass


# The interpreter reads `_v` of classes marked with their kind (numpy_bridge.h):
# integers are indexes, every scalar a real number, float64 a float.
for _cls, _d in ((bool_, _bool_dt), (int8, _int8_dt), (uint8, _uint8_dt), (int16, _int16_dt), (int32, _int32_dt),
                 (int64, _int64_dt), (float16, _float16_dt), (float32, _float32_dt), (float64, _float64_dt),
                 (uint16, _uint16_dt), (uint32, _uint32_dt), (uint64, _uint64_dt)):
    _d._type = _cls
    _cd = _kiln_std.class_dict(_cls)
    _cd["_dtype"] = _d
    _cd["__kiln_number__"] = _d.kind + str(_d.itemsize)

bool = bool_
int_ = int64
intp = int64
intc = int32
byte = int8
ubyte = uint8
ushort = uint16
# Kiln's interpreter has no subclasses of str: the elements of a string array are str.
str_ = str
uintc = uint32
uint = uint64
uintp = uint64
ulonglong = uint64
short = int16
longlong = int64
half = float16
single = float32
double = float64
float_ = float64


def _wrap_int(v, d):
    bits = d.itemsize * 8
    if d.kind == "u":
        return v % (1 << bits)
    v = v % (1 << bits)
    if v >= (1 << (bits - 1)):
        v -= 1 << bits
    return v


def _norm(d, v):
    """The Python number a scalar of dtype d holds for Python number v (cast as NumPy casts)."""
    k = d.kind
    if k == "f":
        v = float(v)
        return v if d._bits == 64 else _nat.round_to(v, d._bits)
    if k == "b":
        return v != 0
    if isinstance(v, float):
        if not _math.isfinite(v):
            return _wrap_int(-(1 << 63), d)
        v = int(v)
    return _wrap_int(int(v), d)


def _scalar(d, v):
    s = _kiln_std.new_instance(d._type)
    s._v = _norm(d, v)
    return s


def _scalar_exact(d, v):
    s = _kiln_std.new_instance(d._type)
    s._v = v
    return s


def _scalar_str(s):
    d = s._dtype
    v = s._v
    if d.kind == "b":
        return "True" if v else "False"
    if d.kind != "f":
        return str(v)
    return _float_scalar_str(v, d._bits)


def _float_scalar_str(v, bits):
    # NumPy's scalar str: positional from 1e-4 up to a cutoff by precision
    # ("1.0"), else scientific ("1e-05"), with the shortest digits of its own
    # precision. NumPy 2.3 lowered the cutoff of float32 to 1e6 and of float16
    # to 1e3 (float64 keeps 1e16); the device's NumPy 2.5.2 prints so.
    if v != v:
        return "nan"
    if v == _INF:
        return "inf"
    if v == -_INF:
        return "-inf"
    a = -v if v < 0 else v
    if a == 0 or (a >= 1e-4 and a < (1e3 if bits == 16 else 1e6 if bits == 32 else 1e16)):
        return _nat.fmt_pos(v, bits, -1, True, "0", -1, -1, -1, False)
    return _nat.fmt_sci(v, bits, -1, True, "-", -1, -1, -1, False)


def _scalar_new_for(d):
    def make(value=0, *args):
        if args:
            _raise("TypeError", d.name + "() takes at most 1 argument")
        if isinstance(value, (list, tuple, ndarray)):
            return asarray(value).astype(d)
        if isinstance(value, generic):
            value = value._v
        if isinstance(value, str):
            if d.kind == "f":
                value = float(value)
            elif d.kind == "b":
                return _scalar(d, len(value) > 0)
            else:
                value = int(value)
        if isinstance(value, torch.Tensor):
            return _from_tensor(value.detach()).astype(d)[()]
        if not isinstance(value, (int, float)):
            _raise("TypeError", "a number is required, not " + type(value).__name__)
        if d.kind in "iu" and isinstance(value, int) and not isinstance(value, _pybool):
            lo, hi = _int_bounds(d)
            if value < lo or value > hi:
                _raise("OverflowError", "Python integer " + repr(value) + " out of bounds for " + d.name)
        return _scalar(d, value)
    return make


for _d in _ALL_DT:
    _d._type.__new__ = _scalar_new_for(_d)


def _int_bounds(d):
    bits = d.itemsize * 8
    if d.kind == "u":
        return 0, (1 << bits) - 1
    if d.kind == "b":
        return 0, 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


# ---- constants ----

_INF = float("inf")
_NAN = float("nan")
inf = _INF
Inf = _INF
infty = _INF
nan = _NAN
NaN = _NAN
NAN = _NAN
pi = _math.pi
e = _math.e
euler_gamma = 0.5772156649015329
newaxis = None


# ---- torch ----


def _torch_dispatch(name, args, kwargs):
    """A torch function reached with an ndarray or a NumPy scalar argument (torch_convert.cpp)."""
    short = name.split(".")[-1]
    if short in ("tensor", "as_tensor", "asarray", "new_tensor", "Tensor") and args:
        data_at = 1 if name.startswith("Tensor.") else 0
        data = args[data_at]
        if isinstance(data, (ndarray, generic)):
            arr = asarray(data)
            dt = kwargs.get("dtype", None)
            if arr._dt._wide and (dt is None or arr._dt._back is None):
                _refuse("torch." + short + " of a numpy." + _dt_label(arr._dt) + " array (PyTorch 2.11 makes a torch." +
                        arr._dt.name + " tensor, a dtype Kiln's tensors do not have; astype(np.int64) first)")
            t = _data(arr)
            if short == "as_tensor" or short == "asarray":
                t = t.detach()
                if dt is not None:
                    t = t.to(dt)
                dev = kwargs.get("device", None)
                return t if dev is None else t.to(dev)
            if dt is None and short == "new_tensor":
                dt = t.dtype
            t = t.clone()
            if dt is not None:
                t = t.to(dt)
            if kwargs.get("device", None) is not None:
                t = t.to(kwargs["device"])
            if kwargs.get("requires_grad", False):
                t.requires_grad_(True)
            return t
        if isinstance(data, (list, tuple)) and _has_array(data):
            # A sequence of arrays: PyTorch reads each as a tensor of its dtype;
            # np.array stacks them with the same promotion.
            args = list(args)
            args[data_at] = array(data)
            return _torch_dispatch(name, args, kwargs)
        if isinstance(data, (list, tuple)):
            has64 = _has_scalar_of(data, _float64_dt)
            args = list(args)
            args[data_at] = _plain(data)
            if has64 and kwargs.get("dtype", None) is None and not _has_scalar_of(data, None, True):
                kwargs = dict(kwargs)
                kwargs["dtype"] = torch.float64
            return _call_torch(name, args, kwargs)
    new_args = []
    for i in range(len(args)):
        a = args[i]
        if isinstance(a, (list, tuple)):
            for k in range(len(a)):
                if isinstance(a[k], ndarray) or (isinstance(a[k], (list, tuple)) and _has_array(a[k])):
                    _raise("TypeError", "expected Tensor as element " + str(k) + " in argument " + str(i) + ", but got numpy.ndarray")
        if isinstance(a, ndarray):
            if name == "Tensor.__getitem__" or name == "Tensor.__setitem__" or short == "index" or (name == "Tensor.__setitem__" and i == 2):
                new_args.append(a._t)
                continue
            _raise("TypeError", short + "(): argument (position " + str(i + 1) + ") must be Tensor, not numpy.ndarray")
        new_args.append(_plain(a))
    new_kwargs = {}
    for k in kwargs:
        v = kwargs[k]
        if isinstance(v, ndarray):
            _raise("TypeError", short + "(): argument '" + k + "' must be Tensor, not numpy.ndarray")
        new_kwargs[k] = _plain(v)
    return _call_torch(name, new_args, new_kwargs)


def _has_array(data):
    for x in data:
        if isinstance(x, ndarray) or (isinstance(x, (list, tuple)) and _has_array(x)):
            return True
    return False


def _has_scalar_of(data, d, other_float=False):
    for x in data:
        if isinstance(x, (list, tuple)):
            if _has_scalar_of(x, d, other_float):
                return True
        elif other_float:
            if isinstance(x, float) and not isinstance(x, generic):
                return False
        elif isinstance(x, generic) and x._dtype is d:
            return True
    return False


def _plain(x):
    if isinstance(x, generic):
        return x._v
    if isinstance(x, list):
        return [_plain(v) for v in x]
    if isinstance(x, tuple):
        return tuple([_plain(v) for v in x])
    return x


def _call_torch(name, args, kwargs):
    if name.startswith("Tensor."):
        return getattr(args[0], name[7:])(*args[1:], **kwargs)
    fn = torch
    for part in name.split(".")[1:]:
        fn = getattr(fn, part)
    return fn(*args, **kwargs)
)PY";

}  // namespace kiln::py
