#include "session/numerics_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/tensor/dtype.h"

namespace kiln::session {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double decade_edge(int d) { return std::pow(10.0, double(d - ErrorHistogram::kDecades)); }  // d = 0: 1e-10

// Whether two non-finite-aware values are the same: NaN equals NaN, an Inf its own sign.
bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// The multi-dimensional index of flat position `i` in a row-major tensor of `sizes`.
std::vector<int64_t> unflatten(int64_t i, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> index(sizes.size(), 0);
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] <= 0) continue;
    index[d] = i % sizes[d];
    i /= sizes[d];
  }
  return index;
}

}  // namespace

int ErrorHistogram::bucket_of(double error) {
  if (std::isnan(error) || std::isinf(error)) return kNonFinite;
  if (error == 0) return kEqual;
  if (error < decade_edge(0)) return kBelow;
  if (error >= 1) return kAbove;
  // Comparing with the edges, not log10, so 1e-4 itself lands in its own decade.
  int d = kDecades - 1;
  while (d > 0 && error < decade_edge(d)) --d;
  return kFirstDecade + d;
}

double ErrorHistogram::lower_edge(int bucket) {
  if (bucket <= kBelow) return 0;
  if (bucket >= kNonFinite) return kInf;
  if (bucket == kAbove) return 1;
  return decade_edge(bucket - kFirstDecade);
}

std::string ErrorHistogram::label(int bucket) {
  if (bucket == kEqual) return "0";
  if (bucket == kBelow) return "<1e-10";
  if (bucket == kAbove) return ">=1";
  if (bucket == kNonFinite) return "NaN/Inf";
  char buf[16];
  std::snprintf(buf, sizeof buf, "1e%d", bucket - kFirstDecade - kDecades);
  return buf;
}

const char* error_rule() {
  return "error = |x - ref| / s, s = the largest finite |value| of either tensor (the node's scale, so a zero "
         "reference does not blow it up); an element is over when its error > tolerance; bool and integer outputs: "
         "when it differs; NaN/Inf where the reference has none (or the other way round): always over";
}

TensorErrors compare_elements(std::span<const double> value, std::span<const double> reference,
                              const std::vector<int64_t>& sizes, bool exact, double tolerance, int worst_k) {
  TensorErrors e;
  if (value.size() != reference.size()) return e;
  e.measured = true;
  e.exact = exact;
  e.elements = int64_t(reference.size());
  for (size_t i = 0; i < reference.size(); ++i) {
    if (std::isfinite(reference[i])) e.scale = std::max(e.scale, std::fabs(reference[i]));
    if (std::isfinite(value[i])) e.scale = std::max(e.scale, std::fabs(value[i]));
  }
  // The k worst as a heap whose top is the least bad of them: a larger
  // error is worse, and of equal errors the earlier element ranks first.
  using Entry = std::pair<double, int64_t>;
  auto worse = [](const Entry& a, const Entry& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  std::vector<Entry> heap;
  const size_t k = size_t(std::max(worst_k, 0));
  heap.reserve(k + 1);
  for (size_t i = 0; i < reference.size(); ++i) {
    const double x = value[i], r = reference[i];
    double error = 0;
    bool over = false;
    if (!std::isfinite(x) || !std::isfinite(r)) {
      if (!same(x, r)) {
        error = kInf;
        over = true;
        ++e.non_finite;
        e.max_abs = kInf;
      }
    } else {
      const double diff = std::fabs(x - r);
      e.max_abs = std::max(e.max_abs, diff);
      // A finite difference needs a non-zero value, so s > 0 here whenever diff > 0.
      error = diff > 0 ? diff / e.scale : 0;
      over = exact ? diff > 0 : error > tolerance;
    }
    e.max_error = std::max(e.max_error, error);
    e.over += over;
    ++e.histogram.counts[ErrorHistogram::bucket_of(error)];
    if (error == 0 || k == 0) continue;
    Entry entry{error, int64_t(i)};
    if (heap.size() < k) {
      heap.push_back(entry);
      std::push_heap(heap.begin(), heap.end(), worse);
    } else if (worse(entry, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), worse);
      heap.back() = entry;
      std::push_heap(heap.begin(), heap.end(), worse);
    }
  }
  std::sort(heap.begin(), heap.end(), worse);
  for (const Entry& h : heap)
    e.worst.push_back({unflatten(h.second, sizes), reference[size_t(h.second)], value[size_t(h.second)], h.first});
  return e;
}

TensorErrors compare_tensors(const Tensor& value, const Tensor& reference, double tolerance, int worst_k) {
  if (value.sizes() != reference.sizes()) return {};
  const Tensor a = value.to(DType::Float64).contiguous(), b = reference.to(DType::Float64).contiguous();
  const size_t n = size_t(b.numel());
  return compare_elements({a.data<double>(), n}, {b.data<double>(), n}, reference.sizes(), !is_floating(reference.dtype()),
                          tolerance, worst_k);
}

}  // namespace kiln::session
