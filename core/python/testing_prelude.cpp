// torch.testing.assert_close: PyTorch's default tolerances per dtype
// (|actual - expected| <= atol + rtol * |expected|, integers and bools exact)
// and the "Tensor-likes are not close!" report of the worst element.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kTestingSource = R"PY(import _kiln_std
import torch

_TOLERANCES = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
               torch.float64: (1e-7, 1e-7)}


def _tolerances(dtype, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got no " +
                         ("rtol" if rtol is None else "atol") + ".")
    if rtol is not None:
        return rtol, atol
    return _TOLERANCES.get(dtype, (0.0, 0.0))


def _fail(msg, default):
    raise AssertionError(default if msg is None else (msg(default) if callable(msg) else msg))


def _close_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, msg):
    if actual.shape != expected.shape:
        _fail(msg, "The values for attribute 'shape' do not match: " + str(actual.shape) + " != " +
              str(expected.shape) + ".")
    if check_dtype and actual.dtype != expected.dtype:
        _fail(msg, "The values for attribute 'dtype' do not match: " + str(actual.dtype) + " != " +
              str(expected.dtype) + ".")
    if actual.is_complex() or expected.is_complex():
        _kiln_std.refuse("torch.testing.assert_close of complex tensors is not modelled by Kiln")
    rtol, atol = _tolerances(expected.dtype, rtol, atol)
    a = actual.detach().to(torch.float64)
    e = expected.detach().to(torch.float64)
    diff = (a - e).abs()
    bad = ~(diff <= atol + rtol * e.abs())
    both_nan = a.isnan() & e.isnan()
    same_inf = (a == e)
    bad = bad & ~same_inf
    if equal_nan:
        bad = bad & ~both_nan
    mismatched = int(bad.sum().item())
    if mismatched == 0:
        return
    total = a.numel()
    rel = diff / e.abs()
    lines = ["Tensor-likes are not close!", "",
             "Mismatched elements: " + str(mismatched) + " / " + str(total) + " (" +
             format(100.0 * mismatched / total, ".1f") + "%)"]
    for label, values, allowed in (("absolute", diff, atol), ("relative", rel, rtol)):
        flat = torch.where(bad, values, torch.zeros_like(values)).flatten()
        worst = int(flat.argmax().item())
        where = ""
        if a.dim() > 0:
            index = []
            rest = worst
            for size in reversed(list(a.shape)):
                index.insert(0, rest % size)
                rest = rest // size
            where = " at index " + str(tuple(index))
        lines.append("Greatest " + label + " difference: " + str(flat[worst].item()) + where + " (up to " +
                     str(allowed) + " allowed)")
    _fail(msg, "\n".join(lines))


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    if isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor):
        return _close_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, msg)
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            _fail(msg, "The length of the sequences mismatch: " + str(len(actual)) + " != " + str(len(expected)))
        for x, y in zip(actual, expected):
            assert_close(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype, msg=msg)
        return
    if isinstance(actual, dict) and isinstance(expected, dict):
        if set(actual.keys()) != set(expected.keys()):
            _fail(msg, "The keys of the mappings do not match")
        for k in expected:
            assert_close(actual[k], expected[k], rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_dtype=check_dtype, msg=msg)
        return
    if isinstance(actual, (bool, int, float)) and isinstance(expected, (bool, int, float)):
        if check_dtype and type(actual) is not type(expected):
            _fail(msg, "The values for attribute 'type' do not match: " + str(type(actual)) + " != " +
                  str(type(expected)) + ".")
        return _close_tensors(torch.tensor(actual, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64),
                              rtol, atol, equal_nan, False, msg)
    _kiln_std.refuse("torch.testing.assert_close of " + type(actual).__name__ + " and " + type(expected).__name__ +
                     " is not modelled by Kiln (tensors, numbers, sequences and dicts of them are)")
)PY";

void install_testing(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kTestingSource, "torch/testing/_comparison.py");
  auto m = make<Module>("torch.testing");
  vm.add_module(m);
  Ref<Dict> globals = run_prelude(vm, code, m->name, "torch.testing");
  if (!globals) return;
  if (const Value* v = globals->find_str("assert_close")) m->dict->set(str_value("assert_close"), *v);
}

}  // namespace

// A lazy module: `torch.testing` as an attribute of torch installs it too.
void install_testing_prelude(VM& vm) { vm.add_lazy_module("torch.testing", install_testing); }

}  // namespace kiln::py
