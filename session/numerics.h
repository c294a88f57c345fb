#pragma once
// Per-node numerics of one graph: every tensor a node computes, in float32 on
// each rung of the ladder the issue names, against the same graph run in
// float64 on the eager kernels:
//   eager         the graph as shown, op by op on the eager kernels (in-place
//                 ops with eager semantics);
//   aot_eager     the graph as AOTAutograd hands it on: functionalized;
//   decomp_eager  functionalized and decomposed to the core ATen set;
//   kiln          every graph pass, then the CPU code generator.
// A rung that differs from the one before it is the layer to suspect. The
// rungs run the graph with its output widened to every node, so no extra
// interpreter is needed: the ATen interpreter (compiler/pipeline/aten_interpreter.h)
// for the first three, the CPU code generator's run_with_intermediates for kiln.
// Nodes are matched across rungs by name; a node a pass replaced has no value
// on the later rungs and shows as not measured.
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/util/status.h"
#include "session/numerics_stats.h"

namespace kiln::session {

inline constexpr int kRungs = 4;
enum Rung { kEagerRung, kAotEagerRung, kDecompEagerRung, kKilnRung };
const char* rung_name(int rung);  // "eager", "aot_eager", "decomp_eager", "kiln"

struct NodeNumerics {
  NodeId node = kNoNode;
  std::string name, target;
  std::string dtype;              // the reference's ("float64" for a float output, "bool", "int64")
  std::vector<int64_t> sizes;     // the reference's
  // Per rung, max abs and relative error (the largest element error,
  // numerics_stats.h; for bool and integer outputs the share of elements that
  // differ). NaN: not measured on that rung.
  double abs[kRungs], rel[kRungs];
  TensorErrors errors[kRungs];    // the element statistics behind them
  NodeNumerics() {
    for (int i = 0; i < kRungs; ++i) abs[i] = rel[i] = std::numeric_limits<double>::quiet_NaN();
  }
  int64_t elements() const;
  double worst_rel() const;   // the largest measured rel, NaN when none
  bool over(int rung) const;  // some element of that rung over the tolerance
  int worst_rung() const;     // the rung with the most elements over (ties: the lower), else the largest rel; -1 when none measured
};

struct NumericsResult {
  std::vector<NodeNumerics> rows;  // tensor-valued call nodes, graph order
  std::vector<std::string> notes;  // rungs that could not run and why
  int first_divergent = -1;        // row index of the first node over the tolerance
  int first_divergent_rung = -1;   // the lowest rung over the tolerance at that node
  double tolerance = 1e-4;
};

// Inputs are made from the placeholders' meta (normal-ish floats from a fixed
// seed, small ints); a graph with symbolic sizes is an error saying so.
Expected<NumericsResult> measure_numerics(const Graph& g, double tolerance = 1e-4,
                                          const std::atomic<bool>* cancel = nullptr);

}  // namespace kiln::session
