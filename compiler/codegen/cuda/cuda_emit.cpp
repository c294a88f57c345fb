#include "compiler/codegen/cuda/cuda_emit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "compiler/codegen/cpu/reuse_row_values.h"
#include "compiler/codegen/cuda/cuda_gemm.h"
#include "compiler/codegen/cuda/cuda_prelude.h"
#include "compiler/codegen/cuda/cuda_split_reduce.h"
#include "compiler/sched/sched_util.h"
#include "core/util/status.h"

namespace kiln::codegen::cuda {

using namespace loopir;
using cpu::GroupLoops;
using cpu::KernelLoops;
using cpu::kOuterVar;

namespace {

bool is_unsigned(DType d) { return d == DType::Bool || d == DType::UInt8; }

// The C type a value is computed in: float16/bfloat16 in float, rounded after each operation.
std::string ctype(DType d) {
  switch (d) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "unsigned char";
    case DType::Int8: return "signed char";
    case DType::Int16: return "short";
    case DType::Int32: return "int";
    case DType::Int64: return "i64";
    case DType::Float64: return "double";
    default: return "float";
  }
}

std::string mtype(DType d) {
  switch (d) {
    case DType::Bool: return "unsigned char";
    case DType::Float16: case DType::BFloat16: return "unsigned short";
    default: return ctype(d);
  }
}

std::string round(const std::string& v, DType d) {
  if (d == DType::Float16) return "kiln_round_h(" + v + ")";
  if (d == DType::BFloat16) return "kiln_round_bf(" + v + ")";
  return v;
}

std::string cast(const std::string& v, DType from, DType to) {
  if (from == to) return v;
  if (to == DType::Bool) return "(" + v + " != 0)";
  if (is_floating(to)) return round("(" + ctype(to) + ")(" + v + ")", to);
  // Float to int saturates with NaN as 0 (PTX's cvt), then wraps to the width, as the CPU backend.
  if (is_floating(from)) return "(" + ctype(to) + ")(i64)(" + v + ")";
  return "(" + ctype(to) + ")(" + v + ")";
}

std::string float_literal(double v, DType d) {
  const bool dbl = d == DType::Float64;
  if (std::isnan(v)) return dbl ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) {
    std::string inf = dbl ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)";
    return v < 0 ? "(-" + inf + ")" : inf;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);  // exact: hex floats are C++17
  return round(dbl ? std::string("(") + buf + ")" : std::string("(float)(") + buf + ")", d);
}

std::string constant(double v, DType d) {
  if (is_floating(d)) return float_literal(v, d);
  if (d == DType::Bool) return v != 0 ? "true" : "false";
  return "(" + ctype(d) + ")(" + std::to_string(int64_t(v)) + "LL)";
}

// The identity of a reduction over `d` (for max, the lowest value).
std::string lowest(DType d, bool for_max) {
  if (is_floating(d)) return float_literal(for_max ? -INFINITY : INFINITY, d == DType::Float64 ? d : DType::Float32);
  switch (d) {
    case DType::Bool: return for_max ? "0" : "1";
    case DType::UInt8: return for_max ? "0" : "255";
    case DType::Int8: return for_max ? "(-128)" : "127";
    case DType::Int16: return for_max ? "(-32768)" : "32767";
    case DType::Int32: return for_max ? "(-2147483647 - 1)" : "2147483647";
    default: return for_max ? "(-9223372036854775807LL - 1)" : "9223372036854775807LL";
  }
}

// A buffer's name in the generated source. Graph inputs keep the program's
// names (x, w, r, ...), which may be a local of the generated code (the row
// index r, the output position o, the thread's w), a temporary (t6, x0), a
// keyword or a CUDA builtin: those get a prefix.
std::string identifier(const std::string& s) {
  static const std::set<std::string> taken = {
      "r", "o", "j", "q", "i", "k", "kk", "n", "nv", "v", "w", "it", "rv", "base", "acc", "o2", "c2", "sp", "t", "tid",
      "lane", "warp", "bias_stride", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "half", "ix", "i64",
      "int", "float", "double", "char", "short", "long", "bool", "auto", "const", "void", "signed", "unsigned", "if",
      "else", "for", "while", "do", "return", "break", "continue", "switch", "case", "default", "struct", "class",
      "union", "enum", "static", "extern", "new", "delete", "this", "true", "false", "sizeof", "template", "typename",
      "namespace", "using", "volatile", "register", "goto", "inline", "operator", "private", "public", "protected",
      "virtual", "friend", "try", "catch", "throw", "and", "or", "not", "xor", "asm", "typedef", "restrict"};
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  auto temporary = [&](char first) {
    return out.size() > 1 && out[0] == first && out.find_first_not_of("0123456789", 1) == std::string::npos;
  };
  const bool clash = out.empty() || std::isdigit(static_cast<unsigned char>(out[0])) || taken.count(out) ||
                     temporary('t') || temporary('x') || out.starts_with("kiln_") || out.starts_with("vin_") ||
                     out.starts_with("vout_") || out.starts_with("row_") || out.starts_with("rs_") ||
                     out.starts_with("acc_");
  return clash ? "in_" + out : out;
}

// Index arithmetic narrower than 64 bits is half the instructions; it is used
// when every index the group computes, and every loop bound, stays below this.
constexpr int64_t kNarrowLimit = int64_t(1) << 30;

bool is_outer_var(const IndexRef& e) { return e->kind == IndexKind::Var && e->value == kOuterVar; }

bool uses_inner_var(const IndexRef& e) {
  if (e->kind == IndexKind::Var) return e->value != kOuterVar;
  for (const IndexRef& o : e->operands)
    if (uses_inner_var(o)) return true;
  return false;
}

