#pragma once
// Views fold into indexing: a permute, slice or expand only changes strides and
// offset, and a reshape maps its indices back to the source's through // and %,
// so no view is ever materialized (Inductor's View.dynamic_reshape_indexer).
#include <cstdint>
#include <vector>

#include "compiler/loopir/index_expr.h"
#include "compiler/loopir/simplify_index.h"

namespace kiln::loopir {

// x0 .. x<n-1>, one loop variable per dimension.
std::vector<IndexRef> loop_vars(size_t n);
// The ranges of loop_vars(sizes.size()) over a tensor of these sizes.
IndexRanges loop_ranges(const std::vector<int64_t>& sizes);

// offset + sum stride[i] * index[i] (unsimplified). A dimension of size 1 adds
// nothing whatever its stride, and an expanded one (stride 0) adds nothing either.
IndexRef strided_index(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset,
                       const std::vector<IndexRef>& index);

// The indices into a tensor of `from` sizes of the element a reshape to `to`
// sizes (same element count, row-major order) reads at `to_index`
// (unsimplified): with flat = sum to_index[j] * row_major_stride(to)[j],
// from_index[i] = (flat // row_major_stride(from)[i]) % from[i].
std::vector<IndexRef> reshape_indices(const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                                      const std::vector<IndexRef>& to_index);

}  // namespace kiln::loopir
