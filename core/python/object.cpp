#include "core/python/object.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/python/bigint.h"
#include "core/python/numpy_bridge.h"
#include "core/tensor/tensor_repr.h"
#include "core/util/pyformat.h"
#include "core/util/utf8.h"

namespace kiln::py {

Value::Value(Object* o) {
  if (!o) return;
  tag_ = Tag::Obj;
  u_.o = o;
  ++o->refs;
}

bool Value::same(const Value& o) const {
  if (tag_ != o.tag_) return false;
  switch (tag_) {
    case Tag::None: return true;
    case Tag::Bool: return u_.b == o.u_.b;
    case Tag::Int: return u_.i == o.u_.i;
    case Tag::Float: return u_.f == o.u_.f;
    case Tag::Obj: return u_.o == o.u_.o;
  }
  return false;
}

void throw_type_error(const std::string& msg) { throw PyError("TypeError", msg); }
void throw_error(const std::string& type, const std::string& msg) { throw PyError(type, msg); }
void throw_unsupported(const std::string& msg) { throw PyError("NotImplementedError", msg, true); }

namespace {
thread_local int t_nesting = 0;
}  // namespace

NestingGuard::NestingGuard(const char* context) {
  if (t_nesting >= kMaxNesting) throw PyError("RecursionError", std::string("maximum recursion depth exceeded") + context);
  ++t_nesting;
}

NestingGuard::~NestingGuard() { --t_nesting; }

const Value* CallArgs::kwarg(std::string_view name) const {
  if (!kw) return nullptr;
  for (const auto& [k, v] : *kw)
    if (k == name) return &v;
  return nullptr;
}

// ---- hashing and key equality (dict keys) ----

size_t ValueHash::operator()(const Value& v) const {
  switch (v.tag()) {
    case Value::Tag::None: return 0x9e3779b9;
    case Value::Tag::Bool: return std::hash<int64_t>()(v.as_bool() ? 1 : 0);
    case Value::Tag::Int: return std::hash<int64_t>()(v.as_int());
    case Value::Tag::Float: {
      double d = v.as_float();
      // Equal numbers hash equal across int and float, as Python's hash; a
      // BigInt a double holds exactly hashes as that double.
      if (d == std::floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
        return std::hash<int64_t>()(int64_t(d));
      return std::hash<double>()(d);
    }
    case Value::Tag::Obj: break;
  }
  Object* o = v.obj();
  switch (o->kind) {
    case ObjKind::Str: {
      auto* s = static_cast<Str*>(o);
      if (!s->hash) s->hash = std::hash<std::string>()(s->s) | 1;
      return s->hash;
    }
    case ObjKind::Tuple: {
      NestingGuard guard(" while hashing a tuple");
      size_t h = 0x345678;
      for (const Value& item : static_cast<Tuple*>(o)->items) h = (h ^ ValueHash()(item)) * 1000003;
      return h;
    }
    case ObjKind::BigInt: return static_cast<BigInt*>(o)->value.hash();
    case ObjKind::Instance:
      // A NumPy scalar is the key its number is, as hash(np.int64(1)) == hash(1).
      if (const Value* n = numpy_scalar_value(v, false)) return ValueHash()(*n);
      return std::hash<const void*>()(o);
    case ObjKind::Device: {
      // Equal devices are one key, as torch.device hashes its type and index
      // (GradScaler groups gradients by device).
      auto* d = static_cast<DeviceObj*>(o);
      return std::hash<std::string>()(d->type) ^ (size_t(int64_t(d->index) + 2) * 0x9e3779b97f4a7c15ULL);
    }
    case ObjKind::List:
    case ObjKind::Dict:
    case ObjKind::DictView:
      throw_type_error("unhashable type: '" + type_name(v) + "'");
    default:
      return std::hash<const void*>()(o);
  }
}

bool ValueKeyEq::operator()(const Value& a, const Value& b) const { return equal(a, b); }

const Value* Dict::find(const Value& key) const {
  auto it = index.find(key);
  return it == index.end() ? nullptr : &entries[it->second].value;
}

Value* Dict::find(const Value& key) {
  auto it = index.find(key);
  return it == index.end() ? nullptr : &entries[it->second].value;
}

const Value* Dict::find_str(std::string_view key) const {
  // Attribute lookups are the hot path; avoid allocating a Str for small dicts.
  if (entries.size() <= 8) {
    for (const auto& e : entries)
      if (e.live && e.key.is(ObjKind::Str) && e.key.as<Str>()->s == key) return &e.value;
    return nullptr;
  }
  return find(str_value(std::string(key)));
}

void Dict::set(const Value& key, Value value) {
  auto it = index.find(key);
  if (it != index.end()) {
    entries[it->second].value = std::move(value);
    return;
  }
  index.emplace(key, entries.size());
  entries.push_back({key, std::move(value), true});
}

bool Dict::erase(const Value& key) {
  auto it = index.find(key);
  if (it == index.end()) return false;
  entries[it->second].live = false;
  entries[it->second].key = Value();
  entries[it->second].value = Value();
  index.erase(it);
  // Compact once tombstones dominate, so iteration stays proportional to size.
  if (entries.size() > 16 && index.size() * 2 < entries.size()) {
    std::vector<Entry> live;
    live.reserve(index.size());
    for (auto& e : entries)
      if (e.live) live.push_back(std::move(e));
    entries = std::move(live);
    index.clear();
    for (size_t i = 0; i < entries.size(); ++i) index.emplace(entries[i].key, i);
  }
  return true;
}

std::vector<std::pair<Value, Value>> Dict::items() const {
  std::vector<std::pair<Value, Value>> out;
  out.reserve(index.size());
  for_each([&](const Value& k, const Value& v) { out.emplace_back(k, v); });
  return out;
}

const Value* Class::lookup(std::string_view name) const {
  for (const Class* c = this; c; c = c->base.get())
    if (const Value* v = c->dict->find_str(name)) return v;
  return nullptr;
}

bool Class::is_subclass_of(const Class* other) const {
  for (const Class* c = this; c; c = c->base.get())
    if (c == other) return true;
  return false;
}

int64_t RangeObj::length() const {
  if (step > 0) return start < stop ? (stop - start + step - 1) / step : 0;
  return start > stop ? (start - stop - step - 1) / (-step) : 0;
}

// ---- constructors ----

Value str_value(std::string s) { return Value(make<Str>(std::move(s))); }
Value tuple_value(ValueVec v) { return Value(make<Tuple>(std::move(v))); }
Value list_value(ValueVec v) { return Value(make<List>(std::move(v))); }
Value none() { return Value(); }
Value ellipsis() {
  static Value e = Value(make<EllipsisObj>());
  return e;
}
const Value& unbound() {
  static const Value marker = Value(make<Cell>());
  return marker;
}

Value tensor_value(Tensor t) { return Value(make<TensorObj>(std::move(t))); }

const std::string& as_str(const Value& v) {
  if (!v.is(ObjKind::Str)) throw_type_error("expected str, got " + type_name(v));
  return v.as<Str>()->s;
}

StrChars::StrChars(Str& s) : s_(s.s) {
  if (s.ascii < 0) s.ascii = is_ascii(s.s) ? 1 : 0;
  if (s.ascii) return;
  if (!s.offsets) s.offsets = std::make_shared<const std::vector<size_t>>(utf8_offsets(s.s));
  offsets_ = s.offsets.get();
}

size_t StrChars::index_of(size_t byte_offset) const {
  if (!offsets_) return byte_offset;
  return size_t(std::lower_bound(offsets_->begin(), offsets_->end(), byte_offset) - offsets_->begin());
}

std::string type_name(const Value& v) {
  switch (v.tag()) {
    case Value::Tag::None: return "NoneType";
    case Value::Tag::Bool: return "bool";
    case Value::Tag::Int: return "int";
    case Value::Tag::Float: return "float";
    case Value::Tag::Obj: break;
  }
  switch (v.obj()->kind) {
    case ObjKind::Str: return "str";
    case ObjKind::Tuple: return v.as<Tuple>()->is_size ? "Size" : "tuple";
    case ObjKind::List: return "list";
    case ObjKind::Dict: return v.as<Dict>()->ordered ? "OrderedDict" : "dict";
    case ObjKind::DictView: return dict_view_type_name(*v.as<DictView>());
    case ObjKind::Function: return "function";
    case ObjKind::BoundMethod: return "method";
    case ObjKind::Builtin: return "builtin_function_or_method";
    case ObjKind::Class: return "type";
    case ObjKind::Instance: return v.as<Instance>()->cls->name;
    case ObjKind::Module: return "module";
    case ObjKind::Tensor: return v.as<TensorObj>()->is_parameter ? "Parameter" : "Tensor";
    case ObjKind::DType: return "dtype";
    case ObjKind::Device: return "device";
    case ObjKind::Slice: return "slice";
    case ObjKind::Ellipsis: return "ellipsis";
    case ObjKind::Range: return "range";
    case ObjKind::Iterator: return v.as<IteratorObj>()->type_name;
    case ObjKind::Cell: return "cell";
    case ObjKind::NoGrad: return "no_grad";
    case ObjKind::Super: return "super";
    case ObjKind::Code: return "code";
    case ObjKind::BigInt: return "int";
  }
  return "object";
}

bool is_callable(const Value& v) {
  return v.is(ObjKind::Function) || v.is(ObjKind::Builtin) || v.is(ObjKind::BoundMethod) || v.is(ObjKind::Class) ||
         (v.is(ObjKind::Instance) && v.as<Instance>()->cls->lookup("__call__"));
}

bool truthy(const Value& v) {
  switch (v.tag()) {
    case Value::Tag::None: return false;
    case Value::Tag::Bool: return v.as_bool();
    case Value::Tag::Int: return v.as_int() != 0;
    case Value::Tag::Float: return v.as_float() != 0.0;
    case Value::Tag::Obj: break;
  }
  switch (v.obj()->kind) {
    case ObjKind::Str: return !v.as<Str>()->s.empty();
    case ObjKind::Tuple: return !v.as<Tuple>()->items.empty();
    case ObjKind::List: return !v.as<List>()->items.empty();
    case ObjKind::Dict: return v.as<Dict>()->size() != 0;
    case ObjKind::DictView: return v.as<DictView>()->dict->size() != 0;
    case ObjKind::Range: return v.as<RangeObj>()->length() != 0;
    case ObjKind::BigInt: return true;  // never zero: zero is a small int
    case ObjKind::Tensor: {
      const Tensor& t = v.as<TensorObj>()->t;
      if (t.numel() != 1)
        throw_error("RuntimeError", t.numel() == 0 ? "Boolean value of Tensor with no values is ambiguous"
                                                   : "Boolean value of Tensor with more than one value is ambiguous");
      if (t.is_meta()) throw_error("RuntimeError", "cannot read the value of a fake tensor");
      Scalar s = t.item();
      return s.to_double() != 0.0;
    }
    default: return true;
  }
}

std::string dict_view_type_name(const DictView& view) {
  static const char* const names[] = {"keys", "values", "items"};
  return std::string(view.dict->ordered ? "odict_" : "dict_") + names[int(view.which)];
}

ValueVec dict_view_items(const DictView& view) {
  ValueVec out;
  out.reserve(view.dict->size());
  view.dict->for_each([&](const Value& k, const Value& v) {
    switch (view.which) {
      case DictView::Which::Keys: out.push_back(k); break;
      case DictView::Which::Values: out.push_back(v); break;
      case DictView::Which::Items: out.push_back(tuple_value({k, v})); break;
    }
  });
  return out;
}

bool dict_view_contains(const DictView& view, const Value& item) {
  if (view.which == DictView::Which::Keys) return view.dict->find(item) != nullptr;
  if (!item.is(ObjKind::Tuple) || item.as<Tuple>()->items.size() != 2) return false;
  const ValueVec& kv = item.as<Tuple>()->items;
  const Value* v = view.dict->find(kv[0]);
  return v && (v->same(kv[1]) || equal(*v, kv[1]));
}

namespace {

// Two OrderedDicts are equal only with their keys in the same order.
bool equal_in_order(const Dict& p, const Dict& q) {
  auto a = p.items(), b = q.items();
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i].first, b[i].first) || (!a[i].second.same(b[i].second) && !equal(a[i].second, b[i].second))) return false;
  return true;
}

