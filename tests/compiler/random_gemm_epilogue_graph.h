#pragma once
// The code generator fuzzer's "gemm-epilogue" family: an mm (or addmm) and the
// pointwise tail a layer puts after it, the graphs the scheduler may hand to
// cuBLASLt as an epilogue (GemmLtEpilogue): bias [N], relu, gelu with
// approximate='tanh' (and 'none', erf, which must stay a kernel), an [M, N]
// residual added or subtracted, a cast round trip, sometimes a second mm
// after the activation (an MLP) or a second reader of the product (no fusion).
//
// Sizes are small (1 to 72, odd ones included so cuBLASLt sees unaligned
// leading dimensions and refuses some), the operands sometimes transposed,
// float32 / float16 / bfloat16. Values in [-1.5, 1.5] scaled by 1/sqrt(K), so
// products land around the gelu knee and relu's zero.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "compiler/pipeline/emitter.h"
#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "graph_draws.h"

namespace kiln::test {

class GemmEpilogueGraphGenerator : GraphDraws {
 public:
  explicit GemmEpilogueGraphGenerator(uint32_t seed) : GraphDraws(seed), em_(g_) {}

  Graph build(std::vector<Tensor>* inputs) {
    using pipeline::Var;
    const DType dtype = one_of<DType>({DType::Float32, DType::Float16, DType::BFloat16, DType::BFloat16});
    const int64_t m = size(), n = size(), k = size();
    const double scale = 1.0 / std::sqrt(double(k));
    auto input = [&](const std::string& name, const Shape& s, double sc) {
      Tensor t = random_input(s, dtype, sc);
      inputs->push_back(t);
      return em_.placeholder(name, t);
    };
    Var x = input("x", {m, k}, 1.0);
    // w given as [N, K] and transposed (a Linear's weight) or as [K, N].
    Var w = chance(0.4) ? em_.call1("aten::t.default", {input("w", {n, k}, scale)}) : input("w", {k, n}, scale);
    const bool bias = chance(0.6);
    Var h;
    if (bias && chance(0.4)) {
      h = em_.call1("aten::addmm.default", {input("b", {n}, 0.5), x, w});
    } else {
      h = em_.call1("aten::mm.default", {x, w});
      if (bias) h = em_.call1("aten::add.Tensor", {h, input("b", {n}, 0.5)});
    }
    std::vector<Var> outs;
    if (chance(0.1)) outs.push_back(h);  // the product read twice: stays a GEMM and a kernel
    const std::string act = one_of<std::string>({"relu", "gelu_tanh", "gelu_tanh", "gelu_erf", "none", "sigmoid"});
    if (act == "relu") h = em_.call1("aten::relu.default", {h});
    else if (act == "gelu_tanh") h = em_.call1("aten::gelu.default", {h}, {{"approximate", Value(std::string("tanh"))}});
    else if (act == "gelu_erf") h = em_.call1("aten::gelu.default", {h});
    else if (act == "sigmoid") h = em_.call1("aten::sigmoid.default", {h});
    if (chance(0.35)) {
      Var r = input("r", {m, n}, 1.0);
      h = em_.call1(chance(0.75) ? "aten::add.Tensor" : "aten::sub.Tensor", {h, r});
    }
    if (dtype != DType::Float32 && chance(0.15))  // a round trip through float32: rounding, not a new value
      h = em_.call1("aten::_to_copy.default", {em_.call1("aten::_to_copy.default", {h}, {{"dtype", Value(DType::Float32)}})},
                    {{"dtype", Value(dtype)}});
    if (chance(0.35)) {  // an MLP: the activation feeds another mm
      const int64_t n2 = size();
      h = em_.call1("aten::mm.default", {h, input("w2", {n, n2}, 1.0 / std::sqrt(double(n)))});
      if (chance(0.5)) h = em_.call1("aten::relu.default", {h});
    }
    outs.push_back(h);
    em_.output(outs);
    return std::move(g_);
  }

 private:
  // Mostly multiples of 8 (what cuBLASLt's fast paths want), a third anything.
  int64_t size() { return chance(0.33) ? pick(1, 72) : 8 * pick(1, 9); }

  Tensor random_input(const Shape& s, DType dtype, double scale) {
    std::vector<double> v(size_t(shape_numel(s)));
    std::uniform_real_distribution<double> real(-1.5, 1.5);
    for (double& x : v) x = real(rng_) * scale;
    return Tensor::from_vector(v, s).to(dtype);
  }

  Graph g_;
  pipeline::GraphEmitter em_;
};

}  // namespace kiln::test
