#pragma once
// The interpreter's object model. A Value is 16 bytes: None, bool, int and
// float are held inline; everything else is a reference-counted Object. The
// kinds are a closed set (the subset has no metaclasses or C extensions), so
// dispatch is a switch on Object::kind rather than virtual calls.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/python/code.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::py {

enum class ObjKind : uint8_t {
  Str, Tuple, List, Dict, Function, BoundMethod, Builtin, Class, Instance, Module,
  Tensor, DType, Device, Slice, Ellipsis, Range, Iterator, Cell, NoGrad, Super, Code,
  BigInt,  // an int outside int64 (bigint.h); smaller ints are inline Values
  DictView,
};

class VM;

// Objects are numbered as they are created, so capture can tell an object made
// inside a traced region from one that existed before it.
inline uint64_t next_object_serial() {
  static uint64_t counter = 0;
  return ++counter;
}

struct Object {
  explicit Object(ObjKind k) : kind(k), serial(next_object_serial()) {}
  virtual ~Object() = default;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  mutable int64_t refs = 0;
  const ObjKind kind;
  const uint64_t serial;
};

// Intrusive reference to an Object subtype.
template <class T>
class Ref {
 public:
  Ref() = default;
  Ref(T* p) : p_(p) { if (p_) ++p_->refs; }  // NOLINT
  Ref(const Ref& o) : p_(o.p_) { if (p_) ++p_->refs; }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <class U>
  Ref(const Ref<U>& o) : Ref(static_cast<T*>(o.get())) {}  // NOLINT
  ~Ref() { release(); }
  Ref& operator=(Ref o) noexcept { std::swap(p_, o.p_); return *this; }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  void release() { if (p_ && --p_->refs == 0) delete p_; }
  T* p_ = nullptr;
};

template <class T, class... A>
Ref<T> make(A&&... a) { return Ref<T>(new T(std::forward<A>(a)...)); }

class Value {
 public:
  enum class Tag : uint8_t { None, Bool, Int, Float, Obj };
  Value() = default;
  Value(bool b) : tag_(Tag::Bool) { u_.b = b; }          // NOLINT
  Value(int v) : tag_(Tag::Int) { u_.i = v; }            // NOLINT
  Value(int64_t v) : tag_(Tag::Int) { u_.i = v; }        // NOLINT
  Value(double v) : tag_(Tag::Float) { u_.f = v; }       // NOLINT
  Value(Object* o);                                      // NOLINT
  template <class T>
  Value(const Ref<T>& r) : Value(static_cast<Object*>(r.get())) {}  // NOLINT
  Value(const Value& o) : tag_(o.tag_), u_(o.u_) { if (tag_ == Tag::Obj) ++u_.o->refs; }
  Value(Value&& o) noexcept : tag_(o.tag_), u_(o.u_) { o.tag_ = Tag::None; }
  Value& operator=(Value o) noexcept { std::swap(tag_, o.tag_); std::swap(u_, o.u_); return *this; }
  ~Value() { if (tag_ == Tag::Obj && --u_.o->refs == 0) delete u_.o; }

  Tag tag() const { return tag_; }
  bool is_none() const { return tag_ == Tag::None; }
  bool is_bool() const { return tag_ == Tag::Bool; }
  bool is_int() const { return tag_ == Tag::Int; }      // not bool
  bool is_float() const { return tag_ == Tag::Float; }
  bool is_obj() const { return tag_ == Tag::Obj; }
  bool is(ObjKind k) const { return tag_ == Tag::Obj && u_.o->kind == k; }
  bool as_bool() const { return u_.b; }
  int64_t as_int() const { return u_.i; }
  double as_float() const { return u_.f; }
  Object* obj() const { return u_.o; }
  template <class T>
  T* as() const { return static_cast<T*>(u_.o); }
  // Identity, as Python's `is`.
  bool same(const Value& o) const;

 private:
  Tag tag_ = Tag::None;
  union U { bool b; int64_t i; double f; Object* o; } u_{};
};

using ValueVec = std::vector<Value>;

// A Python-level exception as it unwinds through C++. Errors the interpreter
// and the bindings raise carry a type name and message; `raise` in a program
// carries the exception object itself in `value`. `unsupported` marks what
// lies outside the subset (exit code 3); such errors, and the limits that stop
// a program (time, steps, cancel), are `uncatchable`: no `except` clause sees them.
class PyError : public std::runtime_error {
 public:
  PyError(std::string type, std::string message, bool unsupported = false)
      : std::runtime_error(type + ": " + message), type_(std::move(type)),
        message_(std::move(message)), unsupported_(unsupported), uncatchable_(unsupported) {}
  const std::string& type() const { return type_; }
  const std::string& message() const { return message_; }
  bool unsupported() const { return unsupported_; }
  bool uncatchable() const { return uncatchable_; }
  PyError& make_uncatchable() { uncatchable_ = true; return *this; }
  // Filled by the VM as the error unwinds: innermost frame last, as Python prints it.
  std::vector<std::string> traceback;
  SourceLocation where;  // innermost location in the program's own code (else in Kiln's Python)
  bool where_in_program = false;
  Value value;           // the exception object, once a handler or `raise` made one
  // A re-raise from the frame that caught the exception: its line is in the
  // traceback already, as CPython does not repeat it.
  const void* recorded_frame = nullptr;
  // "During handling of the above exception..." / "The above exception was the
  // direct cause...": the text of the chained exceptions, printed before this one.
  std::string chain_text;

