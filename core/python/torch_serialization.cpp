// torch.save and torch.load in PyTorch's own file format, so a checkpoint
// Kiln writes loads in PyTorch and one PyTorch wrote loads here: a ZIP store
// (core/io/zip_store.h) of `<archive>/data.pkl`, one record per tensor storage
// (`<archive>/data/<key>`) and the version records. data.pkl is a protocol-2
// pickle in which each tensor is torch._utils._rebuild_tensor_v2 of a storage
// named by a persistent id, so views of one storage stay views after loading.
//
// Unpickling runs no code: as PyTorch's weights_only loader (its default
// since 2.6), only tensors, parameters, storages, OrderedDict, torch.Size,
// devices, sets and plain values are rebuilt; any other global is refused by
// name. Saving takes the same kinds of objects; a module or another object is
// refused (save its state_dict()).
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/io/zip_store.h"
#include "core/python/torch_api.h"
#include "core/python/torch_convert.h"
#include "core/python/vm.h"
#include "core/util/limits.h"

namespace kiln::py {

namespace {

constexpr int kMaxDepth = 200;  // nesting that a pickle or a saved object may have

const char* storage_class(DType d) {
  switch (d) {
    case DType::Float32: return "FloatStorage";
    case DType::Float64: return "DoubleStorage";
    case DType::Float16: return "HalfStorage";
    case DType::BFloat16: return "BFloat16Storage";
    case DType::Int64: return "LongStorage";
    case DType::Int32: return "IntStorage";
    case DType::Int16: return "ShortStorage";
    case DType::Int8: return "CharStorage";
    case DType::UInt8: return "ByteStorage";
    case DType::Bool: return "BoolStorage";
  }
  return nullptr;
}

// ---- saving ----

class Pickler {
 public:
  void dump(const Value& v) {
    op(0x80);
    op(2);
    value(v, 0);
    op('.');
  }
  std::vector<std::byte> bytes;
  // Storages in key order, each with the tensor whose storage it is.
  std::vector<Tensor> storages;

