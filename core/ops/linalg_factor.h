#pragma once
// What the torch.linalg bindings share with the factorization kernels.
#include <string_view>

#include "core/tensor/tensor.h"

namespace kiln {

// ATen's _linalg_check_errors: a kiln::Error for the first nonzero entry of
// `info` (int32, one per matrix of the batch) in PyTorch's words for `api`
// ("linalg.cholesky", "linalg.inv", ...); `matrix_input` leaves out the
// "(Batch element i)" PyTorch names only for batched input.
void check_linalg_errors(const Tensor& info, std::string_view api, bool matrix_input);

}  // namespace kiln
