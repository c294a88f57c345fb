#pragma once
// Kiln's own forward convolution kernel: an implicit GEMM on tensor cores.
// The GEMM is out[oc][pixel] = W[oc][k] * X[k][pixel] with k = (c, kh, kw)
// and the pixels of every sample side by side (N * OH * OW columns). There is
// no column buffer: each block gathers its B tile (BK rows of k, BN pixels)
// straight from the input (any strides) into shared memory, zero in the
// padding and past the edges, while the A tile comes from the weight. Both
// are staged through registers (the next tile's loads are in flight while
// the tensor cores work on this one) into two shared buffers, one barrier per
// tile. Products run through mma.sync: m16n8k8 TF32 for float32 (so only when
// conv_tf32 is on: exact float32 keeps the im2col path), m16n8k16 for
// float16 / bfloat16, accumulating in float32. The epilogue adds the bias and
// writes the output in its own layout (the plan's strides), so one kernel is
// the whole convolution; few output tiles split K over blockIdx.z into a
// float32 workspace that a second kernel sums (with the bias) into the output.
//
// The choice between this and im2col + cuBLAS (cuda_conv.h) is ConvChoice's,
// made when the source is emitted: KILN_CONV=im2col|implicit|auto, or
// CudaCompileOptions::conv_algorithm.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/codegen/cuda/cuda_api.h"
#include "core/util/status.h"

namespace kiln::codegen::cuda {

struct ConvGpuPlan;
struct ConvPointers;

enum class ConvAlgorithm {
  Im2col,    // im2col + cuBLAS everywhere (the default until the kernel is measured on the device)
  Implicit,  // this kernel wherever it applies (implicit_conv_refusal)
  Auto,      // this kernel where it applies and im2col is not skipped anyway (a 1x1 stride-1 convolution)
};
// "im2col", "implicit", "auto"; anything else is a Status naming the choices.
Expected<ConvAlgorithm> parse_conv_algorithm(std::string_view name);

struct ConvChoice {
  ConvAlgorithm algorithm = ConvAlgorithm::Im2col;
  bool tf32 = false;  // float32 products may be TF32 (CudaCompileOptions::conv_tf32)
};

// A block tile: BM output channels x BN pixels, warps_m x warps_n warps.
struct ImplicitConvTile {
  int bm = 0, bn = 0, warps_m = 0, warps_n = 0;
  int threads() const { return warps_m * warps_n * 32; }
};
// Every tile the planner may pick (each is instantiated by the NVRTC test).
const std::vector<ImplicitConvTile>& implicit_conv_tiles();

struct ImplicitConvPlan {
  std::string function;         // the kernel's name in the module; "" when the plan runs im2col
  std::string reduce_function;  // split K: the kernel summing the parts ("" when not split)
  ImplicitConvTile tile;
  int64_t splits = 1;    // parts of K, one per blockIdx.z
  int64_t k_split = 0;   // depth per part (a multiple of the tile's depth)
  int64_t k_tile = 32;      // the tile's depth: 32 bytes of k per row (16 float32, 32 half)
  bool wide_index = false;  // i64 index arithmetic (some index reaches 2^31)
};

// "" when the implicit kernel can run `plan` with `choice`, else why not
// (a float64 or exact float32 convolution, groups, grid limits).
std::string implicit_conv_refusal(const ConvGpuPlan& plan, const ConvChoice& choice);

// Fills plan.implicit (the tile, split and kernel names) for a plan the kernel
// takes. KILN_CONV_TILE=BMxBN or BMxBNxSPLITS forces a tile of
// implicit_conv_tiles() and a split, for measuring.
Status plan_implicit_conv(ConvGpuPlan& plan);

// CUDA source for the implicit kernels `plans` name, each instantiation once
// (after the prelude and kCudaTensorCoreHelpers).
std::string implicit_conv_kernels_source(const std::vector<ConvGpuPlan>& plans);

// Float32 bytes of the split-K parts (0 when not split).
size_t implicit_conv_workspace_bytes(const ConvGpuPlan& plan);

// Queues the convolution (and the split-K sum) on `stream`.
Status run_implicit_conv(const ConvGpuPlan& plan, const ConvPointers& ptr, CUfunction fn, CUfunction reduce,
                         const Stream* stream);

}  // namespace kiln::codegen::cuda