 private:
  std::string type_, message_;
  bool unsupported_, uncatchable_;
};

[[noreturn]] void throw_type_error(const std::string& msg);
[[noreturn]] void throw_error(const std::string& type, const std::string& msg);
[[noreturn]] void throw_unsupported(const std::string& msg);

struct Str : Object {
  explicit Str(std::string s) : Object(ObjKind::Str), s(std::move(s)) {}
  std::string s;  // UTF-8
  size_t hash = 0;  // 0 = not computed
  // Python indexes code points. ASCII text indexes its bytes; other text the
  // byte offsets of its code points, made on first use (StrChars).
  int8_t ascii = -1;  // -1: not looked at yet
  std::shared_ptr<const std::vector<size_t>> offsets;
};

// A str as Python sees it, a sequence of code points.
class StrChars {
 public:
  explicit StrChars(Str& s);
  explicit StrChars(const Value& v) : StrChars(*v.as<Str>()) {}
  size_t size() const { return offsets_ ? offsets_->size() - 1 : s_.size(); }
  // Code point i as its UTF-8 bytes.
  std::string_view at(size_t i) const { return std::string_view(s_).substr(begin(i), begin(i + 1) - begin(i)); }
  // Code points [a, b) as bytes; i == size() is the end.
  std::string_view range(size_t a, size_t b) const { return std::string_view(s_).substr(begin(a), begin(b) - begin(a)); }
  size_t begin(size_t i) const { return offsets_ ? (*offsets_)[i] : i; }
  // The code point index of a byte offset on a code point boundary.
  size_t index_of(size_t byte_offset) const;
  bool ascii() const { return !offsets_; }

 private:
  const std::string& s_;
  const std::vector<size_t>* offsets_ = nullptr;
};

struct Tuple : Object {
  Tuple() : Object(ObjKind::Tuple) {}
  explicit Tuple(ValueVec v, bool size = false) : Object(ObjKind::Tuple), items(std::move(v)), is_size(size) {}
  ValueVec items;
  bool is_size = false;  // torch.Size: a tuple of ints that prints as torch.Size([...])
};

struct List : Object {
  List() : Object(ObjKind::List) {}
  explicit List(ValueVec v) : Object(ObjKind::List), items(std::move(v)) {}
  ValueVec items;
};

struct ValueHash { size_t operator()(const Value& v) const; };
struct ValueKeyEq { bool operator()(const Value& a, const Value& b) const; };

// Insertion-ordered, as Python's dict.
struct Dict : Object {
  Dict() : Object(ObjKind::Dict) {}
  const Value* find(const Value& key) const;
  Value* find(const Value& key);
  const Value* find_str(std::string_view key) const;
  void set(const Value& key, Value value);
  bool erase(const Value& key);
  size_t size() const { return index.size(); }
  // Live entries in insertion order.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& e : entries) if (e.live) f(e.key, e.value);
  }
  std::vector<std::pair<Value, Value>> items() const;
  struct Entry { Value key, value; bool live = true; };
  std::vector<Entry> entries;
  std::unordered_map<Value, size_t, ValueHash, ValueKeyEq> index;
  // collections.OrderedDict: the same table, with its own repr, its views'
  // names, order-sensitive == between two of them, and move_to_end.
  bool ordered = false;
};

// dict.keys()/values()/items(): a live view of its dict, as CPython's, so a
// view taken before an insertion shows the new key and prints as
// dict_keys([...]) (odict_keys for an OrderedDict).
struct DictView : Object {
  enum class Which : uint8_t { Keys, Values, Items };
  DictView(Ref<Dict> d, Which w) : Object(ObjKind::DictView), dict(std::move(d)), which(w) {}
  Ref<Dict> dict;
  Which which;
};
// dict(pairs) and d.update(pairs): each item a (key, value) pair, else
// CPython's ValueError. In builtin_methods.cpp.
void update_from_pairs(VM& vm, Dict& d, const Value& pairs);
std::string dict_view_type_name(const DictView& view);  // "dict_keys", "odict_items"
ValueVec dict_view_items(const DictView& view);         // keys, values or (key, value) tuples, in order
// `item in view` for keys and items, by hash and ==, as the set-like views are.
bool dict_view_contains(const DictView& view, const Value& item);

