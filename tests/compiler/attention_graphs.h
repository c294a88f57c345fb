#pragma once
// Attention-shaped graphs in the forms programs write them (scale before or
// after the softmax's input is formed, _softmax or amax/sub/exp/sum/div,
// masked_fill / where with a triu/tril mask, an additive or boolean mask
// tensor, 3-D bmm or 4-D matmul), for the attention fusion's tests
// (test_cuda_attention.cpp) and the codegen fuzzer's attention family.
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compiler/pipeline/emitter.h"
#include "core/tensor/tensor.h"

namespace kiln::test {

struct AttentionForm {
  std::string name;
  DType dtype = DType::Float16;
  std::vector<int64_t> batch = {2};  // [B] (3-D bmm) or [B, H] (4-D matmul)
  int64_t m = 8, n = 8, d = 16, dv = 16;
  std::string scale = "mul";         // "mul" (* k), "div" (/ k), "mul_first" (k * s), "none"
  bool decomposed = false;           // amax/sub/exp/sum/div written out, else _softmax
  // "" none; "causal_fill": masked_fill(triu(ones(bool), 1), -inf); "tril_where": where(tril(ones) == 0, -inf, s);
  // "additive": + a mask input; "bool_input": masked_fill(mask input, -inf); "finite_fill": masked_fill(triu, -1e4);
  // "mask_before_scale": masked_fill before the scale.
  std::string mask;
  // Refused forms: "tanh" (a softcap on the scores), "probs_out" (the probabilities also returned),
  // "no_max" (exp without the max subtracted).
  std::string twist;
};

inline std::vector<AttentionForm> attention_forms() {
  std::vector<AttentionForm> f;
  f.push_back({"f16_mul_softmax", DType::Float16, {2}, 80, 72, 32, 32, "mul", false, "", ""});
  f.push_back({"f32_div_decomposed", DType::Float32, {3}, 40, 33, 24, 24, "div", true, "", ""});
  f.push_back({"bf16_causal_fill_4d", DType::BFloat16, {2, 3}, 96, 96, 64, 64, "mul", false, "causal_fill", ""});
  f.push_back({"f16_tril_where_decomposed", DType::Float16, {2}, 70, 70, 64, 64, "div", true, "tril_where", ""});
  f.push_back({"f32_causal_fill", DType::Float32, {2}, 50, 50, 16, 16, "mul_first", false, "causal_fill", ""});
  f.push_back({"f16_additive_mask", DType::Float16, {2}, 64, 128, 32, 48, "mul", false, "additive", ""});
  f.push_back({"bf16_bool_mask_4d", DType::BFloat16, {2, 2}, 33, 65, 16, 16, "mul", true, "bool_input", ""});
  f.push_back({"f16_finite_fill", DType::Float16, {2}, 40, 40, 32, 32, "mul", false, "finite_fill", ""});
  f.push_back({"f16_mask_before_scale", DType::Float16, {1}, 64, 64, 128, 128, "div", false, "mask_before_scale", ""});
  f.push_back({"f16_odd_head", DType::Float16, {2}, 20, 20, 20, 12, "mul", false, "", ""});
  f.push_back({"f16_no_scale", DType::Float16, {2}, 16, 16, 16, 16, "none", true, "", ""});
  f.push_back({"refused_tanh_softcap", DType::Float16, {2}, 16, 16, 16, 16, "mul", false, "", "tanh"});
  f.push_back({"refused_probs_out", DType::Float32, {2}, 16, 16, 16, 16, "mul", false, "", "probs_out"});
  f.push_back({"refused_no_max", DType::Float32, {2}, 16, 16, 16, 16, "mul", true, "", "no_max"});
  return f;
}

// The part of the refusal reason a refused form must give ("" when it fuses).
// Whether the fusion must recognise the form's mask as causal.
inline bool attention_causal(const AttentionForm& f) {
  return f.mask == "causal_fill" || f.mask == "tril_where" || f.mask == "mask_before_scale" || f.mask == "finite_fill";
}

inline std::string attention_refusal(const AttentionForm& f) {
  if (f.twist == "tanh") return "the scores go through tanh";
  if (f.twist == "probs_out") return "is a graph output";
  if (f.twist == "no_max") return "not of the scores minus their max";
  return "";
}

// No Qt here: kiln-codegen-fuzz builds these graphs on the GPU machine.
inline Tensor random_tensor_of(std::vector<int64_t> sizes, std::mt19937& rng, DType dtype, float lo = -2.f,
                               float hi = 2.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  Shape shape(sizes.begin(), sizes.end());
  std::vector<float> v(size_t(shape_numel(shape)));
  for (float& x : v) x = u(rng);
  return Tensor::from_vector(v, std::move(shape)).to(dtype);
}

// A random form for the fuzzer: any dtype, 3-D or 4-D, ragged sizes (tails of
// every tile), head dimensions on and off the tensor-core path, every mask.
inline AttentionForm random_attention_form(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  AttentionForm f;
  f.name = "random_" + std::to_string(seed);
  const DType dtypes[] = {DType::Float16, DType::BFloat16, DType::Float32};
  f.dtype = dtypes[pick(3)];
  f.batch = pick(2) ? std::vector<int64_t>{1 + pick(3)} : std::vector<int64_t>{1 + pick(2), 1 + pick(3)};
  f.m = 1 + pick(160);
  f.n = pick(3) == 0 ? f.m : 1 + pick(160);
  const int64_t heads[] = {8, 16, 24, 32, 40, 64, 80, 128, 5};
  f.d = heads[pick(9)];
  f.dv = pick(2) ? f.d : heads[pick(9)];
  const char* scales[] = {"mul", "div", "mul_first", "none"};
  f.scale = scales[pick(4)];
  f.decomposed = pick(2);
  const char* masks[] = {"", "causal_fill", "tril_where", "additive", "bool_input", "finite_fill", "mask_before_scale"};
  f.mask = masks[pick(7)];
  return f;
}

// The form's graph; `inputs` gets q, k, v (and the mask input when it has one).
inline Graph attention_graph(const AttentionForm& f, std::vector<Tensor>* inputs, uint32_t seed) {
  using pipeline::GraphEmitter;
  using pipeline::Var;
  std::mt19937 rng(seed);
  auto dims = [&](int64_t a, int64_t b) {
    std::vector<int64_t> s = f.batch;
    s.push_back(a), s.push_back(b);
    return s;
  };
  // Unscaled forms get q scaled down instead: scores of O(1) either way. (Eager
  // rounds the scores to float16 / bfloat16 and the fused kernel does not; on
  // scores of 20 a bfloat16 ulp is 0.125, which moves exp() by 13%.)
  const float q_range = f.scale == "none" ? float(2.0 / std::sqrt(double(f.d))) : 2.f;
  Tensor q = random_tensor_of(dims(f.m, f.d), rng, f.dtype, -q_range, q_range), k = random_tensor_of(dims(f.n, f.d), rng, f.dtype),
         v = random_tensor_of(dims(f.n, f.dv), rng, f.dtype);
  *inputs = {q, k, v};
  Graph g;
  GraphEmitter e(g);
  Var vq = e.placeholder("q", q), vk = e.placeholder("k", k), vv = e.placeholder("v", v);
  Var mask_in;
  if (f.mask == "additive") {
    Tensor m = random_tensor_of({f.m, f.n}, rng, f.dtype, -3.f, 0.f);
    inputs->push_back(m);
    mask_in = e.placeholder("mask", m);
  } else if (f.mask == "bool_input") {
    // Column 0 never masked: no row is wholly masked.
    Tensor m = random_tensor_of({f.m, f.n}, rng, DType::Float32, 0.f, 1.f);
    std::vector<uint8_t> bits;
    const float* p = m.data<float>();
    for (int64_t i = 0; i < f.m * f.n; ++i) bits.push_back(i % f.n != 0 && p[i] < 0.4f);
    Tensor b = Tensor::empty({f.m, f.n}, DType::Bool);
    std::copy(bits.begin(), bits.end(), b.data<bool>());
    inputs->push_back(b);
    mask_in = e.placeholder("mask", b);
  }
  const int64_t r = int64_t(f.batch.size()) + 2;
  const bool four_d = f.batch.size() == 2;
  Var kt = e.call1("aten::transpose.int", {vk, r - 2, r - 1});
  Var s = e.call1(four_d ? "aten::matmul.default" : "aten::bmm.default", {vq, kt});
  const double k_scale = 1.0 / std::sqrt(double(f.d));
  const double ninf = -std::numeric_limits<double>::infinity();
  auto causal_bool = [&] {
    Var ones = e.call1("aten::full.default", {std::vector<int64_t>{f.m, f.n}, int64_t(1)}, {{"dtype", DType::Bool}});
    return e.call1("aten::triu.default", {ones, int64_t(1)});
  };
  auto apply_mask = [&](Var x) {
    if (f.mask == "causal_fill" || f.mask == "mask_before_scale") return e.call1("aten::masked_fill.Scalar", {x, causal_bool(), ninf});
    if (f.mask == "finite_fill") return e.call1("aten::masked_fill.Scalar", {x, causal_bool(), -1e4});
    if (f.mask == "tril_where") {
      Var ones = e.call1("aten::full.default", {std::vector<int64_t>{f.m, f.n}, 1.0}, {{"dtype", f.dtype}});
      Var tril = e.call1("aten::tril.default", {ones, int64_t(0)});
      return e.call1("aten::masked_fill.Scalar", {x, e.call1("aten::eq.Scalar", {tril, 0.0}), ninf});
    }
    if (f.mask == "additive") return e.call1("aten::add.Tensor", {x, mask_in});
    if (f.mask == "bool_input") return e.call1("aten::masked_fill.Scalar", {x, mask_in, ninf});
    return x;
  };
  if (f.mask == "mask_before_scale") s = apply_mask(s);
  if (f.scale == "mul") s = e.call1("aten::mul.Scalar", {s, k_scale});
  if (f.scale == "div") s = e.call1("aten::div.Scalar", {s, std::sqrt(double(f.d))});
  if (f.scale == "mul_first") s = e.call1("aten::mul.Tensor", {e.call1("aten::scalar_tensor.default", {k_scale}, {{"dtype", f.dtype}}), s});
  if (f.mask != "mask_before_scale") s = apply_mask(s);
  if (f.twist == "tanh") s = e.call1("aten::mul.Scalar", {e.call1("aten::tanh.default", {s}), 5.0});
  Var p;
  if (!f.decomposed) {
    p = e.call1("aten::_softmax.default", {s, int64_t(-1), false});
  } else {
    Var x = f.dtype == DType::Float32 ? s : e.call1("aten::_to_copy.default", {s}, {{"dtype", DType::Float32}});
    Var ex;
    if (f.twist == "no_max") {
      ex = e.call1("aten::exp.default", {x});
    } else {
      Var mx = e.call1("aten::amax.default", {x, std::vector<int64_t>{-1}, true});
      ex = e.call1("aten::exp.default", {e.call1("aten::sub.Tensor", {x, mx})});
    }
    Var sum = e.call1("aten::sum.dim_IntList", {ex, std::vector<int64_t>{-1}, true});
    p = e.call1("aten::div.Tensor", {ex, sum});
    if (f.dtype != DType::Float32) p = e.call1("aten::_to_copy.default", {p}, {{"dtype", f.dtype}});
  }
  Var out = e.call1(four_d ? "aten::matmul.default" : "aten::bmm.default", {p, vv});
  if (f.twist == "probs_out") e.output({out, p});
  else e.output({out});
  return g;
}

}  // namespace kiln::test
