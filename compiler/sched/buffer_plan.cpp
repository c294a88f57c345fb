// Buffer planning, the post-fusion printer and the evaluator of a scheduled program.
#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <sstream>

#include "compiler/loopir/print_ir.h"
#include "compiler/sched/sched_util.h"
#include "core/util/status.h"

namespace kiln::sched {

using namespace loopir;

namespace detail {

namespace {
int64_t byte_size(const Buffer& b) { return numel(b.sizes) * int64_t(element_size(b.dtype)); }
}  // namespace

// Storage is freed after the last group that reads it, and only a later group
// may take it: inside a fused group the kernels interleave per outer point, so
// a buffer read and one written in the same group are live together.
void plan_buffers(ScheduledProgram& s) {
  const Program& p = s.program;
  std::map<std::string, size_t> last_use;
  for (size_t g = 0; g < s.groups.size(); ++g)
    for (size_t k : s.groups[g].kernels) {
      for (const std::string& w : written_buffers(p.kernels[k])) last_use[w] = std::max(last_use[w], g);
      for (const std::string& r : read_buffers(p.kernels[k])) last_use[r] = g;
    }
  // Buffers by the group that uses them last (in name order, as they are freed).
  std::vector<std::vector<std::string>> last_used_in(s.groups.size());
  for (const auto& [name, g] : last_use) last_used_in[g].push_back(name);
  struct Free {
    std::string storage;
    int64_t bytes;
    size_t freed_after;
  };
  // Freed storage by dtype and size, oldest first: a new buffer takes the
  // first one freed of its kind.
  std::map<std::pair<DType, int64_t>, std::deque<Free>> pool;
  std::map<std::string, std::string> storage_of;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    std::vector<std::string> written;
    for (size_t k : s.groups[g].kernels)
      for (const std::string& w : written_buffers(p.kernels[k])) written.push_back(w);
    // An extern is a group of its own, so storage freed by an earlier group is
    // never one its inputs still use: it cannot overwrite what it reads.
    for (const std::string& name : written) {
      const Buffer& b = p.buffer(name);
      BufferAllocation a{b.name, b.name, false, ""};
      // A layout with holes or an offset would need its span, not its numel: keep those fresh.
      std::vector<int64_t> row_major(b.sizes.size(), 1);
      for (size_t d = b.sizes.size(); d-- > 1;) row_major[d - 1] = row_major[d] * b.sizes[d];
      bool plain = b.offset == 0 && b.strides == row_major;
      if (b.is_output) {
        a.reason = "fresh: graph output";
      } else if (!plain) {
        a.reason = "fresh: not a contiguous layout";
      } else {
        auto it = pool.find({b.dtype, byte_size(b)});
        if (it == pool.end() || it->second.empty()) {
          a.reason = "fresh: no freed " + std::to_string(byte_size(b)) + "-byte " + std::string(dtype_name(b.dtype)) +
                     " buffer";
        } else {
          const Free& f = it->second.front();
          a.storage = f.storage;
          a.reused = true;
          a.reason = "reuses " + f.storage + " (freed after group " + std::to_string(f.freed_after) + ", " +
                     std::to_string(f.bytes) + " bytes)";
          it->second.pop_front();
        }
      }
      storage_of[b.name] = a.storage;
      s.allocations.push_back(a);
    }
    // Free what this group read or wrote for the last time (never inputs or outputs).
    auto release = [&](const Buffer& b) { pool[{b.dtype, byte_size(b)}].push_back({storage_of[b.name], byte_size(b), g}); };
    for (const std::string& name : written) {
      const Buffer& b = p.buffer(name);
      if (!b.is_output && last_use[b.name] == g) release(b);
    }
    for (const std::string& name : last_used_in[g]) {
      if (!storage_of.count(name)) continue;  // a graph input: not planned
      const Buffer& b = p.buffer(name);
      if (b.is_output) continue;
      bool written_here = std::find(written.begin(), written.end(), name) != written.end();
      if (!written_here) release(b);
    }
  }
}

}  // namespace detail

using namespace detail;

