#pragma once
// Splits a joint graph (joint.h) into the forward graph that runs now and the
// backward graph that runs when gradients are asked for, as AOTAutograd's
// partitioners do. The forward returns its outputs followed by the tensors
// the backward needs ("saved for backward"); the backward takes those saved
// tensors followed by the tangents and returns one gradient per primal (None
// where there is none), exactly the joint graph's gradient outputs.
//
// Tests: tests/compiler/test_joint_partition.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/aot/joint.h"
#include "core/graph/graph.h"

namespace kiln::aot {

// One tensor the forward hands to the backward.
struct SavedTensor {
  std::string name;  // the joint graph's node name (also the backward's placeholder)
  std::string dtype;
  std::vector<int64_t> sizes;
  int64_t bytes = 0;
};

struct Partition {
  Graph forward;   // primals -> (forward outputs..., saved...)
  Graph backward;  // (saved..., tangents...) -> (one gradient or None per primal)
  std::vector<SavedTensor> saved;
  int64_t saved_bytes = 0;
  // Joint nodes computed in both graphs: forward values the backward
  // recomputes from saved ones instead of having them saved.
  std::vector<std::string> recomputed;
  size_t num_forward_outputs = 0;
};

// Saves every forward value the backward reads (PyTorch's default_partition).
// Backward-only work on forward values (the mask of a relu's backward) runs
// in the backward, from saved inputs.
Partition default_partition(const JointGraph& joint);

// Chooses what to save by a minimum cut over the forward values, as
// PyTorch's min_cut_rematerialization_partition does: cheap pointwise and
// view ops may be recomputed in the backward, other ops (matmul,
// convolution, reductions, normalizations, random ops) must be saved when
// the backward needs them, and the cut minimises the bytes saved. Unlike
// PyTorch, the weights are plain tensor sizes (no distance-to-backward or
// fusion heuristics), so ties are broken towards saving values nearer the
// inputs.
Partition min_cut_partition(const JointGraph& joint);

// Whether `op` ("aten::mul.Tensor") is cheap enough to recompute in the backward.
bool is_recomputable(const std::string& op);

// One line per saved tensor, "le: bool[10, 10] (100 bytes)", then the total
// and the recomputed nodes: what a stage view shows under "saved".
std::string describe_saved(const Partition& p);

}  // namespace kiln::aot
