#pragma once
// How PyTorch spells things in graph text: dtype names and print_readable's
// abbreviations, layouts and memory formats, op targets, the operators FX
// prints infix, and Python's repr of floats and strings. Shared by the printer
// and the parser so the two cannot drift apart.
#include <optional>
#include <string>
#include <string_view>

#include "core/tensor/dtype.h"

namespace kiln {

// "float32" -> "f32" (torch.utils._dtype_abbrs); empty when unknown.
std::string_view dtype_abbrev_of(std::string_view torch_name);
// "f32" -> "float32".
std::optional<std::string_view> dtype_from_abbrev_text(std::string_view abbrev);
// The attribute after "torch." -> canonical torch name: "float32", and the
// aliases "float", "half", "long", "int", "bool", "cfloat", ... Null when it is no dtype.
std::optional<std::string_view> canonical_dtype_name(std::string_view torch_attr);
// The dtype Kiln's kernels know, when it is one of them.
std::optional<DType> kiln_dtype(std::string_view torch_name);

// "strided", "sparse_coo", ... and "contiguous_format", "channels_last", ...
bool is_layout_name(std::string_view torch_attr);
bool is_memory_format_name(std::string_view torch_attr);

// Python spelling of a call_function target -> Kiln's: "torch.ops.aten.add.Tensor"
// -> "aten::add.Tensor", "torch.ops.higher_order.cond" -> "higher_order::cond",
// "_operator.add" -> "operator.add"; anything else unchanged.
std::string target_from_python(std::string_view python_name);
// The inverse: "aten::add.Tensor" -> "torch.ops.aten.add.Tensor".
std::string target_to_python(std::string_view target);
// "aten::add.Tensor" -> true; the namespace test the verifier uses.
bool is_op_overload_target(std::string_view target);

// Operators FX prints infix (torch/fx/graph.py magic_methods / inplace_methods).
struct OperatorSpelling {
  std::string_view target;  // "operator.add"
  std::string_view symbol;  // "+", "[]" for getitem, "+=" for iadd
  int arity;                // 1 unary, 2 binary, 3 setitem
};
// By target; null when the target is not printed infix.
const OperatorSpelling* infix_operator(std::string_view target);
// By symbol and arity: ("+", 2) -> operator.add, ("-", 1) -> operator.neg, ("+=", 2) -> operator.iadd.
const OperatorSpelling* operator_for_symbol(std::string_view symbol, int arity);
bool is_inplace_operator(const OperatorSpelling& op);

// A Python identifier (non-ASCII letters allowed), so printed names parse back.
bool is_python_identifier(std::string_view s);

// Python's repr: 0.1, 1e-05, 2.0, inf, -inf, nan, 1e+16.
std::string python_float_repr(double v);
// Python's repr of a str: 'abc', "it's", 'a\nb'.
std::string python_str_repr(std::string_view s);

}  // namespace kiln
