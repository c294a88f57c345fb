#pragma once
// Helpers shared by the scheduler's files (not part of its interface).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/loopir/loop_ir.h"
#include "compiler/loopir/simplify_index.h"
#include "compiler/sched/schedule.h"

namespace kiln::sched::detail {

int64_t numel(const std::vector<int64_t>& sizes);
std::string sizes_string(const std::vector<int64_t>& sizes);  // "[4, 5]"

// The ranges of every loop variable of a kernel, reduction variables included.
loopir::IndexRanges kernel_index_ranges(const loopir::Kernel& k);

// sum x<first+i> * row_major_stride(sizes)[i]
loopir::IndexRef linear_index(const std::vector<int64_t>& sizes, int64_t first_var = 0);

// The store writes its ranges row-major from 0, so flat element f of the
// buffer is the point whose row-major rank is f: what inlining and the outer
// split of a fused group rely on.
bool store_is_contiguous(const loopir::Kernel& k);
// The row-major index of a kernel's own point, simplified: linear_index(k.ranges).
loopir::IndexRef own_point_index(const loopir::Kernel& k);

struct LoadSite {
  std::string buffer;
  loopir::IndexRef index;
};
std::vector<LoadSite> collect_loads(const loopir::ExprRef& body);  // none for a null body (an extern)
bool reads(const loopir::Kernel& k, const std::string& buffer);     // an extern's inputs count

// The buffers a kernel reads (its loads', or an extern's inputs) and writes
// (its output, or every output of an extern).
std::vector<std::string> read_buffers(const loopir::Kernel& k);
std::vector<std::string> written_buffers(const loopir::Kernel& k);

// Per buffer, the kernels (by index) that read it: what inlining and extern
// epilogue folding keep up to date as they move loads, instead of asking
// every later kernel.
using ReadersIndex = std::unordered_map<std::string, std::set<size_t>>;
ReadersIndex index_readers(const loopir::Program& p);

// Folds a pointwise consumer into an mm / bmm extern kernel where BLAS can
// compute it (beta*C, alpha) (extern_epilogue.cpp). Runs before inlining.
void fuse_extern_epilogues(loopir::Program& p, std::vector<FusionDecision>& decisions);

// softmax(scale * q @ k^T [+ mask]) @ v as one Attention extern kernel, every
// match and near miss recorded (attention.cpp). Runs first.
void fuse_attention(loopir::Program& p, std::vector<FusionDecision>& decisions,
                    const std::function<const Tensor*(const std::string&)>& constant_value);

// attention_mask.cpp: when the kernels computing `buffer` (a mask read at its
// own [..., m, n]; folded constants among its inputs through `constant_value`) make it mask exactly the elements n > m + offset, the
// offset (>= 0); `masks(v)` says whether an element of value v masks (nullopt:
// a value that neither masks nor leaves the score as it is).
std::optional<int64_t> causal_offset_from_kernels(const loopir::Program& p, const std::map<std::string, size_t>& writer,
                                                  const std::function<const Tensor*(const std::string&)>& constant_value,
                                                  const std::string& buffer,
                                                  const std::function<std::optional<bool>(double)>& masks);

// Step 2: groups the kernels that share a loop nest, recording every decision;
// returns the groups in a valid execution order (fuser.cpp).
std::vector<std::vector<size_t>> fuse_groups(const loopir::Program& p, std::vector<FusionDecision>& decisions);

// Fills s.allocations from s.program and s.groups (buffer_plan.cpp).
void plan_buffers(ScheduledProgram& s);

// Marks the GEMMs whose next group is an epilogue cuBLASLt computes
// (GemmLtEpilogue), recording each decision (lt_epilogue.cpp). Runs last: it
// needs the groups' order and the buffer plan.
void plan_lt_epilogues(ScheduledProgram& s);

}  // namespace kiln::sched::detail
