// Python operators on tensors (Tensor.__add__, __radd__, __iadd__, __lt__, ...)
// as torch/_tensor.py and the python_variable_methods bindings define them,
// the `operator` functions Dynamo records for them, and tensor attributes.
#include <climits>

#include "core/ops/kernel_util.h"
#include "core/python/torch_api_binding.h"

namespace kiln::torchapi {
using namespace detail;
using py::BinaryOpKind;
using py::CompareKind;
using py::UnaryOpKind;

namespace {

// ---------------------------------------------------------------- operator callables

Callable make_operator(const std::string& name) {
  Callable c;
  c.module = "operator";
  c.name = name;
  c.python_name = "operator." + name;
  c.graph_target = "operator." + name;
  c.python_repr = "<built-in function " + name + ">";
  return c;
}

const char* binary_name(BinaryOpKind k) {
  switch (k) {
    case BinaryOpKind::Add: return "add";
    case BinaryOpKind::Sub: return "sub";
    case BinaryOpKind::Mul: return "mul";
    case BinaryOpKind::TrueDiv: return "truediv";
    case BinaryOpKind::FloorDiv: return "floordiv";
    case BinaryOpKind::Mod: return "mod";
    case BinaryOpKind::Pow: return "pow";
    case BinaryOpKind::MatMul: return "matmul";
    case BinaryOpKind::LShift: return "lshift";
    case BinaryOpKind::RShift: return "rshift";
    case BinaryOpKind::And: return "and_";
    case BinaryOpKind::Or: return "or_";
    case BinaryOpKind::Xor: return "xor";
  }
  return "?";
}

// The in-place operator function: iadd, iand (no trailing underscore), ...
std::string inplace_name(BinaryOpKind k) {
  std::string n = binary_name(k);
  if (n.back() == '_') n.pop_back();
  return "i" + n;
}

const char* compare_name(CompareKind k) {
  switch (k) {
    case CompareKind::Lt: return "lt";
    case CompareKind::Le: return "le";
    case CompareKind::Eq: return "eq";
    case CompareKind::Ne: return "ne";
    case CompareKind::Gt: return "gt";
    case CompareKind::Ge: return "ge";
    case CompareKind::In: return "contains";
    case CompareKind::NotIn: return "contains";
    case CompareKind::Is: return "is_";
    case CompareKind::IsNot: return "is_not";
  }
  return "?";
}

const char* unary_name(UnaryOpKind k) {
  switch (k) {
    case UnaryOpKind::Neg: return "neg";
    case UnaryOpKind::Pos: return "pos";
    case UnaryOpKind::Not: return "not_";
    case UnaryOpKind::Invert: return "invert";
  }
  return "?";
}

std::string py_type(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::DType: return "torch.dtype";
    case Value::Kind::Tensor: return "Tensor";
    case Value::Kind::List: return "tuple";
  }
  return "object";
}

bool is_number(const Value& v) { return v.is_int() || v.is_float() || v.is_bool(); }

// ---------------------------------------------------------------- shifts

// x << y and x >> y on integer tensors (ATen's lshift/rshift kernels: a shift
// by a negative count or by the width or more gives 0, or the sign for >>).
Tensor shift(Mode m, bool left, const Value& a, const Value& b) {
  auto operand = [](const Value& v) -> PromotionOperand {
    return v.is_tensor() ? PromotionOperand(v.to_tensor()) : PromotionOperand(v.to_scalar());
  };
  DType out = result_type({operand(a), operand(b)});
  KILN_USER_CHECK(is_integral(out, true), "\"", left ? "lshift" : "rshift", "_cpu\" not implemented for '",
                  dtype_name(out), "'");
  auto as_tensor = [&](const Value& v) {
    return v.is_tensor() ? v.to_tensor() : scalar_to_tensor(v.to_scalar(), out, m);
  };
  Tensor x = as_tensor(a), y = as_tensor(b);
  Shape shape = broadcast_shapes(x.sizes(), y.sizes());
  if (m == Mode::Meta || x.is_meta() || y.is_meta()) return Tensor::meta(shape, out);
  Tensor xs = x.to(out).expand(shape).contiguous(), ys = y.to(out).expand(shape).contiguous();
  Tensor r = Tensor::empty(shape, out);
  dispatch_all(out, [&]<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T *px = xs.data<T>(), *py = ys.data<T>();
      T* pr = r.data<T>();
      constexpr int64_t bits = int64_t(sizeof(T) * CHAR_BIT);
      for (int64_t i = 0; i < r.numel(); ++i) {
        int64_t s = int64_t(py[i]);
        bool wide = s < 0 || s >= bits;
        if (left) pr[i] = wide ? T(0) : T(std::make_unsigned_t<T>(px[i]) << s);
        else pr[i] = wide ? T(px[i] < 0 ? -1 : 0) : T(px[i] >> s);
      }
    } else {
      KILN_FAIL("\"", left ? "lshift" : "rshift", "_cpu\" not implemented for '", dtype_name(out), "'");
    }
  });
  return r;
}

