#pragma once
// What the interpreter asks of tensors (operators, indexing, attributes,
// truthiness, iteration). Implemented in torch_module.cpp over core/python/torch_api
// and routed to the Tracer while a frame is being captured.
#include <string>
#include <string_view>

#include "core/python/code.h"
#include "core/python/object.h"

namespace kiln::py {

class VM;

bool is_tensor(const Value& v);
// Each returns false when no operand is a tensor (the VM then applies Python's rules).
bool tensor_binary(VM& vm, BinaryOpKind op, const Value& a, const Value& b, bool inplace, Value& out);
bool tensor_unary(VM& vm, UnaryOpKind op, const Value& a, Value& out);
bool tensor_compare(VM& vm, CompareKind op, const Value& a, const Value& b, Value& out);
Value tensor_getitem(VM& vm, const Value& t, const Value& key);
void tensor_setitem(VM& vm, const Value& t, const Value& key, const Value& value);
bool tensor_getattr(VM& vm, const Value& t, std::string_view name, Value& out);
void tensor_setattr(VM& vm, const Value& t, std::string_view name, const Value& value);
bool tensor_truth(VM& vm, const Value& t);
int64_t tensor_len(VM& vm, const Value& t);
Value tensor_iter(VM& vm, const Value& t);
// format(t, spec): one-element tensors format their value, as PyTorch's __format__.
std::string tensor_format(VM& vm, const Value& t, std::string_view spec);

}  // namespace kiln::py
