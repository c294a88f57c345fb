#pragma once
// The joint graph of AOTAutograd: one ATen graph that takes the primals and
// one tangent per differentiable forward output, computes the forward, then
// the backward (each forward node's derivative formula, walked in reverse),
// and returns the forward outputs followed by one gradient per primal. The
// partitioners (partition.h) split it into the forward and backward graphs
// that actually run.
//
// Tests: tests/compiler/test_joint_partition.cpp.
#include <cstddef>
#include <vector>

#include "core/graph/graph.h"
#include "core/util/status.h"

namespace kiln::aot {

struct JointOptions {
  // Per placeholder of the forward graph: whether it requires grad. Empty:
  // every floating-point placeholder does, as for a module's parameters and
  // a loss's inputs in a training step.
  std::vector<bool> requires_grad;
};

struct JointGraph {
  // Placeholders primals_1..N, tangents_1..M; then forward nodes, then
  // backward nodes; the output is a list of the forward outputs followed by
  // one entry per primal (its gradient, or None).
  Graph graph;
  size_t num_primals = 0;
  size_t num_tangents = 0;
  size_t num_forward_outputs = 0;
  std::vector<bool> requires_grad;        // per primal
  std::vector<size_t> tangent_of_output;  // per tangent: the forward output it stands for
  // Nodes [first_backward_node, end) were made by back-propagation (the
  // output node aside); the ones before are placeholders and the forward.
  NodeId first_backward_node = 0;
};

// Builds the joint graph of `aten_fwd`, a functional ATen graph whose
// placeholders are the primals and whose output is a tuple of forward outputs.
// A forward output that is not floating point, or that no primal requiring
// grad reaches, gets no tangent. An op without a derivative formula that a
// gradient must flow through is an error naming the op and the node.
Expected<JointGraph> build_joint(const Graph& aten_fwd, const JointOptions& options = {});

}  // namespace kiln::aot
