#pragma once
// What the loop IR and scheduler tests share: random inputs, the ATen
// interpreter's outputs as the reference, and an element-wise comparison.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <QtTest>

#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/emitter.h"
#include "core/graph/graph.h"
#include "test_support.h"

namespace kiln::test {

inline Tensor random_f32(Shape sizes, std::mt19937& rng, float lo = -2.f, float hi = 2.f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(size_t(shape_numel(sizes)));
  for (float& x : v) x = u(rng);
  return Tensor::from_vector(v, std::move(sizes));
}

// "" when every output agrees within `tol` (relative above 1), else what differs.
inline std::string compare_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol) {
  if (want.size() != got.size()) return "output counts differ";
  for (size_t i = 0; i < got.size(); ++i) {
    if (want[i].sizes() != got[i].sizes()) return "output " + std::to_string(i) + " sizes differ";
    if (want[i].dtype() != got[i].dtype())
      return "output " + std::to_string(i) + " dtype " + std::string(dtype_name(got[i].dtype())) + " vs " +
             std::string(dtype_name(want[i].dtype()));
    std::vector<double> a = values(got[i]), b = values(want[i]);
    for (size_t k = 0; k < a.size(); ++k) {
      bool both_nan = std::isnan(a[k]) && std::isnan(b[k]);
      if (!both_nan && !(std::fabs(a[k] - b[k]) <= tol * std::max(1.0, std::fabs(b[k]))))
        return "output " + std::to_string(i) + " element " + std::to_string(k) + ": " + std::to_string(a[k]) +
               " vs " + std::to_string(b[k]);
    }
  }
  return {};
}

// The graph's outputs as the ATen interpreter computes them.
inline std::vector<Tensor> aten_outputs(const Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Value> in;
  for (const Tensor& t : inputs) in.emplace_back(t);
  auto want = pipeline::run_aten_graph(g, in);
  if (!want.ok()) qFatal("run_aten_graph failed: %s", want.status().message().c_str());
  std::vector<Tensor> out;
  for (const Value& v : *want) out.push_back(v.to_tensor());
  return out;
}

// softmax over the last dim, decomposed as ATen's decomposition writes it:
// amax, sub, exp, sum, div.
inline Graph softmax_graph(const Tensor& x) {
  Graph g;
  pipeline::GraphEmitter e(g);
  pipeline::Var a = e.placeholder("x", x);
  pipeline::Var m = e.call1("aten::amax.default", {a, std::vector<int64_t>{-1}, true});
  pipeline::Var ex = e.call1("aten::exp.default", {e.call1("aten::sub.Tensor", {a, m})});
  pipeline::Var sm = e.call1("aten::sum.dim_IntList", {ex, std::vector<int64_t>{-1}, true});
  e.output({e.call1("aten::div.Tensor", {ex, sm})});
  return g;
}

}  // namespace kiln::test
