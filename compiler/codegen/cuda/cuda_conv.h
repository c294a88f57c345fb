#pragma once
// Convolution extern kernels on the GPU. cuDNN is not among the libraries Kiln
// loads, so a convolution is what the CPU backend does with OpenBLAS
// (extern_kernels.cpp), on the device: an im2col kernel fills a column buffer
// (the workspace), one cuBLAS strided-batched GEMM per group multiplies the
// weight by it straight into the output, and a small kernel adds the bias.
// Everything is queued on one stream and nothing is allocated per launch, so
// a graph of such kernels can be captured for CUDA graph replay.
//
// The plan is made once when the source is emitted: it decides whether a
// convolution can run here at all (else it takes the host path, for the
// reason the Status gives) and which kernel instantiations the module needs.
// With ConvChoice asking for it, a convolution the implicit-GEMM kernel takes
// runs as that one kernel instead (cuda_conv_implicit.h; plan.implicit).
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/cuda/cublas.h"
#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/codegen/cuda/cuda_conv_implicit.h"
#include "compiler/loopir/loop_ir.h"

namespace kiln::codegen::cuda {

struct ConvGpuPlan {
  size_t kernel = 0;  // index into Program::kernels
  DType dtype = DType::Float32;
  std::string input, weight, bias, output;  // buffers (bias "" when none)
  // The input as [N, C, H, W] (1-D: H = 1): sizes, element strides, offset.
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t x_stride[4] = {0, 0, 0, 0}, x_offset = 0;
  int64_t oc = 0, kh = 1, kw = 1, oh = 1, ow = 1, groups = 1;
  int64_t stride[2] = {1, 1}, pad[2] = {0, 0}, dil[2] = {1, 1};
  // The weight as an [OC, C/groups * KH * KW] matrix.
  int64_t w_row_stride = 0, w_col_stride = 1, w_offset = 0;
  // The output per sample as an [OC, OH * OW] matrix, pixels on one stride.
  int64_t out_n_stride = 0, out_c_stride = 0, out_pixel_stride = 1, out_offset = 0;
  int64_t bias_stride = 1, bias_offset = 0;
  // 1x1, stride 1, no padding, pixels on one stride: the input already is the
  // column matrix (rows c, columns h * W + w), so im2col is skipped.
  bool direct = false;
  int64_t x_pixel_stride = 1;  // direct only
  int64_t chunk = 1;           // samples per im2col pass: what the workspace holds
  // Few output pixels per sample (ResNet's last stages): a strided batch of
  // narrow GEMMs runs far below cuBLAS's speed, so the chunk's samples sit side
  // by side in one GEMM instead (columns [row][sample][pixel]), whose product,
  // in the workspace after the columns, a scatter kernel moves to the output.
  bool merged = false;
  std::string im2col_kernel, bias_kernel, scatter_kernel;  // names in the module ("" when not used)
  // The implicit-GEMM kernel (function "" when the convolution runs im2col +
  // cuBLAS): then none of the above is used and the bias is in its epilogue.
  ImplicitConvPlan implicit;

  int64_t pixels() const { return oh * ow; }
  int64_t column_rows() const { return c / groups * kh * kw; }  // per group
  size_t workspace_bytes() const;
};

// How extern kernel `kernel` of `p` (a Convolution) runs on the GPU, or why
// it cannot: an unsupported dtype, mixed dtypes, 3-D, or a layout cuBLAS
// cannot take without a copy. `choice` says whether the implicit-GEMM kernel
// runs it where that kernel can (else im2col + cuBLAS, as by default).
Expected<ConvGpuPlan> plan_conv_on_gpu(const loopir::Program& p, size_t kernel, const ConvChoice& choice = {});

// The geometry of a convolution of x by w into `out` (the dtype's, already
// checked for every operand): the plan above without its kernel, bias or GEMM
// check. `merge_all`: im2col always, into merged columns [row][sample][pixel]
// (what the backward's weight gradient multiplies), and no scatter kernel.
Expected<ConvGpuPlan> plan_conv_geometry(DType dtype, const loopir::BufferView& x, const loopir::BufferView& w,
                                         const loopir::BufferView& out, const loopir::ConvParams& params,
                                         bool merge_all);

// CUDA source for the kernels `plans` name, each instantiation once; it uses
// the prelude's helpers (cuda_prelude.h) and is appended after them.
std::string conv_kernels_source(const std::vector<ConvGpuPlan>& plans);

struct ConvPointers {
  CUdeviceptr input = 0, weight = 0, bias = 0, output = 0;  // storage bases: the plan's offsets apply
  CUdeviceptr workspace = 0;  // at least plan.workspace_bytes()
};
struct ConvFunctions {
  CUfunction im2col = nullptr, bias = nullptr, scatter = nullptr;
  CUfunction implicit = nullptr, implicit_sum = nullptr;  // plan.implicit's kernels
};

// The data-movement kernels (256 threads a block, grids of at most 65536
// blocks a dimension, looping past it) index in int when every element index
// they form stays below this: a grid's stride past the end still fits.
constexpr int64_t kIntIndexLimit = (int64_t(1) << 31) - 65536 * int64_t(256);

// Elements of `d` per 16-byte store.
int64_t vector_width(DType d);

// Launch shape of the data-movement kernels (im2col, the merged product's
// scatter, the backward's gather) over a row-major [rows, columns] walk: x over
// groups of `vec` columns, so a warp stores consecutive 16-byte groups, y over
// rows, whose decomposition serves every group a thread writes in them.
struct MoveShape {
  Dim3 grid, block;
};
MoveShape move_shape(int64_t rows, int64_t columns, int64_t vec);

// A chunk's [channel][sample][pixel] rows against the output's (or its
// gradient's) layout in the plan: the merged forward GEMM's scatter and the
// backward's gather move between them. Whether every index fits an int.
bool channel_rows_fit_int(const ConvGpuPlan& plan);
// Queues such a kernel (out, in, rows, samples, pixels, sn, sc, sp, vec) over
// `count` samples: a scatter (out strided, in rows) or a gather (out rows, in
// strided), 16-byte groups where both sides have them whole and aligned.
Status launch_channel_rows(const ConvGpuPlan& plan, CUfunction fn, bool narrow, CUdeviceptr out, CUdeviceptr in,
                           int64_t count, const Stream* stream);

// Queues im2col of samples [n0, n0 + count) of ptr.input into ptr.workspace.
Status run_conv_im2col(const ConvGpuPlan& plan, const ConvPointers& ptr, CUfunction fn, int64_t n0, int64_t count,
                       const Stream* stream);

// Queues the convolution on `stream` (null: the legacy stream).
// `tf32`: float32 products in TF32 (GemmCall::tf32).
Status run_conv_on_gpu(const ConvGpuPlan& plan, const ConvPointers& ptr, const ConvFunctions& fn, bool tf32,
                       const Stream* stream);

}  // namespace kiln::codegen::cuda
