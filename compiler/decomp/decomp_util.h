#pragma once
// What every decomposition file uses: the call's arguments bound to the op's
// schema (defaults filled, so a formula reads argument i whatever the caller
// wrote), and one-line emitters for the ops formulas are made of.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/decomp/decomp.h"
#include "core/ops/schema.h"

namespace kiln::decomp {

// The arguments of a DecompCall in schema order, defaults filled in.
class Bound {
 public:
  explicit Bound(const DecompCall& call);
  size_t size() const { return args_.size(); }
  const EArg& operator[](size_t i) const { return args_.at(i); }
  const std::string& op() const { return op_; }

  bool is_none(size_t i) const;
  Var var(size_t i) const;
  std::optional<Var> opt_var(size_t i) const;
  std::vector<Var> vars(size_t i) const;  // Tensor[]
  const Value& value(size_t i) const;     // a constant
  int64_t integer(size_t i) const { return value(i).to_int(); }
  std::optional<int64_t> opt_integer(size_t i) const;
  double real(size_t i) const { return value(i).to_double(); }
  std::optional<double> opt_real(size_t i) const;
  bool boolean(size_t i) const { return value(i).to_bool(); }
  std::string str(size_t i) const { return value(i).to_string(); }
  std::optional<DType> opt_dtype(size_t i) const;
  std::vector<int64_t> ints(size_t i, size_t n = 0) const { return value(i).to_int_list(n); }
  std::optional<std::vector<int64_t>> opt_ints(size_t i, size_t n = 0) const;
  std::optional<std::vector<double>> opt_reals(size_t i) const;  // float[]?

 private:
  std::string op_;
  std::vector<EArg> args_;
};

// Table building, one call per entry in each family file.
using DecompTable = std::map<std::string, Decomposition, std::less<>>;
void add_activation_decomps(DecompTable& t);
void add_pointwise_decomps(DecompTable& t);
void add_normalization_decomps(DecompTable& t);
void add_loss_decomps(DecompTable& t);
void add_reduction_decomps(DecompTable& t);
void add_linalg_decomps(DecompTable& t);
void add_shape_decomps(DecompTable& t);
void add_indexing_decomps(DecompTable& t);
void add_pooling_decomps(DecompTable& t);
void add_grid_sample_decomps(DecompTable& t);
void add_attention_decomps(DecompTable& t);

// Normalizes "aten::x" to "aten::x.default".
std::string full_op_name(std::string_view op);

// ---- emitting helpers (ops named as the registry names them) ----
// Shapes are taken by value: e.sizes(v) refers into the emitter's storage, which
// the emitting of another argument may move.
inline Var call1(Emitter& e, std::string_view op, const std::vector<EArg>& args, const EKwargs& kw = {}) {
  return e.call1(op, args, kw);
}
inline std::vector<Var> one(Var v) { return {v}; }

Var add(Emitter& e, Var a, Var b);
Var add(Emitter& e, Var a, EArg scalar);
Var sub(Emitter& e, Var a, Var b);
Var sub(Emitter& e, Var a, EArg scalar);
Var mul(Emitter& e, Var a, Var b);
Var mul(Emitter& e, Var a, EArg scalar);
Var div(Emitter& e, Var a, Var b);
Var div(Emitter& e, Var a, EArg scalar);
Var neg(Emitter& e, Var a);
Var unary(Emitter& e, std::string_view name, Var a);  // "exp" -> aten::exp.default
Var where(Emitter& e, Var cond, Var a, Var b);
// where(cond, a, b) with a or b a scalar of the other operand's dtype.
Var where_scalar_then(Emitter& e, Var cond, double a, Var b);
Var where_scalar_else(Emitter& e, Var cond, Var a, double b);
Var compare(Emitter& e, std::string_view name, Var a, EArg b);  // "gt" -> gt.Scalar or gt.Tensor
Var scalar_tensor(Emitter& e, EArg value, DType dtype);
Var full(Emitter& e, Shape sizes, EArg value, DType dtype);
Var to_dtype(Emitter& e, Var a, DType dtype);  // _to_copy, or `a` itself when it has that dtype
Var view(Emitter& e, Var a, Shape sizes);
// view when the strides allow it, else clone then view (what reshape does).
Var reshape(Emitter& e, Var a, Shape sizes);
Var permute(Emitter& e, Var a, const std::vector<int64_t>& dims);
Var unsqueeze(Emitter& e, Var a, int64_t dim);
Var squeeze_dims(Emitter& e, Var a, const std::vector<int64_t>& dims);
Var expand(Emitter& e, Var a, Shape sizes);
Var slice(Emitter& e, Var a, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Var cat(Emitter& e, const std::vector<Var>& xs, int64_t dim);
Var sum(Emitter& e, Var a, const std::vector<int64_t>& dims, bool keepdim);
Var mean(Emitter& e, Var a, const std::vector<int64_t>& dims, bool keepdim);
Var amax(Emitter& e, Var a, const std::vector<int64_t>& dims, bool keepdim);
Var arange(Emitter& e, int64_t n, DType dtype);
Var mm(Emitter& e, Var a, Var b);

// ---- shapes ----
std::vector<int64_t> wrap_dims(const std::vector<int64_t>& dims, int64_t ndim);
std::vector<int64_t> all_dims(int64_t ndim);
// The dims a reduction's `int[1]? dim` names: None or [] mean all of them.
std::vector<int64_t> reduction_dims(const Bound& b, size_t i, int64_t ndim);
int64_t numel_of(const Shape& s, const std::vector<int64_t>& dims);
// Whether a view of these sizes can share `t`'s strides.
bool viewable(const Tensor& t, const Shape& sizes);

// ---- dtypes ----
// The dtype PyTorch computes a 16-bit float op in (float32), else the dtype itself.
DType opmath_dtype(DType t);
// What a tensor of dtype `t` combined with a Python scalar gives (wrapped-number promotion).
DType result_with_scalar(DType t, const Value& scalar);
// Largest finite value of a float dtype.
double max_finite(DType t);

// Upcasts 16-bit float inputs to float32 for the formula and rounds the results
// back, as PyTorch's decompositions do for ops whose kernels compute in float32.
struct OpMath {
  Emitter& e;
  DType in;
  DType compute;
  OpMath(Emitter& em, DType t) : e(em), in(t), compute(opmath_dtype(t)) {}
  Var up(Var v) const { return to_dtype(e, v, compute); }
  Var down(Var v) const { return to_dtype(e, v, in); }
};

}  // namespace kiln::decomp
