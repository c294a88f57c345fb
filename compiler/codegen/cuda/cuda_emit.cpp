#include "compiler/codegen/cuda/cuda_emit.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "compiler/codegen/cpu/reuse_row_values.h"
#include "compiler/codegen/cuda/cuda_prelude.h"
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

std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

class Emitter {
 public:
  Emitter(const Program& p, InjectedBug bug) : p_(p), bug_(bug) {}

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
    for (const KernelLoops& kl : plan.kernels) {
      int64_t w = 1;
      for (int64_t r : kl.inner_ranges) w *= r;
      for (int64_t r : kl.kernel->reduction_ranges) w *= r;
      row_work = std::max(row_work, w);
    }
    if (k.per_row) {
      // Enough threads that each handles about 8 elements of the row.
      int threads = 32;
      while (threads < 1024 && threads * 8 < row_work) threads *= 2;
      k.block_threads = threads;
    }

    out_ = &os;
    os << "\n// group " << index << " (" << group.name << "): ";
    os << (k.per_row ? "a block per row of " + std::to_string(row_work) + " elements, " : "a thread per element, ")
       << plan.outer_numel << (k.per_row ? " rows" : " elements") << "\n";
    for (const std::string& note : plan.notes) os << "// " << note << "\n";
    os << "extern \"C\" __global__ void __launch_bounds__(" << k.block_threads << ") " << k.name << "(";
    for (const std::string& b : k.buffers) os << mtype(p_.buffer(b).dtype) << "* __restrict__ " << identifier(b) << ", ";
    os << "i64 n) {\n";
    if (k.per_row) {
      os << "  __shared__ u64 kiln_scratch[64];\n";
      os << "  for (i64 o = blockIdx.x; o < n; o += gridDim.x) {\n";
    } else {
      os << "  for (i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (i64)gridDim.x * blockDim.x) {\n";
    }
    for (const KernelLoops& kl : plan.kernels) {
      ranges_ = &kl.ranges;
      const Kernel& K = *kl.kernel;
      os << "    // " << K.output << " = " << (K.origin.empty() ? "?" : K.origin);
      if (K.kind == KernelKind::Reduction) os << ", " << reduction_type_name(K.reduction) << " over " << shape_str(K.reduction_ranges);
      os << "\n    {\n";
      if (K.kind == KernelKind::Reduction) reduction(kl, k.per_row);
      else pointwise(kl, k.per_row);
      os << "    }\n";
      if (k.per_row) os << "    __syncthreads();\n";
    }
    os << "  }\n}\n";
    return k;
  }

 private:
  // Loops over `ranges` flattened into one index: strided by the block's
  // threads in a per-row kernel, sequential in a per-element one.
  void flat_loop(const std::vector<int64_t>& ranges, int64_t first_var, bool per_row, const std::function<void()>& body) {
    int64_t total = 1;
    for (int64_t r : ranges) total *= r;
    std::ostream& os = *out_;
    if (ranges.empty()) {
      // One point, done by one thread; r = 0 is its position (argmax's index).
      os << (per_row ? "      if (threadIdx.x == 0) {\n" : "      {\n") << "        const i64 r = 0;\n        (void)r;\n";
    } else if (per_row) {
      os << "      for (i64 r = threadIdx.x; r < " << total << "LL; r += blockDim.x) {\n";
    } else {
      os << "      for (i64 r = 0; r < " << total << "LL; ++r) {\n";
    }
    int64_t stride = total;
    for (size_t d = 0; d < ranges.size(); ++d) {
      stride /= ranges[d];
      std::string v = "r";
      if (stride != 1) v = "(r / " + std::to_string(stride) + "LL)";
      if (d > 0) v = "(" + v + " % " + std::to_string(ranges[d]) + "LL)";
      os << "        const i64 x" << first_var + int64_t(d) << " = " << v << ";\n";
    }
    memo_.clear();
    body();
    os << "      }\n";
  }

  void pointwise(const KernelLoops& kl, bool per_row) {
    flat_loop(kl.inner_ranges, kl.first_inner, per_row, [&] {
      std::string v = expr(kl.body);
      store(kl.kernel->output, kl.store_index, v, kl.kernel->body->dtype);
    });
  }

  void reduction(const KernelLoops& kl, bool per_row) {
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
      for (const KernelLoops::SideStore& s : kl.side_stores) store(s.buffer, s.index, expr(s.value), s.value->dtype);
      std::string x = "(" + acc_t + ")(" + cast(v, body_dtype, acc == DType::Bool ? DType::Bool : acc) + ")";
      if (K.reduction == ReductionType::Any) x = "(int)(" + cast(v, body_dtype, DType::Bool) + ")";
      if (K.reduction == ReductionType::Argmax) {
        os << "        if (kiln_arg_takes(" << x << ", r, acc, acc_i)) { acc = " << x << "; acc_i = r; }\n";
      } else {
        os << "        acc = " << combine << "()(acc, " << x << ");\n";
      }
    });
    if (per_row) {
      if (K.reduction == ReductionType::Argmax)
        os << "      kiln_block_argmax(acc, acc_i, (" << acc_t << "*)kiln_scratch, (i64*)(kiln_scratch + 32));\n";
      else
        os << "      acc = kiln_block_reduce(acc, " << combine << "(), (" << acc_t << "*)kiln_scratch);\n";
      os << "      if (threadIdx.x == 0) {\n";
    } else {
      os << "      {\n";
    }
    memo_.clear();
    if (K.reduction == ReductionType::Argmax) store(K.output, kl.store_index, "acc_i", DType::Int64);
    else store(K.output, kl.store_index, cast("acc", acc == DType::Bool ? DType::Int32 : acc, out_dtype), out_dtype);
    os << "      }\n";
  }

  // ---- values: each node once per loop body, as `const T tN = ...;` ----

  std::string expr(const ExprRef& e) {
    if (auto it = memo_.find(e.get()); it != memo_.end()) return it->second;
    std::string v = compute(*e);
    if (is_relu(*e) && bug_ != InjectedBug::None) v = inject(v, e->dtype);
    std::string name = "t" + std::to_string(next_temp_++);
    *out_ << "        const " << ctype(e->dtype) << " " << name << " = " << v << ";\n";
    memo_[e.get()] = name;
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
      case ExprOp::Sin: return round(math("sinf", "sin", fop(0), fas), d);
      case ExprOp::Cos: return round(math("cosf", "cos", fop(0), fas), d);
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

  std::string load(const std::string& buffer, const IndexRef& index, DType want) {
    DType d = p_.buffer(buffer).dtype;
    std::string raw = address(buffer, index);
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
    *out_ << "        " << address(buffer, index) << " = " << v << ";\n";
  }

  // ---- indices ----

  bool non_negative(const IndexRef& e) const { return index_range(e, *ranges_).lo >= 0; }

  std::string index_text(const IndexRef& e) {
    switch (e->kind) {
      case IndexKind::Const: return std::to_string(e->value) + "LL";
      case IndexKind::Var: return e->value == kOuterVar ? "o" : "x" + std::to_string(e->value);
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
  std::ostringstream* out_ = nullptr;
  std::map<const Expr*, std::string> memo_;
  int next_temp_ = 0;
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

CudaSource emit_cuda(const sched::ScheduledProgram& s, const std::vector<GroupLoops>& plans, InjectedBug bug) {
  CudaSource out;
  std::ostringstream os;
  os << "// Generated by Kiln's CUDA code generator: one kernel per fused group.\n" << kCudaPrelude;
  Emitter emitter(s.program, bug);
  for (size_t g = 0; g < s.groups.size(); ++g)
    if (plans[g].has_function()) out.kernels.push_back(emitter.emit_group(g, s.groups[g], plans[g], os));
  out.text = os.str();
  return out;
}

}  // namespace kiln::codegen::cuda
