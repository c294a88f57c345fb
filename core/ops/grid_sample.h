#pragma once
// The argument checks ATen's grid samplers share (GridSamplerUtils.h), for the
// binding of torch.grid_sampler too: it routes 5-D input to grid_sampler_3d,
// which Kiln does not have, and refuses it only after the checks PyTorch makes
// first, so a wrong shape gets PyTorch's message rather than the refusal.
#include "core/tensor/tensor.h"

namespace kiln {

// check_grid_sampler_common: equal batch sizes, grid's last dim the number of
// spatial dims, non-empty spatial dims of the input.
void check_grid_sampler_common(const Tensor& input, const Tensor& grid);
// check_grid_sampler_2d (`dims` 4) / _3d (`dims` 5): input and grid of that rank.
void check_grid_sampler_rank(const Tensor& input, const Tensor& grid, int64_t dims);

}  // namespace kiln