// ---------------------------------------------------------------- binary

Value first(ValueList r) { return std::move(r.at(0)); }

// a <op> b with `a` a tensor and `b` a tensor or a number.
Value forward_op(BinaryOpKind op, Mode m, const Value& a, const Value& b) {
  bool t = b.is_tensor();
  switch (op) {
    case BinaryOpKind::Add: return first(aten(m, t ? "aten::add.Tensor" : "aten::add.Scalar", {a, b}));
    case BinaryOpKind::Sub: return first(aten(m, t ? "aten::sub.Tensor" : "aten::sub.Scalar", {a, b}));
    case BinaryOpKind::Mul: return first(aten(m, t ? "aten::mul.Tensor" : "aten::mul.Scalar", {a, b}));
    case BinaryOpKind::TrueDiv: return first(aten(m, t ? "aten::div.Tensor" : "aten::div.Scalar", {a, b}));
    case BinaryOpKind::FloorDiv:
      return first(aten(m, t ? "aten::floor_divide" : "aten::floor_divide.Scalar", {a, b}));
    case BinaryOpKind::Mod: return first(aten(m, t ? "aten::remainder.Tensor" : "aten::remainder.Scalar", {a, b}));
    case BinaryOpKind::Pow: return first(aten(m, t ? "aten::pow.Tensor_Tensor" : "aten::pow.Tensor_Scalar", {a, b}));
    case BinaryOpKind::MatMul: return first(aten(m, "aten::matmul", {a, b}));
    case BinaryOpKind::And: return first(aten(m, t ? "aten::bitwise_and.Tensor" : "aten::bitwise_and.Scalar", {a, b}));
    case BinaryOpKind::Or: return first(aten(m, t ? "aten::bitwise_or.Tensor" : "aten::bitwise_or.Scalar", {a, b}));
    case BinaryOpKind::Xor: return first(aten(m, t ? "aten::bitwise_xor.Tensor" : "aten::bitwise_xor.Scalar", {a, b}));
    case BinaryOpKind::LShift: return shift(m, true, a, b);
    case BinaryOpKind::RShift: return shift(m, false, a, b);
  }
  return Value();
}

// number <op> tensor: Tensor.__radd__ and friends (torch/_tensor.py).
Value reflected_op(BinaryOpKind op, Mode m, const Value& number, const Value& tensor) {
  switch (op) {
    case BinaryOpKind::Add:
    case BinaryOpKind::Mul:
    case BinaryOpKind::And:
    case BinaryOpKind::Or:
    case BinaryOpKind::Xor: return forward_op(op, m, tensor, number);
    case BinaryOpKind::Sub: return first(aten(m, "aten::rsub.Scalar", {tensor, number}));
    // __rtruediv__ is self.reciprocal() * other.
    case BinaryOpKind::TrueDiv:
      return first(aten(m, "aten::mul.Scalar", {aten_t(m, "aten::reciprocal", {tensor}), number}));
    case BinaryOpKind::Mod: return first(aten(m, "aten::remainder.Scalar_Tensor", {number, tensor}));
    case BinaryOpKind::Pow: return first(aten(m, "aten::pow.Scalar", {number, tensor}));
    // __rfloordiv__ is torch.floor_divide(other, self): the number is a wrapped tensor.
    case BinaryOpKind::FloorDiv: {
      DType d = result_type({PromotionOperand(tensor.to_tensor()), PromotionOperand(number.to_scalar())});
      return first(aten(m, "aten::floor_divide", {scalar_to_tensor(number.to_scalar(), d, m), tensor}));
    }
    case BinaryOpKind::LShift: return shift(m, true, number, tensor);
    case BinaryOpKind::RShift: return shift(m, false, number, tensor);
    case BinaryOpKind::MatMul: break;
  }
  KILN_FAIL("unsupported operand type(s) for @: '", py_type(number), "' and 'Tensor'");
}

