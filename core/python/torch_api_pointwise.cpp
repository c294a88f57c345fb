// torch / Tensor pointwise functions: unary math, binary arithmetic with
// Python numbers as wrapped scalars, comparisons, clamp, where, and the
// activations that live in the torch namespace (torch.relu, torch.selu, ...).
#include <cmath>

#include "core/python/torch_api_binding.h"

namespace kiln::torchapi::detail {
namespace {

Handler A(const char* op) { return to_aten(op); }
Handler TS(const char* tensor_op, const char* scalar_op) { return to_aten_tensor_or_scalar(tensor_op, scalar_op); }

// Unary ops with torch.X, Tensor.X, Tensor.X_ and torch.X_.
void unary_math(Table& t) {
  static const char* const kUnary[] = {
      "abs",  "acos",  "acosh", "asin",  "asinh", "atan", "atanh",      "ceil",  "cos",  "cosh",
      "erf",  "erfc",  "erfinv", "exp",  "exp2",  "expm1", "floor",     "frac",  "log",  "log10",
      "log1p", "log2", "neg",   "reciprocal", "rsqrt", "sgn", "sigmoid", "sign", "sin", "sinh",
      "sqrt", "tan",   "tanh",  "trunc", "relu",
  };
  for (const char* n : kUnary) {
    // PyTorch 2.11 has no torch.erfinv_, torch.sgn_ or torch.sign_.
    std::string s = n;
    unsigned where = kTorch | kMethod | kInplaceMethod;
    if (s != "erfinv" && s != "sgn" && s != "sign") where |= kTorchInplace;
    t.def(n, where, {{"(Tensor input)", to_aten("aten::" + s)}});
  }
  // NumPy-style aliases are separate builtins with their own names.
  static const std::pair<const char*, const char*> kAliases[] = {
      {"arccos", "acos"},   {"arcsin", "asin"},   {"arctan", "atan"}, {"arccosh", "acosh"},
      {"arcsinh", "asinh"}, {"arctanh", "atanh"}, {"negative", "neg"}, {"fix", "trunc"},
      {"absolute", "abs"},
  };
  for (const auto& [alias, op] : kAliases)
    t.def(alias, kTorch | kMethod | kInplaceMethod, {{"(Tensor input)", to_aten(std::string("aten::") + op)}});
  t.def("bitwise_not", kTorch | kMethod | kInplaceMethod, {{"(Tensor input)", A("aten::bitwise_not")}});
  t.def("logical_not", kTorch | kMethod | kInplaceMethod, {{"(Tensor input)", A("aten::logical_not")}});
  for (const char* n : {"isnan", "isinf", "isfinite"})
    t.def(n, kTorch | kMethod, {{"(Tensor input)", to_aten(std::string("aten::") + n)}});
  t.def("positive", kTorch | kMethod, {{"(Tensor input)", A("aten::positive")}});
  t.def("square", kTorch | kMethod | kInplaceMethod, {{"(Tensor input)", [](const Bound& b) {
                                                         return aten(b.mode(), "aten::pow.Tensor_Scalar",
                                                                     {b[0], Value(int64_t{2})});
                                                       }}});
  t.def("round", kTorch | kMethod | kInplaceMethod,
        {{"(Tensor input)", A("aten::round")}, {"(Tensor input, *, int decimals)", A("aten::round.decimals")}});
  t.def("nan_to_num", kTorch | kMethod | kInplaceMethod,
        {{"(Tensor input, float? nan=None, float? posinf=None, float? neginf=None)", A("aten::nan_to_num")}});
  t.def("logit", kTorch | kMethod | kInplaceMethod, {{"(Tensor input, float? eps=None)", A("aten::logit")}});
}

// add(x, y, alpha=), sub, mul, div(rounding_mode=), remainder, pow, bitwise ops, ...
void binary_math(Table& t) {
  unsigned all = kTorch | kMethod | kInplaceMethod;
  // add(x, alpha, y): PyTorch's deprecated overload, still accepted (old training
  // loops write p.data.add_(-lr, p.grad.data)).
  auto alpha_first = [](const char* op) -> Handler {
    return [op](const Bound& b) { return aten(b.mode(), op, {b[0], b[2]}, {{"alpha", b[1]}}); };
  };
  t.def("add", all, {{"(Tensor input, TensorOrNumber other, *, Scalar alpha=1)", TS("aten::add.Tensor", "aten::add.Scalar")},
                     {"(Tensor input, Scalar alpha, Tensor other)", alpha_first("aten::add.Tensor")}});
  for (const char* n : {"sub", "subtract"})
    t.def(n, all, {{"(Tensor input, TensorOrNumber other, *, Scalar alpha=1)", TS("aten::sub.Tensor", "aten::sub.Scalar")},
                   {"(Tensor input, Scalar alpha, Tensor other)", alpha_first("aten::sub.Tensor")}});
  t.def("rsub", kTorch, {{"(Tensor input, TensorOrNumber other, *, Scalar alpha=1)", TS("aten::rsub.Tensor", "aten::rsub.Scalar")}});
  for (const char* n : {"mul", "multiply"})
    t.def(n, all, {{"(Tensor input, TensorOrNumber other)", TS("aten::mul.Tensor", "aten::mul.Scalar")}});
  Handler div = [](const Bound& b) {
    bool tensor = b[1].is_tensor();
    if (b[2].is_none())
      return aten(b.mode(), tensor ? "aten::div.Tensor" : "aten::div.Scalar", {b[0], b[1]});
    return aten(b.mode(), tensor ? "aten::div.Tensor_mode" : "aten::div.Scalar_mode", {b[0], b[1]},
                {{"rounding_mode", b[2]}});
  };
  for (const char* n : {"div", "divide"})
    t.def(n, all, {{"(Tensor input, TensorOrNumber other, *, str? rounding_mode=None)", div}});
  t.def("true_divide", all, {{"(Tensor input, TensorOrNumber other)", TS("aten::div.Tensor", "aten::div.Scalar")}});
  t.def("floor_divide", all,
        {{"(Tensor input, TensorOrNumber other)", TS("aten::floor_divide", "aten::floor_divide.Scalar")}});
  t.def("remainder", all,
        {{"(Tensor input, TensorOrNumber other)", TS("aten::remainder.Tensor", "aten::remainder.Scalar")},
         {"(Scalar self, Tensor other)", A("aten::remainder.Scalar_Tensor")}});
  t.def("fmod", all, {{"(Tensor input, TensorOrNumber other)", TS("aten::fmod.Tensor", "aten::fmod.Scalar")}});
  t.def("pow", all,
        {{"(Tensor input, TensorOrNumber exponent)", TS("aten::pow.Tensor_Tensor", "aten::pow.Tensor_Scalar")},
         {"(Scalar self, Tensor exponent)", A("aten::pow.Scalar")}});
  t.def("float_power", kTorch | kMethod, {{"(Tensor input, TensorOrNumber exponent)", [](const Bound& b) {
          Value base = aten_t(b.mode(), "aten::to.dtype", {b[0], Value(DType::Float64)});
          if (b[1].is_tensor())
            return aten(b.mode(), "aten::pow.Tensor_Tensor",
                        {base, aten_t(b.mode(), "aten::to.dtype", {b[1], Value(DType::Float64)})});
          return aten(b.mode(), "aten::pow.Tensor_Scalar", {base, Value(b[1].to_double())});
        }}});
  t.def("xlogy", all,
        {{"(Tensor input, TensorOrNumber other)", TS("aten::xlogy.Tensor", "aten::xlogy.Scalar_Other")},
         {"(Scalar self, Tensor other)", A("aten::xlogy.Scalar_Self")}});
  t.def("copysign", all, {{"(Tensor input, TensorOrNumber other)", TS("aten::copysign.Tensor", "aten::copysign.Scalar")}});
  for (const char* n : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    std::string op = std::string("aten::") + n;
    t.def(n, all, {{"(Tensor input, TensorOrNumber other)", to_aten_tensor_or_scalar(op + ".Tensor", op + ".Scalar")}});
  }
  for (const char* n : {"logical_and", "logical_or", "logical_xor"})
    t.def(n, all, {{"(Tensor input, Tensor other)", to_aten(std::string("aten::") + n)}});
  for (const char* n : {"atan2", "hypot"})
    t.def(n, all, {{"(Tensor input, Tensor other)", to_aten(std::string("aten::") + n)}});
  for (const char* n : {"maximum", "minimum", "fmax", "fmin"})
    t.def(n, kTorch | kMethod, {{"(Tensor input, Tensor other)", to_aten(std::string("aten::") + n)}});
  t.def("arctan2", all, {{"(Tensor input, Tensor other)", A("aten::atan2")}});
  t.def("lerp", all,
        {{"(Tensor input, Tensor end, Tensor weight)", A("aten::lerp.Tensor")},
         {"(Tensor input, Tensor end, Scalar weight)", A("aten::lerp.Scalar")}});
  t.def("addcmul", all, {{"(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1)", A("aten::addcmul")}});
  t.def("addcdiv", all, {{"(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1)", A("aten::addcdiv")}});
}

void comparisons(Table& t) {
  static const std::pair<const char*, const char*> kCompare[] = {
      {"eq", "eq"}, {"ne", "ne"}, {"lt", "lt"}, {"le", "le"}, {"gt", "gt"}, {"ge", "ge"},
      {"not_equal", "ne"}, {"less", "lt"}, {"less_equal", "le"}, {"greater", "gt"}, {"greater_equal", "ge"},
  };
  for (const auto& [name, op] : kCompare) {
    std::string o = std::string("aten::") + op;
    t.def(name, kTorch | kMethod | kInplaceMethod,
          {{"(Tensor input, TensorOrNumber other)", to_aten_tensor_or_scalar(o + ".Tensor", o + ".Scalar")}});
  }
  // isclose: |a - b| <= atol + rtol * |b|, with equal_nan and exact equality of infinities.
  auto isclose = [](Mode m, const Value& a, const Value& b, double rtol, double atol, bool equal_nan) {
    Tensor eq = aten_t(m, "aten::eq.Tensor", {a, b});
    const Tensor& ta = a.to_tensor();
    if (!is_floating(ta.dtype())) return eq;
    Tensor diff = aten_t(m, "aten::abs", {aten_t(m, "aten::sub.Tensor", {a, b})});
    Tensor tol = aten_t(m, "aten::add.Scalar", {aten_t(m, "aten::mul.Scalar", {aten_t(m, "aten::abs", {b}), rtol}), atol});
    Tensor close = aten_t(m, "aten::logical_and",
                          {aten_t(m, "aten::le.Tensor", {diff, tol}), aten_t(m, "aten::isfinite", {diff})});
    Tensor out = aten_t(m, "aten::logical_or", {eq, close});
    if (equal_nan)
      out = aten_t(m, "aten::logical_or",
                   {out, aten_t(m, "aten::logical_and", {aten_t(m, "aten::isnan", {a}), aten_t(m, "aten::isnan", {b})})});
    return out;
  };
  t.def("isclose", kTorch | kMethod,
        {{"(Tensor input, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False)",
          [isclose](const Bound& b) {
            return ValueList{isclose(b.mode(), b[0], b[1], b.real(2), b.real(3), b.boolean(4))};
          }}});
  t.def("allclose", kTorch | kMethod,
        {{"(Tensor input, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False)",
          [isclose](const Bound& b) {
            Tensor all = aten_t(b.mode(), "aten::all", {isclose(b.mode(), b[0], b[1], b.real(2), b.real(3), b.boolean(4))});
            return ValueList{Value(item_of(all, b.mode(), "allclose").to_bool())};
          }}});
  t.def("equal", kTorch | kMethod, {{"(Tensor input, Tensor other)", [](const Bound& b) {
          const Tensor &x = b.tensor(0), &y = b.tensor(1);
          if (x.sizes() != y.sizes()) return ValueList{Value(false)};
          Tensor all = aten_t(b.mode(), "aten::all", {aten_t(b.mode(), "aten::eq.Tensor", {b[0], b[1]})});
          return ValueList{Value(item_of(all, b.mode(), "equal").to_bool())};
        }}});
}

void clamp_where(Table& t) {
  unsigned all = kTorch | kMethod | kInplaceMethod;
  for (const char* n : {"clamp", "clip"})
    t.def(n, all,
          {{"(Tensor input, Tensor? min=None, Tensor? max=None)", A("aten::clamp.Tensor")},
           {"(Tensor input, Scalar? min=None, Scalar? max=None)", A("aten::clamp")}});
  t.def("clamp_min", all,
        {{"(Tensor input, Tensor min)", A("aten::clamp_min.Tensor")}, {"(Tensor input, Scalar min)", A("aten::clamp_min")}});
  t.def("clamp_max", all,
        {{"(Tensor input, Tensor max)", A("aten::clamp_max.Tensor")}, {"(Tensor input, Scalar max)", A("aten::clamp_max")}});

  auto where3 = [](Mode m, const Value& cond, const Value& x, const Value& y) {
    if (x.is_tensor() && y.is_tensor()) return aten(m, "aten::where.self", {cond, x, y});
    if (x.is_tensor()) return aten(m, "aten::where.ScalarOther", {cond, x, y});
    if (y.is_tensor()) return aten(m, "aten::where.ScalarSelf", {cond, x, y});
    return aten(m, "aten::where.Scalar", {cond, x, y});
  };
  t.def("where", kTorch,
        {{"(Tensor condition, TensorOrNumber input, TensorOrNumber other)",
          [where3](const Bound& b) { return where3(b.mode(), b[0], b[1], b[2]); }},
         {"(Tensor condition)",
          [](const Bound& b) {
            // torch.where(cond) is nonzero(cond, as_tuple=True).
            Tensor nz = aten_t(b.mode(), "aten::nonzero", {b[0]});
            return aten(b.mode(), "aten::unbind.int", {aten_t(b.mode(), "aten::t", {nz}), Value(int64_t{0})});
          },
          "tuple"}});
  // x.where(condition, y) is torch.where(condition, x, y).
  t.def("where", kMethod,
        {{"(Tensor input, Tensor condition, TensorOrNumber other)",
          [where3](const Bound& b) { return where3(b.mode(), b[1], b[0], b[2]); }}});
}

void torch_activations(Table& t) {
  t.def("selu", kTorch | kTorchInplace, {{"(Tensor input)", [](const Bound& b) {
          return aten(b.mode(), "aten::elu", {b[0], 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1});
        }}});
  t.def("celu", kTorch | kTorchInplace, {{"(Tensor input, Scalar alpha=1.0)", [](const Bound& b) {
          double alpha = b.real(1);
          return aten(b.mode(), "aten::elu", {b[0], alpha, 1, 1.0 / alpha});
        }}});
  t.def("threshold", kTorch | kTorchInplace,
        {{"(Tensor input, Scalar threshold, Scalar value)", A("aten::threshold")}});
  t.def("hardshrink", kTorch | kMethod, {{"(Tensor input, Scalar lambd=0.5)", [](const Bound& b) {
          Mode m = b.mode();
          double l = b.real(1);
          Tensor inside = aten_t(m, "aten::logical_and", {aten_t(m, "aten::ge.Scalar", {b[0], -l}),
                                                           aten_t(m, "aten::le.Scalar", {b[0], l})});
          return aten(m, "aten::masked_fill.Scalar", {b[0], inside, 0});
        }}});
  t.def("prelu", kTorch | kMethod, {{"(Tensor input, Tensor weight)", [](const Bound& b) {
          Mode m = b.mode();
          const Tensor &x = b.tensor(0), &w = b.tensor(1);
          Tensor weight = w;
          if (w.numel() != 1) {
            KILN_USER_CHECK(x.dim() >= 2 && x.size(1) == w.numel(), "Mismatch of parameter numbers and input channel size. "
                            "Found parameter numbers = ", w.numel(), " and channel size = ", x.dim() >= 2 ? x.size(1) : 1, ".");
            Shape s(size_t(x.dim() - 1), 1);
            s[0] = w.numel();
            weight = aten_t(m, "aten::reshape", {w, Value::int_list(s)});
          }
          Tensor neg = aten_t(m, "aten::mul.Tensor", {b[0], weight});
          return aten(m, "aten::where.self", {aten_t(m, "aten::gt.Scalar", {b[0], 0}), b[0], neg});
        }}});
  t.def("softmax", kTorch | kMethod, {{"(Tensor input, int dim, ScalarType? dtype=None)", A("aten::softmax.int")}});
  t.def("log_softmax", kTorch | kMethod, {{"(Tensor input, int dim, ScalarType? dtype=None)", A("aten::log_softmax.int")}});
}

}  // namespace

void register_pointwise(Table& t) {
  unary_math(t);
  binary_math(t);
  comparisons(t);
  clamp_where(t);
  torch_activations(t);
}

}  // namespace kiln::torchapi::detail