bool fits_narrow(const IndexRef& e, const IndexRanges& ranges) {
  IndexRange r = index_range(e, ranges);
  if (r.lo < -kNarrowLimit || r.hi > kNarrowLimit) return false;
  for (const IndexRef& o : e->operands)
    if (!fits_narrow(o, ranges)) return false;
  return true;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

// Every buffer access of a kernel, loads and stores alike.
template <class Fn>
void for_each_access(const KernelLoops& kl, Fn&& fn) {
  for (const sched::detail::LoadSite& l : sched::detail::collect_loads(kl.body)) fn(l.buffer, l.index, false);
  for (const KernelLoops::SideStore& s : kl.side_stores) fn(s.buffer, s.index, true);
  fn(kl.kernel->output, kl.store_index, true);
}

class Emitter {
 public:
  Emitter(const Program& p, InjectedBug bug, LaunchChoice launch) : p_(p), bug_(bug), launch_(launch) {}

  CudaKernel emit_group(size_t index, const sched::FusedGroup& group, const GroupLoops& plan, std::ostringstream& os) {
    CudaKernel k;
    k.group = index;
    k.outer_numel = plan.outer_numel;
    k.per_row = group.has_reduction;
    std::set<std::string> seen;
    std::string what;
    for (const KernelLoops& kl : plan.kernels) {
      auto use = [&](const std::string& b) {
        if (seen.insert(b).second) k.buffers.push_back(b);
      };
      use(kl.kernel->output);
      for (const sched::detail::LoadSite& l : sched::detail::collect_loads(kl.body)) use(l.buffer);
      std::string origin = kl.kernel->origin.empty() ? kl.kernel->output : kl.kernel->origin;
      if (what.size() < 40) what += "_" + identifier(origin);
    }
    k.name = "kiln_g" + std::to_string(index) + what;
    int64_t row_work = 1;
    for (const KernelLoops& kl : plan.kernels) row_work = std::max(row_work, flat_total(kl));
    if (k.per_row) {
      int threads = 32;
      while (threads < 1024 && int64_t(threads) * launch_.row_elements_per_thread < row_work) threads *= 2;
      k.block_threads = threads;
    }
    narrow_ = choose_narrow(plan, row_work);
    vector_ = k.per_row ? 1 : vector_width(plan);
    row_vec_ = k.per_row ? row_vector_width(plan) : 1;
    split_ = k.per_row && launch_.split_reductions &&
             split_reduction_fits(plan, plan.outer_numel, row_work, int64_t(kSplitThreads) * kSplitIterations * row_vec_);
    if (split_) {
      // Unrolled passes over each part of the row, whatever its length.
      k.block_threads = kSplitThreads;
      row_iters_ = kSplitIterations;
      k.split_step = int64_t(kSplitThreads) * kSplitIterations * row_vec_;
      k.split_row = row_work;
    } else {
      row_iters_ = k.per_row ? register_row_iterations(plan, k.block_threads * row_vec_) : 0;
    }
    if (row_iters_ == 0) row_vec_ = 1;
    block_ = k.block_threads;
    k.elements_per_thread = vector_;

    out_ = &os;
    os << "\n// group " << index << " (" << group.name << "): ";
    os << (k.per_row ? "a block per row of " + std::to_string(row_work) + " elements, " : "a thread per element, ")
       << plan.outer_numel << (k.per_row ? " rows" : " elements") << "\n";
    if (split_)
      os << "// split: a block per part of a row, whole passes of " << k.split_step
         << " positions; the row's last block combines the parts (cuda_split_reduce.h)\n";
    for (const std::string& note : plan.notes) os << "// " << note << "\n";
    if (vector_ > 1) os << "// " << vector_ << " consecutive elements per thread, with vector loads and stores\n";
    if (row_iters_ > 0)
      os << "// each thread walks its " << row_iters_ * row_vec_ << " positions of the row in unrolled loops"
         << (row_vec_ > 1 ? ", " + std::to_string(row_vec_) + " consecutive ones at a time with vector loads" : "")
         << "; what a later kernel reloads stays in registers\n";
    os << "extern \"C\" __global__ void __launch_bounds__(" << k.block_threads
       << (split_ ? ", " + std::to_string(kSplitBlocksPerSm) : "") << ") " << k.name << "(";
    for (const std::string& b : k.buffers) os << mtype(p_.buffer(b).dtype) << "* __restrict__ " << identifier(b) << ", ";
    if (split_) os << "u64* __restrict__ kiln_split_ws, i64 kiln_parts, i64 kiln_span, ";
    os << "i64 n) {\n";
    os << "  using ix = " << (narrow_ ? "int" : "i64") << ";\n";
    if (split_) {
      os << "  __shared__ u64 kiln_scratch[64];\n  __shared__ bool kiln_last;\n";
      os << "  for (i64 w = blockIdx.x; w < n * kiln_parts; w += gridDim.x) {\n";
      os << "    const ix o = (ix)(w / kiln_parts);\n    const ix kiln_part = (ix)(w % kiln_parts);\n";
      emit_row_body(plan);
      os << "  }\n";
    } else if (k.per_row) {
      os << "  __shared__ u64 kiln_scratch[64];\n";
      os << "  for (ix o = blockIdx.x; o < n; o += gridDim.x) {\n";
      emit_row_body(plan);
      os << "  }\n";
    } else if (vector_ > 1) {
      os << "  const ix nv = (ix)(n / " << vector_ << ");\n";
      os << "  for (ix v = (ix)(blockIdx.x * blockDim.x + threadIdx.x); v < nv; v += (ix)(gridDim.x * blockDim.x)) {\n";
      os << "    const ix base = v * " << vector_ << ";\n";
      emit_vector_body(plan);
      os << "  }\n";
      os << "  // the last n % " << vector_ << " elements, one per thread\n";
      os << "  for (ix o = nv * " << vector_
         << " + (ix)(blockIdx.x * blockDim.x + threadIdx.x); o < n; o += (ix)(gridDim.x * blockDim.x)) {\n";
      vector_ = 1;
      emit_kernels(plan, false);
      os << "  }\n";
    } else {
      os << "  for (ix o = (ix)(blockIdx.x * blockDim.x + threadIdx.x); o < n; o += (ix)(gridDim.x * blockDim.x)) {\n";
      emit_kernels(plan, false);
      os << "  }\n";
    }
    os << "}\n";
    return k;
  }

 private:
  static int64_t flat_total(const KernelLoops& kl) {
    return product(kl.inner_ranges) * product(kl.kernel->reduction_ranges);
  }

  bool choose_narrow(const GroupLoops& plan, int64_t row_work) const {
    if (plan.outer_numel > kNarrowLimit || row_work > kNarrowLimit) return false;
    bool ok = true;
    for (const KernelLoops& kl : plan.kernels)
      for_each_access(kl, [&](const std::string&, const IndexRef& i, bool) { ok = ok && fits_narrow(i, kl.ranges); });
    return ok;
  }

  // Elements per thread for a pointwise group: enough that the narrowest
  // buffer read or written at the element's own position moves 16 bytes at
  // once. 1 when no access is at that position, or when a buffer the group
  // both writes and reads is also touched elsewhere (its values would have
  // to go through memory between the kernels).
  int vector_width(const GroupLoops& plan) const {
    std::map<std::string, bool> written, elsewhere;
    size_t narrowest = 0;
    for (const KernelLoops& kl : plan.kernels) {
      if (!kl.inner_ranges.empty() || !kl.kernel->reduction_ranges.empty()) return 1;
      for_each_access(kl, [&](const std::string& b, const IndexRef& i, bool store) {
        if (store) written[b] = true;
        if (!is_outer_var(i)) {
          elsewhere[b] = true;
          return;
        }
        size_t size = element_size(p_.buffer(b).dtype);
        narrowest = narrowest == 0 ? size : std::min(narrowest, size);
      });
    }
    for (const auto& [b, w] : written)
      if (elsewhere.count(b)) return 1;
    if (narrowest == 0) return 1;
    return int(std::clamp<size_t>(16 / narrowest, 1, 8));
  }

  // Row positions a thread takes at once, so that a buffer read or written
  // along the row moves 16 bytes per access: every looping kernel walks one
  // dimension (its position is the loop variable itself), and the row length
  // is a multiple of the width. 1 when a kernel's row has several dimensions.
  int row_vector_width(const GroupLoops& plan) const {
    size_t narrowest = 0;
    int64_t total = 0;
    for (const KernelLoops& kl : plan.kernels) {
      const std::vector<int64_t>& r = kl.kernel->kind == KernelKind::Reduction ? kl.kernel->reduction_ranges : kl.inner_ranges;
      if (r.empty()) continue;
      if (r.size() != 1) return 1;
      total = r[0];
      for_each_access(kl, [&](const std::string& b, const IndexRef& i, bool) {
        if (!uses_inner_var(i)) return;
        size_t size = element_size(p_.buffer(b).dtype);
        narrowest = narrowest == 0 ? size : std::min(narrowest, size);
      });
    }
    if (narrowest == 0) return 1;
    int v = int(std::clamp<size_t>(16 / narrowest, 1, 8));
    while (v > 1 && total % v != 0) v /= 2;
    return v;
  }

  // Iterations per thread when the whole row fits in registers: every kernel
  // of the group walks the same number of row positions, and a thread's
  // share is small. The loops are then unrolled with a constant trip count,
  // so each thread has all its loads in flight at once (a loop bounded by
  // blockDim.x issues one at a time). 0: the row goes through memory.
  int register_row_iterations(const GroupLoops& plan, int threads) const {
    int64_t total = -1;
    int looping = 0;
    for (const KernelLoops& kl : plan.kernels) {
      // A kernel of one point per row (thread 0 computes it) takes no part.
      if (kl.inner_ranges.empty() && kl.kernel->reduction_ranges.empty()) continue;
      ++looping;
      int64_t t = flat_total(kl);
      if (total >= 0 && t != total) return 0;
      total = t;
    }
    if (total <= 0 || looping < 1) return 0;
    int64_t iters = (total + threads - 1) / threads;
    return iters <= 32 ? int(iters) : 0;
  }

  // In a row group, a barrier goes before a kernel only when it reads from
  // memory a buffer an earlier kernel of the row wrote, or writes to memory
  // one an earlier kernel read from there (values kept in registers need
  // none; the block reductions guard their own scratch).
  void emit_kernels(const GroupLoops& plan, bool per_row) {
    std::ostream& os = *out_;
    written_in_group_.clear();
    read_in_group_.clear();
    read_by_kernel_.clear();
    for (size_t i = 0; i < plan.kernels.size(); ++i) {
      const KernelLoops& kl = plan.kernels[i];
      ranges_ = &kl.ranges;
      const Kernel& K = *kl.kernel;
      std::ostringstream text;
      out_ = &text;
      needs_barrier_ = false;
      text << "    // " << K.output << " = " << (K.origin.empty() ? "?" : K.origin);
      if (K.kind == KernelKind::Reduction) text << ", " << reduction_type_name(K.reduction) << " over " << shape_str(K.reduction_ranges);
      text << "\n    {\n";
      if (K.kind == KernelKind::Reduction) reduction(kl, per_row);
      else pointwise(kl, per_row);
      text << "    }\n";
      out_ = &os;
      if (per_row && i > 0 && needs_barrier_) os << "    __syncthreads();\n";
      os << text.str();
      written_in_group_.insert(K.output);
      for (const KernelLoops::SideStore& st : kl.side_stores) written_in_group_.insert(st.buffer);
      read_in_group_.insert(read_by_kernel_.begin(), read_by_kernel_.end());
      read_by_kernel_.clear();
    }
    // The next row's first kernel may read what this row's threads wrote to shared storage.
    if (per_row && plan.kernels.size() > 1) os << "    __syncthreads();\n";
  }

  // Vector mode: buffers accessed at the element's own position move through
  // per-thread arrays, loaded before the kernels and stored after them.
  void emit_vector_body(const GroupLoops& plan) {
    std::ostream& os = *out_;
    std::ostringstream body;
    out_ = &body;
    vec_in_.clear(), vec_out_.clear();
    emit_kernels(plan, false);
    out_ = &os;
    for (const auto& [buffer, array] : vec_in_) {
      os << "    alignas(16) " << mtype(p_.buffer(buffer).dtype) << " " << array << "[" << vector_ << "];\n";
      os << "    kiln_vload<" << vector_ << ">(" << identifier(buffer) << " + base, " << array << ");\n";
    }
    for (const auto& [buffer, array] : vec_out_)
      os << "    alignas(16) " << mtype(p_.buffer(buffer).dtype) << " " << array << "[" << vector_ << "];\n";
    os << body.str();
    for (const auto& [buffer, array] : vec_out_)
      os << "    kiln_vstore<" << vector_ << ">(" << identifier(buffer) << " + base, " << array << ");\n";
  }

  // Register-row mode: the cache arrays are declared before the kernels that fill them.
  void emit_row_body(const GroupLoops& plan) {
    std::ostream& os = *out_;
    std::ostringstream body;
    out_ = &body;
    row_cache_.clear();
    cache_decls_.clear();
    row_dead_side_stores_ = row_iters_ > 0 ? dead_side_stores(plan) : std::set<std::string>{};
    shared_values_ = row_iters_ > 0 ? values_shared_across_kernels(plan) : std::set<std::string>{};
    row_values_.clear();
    row_group_ = true;
    emit_kernels(plan, true);
    row_group_ = false;
    out_ = &os;
    for (const std::string& d : cache_decls_) os << "    " << d << "\n";
    os << body.str();
  }

  // Values a later kernel of the row computes again at the same positions
  // (fusion inlines `exp(x - max)` into both softmax's sum and its division;
  // a half-precision row repeats its conversions): the earliest kernel keeps
  // them in registers, the later ones read them there. Only the largest such
  // expressions, and only while no kernel in between writes what they load.
  std::set<std::string> values_shared_across_kernels(const GroupLoops& plan) {
    std::map<std::string, std::set<std::string>> available;  // value key -> buffers it loads
    std::set<std::string> needed;
    for (const KernelLoops& kl : plan.kernels) {
      if (kl.inner_ranges.empty() && kl.kernel->reduction_ranges.empty()) continue;
      std::function<void(const ExprRef&)> find = [&](const ExprRef& e) {
        if (e->op == ExprOp::Load || e->op == ExprOp::Constant) return;
        if (std::string key = row_value_key(*e, kl); available.count(key)) {
          needed.insert(key);
          return;
        }
        for (const ExprRef& o : e->operands) find(o);
      };
      find(kl.body);
      std::function<std::set<std::string>(const ExprRef&)> offer = [&](const ExprRef& e) {
        std::set<std::string> loads;
        if (e->op == ExprOp::Load) loads.insert(e->buffer);
        for (const ExprRef& o : e->operands)
          for (const std::string& b : offer(o)) loads.insert(b);
        if (e->op != ExprOp::Load && e->op != ExprOp::Constant) available.emplace(row_value_key(*e, kl), loads);
        return loads;
      };
      offer(kl.body);
      std::set<std::string> written{kl.kernel->output};
      for (const KernelLoops::SideStore& st : kl.side_stores) written.insert(st.buffer);
      for (auto it = available.begin(); it != available.end();) {
        bool stale = std::any_of(it->second.begin(), it->second.end(), [&](const std::string& b) { return written.count(b); });
        it = stale ? available.erase(it) : std::next(it);
      }
    }
    return needed;
  }

  std::string row_value_key(const Expr& e, const KernelLoops& kl) {
    const bool red = kl.kernel->kind == KernelKind::Reduction;
    const IndexRanges* saved = ranges_;
    ranges_ = &kl.ranges;
    key_var_base_ = red ? int64_t(kl.kernel->ranges.size()) : kl.first_inner;
    std::string key = structural_key(e);
    key_var_base_ = -1;
    ranges_ = saved;
    for (int64_t x : red ? kl.kernel->reduction_ranges : kl.inner_ranges) {
      key += ',';
      key += std::to_string(x);
    }
    return key;
  }

  // Side stores whose buffer a later kernel of the group overwrites at the
  // same positions, and which nothing reads elsewhere: in register-row mode
  // their readers take the value from the cache, so the memory write is waste.
  std::set<std::string> dead_side_stores(const GroupLoops& plan) {
    std::set<std::string> dead;
    for (size_t i = 0; i < plan.kernels.size(); ++i)
      for (const KernelLoops::SideStore& s : plan.kernels[i].side_stores) {
        std::string key = cache_key(s.buffer, s.index, plan.kernels[i]);
        bool overwritten = false, read_elsewhere = false;
        for (size_t j = 0; j < plan.kernels.size(); ++j) {
          const KernelLoops& kl = plan.kernels[j];
          for_each_access(kl, [&](const std::string& b, const IndexRef& idx, bool store) {
            if (b != s.buffer) return;
            bool same = cache_key(b, idx, kl) == key;
            if (!same) read_elsewhere = true;
            if (store && same && j > i && &idx == &kl.store_index) overwritten = true;
          });
        }
        if (overwritten && !read_elsewhere) dead.insert(key);
      }
    return dead;
  }

  // A position of a buffer as a kernel's loop computes it: the index text,
  // with loop variables numbered from the kernel's first, and the ranges
  // those variables decompose the row position r into.
  std::string cache_key(const std::string& buffer, const IndexRef& index, const KernelLoops& kl) {
    const bool red = kl.kernel->kind == KernelKind::Reduction;
    const IndexRanges* saved = ranges_;
    ranges_ = &kl.ranges;
    key_var_base_ = red ? int64_t(kl.kernel->ranges.size()) : kl.first_inner;
    std::string key = buffer;
    key += '@';
    key += index_text(index);
    key += '@';
    key_var_base_ = -1;
    ranges_ = saved;
    for (int64_t x : red ? kl.kernel->reduction_ranges : kl.inner_ranges) {
      key += ',';
      key += std::to_string(x);
    }
    return key;
  }

  std::string lit(int64_t v) const { return std::to_string(v) + (narrow_ ? "" : "LL"); }

  // The register-row loop taking row_vec_ consecutive positions at once:
  // loads along the row are gathered before the positions' loop as vector
  // loads into the cache arrays, stores scattered after it.
  void vector_row_loop(int64_t total, int64_t var, const std::function<void()>& body) {
    std::ostream& os = *out_;
    const int64_t step = int64_t(block_) * row_vec_;
    open_split_pass(total);
    os << "      #pragma unroll\n      for (int it = 0; it < " << row_iters_ << "; ++it) {\n";
    os << "        const ix rv = " << (split_ ? "kiln_pass + " : "") << "(threadIdx.x + it * " << block_ << ") * "
       << row_vec_ << ";\n";
    os << (needs_guard(total, step) ? "        if (rv < " + lit(total) + ") {\n" : "        {\n");
    std::ostringstream inner;
    out_ = &inner;
    row_var_ = var;
    vector_loads_.clear(), vector_stores_.clear();
    in_row_loop_ = true;
    memo_.clear();
    sincos_done_.clear();
    inner << "        #pragma unroll\n        for (int j = 0; j < " << row_vec_ << "; ++j) {\n";
    inner << "        const ix r = rv + j;\n        const ix x" << var << " = r;\n";
    body();
    inner << "        }\n";
    in_row_loop_ = false;
    out_ = &os;
    // The position's own variable at the first of the consecutive positions.
    auto at_first = [&](const std::string& line) { os << "        { const ix x" << var << " = rv; " << line << " }\n"; };
    for (const auto& [array, address] : vector_loads_)
      at_first("kiln_vload<" + std::to_string(row_vec_) + ">(&" + address + ", &" + array + "[it * " +
               std::to_string(row_vec_) + "]);");
    os << inner.str();
    for (const auto& [array, address] : vector_stores_)
      at_first("kiln_vstore<" + std::to_string(row_vec_) + ">(&" + address + ", &" + array + "[it * " +
               std::to_string(row_vec_) + "]);");
    os << "        }\n      }\n";
    close_split_pass();
    row_var_ = -1;
  }

  // Whether `index` is the row position plus a part the same for the whole
  // row that is a multiple of the vector width (so a vector access at the
  // first of row_vec_ positions is aligned).
  bool along_row(const IndexRef& index) const {
    if (row_var_ < 0) return false;
    auto is_var = [&](const IndexRef& e) { return e->kind == IndexKind::Var && e->value == row_var_; };
    if (is_var(index)) return true;
    if (index->kind != IndexKind::Add) return false;
    int vars = 0;
    for (const IndexRef& t : index->operands) {
      if (is_var(t)) {
        ++vars;
        continue;
      }
      if (uses_inner_var(t)) return false;
      bool multiple = t->kind == IndexKind::Const && t->value % row_vec_ == 0;
      if (t->kind == IndexKind::Mul)
        for (const IndexRef& f : t->operands) multiple = multiple || (f->kind == IndexKind::Const && f->value % row_vec_ == 0);
      if (!multiple) return false;
    }
    return vars == 1;
  }

  // The cache array element of the current position.
  std::string slot() const { return row_vec_ > 1 ? "[it * " + std::to_string(row_vec_) + " + j]" : "[it]"; }

  // Loops over `ranges` flattened into one index: strided by the block's
  // threads in a per-row kernel, sequential in a per-element one.
  void flat_loop(const std::vector<int64_t>& ranges, int64_t first_var, bool per_row, const std::function<void()>& body) {
    int64_t total = product(ranges);
    std::ostream& os = *out_;
    in_row_loop_ = false;
    if (ranges.empty()) {
      // One point (r = 0 is its position: argmax's index): in a row kernel of a reduction, thread 0 alone (the block
      // reduction combines every thread's value); otherwise each thread
      // computes it, and store() keeps it in a register.
      const bool thread0 = per_row && current_->kernel->kind == KernelKind::Reduction;
      os << (thread0 ? "      if (threadIdx.x == 0) {\n" : "      {\n") << "        const ix r = 0;\n        (void)r;\n";
    } else if (per_row && row_iters_ > 0 && row_vec_ > 1) {
      vector_row_loop(total, first_var, body);
      return;
    } else if (per_row && row_iters_ > 0) {
      open_split_pass(total);
      os << "      #pragma unroll\n      for (int it = 0; it < " << row_iters_ << "; ++it) {\n";
      os << "        const ix r = " << (split_ ? "kiln_pass + " : "") << "threadIdx.x + it * " << block_ << ";\n";
      if (needs_guard(total, block_)) os << "        if (r < " << lit(total) << ") {\n";
      else os << "        {\n";
      in_row_loop_ = true;
    } else if (per_row) {
      os << "      for (ix r = threadIdx.x; r < " << lit(total) << "; r += blockDim.x) {\n";
    } else {
      os << "      for (ix r = 0; r < " << lit(total) << "; ++r) {\n";
    }
    int64_t stride = total;
    for (size_t d = 0; d < ranges.size(); ++d) {
      stride /= ranges[d];
      std::string v = "r";
      if (stride != 1) v = "(r / " + lit(stride) + ")";
      if (d > 0) v = "(" + v + " % " + lit(ranges[d]) + ")";
      os << "        const ix x" << first_var + int64_t(d) << " = " << v << ";\n";
    }
    memo_.clear();
    sincos_done_.clear();
    body();
    if (in_row_loop_) os << "        }\n";
    os << "      }\n";
    if (in_row_loop_) close_split_pass();
    in_row_loop_ = false;
  }

  // A split kernel's passes over its part of the row (kiln_pass: the first
  // position of the pass); nothing otherwise.
  void open_split_pass(int64_t total) {
    if (!split_) return;
    *out_ << "      const ix kiln_end = (ix)min((i64)(kiln_part + 1) * kiln_span, (i64)" << total << "LL);\n";
    *out_ << "      for (ix kiln_pass = (ix)(kiln_part * kiln_span); kiln_pass < kiln_end; kiln_pass += "
          << block_ * row_iters_ * row_vec_ << ") {\n";
  }
  void close_split_pass() {
    if (split_) *out_ << "      }\n";
  }
  // Whether the register-row loop checks its position against the row's end:
  // the last pass of a split row may be short.
  bool needs_guard(int64_t total, int64_t per_pass) const {
    const int64_t covered = int64_t(row_iters_) * per_pass;
    return split_ ? total % covered != 0 : total != covered;
  }

  void pointwise(const KernelLoops& kl, bool per_row) {
    current_ = &kl;
    if (vector_ > 1) *out_ << "      #pragma unroll\n      for (int j = 0; j < " << vector_ << "; ++j) {\n"
                           << "        const ix o = base + j;\n";
    flat_loop(kl.inner_ranges, kl.first_inner, per_row, [&] {
      std::string v = expr(kl.body);
      store(kl.kernel->output, kl.store_index, v, kl.kernel->body->dtype);
    });
    if (vector_ > 1) *out_ << "      }\n";
  }

  void reduction(const KernelLoops& kl, bool per_row) {
    current_ = &kl;
    const Kernel& K = *kl.kernel;
    KILN_CHECK(kl.inner_ranges.empty(), "cuda codegen: reduction ", K.output, " has loops outside its outer point");
    std::ostream& os = *out_;
    const DType out_dtype = p_.buffer(K.output).dtype;
    const DType body_dtype = K.body->dtype;
    // Accumulators: float sums and products in double, as the CPU backend;
    // small integers widened to int, which shuffles take (a sum wraps to the
    // width when stored, as it would have step by step).
    DType acc = out_dtype;
    if ((K.reduction == ReductionType::Sum || K.reduction == ReductionType::Prod) && is_floating(out_dtype))
      acc = DType::Float64;
    if (K.reduction == ReductionType::Argmax) acc = body_dtype;
    if (K.reduction == ReductionType::Any) acc = DType::Bool;
    std::string acc_t = ctype(acc);
    if (acc == DType::Bool || acc == DType::UInt8 || acc == DType::Int8 || acc == DType::Int16) acc_t = "int";
    if (acc == DType::Float16 || acc == DType::BFloat16) acc_t = "float";
    std::string combine;
    std::string init;
    const bool fl = is_floating(acc);
    switch (K.reduction) {
      case ReductionType::Sum: combine = acc == DType::Bool ? "KilnOr" : "KilnSum"; init = "0"; break;
      case ReductionType::Prod: combine = "KilnProd"; init = "1"; break;
      case ReductionType::Any: combine = "KilnOr"; init = "0"; break;
      case ReductionType::Max: combine = fl ? "KilnFMax" : "KilnIMax"; init = lowest(acc, true); break;
      case ReductionType::Min: combine = fl ? "KilnFMin" : "KilnIMin"; init = lowest(acc, false); break;
      case ReductionType::Argmax: init = lowest(acc, true); break;
    }
    const int64_t first_red = int64_t(K.ranges.size());
    os << "      " << acc_t << " acc = (" << acc_t << ")" << init << ";\n";
    if (K.reduction == ReductionType::Argmax) os << "      i64 acc_i = 0;\n";
    flat_loop(K.reduction_ranges, first_red, per_row, [&] {
      std::string v = expr(kl.body);
      for (const KernelLoops::SideStore& s : kl.side_stores) {
        side_store_ = true;
        store(s.buffer, s.index, expr(s.value), s.value->dtype);
        side_store_ = false;
      }
      std::string x = "(" + acc_t + ")(" + cast(v, body_dtype, acc == DType::Bool ? DType::Bool : acc) + ")";
      if (K.reduction == ReductionType::Any) x = "(int)(" + cast(v, body_dtype, DType::Bool) + ")";
      // *out_, not os: a vector row loop emits the body into its own stream.
      if (K.reduction == ReductionType::Argmax) {
        *out_ << "        if (kiln_arg_takes(" << x << ", (i64)r, acc, acc_i)) { acc = " << x << "; acc_i = r; }\n";
      } else {
        *out_ << "        acc = " << combine << "()(acc, " << x << ");\n";
      }
    });
    if (per_row) {
      if (K.reduction == ReductionType::Argmax)
        os << "      kiln_block_argmax(acc, acc_i, (" << acc_t << "*)kiln_scratch, (i64*)(kiln_scratch + 32));\n";
      else
        os << "      acc = kiln_block_reduce(acc, " << combine << "(), (" << acc_t << "*)kiln_scratch);\n";
      if (split_) os << split_combine_code(acc_t, combine, init);
    }
    // Every thread holds the combined value: store() keeps it in a register
    // for later kernels of the row and lets thread 0 write it to memory.
    os << "      {\n";
    memo_.clear();
    sincos_done_.clear();
    if (K.reduction == ReductionType::Argmax) store(K.output, kl.store_index, "acc_i", DType::Int64);
    else store(K.output, kl.store_index, cast("acc", acc == DType::Bool ? DType::Int32 : acc, out_dtype), out_dtype);
    os << "      }\n";
  }

  // ---- values: each node once per loop body, as `const T tN = ...;` ----

  std::string expr(const ExprRef& e) {
    if (auto it = memo_.find(e.get()); it != memo_.end()) return it->second;
    std::string shared_key;
    if (in_row_loop_ && !shared_values_.empty() && e->op != ExprOp::Load && e->op != ExprOp::Constant) {
      std::string key = row_value_key(*e, *current_);
      if (shared_values_.count(key)) {
        if (auto it = row_values_.find(key); it != row_values_.end()) return memo_[e.get()] = it->second + slot();
        shared_key = key;
      }
    }
    std::string v = compute(*e);
    if (is_relu(*e) && bug_ != InjectedBug::None) v = inject(v, e->dtype);
    std::string name = "t" + std::to_string(next_temp_++);
    *out_ << "        const " << ctype(e->dtype) << " " << name << " = " << v << ";\n";
    memo_[e.get()] = name;
    if (!shared_key.empty()) {
      std::string array = "rv_" + std::to_string(cache_decls_.size());
      cache_decls_.push_back(ctype(e->dtype) + " " + array + "[" + std::to_string(row_iters_ * row_vec_) + "];");
      row_values_[shared_key] = array;
      *out_ << "        " << array << slot() << " = " << name << ";\n";
    }
    return name;
  }

  std::string inject(const std::string& relu, DType d) {
    switch (bug_) {
      case InjectedBug::ReluAccuracy: return is_floating(d) ? round(relu + " + 1.0f", d) : "(" + ctype(d) + ")(" + relu + " + 1)";
      case InjectedBug::ReluCompileError:
        throw Error("KILN_INJECT_BUG=relu:compile-error: the CUDA code generator refuses relu (an injected bug)");
      case InjectedBug::ReluCrash: *out_ << "        __trap();\n"; return relu;
      case InjectedBug::None: break;
    }
    return relu;
  }

  std::string math(const char* f32, const char* f64, const std::string& x, DType as) {
    return std::string(as == DType::Float64 ? f64 : f32) + "(" + x + ")";
  }

  std::string compute(const Expr& e) {
    const DType d = e.dtype;
    if (e.op == ExprOp::Load) return load(e.buffer, e.index, d);
    if (e.op == ExprOp::Constant) return constant(e.value, d);
    std::vector<std::string> a;
    for (const ExprRef& o : e.operands) a.push_back(expr(o));
    auto operand = [&](size_t i, DType as) { return cast(a[i], e.operands[i]->dtype, as); };
    const bool fl = is_floating(d);
    // Math functions take the expression's dtype when floating, else float32 (as ATen promotes integers).
    const DType fas = fl ? (d == DType::Float64 ? d : DType::Float32) : DType::Float32;
    auto fop = [&](size_t i) { return cast(a[i], e.operands[i]->dtype, fl ? d : DType::Float32); };
    const std::string one = fas == DType::Float64 ? "1.0" : "1.0f";
    switch (e.op) {
      case ExprOp::ToDtype: return cast(a[0], e.operands[0]->dtype, d);
      case ExprOp::Neg: return fl ? round("-" + operand(0, d), d) : "(" + ctype(d) + ")(-" + operand(0, d) + ")";
      case ExprOp::Abs:
        if (fl) return math("fabsf", "fabs", operand(0, d), fas);
        if (is_unsigned(d)) return operand(0, d);
        return "(" + ctype(d) + ")(" + operand(0, d) + " < 0 ? -" + operand(0, d) + " : " + operand(0, d) + ")";
      case ExprOp::Exp: return round(math("expf", "exp", fop(0), fas), d);
      case ExprOp::Log: return round(math("logf", "log", fop(0), fas), d);
      case ExprOp::Sin: case ExprOp::Cos:
        if (std::string both = sincos(e, fop(0), fas); !both.empty()) return round(both, d);
        return round(e.op == ExprOp::Sin ? math("sinf", "sin", fop(0), fas) : math("cosf", "cos", fop(0), fas), d);
      case ExprOp::Tanh: return round(math("tanhf", "tanh", fop(0), fas), d);
      case ExprOp::Sqrt: return round(math("sqrtf", "sqrt", fop(0), fas), d);
      case ExprOp::Rsqrt: return round(one + " / " + math("sqrtf", "sqrt", fop(0), fas), d);
      case ExprOp::Sigmoid: return round(one + " / (" + one + " + " + math("expf", "exp", "-" + fop(0), fas) + ")", d);
      case ExprOp::Add: case ExprOp::Sub: case ExprOp::Mul: case ExprOp::Div:
        return arithmetic(e.op, operand(0, d), operand(1, d), d);
      case ExprOp::Maximum: case ExprOp::Minimum: {
        const bool mx = e.op == ExprOp::Maximum;
        if (d == DType::Bool) return "(" + operand(0, d) + (mx ? " || " : " && ") + operand(1, d) + ")";
        return std::string(mx ? "kiln_max" : "kiln_min") + "<" + ctype(d) + ">(" + operand(0, d) + ", " + operand(1, d) + ")";
      }
      case ExprOp::Eq: case ExprOp::Ne: case ExprOp::Lt: case ExprOp::Le: case ExprOp::Gt: case ExprOp::Ge: {
        static const std::map<ExprOp, const char*> symbol = {{ExprOp::Eq, "=="}, {ExprOp::Ne, "!="}, {ExprOp::Lt, "<"},
                                                             {ExprOp::Le, "<="}, {ExprOp::Gt, ">"}, {ExprOp::Ge, ">="}};
        DType common = e.operands[0]->dtype;
        return "(" + a[0] + " " + symbol.at(e.op) + " " + operand(1, common) + ")";
      }
      case ExprOp::Where: return "(" + operand(0, DType::Bool) + " ? " + operand(1, d) + " : " + operand(2, d) + ")";
      case ExprOp::Load: case ExprOp::Constant: break;
    }
    throw Error("cuda codegen: no rule for " + std::string(expr_op_name(e.op)) + " in " + std::string(dtype_name(d)));
  }

  // sin and cos of the same value share one argument reduction (sincosf),
  // which is most of their cost: sin+cos of float32 is compute-bound on an
  // H200 otherwise. "" when the body does not take both.
  std::string sincos(const Expr& e, const std::string& arg, DType as) {
    if (!current_ || !current_->body) return "";
    if (sincos_scan_ != current_) {
      sincos_scan_ = current_;
      sincos_both_.clear();
      std::map<std::string, int> seen;  // structural key -> 1 sin, 2 cos
      std::function<void(const ExprRef&)> walk = [&](const ExprRef& x) {
        if (x->op == ExprOp::Sin || x->op == ExprOp::Cos) seen[structural_key(*x->operands[0])] |= x->op == ExprOp::Sin ? 1 : 2;
        for (const ExprRef& o : x->operands) walk(o);
      };
      walk(current_->body);
      for (const auto& [key, bits] : seen)
        if (bits == 3) sincos_both_.insert(key);
    }
    std::string key = structural_key(*e.operands[0]);
    if (!sincos_both_.count(key)) return "";
    auto [it, fresh] = sincos_done_.emplace(key, std::string());
    if (fresh) {
      it->second = "sc" + std::to_string(next_temp_++);
      const std::string t = as == DType::Float64 ? "double" : "float";
      *out_ << "        " << t << " " << it->second << "_s, " << it->second << "_c;\n";
      *out_ << "        " << (as == DType::Float64 ? "sincos(" : "sincosf(") << arg << ", &" << it->second << "_s, &"
            << it->second << "_c);\n";
    }
    return it->second + (e.op == ExprOp::Sin ? "_s" : "_c");
  }

  // Equal for expressions computing the same value (loads by buffer and index).
  std::string structural_key(const Expr& e) {
    std::string k = std::string(expr_op_name(e.op)) + ":" + std::string(dtype_name(e.dtype));
    if (e.op == ExprOp::Load) k += ":" + e.buffer + "[" + index_text(e.index) + "]";
    if (e.op == ExprOp::Constant) k += ":" + std::to_string(e.value);
    for (const ExprRef& o : e.operands) k += "(" + structural_key(*o) + ")";
    return k;
  }

  std::string arithmetic(ExprOp op, const std::string& x, const std::string& y, DType d) {
    const char* sym = op == ExprOp::Add ? " + " : op == ExprOp::Sub ? " - " : op == ExprOp::Mul ? " * " : " / ";
    if (is_floating(d)) return round("(" + x + sym + y + ")", d);
    if (d == DType::Bool) {
      if (op == ExprOp::Add) return "(" + x + " || " + y + ")";
      if (op == ExprOp::Mul) return "(" + x + " && " + y + ")";
      throw Error("cuda codegen: " + std::string(expr_op_name(op)) + " on bool");
    }
    if (op == ExprOp::Div) return "kiln_idiv<" + ctype(d) + ">(" + x + ", " + y + ")";
    return "(" + ctype(d) + ")(" + x + sym + y + ")";
  }

  // ---- memory ----

  std::string address(const std::string& buffer, const IndexRef& index) {
    return identifier(buffer) + "[" + index_text(index) + "]";
  }

  // The memory-typed value at `index`, from a vector array or a row cache
  // when one holds it, else from memory.
  std::string raw_load(const std::string& buffer, const IndexRef& index) {
    if (vector_ > 1 && is_outer_var(index)) {
      if (auto it = vec_out_.find(buffer); it != vec_out_.end()) return it->second + "[j]";
      auto [it, fresh] = vec_in_.emplace(buffer, "vin_" + identifier(buffer));
      return it->second + "[j]";
    }
    if (row_group_ && !uses_inner_var(index)) {
      if (auto it = row_cache_.find(scalar_key(buffer, index)); it != row_cache_.end()) return it->second;
      return memory_load(buffer, index);
    }
    if (in_row_loop_) {
      std::string key = cache_key(buffer, index, *current_);
      if (auto it = row_cache_.find(key); it != row_cache_.end()) return it->second + slot();
      std::string array = declare_cache(buffer);
      row_cache_[key] = array;
      if (row_vec_ > 1 && along_row(index)) vector_loads_.emplace_back(array, memory_load(buffer, index));
      else *out_ << "        " << array << slot() << " = " << memory_load(buffer, index) << ";\n";
      return array + slot();
    }
    return memory_load(buffer, index);
  }

  std::string memory_load(const std::string& buffer, const IndexRef& index) {
    if (written_in_group_.count(buffer)) needs_barrier_ = true;
    read_by_kernel_.insert(buffer);
    return address(buffer, index);
  }

  std::string declare_cache(const std::string& buffer) {
    std::string array = "row_" + identifier(buffer) + "_" + std::to_string(cache_decls_.size());
    cache_decls_.push_back("alignas(16) " + mtype(p_.buffer(buffer).dtype) + " " + array + "[" +
                           std::to_string(row_iters_ * row_vec_) + "];");
    return array;
  }

  std::string load(const std::string& buffer, const IndexRef& index, DType want) {
    DType d = p_.buffer(buffer).dtype;
    std::string raw = raw_load(buffer, index);
    std::string v = raw;
    if (d == DType::Bool) v = "(" + raw + " != 0)";
    else if (d == DType::Float16) v = "kiln_h2f(" + raw + ")";
    else if (d == DType::BFloat16) v = "kiln_bf2f(" + raw + ")";
    return cast(v, d, want);
  }

  void store(const std::string& buffer, const IndexRef& index, const std::string& value, DType from) {
    DType d = p_.buffer(buffer).dtype;
    std::string v = cast(value, from, d);
    if (d == DType::Bool) v = "(unsigned char)(" + v + ")";
    else if (d == DType::Float16) v = "kiln_f2h(" + v + ")";
    else if (d == DType::BFloat16) v = "kiln_f2bf(" + v + ")";
    if (vector_ > 1 && is_outer_var(index)) {
      auto [it, fresh] = vec_out_.emplace(buffer, "vout_" + identifier(buffer));
      *out_ << "        " << it->second << "[j] = " << v << ";\n";
      return;
    }
    if (row_group_ && !uses_inner_var(index)) {
      // A value per row: every thread has it; thread 0 writes it.
      std::string key = scalar_key(buffer, index);
      forget_cached(buffer, key);
      auto [it, fresh] = row_cache_.emplace(key, std::string());
      if (fresh) {
        it->second = "rs_" + identifier(buffer) + "_" + std::to_string(cache_decls_.size());
        cache_decls_.push_back(mtype(d) + " " + it->second + ";");
      }
      *out_ << "        " << it->second << " = " << v << ";\n";
      *out_ << "        if (threadIdx.x == 0) " << address(buffer, index) << " = " << it->second << ";\n";
      return;
    }
    if (in_row_loop_) {
      std::string key = cache_key(buffer, index, *current_);
      forget_cached(buffer, key);
      auto [it, fresh] = row_cache_.emplace(key, std::string());
      if (fresh) it->second = declare_cache(buffer);
      *out_ << "        " << it->second << slot() << " = " << v << ";\n";
      if (!(side_store_ && row_dead_side_stores_.count(key))) {
        note_memory_store(buffer);
        if (row_vec_ > 1 && along_row(index)) {
          auto same = [&](const auto& s) { return s.first == it->second; };
          if (std::none_of(vector_stores_.begin(), vector_stores_.end(), same))
            vector_stores_.emplace_back(it->second, address(buffer, index));
        } else {
          *out_ << "        " << address(buffer, index) << " = " << it->second << slot() << ";\n";
        }
      }
      return;
    }
    forget_cached(buffer, "");
    note_memory_store(buffer);
    *out_ << "        " << address(buffer, index) << " = " << v << ";\n";
  }

  void note_memory_store(const std::string& buffer) {
    if (read_in_group_.count(buffer)) needs_barrier_ = true;
  }

  // A store elsewhere in a buffer may overwrite what the cache holds for
  // other positions of it: those entries go.
  void forget_cached(const std::string& buffer, const std::string& except) {
    const std::string prefix = buffer + "@";
    for (auto it = row_cache_.begin(); it != row_cache_.end();)
      it = it->first.rfind(prefix, 0) == 0 && it->first != except ? row_cache_.erase(it) : std::next(it);
  }

  std::string scalar_key(const std::string& buffer, const IndexRef& index) {
    return buffer + "@" + index_text(index) + "@row";
  }

  // ---- indices ----

  bool non_negative(const IndexRef& e) const { return index_range(e, *ranges_).lo >= 0; }

  std::string index_text(const IndexRef& e) {
    switch (e->kind) {
      case IndexKind::Const: return lit(e->value);
      case IndexKind::Var:
        if (e->value == kOuterVar) return "o";
        if (key_var_base_ >= 0) return "v" + std::to_string(e->value - key_var_base_);
        return "x" + std::to_string(e->value);
      case IndexKind::Sym: throw Error("cuda codegen: symbolic size " + e->name + " (compile with concrete sizes)");
      case IndexKind::Add: case IndexKind::Mul: {
        std::string s = "(" + index_text(e->operands[0]);
        for (size_t i = 1; i < e->operands.size(); ++i)
          s += (e->kind == IndexKind::Add ? " + " : " * ") + index_text(e->operands[i]);
        return s + ")";
      }
      case IndexKind::Min: return "min(" + index_text(e->operands[0]) + ", " + index_text(e->operands[1]) + ")";
      case IndexKind::Max: return "max(" + index_text(e->operands[0]) + ", " + index_text(e->operands[1]) + ")";
      case IndexKind::FloorDiv: case IndexKind::Mod: break;
    }
    const IndexRef& divisor = e->operands[1];
    std::string a = index_text(e->operands[0]), d = index_text(divisor);
    if (divisor->kind == IndexKind::Const && divisor->value > 0 && non_negative(e->operands[0]))
      return "(" + a + (e->kind == IndexKind::FloorDiv ? " / " : " % ") + d + ")";
    return std::string(e->kind == IndexKind::FloorDiv ? "kiln_floordiv(" : "kiln_mod(") + a + ", " + d + ")";
  }

  const Program& p_;
  InjectedBug bug_;
  LaunchChoice launch_;
  std::ostream* out_ = nullptr;
  bool narrow_ = false;  // 32-bit index arithmetic
  int vector_ = 1;       // elements per thread of a pointwise group
  int row_iters_ = 0;    // register-row mode: iterations per thread
  int row_vec_ = 1;      // register-row mode: consecutive positions per iteration
  bool split_ = false;   // a split reduction (cuda_split_reduce.h): a block per part of a row
  int64_t row_var_ = -1;  // vector_row_loop: the position's loop variable
  std::vector<std::pair<std::string, std::string>> vector_loads_, vector_stores_;  // cache array, address at rv
  int block_ = 256;
  bool in_row_loop_ = false;
  bool side_store_ = false;  // store() is emitting a reduction's side store
  bool row_group_ = false;   // emitting a block-per-row group
  std::set<std::string> written_in_group_;  // by the kernels emitted so far
  std::set<std::string> read_in_group_;     // from memory, by the kernels emitted so far
  std::set<std::string> read_by_kernel_;    // from memory, by the kernel being emitted
  bool needs_barrier_ = false;       // the kernel being emitted loads one of those from memory
  int64_t key_var_base_ = -1;  // cache_key: variables renamed relative to this
  const KernelLoops* current_ = nullptr;
  std::map<std::string, std::string> vec_in_, vec_out_;  // buffer -> per-thread array
  std::map<std::string, std::string> row_cache_;          // cache_key -> array
  std::vector<std::string> cache_decls_;
  std::set<std::string> row_dead_side_stores_;
  std::set<std::string> shared_values_;          // row_value_key of values later kernels reuse
  std::map<std::string, std::string> row_values_;  // row_value_key -> the register array holding it
  std::map<const Expr*, std::string> memo_;
  int next_temp_ = 0;
  const KernelLoops* sincos_scan_ = nullptr;  // the kernel sincos_both_ was found for
  std::set<std::string> sincos_both_;         // operands the body takes both sin and cos of
  std::map<std::string, std::string> sincos_done_;  // operand key -> the sincos results' names (this body)
  const IndexRanges* ranges_ = nullptr;
};

}  // namespace

