#pragma once
// How the code generator lays out one fused group's loops (no LLVM here).
//
// The group runs an outer loop over `outer_numel` points; at each point every
// kernel runs its part, in program order: its leading dimensions are decoded
// from the outer index, its remaining (inner) dimensions and its reduction
// dimensions are loops inside. The decoding is substituted into the kernel's
// indices and simplified with the loop ranges, so a contiguous access over
// decoded dimensions folds back into the outer index itself and the
// innermost loop stays a unit-stride loop the vectorizer takes.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/loopir/loop_ir.h"
#include "compiler/loopir/simplify_index.h"
#include "compiler/sched/schedule.h"

namespace kiln::codegen::cpu {

// The variable number the outer index has in planned expressions.
inline constexpr int64_t kOuterVar = 1 << 20;

struct KernelLoops {
  const loopir::Kernel* kernel = nullptr;
  // Inner loops: variables x<first_inner> .. over inner_ranges, then the
  // reduction variables over kernel->reduction_ranges (numbers unchanged).
  int64_t first_inner = 0;
  std::vector<int64_t> inner_ranges;
  loopir::ExprRef body;         // loads re-indexed over kOuterVar and the inner variables
  loopir::IndexRef store_index;
  loopir::IndexRanges ranges;   // of kOuterVar and every inner variable

  // Reductions only: values of the body also stored at each reduction step,
  // for a later kernel to load (reuse_row_values.h).
  struct SideStore {
    std::string buffer;
    loopir::IndexRef index;
    loopir::ExprRef value;  // a node of `body`
  };
  std::vector<SideStore> side_stores;
};

struct GroupLoops {
  bool is_extern = false;  // a library call the runtime makes: no loops, no function
  int64_t outer_numel = 1;
  int64_t work_per_outer = 1;  // elements the kernels touch per outer point
  std::vector<KernelLoops> kernels;
  std::vector<std::string> notes;  // what the plan changed and why, for the stage text

  // Whether the group compiles to a function (an empty loop nest needs none).
  bool has_function() const { return !is_extern && outer_numel > 0; }
};

struct PlanOptions {
  // Pointwise groups get one outer point per element even when their kernels
  // share a row shape: what a GPU wants (a thread per element), where a CPU
  // prefers a unit-stride inner loop per row.
  bool flat_pointwise = false;
};

// The loops of a group of Pointwise/Reduction kernels; an extern group's
// plan only says so.
GroupLoops plan_group(const loopir::Program& p, const sched::FusedGroup& g, const PlanOptions& options = {});

}  // namespace kiln::codegen::cpu
