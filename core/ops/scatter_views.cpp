// The view scatters: slice_scatter, select_scatter, diagonal_scatter and
// as_strided_scatter return a copy of `self` with `src` written where the
// matching view of `self` would read. They are the functional form of a write
// through a view (functionalization turns `x[1:3].copy_(y)` into
// `x = slice_scatter(x, y, 0, 1, 3)`), and core ATen ops in PyTorch.
#include <climits>
#include <functional>

#include "core/ops/kernel_util.h"
#include "core/ops/layout_util.h"

namespace kiln {
namespace {

using ViewOf = std::function<Tensor(const OpArgs&, const Tensor& out)>;

// One scatter: a copy of self laid out as self (empty_like's preserve rule),
// then src copied into view(copy). The view is taken on meta tensors too, so
// a src of the wrong shape is caught when shapes propagate.
void add_scatter(OpRegistry& r, std::string_view schema, ViewOf view) {
  auto scatter = [view](const OpArgs& a) {
    const Tensor& self = a.tensor(0);
    const Tensor& src = a.tensor(1);
    bool meta = self.is_meta() || src.is_meta();
    Tensor out = new_strided(self.sizes(), preserve_strides(self), self.dtype(), meta);
    Tensor target = view(a, out);
    KILN_USER_CHECK(target.sizes() == src.sizes(), a.op_name(), ": expected src to have a size equal to the slice of self. src size = ",
                    shape_str(src.sizes()), ", slice size = ", shape_str(target.sizes()));
    if (!meta) {
      copy_into(out, self);
      copy_into(target, src);
    }
    return one(std::move(out));
  };
  r.add(schema, scatter, scatter);
}

}  // namespace

void register_scatter_views_ops(OpRegistry& r) {
  add_scatter(r, "aten::slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor",
              [](const OpArgs& a, const Tensor& out) {
                KILN_USER_CHECK(out.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
                int64_t step = a.integer(5);
                KILN_USER_CHECK(step > 0, "slice step must be positive");
                return out.slice(a.integer(2), a.opt_integer(3).value_or(0), a.opt_integer(4).value_or(INT64_MAX), step);
              });
  add_scatter(r, "aten::select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
              [](const OpArgs& a, const Tensor& out) { return out.select(a.integer(2), a.integer(3)); });
  add_scatter(r, "aten::diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor",
              [](const OpArgs& a, const Tensor& out) { return out.diagonal(a.integer(2), a.integer(3), a.integer(4)); });
  // Sizes, strides and offset are taken against the copy's storage, which has
  // self's strides and offset 0, as PyTorch's as_strided_scatter does on its clone.
  add_scatter(r, "aten::as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor",
              [](const OpArgs& a, const Tensor& out) {
                Shape size = a.ints(2), stride = a.ints(3);
                int64_t offset = a.opt_integer(4).value_or(0);
                KILN_USER_CHECK(size.size() == stride.size(), "as_strided_scatter: ", size.size(), " sizes but ",
                                stride.size(), " strides");
                int64_t last = offset;
                for (size_t d = 0; d < size.size(); ++d) {
                  KILN_USER_CHECK(size[d] >= 0 && stride[d] >= 0, "as_strided_scatter: negative size or stride");
                  if (size[d] > 0) last += (size[d] - 1) * stride[d];
                }
                int64_t span = 0;
                for (size_t d = 0; d < out.sizes().size(); ++d)
                  if (out.sizes()[d] > 0) span += (out.sizes()[d] - 1) * out.strides()[d];
                KILN_USER_CHECK(offset >= 0 && (shape_numel(size) == 0 || last <= span),
                                "as_strided_scatter: the view reaches past the end of self's storage");
                return out.as_strided(std::move(size), std::move(stride), offset);
              });
}

}  // namespace kiln
