#pragma once
// What the interpreter and the torch bindings know of Kiln's NumPy subset
// (numpy_prelude*.cpp): NumPy scalars are instances of Python classes whose
// class attribute __kiln_number__ names their kind ("f8", "i4", "b1", ...) and
// whose `_v` holds the Python number; an ndarray's class has __kiln_ndarray__
// and its `_t` is the torch tensor holding its data.
#include "core/python/object.h"

namespace kiln::py {

class VM;

// The Python number inside a NumPy scalar (integer kinds only when
// `integers_only`, as operator.index accepts them), else null.
const Value* numpy_scalar_value(const Value& v, bool integers_only);
// True for a NumPy float64 scalar: NumPy's float64 derives from float.
bool is_numpy_float64(const Value& v);
// The tensor object behind an ndarray, else null. An ndarray no tensor holds
// as it is (uint16/uint32 over a wider tensor, strings) is refused by name,
// `what` saying what was asked of it.
TensorObj* ndarray_tensor(const Value& v, const char* what = "using it as a tensor");
// Tensor.numpy(): an ndarray sharing `t`'s memory.
Value tensor_to_ndarray(VM& vm, const Value& t);

}  // namespace kiln::py