// The Tensor method an in-place operator is: add_, floor_divide_, bitwise_and_, ...
const char* inplace_method(BinaryOpKind k) {
  switch (k) {
    case BinaryOpKind::Add: return "add_";
    case BinaryOpKind::Sub: return "sub_";
    case BinaryOpKind::Mul: return "mul_";
    case BinaryOpKind::TrueDiv: return "div_";
    case BinaryOpKind::FloorDiv: return "floor_divide_";
    case BinaryOpKind::Mod: return "remainder_";
    case BinaryOpKind::Pow: return "pow_";
    case BinaryOpKind::MatMul: return "matmul";
    case BinaryOpKind::LShift: return "__ilshift__";
    case BinaryOpKind::RShift: return "__irshift__";
    case BinaryOpKind::And: return "bitwise_and_";
    case BinaryOpKind::Or: return "bitwise_or_";
    case BinaryOpKind::Xor: return "bitwise_xor_";
  }
  return "?";
}

}  // namespace

Expected<Value> binary(BinaryOpKind op, const Value& a, const Value& b, Mode mode, bool in_place) {
  try {
    if (a.is_tensor()) {
      if (!b.is_tensor() && !is_number(b))
        KILN_FAIL("unsupported operand type(s) for ", py::binary_op_symbol(op), ": 'Tensor' and '", py_type(b), "'");
      Value r = forward_op(op, mode, a, b);
      // @= is not defined on tensors: Python falls back to x = x @ y.
      if (!in_place || op == BinaryOpKind::MatMul) return r;
      write_inplace(a.to_tensor(), r.to_tensor(), mode, inplace_method(op));
      return a;
    }
    KILN_USER_CHECK(b.is_tensor(), "binary(): neither operand is a Tensor");
    if (!is_number(a))
      KILN_FAIL("unsupported operand type(s) for ", py::binary_op_symbol(op), ": '", py_type(a), "' and 'Tensor'");
    return reflected_op(op, mode, a, b);
  } catch (const Error& e) {
    return Status::error(e.what());
  }
}

Expected<Value> unary(UnaryOpKind op, const Value& a, Mode mode) {
  try {
    KILN_USER_CHECK(a.is_tensor(), "unary(): the operand is not a Tensor");
    switch (op) {
      case UnaryOpKind::Neg: return aten(mode, "aten::neg", {a}).at(0);
      case UnaryOpKind::Pos: return aten(mode, "aten::positive", {a}).at(0);
      case UnaryOpKind::Invert: return aten(mode, "aten::bitwise_not", {a}).at(0);
      case UnaryOpKind::Not: break;
    }
    KILN_FAIL("`not` on a tensor is the interpreter's business (bool(tensor))");
  } catch (const Error& e) {
    return Status::error(e.what());
  }
}

Expected<Value> compare(CompareKind op, const Value& a, const Value& b, Mode mode) {
  try {
    // number <op> tensor is tensor <reflected op> number.
    if (!a.is_tensor()) {
      KILN_USER_CHECK(b.is_tensor(), "compare(): neither operand is a Tensor");
      CompareKind reflected = op;
      switch (op) {
        case CompareKind::Lt: reflected = CompareKind::Gt; break;
        case CompareKind::Le: reflected = CompareKind::Ge; break;
        case CompareKind::Gt: reflected = CompareKind::Lt; break;
        case CompareKind::Ge: reflected = CompareKind::Le; break;
        default: break;
      }
      return compare(reflected, b, a, mode);
    }
    if (op != CompareKind::Lt && op != CompareKind::Le && op != CompareKind::Eq && op != CompareKind::Ne &&
        op != CompareKind::Gt && op != CompareKind::Ge)
      KILN_FAIL("compare(): '", py::compare_symbol(op), "' on tensors is the interpreter's business");
    if (!b.is_tensor() && !is_number(b)) {
      // Tensor.__eq__ gives NotImplemented; Python then compares identities.
      if (op == CompareKind::Eq) return Value(false);
      if (op == CompareKind::Ne) return Value(true);
      KILN_FAIL("'", py::compare_symbol(op), "' not supported between instances of 'Tensor' and '", py_type(b), "'");
    }
    std::string name = std::string("aten::") + compare_name(op) + (b.is_tensor() ? ".Tensor" : ".Scalar");
    return aten(mode, name, {a, b}).at(0);
  } catch (const Error& e) {
    return Status::error(e.what());
  }
}

