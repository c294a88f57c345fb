#pragma once
// Shared by the minifier tests: graphs in print_readable text with seeded
// random inputs, and the reference minifier launchers read without the repro
// reader (so these tests depend on the core only).
#include <QtTest/QtTest>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "core/graph/parser.h"
#include "core/trace/reader.h"
#include "minifier/candidate.h"
#include "minifier/minify.h"
#include "test_support.h"

namespace kiln::test {

inline Tensor seeded_tensor(const Shape& sizes, DType dtype, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> v(size_t(shape_numel(sizes)));
  for (double& x : v) x = normal(rng);
  return minify::from_doubles(v, sizes, dtype);
}

// A candidate from GraphModule text; each placeholder's input is random with
// the placeholder's annotated dtype and sizes.
inline minify::Candidate candidate_of(const std::string& text, uint32_t seed = 1) {
  Expected<Graph> g = parse_graph_module(text, "<test>");
  if (!g) qFatal("parse: %s", g.status().to_string().c_str());
  std::mt19937 rng(seed);
  minify::Candidate c{std::move(*g), {}};
  for (const Node& n : c.graph.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    if (!n.meta.val.is_tensor()) qFatal("placeholder %s has no annotation", n.name.c_str());
    Shape sizes;
    for (const SymInt& s : n.meta.val.tensor.sizes) sizes.push_back(s.value);
    c.inputs.push_back(seeded_tensor(sizes, *dtype_from_name(n.meta.val.tensor.dtype), rng));
  }
  if (Status s = minify::annotate(c); !s) qFatal("annotate: %s", s.message().c_str());
  return c;
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) qFatal("cannot read %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The Repro graph of a reference minifier_launcher.py / repro.py with seeded
// random inputs of load_args' sizes (the launchers' stored tensors are not
// in the reference folder).
inline minify::Candidate launcher_candidate(const std::string& path, uint32_t seed = 1) {
  std::string text = read_text(path);
  Expected<Graph> g = parse_graph_module(text, path);
  if (!g) qFatal("parse: %s", g.status().to_string().c_str());
  std::vector<trace::ReproInput> inputs = trace::parse_load_args(text, path);
  std::mt19937 rng(seed);
  minify::Candidate c{std::move(*g), {}};
  for (const trace::ReproInput& in : inputs) {
    Shape sizes;
    for (const std::string& s : in.shape) sizes.push_back(std::stoll(s));
    c.inputs.push_back(seeded_tensor(sizes, *dtype_from_name(in.dtype), rng));
  }
  if (Status s = minify::annotate(c); !s) qFatal("annotate: %s", s.message().c_str());
  return c;
}

// The targets of the call nodes, in order: "aten::relu.default".
inline std::vector<std::string> op_targets(const Graph& g) {
  std::vector<std::string> out;
  for (const Node& n : g.nodes)
    if (n.op == OpKind::CallFunction) out.push_back(n.target);
  return out;
}

// Options minifying under each of KILN_INJECT_BUG's relu bugs with the check
// that sees it (accuracy, compile-error, crash), two jobs, as the tests run them.
inline std::vector<std::pair<const char*, minify::MinifyOptions>> relu_bug_options() {
  std::vector<std::pair<const char*, minify::MinifyOptions>> out;
  for (auto [check, bug] : {std::pair{minify::CheckKind::Accuracy, "relu:accuracy"},
                            {minify::CheckKind::CompileError, "relu:compile-error"}, {minify::CheckKind::Crash, "relu:crash"}}) {
    minify::MinifyOptions o;
    o.predicate.kind = check;
    o.predicate.inject_bug = bug;
    o.jobs = 2;
    out.emplace_back(bug, o);
  }
  return out;
}

}  // namespace kiln::test
