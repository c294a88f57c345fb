#pragma once
// The scheduler (Inductor's scheduler.py for the pointwise and reduction
// subset): takes the one-kernel-per-node Program of lower_to_loops and decides
// what shares a pass over memory.
//
//  1. Inlining: a pointwise producer is substituted into the bodies of its
//     consumers (its loads become the producer's body with the loop variables
//     decoded from the load index), so its buffer disappears.
//  2. Fusion: the remaining kernels form groups that run as one loop nest over
//     common outer ranges: pointwise epilogues of a reduction, a reduction that
//     reads another's per-row result (softmax), sibling reductions over the
//     same input (var_mean), vertical pointwise chains that stayed materialized.
//  0. Extern epilogues: `mm + bias`, `mm * k` fold into the GEMM call (addmm).
//     Extern kernels (extern_call.h) are each a group of their own.
//  3. Buffer planning: a materialized intermediate reuses the storage of one
//     freed (after its last reading group) with the same dtype and size.
//  4. cuBLASLt epilogues: a GEMM whose next group computes bias / relu /
//     gelu tanh / an addend of its product is marked (GemmLtEpilogue); the
//     CUDA backend may run that kernel inside the GEMM call.
//
// Every decision, taken or refused, is recorded with its reason for the GUI.
// Rules and examples: docs/sched.md; tests: tests/compiler/test_sched.cpp.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/loopir/loop_ir.h"

namespace kiln::sched {

// Epilogue: a pointwise consumer folded into an mm/bmm extern kernel (beta*C, alpha).
// Attention: bmm, softmax, bmm made one fused-attention extern kernel (attention.cpp).
enum class DecisionKind { Inline, Fuse, Epilogue, Attention };

struct FusionDecision {
  DecisionKind kind = DecisionKind::Fuse;
  bool accepted = false;
  std::string producer;  // Inline: the inlined buffer; Fuse: a buffer of the group fused into; Epilogue: the GEMM's
  std::string consumer;  // Inline: consumers, comma separated; Fuse: a buffer of the group joining; Epilogue: the folded
  std::string reason;    // the whole sentence: "inlined buf1 into buf2: pointwise, single consumer"
};

// Kernels that run as one loop nest: an outer loop over `outer_numel` points
// (the reductions' output ranges, or the pointwise numel), and inside it each
// kernel's remaining loops, in program order.
struct FusedGroup {
  std::string name;                  // "op0_op2", after its kernels' buffers
  std::vector<size_t> kernels;       // indices into ScheduledProgram::program.kernels
  int64_t outer_numel = 1;
  bool has_reduction = false;
};

// Where a materialized buffer lives. Graph inputs are not planned; outputs
// and intermediates without a reusable predecessor get their own storage.
struct BufferAllocation {
  std::string buffer;
  std::string storage;  // the buffer whose allocation it uses (itself when fresh)
  bool reused = false;
  std::string reason;   // "reuses buf1 (freed after group 1, 80 bytes)" / "fresh: graph output"
};

struct ScheduledProgram {
  // Inlined kernels and their buffers are gone, bodies rewritten, and the
  // kernels reordered group by group (a valid execution order).
  loopir::Program program;
  std::vector<FusedGroup> groups;
  std::vector<FusionDecision> decisions;
  std::vector<BufferAllocation> allocations;  // computed buffers of `program`, in kernel order
};

// What only some backends want. fuse_attention: softmax(scale * q @ k^T [+ mask]) @ v
// becomes one extern kernel (the CUDA backend has a flash kernel for it; the
// CPU backend's BLAS and loops are as fast as its float64 reference is not).
// constant_value: a constant input buffer's value (a causal mask is recognised by it), or null.
struct ScheduleOptions {
  bool fuse_attention = false;
  std::function<const Tensor*(const std::string& buffer)> constant_value;
};

ScheduledProgram schedule(const loopir::Program& program);
ScheduledProgram schedule(loopir::Program&& program);  // the same, without a copy of the program
ScheduledProgram schedule(loopir::Program&& program, const ScheduleOptions& options);

// Modelled on Inductor's ir_post_fusion.txt: per group its kernels (as
// print_kernel prints them), then the decisions and the buffer plan.
std::string print_scheduled(const ScheduledProgram& s);

// Runs the scheduled program with run_loops. With `apply_buffer_plan`, buffers
// that share a storage use one memory, so a wrong plan (a buffer
// overwritten while still read) shows in the results. With `interleave`, each
// group runs as fused code would: for each outer point, every kernel's part
// at that point, in order; so a fusion that reads a value another outer point
// has not written yet shows in the results too.
struct RunOptions {
  bool apply_buffer_plan = true;
  bool interleave = true;
};
std::vector<Tensor> run_scheduled(const ScheduledProgram& s, const std::vector<Tensor>& inputs,
                                  RunOptions options = {});

// How many groups load `buffer`: the passes over it that the fused code makes.
size_t count_groups_reading(const ScheduledProgram& s, const std::string& buffer);

}  // namespace kiln::sched
