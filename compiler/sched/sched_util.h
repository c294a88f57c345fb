#pragma once
// Helpers shared by the scheduler's files (not part of its interface).
#include <cstdint>
#include <string>
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

struct LoadSite {
  std::string buffer;
  loopir::IndexRef index;
};
std::vector<LoadSite> collect_loads(const loopir::ExprRef& body);
bool reads(const loopir::Kernel& k, const std::string& buffer);

// Fills s.allocations from s.program and s.groups (buffer_plan.cpp).
void plan_buffers(ScheduledProgram& s);

}  // namespace kiln::sched::detail
