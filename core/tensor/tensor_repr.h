#pragma once
// repr(tensor) exactly as PyTorch 2.11 prints it (torch/_tensor_str.py), so a
// Kiln printout can be diffed against a real run's. Covered by
// tests/core/test_tensor_repr.cpp, whose expected text came from PyTorch 2.11.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace kiln {

// torch.set_printoptions. threshold is a float in PyTorch (inf for the 'full'
// profile); INT64_MAX stands for inf here.
struct TensorReprOptions {
  int precision = 4;
  int64_t threshold = 1000;
  int edgeitems = 3;
  int linewidth = 80;
  std::optional<bool> sci_mode = {};  // unset: PyTorch decides from the values
};

// What PyTorch knows about a tensor that a Kiln Tensor does not carry.
struct TensorReprExtras {
  std::string device = {};  // "" for the default (cpu); "cuda:0"; meta tensors default to "meta"
  bool requires_grad = false;
  std::string grad_fn = {};  // "AddBackward0"; shown instead of requires_grad
  bool is_parameter = false;  // nn.Parameter: "Parameter containing:\n" first
  // The tensor is a complex one's view_as_real (last dim: real, imaginary);
  // float32 pairs print as complex64, float64 ones as complex128.
  bool complex_pair = false;
};

std::string tensor_repr(const Tensor& t, const TensorReprExtras& extras = {},
                        const TensorReprOptions& opts = {});

// A sparse COO tensor from its (raw, possibly uncoalesced) indices and
// values, as PyTorch prints one: indices=..., values=..., size, nnz, layout.
std::string sparse_coo_repr(const Tensor& indices, const Tensor& values, const Shape& sizes,
                            const TensorReprExtras& extras = {}, const TensorReprOptions& opts = {});

// "torch.Size([8, 16])".
std::string size_repr(const std::vector<int64_t>& sizes);
// "torch.float32".
std::string dtype_repr(DType dtype);

}  // namespace kiln
