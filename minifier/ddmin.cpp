#include "minifier/ddmin.h"

#include <algorithm>

namespace kiln {

std::vector<size_t> ddmin(size_t n, const std::function<bool(const std::vector<size_t>&)>& interesting,
                          DdminStats* stats, const std::function<bool()>& cancelled) {
  std::vector<size_t> kept(n);
  for (size_t i = 0; i < n; ++i) kept[i] = i;
  DdminStats local;
  DdminStats& st = stats ? *stats : local;
  size_t chunk = 1;
  while (chunk * 2 <= n) chunk *= 2;
  // Repeat a pass at chunk size 1 until nothing more goes: a later removal can
  // make an earlier element removable.
  while (!kept.empty()) {
    bool removed_any = false;
    for (size_t begin = 0; begin < kept.size();) {
      if (cancelled && cancelled()) return kept;
      size_t end = std::min(begin + chunk, kept.size());
      std::vector<size_t> candidate;
      candidate.reserve(kept.size() - (end - begin));
      candidate.insert(candidate.end(), kept.begin(), kept.begin() + std::ptrdiff_t(begin));
      candidate.insert(candidate.end(), kept.begin() + std::ptrdiff_t(end), kept.end());
      ++st.tests;
      if (interesting(candidate)) {
        kept = std::move(candidate);
        ++st.accepted;
        removed_any = true;
      } else {
        begin = end;
      }
    }
    if (chunk > 1) chunk /= 2;
    else if (!removed_any) break;
  }
  return kept;
}

std::vector<size_t> ddmin_batched(size_t n,
                                  const std::function<int(const std::vector<std::vector<size_t>>&)>& first_interesting,
                                  size_t batch, DdminStats* stats, const std::function<bool()>& cancelled) {
  std::vector<size_t> kept(n);
  for (size_t i = 0; i < n; ++i) kept[i] = i;
  DdminStats local;
  DdminStats& st = stats ? *stats : local;
  batch = std::max<size_t>(batch, 1);
  size_t chunk = 1;
  while (chunk * 2 <= n) chunk *= 2;
  while (!kept.empty()) {
    bool removed_any = false;
    for (size_t begin = 0; begin < kept.size();) {
      if (cancelled && cancelled()) return kept;
      std::vector<std::vector<size_t>> candidates;
      for (size_t b = begin; b < kept.size() && candidates.size() < batch; b += chunk) {
        size_t end = std::min(b + chunk, kept.size());
        std::vector<size_t> c;
        c.reserve(kept.size() - (end - b));
        c.insert(c.end(), kept.begin(), kept.begin() + std::ptrdiff_t(b));
        c.insert(c.end(), kept.begin() + std::ptrdiff_t(end), kept.end());
        candidates.push_back(std::move(c));
      }
      int k = first_interesting(candidates);
      if (k >= 0) {
        // The sequential walk would have tested (and rejected) the k chunks
        // before this one, then removed it and gone on at the same position.
        st.tests += k + 1;
        kept = std::move(candidates[size_t(k)]);
        begin += size_t(k) * chunk;
        ++st.accepted;
        removed_any = true;
      } else {
        st.tests += int(candidates.size());
        begin += candidates.size() * chunk;
      }
    }
    if (chunk > 1) chunk /= 2;
    else if (!removed_any) break;
  }
  return kept;
}

}  // namespace kiln
