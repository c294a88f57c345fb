#include "compiler/codegen/cuda/cuda_gemm_lt.h"

#include "compiler/codegen/cuda/cublas_lt.h"

namespace kiln::codegen::cuda {
namespace {

// Element (i, j) of a rank-2 view at ptr + offset + i * row_stride + j * col_stride.
GemmOperand operand(const std::vector<int64_t>& strides, int64_t offset, CUdeviceptr ptr) {
  GemmOperand o;
  o.ptr = ptr;
  o.offset = offset;
  o.row_stride = strides[strides.size() - 2];
  o.col_stride = strides.back();
  return o;
}

}  // namespace

bool gemm_has_lt_epilogue(const loopir::Kernel& k) {
  return k.kind == loopir::KernelKind::Extern && k.call && k.call->kind == loopir::ExternKind::Gemm &&
         k.call->gemm.lt.has_value();
}

bool run_gemm_lt_on_gpu(const loopir::Program& p, const loopir::Kernel& k,
                        const std::function<CUdeviceptr(const std::string&)>& pointer, bool tf32, const Stream* stream,
                        std::string* why) {
  const loopir::ExternCall& c = *k.call;
  const loopir::GemmLtEpilogue& lt = *c.gemm.lt;
  const loopir::Buffer& d = p.buffer(lt.output);
  if (d.sizes.size() != 2 || c.gemm.batched) {
    if (why) *why = "not a plain mm";
    return false;
  }
  if (c.gemm.c_constant) {
    if (why) *why = "the product adds a number, which no cuBLASLt epilogue does";
    return false;
  }
  const loopir::BufferView& a = c.tensors[size_t(c.gemm.a)];
  const loopir::BufferView& b = c.tensors[size_t(c.gemm.b)];
  LtGemmCall call;
  GemmCall& g = call.gemm;
  g.m = d.sizes[0], g.n = d.sizes[1], g.k = a.sizes.back();
  g.a = operand(a.strides, a.offset, pointer(a.buffer));
  g.b = operand(b.strides, b.offset, pointer(b.buffer));
  g.c = operand(d.strides, d.offset, pointer(lt.output));
  g.dtype = d.dtype;
  g.alpha = c.gemm.alpha;
  g.tf32 = tf32;
  if (lt.residual) {
    call.c = operand(lt.residual->strides, lt.residual->offset, pointer(lt.residual->buffer));
    g.beta = lt.residual_scale;
  }
  if (lt.bias) call.bias = pointer(lt.bias->buffer) + CUdeviceptr(lt.bias->offset * int64_t(element_size(d.dtype)));
  call.activation = lt.activation == loopir::GemmActivation::Relu       ? LtActivation::Relu
                    : lt.activation == loopir::GemmActivation::GeluTanh ? LtActivation::GeluTanh
                                                                        : LtActivation::None;
  return cublas_lt_gemm(call, stream, why);
}

}  // namespace kiln::codegen::cuda