std::vector<GroupLoops> plan_for_cuda(const sched::ScheduledProgram& s) {
  std::vector<GroupLoops> plans;
  cpu::PlanOptions options;
  options.flat_pointwise = true;
  for (const sched::FusedGroup& g : s.groups) {
    plans.push_back(cpu::plan_group(s.program, g, options));
    if (!plans.back().is_extern) plans.back().notes = cpu::reuse_row_values(s.program, plans.back());
  }
  return plans;
}

CudaSource emit_cuda(const sched::ScheduledProgram& s, const std::vector<GroupLoops>& plans, InjectedBug bug,
                     const LaunchChoice& launch) {
  CudaSource out;
  std::ostringstream os;
  os << "// Generated by Kiln's CUDA code generator: one kernel per fused group.\n" << kCudaPrelude;
  Emitter emitter(s.program, bug, launch);
  for (size_t g = 0; g < s.groups.size(); ++g)
    if (plans[g].has_function()) out.kernels.push_back(emitter.emit_group(g, s.groups[g], plans[g], os));
  // Extern kernels run on cuBLAS with helpers of their own in this module.
  std::set<std::string> helpers, gemm_helpers;
  // A planner either takes an extern kernel (its helper kernels join the
  // module) or says why it runs on the host, in a comment of the source.
  auto take = [&]<class Plan, class Names>(const loopir::Kernel& kernel, Expected<Plan> plan, std::vector<Plan>& into,
                                           Names names) {
    if (!plan) {
      os << "\n// " << kernel.output << " runs on the host: " << plan.status().message() << "\n";
      return;
    }
    for (const std::string* name : names(*plan))
      if (!name->empty()) helpers.insert(*name);
    into.push_back(std::move(*plan));
  };
  for (size_t k = 0; k < s.program.kernels.size(); ++k) {
    const loopir::Kernel& kernel = s.program.kernels[k];
    if (kernel.kind != loopir::KernelKind::Extern) continue;
    if (kernel.call->kind == loopir::ExternKind::Gemm && gemm_on_gpu(s.program, kernel)) {
      if (std::string c = gemm_c_kernel(s.program, kernel); !c.empty()) gemm_helpers.insert(c);
    } else if (kernel.call->kind == loopir::ExternKind::Attention) {
      take(kernel, plan_attention_on_gpu(s.program, k), out.attentions,
           [](const AttentionGpuPlan& p) { return std::vector<const std::string*>{&p.function}; });
    } else if (kernel.call->kind == loopir::ExternKind::AttentionForward) {
      take(kernel, plan_attention_forward_on_gpu(s.program, k), out.attention_forwards, [](const AttentionForwardGpuPlan& p) {
        return std::vector<const std::string*>{&p.flash.function, &p.extras_function};
      });
    } else if (kernel.call->kind == loopir::ExternKind::AttentionBackward) {
      take(kernel, plan_attention_backward_extern_on_gpu(s.program, k), out.attention_backwards,
           [](const AttentionBackwardExternPlan& p) {
             return std::vector<const std::string*>{&p.grads.delta_function, &p.grads.dkdv_function, &p.grads.dq_function};
           });
    } else if (kernel.call->kind == loopir::ExternKind::Fallback && !kernel.call->note.empty()) {
      os << "\n// " << kernel.output << " runs on the host: " << kernel.call->note << "\n";
    } else if (kernel.call->kind == loopir::ExternKind::Convolution) {
      take(kernel, plan_conv_on_gpu(s.program, k, launch.conv), out.convs, [](const ConvGpuPlan& p) {
        return std::vector<const std::string*>{&p.im2col_kernel, &p.bias_kernel, &p.scatter_kernel,
                                               &p.implicit.function, &p.implicit.reduce_function};
      });
    } else if (kernel.call->kind == loopir::ExternKind::Fallback && pool_target_on_gpu(kernel.call->target)) {
      take(kernel, plan_pool_on_gpu(s.program, k), out.pools,
           [](const PoolGpuPlan& p) { return std::vector<const std::string*>{&p.function}; });
    } else if (kernel.call->kind == loopir::ExternKind::Fallback && gather_target_on_gpu(kernel.call->target)) {
      take(kernel, plan_gather_on_gpu(s.program, k), out.gathers,
           [](const GatherGpuPlan& p) { return std::vector<const std::string*>{&p.function}; });
    } else if (kernel.call->kind == loopir::ExternKind::Fallback && conv_backward_target(kernel.call->target)) {
      take(kernel, plan_conv_backward_on_gpu(s.program, k), out.conv_backwards, [](const ConvBackwardGpuPlan& p) {
        return std::vector<const std::string*>{&p.geometry.im2col_kernel, &p.gather_kernel, &p.col2im_kernel,
                                               &p.bias_kernel};
      });
    }
  }
  std::vector<ConvGpuPlan> im2col_users = out.convs;
  for (ConvGpuPlan& g : conv_backward_geometries(out.conv_backwards)) im2col_users.push_back(std::move(g));
  // The flash kernels of both kinds share one instantiation list (one text per function).
  std::vector<AttentionGpuPlan> flash = out.attentions;
  for (const AttentionForwardGpuPlan& f : out.attention_forwards) flash.push_back(f.flash);
  std::vector<AttentionBackwardGpuPlan> flash_backward;
  for (const AttentionBackwardExternPlan& b : out.attention_backwards) flash_backward.push_back(b.grads);
  const bool tensor_cores = !flash.empty() || !flash_backward.empty() || std::any_of(out.convs.begin(), out.convs.end(), [](const ConvGpuPlan& c) {
    return !c.implicit.function.empty();
  });
  if (tensor_cores) os << kCudaTensorCoreHelpers;
  os << conv_kernels_source(im2col_users) << implicit_conv_kernels_source(out.convs)
     << conv_backward_kernels_source(out.conv_backwards) << gemm_c_kernels_source(gemm_helpers)
     << attention_kernels_source(flash) << attention_backward_kernels_source(flash_backward, !flash.empty())
     << attention_forward_extras_source(out.attention_forwards) << pool_kernels_source(out.pools)
     << gather_kernels_source(out.gathers);
  helpers.insert(gemm_helpers.begin(), gemm_helpers.end());
  out.library_kernels.assign(helpers.begin(), helpers.end());
  out.text = os.str();
  return out;
}

}  // namespace kiln::codegen::cuda
