// GEMM epilogues (GemmLtEpilogue in extern_call.h), run by cuBLASLt on CUDA
// and by oneDNN's matmul post-ops on the CPU: after the buffer plan, a GEMM
// whose only reader is a pointwise kernel running right after it is marked
// when that kernel computes exactly
//   activation(product + bias[n] + s * residual[m, n]),  activation none / relu / gelu tanh
// (the product may add a number, `mm + 1`, which only oneDNN takes)
// with the product rounded once (cuBLASLt applies the epilogue to the float
// accumulator; the generated kernel rounds the product to its dtype first,
// which the bf16/fp16 tolerances cover).
//
// The body is recognised by value, not by shape: the decomposition writes gelu
// as a tree of mul/add/tanh whose order the passes may change, so the body is
// evaluated in float64 at fixed points (casts to the GEMM's dtype or wider
// taken as exact) against each candidate. Only smooth ops (+ - * / tanh neg)
// and relu's max(x, 0) are allowed, so two formulas agreeing on many generic
// points are the same function (an erf gelu never matches: erf is no loop op,
// and its values differ from tanh's by 1e-4, far above the 1e-9 asked).
//
// Nothing moves: the epilogue kernel stays, so a backend whose library is
// missing or refuses runs exactly what it ran before; the CUDA and CPU
// runtimes write the kernel's output in the GEMM call and skip the kernel when
// the library takes it.
#include <cmath>
#include <map>
#include <sstream>

#include "compiler/loopir/lower_extern.h"
#include "compiler/sched/sched_util.h"

