#pragma once
// Element-wise iteration over several tensors of the same sizes (broadcast
// operands are expanded first, so they carry zero strides). Dims are reordered
// by the first operand's strides, size-1 dims dropped and mergeable dims
// coalesced; the body then sees long inner runs, and contiguous runs become
// plain loops the compiler vectorizes.
#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <utility>

#include "core/tensor/parallel.h"
#include "core/tensor/tensor.h"

namespace kiln {

template <size_t N>
struct LoopPlan {
  std::vector<int64_t> sizes;                         // outermost first
  std::vector<std::array<int64_t, N>> byte_strides;   // per dim, per operand
  std::array<char*, N> base{};
  int64_t numel = 1;
};

template <size_t N>
LoopPlan<N> make_loop_plan(const std::array<const Tensor*, N>& ops) {
  LoopPlan<N> plan;
  const Shape& sizes = ops[0]->sizes();
  int64_t nd = int64_t(sizes.size());
  for (size_t k = 0; k < N; ++k) {
    KILN_CHECK(ops[k]->sizes() == sizes, "loop operands differ in shape: ",
               shape_str(ops[k]->sizes()), " vs ", shape_str(sizes));
    plan.base[k] = static_cast<char*>(ops[k]->raw_data());
  }
  plan.numel = shape_numel(sizes);
  std::vector<int64_t> order(nd);
  std::iota(order.begin(), order.end(), 0);
  const Shape& s0 = ops[0]->strides();
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::abs(s0[a]) > std::abs(s0[b]);
  });
  for (int64_t d : order) {
    if (sizes[d] == 1) continue;
    std::array<int64_t, N> st;
    for (size_t k = 0; k < N; ++k) st[k] = ops[k]->strides()[d] * int64_t(ops[k]->itemsize());
    if (!plan.sizes.empty()) {
      auto& prev = plan.byte_strides.back();
      bool mergeable = true;
      for (size_t k = 0; k < N; ++k) mergeable &= prev[k] == st[k] * sizes[d];
      if (mergeable) {
        plan.sizes.back() *= sizes[d];
        prev = st;
        continue;
      }
    }
    plan.sizes.push_back(sizes[d]);
    plan.byte_strides.push_back(st);
  }
  if (plan.sizes.empty()) {  // a single element (or none)
    plan.sizes.push_back(plan.numel);
    plan.byte_strides.push_back({});
  }
  return plan;
}

// Runs body(ptrs, strides, n) for runs of the innermost dim covering [begin, end)
// of the plan's linear element order.
template <size_t N, class Body>
void run_loop_range(const LoopPlan<N>& plan, int64_t begin, int64_t end, Body& body) {
  int64_t nd = int64_t(plan.sizes.size());
  int64_t inner = plan.sizes[nd - 1];
  std::vector<int64_t> idx(nd, 0);
  int64_t rem = begin;
  for (int64_t d = nd - 1; d >= 0; --d) {
    idx[d] = rem % plan.sizes[d];
    rem /= plan.sizes[d];
  }
  std::array<char*, N> ptrs;
  std::array<int64_t, N> inner_strides = plan.byte_strides[nd - 1];
  int64_t pos = begin;
  while (pos < end) {
    for (size_t k = 0; k < N; ++k) {
      char* p = plan.base[k];
      for (int64_t d = 0; d < nd; ++d) p += idx[d] * plan.byte_strides[d][k];
      ptrs[k] = p;
    }
    int64_t n = std::min(inner - idx[nd - 1], end - pos);
    body(ptrs.data(), inner_strides.data(), n);
    pos += n;
    idx[nd - 1] += n;
    for (int64_t d = nd - 1; d > 0 && idx[d] >= plan.sizes[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

// body(char** ptrs, const int64_t* byte_strides, int64_t n): process n elements,
// operand k at ptrs[k] + i * byte_strides[k].
template <size_t N, class Body>
void for_each_run(const std::array<const Tensor*, N>& ops, Body body, bool parallel = true) {
  LoopPlan<N> plan = make_loop_plan(ops);
  if (plan.numel == 0) return;
  if (!parallel) {
    run_loop_range(plan, 0, plan.numel, body);
    return;
  }
  parallel_for(0, plan.numel, kParallelGrain,
               [&](int64_t b, int64_t e) { run_loop_range(plan, b, e, body); });
}

// out[i] = f(in[i]...) with each operand of its own C++ type (as stored). All
// tensors must already have out's sizes (expand inputs to broadcast them).
template <class Out, class... In, class F, class... Ts>
void map_elements(const Tensor& out, F f, const Ts&... in) {
  constexpr size_t N = 1 + sizeof...(In);
  static_assert(sizeof...(In) == sizeof...(in), "one C++ type per input");
  std::array<const Tensor*, N> ops{&out, &in...};
  for_each_run<N>(ops, [&](char** p, const int64_t* s, int64_t n) {
    bool contiguous = s[0] == int64_t(sizeof(Out));
    size_t k = 1;
    ((contiguous &= s[k++] == int64_t(sizeof(In))), ...);
    if (contiguous) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      [&]<size_t... I>(std::index_sequence<I...>) {
        std::tuple<const In*...> ins{reinterpret_cast<const In*>(p[I + 1])...};
        for (int64_t i = 0; i < n; ++i) o[i] = f(std::get<I>(ins)[i]...);
      }(std::index_sequence_for<In...>{});
    } else {
      [&]<size_t... I>(std::index_sequence<I...>) {
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<Out*>(p[0] + i * s[0]) =
              f(*reinterpret_cast<const In*>(p[I + 1] + i * s[I + 1])...);
      }(std::index_sequence_for<In...>{});
    }
  });
}

}  // namespace kiln
