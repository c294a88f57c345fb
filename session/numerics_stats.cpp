#include "session/numerics_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/tensor/dtype.h"

namespace kiln::session {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMaxFinite = std::numeric_limits<double>::max();

// The decades' lower edges, 1e-10 .. 1e-1: a table, as the histogram looks one up per element.
constexpr double kDecadeEdges[ErrorHistogram::kDecades] = {1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1};
double decade_edge(int d) { return kDecadeEdges[d]; }

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
  if (std::isnan(error)) return kNonFinite;
  // Counting the edges at or below the error, without branches: the hot loop
  // calls this per element, and a search's branches mispredict on noise.
  // 0 -> kEqual; below 1e-10 -> kBelow; each edge passed moves one bucket up;
  // 1 and above -> kAbove; inf -> kNonFinite. Comparing with the edges, not
  // taking log10, puts 1e-4 itself in its own decade.
  int b = error != 0;
  for (double edge : kDecadeEdges) b += error >= edge;
  return b + (error >= 1) + std::isinf(error);
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

namespace {

// The k worst as a heap whose top is the least bad of them: a larger error is
// worse, and of equal errors the earlier element ranks first.
using Entry = std::pair<double, int64_t>;
bool worse(const Entry& a, const Entry& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); }

// Out of line: rarely reached, and inlined it costs the hot loop its registers.
[[gnu::noinline]] void keep_worst(std::vector<Entry>& heap, size_t k, Entry entry) {
  if (heap.size() < k) {
    heap.push_back(entry);
    std::push_heap(heap.begin(), heap.end(), worse);
  } else {
    std::pop_heap(heap.begin(), heap.end(), worse);
    heap.back() = entry;
    std::push_heap(heap.begin(), heap.end(), worse);
  }
}

// The largest finite magnitude of either, without branches (a NaN or Inf
// fails the first comparison).
template <class V, class R>
[[gnu::noinline]] double scale_of(const V* value, const R* reference, size_t n) {
  double scale = 0;
  for (size_t i = 0; i < n; ++i) {
    const double a = std::fabs(double(reference[i])), b = std::fabs(double(value[i]));
    scale = a <= kMaxFinite && a > scale ? a : scale;
    scale = b <= kMaxFinite && b > scale ? b : scale;
  }
  return scale;
}

// On the tensors' own element types (float32 values against a float64
// reference, mostly): converting the values to float64 first would add a
// copy, and this loop is memory-bound over every element of every node.
template <class V, class R>
TensorErrors compare_impl(const V* value, const R* reference, size_t n, const std::vector<int64_t>& sizes, bool exact,
                          double tolerance, int worst_k) {
  TensorErrors e;
  e.measured = true;
  e.exact = exact;
  e.elements = int64_t(n);
  const double scale = scale_of(value, reference, n);
  // In units of |x - ref|, so the loop divides nothing: error > t exactly when
  // |x - ref| > t * s, up to the rounding of that product.
  double edges[ErrorHistogram::kDecades + 1];
  for (int d = 0; d < ErrorHistogram::kDecades; ++d) edges[d] = ErrorHistogram::lower_edge(ErrorHistogram::kFirstDecade + d) * scale;
  edges[ErrorHistogram::kDecades] = scale;  // error 1
  const double over_diff = tolerance * scale;
  std::vector<Entry> heap;  // by |x - ref|, inf for a NaN/Inf mismatch
  const size_t k = size_t(std::max(worst_k, 0));
  heap.reserve(k + 1);
  // Accumulators in locals: `e` is the caller's return slot, which the
  // compiler cannot prove the inputs do not alias, so its members would be
  // stored on every element.
  // Four histograms, by element index: noise puts run after run of elements
  // in one bucket, and one counter would chain every increment on the last.
  int64_t counts[4][ErrorHistogram::kBuckets] = {};
  int64_t over = 0, non_finite = 0;
  double max_abs = 0;
  for (size_t i = 0; i < n; ++i) {
    const double x = double(value[i]), r = double(reference[i]);
    double diff = 0;
    int bucket = ErrorHistogram::kEqual;
    if (!std::isfinite(x) || !std::isfinite(r)) {
      if (!same(x, r)) {
        diff = kInf;
        bucket = ErrorHistogram::kNonFinite;
        ++over;
        ++non_finite;
      }
    } else {
      diff = std::fabs(x - r);
      // A finite difference needs a non-zero value, so s > 0 whenever diff > 0.
      over += exact ? diff > 0 : diff > over_diff;
      int passed = 1;
      for (double edge : edges) passed += diff >= edge;
      bucket = (diff != 0) * passed;  // an all-zero pair has s = 0: every edge is 0
    }
    max_abs = std::max(max_abs, diff);
    ++counts[i & 3][bucket];
    // A later element beats the heap's least bad only when it is worse.
    if (diff == 0 || k == 0 || (heap.size() == k && !(diff > heap.front().first))) continue;
    keep_worst(heap, k, {diff, int64_t(i)});
  }
  const double max_error = max_abs == 0 ? 0 : max_abs == kInf ? kInf : max_abs / scale;
  e.scale = scale;
  e.over = over;
  e.non_finite = non_finite;
  e.max_abs = max_abs;
  e.max_error = max_error;
  for (int b = 0; b < ErrorHistogram::kBuckets; ++b) e.histogram.counts[b] = counts[0][b] + counts[1][b] + counts[2][b] + counts[3][b];
  std::sort(heap.begin(), heap.end(), worse);
  for (const Entry& h : heap)
    e.worst.push_back({unflatten(h.second, sizes), double(reference[size_t(h.second)]), double(value[size_t(h.second)]),
                       h.first == kInf ? kInf : h.first / scale});
  return e;
}

}  // namespace

TensorErrors compare_elements(std::span<const double> value, std::span<const double> reference,
                              const std::vector<int64_t>& sizes, bool exact, double tolerance, int worst_k) {
  if (value.size() != reference.size()) return {};
  return compare_impl(value.data(), reference.data(), reference.size(), sizes, exact, tolerance, worst_k);
}

TensorErrors compare_tensors(const Tensor& value, const Tensor& reference, double tolerance, int worst_k) {
  if (value.sizes() != reference.sizes()) return {};
  const bool exact = !is_floating(reference.dtype());
  const size_t n = size_t(reference.numel());
  // The ladder's usual pair: a float32 rung against the float64 reference.
  if (reference.dtype() == DType::Float64 && value.dtype() == DType::Float32) {
    const Tensor a = value.contiguous(), b = reference.contiguous();
    return compare_impl(a.data<float>(), b.data<double>(), n, reference.sizes(), exact, tolerance, worst_k);
  }
  const Tensor a = value.to(DType::Float64).contiguous(), b = reference.to(DType::Float64).contiguous();
  return compare_impl(a.data<double>(), b.data<double>(), n, reference.sizes(), exact, tolerance, worst_k);
}

}  // namespace kiln::session
