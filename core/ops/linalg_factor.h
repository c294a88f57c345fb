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

// The number of matrices in a batch of them (the dims before the last two).
inline int64_t matrices(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d = 0; d + 2 < t.dim(); ++d) n *= t.size(d);
  return n;
}

// f.operator()<float>() or <double>(): LAPACK's s- and d- routines.
template <class F>
void dispatch_lapack(DType t, F&& f) {
  if (t == DType::Float32) f.template operator()<float>();
  else f.template operator()<double>();
}

}  // namespace kiln