// keys and items views compare as sets; a values view only to itself.
bool views_equal(const DictView& a, const DictView& b) {
  if (a.which == DictView::Which::Values || b.which == DictView::Which::Values) return false;
  if (a.dict->size() != b.dict->size()) return false;
  for (const Value& item : dict_view_items(a))
    if (!dict_view_contains(b, item)) return false;
  return true;
}

}  // namespace

bool equal(const Value& a, const Value& b) {
  if (a.is(ObjKind::Instance) || b.is(ObjKind::Instance)) {
    const Value* na = numpy_scalar_value(a, false);
    const Value* nb = numpy_scalar_value(b, false);
    if (na || nb) return equal(na ? *na : a, nb ? *nb : b);
  }
  auto numeric = [](const Value& v) { return is_integral(v) || v.is_float(); };
  if (numeric(a) && numeric(b)) {
    if (a.is_float() && b.is_float()) return a.as_float() == b.as_float();
    if (a.is_float()) return int_float_compare(b, a.as_float()) == 0;
    if (b.is_float()) return int_float_compare(a, b.as_float()) == 0;
    return int_compare(a, b) == 0;
  }
  if (a.tag() != b.tag()) return false;
  if (a.is_none()) return true;
  Object* x = a.obj();
  Object* y = b.obj();
  if (x == y) return true;
  if (x->kind != y->kind) return false;
  switch (x->kind) {
    case ObjKind::Str: return static_cast<Str*>(x)->s == static_cast<Str*>(y)->s;
    case ObjKind::Tuple:
    case ObjKind::List: {
      const ValueVec& p = x->kind == ObjKind::Tuple ? static_cast<Tuple*>(x)->items : static_cast<List*>(x)->items;
      const ValueVec& q = y->kind == ObjKind::Tuple ? static_cast<Tuple*>(y)->items : static_cast<List*>(y)->items;
      if (p.size() != q.size()) return false;
      NestingGuard guard(" in comparison");
      for (size_t i = 0; i < p.size(); ++i)
        if (!p[i].same(q[i]) && !equal(p[i], q[i])) return false;
      return true;
    }
    case ObjKind::Dict: {
      auto* p = static_cast<Dict*>(x);
      auto* q = static_cast<Dict*>(y);
      if (p->size() != q->size()) return false;
      NestingGuard guard(" in comparison");
      if (p->ordered && q->ordered) return equal_in_order(*p, *q);
      bool same = true;
      p->for_each([&](const Value& k, const Value& v) {
        if (!same) return;
        const Value* w = q->find(k);
        if (!w || (!v.same(*w) && !equal(v, *w))) same = false;
      });
      return same;
    }
    case ObjKind::DType: return static_cast<DTypeObj*>(x)->dtype == static_cast<DTypeObj*>(y)->dtype;
    case ObjKind::Device: return static_cast<DeviceObj*>(x)->str() == static_cast<DeviceObj*>(y)->str();
    case ObjKind::Range: {
      auto* p = static_cast<RangeObj*>(x);
      auto* q = static_cast<RangeObj*>(y);
      return p->start == q->start && p->stop == q->stop && p->step == q->step;
    }
    case ObjKind::DictView: return views_equal(*static_cast<DictView*>(x), *static_cast<DictView*>(y));
    default: return false;
  }
}

