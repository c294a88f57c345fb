// Embedding lookup (rows of the weight picked by integer indices) and its
// dense backward (rows of the gradient summed back per index).
#include <cstring>
#include <type_traits>

#include "core/ops/kernel_util.h"

namespace kiln {
namespace {

void check_indices_dtype(const Tensor& indices, int arg, std::string_view op) {
  KILN_USER_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32, "Expected tensor for argument #",
                  arg, " 'indices' to have one of the following scalar types: Long, Int; but got ",
                  dtype_name(indices.dtype()), " instead (while checking arguments for ", op, ")");
}

// Indices as int64, contiguous, each checked against [0, rows).
std::vector<int64_t> checked_indices(const Tensor& indices, int64_t rows) {
  Tensor idx = indices.to(DType::Int64).contiguous();
  const int64_t* p = idx.data<int64_t>();
  std::vector<int64_t> out(p, p + idx.numel());
  for (int64_t v : out) KILN_USER_CHECK(v >= 0 && v < rows, "index out of range in self");
  return out;
}

ValueList embedding_meta(const OpArgs& args) {
  const Tensor &weight = args.tensor(0), &indices = args.tensor(1);
  KILN_USER_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  check_indices_dtype(indices, 1, "embedding");
  Shape out = indices.sizes();
  out.push_back(weight.size(1));
  return one(Tensor::meta(out, weight.dtype()));
}

void embedding_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  const Tensor& weight = args.tensor(0);
  std::vector<int64_t> idx = checked_indices(args.tensor(1), weight.size(0));
  const Tensor& out = outs[0];
  int64_t dim = weight.size(1);
  if (out.numel() == 0) return;
  Tensor w = weight.contiguous();
  size_t row_bytes = size_t(dim) * w.itemsize();
  const char* src = static_cast<const char*>(w.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  parallel_for(0, int64_t(idx.size()), std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(dim, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t i = lo; i < hi; ++i)
                   std::memcpy(dst + size_t(i) * row_bytes, src + size_t(idx[size_t(i)]) * row_bytes, row_bytes);
               });
}

// embedding_dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
ValueList dense_backward_meta(const OpArgs& args) {
  const Tensor &grad = args.tensor(0), &indices = args.tensor(1);
  check_indices_dtype(indices, 2, "embedding_backward");
  int64_t num_weights = args.integer(2);
  KILN_USER_CHECK(num_weights >= 0, "embedding_backward: num_weights must be non-negative, got ", num_weights);
  KILN_USER_CHECK(grad.dim() >= 1 && grad.numel() == indices.numel() * grad.size(-1),
                  "embedding_backward: grad_output of size ", shape_str(grad.sizes()),
                  " does not match indices of size ", shape_str(indices.sizes()));
  KILN_USER_CHECK(is_floating(grad.dtype()), "\"embedding_dense_backward\" not implemented for '",
                  dtype_name(grad.dtype()), "'");
  return one(Tensor::meta({num_weights, grad.size(-1)}, grad.dtype()));
}

// Rows are added in index order, each add rounded to the gradient's dtype
// (PyTorch runs one add_ per index, so float16 sums round at every step).
template <class T>
void accumulate_rows(const T* g, const std::vector<int64_t>& idx, int64_t dim, int64_t padding_idx,
                     const std::vector<int64_t>& counts, T* dst) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t k = idx[i];
    if (k == padding_idx) continue;
    Acc scale = counts.empty() ? Acc(1) : Acc(1.0 / double(counts[size_t(k)]));
    const T* row = g + int64_t(i) * dim;
    T* out = dst + k * dim;
    for (int64_t j = 0; j < dim; ++j) out[j] = T(Acc(out[j]) + Acc(row[j]) * scale);
  }
}

void dense_backward_compute(const OpArgs& args, const std::vector<Tensor>& outs) {
  int64_t num_weights = args.integer(2), padding_idx = args.integer(3);
  std::vector<int64_t> idx = checked_indices(args.tensor(1), num_weights);
  Tensor grad = args.tensor(0).contiguous();
  const Tensor& out = outs[0];
  out.fill_(Scalar(0.0));
  std::vector<int64_t> counts;
  if (args.boolean(4)) {  // scale_grad_by_freq
    counts.assign(size_t(num_weights), 0);
    for (int64_t k : idx) ++counts[size_t(k)];
  }
  dispatch_all(grad.dtype(), [&]<class T>() {
    if constexpr (is_floating_v<T>)
      accumulate_rows<T>(grad.data<T>(), idx, grad.size(-1), padding_idx, counts, out.data<T>());
  });
}

ValueList embedding_backward_meta(const OpArgs& args) {
  KILN_USER_CHECK(!args.boolean(5), "embedding_backward: sparse gradients are not supported");
  return dense_backward_meta(args);
}

}  // namespace

void register_embedding_ops(OpRegistry& r) {
  add_op_with_outputs(r,
                      "aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, "
                      "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
                      embedding_meta, embedding_compute);
  add_op_with_outputs(r,
                      "aten::embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, "
                      "SymInt padding_idx, bool scale_grad_by_freq) -> Tensor",
                      dense_backward_meta, dense_backward_compute);
  add_op_with_outputs(r,
                      "aten::embedding_backward(Tensor grad, Tensor indices, SymInt num_weights, SymInt padding_idx, "
                      "bool scale_grad_by_freq, bool sparse) -> Tensor",
                      embedding_backward_meta, dense_backward_compute);
}

}  // namespace kiln
