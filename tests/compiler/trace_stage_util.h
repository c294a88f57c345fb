#pragma once
// Running the stage graphs of a real PyTorch dump through the ATen
// interpreter: which stages run, the dump made runnable on the CPU, a graph
// that returns every value (to check each node's size and dtype), where a
// failed run stopped, and deterministic inputs. Shared by the trace tests.
#include <QtTest/QtTest>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "test_support.h"

#include "compiler/passes/graph_editor.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "core/graph/graph.h"
#include "core/ops/registry.h"

namespace kiln::test {

inline bool is_run_stage(std::string_view base) {
  return base == "aot_forward_graph" || base == "aot_backward_graph" || base == "aot_joint_graph" ||
         base == "inductor_post_grad_graph";
}

using pipeline::make_runnable_on_cpu;  // as the numerics ladder prepares dumps

// The graph returning every tensor-valued call node, so each can be checked.
inline Graph returning_every_value(const Graph& g, std::vector<NodeId>& returned) {
  Graph w = g;
  std::vector<Arg> outs;
  for (NodeId i = 0; i < NodeId(w.size()); ++i)
    if (w[i].op == OpKind::CallFunction && w[i].meta.val.is_tensor()) {
      outs.push_back(Arg::node(i));
      returned.push_back(i);
    }
  for (Node& n : w.nodes)
    if (n.op == OpKind::Output) {
      n.args = {Arg::tuple(outs)};
      n.meta.output_descs.clear();
    }
  return w;
}

// How far a failed run got: the call nodes before the one the error names.
inline size_t calls_before_failure(const Graph& g, const std::string& message) {
  size_t end = message.find(" (");
  NodeId failed = message.starts_with("node ") && end != std::string::npos ? g.find(message.substr(5, end - 5)) : kNoNode;
  size_t n = 0;
  for (NodeId i = 0; i < NodeId(g.size()) && i != failed; ++i) n += g[i].op == OpKind::CallFunction;
  return n;
}

inline size_t call_count(const Graph& g) { return count_nodes(g, OpKind::CallFunction); }

// Deterministic data with the placeholder's sizes, dtype and strides: floats
// in [-1, 1), integers in {0, 1, 2} (valid max-pool indices and counters),
// booleans false. Values follow the logical (row-major) order, so two graphs
// that take the same tensor in different layouts (Inductor's post-grad graphs
// use channels-last) get the same values.
inline Tensor input_for(const Node& p, uint64_t& seed) {
  std::optional<Tensor> meta = pipeline::meta_tensor_of(p.meta.val);
  if (!meta) qFatal("placeholder %s has no concrete tensor meta", p.name.c_str());
  std::vector<double> v(static_cast<size_t>(meta->numel()));
  for (double& x : v) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    double u = double(seed >> 11) / double(1ull << 53);
    x = is_floating(meta->dtype()) ? 2 * u - 1 : meta->dtype() == DType::Bool ? 0.0 : double(int(u * 3));
  }
  Tensor out = Tensor::empty_strided(meta->sizes(), meta->strides(), meta->dtype());
  out.copy_(Tensor::from_vector(v, meta->sizes()).to(meta->dtype()));
  return out;
}

inline QString report(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += "\n  " + l;
  return QString::fromStdString(s);
}

}  // namespace kiln::test
