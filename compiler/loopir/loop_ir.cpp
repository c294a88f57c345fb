#include "compiler/loopir/loop_ir.h"

#include <cmath>
#include <limits>
#include <map>

#include "compiler/loopir/view_index.h"
#include "core/tensor/half.h"
#include "core/util/status.h"

namespace kiln::loopir {

std::string_view expr_op_name(ExprOp op) {
  switch (op) {
    case ExprOp::Load: return "load";
    case ExprOp::Constant: return "constant";
    case ExprOp::Neg: return "neg";
    case ExprOp::Exp: return "exp";
    case ExprOp::Log: return "log";
    case ExprOp::Sin: return "sin";
    case ExprOp::Cos: return "cos";
    case ExprOp::Tanh: return "tanh";
    case ExprOp::Sqrt: return "sqrt";
    case ExprOp::Rsqrt: return "rsqrt";
    case ExprOp::Abs: return "abs";
    case ExprOp::Sigmoid: return "sigmoid";
    case ExprOp::ToDtype: return "to_dtype";
    case ExprOp::Add: return "add";
    case ExprOp::Sub: return "sub";
    case ExprOp::Mul: return "mul";
    case ExprOp::Div: return "truediv";
    case ExprOp::Maximum: return "maximum";
    case ExprOp::Minimum: return "minimum";
    case ExprOp::Eq: return "eq";
    case ExprOp::Ne: return "ne";
    case ExprOp::Lt: return "lt";
    case ExprOp::Le: return "le";
    case ExprOp::Gt: return "gt";
    case ExprOp::Ge: return "ge";
    case ExprOp::Where: return "where";
  }
  return "?";
}

int expr_op_arity(ExprOp op) {
  if (op == ExprOp::Load || op == ExprOp::Constant) return 0;
  if (op == ExprOp::Where) return 3;
  if (op >= ExprOp::Add) return 2;
  return 1;
}

std::string_view reduction_type_name(ReductionType t) {
  switch (t) {
    case ReductionType::Sum: return "sum";
    case ReductionType::Max: return "max";
    case ReductionType::Min: return "min";
    case ReductionType::Prod: return "prod";
    case ReductionType::Argmax: return "argmax";
    case ReductionType::Any: return "any";
  }
  return "?";
}

ExprRef expr_load(std::string buffer, IndexRef index, DType dtype) {
  auto e = std::make_shared<Expr>();
  e->op = ExprOp::Load;
  e->dtype = dtype;
  e->buffer = std::move(buffer);
  e->index = std::move(index);
  return e;
}

ExprRef expr_constant(double value, DType dtype) {
  auto e = std::make_shared<Expr>();
  e->op = ExprOp::Constant;
  e->dtype = dtype;
  e->value = value;
  return e;
}

static ExprRef make_op(ExprOp op, std::vector<ExprRef> operands, DType dtype) {
  KILN_CHECK(int(operands.size()) == expr_op_arity(op), "wrong operand count for ", expr_op_name(op));
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->dtype = dtype;
  e->operands = std::move(operands);
  return e;
}

ExprRef expr_unary(ExprOp op, ExprRef a, DType dtype) { return make_op(op, {std::move(a)}, dtype); }
ExprRef expr_binary(ExprOp op, ExprRef a, ExprRef b, DType dtype) {
  return make_op(op, {std::move(a), std::move(b)}, dtype);
}
ExprRef expr_where(ExprRef cond, ExprRef a, ExprRef b, DType dtype) {
  return make_op(ExprOp::Where, {std::move(cond), std::move(a), std::move(b)}, dtype);
}
ExprRef expr_cast(ExprRef a, DType dtype) {
  if (a->dtype == dtype) return a;
  return make_op(ExprOp::ToDtype, {std::move(a)}, dtype);
}

std::optional<size_t> BufferNameIndex::find(const std::vector<Buffer>& buffers, std::string_view name) const {
  std::lock_guard lock(mu_);
  auto look = [&]() -> std::optional<size_t> {
    auto it = places_.find(std::string(name));
    if (it == places_.end() || it->second >= buffers.size() || buffers[it->second].name != name) return std::nullopt;
    return it->second;
  };
  if (auto hit = look()) return hit;
  // Lowering appends a buffer and looks it up at once: index the new tail
  // first, and everything again only when that does not find it.
  for (size_t i = std::min(indexed_, buffers.size()); i < buffers.size(); ++i) places_.emplace(buffers[i].name, i);
  indexed_ = buffers.size();
  if (auto hit = look()) return hit;
  places_.clear();
  for (size_t i = 0; i < buffers.size(); ++i) places_.emplace(buffers[i].name, i);  // the first of a name wins
  return look();
}

size_t Program::buffer_index(std::string_view name) const {
  std::optional<size_t> place = name_index.find(buffers, name);
  KILN_CHECK(place.has_value(), "loop IR: no buffer named ", name);
  return *place;
}

const Buffer& Program::buffer(std::string_view name) const { return buffers[buffer_index(name)]; }

int64_t storage_span(const Buffer& b) {
  int64_t hi = b.offset;
  for (size_t d = 0; d < b.sizes.size(); ++d) {
    if (b.sizes[d] == 0) return 0;
    hi += (b.sizes[d] - 1) * b.strides[d];
  }
  return hi + 1;
}

void ExprVisitor::visit(const ExprRef& e) {
  for (const ExprRef& o : e->operands) visit(o);
  visit_node(e);
}

bool is_relu(const Expr& e) {
  if (e.op != ExprOp::Maximum) return false;
  for (const ExprRef& o : e.operands)
    if (o->op == ExprOp::Constant && o->value == 0) return true;
  return false;
}

ExprRef ExprMutator::mutate(const ExprRef& e) {
  std::vector<ExprRef> operands;
  bool changed = false;
  for (const ExprRef& o : e->operands) {
    operands.push_back(mutate(o));
    changed |= operands.back() != o;
  }
  if (!changed) return mutate_node(e, e);
  auto rebuilt = std::make_shared<Expr>(*e);
  rebuilt->operands = std::move(operands);
  return mutate_node(rebuilt, e);
}

// ---- the reference evaluator ----

namespace {

// A value as `dtype` holds it: what a store into, or an op computing in, that dtype gives.
double round_to(double v, DType dtype) {
  switch (dtype) {
    case DType::Bool: return v != 0 ? 1 : 0;
    case DType::UInt8: return double(uint8_t(int64_t(v)));
    case DType::Int8: return double(int8_t(int64_t(v)));
    case DType::Int16: return double(int16_t(int64_t(v)));
    case DType::Int32: return double(int32_t(int64_t(v)));
    case DType::Int64: return std::isfinite(v) ? double(int64_t(v)) : 0;
    case DType::Float16: return double(float(Half(float(v))));
    case DType::BFloat16: return double(float(BFloat16(float(v))));
    case DType::Float32: return double(float(v));
    case DType::Float64: return v;
  }
  return v;
}

// The exact result; eval() rounds it to the expression's dtype.
double apply(ExprOp op, DType dtype, const double* a) {
  switch (op) {
    case ExprOp::Neg: return -a[0];
    case ExprOp::Exp: return std::exp(a[0]);
    case ExprOp::Log: return std::log(a[0]);
    case ExprOp::Sin: return std::sin(a[0]);
    case ExprOp::Cos: return std::cos(a[0]);
    case ExprOp::Tanh: return std::tanh(a[0]);
    case ExprOp::Sqrt: return std::sqrt(a[0]);
    case ExprOp::Rsqrt: return 1.0 / std::sqrt(a[0]);
    case ExprOp::Abs: return std::fabs(a[0]);
    case ExprOp::Sigmoid: return 1.0 / (1.0 + std::exp(-a[0]));
    case ExprOp::ToDtype: return a[0];
    case ExprOp::Add: return a[0] + a[1];
    case ExprOp::Sub: return a[0] - a[1];
    case ExprOp::Mul: return a[0] * a[1];
    case ExprOp::Div: return a[0] / a[1];
    // NaN propagates, as in torch.maximum.
    case ExprOp::Maximum: return std::isnan(a[0]) || std::isnan(a[1]) ? std::nan("") : std::max(a[0], a[1]);
    case ExprOp::Minimum: return std::isnan(a[0]) || std::isnan(a[1]) ? std::nan("") : std::min(a[0], a[1]);
    case ExprOp::Eq: return a[0] == a[1];
    case ExprOp::Ne: return a[0] != a[1];
    case ExprOp::Lt: return a[0] < a[1];
    case ExprOp::Le: return a[0] <= a[1];
    case ExprOp::Gt: return a[0] > a[1];
    case ExprOp::Ge: return a[0] >= a[1];
    case ExprOp::Where: return a[0] != 0 ? a[1] : a[2];
    case ExprOp::Load:
    case ExprOp::Constant: break;
  }
  KILN_CHECK(false, "loop IR evaluator: no rule for ", expr_op_name(op), " in ", dtype_name(dtype));
  return 0;
}

// Each buffer as doubles over its storage span, values already rounded to its dtype.
struct Memory {
  std::map<std::string, std::vector<double>> data;
  std::map<std::string, std::string> storage_of;  // a buffer living in another's storage

