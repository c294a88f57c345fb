#pragma once
// The code generator fuzzer's "split" family: reductions of few long rows,
// the shapes the CUDA backend splits over many blocks (cuda_split_reduce.h).
// A graph is one input (sometimes two, broadcasting), a pointwise prologue,
// a reduction over the last dim, the first dim (a strided row), several
// dims or everything, and sometimes a pointwise epilogue on the result; now
// and then the result is broadcast back over the row (softmax's shape), which
// the backend does not split, so the same family checks the fallback.
//
// Rows are 1 to 6, each 40000 to 260000 positions (every dtype's split
// needs at least four passes of a block: 8192 float32 positions each), a few
// of odd length so no vector loads apply. Values stay where the comparison
// with the ATen interpreter means something: floats in [-2, 2] (prod sees
// 1 + x * 1e-5), integers in [-5, 5], so integer sums are exact.
#include <random>
#include <string>
#include <vector>

#include "compiler/pipeline/emitter.h"
#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "graph_draws.h"

namespace kiln::test {

class SplitReductionGraphGenerator : GraphDraws {
 public:
  explicit SplitReductionGraphGenerator(uint32_t seed) : GraphDraws(seed), em_(g_) {}

  Graph build(std::vector<Tensor>* inputs) {
    using pipeline::EArg;
    using pipeline::Var;
    const DType dtype = pick_dtype();
    const bool fl = is_floating(dtype);
    const int64_t rows = chance(0.35) ? 1 : pick(2, 6);
    int64_t len = pick(40000, 260000);
    if (chance(0.2)) len |= 1;  // odd: no vector loads
    else len &= ~int64_t(7);
    // Where the long row lies: the last dim, the first (strided), or two dims.
    const int layout = rows == 1 ? 0 : pick(0, 2);
    Shape shape = layout == 0 ? (rows == 1 ? Shape{len} : Shape{rows, len})
                  : layout == 1 ? Shape{len, rows}
                                : Shape{rows, 8, len / 8};
    std::vector<int64_t> dims = layout == 0 ? std::vector<int64_t>{-1}
                                : layout == 1 ? std::vector<int64_t>{0}
                                              : std::vector<int64_t>{1, 2};
    Tensor x = random_input(shape, dtype);
    inputs->push_back(x);
    Var v = em_.placeholder("x", x);
    if (fl && chance(0.3)) {  // a second input, the whole shape or one broadcast row
      Shape ys = chance(0.5) ? shape : Shape{shape.back()};
      Tensor y = random_input(ys, dtype);
      inputs->push_back(y);
      Var vy = em_.placeholder("y", y);
      v = em_.call1(chance(0.5) ? "aten::add.Tensor" : "aten::mul.Tensor", {v, vy});
    }
    // The prologue: fused into the reduction's body.
    if (fl && chance(0.5)) {
      std::string op = one_of<std::string>({"mul", "abs", "sin", "relu", "tanh"});
      v = op == "mul" ? em_.call1("aten::mul.Tensor", {v, v}) : em_.call1("aten::" + op + ".default", {v});
    } else if (!fl && dtype != DType::Bool && chance(0.4)) {
      v = em_.call1(chance(0.5) ? "aten::abs.default" : "aten::neg.default", {v});
    }
    const bool keepdim = chance(0.4);
    const bool all = chance(0.25);
    Var r;
    std::string what;
    if (dtype == DType::Bool) {
      what = one_of<std::string>({"any", "sum", "amax"});
    } else if (!fl) {
      what = one_of<std::string>({"sum", "amax", "amin"});
    } else {
      what = one_of<std::string>({"sum", "sum", "mean", "amax", "amin", "prod"});
    }
    if (what == "any") {
      r = all ? em_.call1("aten::any.default", {v}) : em_.call1("aten::any.dim", {v, dims.back(), keepdim});
    } else if (what == "prod") {
      Var near_one = em_.call1("aten::add.Scalar", {em_.call1("aten::mul.Scalar", {v, 1e-5}), 1.0});
      r = all ? em_.call1("aten::prod.default", {near_one})
              : em_.call1("aten::prod.dim_int", {near_one, dims.back(), keepdim});
    } else if (what == "sum") {
      r = all ? em_.call1("aten::sum.default", {v}) : em_.call1("aten::sum.dim_IntList", {v, dims, keepdim});
    } else if (what == "mean") {
      r = all ? em_.call1("aten::mean.default", {v}) : em_.call1("aten::mean.dim", {v, dims, keepdim});
    } else {
      std::vector<int64_t> d = dims;
      if (all) {
        d.clear();
        for (int64_t i = 0; i < int64_t(shape.size()); ++i) d.push_back(i);
      }
      r = em_.call1("aten::" + what + ".default", {v, d, keepdim});
    }
    std::vector<Var> outs{r};
    if (fl && chance(0.4)) {  // a pointwise epilogue on the row's value (a mean's division is one already)
      outs.push_back(em_.call1("aten::add.Scalar", {em_.call1("aten::mul.Scalar", {r, 0.5}), 1.0}));
    }
    if (fl && keepdim && !all && chance(0.25)) {  // broadcast back over the row: not split
      outs.push_back(em_.call1("aten::sub.Tensor", {v, r}));
    }
    em_.output(outs);
    return std::move(g_);
  }

 private:
  DType pick_dtype() {
    double r = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (r < 0.5) return DType::Float32;
    if (r < 0.62) return DType::Float64;
    if (r < 0.72) return DType::BFloat16;
    if (r < 0.78) return DType::Float16;
    if (r < 0.9) return DType::Int32;
    return DType::Bool;
  }

  Tensor random_input(const Shape& s, DType dtype) {
    std::vector<double> v(size_t(shape_numel(s)));
    std::uniform_real_distribution<double> real(-2.0, 2.0);
    for (double& x : v) x = dtype == DType::Bool ? double(chance(0.001)) : is_floating(dtype) ? real(rng_) : pick(-5, 5);
    return Tensor::from_vector(v, s).to(dtype);
  }

  Graph g_;
  pipeline::GraphEmitter em_;
};

}  // namespace kiln::test
