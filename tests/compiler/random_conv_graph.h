#pragma once
// The code generator fuzzer's "conv" family: one forward convolution and the
// tail a layer puts after it. What the GPU back end plans differently is
// drawn widely: 1-D and 2-D, sizes that fill no tile (1 to 21 pixels a side,
// 1 to 40 channels, deep K up to a few hundred now and then), windows 1x1 to
// 7x7, stride 1 to 3, padding 0 to 3, dilation 1 to 3, groups (mostly 1:
// the implicit-GEMM kernel takes only those), bias or none, the input
// contiguous, channels-last (a permuted view) or a channel slice, float32 /
// float16 / bfloat16 and some float64, then relu or a residual add.
// Weights in +-1/sqrt(K), so outputs stay near 1 and TF32's roundings (the
// GPU back end runs this family with conv_tf32 on) stay inside 1e-2.
//
// KILN_CONV=implicit kiln-codegen-fuzz --backend kiln-cuda --family conv
// sends every convolution the implicit kernel takes through it.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "compiler/pipeline/emitter.h"
#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "graph_draws.h"

namespace kiln::test {

class ConvGraphGenerator : GraphDraws {
 public:
  explicit ConvGraphGenerator(uint32_t seed) : GraphDraws(seed), em_(g_) {}

  Graph build(std::vector<Tensor>* inputs) {
    using pipeline::EArg;
    using pipeline::Var;
    const DType dtype = one_of<DType>({DType::Float32, DType::Float32, DType::Float16, DType::BFloat16, DType::Float64});
    const int spatial = chance(0.8) ? 2 : 1;
    const int64_t n = pick(1, 4);
    int64_t groups = 1;
    int64_t c = chance(0.7) ? pick(1, 24) : 8 * pick(1, 8);
    int64_t oc = chance(0.7) ? pick(1, 40) : 16 * pick(1, 8);
    if (chance(0.15)) {  // grouped or depthwise: channels a multiple of the groups
      groups = pick(2, 4);
      c = groups * pick(1, 4);
      oc = groups * pick(1, 5);
    }
    std::vector<int64_t> window, stride, pad, dil, size;
    for (int d = 0; d < spatial; ++d) {
      const int64_t k = one_of<int64_t>({1, 1, 3, 3, 3, 5, 7, 2}), dl = chance(0.25) ? pick(2, 3) : 1;
      const int64_t p = chance(0.3) ? 0 : pick(0, 3), s = chance(0.6) ? 1 : pick(2, 3);
      const int64_t reach = dl * (k - 1) + 1;  // the input (padded) must hold one window
      const int64_t least = std::max<int64_t>(1, reach - 2 * p);
      window.push_back(k), dil.push_back(dl), pad.push_back(p), stride.push_back(s);
      size.push_back(pick(int(least), int(std::max<int64_t>(least, 21))));
    }
    const std::string layout = one_of<std::string>({"contiguous", "contiguous", "channels_last", "slice"});
    std::vector<int64_t> xs = {n, c + (layout == "slice" ? 2 : 0)};
    xs.insert(xs.end(), size.begin(), size.end());
    if (layout == "channels_last") std::rotate(xs.begin() + 1, xs.begin() + 2, xs.end());  // channels last in memory
    std::vector<int64_t> ws = {oc, c / groups};
    ws.insert(ws.end(), window.begin(), window.end());
    int64_t depth = c / groups;
    for (int64_t k : window) depth *= k;
    auto input = [&](const std::string& name, const std::vector<int64_t>& s, double scale) {
      Tensor t = random_input(Shape(s.begin(), s.end()), dtype, scale);
      inputs->push_back(t);
      return em_.placeholder(name, t);
    };
    Var x = input("x", xs, 1.0);
    if (layout == "channels_last") {
      std::vector<int64_t> perm = {0, int64_t(xs.size()) - 1};
      for (int d = 1; d + 1 < int(xs.size()); ++d) perm.push_back(d);
      x = em_.call1("aten::permute.default", {x, perm});
    }
    if (layout == "slice") x = em_.call1("aten::slice.Tensor", {x, int64_t(1), int64_t(1), c + 1});
    Var w = input("w", ws, 1.0 / std::sqrt(double(depth)));
    const bool bias = chance(0.6);
    Var b = bias ? input("b", {oc}, 0.5) : Var{};
    std::vector<int64_t> out_pad(size_t(spatial), 0);
    Var h = em_.call1("aten::convolution.default",
                      {x, w, bias ? EArg(b) : EArg::none(), stride, pad, dil, false, out_pad, groups});
    if (chance(0.4)) h = em_.call1("aten::relu.default", {h});
    if (chance(0.2)) {  // a residual of the output's shape
      std::vector<int64_t> os = {n, oc};
      for (int d = 0; d < spatial; ++d)
        os.push_back((size[size_t(d)] + 2 * pad[size_t(d)] - dil[size_t(d)] * (window[size_t(d)] - 1) - 1) /
                         stride[size_t(d)] + 1);
      h = em_.call1("aten::add.Tensor", {h, input("r", os, 1.0)});
    }
    em_.output({h});
    return std::move(g_);
  }

 private:
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