namespace kiln::sched::detail {

using namespace loopir;

namespace {

bool contiguous(const Buffer& b) {
  return b.offset == 0 && b.strides == std::vector<int64_t>(contiguous_strides(Shape(b.sizes.begin(), b.sizes.end())));
}

bool lt_dtype(DType d) { return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16; }

// Values of the body's variables at one sample point.
struct Point {
  double p = 0, bias = 0, residual = 0;
};

// The body's loads, each one of the three variables (or refused).
struct Vars {
  std::string product;
  IndexRef own;
  IndexRanges ranges;
  std::optional<std::pair<std::string, IndexRef>> bias, residual;
};

// float64 value of `e`, or nullopt for an op outside the allowed set.
std::optional<double> eval(const ExprRef& e, const Vars& v, const Point& x, DType t) {
  auto arg = [&](size_t i) { return eval(e->operands[i], v, x, t); };
  switch (e->op) {
    case ExprOp::Constant: return e->value;
    case ExprOp::Load: {
      IndexRef idx = simplify_index(e->index, v.ranges);
      if (e->buffer == v.product && equal_index(idx, v.own)) return x.p;
      if (v.bias && e->buffer == v.bias->first && equal_index(idx, v.bias->second)) return x.bias;
      if (v.residual && e->buffer == v.residual->first && equal_index(idx, v.residual->second)) return x.residual;
      return std::nullopt;
    }
    case ExprOp::ToDtype: {
      const DType from = e->operands[0]->dtype, to = e->dtype;
      auto ok = [&](DType d) { return d == t || d == DType::Float32 || d == DType::Float64; };
      if (!ok(from) || !ok(to)) return std::nullopt;
      return arg(0);
    }
    case ExprOp::Neg: {
      auto a = arg(0);
      return a ? std::optional<double>(-*a) : std::nullopt;
    }
    case ExprOp::Tanh: {
      auto a = arg(0);
      return a ? std::optional<double>(std::tanh(*a)) : std::nullopt;
    }
    case ExprOp::Maximum: {
      if (!is_relu(*e)) return std::nullopt;
      auto a = arg(0), b = arg(1);
      if (!a || !b) return std::nullopt;
      return std::max(*a, *b);
    }
    case ExprOp::Add:
    case ExprOp::Sub:
    case ExprOp::Mul:
    case ExprOp::Div: {
      auto a = arg(0), b = arg(1);
      if (!a || !b) return std::nullopt;
      if (e->op == ExprOp::Add) return *a + *b;
      if (e->op == ExprOp::Sub) return *a - *b;
      if (e->op == ExprOp::Mul) return *a * *b;
      return *a / *b;
    }
    default: return std::nullopt;
  }
}

double gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double apply(GemmActivation a, double x) {
  return a == GemmActivation::Relu ? std::max(x, 0.0) : a == GemmActivation::GeluTanh ? gelu_tanh(x) : x;
}

// Generic points: no small integers or simple fractions where a wrong formula
// might agree by accident; both signs, the gelu knee and far into the tails.
std::vector<Point> sample_points(bool bias, bool residual) {
  const double ps[] = {-41.3, -7.31, -3.07, -2.113, -1.37, -0.731, -0.293, -0.0417, 0.0231, 0.187,
                       0.519, 0.883, 1.291, 1.767, 2.459, 3.913, 6.037, 17.9, 113.7, -257.1};
  const double bs[] = {0.311, -0.827, 1.473, -2.219, 0.0653};
  const double rs[] = {-0.463, 1.129, -1.871, 0.257, 2.683};
  std::vector<Point> out;
  for (size_t i = 0; i < std::size(ps); ++i)
    for (size_t j = 0; j < 3; ++j) {
      Point x;
      x.p = ps[i];
      if (bias) x.bias = bs[(i + j) % std::size(bs)];
      if (residual) x.residual = rs[(2 * i + j) % std::size(rs)];
      out.push_back(x);
    }
  return out;
}

const char* activation_name(GemmActivation a) {
  return a == GemmActivation::Relu ? "relu" : a == GemmActivation::GeluTanh ? "gelu tanh" : "";
}

// The row-major [.., M, N] view of a load as BLAS would read it: a [N] bias
// (every stride but the last 0), or a matrix with unit column stride.
enum class Role { Bias, Residual, Neither };
Role role_of(const BufferView& v) {
  const size_t r = v.sizes.size();
  if (r < 2 || v.strides[r - 1] != 1) return Role::Neither;
  bool broadcast_rows = true;
  for (size_t d = 0; d + 1 < r; ++d) broadcast_rows = broadcast_rows && (v.strides[d] == 0 || v.sizes[d] == 1);
  if (broadcast_rows) return Role::Bias;
  if (v.strides[r - 2] >= v.sizes[r - 1] && (r == 2 || v.strides[0] != 0)) return Role::Residual;
  return Role::Neither;
}

// A [N] view of the bias vector: what cuBLASLt's bias pointer reads.
BufferView as_vector(const BufferView& v) {
  BufferView b;
  b.buffer = v.buffer;
  b.offset = v.offset;
  b.sizes = {v.sizes.back()};
  b.strides = {1};
  return b;
}

// The view of an operand broadcast to the output's sizes (the GEMM's own C may be a [N] row).
std::optional<BufferView> broadcast_to(const BufferView& v, const std::vector<int64_t>& sizes) {
  if (v.sizes.size() > sizes.size()) return std::nullopt;
  BufferView b = v;
  const size_t skip = sizes.size() - v.sizes.size();
  b.sizes = sizes;
  b.strides.assign(sizes.size(), 0);
  for (size_t i = 0; i < v.sizes.size(); ++i) {
    if (v.sizes[i] == sizes[skip + i]) b.strides[skip + i] = v.strides[i];
    else if (v.sizes[i] != 1) return std::nullopt;
  }
  return b;
}

// Why the consumer is not a cuBLASLt epilogue of GEMM `e`, or "" with `lt` filled.
std::string match(const ScheduledProgram& s, const Kernel& e, const Kernel& c, GemmLtEpilogue& lt) {
  const Program& p = s.program;
  const ExternCall& call = *e.call;
  const Buffer& out = p.buffer(e.output);
  const DType t = out.dtype;
  if (call.gemm.batched) return "a batched GEMM (bmm): cuBLASLt epilogues are planned for mm only";
  if (!lt_dtype(t)) return "no cuBLASLt epilogue for " + std::string(dtype_name(t));
  for (int i : {call.gemm.a, call.gemm.b, call.gemm.c})
    if (i >= 0 && p.buffer(call.tensors[size_t(i)].buffer).dtype != t) return "operands of mixed dtypes";
  if (c.kind != KernelKind::Pointwise) return "the reader is a reduction";
  if (c.ranges != e.ranges) return "the reader broadcasts the product";
  const Buffer& o = p.buffer(c.output);
  if (!contiguous(out) || !contiguous(o) || !store_is_contiguous(c)) return "a layout cuBLASLt does not write (not contiguous)";
  if (o.dtype != t) return "the result is " + std::string(dtype_name(o.dtype)) + ", the product " + std::string(dtype_name(t));
  Vars v;
  v.product = e.output;
  v.ranges = kernel_index_ranges(c);
  v.own = simplify_index(linear_index(c.ranges), v.ranges);
  std::optional<BufferView> bias, residual;
  double residual_scale = 1;
  // The GEMM's own C: a bias row (beta 1) or a residual matrix (scaled by beta).
  if (call.gemm.c >= 0) {
    std::optional<BufferView> cv = broadcast_to(call.tensors[size_t(call.gemm.c)], out.sizes);
    if (!cv) return "the GEMM's C does not broadcast to the product";
    Role r = role_of(*cv);
    if (r == Role::Bias && call.gemm.beta == 1) bias = as_vector(*cv);
    else if (r == Role::Residual) residual = *cv, residual_scale = call.gemm.beta;
    else return "the GEMM's C is neither a [N] bias nor a matrix with unit column stride";
  }
  for (const LoadSite& l : collect_loads(c.body)) {
    IndexRef idx = simplify_index(l.index, v.ranges);
    if (l.buffer == v.product) {
      if (!equal_index(idx, v.own)) return "it reads the product at another point";
      continue;
    }
    if ((v.bias && v.bias->first == l.buffer && equal_index(v.bias->second, idx)) ||
        (v.residual && v.residual->first == l.buffer && equal_index(v.residual->second, idx)))
      continue;
    if (p.buffer(l.buffer).dtype != t) return "it reads " + l.buffer + " of another dtype";
    std::map<int64_t, IndexRef> to_view;
    auto view = loopir::detail::as_strided_view(p.buffer(l.buffer), c.ranges, [&](const std::vector<IndexRef>& ix) {
      for (size_t d = 0; d < ix.size(); ++d) to_view[int64_t(d)] = ix[d];
      return substitute_vars(l.index, to_view);
    });
    if (!view) return "it reads " + l.buffer + " at a point that is not a strided view";
    Role r = role_of(*view);
    if (r == Role::Bias && !bias && !v.bias) {
      v.bias = {l.buffer, idx};
      bias = as_vector(*view);
    } else if (r == Role::Residual && !residual && !v.residual) {
      v.residual = {l.buffer, idx};
      residual = *view;
    } else {
      return "it reads " + l.buffer + ", which is not one [N] bias or one [M, N] addend beside the product";
    }
  }
  const bool consumer_residual = v.residual.has_value();
  const std::vector<Point> points = sample_points(v.bias.has_value(), consumer_residual);
  for (GemmActivation a : {GemmActivation::None, GemmActivation::Relu, GemmActivation::GeluTanh})
    for (double s : consumer_residual ? std::vector<double>{1, -1} : std::vector<double>{1}) {
      bool same = true;
      for (const Point& x : points) {
        std::optional<double> got = eval(c.body, v, x, t);
        if (!got) return "it computes more than bias, relu, gelu (tanh) and an addend (an op cuBLASLt has no epilogue for)";
        const double want = apply(a, x.p + x.bias + s * x.residual);
        if (!(std::fabs(*got - want) <= 1e-9 * std::max(1.0, std::fabs(want)))) {
          same = false;
          break;
        }
      }
      if (!same) continue;
      if (a == GemmActivation::None && !v.bias && !consumer_residual)
        return "it only copies the product (nothing for an epilogue to do)";
      lt.activation = a;
      lt.output = c.output;
      lt.bias = bias;
      lt.residual = residual;
      lt.residual_scale = consumer_residual ? s : residual_scale;
      std::string parts = activation_name(a);
      auto add = [&](const std::string& w) { parts += (parts.empty() ? "" : " + ") + w; };
      if (call.gemm.c_constant) add("a number");
      if (bias) add("bias");
      if (residual) add("residual");
      lt.summary = parts;
      return "";
    }
  return "its formula is not bias, relu, gelu (tanh) or an addend (erf gelu and other activations stay a kernel)";
}

// The storage a buffer lives in after the buffer plan.
std::string storage_of(const ScheduledProgram& s, const std::string& buffer) {
  for (const BufferAllocation& a : s.allocations)
    if (a.buffer == buffer) return a.storage;
  return buffer;
}

}  // namespace

void plan_lt_epilogues(ScheduledProgram& s) {
  Program& p = s.program;
  for (size_t g = 0; g + 1 < s.groups.size(); ++g) {
    if (s.groups[g].kernels.size() != 1 || s.groups[g + 1].kernels.size() != 1) continue;
    Kernel& e = p.kernels[s.groups[g].kernels[0]];
    const Kernel& c = p.kernels[s.groups[g + 1].kernels[0]];
    if (e.kind != KernelKind::Extern || !e.call || e.call->kind != ExternKind::Gemm || e.call->outputs.size() != 1)
      continue;
    if (p.buffer(e.output).is_output) continue;
    // Only a GEMM whose one reader runs right after it: nothing between them may
    // read the product, and the epilogue's inputs are ready when the GEMM runs.
    size_t readers = 0;
    for (const Kernel& k : p.kernels) readers += reads(k, e.output);
    if (readers != 1 || !reads(c, e.output)) continue;
    FusionDecision d{DecisionKind::Epilogue, false, e.output, c.output, ""};
    const std::string op = e.call->gemm.batched ? "bmm" : "mm";
    GemmLtEpilogue lt;
    std::string why = match(s, e, c, lt);
    if (why.empty()) {
      // The call writes the epilogue's output while it reads A, B, bias and C:
      // the buffer plan must not have put them in one storage.
      const std::string out_storage = storage_of(s, c.output);
      std::vector<std::string> read = {e.call->tensors[size_t(e.call->gemm.a)].buffer,
                                       e.call->tensors[size_t(e.call->gemm.b)].buffer};
      if (lt.bias) read.push_back(lt.bias->buffer);
      if (lt.residual) read.push_back(lt.residual->buffer);
      for (const std::string& r : read)
        if (storage_of(s, r) == out_storage) why = c.output + " shares its storage with " + r + ", which the call reads";
    }
    if (!why.empty()) {
      d.reason = "not fused " + c.output + " into the GEMM call with extern " + op + " " + e.output + ": " + why;
      s.decisions.push_back(d);
      continue;
    }
    d.accepted = true;
    d.reason = "epilogue fused into the GEMM call: " + lt.summary + " (" + c.output + " into extern " + op + " " +
               e.output + ", by cuBLASLt on CUDA and oneDNN on the CPU; " + c.output +
               "'s kernel runs instead where the library is missing or refuses it)";
    s.decisions.push_back(d);
    auto call = std::make_shared<ExternCall>(*e.call);
    call->gemm.lt = std::move(lt);
    e.call = std::move(call);
  }
}

}  // namespace kiln::sched::detail