  std::vector<double>& vec(const std::string& name) {
    if (!storage_of.empty())
      if (auto it = storage_of.find(name); it != storage_of.end()) return data.at(it->second);
    return data.at(name);
  }
  const std::vector<double>& vec(const std::string& name) const { return const_cast<Memory*>(this)->vec(name); }

  double load(const std::string& name, int64_t i) const {
    const std::vector<double>& d = vec(name);
    KILN_CHECK(i >= 0 && i < int64_t(d.size()), "loop IR evaluator: load from ", name, " at ", i, " out of [0, ",
               d.size(), ")");
    return d[size_t(i)];
  }
};

// Calls fn with every multi-index of `sizes`, row-major.
template <class Fn>
void for_each_index(const std::vector<int64_t>& sizes, Fn&& fn) {
  for (int64_t s : sizes)
    if (s == 0) return;
  std::vector<int64_t> idx(sizes.size(), 0);
  for (;;) {
    fn(idx);
    size_t d = sizes.size();
    while (d > 0) {
      if (++idx[d - 1] < sizes[d - 1]) break;
      idx[d - 1] = 0;
      --d;
    }
    if (d == 0) return;
  }
}

int64_t flat_of(const Buffer& b, const std::vector<int64_t>& idx) {
  int64_t f = b.offset;
  for (size_t d = 0; d < idx.size(); ++d) f += idx[d] * b.strides[d];
  return f;
}

double eval(const ExprRef& e, const IndexEnv& env, const Memory& mem) {
  if (e->op == ExprOp::Load) return mem.load(e->buffer, evaluate_index(e->index, env));
  if (e->op == ExprOp::Constant) return round_to(e->value, e->dtype);
  double a[3] = {0, 0, 0};
  for (size_t i = 0; i < e->operands.size(); ++i) a[i] = eval(e->operands[i], env, mem);
  return round_to(apply(e->op, e->dtype, a), e->dtype);
}

void run_kernel(const Kernel& k, const Program& p, Memory& mem) {
  const Buffer& out = p.buffer(k.output);
  std::vector<double>& dst = mem.vec(k.output);
  IndexEnv env;
  size_t n = k.ranges.size();
  env.vars.assign(n + k.reduction_ranges.size(), 0);
  auto store = [&](double v) {
    int64_t at = evaluate_index(k.store_index, env);
    KILN_CHECK(at >= 0 && at < int64_t(dst.size()), "loop IR evaluator: store to ", k.output, " out of range");
    dst[size_t(at)] = round_to(v, out.dtype);
  };
  for_each_index(k.ranges, [&](const std::vector<int64_t>& idx) {
    for (size_t i = 0; i < n; ++i) env.vars[i] = idx[i];
    if (k.kind == KernelKind::Pointwise) return store(eval(k.body, env, mem));
    double acc = 0;
    int64_t position = 0, best_position = 0;
    switch (k.reduction) {
      case ReductionType::Sum: case ReductionType::Any: acc = 0; break;
      case ReductionType::Prod: acc = 1; break;
      case ReductionType::Max: case ReductionType::Argmax: acc = -std::numeric_limits<double>::infinity(); break;
      case ReductionType::Min: acc = std::numeric_limits<double>::infinity(); break;
    }
    bool first = true;
    for_each_index(k.reduction_ranges, [&](const std::vector<int64_t>& r) {
      for (size_t i = 0; i < r.size(); ++i) env.vars[n + i] = r[i];
      double v = eval(k.body, env, mem);
      switch (k.reduction) {
        case ReductionType::Sum: acc += v; break;
        case ReductionType::Prod: acc *= v; break;
        case ReductionType::Any: acc = (acc != 0 || v != 0) ? 1 : 0; break;
        case ReductionType::Max: acc = std::isnan(acc) || std::isnan(v) ? std::nan("") : std::max(acc, v); break;
        case ReductionType::Min: acc = std::isnan(acc) || std::isnan(v) ? std::nan("") : std::min(acc, v); break;
        case ReductionType::Argmax:
          // The first maximum wins, and a NaN is the maximum, as in torch.argmax.
          if (first || (!std::isnan(acc) && (v > acc || std::isnan(v)))) acc = v, best_position = position;
          break;
      }
      first = false;
      ++position;
    });
    store(k.reduction == ReductionType::Argmax ? double(best_position) : acc);
  });
}

// An extern kernel on tensors made from the evaluator's doubles: every buffer
// it touches becomes a tensor of its dtype over its storage span, and the
// outputs' spans are read back (rounded to their dtypes by the copy).
void run_extern_kernel(const Kernel& k, const Program& p, Memory& mem) {
  std::map<std::string, Tensor> storages;
  BufferTensors tensor_of = [&](const std::string& name) -> Tensor {
    const Buffer& b = p.buffer(name);
    auto it = storages.find(name);
    if (it == storages.end()) {
      const std::vector<double>& d = mem.vec(name);
      Tensor flat = Tensor::from_vector(d, {int64_t(d.size())}).to(b.dtype);
      it = storages.emplace(name, flat).first;
    }
    return it->second.as_strided(Shape(b.sizes.begin(), b.sizes.end()), Shape(b.strides.begin(), b.strides.end()),
                                 b.offset);
  };
  run_extern(p, k, tensor_of);
  for (const std::string& out : extern_outputs(k)) {
    Tensor flat = storages.count(out) ? storages.at(out).to(DType::Float64).contiguous() : Tensor();
    if (!flat.defined()) continue;
    std::vector<double>& dst = mem.vec(out);
    const double* src = flat.data<double>();
    for (size_t i = 0; i < dst.size(); ++i) dst[i] = src[i];
  }
}

}  // namespace

std::vector<Tensor> run_loops(const Program& program, const std::vector<Tensor>& inputs) {
  return detail::run_loops_sharing(program, inputs, {});
}

std::vector<Tensor> detail::run_loops_sharing(const Program& program, const std::vector<Tensor>& inputs,
                                              const std::map<std::string, std::string>& storage_of) {
  KILN_USER_CHECK(inputs.size() == program.inputs.size(), "run_loops: expected ", program.inputs.size(),
                  " inputs, got ", inputs.size());
  Memory mem;
  mem.storage_of = storage_of;
  for (const Buffer& b : program.buffers)
    if (!storage_of.count(b.name)) mem.data[b.name].assign(size_t(storage_span(b)), 0.0);
  for (const auto& [name, storage] : storage_of)
    KILN_CHECK(storage_span(program.buffer(name)) <= int64_t(mem.data.at(storage).size()), "run_loops: ", name,
               " does not fit in the storage of ", storage);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Buffer& b = program.buffer(program.inputs[i]);
    const Tensor& t = inputs[i];
    KILN_USER_CHECK(t.sizes() == Shape(b.sizes.begin(), b.sizes.end()), "run_loops: input ", b.name, " has sizes ",
                    t.type_str(), ", the program was lowered for other sizes");
    Tensor rowmajor = t.to(DType::Float64).contiguous();
    const double* src = rowmajor.data<double>();
    std::vector<double>& dst = mem.vec(b.name);
    int64_t k = 0;
    for_each_index(b.sizes, [&](const std::vector<int64_t>& idx) {
      dst[size_t(flat_of(b, idx))] = round_to(src[k++], b.dtype);
    });
  }
  for (const Kernel& k : program.kernels) {
    if (k.kind == KernelKind::Extern) run_extern_kernel(k, program, mem);
    else run_kernel(k, program, mem);
  }
  std::vector<Tensor> outputs;
  for (const std::string& name : program.outputs) {
    const Buffer& b = program.buffer(name);
    std::vector<double> values;
    values.reserve(size_t(shape_numel(Shape(b.sizes.begin(), b.sizes.end()))));
    const std::vector<double>& src = mem.vec(name);
    for_each_index(b.sizes, [&](const std::vector<int64_t>& idx) { values.push_back(src[size_t(flat_of(b, idx))]); });
    outputs.push_back(Tensor::from_vector(values, Shape(b.sizes.begin(), b.sizes.end())).to(b.dtype));
  }
  return outputs;
}

}  // namespace kiln::loopir