 private:
  void op(int c) { bytes.push_back(std::byte(c)); }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  void u32(uint32_t v) { raw(&v, 4); }
  void global(const char* module, const char* name) {
    op('c');
    raw(module, std::strlen(module));
    op('\n');
    raw(name, std::strlen(name));
    op('\n');
  }
  void str(const std::string& s) {
    op('X');
    u32(uint32_t(s.size()));
    raw(s.data(), s.size());
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      op(int(v));
    } else if (v >= 0 && v < 65536) {
      op('M');
      op(int(v & 0xff));
      op(int(v >> 8));
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      int32_t x = int32_t(v);
      raw(&x, 4);
    } else {
      op(0x8a);
      op(8);
      raw(&v, 8);
    }
  }
  void tuple(const ValueVec& items, int depth) {
    if (items.empty()) return op(')');
    if (items.size() > 3) op('(');
    for (const Value& v : items) value(v, depth + 1);
    op(items.size() == 1 ? 0x85 : items.size() == 2 ? 0x86 : items.size() == 3 ? 0x87 : 't');
  }
  void empty_ordered_dict() {
    global("collections", "OrderedDict");
    op(')');
    op('R');
  }
  void tensor(const TensorObj& obj) {
    const Tensor& t = obj.t;
    if (t.is_meta() || obj.device != "cpu")
      throw_unsupported("torch.save of a tensor on '" + obj.device + "' (Kiln saves CPU tensors; call .cpu() first)");
    const char* cls = storage_class(t.dtype());
    if (!cls) throw_unsupported("torch.save of a " + std::string(dtype_name(t.dtype())) + " tensor");
    if (obj.is_parameter) global("torch._utils", "_rebuild_parameter");
    global("torch._utils", "_rebuild_tensor_v2");
    // Arguments: (storage, offset, size, stride, requires_grad, backward_hooks).
    op('(');
    size_t key = 0;
    while (key < storages.size() && storages[key].storage() != t.storage()) ++key;
    if (key == storages.size()) storages.push_back(t);
    const int64_t numel = int64_t(t.storage()->nbytes() / t.itemsize());
    op('(');
    str("storage");
    global("torch", cls);
    str(std::to_string(key));
    str("cpu");
    integer(numel);
    op('t');
    op('Q');
    integer(t.storage_offset());
    ValueVec sizes, strides;
    for (int64_t s : t.sizes()) sizes.push_back(Value(s));
    for (int64_t s : t.strides()) strides.push_back(Value(s));
    tuple(sizes, 0);
    tuple(strides, 0);
    op(obj.is_parameter ? 0x89 : (obj.requires_grad ? 0x88 : 0x89));
    empty_ordered_dict();
    op('t');
    op('R');
    if (obj.is_parameter) {
      // _rebuild_parameter(data, requires_grad, backward_hooks)
      op(obj.requires_grad ? 0x88 : 0x89);
      empty_ordered_dict();
      op(0x87);
      op('R');
    }
  }
  void value(const Value& v, int depth) {
    if (depth > kMaxDepth) throw PyError("RecursionError", "torch.save: the object nests deeper than " + std::to_string(kMaxDepth));
    switch (v.tag()) {
      case Value::Tag::None: return op('N');
      case Value::Tag::Bool: return op(v.as_bool() ? 0x88 : 0x89);
      case Value::Tag::Int: return integer(v.as_int());
      case Value::Tag::Float: {
        op('G');
        uint64_t bits;
        double d = v.as_float();
        std::memcpy(&bits, &d, 8);
        for (int i = 7; i >= 0; --i) op(int((bits >> (8 * i)) & 0xff));
        return;
      }
      case Value::Tag::Obj: break;
    }
    if (v.is(ObjKind::Str)) return str(v.as<Str>()->s);
    if (v.is(ObjKind::Tensor)) return tensor(*v.as<TensorObj>());
    if (v.is(ObjKind::Tuple)) {
      const Tuple* t = v.as<Tuple>();
      if (t->is_size) {
        global("torch", "Size");
        tuple({list_value(t->items)}, depth);
        return op('R');
      }
      return tuple(t->items, depth);
    }
    if (v.is(ObjKind::List)) {
      op(']');
      const ValueVec& items = v.as<List>()->items;
      if (items.empty()) return;
      op('(');
      for (const Value& x : items) value(x, depth + 1);
      return op('e');
    }
    if (v.is(ObjKind::Dict)) {
      const Dict* d = v.as<Dict>();
      // An OrderedDict (a state dict) is rebuilt as one, as pickle writes it.
      if (d->ordered) empty_ordered_dict();
      else op('}');
      if (d->size() == 0) return;
      op('(');
      d->for_each([&](const Value& k, const Value& x) {
        value(k, depth + 1);
        value(x, depth + 1);
      });
      return op('u');
    }
    if (v.is(ObjKind::Device)) {
      global("torch", "device");
      tuple({str_value(v.as<DeviceObj>()->str())}, depth);
      return op('R');
    }
    throw_unsupported("torch.save of a " + type_name(v) +
                      " (Kiln saves tensors, containers, numbers and strings: save a module's state_dict())");
  }
};

Value torch_save(VM& vm, const CallArgs& a) {
  const Value* obj = a.npos > 0 ? &a[0] : a.kwarg("obj");
  const Value* f = a.npos > 1 ? &a[1] : a.kwarg("f");
  if (!obj || !f) throw_type_error("save() missing required arguments: 'obj' and 'f'");
  if (!f->is(ObjKind::Str))
    throw_unsupported("torch.save to a " + type_name(*f) + " (Kiln writes to a file path; the subset has no bytes buffers)");
  const std::string path = program_file_path(vm, as_str(*f), /*write=*/true);
  Pickler p;
  p.dump(*obj);
  // PyTorch names the archive folder after the file: "ckpt.pt" -> "ckpt/".
  std::string base = as_str(*f);
  if (size_t slash = base.rfind('/'); slash != std::string::npos) base = base.substr(slash + 1);
  if (size_t dot = base.rfind('.'); dot != std::string::npos && dot > 0) base = base.substr(0, dot);
  if (base.empty()) base = "archive";
  // The records in the order PyTorch writes them; the small ones kept here
  // (reserved, so the spans into them stay valid).
  std::vector<std::pair<std::string, std::vector<std::byte>>> small;
  small.reserve(7);
  auto add = [&](const std::string& name, const std::string& text) {
    small.emplace_back(base + "/" + name, std::vector<std::byte>(reinterpret_cast<const std::byte*>(text.data()),
                                                                 reinterpret_cast<const std::byte*>(text.data()) + text.size()));
  };
  small.emplace_back(base + "/data.pkl", std::move(p.bytes));
  add(".format_version", "1");
  add(".storage_alignment", "64");
  add("byteorder", "little");
  add("version", "3\n");
  add(".data/serialization_id", "0000000000000000000000000000000000000000");
  std::vector<ZipRecord> records;
  for (size_t i = 0; i < 4; ++i) records.push_back({small[i].first, small[i].second});
  for (size_t k = 0; k < p.storages.size(); ++k) {
    const auto& storage = p.storages[k].storage();
    records.push_back({base + "/data/" + std::to_string(k), {static_cast<const std::byte*>(storage->data()), storage->nbytes()}});
  }
  for (size_t i = 4; i < small.size(); ++i) records.push_back({small[i].first, small[i].second});
  Status s = write_zip_store(path, records);
  if (!s.ok()) throw PyError("RuntimeError", s.message());
  return Value();
}

// ---- loading ----

class Unpickler {
 public:
  Unpickler(VM& vm, const ZipStore& zip, std::string prefix, std::string file, bool weights_only)
      : vm_(vm), zip_(zip), prefix_(std::move(prefix)), file_(std::move(file)), weights_only_(weights_only) {}

