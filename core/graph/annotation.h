#pragma once
// The type annotation print_readable puts in quotes: "f32[4, 8][8, 1]cuda:0"
// (dtype abbreviation, sizes, strides and device when shown), "f32[s0, 8]"
// with symbolic sizes, "Sym(s0)", or a subclass around a tensor,
// "FunctionalTensor(f32[4])", "DTensor(f32[8][1]cuda:0, S(0))".
#include <string>
#include <string_view>

#include "core/graph/graph.h"

namespace kiln {

// A form it does not know becomes Val::Kind::Text, never an error.
Val parse_val_annotation(std::string_view text);
// What is wrong with a text that starts as a tensor annotation ("f32[") but
// is not one: a size that is not a size ("[2, 3]" inside the size list),
// negative or past 64 bits, unbalanced brackets, a device that is not one.
// Empty for a well-formed annotation and for text that is no tensor annotation.
std::string tensor_annotation_problem(std::string_view text);
// The inverse; empty for values FX does not annotate (tuples, Python scalars, none).
std::string format_val(const Val& v);

}  // namespace kiln
