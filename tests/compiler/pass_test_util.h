#pragma once
// Shared by the graph pass tests: graphs written as print_readable text, one
// pass run through a verifying PassManager, FileCheck-style line checks, and
// numeric comparison of a graph before and after a pass.
#include <random>
#include <sstream>

#include "compiler/pipeline/constants.h"
#include "compiler/pipeline/pass_manager.h"
#include "core/graph/hash.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "test_support.h"

namespace kiln::test {

inline Graph parse_graph(const std::string& text) {
  auto g = parse_graph_module(text, "test.py");
  if (!g) qFatal("parse failed: %s", g.status().to_string().c_str());
  return std::move(*g);
}

// A module around `body` (lines already indented by eight spaces).
inline Graph graph_of(const std::string& params, const std::string& body) {
  return parse_graph("class GraphModule(torch.nn.Module):\n    def forward(self, " + params + "):\n" + body);
}

struct PassRun {
  pipeline::Stage stage;
  Status status;
  std::string printed;  // what print-after printed
};

// Runs one registered pass with verification on (structure, change flag
// against the hash, provenance) and print-after on.
inline PassRun run_pass(std::string_view name, Graph& g, pipeline::ConstantTable* constants = nullptr) {
  std::ostringstream out;
  pipeline::PassManagerOptions o;
  o.verify_each = true;
  o.print_after = {std::string(name)};
  o.print_to = &out;
  pipeline::PassManager pm(o);
  Status added = pm.add(name);
  if (!added.ok()) qFatal("%s", added.message().c_str());
  pipeline::PassContext ctx;
  ctx.constants = constants;
  PassRun r;
  r.status = pm.run(g, ctx);
  if (pm.stages().size() != 1) qFatal("expected one stage, got %zu", pm.stages().size());
  r.stage = pm.stages()[0];
  r.printed = out.str();
  return r;
}

// The lines of `text` contain `needles` in this order, each in a later line
// than the one before (MLIR's CHECK lines). Returns what went wrong, or "".
inline std::string check_lines(const std::string& text, const std::vector<std::string>& needles) {
  std::istringstream in(text);
  std::string line;
  size_t k = 0;
  while (k < needles.size() && std::getline(in, line))
    if (line.find(needles[k]) != std::string::npos) ++k;
  if (k == needles.size()) return "";
  return "'" + needles[k] + "' not found (in order) in:\n" + text;
}

// `needle` appears nowhere in `text`.
inline bool absent(const std::string& text, const std::string& needle) { return text.find(needle) == std::string::npos; }

inline Tensor random_tensor(const Shape& sizes, DType dtype, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  std::vector<double> v(size_t(shape_numel(sizes)));
  for (double& x : v) x = dist(rng);
  return Tensor::from_vector(v, sizes).to(dtype);
}

// Random inputs for the graph's placeholders, from their meta['val'].
inline std::vector<Value> random_inputs(const Graph& g, std::mt19937& rng) {
  std::vector<Value> inputs;
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    Shape sizes;
    for (const SymInt& s : n.meta.val.tensor.sizes) sizes.push_back(s.value);
    inputs.emplace_back(random_tensor(sizes, *dtype_from_name(n.meta.val.tensor.dtype), rng));
  }
  return inputs;
}

// Both graphs give the same outputs (shape, dtype, values within tolerance)
// on `inputs`; "" or what differs.
inline std::string compare_runs(const Graph& before, const Graph& after, const std::vector<Value>& inputs,
                                const pipeline::ConstantTable& constants = {}) {
  auto want = pipeline::run_with_constants(before, constants, inputs);
  if (!want) return "reference run failed: " + want.status().message();
  auto got = pipeline::run_with_constants(after, constants, inputs);
  if (!got) return "run after the pass failed: " + got.status().message();
  if (want->size() != got->size()) return "output count differs";
  for (size_t i = 0; i < want->size(); ++i) {
    if (!(*want)[i].is_tensor() || !(*got)[i].is_tensor()) return "output " + std::to_string(i) + " is no tensor";
    const Tensor& a = (*want)[i].to_tensor();
    const Tensor& b = (*got)[i].to_tensor();
    std::string where = "output " + std::to_string(i) + ": ";
    if (a.sizes() != b.sizes()) return where + "sizes differ";
    if (a.dtype() != b.dtype()) return where + "dtypes differ";
    std::vector<double> x = values(a), y = values(b);
    for (size_t k = 0; k < x.size(); ++k) {
      bool same = x[k] == y[k] || (std::isnan(x[k]) && std::isnan(y[k])) ||
                  std::fabs(x[k] - y[k]) <= 1e-5 + 1e-5 * std::fabs(x[k]);
      if (!same) return where + "element " + std::to_string(k) + ": " + std::to_string(y[k]) + " vs " + std::to_string(x[k]);
    }
  }
  return "";
}

inline std::string compare_random_runs(const Graph& before, const Graph& after, const pipeline::ConstantTable& constants = {},
                                       unsigned seed = 1) {
  std::mt19937 rng(seed);
  return compare_runs(before, after, random_inputs(before, rng), constants);
}

}  // namespace kiln::test

// A check_lines result must be empty.
#define KILN_CHECK_LINES(text, ...)                                     \
  do {                                                                  \
    std::string why_ = ::kiln::test::check_lines(text, __VA_ARGS__);    \
    if (!why_.empty()) fprintf(stderr, "%s\n", why_.c_str());          \
    QVERIFY2(why_.empty(), "the lines above were not found");           \
  } while (0)
#define KILN_VERIFY_EMPTY(expr)              \
  do {                                       \
    std::string why_ = (expr);               \
    QVERIFY2(why_.empty(), why_.c_str());    \
  } while (0)
