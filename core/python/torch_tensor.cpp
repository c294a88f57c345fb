// What the interpreter asks of tensors (torch_bridge.h): operators, indexing,
// attributes, truthiness, len, iteration, format. Every call that computes goes
// through call_traced, so capture sees it; metadata reads while tracing go
// through Tracer::inspect_tensor, and reading a value breaks the graph first.
#include <cmath>

#include "core/python/autograd.h"
#include "core/python/numpy_bridge.h"
#include "core/python/torch_bridge.h"
#include "core/python/eager_tape.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"
#include "core/util/pyformat.h"

namespace kiln::py {

using torchapi::IndexItem;
using torchapi::Mode;

namespace {

bool is_number(const Value& v) { return v.is_int() || v.is_bool() || v.is_float(); }

// The tensor whose metadata a read may use: the tracer's stand-in while tracing.
Value metadata_view(VM& vm, const Value& t) {
  if (EagerTape* tape = active_eager_tape()) tape->metadata_read(vm, t);
  return vm.tracer ? vm.tracer->inspect_tensor(vm, t) : t;
}

const Tensor& meta_tensor(VM& vm, const Value& t, Value& keep) {
  keep = metadata_view(vm, t);
  return tensor_of(keep, "tensor");
}

std::string binary_grad_fn(BinaryOpKind op, const Value& a, const Value& b) {
  switch (op) {
    case BinaryOpKind::Add: return "AddBackward0";
    case BinaryOpKind::Sub: return a.is(ObjKind::Tensor) ? "SubBackward0" : "RsubBackward1";
    case BinaryOpKind::Mul: return "MulBackward0";
    case BinaryOpKind::TrueDiv: return a.is(ObjKind::Tensor) ? "DivBackward0" : "MulBackward0";
    case BinaryOpKind::Mod: return "RemainderBackward0";
    case BinaryOpKind::FloorDiv: return "NotImplemented";  // floor_divide has no derivative formula
    case BinaryOpKind::Pow:
      if (!a.is(ObjKind::Tensor)) return "PowBackward2";
      return b.is(ObjKind::Tensor) ? "PowBackward1" : "PowBackward0";
    case BinaryOpKind::MatMul: {
      ValueVec both{a, b};
      return grad_fn_for("matmul", CallArgs{both.data(), 2, nullptr});
    }
    default: return "";
  }
}

std::optional<int64_t> slice_bound(const Value& v) {
  if (v.is_none()) return std::nullopt;
  return to_index(v, "slice indices");
}

IndexItem index_item(const Value& k) {
  if (k.is_bool()) return IndexItem::boolean(k.as_bool());
  if (k.is_int()) return IndexItem::integer(k.as_int());
  if (k.is_none()) return IndexItem::none();
  if (k.is(ObjKind::Ellipsis)) return IndexItem::ellipsis();
  if (k.is(ObjKind::Slice)) {
    auto* s = k.as<SliceObj>();
    return IndexItem::slice(slice_bound(s->start), slice_bound(s->stop), slice_bound(s->step));
  }
  if (k.is(ObjKind::Tensor)) return IndexItem::of_tensor(k.as<TensorObj>()->t);
  if (k.is(ObjKind::List) || k.is(ObjKind::Tuple)) return IndexItem::of_sequence(to_ops(k, "__getitem__"));
  if (k.is(ObjKind::Range)) {
    // x[range(n), y]: PyTorch reads a range as the sequence of its ints.
    const auto* r = k.as<RangeObj>();
    if (r->length() > (int64_t(1) << 27)) throw PyError("IndexError", "a range of " + std::to_string(r->length()) + " indices is over Kiln's limit of 2**27");
    kiln::ValueList ints;
    for (int64_t i = 0, n = r->length(); i < n; ++i) ints.push_back(kiln::Value(r->start + i * r->step));
    return IndexItem::of_sequence(kiln::Value(std::move(ints)));
  }
  if (k.is(ObjKind::Str)) throw_type_error("new(): invalid data type 'str'");
  // NumPy's integer scalars and arrays index a tensor as ints and tensors do.
  if (const Value* n = numpy_scalar_value(k, false)) {
    if (n->is_int() || n->is_bool()) return index_item(*n);
  }
  if (TensorObj* t = ndarray_tensor(k, "indexing a tensor with an array")) return IndexItem::of_tensor(t->t);
  throw PyError("IndexError",
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got " +
                    type_name(k) + ")");
}

std::vector<IndexItem> index_items(const Value& key) {
  std::vector<IndexItem> items;
  if (key.is(ObjKind::Tuple)) {
    for (const Value& k : key.as<Tuple>()->items) items.push_back(index_item(k));
  } else {
    items.push_back(index_item(key));
  }
  return items;
}

// The autograd node of x[key]: the last view op PyTorch's slicing applies
// (in a tuple key full slices and ... apply none; a lone slice always slices),
// or IndexBackward0 for advanced indexing.
std::string getitem_grad_fn(const Value& key, const std::vector<IndexItem>& items) {
  if (key.is(ObjKind::Slice)) return "SliceBackward0";
  std::string node = "AliasBackward0";
  for (const IndexItem& it : items) {
    switch (it.kind) {
      case IndexItem::Kind::Int: node = "SelectBackward0"; break;
      case IndexItem::Kind::Slice:
        if ((it.start && *it.start != 0) || it.stop || (it.step && *it.step != 1)) node = "SliceBackward0";
        break;
      case IndexItem::Kind::None: node = "UnsqueezeBackward0"; break;
      case IndexItem::Kind::Tensor:
      case IndexItem::Kind::Sequence:
      case IndexItem::Kind::Bool: return "IndexBackward0";
      case IndexItem::Kind::Ellipsis: break;
    }
  }
  return node;
}

Value python_scalar(const Tensor& t) {
  Scalar s = t.item();
  if (t.dtype() == DType::Bool) return Value(s.to_bool());
  if (is_floating(t.dtype())) return Value(s.to_double());
  return Value(s.to_int());
}

}  // namespace

// ---- reading a tensor's value ----

void break_on_item(VM& vm) {
  BreakInfo info;
  info.kind = BreakKind::ScalarOutput;
  info.reason = "Unsupported Tensor.item() call with capture_scalar_outputs=False";
  info.explanation =
      "  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.\n"
      "  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export "
      "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.\n\n"
      "  Developer debug context: call_method TensorVariable() item () {}\n";
  vm.tracer->graph_break(vm, info);
  KILN_CHECK(false, "Tracer::graph_break returned");
}

Value tensor_item(VM& vm, const Value& v, ValueRead read) {
  if (vm.tracer) break_on_item(vm);
  if (EagerTape* tape = active_eager_tape()) tape->value_read(vm, v, read);
  const Tensor& t = tensor_of(v, "item()");
  if (t.numel() != 1)
    throw PyError("RuntimeError", "a Tensor with " + std::to_string(t.numel()) + " elements cannot be converted to Scalar");
  if (t.is_meta()) throw PyError("RuntimeError", "Tensor.item() cannot be called on meta tensors");
  return python_scalar(t);
}

bool is_tensor(const Value& v) { return v.is(ObjKind::Tensor); }

// ---- operators ----

bool tensor_binary(VM& vm, BinaryOpKind op, const Value& a, const Value& b, bool inplace, Value& out) {
  if (!is_tensor(a) && !is_tensor(b)) return false;
  // Another operand may define the operator (a complex tensor's __rmul__): VM::binary asks it, then raises.
  if ((!is_tensor(a) && !is_number(a)) || (!is_tensor(b) && !is_number(b))) return false;
  const bool writes_self = inplace && is_tensor(a) && op != BinaryOpKind::MatMul;
  ValueVec args{a, b};
  out = call_traced(vm, nullptr, torchapi::operator_callable(op, inplace).graph_target, false,
                    CallArgs{args.data(), 2, nullptr}, [&vm, op, inplace, writes_self](const CallArgs& x, Mode mode) {
                      if (writes_self) check_inplace_allowed(vm, x[0]);
                      bool grad = any_requires_grad(vm, x);
                      std::string node = grad ? binary_grad_fn(op, x[0], x[1]) : std::string();
                      autograd::CallRecording recording(vm, x, !node.empty() && mode == Mode::Eager);
                      if (writes_self) recording.begin_write(vm, tensor_obj(x[0]));
                      Expected<kiln::Value> r =
                          torchapi::binary(op, to_ops(x[0], "operator"), to_ops(x[1], "operator"), mode, inplace);
                      if (!r.ok()) raise_status(r.status());
                      Value result = writes_self ? x[0] : from_ops(r.value());
                      if (writes_self && !node.empty()) {
                        recording.finish_write(tensor_obj(result), node);
                      } else if (!node.empty()) {
                        mark_grad(tensor_obj(result), node);
                        recording.finish({tensor_obj(result)}, node);
                      }
                      return result;
                    });
  return true;
}

bool tensor_unary(VM& vm, UnaryOpKind op, const Value& a, Value& out) {
  if (!is_tensor(a) || op == UnaryOpKind::Not) return false;
  ValueVec args{a};
  out = call_traced(vm, nullptr, torchapi::operator_callable(op).graph_target, false, CallArgs{args.data(), 1, nullptr},
                    [&vm, op](const CallArgs& x, Mode mode) {
                      bool grad = any_requires_grad(vm, x) && op == UnaryOpKind::Neg;
                      autograd::CallRecording recording(vm, x, grad && mode == Mode::Eager);
                      Expected<kiln::Value> r = torchapi::unary(op, to_ops(x[0], "operator"), mode);
                      if (!r.ok()) raise_status(r.status());
                      const Tensor& self = x[0].as<TensorObj>()->t;
                      if (r.value().is_tensor() && r.value().to_tensor().storage() == self.storage() &&
                          r.value().to_tensor().sizes() == self.sizes() && op == UnaryOpKind::Pos)
                        return x[0];  // +x is x itself, as torch.positive
                      Value result = from_ops(r.value());
                      if (grad) {
                        mark_grad(tensor_obj(result), "NegBackward0");
                        recording.finish({tensor_obj(result)}, "NegBackward0");
                      }
                      return result;
                    });
  return true;
}

bool tensor_compare(VM& vm, CompareKind op, const Value& a, const Value& b, Value& out) {
  if (!is_tensor(a) && !is_tensor(b)) return false;
  ValueVec args{a, b};
  // A tensor's own == and != are recorded as its methods __eq__ / __ne__, as Dynamo does.
  const torchapi::Callable& c = torchapi::operator_callable(op);
  bool as_method = c.is_method && is_tensor(a);
  out = call_traced(vm, nullptr, as_method ? c.graph_target : c.python_name, as_method, CallArgs{args.data(), 2, nullptr},
                    [op](const CallArgs& x, Mode mode) {
                      if (!is_tensor(x[0]) && !is_number(x[0]) && !x[0].is_none())
                        throw_type_error(std::string("'") + compare_symbol(op) + "' not supported between instances of '" +
                                         type_name(x[0]) + "' and '" + type_name(x[1]) + "'");
                      if (!is_tensor(x[1]) && !is_number(x[1]) && !x[1].is_none()) {
                        if (op == CompareKind::Eq) return Value(false);
                        if (op == CompareKind::Ne) return Value(true);
                        throw_type_error(std::string("'") + compare_symbol(op) + "' not supported between instances of '" +
                                         type_name(x[0]) + "' and '" + type_name(x[1]) + "'");
                      }
                      Expected<kiln::Value> r = torchapi::compare(op, to_ops(x[0], "operator"), to_ops(x[1], "operator"), mode);
                      if (!r.ok()) raise_status(r.status());
                      return from_ops(r.value());
                    });
  return true;
}

// ---- indexing ----

Value tensor_getitem(VM& vm, const Value& t, const Value& key) {
  ValueVec args{t, key};
  return call_traced(vm, nullptr, "operator.getitem", false, CallArgs{args.data(), 2, nullptr},
                     [&vm](const CallArgs& x, Mode mode) {
                       std::vector<IndexItem> items = index_items(x[1]);
                       bool grad = any_requires_grad(vm, x);
                       autograd::CallRecording recording(vm, x, grad && mode == Mode::Eager);
                       Expected<kiln::Value> r = torchapi::getitem(tensor_of(x[0], "__getitem__"), items, mode);
                       if (!r.ok()) raise_status(r.status());
                       Value result = from_ops(r.value());
                       if (mode == Mode::Eager) autograd::note_view(tensor_obj(result), tensor_obj(x[0]));
                       if (grad) {
                         std::string node = getitem_grad_fn(x[1], items);
                         mark_grad(tensor_obj(result), node);
                         recording.finish({tensor_obj(result)}, node);
                       }
                       return result;
                     });
}

void tensor_setitem(VM& vm, const Value& t, const Value& key, const Value& value) {
  ValueVec args{t, key, value};
  call_traced(vm, nullptr, "operator.setitem", false, CallArgs{args.data(), 3, nullptr},
              [&vm](const CallArgs& x, Mode mode) {
                check_inplace_allowed(vm, x[0]);
                bool grad = any_requires_grad(vm, x);
                autograd::CallRecording recording(vm, x, grad && mode == Mode::Eager);
                const Tensor& self = tensor_of(x[0], "__setitem__");
                // buf[i] = v with v requiring grad: buf's old value is the rest of the result;
                // when buf views another tensor, that one's value changes too.
                TensorObj* target = tensor_obj(x[0]);
                if (target && !target->requires_grad && !target->grad_node) recording.add_constant(self);
                recording.begin_write(vm, target);
                kiln::Value v;
                if (x[2].is(ObjKind::List) || x[2].is(ObjKind::Tuple)) {
                  Expected<Tensor> data = torchapi::tensor_from_data(to_ops(x[2], "__setitem__"), self.dtype(), mode);
                  if (!data.ok()) raise_status(data.status());
                  v = kiln::Value(data.value());
                } else if (is_tensor(x[2]) || is_number(x[2])) {
                  v = to_ops(x[2], "__setitem__");
                } else if (const Value* scalar = numpy_scalar_value(x[2], false)) {
                  // A NumPy scalar is a number to torch (np.float64 is a Python float).
                  v = to_ops(*scalar, "__setitem__");
                } else {
                  throw_type_error("can't assign a " + type_name(x[2]) + " to a " +
                                   std::string(dtype_name(self.dtype())) + " tensor");
                }
                Status s = torchapi::setitem(self, index_items(x[1]), v, mode);
                if (!s.ok()) raise_status(s);
                if (grad) recording.finish_write(target, "CopySlices");
                return Value();
              });
}

// ---- attributes ----

// tensor_attrs.cpp: the attributes a program sets on a tensor of its own.
bool tensor_user_attr_allowed(std::string_view name);
void set_tensor_user_attr(VM& vm, const Object* t, std::string_view name, Value value);
bool tensor_user_attr(VM& vm, const Object* t, std::string_view name, Value& out);

bool tensor_getattr(VM& vm, const Value& t, std::string_view name, Value& out) {
  TensorObj* obj = t.as<TensorObj>();
  Value keep;
  if (name == "shape") {
    if (EagerTape* tape = active_eager_tape()) tape->metadata_read(vm, t);
    keep = vm.tracer ? vm.tracer->inspect_sizes(vm, t) : t;
    out = make_size(tensor_of(keep, "tensor").sizes());
  } else if (name == "dtype") {
    out = make_dtype(vm, meta_tensor(vm, t, keep).dtype());
  } else if (name == "ndim") {
    out = Value(meta_tensor(vm, t, keep).dim());
  } else if (name == "device") {
    const std::string& d = obj->device;
    size_t colon = d.find(':');
    out = Value(make<DeviceObj>(d.substr(0, colon), colon == std::string::npos ? -1 : std::stoi(d.substr(colon + 1))));
  } else if (name == "is_cuda") {
    out = Value(obj->device.starts_with("cuda"));
  } else if (name == "is_cpu" || name == "is_meta" || name == "is_xpu" || name == "is_mps" || name == "is_mkldnn") {
    // Dynamo answers is_cuda from the fake's device, but these device
    // predicates go through its generic tensor-attribute path: a getattr
    // call_function node, which explain counts (DCGAN's input.is_xpu).
    const bool answer = name == "is_cpu" ? obj->device == "cpu" : name == "is_meta" ? obj->device == "meta" : false;
    ValueVec getattr_args{t, str_value(std::string(name))};
    out = call_traced(vm, nullptr, "getattr", false, CallArgs{getattr_args.data(), 2, nullptr},
                      [answer](const CallArgs&, Mode) { return Value(answer); });
  } else if (name == "is_sparse" || name == "is_quantized" || name == "is_nested" || name == "is_complex_dtype") {
    out = Value(false);
  } else if (name == "requires_grad") {
    out = Value(obj->requires_grad);
  } else if (name == "is_leaf") {
    out = Value(obj->grad_fn.empty());
  } else if (name == "retains_grad") {
    out = Value(obj->retains_grad && !obj->grad_fn.empty());
  } else if (name == "grad") {
    out = obj->grad;
  } else if (name == "grad_fn") {
    out = grad_fn_object(vm, *obj);
  } else if (name == "itemsize") {
    out = Value(int64_t(element_size(meta_tensor(vm, t, keep).dtype())));
  } else if (name == "nbytes") {
    const Tensor& m = meta_tensor(vm, t, keep);
    out = Value(int64_t(element_size(m.dtype())) * m.numel());
  } else if (name == "data") {
    // Dynamo traces .data as detach(); eagerly it is an alias without grad.
    ValueVec args{t};
    out = call_traced(vm, nullptr, "detach", true, CallArgs{args.data(), 1, nullptr}, [](const CallArgs& x, Mode) {
      Value alias = tensor_value(x[0].as<TensorObj>()->t);
      alias.as<TensorObj>()->device = x[0].as<TensorObj>()->device;
      return alias;
    });
  } else if (name == "T" || name == "mT" || name == "H" || name == "mH") {
    // Dynamo records getattr(x, 'T'): a call_function node whose replay reads
    // the attribute again; the meta run is the permute / transpose it stands for.
    bool reverse = name == "T" || name == "H";
    int64_t ndim = meta_tensor(vm, t, keep).dim();
    if (!reverse && ndim < 2)
      throw PyError("RuntimeError", "tensor.mT is only supported on matrices or batches of matrices. Got " +
                                        std::to_string(ndim) + "-D tensor.");
    ValueVec args{t};
    if (reverse) {
      for (int64_t d = ndim - 1; d >= 0; --d) args.push_back(Value(d));
    } else {
      args.push_back(Value(int64_t(-2)));
      args.push_back(Value(int64_t(-1)));
    }
    const torchapi::Callable* c = torchapi::find(reverse ? "Tensor.permute" : "Tensor.transpose");
    KILN_CHECK(c, "torchapi lacks Tensor.permute / Tensor.transpose");
    ValueVec getattr_args{t, str_value(std::string(name))};
    out = call_traced(vm, nullptr, "getattr", false, CallArgs{getattr_args.data(), 2, nullptr},
                      [&vm, c, &args](const CallArgs& a, Mode mode) {
                        ValueVec permute_args = args;
                        permute_args[0] = a[0];  // the fake standing for the tensor while tracing
                        return run_torch(vm, *c, CallArgs{permute_args.data(), permute_args.size(), nullptr}, mode);
                      });
  } else {
    return tensor_user_attr(vm, obj, name, out);
  }
  return true;
}

void tensor_setattr(VM& vm, const Value& t, std::string_view name, const Value& value) {
  if (vm.tracer) vm.tracer->note_mutation(vm, t);
  TensorObj* obj = t.as<TensorObj>();
  if (name == "requires_grad") {
    if (!value.is_bool()) throw_type_error("requires_grad must be a bool");
    if (!obj->grad_fn.empty() && !value.as_bool())
      throw PyError("RuntimeError",
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
                    "in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
    if (value.as_bool() && !is_floating(obj->t.dtype()))
      throw PyError("RuntimeError", "only Tensors of floating point and complex dtype can require gradients");
    obj->requires_grad = value.as_bool();
  } else if (name == "grad") {
    if (!value.is_none() && !is_tensor(value))
      throw_type_error("assigned grad expected to be a Tensor or None but got grad of type " + type_name(value));
    obj->grad = value;
  } else if (name == "data") {
    obj->t = tensor_of(value, "Tensor.data");
    // Module.to(device) moves parameters this way, keeping the objects.
    obj->device = value.as<TensorObj>()->device;
  } else if (tensor_user_attr_allowed(name)) {
    set_tensor_user_attr(vm, obj, name, value);
  } else {
    throw PyError("AttributeError",
                  "setting attribute '" + std::string(name) + "' on a Tensor (one of PyTorch's Tensor attributes; "
                  "Kiln's tensors keep only attributes of the program's own)",
                  /*unsupported=*/true);
  }
}

// ---- truthiness, len, iteration, format ----

bool tensor_truth(VM& vm, const Value& t) {
  if (vm.tracer) {
    BreakInfo info;
    info.kind = BreakKind::DataDependentJump;
    info.reason = "generic_jump TensorVariable()";
    vm.tracer->graph_break(vm, info);
  }
  if (EagerTape* tape = active_eager_tape()) tape->value_read(vm, t, ValueRead::Boolean);
  return truthy(t);
}

int64_t tensor_len(VM& vm, const Value& t) {
  Value keep;
  const Tensor& m = meta_tensor(vm, t, keep);
  if (m.dim() == 0) throw_type_error("len() of a 0-d tensor");
  return m.size(0);
}

Value tensor_iter(VM& vm, const Value& t) {
  Value keep;
  const Tensor& m = meta_tensor(vm, t, keep);
  if (m.dim() == 0) throw_type_error("iteration over a 0-d tensor");
  ValueVec items;
  if (vm.tracer) {
    // Dynamo unpacks a traced tensor into one getitem per row.
    for (int64_t i = 0; i < m.size(0); ++i) items.push_back(tensor_getitem(vm, t, Value(i)));
  } else {
    items = vm.to_vector(vm.call(vm.getattr(t, "unbind"), ValueVec{}));
  }
  return vm.iter(list_value(std::move(items)));
}

std::string tensor_format(VM& vm, const Value& t, std::string_view spec) {
  Value keep;
  const Tensor& m = meta_tensor(vm, t, keep);
  if (m.dim() != 0) {
    if (spec.empty()) return vm.str_of(t);
    throw_type_error("unsupported format string passed to Tensor.__format__");
  }
  Value v = tensor_item(vm, t);
  Expected<std::string> r = std::string();
  if (v.is_float()) r = py_format_float(v.as_float(), spec);
  else if (v.is_bool()) r = py_format_bool(v.as_bool(), spec);
  else r = py_format_int(v.as_int(), spec);
  if (!r.ok()) throw PyError("ValueError", r.status().message());
  return r.value();
}

}  // namespace kiln::py