struct Cell : Object {
  Cell() : Object(ObjKind::Cell) {}
  Value value;
  bool bound = false;
};

struct Class;

struct Function : Object {
  Function() : Object(ObjKind::Function) {}
  CodePtr code;
  Ref<Dict> globals;
  ValueVec defaults;                 // for the last len(defaults) positional parameters
  Ref<Dict> kwdefaults;              // may be null
  std::vector<Ref<Cell>> closure;    // one per code->freevars
  std::string name, qualname;
  Class* owner = nullptr;            // set when defined in a class body (for zero-argument super())
  Ref<Dict> attrs;                   // function attributes (__name__ is computed)
  // Consts converted to Values, once per function object.
  std::shared_ptr<ValueVec> consts;
};

struct BoundMethod : Object {
  BoundMethod(Value s, Value f) : Object(ObjKind::BoundMethod), self(std::move(s)), func(std::move(f)) {}
  Value self, func;
};

// Positional and keyword arguments of one call, without copies of the caller's stack.
struct CallArgs {
  const Value* pos = nullptr;
  size_t npos = 0;
  const std::vector<std::pair<std::string, Value>>* kw = nullptr;
  size_t size() const { return npos; }
  const Value& operator[](size_t i) const { return pos[i]; }
  bool has_kwargs() const { return kw && !kw->empty(); }
  const Value* kwarg(std::string_view name) const;
};

using BuiltinFn = std::function<Value(VM&, const CallArgs&)>;

struct Builtin : Object {
  Builtin(std::string n, BuiltinFn f) : Object(ObjKind::Builtin), name(std::move(n)), fn(std::move(f)) {}
  std::string name;      // qualified, as Python shows it: "print", "torch.sin", "list.append"
  BuiltinFn fn;
  Value self;            // bound receiver for methods of builtin types (None otherwise)
  bool has_self = false;
  const void* tag = nullptr;  // identity for capture (e.g. the torch callable it wraps)
};

// Classes: user classes from `class` statements and the builtin types (int,
// list, torch.Tensor, ...), which have `builtin` set and no user methods.
struct Class : Object {
  Class(std::string n, Ref<Class> b) : Object(ObjKind::Class), name(std::move(n)), base(std::move(b)) {}
  std::string name, qualname, module = "__main__";
  Ref<Class> base;
  Ref<Dict> dict = make<Dict>();
  int builtin = -1;  // a BuiltinType value for builtin types
  // A property somewhere along the base chain: instance attribute reads look
  // in the class first then (a property outranks the instance's dict).
  bool has_property = false;
  // Looks `name` up along the base chain.
  const Value* lookup(std::string_view name) const;
  bool is_subclass_of(const Class* other) const;
};

struct Instance : Object {
  explicit Instance(Ref<Class> c) : Object(ObjKind::Instance), cls(std::move(c)) {}
  Ref<Class> cls;
  Ref<Dict> dict = make<Dict>();
  // For an exception that was raised: how it unwound (traceback, location),
  // kept for a re-raise and for printing it as the cause of another.
  std::shared_ptr<const PyError> raised;
};

struct Module : Object {
  explicit Module(std::string n) : Object(ObjKind::Module), name(std::move(n)) {}
  std::string name;
  Ref<Dict> dict = make<Dict>();
};

// What capture attaches to a tensor it traces: the graph value it stands for.
struct FakeTensorInfo {
  virtual ~FakeTensorInfo() = default;
};

namespace autograd {
struct Node;
}

struct TensorObj : Object {
  explicit TensorObj(Tensor t) : Object(ObjKind::Tensor), t(std::move(t)) {}
  Tensor t;                  // real data, or a meta tensor while it is fake
  bool requires_grad = false;
  bool is_parameter = false;
  bool retains_grad = false;  // retain_grad() on a non-leaf: backward fills its .grad too
  std::string grad_fn;       // name shown in repr ("AddBackward0"); empty for leaves
  Value grad;
  // Eager autograd (core/python/autograd.h): the node that made this tensor
  // and which of its outputs it is; for a leaf, the node that accumulates
  // into .grad (weak: the node holds the leaf).
  std::shared_ptr<autograd::Node> grad_node;
  uint32_t output_nr = 0;
  std::weak_ptr<autograd::Node> grad_accumulator;
  std::string device = "cpu";
  std::shared_ptr<FakeTensorInfo> fake;  // set while the tensor is a capture-time fake
  // The tensor this one views (the root, for a view of a view): an in-place
  // write into the view gives the base its new history, as PyTorch's
  // CopySlices. Null for tensors owning their memory and for detached views.
  Ref<TensorObj> view_base;
  // Storage::history_writes() when this tensor's history was last right.
  uint64_t history_seen = 0;
};