  Value load(std::span<const std::byte> data) {
    data_ = data;
    while (true) {
      const int c = byte();
      switch (c) {
        case 0x80: byte(); break;  // PROTO
        case 0x95: take(8); break;  // FRAME
        case '.': {
          if (stack_.size() != 1) bad("STOP with " + std::to_string(stack_.size()) + " values on the stack");
          return stack_.back();
        }
        case 'N': push(Value()); break;
        case 0x88: push(Value(true)); break;
        case 0x89: push(Value(false)); break;
        case 'K': push(Value(int64_t(byte()))); break;
        case 'M': { int64_t lo = byte(); push(Value(lo | int64_t(byte()) << 8)); break; }
        case 'J': { int32_t v; std::memcpy(&v, take(4), 4); push(Value(int64_t(v))); break; }
        case 0x8a: {
          const int n = byte();
          if (n > 8) bad("an integer of " + std::to_string(n) + " bytes");
          const std::byte* p = take(size_t(n));
          uint64_t v = 0;
          for (int i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
          if (n > 0 && n < 8 && (uint64_t(p[n - 1]) & 0x80)) v |= ~uint64_t(0) << (8 * n);
          push(Value(int64_t(v)));
          break;
        }
        case 'G': {
          const std::byte* p = take(8);
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = bits << 8 | uint64_t(p[i]);
          double d;
          std::memcpy(&d, &bits, 8);
          push(Value(d));
          break;
        }
        case 'X': { uint32_t n; std::memcpy(&n, take(4), 4); push(text(n)); break; }
        case 0x8c: push(text(size_t(byte()))); break;
        case ']': push(list_value({})); break;
        case '}': push(Value(make<Dict>())); break;
        case ')': push(tuple_value({})); break;
        case '(': marks_.push_back(stack_.size()); break;
        case 't': push(tuple_value(pop_mark())); break;
        case 0x85: case 0x86: case 0x87: {
          const size_t n = size_t(c - 0x84);
          need(n);
          ValueVec items(stack_.end() - long(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push(tuple_value(std::move(items)));
          break;
        }
        case 'a': { Value x = pop(); list_of(top()).push_back(std::move(x)); break; }
        case 'e': { ValueVec items = pop_mark(); ValueVec& l = list_of(top()); l.insert(l.end(), items.begin(), items.end()); break; }
        case 's': { Value v = pop(), k = pop(); dict_of(top()).set(k, v); break; }
        case 'u': {
          ValueVec items = pop_mark();
          if (items.size() % 2) bad("SETITEMS with an odd count");
          Dict& d = dict_of(top());
          for (size_t i = 0; i < items.size(); i += 2) d.set(items[i], items[i + 1]);
          break;
        }
        case 'q': memo(byte()); break;
        case 'r': { uint32_t n; std::memcpy(&n, take(4), 4); memo(n); break; }
        case 0x94: memo(memo_.size()); break;
        case 'h': push(recall(byte())); break;
        case 'j': { uint32_t n; std::memcpy(&n, take(4), 4); push(recall(n)); break; }
        case 'c': {
          std::string module = line(), name = line();
          push(global(module, name));
          break;
        }
        case 0x93: {
          Value name = pop(), module = pop();
          if (!module.is(ObjKind::Str) || !name.is(ObjKind::Str)) bad("STACK_GLOBAL of non-strings");
          push(global(as_str(module), as_str(name)));
          break;
        }
        case 'Q': push(persistent(pop())); break;
        case 'R': { Value args = pop(), fn = pop(); push(reduce(fn, args)); break; }
        case 0x81: { Value args = pop(), cls = pop(); push(reduce(cls, args)); break; }
        case 'b': pop(); break;  // BUILD: OrderedDict._metadata and hooks' state carry nothing Kiln keeps
        default: bad("pickle opcode 0x" + hex(c) + " (Kiln reads the opcodes torch.save writes)");
      }
      if (stack_.size() > 10'000'000) bad("more than 10 million values on the stack");
    }
  }

 private:
  [[noreturn]] void bad(const std::string& why) {
    throw PyError("UnpicklingError", file_ + ": data.pkl at byte " + std::to_string(pos_) + ": " + why);
  }
  static std::string hex(int c) {
    const char* d = "0123456789abcdef";
    return std::string{d[(c >> 4) & 15], d[c & 15]};
  }
  int byte() { return int(*take(1)); }
  const std::byte* take(size_t n) {
    if (n > data_.size() - pos_) bad("the pickle ends early");
    const std::byte* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }
  Value text(size_t n) {
    const std::byte* p = take(n);
    return str_value(std::string(reinterpret_cast<const char*>(p), n));
  }
  std::string line() {
    std::string s;
    while (true) {
      const int c = byte();
      if (c == '\n') return s;
      s.push_back(char(c));
      if (s.size() > 1000) bad("a GLOBAL name longer than 1000 bytes");
    }
  }
  void push(Value v) { stack_.push_back(std::move(v)); }
  void need(size_t n) {
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() < floor + n) bad("stack underflow");
  }
  Value pop() {
    need(1);
    Value v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Value& top() {
    need(1);
    return stack_.back();
  }
  ValueVec pop_mark() {
    if (marks_.empty()) bad("no MARK");
    const size_t m = marks_.back();
    marks_.pop_back();
    ValueVec items(stack_.begin() + long(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  ValueVec& list_of(Value& v) {
    if (!v.is(ObjKind::List)) bad("APPEND to a " + type_name(v));
    return v.as<List>()->items;
  }
  Dict& dict_of(Value& v) {
    if (!v.is(ObjKind::Dict)) bad("SETITEM on a " + type_name(v));
    return *v.as<Dict>();
  }
  void memo(size_t i) {
    if (i > 100'000'000) bad("memo index out of range");
    if (memo_.size() <= i) memo_.resize(i + 1);
    memo_[i] = top();
  }
  Value recall(size_t i) {
    if (i >= memo_.size()) bad("memo index " + std::to_string(i) + " was never stored");
    return memo_[i];
  }
  // Globals stand as their names; reduce() knows what each builds.
  Value global(const std::string& module, const std::string& name) {
    static const char* const allowed[][2] = {
        {"torch._utils", "_rebuild_tensor_v2"}, {"torch._utils", "_rebuild_parameter"},
        {"torch._utils", "_rebuild_parameter_with_state"}, {"collections", "OrderedDict"}, {"torch", "Size"},
        {"torch", "device"}, {"builtins", "set"}, {"builtins", "frozenset"}, {"__builtin__", "set"}};
    std::string full = module + "." + name;
    for (const auto& [m, n] : allowed)
      if (module == m && name == n) return tuple_value({str_value("global"), str_value(full)});
    if (module == "torch" && name.ends_with("Storage")) return tuple_value({str_value("global"), str_value(full)});
    // PyTorch's weights_only loader (the default) refuses it too, catchably;
    // with weights_only=False PyTorch would run it, which Kiln never does.
    if (weights_only_)
      throw PyError("UnpicklingError", file_ + ": Weights only load failed: unsupported class " + full +
                                           " (torch.load rebuilds tensors, parameters, containers and plain values)");
    throw_unsupported(file_ + ": torch.load(weights_only=False) of a file that calls " + full +
                      " (Kiln rebuilds tensors, parameters, containers and plain values only; it runs no code from a file)");
  }
  std::string global_name(const Value& v) {
    if (!v.is(ObjKind::Tuple) || v.as<Tuple>()->items.size() != 2 || as_str(v.as<Tuple>()->items[0]) != "global")
      bad("REDUCE of a " + type_name(v));
    return as_str(v.as<Tuple>()->items[1]);
  }
  Value persistent(const Value& pid) {
    // ('storage', torch.<T>Storage, key, location, numel)
    if (!pid.is(ObjKind::Tuple) || pid.as<Tuple>()->items.size() != 5) bad("a persistent id that is not a storage");
    const ValueVec& p = pid.as<Tuple>()->items;
    if (!p[0].is(ObjKind::Str) || as_str(p[0]) != "storage" || !p[2].is(ObjKind::Str) || !p[4].is_int())
      bad("a persistent id that is not a storage");
    const std::string cls = global_name(p[1]);
    DType dtype = DType::Float32;
    bool found = false;
    for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64, DType::Int32,
                    DType::Int16, DType::Int8, DType::UInt8, DType::Bool})
      if (cls == std::string("torch.") + storage_class(d)) dtype = d, found = true;
    if (!found) throw_unsupported(file_ + ": storage type " + cls + " (not a dtype Kiln has)");
    const std::string key = as_str(p[2]);
    if (auto it = storages_.find(key); it != storages_.end()) return tensor_value(it->second);
    const ZipStore::Entry* e = zip_.find(prefix_ + "data/" + key);
    if (!e) bad("storage '" + key + "' has no record " + prefix_ + "data/" + key);
    const int64_t numel = p[4].as_int();
    const size_t item = element_size(dtype);
    if (numel < 0 || e->size != size_t(numel) * item)
      bad("storage '" + key + "' holds " + std::to_string(e->size) + " bytes, not " + std::to_string(numel) + " elements");
    Tensor t = Tensor::empty({numel}, dtype);
    if (e->size) std::memcpy(t.storage()->data(), zip_.data(*e).data(), e->size);
    storages_[key] = t;
    return tensor_value(t);
  }
  Value reduce(const Value& fn, const Value& args_value) {
    const std::string name = global_name(fn);
    if (!args_value.is(ObjKind::Tuple)) bad("REDUCE arguments are not a tuple");
    const ValueVec& args = args_value.as<Tuple>()->items;
    if (name == "collections.OrderedDict") {
      if (!args.empty()) bad("OrderedDict with arguments");
      auto d = make<Dict>();
      d->ordered = true;
      return Value(d);
    }
    if (name == "torch.Size") {
      if (args.size() != 1) bad("torch.Size of " + std::to_string(args.size()) + " arguments");
      ValueVec sizes = vm_.to_vector(args[0]);
      return Value(make<Tuple>(std::move(sizes), true));
    }
    if (name == "torch.device") return vm_.call(vm_.getattr(Value(vm_.module("torch")), "device"), args);
    if (name == "builtins.set" || name == "builtins.frozenset" || name == "__builtin__.set")
      return vm_.call(*vm_.builtins()->find_str(name.substr(name.find('.') + 1)), args);
    if (name == "torch._utils._rebuild_tensor_v2") {
      if (args.size() < 6 || !args[0].is(ObjKind::Tensor) || !args[1].is_int()) bad("_rebuild_tensor_v2 arguments");
      const Tensor& storage = args[0].as<TensorObj>()->t;
      Shape sizes, strides;
      for (const Value& v : vm_.to_vector(args[2])) sizes.push_back(to_index(v, "size"));
      for (const Value& v : vm_.to_vector(args[3])) strides.push_back(to_index(v, "stride"));
      if (sizes.size() != strides.size()) bad("a tensor whose size and stride differ in length");
      // Every element the view reaches must lie in the storage.
      int64_t last = args[1].as_int();
      bool empty = false;
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (sizes[i] < 0 || strides[i] < 0) bad("a negative size or stride");
        if (sizes[i] == 0) empty = true;
        else if (sizes[i] > 1 && strides[i] > (INT64_MAX - last) / (sizes[i] - 1)) bad("a view past the end of its storage");
        else last += (sizes[i] - 1) * strides[i];
      }
      if (args[1].as_int() < 0 || (!empty && last >= storage.numel())) bad("a view past the end of its storage");
      auto obj = make<TensorObj>(empty ? Tensor::empty(sizes, storage.dtype()) : storage.as_strided(sizes, strides, args[1].as_int()));
      obj->requires_grad = vm_.truth(args[4]);
      return Value(obj);
    }
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
      if (args.size() < 2 || !args[0].is(ObjKind::Tensor)) bad("_rebuild_parameter arguments");
      auto p = make<TensorObj>(args[0].as<TensorObj>()->t);
      p->is_parameter = true;
      p->requires_grad = vm_.truth(args[1]);
      return Value(p);
    }
    bad("REDUCE of " + name);
  }

  VM& vm_;
  const ZipStore& zip_;
  std::string prefix_, file_;
  bool weights_only_ = true;
  std::span<const std::byte> data_;
  size_t pos_ = 0;
  ValueVec stack_, memo_;
  std::vector<size_t> marks_;
  std::map<std::string, Tensor> storages_;
};

Value torch_load(VM& vm, const CallArgs& a) {
  const Value* f = a.npos > 0 ? &a[0] : a.kwarg("f");
  if (!f) throw_type_error("load() missing 1 required positional argument: 'f'");
  if (!f->is(ObjKind::Str))
    throw_unsupported("torch.load from a " + type_name(*f) + " (Kiln reads a file path; the subset has no bytes buffers)");
  const Value* w = a.kwarg("weights_only");
  const bool weights_only = !w || w->is_none() || vm.truth(*w);
  if (const Value* m = a.kwarg("mmap"); m && vm.truth(*m)) throw_unsupported("torch.load(mmap=True)");
  const Value* map_location = a.npos > 1 ? &a[1] : a.kwarg("map_location");
  // Kiln loads checkpoints on the CPU: 'cpu', a CPU device or a function
  // (the `lambda storage, loc: storage` idiom) are accepted; anything else is
  // refused before the file is read.
  if (map_location && !map_location->is_none() && !is_callable(*map_location)) {
    const std::string where = map_location->is(ObjKind::Str) || map_location->is(ObjKind::Device) ? vm.str_of(*map_location) : "";
    if (where.empty() || where.starts_with("cuda"))
      throw_unsupported("torch.load(map_location=" + vm.repr_of(*map_location) + ") (Kiln loads checkpoints on the CPU)");
  }
  const std::string shown = as_str(*f);
  const std::string path = program_file_path(vm, shown, /*write=*/false);
  Expected<ZipStore> zip = read_zip_store(path, size_t(std::max<int64_t>(input_byte_limit(), memory_budget())));
  if (!zip.ok()) throw PyError("RuntimeError", zip.status().message());
  // The records sit in one folder, whatever PyTorch named it.
  const ZipStore::Entry* pkl = nullptr;
  for (const ZipStore::Entry& e : zip.value().entries)
    if (e.name.ends_with("/data.pkl") && e.name.find('/') == e.name.size() - 9) pkl = &e;
  if (!pkl) throw PyError("RuntimeError", shown + ": not a torch.save archive (no <name>/data.pkl record)");
  const std::string prefix = pkl->name.substr(0, pkl->name.size() - 8);
  Unpickler u(vm, zip.value(), prefix, shown, weights_only);
  return u.load(zip.value().data(*pkl));
}

}  // namespace

void install_serialization(const Ref<Module>& torch) {
  set_attr_builtin(torch->dict, "torch.save", "save", torch_save);
  set_attr_builtin(torch->dict, "torch.load", "load", torch_load);
}

}  // namespace kiln::py