std::string print_scheduled(const ScheduledProgram& s) {
  std::ostringstream os;
  const Program& p = s.program;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const FusedGroup& grp = s.groups[g];
    os << "group" << g << " " << grp.name << ": ";
    const Kernel& first = p.kernels[grp.kernels[0]];
    if (first.kind == KernelKind::Extern) {
      // Inductor: ExternKernelSchedulerNode around an ExternKernelOut or a FallbackKernel.
      os << "ExternKernelSchedulerNode("
         << (first.call->kind == ExternKind::Fallback ? "FallbackKernel" : "ExternKernelOut") << ")\n";
    } else {
      os << (grp.kernels.size() > 1 ? "FusedSchedulerNode(" : "SchedulerNode(");
      for (size_t i = 0; i < grp.kernels.size(); ++i)
        os << (i ? ", " : "")
           << (p.kernels[grp.kernels[i]].kind == KernelKind::Reduction ? "Reduction" : "Pointwise");
      os << ")\n";
    }
    os << "group" << g << ".outer_numel = " << grp.outer_numel << "\n";
    os << "group" << g << ".snodes = [" ;
    for (size_t i = 0; i < grp.kernels.size(); ++i) os << (i ? ", " : "") << p.kernels[grp.kernels[i]].output;
    os << "]\n";
    for (size_t k : grp.kernels) {
      std::string text = print_kernel(p, p.kernels[k]);
      std::istringstream lines(text);
      for (std::string line; std::getline(lines, line);) os << "    " << line << "\n";
    }
    os << "\n";
  }
  os << "decisions:\n";
  for (const FusionDecision& d : s.decisions) os << "    " << (d.accepted ? "+ " : "- ") << d.reason << "\n";
  os << "buffer plan:\n";
  for (const BufferAllocation& a : s.allocations) os << "    " << a.buffer << ": " << a.reason << "\n";
  return os.str();
}

namespace {

// The part of kernel k at one outer point: its outer dimensions shrink to 1
// and their variables x_i become x_i + c_i (x_i is then always 0), so the
// variable numbering and everything else stay as they are.
Kernel at_outer_point(const Kernel& k, int64_t outer_numel, int64_t point) {
  size_t prefix = k.kind == KernelKind::Reduction ? k.ranges.size() : 0;
  if (k.kind == KernelKind::Pointwise) {
    int64_t prod = 1;
    while (prod != outer_numel && prefix < k.ranges.size()) prod *= k.ranges[prefix++];
    KILN_CHECK(prod == outer_numel, "scheduler: ", k.output, " has no outer prefix of ", outer_numel, " points");
  }
  Kernel part = k;
  std::map<int64_t, IndexRef> shift;
  for (size_t i = prefix; i-- > 0;) {
    shift[int64_t(i)] = index_var(int64_t(i)) + floor_mod(point, k.ranges[i]);
    point = floor_div(point, k.ranges[i]);
    part.ranges[i] = 1;
  }
  struct Shifter : ExprMutator {
    const std::map<int64_t, IndexRef>* shift = nullptr;
    ExprRef mutate_node(const ExprRef& rebuilt, const ExprRef&) override {
      if (rebuilt->op != ExprOp::Load) return rebuilt;
      return expr_load(rebuilt->buffer, substitute_vars(rebuilt->index, *shift), rebuilt->dtype);
    }
  } shifter;
  shifter.shift = &shift;
  part.body = shifter.mutate(k.body);
  part.store_index = substitute_vars(k.store_index, shift);
  return part;
}

}  // namespace

std::vector<Tensor> run_scheduled(const ScheduledProgram& s, const std::vector<Tensor>& inputs, RunOptions options) {
  Program p = s.program;
  if (options.interleave) {
    std::vector<Kernel> parts;
    for (const FusedGroup& g : s.groups) {
      if (g.kernels.size() == 1) {
        parts.push_back(p.kernels[g.kernels[0]]);
        continue;
      }
      for (int64_t point = 0; point < g.outer_numel; ++point)
        for (size_t k : g.kernels) parts.push_back(at_outer_point(p.kernels[k], g.outer_numel, point));
    }
    p.kernels = std::move(parts);
  }
  std::map<std::string, std::string> storage;
  if (options.apply_buffer_plan)
    for (const BufferAllocation& a : s.allocations)
      if (a.reused) storage[a.buffer] = a.storage;
  // Buffers sharing a storage use one memory in the evaluator: stores and
  // loads of both hit it, so a buffer overwritten while still read shows.
  return loopir::detail::run_loops_sharing(p, inputs, storage);
}

size_t count_groups_reading(const ScheduledProgram& s, const std::string& buffer) {
  size_t n = 0;
  for (const FusedGroup& g : s.groups) {
    bool reads_it = false;
    for (size_t k : g.kernels) reads_it |= reads(s.program.kernels[k], buffer);
    n += reads_it;
  }
  return n;
}

}  // namespace kiln::sched