namespace {

// Containers whose repr this thread is building. One met again inside itself
// prints as [...], {...} or (...), as CPython's Py_ReprEnter has it.
thread_local std::vector<const Object*> t_repr_active;

class ReprEnter {
 public:
  explicit ReprEnter(const Object* o) : depth_(" while getting the repr of an object") {
    if (std::find(t_repr_active.begin(), t_repr_active.end(), o) != t_repr_active.end()) {
      cycle_ = true;
      return;
    }
    t_repr_active.push_back(o);
  }
  ~ReprEnter() {
    if (!cycle_) t_repr_active.pop_back();
  }
  ReprEnter(const ReprEnter&) = delete;
  ReprEnter& operator=(const ReprEnter&) = delete;
  bool cycle() const { return cycle_; }

 private:
  NestingGuard depth_;
  bool cycle_ = false;
};

}  // namespace

static std::string seq_repr(const ValueVec& items, const char* open, const char* close, bool one_tuple,
                            const std::function<std::string(const Value&)>& item_repr) {
  std::string out = open;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += item_repr(items[i]);
  }
  if (one_tuple && items.size() == 1) out += ",";
  return out + close;
}

std::string repr_with(const Value& v, const std::function<std::string(const Value&)>& item_repr) {
  switch (v.tag()) {
    case Value::Tag::None: return "None";
    case Value::Tag::Bool: return v.as_bool() ? "True" : "False";
    case Value::Tag::Int: return std::to_string(v.as_int());
    case Value::Tag::Float: return py_float_repr(v.as_float());
    case Value::Tag::Obj: break;
  }
  Object* o = v.obj();
  switch (o->kind) {
    case ObjKind::Str: return py_str_repr(static_cast<Str*>(o)->s);
    case ObjKind::Tuple: {
      auto* t = static_cast<Tuple*>(o);
      if (t->is_size) return seq_repr(t->items, "torch.Size([", "])", false, item_repr);
      ReprEnter enter(o);
      if (enter.cycle()) return "(...)";
      return seq_repr(t->items, "(", ")", true, item_repr);
    }
    case ObjKind::List: {
      ReprEnter enter(o);
      if (enter.cycle()) return "[...]";
      return seq_repr(static_cast<List*>(o)->items, "[", "]", false, item_repr);
    }
    case ObjKind::Dict: {
      auto* d = static_cast<Dict*>(o);
      ReprEnter enter(o);
      // Python 3.12's OrderedDict repr is the dict's inside OrderedDict(...);
      // an empty one prints as OrderedDict().
      if (enter.cycle()) return d->ordered ? "..." : "{...}";
      if (d->ordered && d->size() == 0) return "OrderedDict()";
      std::string out = d->ordered ? "OrderedDict({" : "{";
      bool first = true;
      d->for_each([&](const Value& k, const Value& val) {
        if (!first) out += ", ";
        first = false;
        out += item_repr(k) + ": " + item_repr(val);
      });
      return out + (d->ordered ? "})" : "}");
    }
    case ObjKind::DictView: {
      auto* view = static_cast<DictView*>(o);
      ReprEnter enter(o);
      if (enter.cycle()) return "...";
      return dict_view_type_name(*view) + seq_repr(dict_view_items(*view), "([", "])", false, item_repr);
    }
    case ObjKind::Function: return "<function " + static_cast<Function*>(o)->qualname + ">";
    case ObjKind::BoundMethod: return "<bound method>";
    case ObjKind::Builtin: return "<built-in function " + static_cast<Builtin*>(o)->name + ">";
    case ObjKind::Class: {
      auto* c = static_cast<Class*>(o);
      return "<class '" + (c->module.empty() || c->module == "builtins" ? c->name : c->module + "." + c->name) + "'>";
    }
    case ObjKind::Instance: return "<" + static_cast<Instance*>(o)->cls->name + " object>";
    case ObjKind::Module: return "<module '" + static_cast<Module*>(o)->name + "'>";
    case ObjKind::Tensor: {
      auto* t = static_cast<TensorObj*>(o);
      if (t->t.is_meta()) return "FakeTensor(" + t->t.type_str() + ")";
      TensorReprExtras extras;
      extras.requires_grad = t->requires_grad && t->grad_fn.empty();
      extras.grad_fn = t->grad_fn;
      extras.is_parameter = t->is_parameter;
      if (t->device != "cpu") extras.device = t->device;
      return tensor_repr(t->t, extras);
    }
    case ObjKind::DType: return dtype_repr(static_cast<DTypeObj*>(o)->dtype);
    case ObjKind::Device: return "device(type='" + static_cast<DeviceObj*>(o)->type + "'" +
                                 (static_cast<DeviceObj*>(o)->index >= 0 ? ", index=" + std::to_string(static_cast<DeviceObj*>(o)->index) : "") + ")";
    case ObjKind::Slice: {
      auto* s = static_cast<SliceObj*>(o);
      return "slice(" + item_repr(s->start) + ", " + item_repr(s->stop) + ", " + item_repr(s->step) + ")";
    }
    case ObjKind::Ellipsis: return "Ellipsis";
    case ObjKind::Range: {
      auto* r = static_cast<RangeObj*>(o);
      return "range(" + std::to_string(r->start) + ", " + std::to_string(r->stop) +
             (r->step != 1 ? ", " + std::to_string(r->step) : "") + ")";
    }
    case ObjKind::Iterator: return std::string("<") + static_cast<IteratorObj*>(o)->type_name + " object>";
    case ObjKind::Cell: return "<cell>";
    case ObjKind::NoGrad: return "<torch.autograd.grad_mode.no_grad object>";
    case ObjKind::Super: return "<super object>";
    case ObjKind::Code: return "<code object " + static_cast<CodeObj*>(o)->code->name + ">";
    case ObjKind::BigInt: return int_to_string(v);
  }
  return "<object>";
}

std::string repr(const Value& v) { return repr_with(v, [](const Value& x) { return repr(x); }); }

std::string str(const Value& v) {
  if (v.is(ObjKind::Str)) return v.as<Str>()->s;
  return repr(v);
}

}  // namespace kiln::py
