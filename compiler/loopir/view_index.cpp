#include "compiler/loopir/view_index.h"

#include "core/util/status.h"

namespace kiln::loopir {

namespace {
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
  return strides;
}

int64_t numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

IndexRef sum_of(std::vector<IndexRef> terms) {
  if (terms.empty()) return index_const(0);
  return terms.size() == 1 ? terms[0] : index_add(std::move(terms));
}
}  // namespace

std::vector<IndexRef> loop_vars(size_t n) {
  std::vector<IndexRef> vars;
  for (size_t i = 0; i < n; ++i) vars.push_back(index_var(int64_t(i)));
  return vars;
}

IndexRanges loop_ranges(const std::vector<int64_t>& sizes) {
  IndexRanges r;
  for (size_t i = 0; i < sizes.size(); ++i) r.extent(int64_t(i), sizes[i]);
  return r;
}

IndexRef strided_index(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset,
                       const std::vector<IndexRef>& index) {
  KILN_CHECK(sizes.size() == strides.size() && sizes.size() == index.size(), "view rank mismatch");
  std::vector<IndexRef> terms;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] != 1 && strides[i] != 0) terms.push_back(strides[i] * index[i]);
  if (offset != 0) terms.push_back(index_const(offset));
  return sum_of(std::move(terms));
}

std::vector<IndexRef> reshape_indices(const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                                      const std::vector<IndexRef>& to_index) {
  KILN_CHECK(to.size() == to_index.size(), "reshape rank mismatch");
  KILN_USER_CHECK(numel(from) == numel(to), "reshape changes the element count: ", numel(from), " vs ", numel(to));
  std::vector<int64_t> to_strides = row_major_strides(to), from_strides = row_major_strides(from);
  std::vector<IndexRef> terms;
  for (size_t j = 0; j < to.size(); ++j)
    if (to[j] != 1) terms.push_back(to_strides[j] * to_index[j]);
  IndexRef flat = sum_of(std::move(terms));
  std::vector<IndexRef> from_index;
  for (size_t i = 0; i < from.size(); ++i) {
    IndexRef q = index_floordiv(flat, index_const(from_strides[i]));
    from_index.push_back(i == 0 ? q : index_mod(q, index_const(from[i])));
  }
  return from_index;
}

}  // namespace kiln::loopir