const Callable& operator_callable(BinaryOpKind op, bool in_place) {
  static const std::vector<Callable> plain = [] {
    std::vector<Callable> v;
    for (int k = 0; k <= int(BinaryOpKind::Xor); ++k) v.push_back(make_operator(binary_name(BinaryOpKind(k))));
    return v;
  }();
  static const std::vector<Callable> inplace_ops = [] {
    std::vector<Callable> v;
    for (int k = 0; k <= int(BinaryOpKind::Xor); ++k) v.push_back(make_operator(inplace_name(BinaryOpKind(k))));
    return v;
  }();
  return (in_place ? inplace_ops : plain).at(size_t(op));
}

const Callable& operator_callable(CompareKind op) {
  static const std::vector<Callable> ops = [] {
    std::vector<Callable> v;
    for (int k = 0; k <= int(CompareKind::IsNot); ++k) {
      v.push_back(make_operator(compare_name(CompareKind(k))));
      // Dynamo records a tensor's == and != as the methods __eq__ / __ne__.
      if (CompareKind(k) == CompareKind::Eq || CompareKind(k) == CompareKind::Ne) {
        v.back().graph_target = std::string("__") + compare_name(CompareKind(k)) + "__";
        v.back().is_method = true;
      }
    }
    return v;
  }();
  return ops.at(size_t(op));
}

const Callable& operator_callable(UnaryOpKind op) {
  static const std::vector<Callable> ops = [] {
    std::vector<Callable> v;
    for (int k = 0; k <= int(UnaryOpKind::Invert); ++k) v.push_back(make_operator(unary_name(UnaryOpKind(k))));
    return v;
  }();
  return ops.at(size_t(op));
}

const Callable& getitem_callable() {
  static const Callable c = make_operator("getitem");
  return c;
}

const Callable& setitem_callable() {
  static const Callable c = make_operator("setitem");
  return c;
}

// ---------------------------------------------------------------- attributes

std::optional<Expected<Value>> tensor_attribute(const Tensor& self, std::string_view name, Mode mode, CallInfo* info) {
  if (info) *info = CallInfo{};
  try {
    if (name == "shape") {
      if (info) info->kind = ResultKind::Size;
      return Expected<Value>(Value::int_list(self.sizes()));
    }
    if (name == "ndim") return Expected<Value>(Value(self.dim()));
    if (name == "dtype") return Expected<Value>(Value(self.dtype()));
    if (name == "device") return Expected<Value>(Value(self.is_meta() && mode == Mode::Eager ? "meta" : "cpu"));
    if (name == "is_cuda" || name == "is_sparse" || name == "is_quantized" || name == "is_mkldnn" ||
        name == "is_complex")
      return Expected<Value>(Value(false));
    if (name == "is_cpu") return Expected<Value>(Value(!(self.is_meta() && mode == Mode::Eager)));
    if (name == "is_meta") return Expected<Value>(Value(self.is_meta() && mode == Mode::Eager));
    if (name == "layout") return Expected<Value>(Value("torch.strided"));
    if (name == "itemsize") return Expected<Value>(Value(int64_t(self.itemsize())));
    if (name == "nbytes") return Expected<Value>(Value(int64_t(self.itemsize()) * self.numel()));
    if (name == "T" || name == "H") return Expected<Value>(aten(mode, "aten::numpy_T", {self}).at(0));
    if (name == "mT" || name == "mH") {
      KILN_USER_CHECK(self.dim() >= 2, "tensor.mT is only supported on matrices or batches of matrices. Got ",
                      self.dim(), "-D tensor.");
      return Expected<Value>(aten(mode, "aten::transpose.int", {self, -2, -1}).at(0));
    }
    if (name == "real") return Expected<Value>(Value(self));
    if (name == "data") return Expected<Value>(aten(mode, "aten::detach", {self}).at(0));
  } catch (const Error& e) {
    return Expected<Value>(Status::error(e.what()));
  }
  return std::nullopt;
}

}  // namespace kiln::torchapi