struct DTypeObj : Object {
  explicit DTypeObj(DType d) : Object(ObjKind::DType), dtype(d) {}
  DType dtype;
};

struct DeviceObj : Object {
  DeviceObj(std::string t, int idx) : Object(ObjKind::Device), type(std::move(t)), index(idx) {}
  std::string type;
  int index = -1;
  std::string str() const { return index < 0 ? type : type + ":" + std::to_string(index); }
};

struct SliceObj : Object {
  SliceObj(Value a, Value b, Value c) : Object(ObjKind::Slice), start(std::move(a)), stop(std::move(b)), step(std::move(c)) {}
  Value start, stop, step;
};

struct EllipsisObj : Object {
  EllipsisObj() : Object(ObjKind::Ellipsis) {}
};

struct RangeObj : Object {
  RangeObj(int64_t a, int64_t b, int64_t s) : Object(ObjKind::Range), start(a), stop(b), step(s) {}
  int64_t start, stop, step;
  int64_t length() const;
};

// One iterator kind with a `next` closure; the subset has no generators.
struct IteratorObj : Object {
  explicit IteratorObj(std::function<bool(Value&)> n) : Object(ObjKind::Iterator), next(std::move(n)) {}
  std::function<bool(Value&)> next;  // false when exhausted
  const char* type_name = "iterator";  // "generator" for a generator function's
};

struct NoGradObj : Object {
  explicit NoGradObj(bool enable) : Object(ObjKind::NoGrad), enable_grad(enable) {}
  bool enable_grad;     // torch.enable_grad() vs torch.no_grad()
  bool saved = true;    // grad mode before __enter__
};

struct CodeObj : Object {
  explicit CodeObj(CodePtr c) : Object(ObjKind::Code), code(std::move(c)) {}
  CodePtr code;
};

struct SuperObj : Object {
  SuperObj(Ref<Class> c, Value s) : Object(ObjKind::Super), cls(std::move(c)), self(std::move(s)) {}
  Ref<Class> cls;  // lookups start after this class
  Value self;
};

// ---- constructors and accessors ----
Value str_value(std::string s);
Value tuple_value(ValueVec v);
Value list_value(ValueVec v);
Value none();
Value ellipsis();
Value tensor_value(Tensor t);
const std::string& as_str(const Value& v);  // TypeError unless str

// The type name Python shows in messages: "int", "list", "Tensor", "Net".
std::string type_name(const Value& v);
bool truthy(const Value& v);  // tensors: only one-element ones, else RuntimeError as PyTorch
bool is_callable(const Value& v);  // Python's callable(): functions, builtins, classes, instances with __call__

// repr() and str() of any value, as CPython and PyTorch print them.
std::string repr(const Value& v);
std::string str(const Value& v);
// format(v, spec), as f-strings, str.format and format() call it: the
// mini-language for ints of any size, bools, floats and strs, a user class's
// __format__, the tensor's; any other value takes only an empty spec
// (str(v)), as object.__format__. Defined in builtin_methods.cpp.
std::string format_with_spec(VM& vm, const Value& v, std::string_view spec);
// A repr() text with its non-ASCII code points escaped (\xe9, \u2603,
// \U0001f600), as ascii() and the '!a' conversion. In builtin_methods.cpp.
std::string ascii_of(const std::string& repr_text);
// repr() with a caller-chosen repr for contained items (user classes' __repr__).
std::string repr_with(const Value& v, const std::function<std::string(const Value&)>& item_repr);
// The marker held by unbound locals.
const Value& unbound();
inline bool is_unbound(const Value& v) { return v.is_obj() && v.obj() == unbound().obj(); }

// ==, as Python (1 == 1.0 == True, exactly: 2**53 + 1 != 2.0**53;
// containers element-wise, an item identical to its counterpart equal without
// a look inside, as CPython's PyObject_RichCompareBool; tensors are not
// handled here). RecursionError "in comparison" past kMaxNesting levels.
bool equal(const Value& a, const Value& b);

// How deep repr, ==, ordering, hashing and the torch conversions may descend
// into nested containers, as CPython's recursion limit bounds them: a list
// nested 10**5 deep, or == on two lists that contain themselves, would
// otherwise overflow the C++ stack.
inline constexpr int kMaxNesting = 1000;

// Counts one level of such a descent while alive (one counter per thread,
// shared by all of them as CPython's). Past kMaxNesting: RecursionError
// "maximum recursion depth exceeded" followed by `context` (" in comparison").
class NestingGuard {
 public:
  explicit NestingGuard(const char* context);
  ~NestingGuard();
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;
};

}  // namespace kiln::py
