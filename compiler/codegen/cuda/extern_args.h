#pragma once
// Reading a fallback extern call's arguments as the GPU planners of ATen ops
// (cuda_pool.h, cuda_conv_backward.h) need them: by position or keyword, a
// tensor argument's view, and which buffer receives a result.
#include <optional>
#include <string>
#include <vector>

#include "compiler/loopir/extern_call.h"

namespace kiln::codegen::cuda {

// Argument `index` (or keyword `name`) of the call, when given.
inline const Arg* call_arg(const loopir::ExternCall& call, size_t index, const std::string& name) {
  if (index < call.args.size()) return &call.args[index];
  for (const auto& [key, value] : call.kwargs)
    if (key == name) return &value;
  return nullptr;
}

// A tensor argument's view, or null when the argument is missing or no tensor.
inline const loopir::BufferView* tensor_arg(const loopir::ExternCall& call, size_t index, const std::string& name) {
  const Arg* a = call_arg(call, index, name);
  if (!a || !a->is_node() || a->i < 0 || size_t(a->i) >= call.tensors.size()) return nullptr;
  return &call.tensors[size_t(a->i)];
}

// An int list argument's values, or none when it is absent or something else.
inline std::optional<std::vector<int64_t>> ints_arg(const loopir::ExternCall& call, size_t index,
                                                    const std::string& name) {
  const Arg* a = call_arg(call, index, name);
  if (!a || (a->kind != Arg::Kind::List && a->kind != Arg::Kind::Tuple)) return std::nullopt;
  std::vector<int64_t> out;
  for (const Arg& item : a->items) {
    if (item.kind != Arg::Kind::Int) return std::nullopt;
    out.push_back(item.i);
  }
  return out;
}

// The buffer that receives result `result` of the call, or "" when nobody reads it.
inline std::string output_of(const loopir::ExternCall& call, size_t result) {
  for (size_t i = 0; i < call.outputs.size() && i < call.output_results.size(); ++i)
    if (call.output_results[i] == result) return call.outputs[i];
  return "";
}

}  // namespace kiln::codegen::cuda
