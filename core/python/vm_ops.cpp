// The operations of the language on Python values: attributes, subscripts,
// arithmetic, comparison, iteration. Tensors are handed to torch_bridge.h.
#include <algorithm>
#include <cmath>
#include <set>

#include "core/python/bigint.h"
#include "core/python/instance_class.h"
#include "core/python/numpy_bridge.h"
#include "core/python/object_address.h"
#include "core/python/torch_bridge.h"
#include "core/python/percent_format.h"
#include "core/python/pytorch_names.h"
#include "core/python/vm.h"
#include "core/util/pyformat.h"

namespace kiln::py {

namespace {

// "'list' object is not iterable". (Built by append: GCC 12 gives a false
// -Wrestrict for "'" + std::string&&.)
std::string quoted_type(const Value& v, const char* what) {
  std::string out = "'";
  out += type_name(v);
  out += "' ";
  out += what;
  return out;
}

bool is_number(const Value& v) { return is_integral(v) || v.is_float(); }

// An attribute of the types module (GenericAlias, _union), which it loads on first use.
Value types_attr(VM& vm, const char* name) {
  Ref<Module> types = vm.module("types");
  KILN_CHECK(types, "no types module");
  const Value* v = types->dict->find_str(name);
  KILN_CHECK(v, "types has no ", name);
  return *v;
}
int64_t int_of(const Value& v) { return v.is_bool() ? int64_t(v.as_bool()) : v.as_int(); }
double float_of(const Value& v) { return v.is_float() ? v.as_float() : int_to_double(v); }

ValueVec repeat(const ValueVec& items, int64_t n) {
  if (n > 0 && items.size() > (size_t(1) << 28) / size_t(n)) throw PyError("MemoryError", "");
  ValueVec out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return out;
}

int three_way(VM& vm, const Value& a, const Value& b, CompareKind op);

// Python's ordering for numbers, strings and sequences.
int three_way(VM& vm, const Value& a, const Value& b, CompareKind op) {
  if (is_number(a) && is_number(b)) return number_compare(a, b);
  if (a.is(ObjKind::Str) && b.is(ObjKind::Str)) {
    int c = a.as<Str>()->s.compare(b.as<Str>()->s);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  bool seq_a = a.is(ObjKind::List) || a.is(ObjKind::Tuple), seq_b = b.is(ObjKind::List) || b.is(ObjKind::Tuple);
  if (seq_a && seq_b && a.obj()->kind == b.obj()->kind) {
    const ValueVec& p = a.is(ObjKind::List) ? a.as<List>()->items : a.as<Tuple>()->items;
    const ValueVec& q = b.is(ObjKind::List) ? b.as<List>()->items : b.as<Tuple>()->items;
    NestingGuard guard(" in comparison");
    for (size_t i = 0; i < p.size() && i < q.size(); ++i)
      if (!p[i].same(q[i]) && !equal(p[i], q[i])) return three_way(vm, p[i], q[i], op);
    return p.size() < q.size() ? -1 : p.size() > q.size() ? 1 : 0;
  }
  throw_type_error(std::string("'") + compare_symbol(op) + "' not supported between instances of '" + type_name(a) +
                   "' and '" + type_name(b) + "'");
}

int64_t normalize_index(int64_t i, int64_t n, const char* what) {
  if (i < 0) i += n;
  if (i < 0 || i >= n) throw PyError("IndexError", std::string(what) + " index out of range");
  return i;
}

// Python's slice.indices(): clamps start/stop for a sequence of length n.
void slice_indices(const SliceObj& s, int64_t n, int64_t& start, int64_t& stop, int64_t& step) {
  step = s.step.is_none() ? 1 : to_index(s.step, "slice step");
  if (step == 0) throw PyError("ValueError", "slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t i = to_index(v, "slice index");
    if (i < 0) i = std::max<int64_t>(i + n, step < 0 ? -1 : 0);
    else i = std::min<int64_t>(i, step < 0 ? n - 1 : n);
    return i;
  };
  start = clamp(s.start, step < 0 ? n - 1 : 0);
  stop = clamp(s.stop, step < 0 ? -1 : n);
}

ValueVec slice_items(const ValueVec& items, const SliceObj& s) {
  int64_t start, stop, step;
  slice_indices(s, int64_t(items.size()), start, stop, step);
  ValueVec out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(items[size_t(i)]);
  return out;
}

}  // namespace

Value bind_if_function(const Value& self, const Value& attr) {
  if (attr.is(ObjKind::Function)) return Value(make<BoundMethod>(self, attr));
  if (attr.is(ObjKind::Builtin)) {
    Builtin* b = attr.as<Builtin>();
    auto bound = make<Builtin>(b->name, b->fn);
    bound->self = self;
    bound->has_self = true;
    bound->tag = b->tag;
    return Value(bound);
  }
  return attr;
}

int64_t to_index(const Value& v, const char* what) {
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool();
  if (is_big(v)) throw PyError("IndexError", "cannot fit 'int' into an index-sized integer");
  if (v.is(ObjKind::Tensor)) {
    const Tensor& t = v.as<TensorObj>()->t;
    if (t.numel() == 1 && !t.is_meta() && !is_floating(t.dtype())) return t.item().to_int();
  }
  // NumPy's integer scalars have __index__.
  if (const Value* n = numpy_scalar_value(v, true)) return to_index(*n, what);
  throw_type_error(std::string(what) + " must be an integer, not " + type_name(v));
}

double to_double(const Value& v, const char* what) {
  if (is_number(v)) return float_of(v);
  if (v.is(ObjKind::Tensor)) {
    const Tensor& t = v.as<TensorObj>()->t;
    if (t.numel() == 1 && !t.is_meta()) return t.item().to_double();
  }
  if (const Value* n = numpy_scalar_value(v, false)) return to_double(*n, what);
  throw_type_error(std::string(what) + " must be a real number, not " + type_name(v));
}

// ---- attributes ----

bool VM::try_getattr(const Value& obj, std::string_view name, Value& out) {
  if (obj.is_obj()) {
    Object* o = obj.obj();
    switch (o->kind) {
      case ObjKind::Instance: {
        auto* inst = static_cast<Instance*>(o);
        if (inst->cls->has_property)
          if (const Value* v = inst->cls->lookup(name); v && is_data_descriptor(descriptor_kind(*v))) {
            out = bind_class_attr(obj, inst->cls.get(), *v);
            return true;
          }
        if (const Value* v = inst->dict->find_str(name)) {
          out = *v;
          return true;
        }
        if (name == "__class__") {
          out = Value(inst->cls);
          return true;
        }
        if (name == "__dict__") {
          out = Value(inst->dict);
          return true;
        }
        if (const Value* v = inst->cls->lookup(name)) {
          out = v->is(ObjKind::Instance) ? bind_class_attr(obj, inst->cls.get(), *v) : bind_if_function(obj, *v);
          return true;
        }
        // CPython finds __module__ in the class's dict; here the class holds it apart.
        if (name == "__module__") {
          out = str_value(inst->cls->module);
          return true;
        }
        if (const Value* ga = inst->cls->lookup("__getattr__")) {
          // User __getattr__ signals "absent" by raising AttributeError.
          try {
            out = call(*ga, ValueVec{obj, str_value(std::string(name))});
            return true;
          } catch (PyError& e) {
            if (e.type() == "AttributeError") return false;
            throw;
          }
        }
        return false;
      }
      case ObjKind::Class: {
        auto* cls = static_cast<Class*>(o);
        if (name == "__name__") { out = str_value(cls->name); return true; }
        if (name == "__qualname__") { out = str_value(cls->qualname.empty() ? cls->name : cls->qualname); return true; }
        if (name == "__module__") { out = str_value(cls->module); return true; }
        if (name == "__dict__") { out = Value(cls->dict); return true; }
        if (name == "__bases__" || name == "__mro__") {
          // The subset's classes have one base; object ends every chain.
          const bool mro = name == "__mro__";
          ValueVec chain;
          if (mro) chain.push_back(Value(Ref<Class>(cls)));
          for (Class* c = cls->base.get(); c; c = mro ? c->base.get() : nullptr) chain.push_back(Value(Ref<Class>(c)));
          const bool is_object = cls->builtin >= 0 && cls->name == "object";
          if (!is_object && (mro || !cls->base))
            if (Ref<Class> object = builtin_type("object"); object && (chain.empty() || chain.back().obj() != object.get()))
              chain.push_back(Value(object));
          out = tuple_value(std::move(chain));
          return true;
        }
        if (const Value* v = cls->lookup(name)) {
          out = v->is(ObjKind::Instance) ? bind_class_attr(Value(), cls, *v) : *v;
          return true;
        }
        return false;
      }
      case ObjKind::Module: {
        auto* m = static_cast<Module*>(o);
        if (const Value* v = m->dict->find_str(name)) { out = *v; return true; }
        if (name == "__name__") { out = str_value(m->name); return true; }
        if (Ref<Module> sub = module(m->name + "." + std::string(name))) { out = Value(sub); return true; }
        return false;
      }
      case ObjKind::Function: {
        auto* fn = static_cast<Function*>(o);
        if (name == "__name__") { out = str_value(fn->name); return true; }
        if (name == "__qualname__") { out = str_value(fn->qualname); return true; }
        if (name == "__module__") { out = str_value("__main__"); return true; }
        // torch.fx.wrap patches the function's name in the globals it was defined in.
        if (name == "__globals__" && fn->globals) { out = Value(fn->globals); return true; }
        if (fn->attrs)
          if (const Value* v = fn->attrs->find_str(name)) { out = *v; return true; }
        if (name == "__annotations__") {
          // Made on first use, as CPython's: later reads see the same dict.
          if (!fn->attrs) fn->attrs = make<Dict>();
          fn->attrs->set(str_value("__annotations__"), Value(make<Dict>()));
          out = *fn->attrs->find_str(name);
          return true;
        }
        break;
      }
      case ObjKind::Builtin: {
        auto* b = static_cast<Builtin*>(o);
        if (name == "__name__") {
          size_t dot = b->name.rfind('.');
          out = str_value(dot == std::string::npos ? b->name : b->name.substr(dot + 1));
          return true;
        }
        break;
      }
      case ObjKind::BoundMethod: {
        auto* m = static_cast<BoundMethod*>(o);
        if (name == "__self__") { out = m->self; return true; }
        if (name == "__func__") { out = m->func; return true; }
        return try_getattr(m->func, name, out);
      }
      case ObjKind::Super: {
        auto* s = static_cast<SuperObj*>(o);
        const Class* start = s->cls->base.get();
        if (start)
          if (const Value* v = start->lookup(name)) {
            Class* owner = s->self.is(ObjKind::Instance) ? s->self.as<Instance>()->cls.get()
                           : s->self.is(ObjKind::Class)  ? s->self.as<Class>()
                                                         : nullptr;
            out = owner && v->is(ObjKind::Instance) ? bind_class_attr(s->self.is(ObjKind::Class) ? Value() : s->self, owner, *v)
                                                    : bind_if_function(s->self, *v);
            return true;
          }
        // Past the last base: object's own methods (super().__init__() in a class with no base).
        if (Ref<Class> object = builtin_type("object"); object && (name == "__init__" || name == "__setattr__")) {
          if (const Value* v = object->dict->find_str(name)) {
            out = bind_if_function(s->self, *v);
            return true;
          }
        }
        return false;
      }
      case ObjKind::Tensor:
        if (tensor_getattr(*this, obj, name, out)) return true;
        break;
      case ObjKind::Slice: {
        auto* s = static_cast<SliceObj*>(o);
        if (name == "start") { out = s->start; return true; }
        if (name == "stop") { out = s->stop; return true; }
        if (name == "step") { out = s->step; return true; }
        break;
      }
      case ObjKind::Device: {
        auto* d = static_cast<DeviceObj*>(o);
        if (name == "type") { out = str_value(d->type); return true; }
        if (name == "index") { out = d->index < 0 ? Value() : Value(int64_t(d->index)); return true; }
        break;
      }
      default: break;
    }
  }
  // Methods and attributes of builtin types (list.append, str.join, dtype.is_floating_point, ...).
  Ref<Class> cls = type_of(obj);
  if (cls) {
    if (name == "__class__") { out = Value(cls); return true; }
    if (const Value* v = cls->lookup(name)) {
      // A builtin registered as "@property" computes the attribute from self.
      if (v->is(ObjKind::Builtin) && v->as<Builtin>()->name.starts_with("@")) {
        out = v->as<Builtin>()->fn(*this, CallArgs{&obj, 1, nullptr});
        return true;
      }
      // A property a program (or Kiln's Python) put on a builtin class: torch.Tensor.layout.
      out = v->is(ObjKind::Instance) ? bind_class_attr(obj, cls.get(), *v) : bind_if_function(obj, *v);
      return true;
    }
  }
  return false;
}

Value VM::getattr(const Value& obj, std::string_view name) {
  Value out;
  if (try_getattr(obj, name, out)) return out;
  if (obj.is(ObjKind::Module)) {
    const std::string& m = obj.as<Module>()->name;
    // A name PyTorch has is Kiln's gap (exit 3); one it lacks is the program's
    // AttributeError. Submodules without a recorded name list count as gaps.
    std::optional<bool> known = pytorch_has(m, name);
    const bool numpy = m == "numpy" || m.starts_with("numpy.");
    const bool gap = known ? *known : (m.starts_with("torch") || m == "math" || numpy);
    if (numpy)
      throw PyError("AttributeError", m + "." + std::string(name) + " is outside Kiln's NumPy subset (docs/python.md "
                                      "lists what it models)", true);
    throw PyError("AttributeError", "module '" + m + "' has no attribute '" + std::string(name) + "'" +
                                        (gap ? " (PyTorch has it; not in Kiln's subset)" : ""),
                  gap);
  }
  if (obj.is(ObjKind::Tensor) && pytorch_has("Tensor", name).value_or(false))
    throw PyError("AttributeError", "'Tensor' object has no attribute '" + std::string(name) +
                                        "' (PyTorch has it; not in Kiln's subset)",
                  true);
  if (obj.is(ObjKind::Class))
    throw PyError("AttributeError", "type object '" + obj.as<Class>()->name + "' has no attribute '" + std::string(name) + "'");
  // A state dict's _metadata: PyTorch's is an attribute of its OrderedDict;
  // Kiln's dicts carry none, so the nn prelude keeps it beside the dict.
  if (obj.is(ObjKind::Dict) && name == "_metadata")
    if (Ref<Module> k = module("torch._kiln"))
      if (const Value* lookup = k->dict->find_str("state_dict_metadata"))
        if (Value found = call(*lookup, ValueVec{obj}); !found.is_none()) return found;
  // CPython's generator protocol beyond iteration (send, throw, close) and its
  // frame introspection are Kiln's gap, not the program's error: exit 3.
  static const std::string_view kGeneratorGaps[] = {"send", "throw", "close", "gi_frame", "gi_code",
                                                    "gi_running", "gi_yieldfrom", "gi_suspended"};
  if (type_name(obj) == "generator" && std::ranges::find(kGeneratorGaps, name) != std::end(kGeneratorGaps))
    throw PyError("AttributeError", "'generator' object has no attribute '" + std::string(name) +
                                        "' (CPython has it; not in Kiln's subset: generators are only iterated)",
                  true);
  throw PyError("AttributeError", "'" + type_name(obj) + "' object has no attribute '" + std::string(name) + "'");
}

bool VM::descriptor_write(const Value& obj, std::string_view name, const Value* value) {
  auto* inst = obj.as<Instance>();
  const Value* p = inst->cls->has_property ? inst->cls->lookup(name) : nullptr;
  if (!p) return false;
  const Descriptor kind = descriptor_kind(*p);
  const bool del = value == nullptr;
  if (kind == Descriptor::DataGet) {
    const char* hook = del ? "__delete__" : "__set__";
    const Value* fn = p->as<Instance>()->cls->lookup(hook);
    if (!fn) throw PyError("AttributeError", hook);
    call(*fn, del ? ValueVec{*p, obj} : ValueVec{*p, obj, *value});
    return true;
  }
  if (kind != Descriptor::Property) return false;
  Value accessor;
  try_getattr(*p, del ? "fdel" : "fset", accessor);
  if (accessor.is_none())
    throw PyError("AttributeError", "property '" + std::string(name) + "' of '" + inst->cls->name + "' object has no " +
                                        (del ? "deleter" : "setter"));
  call(accessor, del ? ValueVec{obj} : ValueVec{obj, *value});
  return true;
}

void set_instance_class(Instance& inst, const Value& cls) {
  if (!cls.is(ObjKind::Class))
    throw PyError("TypeError", "__class__ must be set to a class, not '" + type_name(cls) + "' object");
  const Class& to = *cls.as<Class>();
  if (to.builtin >= 0 || inst.cls->builtin >= 0)
    throw PyError("TypeError", "__class__ assignment only supported for mutable types or ModuleType subclasses");
  inst.cls = Ref<Class>(cls.as<Class>());
}

void VM::setattr(const Value& obj, std::string_view name, Value value) {
  note_mutation(*this, obj);
  if (obj.is(ObjKind::Instance)) {
    auto* inst = obj.as<Instance>();
    if (name == "__class__") return set_instance_class(*inst, value);
    if (descriptor_write(obj, name, &value)) return;
    if (const Value* sa = inst->cls->lookup("__setattr__")) {
      call(*sa, ValueVec{obj, str_value(std::string(name)), std::move(value)});
      return;
    }
    inst->dict->set(str_value(std::string(name)), std::move(value));
    return;
  }
  if (obj.is(ObjKind::Tensor)) return tensor_setattr(*this, obj, name, value);
  if (obj.is(ObjKind::Class)) {
    if (is_data_descriptor(descriptor_kind(value))) obj.as<Class>()->has_property = true;
    return obj.as<Class>()->dict->set(str_value(std::string(name)), std::move(value));
  }
  if (obj.is(ObjKind::Module)) {
    // A settings module (runtime_prelude.cpp) checks each assignment first, as
    // PyTorch's ConfigModule.__setattr__ does; the value is then kept in the dict.
    auto* m = obj.as<Module>();
    if (const Value* check = m->dict->find_str("__kiln_setattr__"); check && name != "__kiln_setattr__")
      call(*check, ValueVec{str_value(std::string(name)), value});
    return m->dict->set(str_value(std::string(name)), std::move(value));
  }
  if (obj.is(ObjKind::Function)) {
    auto* fn = obj.as<Function>();
    if (!fn->attrs) fn->attrs = make<Dict>();
    fn->attrs->set(str_value(std::string(name)), std::move(value));
    return;
  }
  throw PyError("AttributeError", "'" + type_name(obj) + "' object has no attribute '" + std::string(name) +
                                      "' and no __dict__ for setting new attributes");
}

// ---- subscripts ----

Value VM::getitem(const Value& obj, const Value& key) {
  if (obj.is(ObjKind::Tensor)) return tensor_getitem(*this, obj, key);
  if (obj.is(ObjKind::List) || obj.is(ObjKind::Tuple)) {
    const ValueVec& items = obj.is(ObjKind::List) ? obj.as<List>()->items : obj.as<Tuple>()->items;
    const char* what = obj.is(ObjKind::List) ? "list" : "tuple";
    if (key.is(ObjKind::Slice)) {
      ValueVec out = slice_items(items, *key.as<SliceObj>());
      if (obj.is(ObjKind::List)) return list_value(std::move(out));
      return Value(make<Tuple>(std::move(out), obj.as<Tuple>()->is_size));
    }
    if (!is_integral(key) && !key.is(ObjKind::Tensor) && !numpy_scalar_value(key, true))
      throw_type_error(std::string(what) + " indices must be integers or slices, not " + type_name(key));
    return items[size_t(normalize_index(to_index(key, "index"), int64_t(items.size()), what))];
  }
  if (obj.is(ObjKind::Str)) {
    const StrChars chars(obj);
    const int64_t n = int64_t(chars.size());
    if (key.is(ObjKind::Slice)) {
      int64_t start, stop, step;
      slice_indices(*key.as<SliceObj>(), n, start, stop, step);
      if (step == 1) return str_value(std::string(stop > start ? chars.range(size_t(start), size_t(stop)) : ""));
      std::string out;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out += chars.at(size_t(i));
      return str_value(std::move(out));
    }
    return str_value(std::string(chars.at(size_t(normalize_index(to_index(key, "string index"), n, "string")))));
  }
  if (obj.is(ObjKind::Dict)) {
    const Value* v = obj.as<Dict>()->find(key);
    if (!v) throw key_error(key);
    return *v;
  }
  if (obj.is(ObjKind::Range)) {
    auto* r = obj.as<RangeObj>();
    int64_t i = normalize_index(to_index(key, "range index"), r->length(), "range object");
    return Value(r->start + i * r->step);
  }
  // PEP 560's __class_getitem__, an implicit classmethod: `Generic[T]`, `Color['RED']`.
  if (obj.is(ObjKind::Class) && obj.as<Class>()->builtin < 0)
    if (const Value* cg = obj.as<Class>()->lookup("__class_getitem__")) return call(*cg, ValueVec{obj, key});
  // PEP 585: list[int], dict[str, int], ... are types.GenericAlias.
  if (obj.is(ObjKind::Class)) {
    static const std::set<std::string> generic = {"list", "dict", "tuple", "set", "frozenset", "type"};
    const Class* c = obj.as<Class>();
    if (generic.count(c->name) && builtin_type(c->name).get() == c)
      return call(types_attr(*this, "GenericAlias"), ValueVec{obj, key});
  }
  if (obj.is(ObjKind::Instance)) {
    if (const Value* gi = obj.as<Instance>()->cls->lookup("__getitem__")) return call(*gi, ValueVec{obj, key});
  }
  throw_type_error(quoted_type(obj, "object is not subscriptable"));
}

void VM::setitem(const Value& obj, const Value& key, Value value) {
  if (!obj.is(ObjKind::Tensor)) note_mutation(*this, obj);
  if (obj.is(ObjKind::Tensor)) return tensor_setitem(*this, obj, key, value);
  if (obj.is(ObjKind::List)) {
    auto& items = obj.as<List>()->items;
    if (key.is(ObjKind::Slice)) {
      int64_t start, stop, step;
      slice_indices(*key.as<SliceObj>(), int64_t(items.size()), start, stop, step);
      if (step != 1) throw_unsupported("extended slice assignment");
      ValueVec repl = to_vector(value);
      stop = std::max(stop, start);
      items.erase(items.begin() + start, items.begin() + stop);
      items.insert(items.begin() + start, repl.begin(), repl.end());
      return;
    }
    items[size_t(normalize_index(to_index(key, "list index"), int64_t(items.size()), "list assignment"))] = std::move(value);
    return;
  }
  if (obj.is(ObjKind::Dict)) return obj.as<Dict>()->set(key, std::move(value));
  if (obj.is(ObjKind::Instance)) {
    if (const Value* si = obj.as<Instance>()->cls->lookup("__setitem__")) {
      call(*si, ValueVec{obj, key, std::move(value)});
      return;
    }
  }
  throw_type_error(quoted_type(obj, "object does not support item assignment"));
}

void VM::delattr(const Value& obj, std::string_view name) {
  note_mutation(*this, obj);
  if (obj.is(ObjKind::Instance)) {
    auto* inst = obj.as<Instance>();
    if (descriptor_write(obj, name, nullptr)) return;
    if (const Value* da = inst->cls->lookup("__delattr__")) {
      call(*da, ValueVec{obj, str_value(std::string(name))});
      return;
    }
    if (!inst->dict->erase(str_value(std::string(name))))
      throw PyError("AttributeError", "'" + inst->cls->name + "' object has no attribute '" + std::string(name) + "'");
    return;
  }
  if (obj.is(ObjKind::Class)) {
    auto* cls = obj.as<Class>();
    if (!cls->dict->erase(str_value(std::string(name))))
      throw PyError("AttributeError", "type object '" + cls->name + "' has no attribute '" + std::string(name) + "'");
    return;
  }
  if (obj.is(ObjKind::Module)) {
    auto* m = obj.as<Module>();
    if (!m->dict->erase(str_value(std::string(name))))
      throw PyError("AttributeError", "module '" + m->name + "' has no attribute '" + std::string(name) + "'");
    return;
  }
  throw PyError("AttributeError", "'" + type_name(obj) + "' object has no attribute '" + std::string(name) + "'");
}

void VM::delitem(const Value& obj, const Value& key) {
  note_mutation(*this, obj);
  if (obj.is(ObjKind::List)) {
    auto& items = obj.as<List>()->items;
    if (key.is(ObjKind::Slice)) {
      int64_t start, stop, step;
      slice_indices(*key.as<SliceObj>(), int64_t(items.size()), start, stop, step);
      ValueVec kept;
      std::vector<bool> doomed(items.size(), false);
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) doomed[size_t(i)] = true;
      for (size_t i = 0; i < items.size(); ++i)
        if (!doomed[i]) kept.push_back(std::move(items[i]));
      items = std::move(kept);
      return;
    }
    items.erase(items.begin() + normalize_index(to_index(key, "list index"), int64_t(items.size()), "list assignment"));
    return;
  }
  if (obj.is(ObjKind::Dict)) {
    if (!obj.as<Dict>()->erase(key)) throw key_error(key);
    return;
  }
  if (obj.is(ObjKind::Instance)) {
    if (const Value* di = obj.as<Instance>()->cls->lookup("__delitem__")) {
      call(*di, ValueVec{obj, key});
      return;
    }
  }
  throw_type_error(quoted_type(obj, "object doesn't support item deletion"));
}

// ---- operators ----

// keys() and items() views are set-like: `d.keys() - {"a"}`, `a.keys() & b.keys()`
// give sets, as CPython's views do. True with both operands as sets when the
// operator is one of the four and either operand is such a view.
static bool set_like_operands(VM& vm, BinaryOpKind op, const Value& a, const Value& b, Value& set_a, Value& set_b) {
  if (op != BinaryOpKind::And && op != BinaryOpKind::Or && op != BinaryOpKind::Sub && op != BinaryOpKind::Xor) return false;
  auto set_like = [](const Value& v) { return v.is(ObjKind::DictView) && v.as<DictView>()->which != DictView::Which::Values; };
  if (!set_like(a) && !set_like(b)) return false;
  Ref<Class> set_cls = vm.builtin_type("set");
  if (!set_cls) return false;
  set_a = set_like(a) ? vm.call(Value(set_cls), ValueVec{a}) : a;
  set_b = set_like(b) ? vm.call(Value(set_cls), ValueVec{b}) : b;
  return true;
}

Value VM::binary(BinaryOpKind op, const Value& a, const Value& b, bool inplace) {
  Value out;
  if (op == BinaryOpKind::Mod && a.is(ObjKind::Str)) return percent_format(*this, a.as<Str>()->s, b);
  if (tensor_binary(*this, op, a, b, inplace, out)) return out;
  if (is_number(a) && is_number(b)) return number_binary(op, a, b);
  if (op == BinaryOpKind::Add) {
    if (a.is(ObjKind::Str) && b.is(ObjKind::Str)) return str_value(a.as<Str>()->s + b.as<Str>()->s);
    if (a.is(ObjKind::List) && b.is(ObjKind::List)) {
      if (inplace) {
        note_mutation(*this, a);
        auto& items = a.as<List>()->items;
        ValueVec extra = b.as<List>()->items;
        items.insert(items.end(), extra.begin(), extra.end());
        return a;
      }
      ValueVec items = a.as<List>()->items;
      items.insert(items.end(), b.as<List>()->items.begin(), b.as<List>()->items.end());
      return list_value(std::move(items));
    }
    if (a.is(ObjKind::List) && inplace) {
      ValueVec extra = to_vector(b);
      note_mutation(*this, a);
      a.as<List>()->items.insert(a.as<List>()->items.end(), extra.begin(), extra.end());
      return a;
    }
    if (a.is(ObjKind::Tuple) && b.is(ObjKind::Tuple)) {
      ValueVec items = a.as<Tuple>()->items;
      items.insert(items.end(), b.as<Tuple>()->items.begin(), b.as<Tuple>()->items.end());
      return Value(make<Tuple>(std::move(items), a.as<Tuple>()->is_size && b.as<Tuple>()->is_size));
    }
  }
  if (op == BinaryOpKind::Mul) {
    const Value& seq = is_number(a) ? b : a;
    const Value& n = is_number(a) ? a : b;
    bool repeatable = seq.is(ObjKind::Str) || seq.is(ObjKind::List) || seq.is(ObjKind::Tuple);
    if (is_big(n) && repeatable) throw PyError("OverflowError", "cannot fit 'int' into an index-sized integer");
    if ((n.is_int() || n.is_bool()) && repeatable) {
      int64_t k = std::max<int64_t>(0, int_of(n));
      if (seq.is(ObjKind::Str)) {
        if (k > 0 && seq.as<Str>()->s.size() > (size_t(1) << 30) / size_t(k)) throw PyError("MemoryError", "");
        std::string out_s;
        for (int64_t i = 0; i < k; ++i) out_s += seq.as<Str>()->s;
        return str_value(std::move(out_s));
      }
      if (seq.is(ObjKind::List) && inplace && a.is(ObjKind::List)) {
        note_mutation(*this, a);  // `xs *= 2` changes the list every alias sees
        a.as<List>()->items = repeat(a.as<List>()->items, k);
        return a;
      }
      if (seq.is(ObjKind::List)) return list_value(repeat(seq.as<List>()->items, k));
      if (seq.is(ObjKind::Tuple)) return tuple_value(repeat(seq.as<Tuple>()->items, k));
    }
  }
  if (Value set_a, set_b; set_like_operands(*this, op, a, b, set_a, set_b)) return binary(op, set_a, set_b, false);
  // User classes may define the operator.
  static const char* const names[] = {"__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
                                      "__matmul__", "__lshift__", "__rshift__", "__and__", "__or__", "__xor__"};
  static const char* const reflected[] = {"__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__",
                                          "__rpow__", "__rmatmul__", "__rlshift__", "__rrshift__", "__rand__", "__ror__",
                                          "__rxor__"};
  if (inplace && a.is(ObjKind::Instance)) {
    const std::string in_place = std::string("__i") + (names[int(op)] + 2);
    if (const Value* fn = a.as<Instance>()->cls->lookup(in_place)) {
      Value r = call(*fn, ValueVec{a, b});
      if (!is_not_implemented(r)) return r;
    }
  }
  if (a.is(ObjKind::Instance))
    if (const Value* fn = a.as<Instance>()->cls->lookup(names[int(op)])) {
      Value r = call(*fn, ValueVec{a, b});
      if (!is_not_implemented(r)) return r;
    }
  if (b.is(ObjKind::Instance))
    if (const Value* fn = b.as<Instance>()->cls->lookup(reflected[int(op)])) {
      Value r = call(*fn, ValueVec{b, a});
      if (!is_not_implemented(r)) return r;
    }
  // PEP 604: int | None is a types.UnionType.
  if (op == BinaryOpKind::Or && ((a.is(ObjKind::Class) && (b.is(ObjKind::Class) || b.is_none())) ||
                                 (a.is_none() && b.is(ObjKind::Class))))
    return call(types_attr(*this, "_union"), ValueVec{a, b});
  if (op == BinaryOpKind::Add && (a.is(ObjKind::Str) || a.is(ObjKind::List) || a.is(ObjKind::Tuple)) && type_name(a) != type_name(b))
    throw_type_error("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
  throw_type_error(std::string("unsupported operand type(s) for ") + binary_op_symbol(op) + (inplace ? "=" : "") + ": '" +
                   type_name(a) + "' and '" + type_name(b) + "'");
}

Value VM::unary(UnaryOpKind op, const Value& a) {
  Value out;
  if (tensor_unary(*this, op, a, out)) return out;
  switch (op) {
    case UnaryOpKind::Not: return Value(!truth(a));
    case UnaryOpKind::Neg:
      if (a.is_float()) return Value(-a.as_float());
      if (a.is_int() || a.is_bool()) {
        int64_t r;
        if (__builtin_sub_overflow(int64_t(0), int_of(a), &r)) return int_negate(a);
        return Value(r);
      }
      if (is_big(a)) return int_negate(a);
      break;
    case UnaryOpKind::Pos:
      if (a.is_float() || is_big(a)) return a;
      if (a.is_int() || a.is_bool()) return Value(int_of(a));
      break;
    case UnaryOpKind::Invert:
      if (a.is_int() || a.is_bool()) return Value(~int_of(a));
      if (is_big(a)) return int_invert(a);
      break;
  }
  static const char* const method[] = {"__neg__", "__pos__", nullptr, "__invert__"};
  if (a.is(ObjKind::Instance) && method[int(op)])
    if (const Value* fn = a.as<Instance>()->cls->lookup(method[int(op)])) return call(*fn, ValueVec{a});
  static const char* const sym[] = {"-", "+", "not ", "~"};
  throw_type_error(std::string("bad operand type for unary ") + sym[int(op)] + ": '" + type_name(a) + "'");
}

namespace {

// Python's == on lists, tuples and dicts compares their elements with ==
// (after identity), so a program's __eq__ and a tensor's elementwise == (then
// its truth, which refuses more than one element) take part.
bool container_equal(VM& vm, const Value& a, const Value& b) {
  const bool lists = a.is(ObjKind::List) && b.is(ObjKind::List), tuples = a.is(ObjKind::Tuple) && b.is(ObjKind::Tuple);
  if (lists || tuples) {
    const ValueVec& pa = lists ? a.as<List>()->items : a.as<Tuple>()->items;
    const ValueVec& qa = lists ? b.as<List>()->items : b.as<Tuple>()->items;
    if (pa.size() != qa.size()) return false;
    // Numbers and strings (shapes, index lists) call no method: Kiln's value
    // equality is Python's == for them, without copies.
    auto plain = [](const Value& v) { return !v.is_obj() || v.is(ObjKind::Str); };
    if (std::all_of(pa.begin(), pa.end(), plain) && std::all_of(qa.begin(), qa.end(), plain)) return equal(a, b);
    // Copies: an element's __eq__ may change the containers.
    const ValueVec p = pa, q = qa;
    NestingGuard guard(" in comparison");
    for (size_t i = 0; i < p.size(); ++i)
      if (!p[i].same(q[i]) && !vm.truth(vm.compare(CompareKind::Eq, p[i], q[i]))) return false;
    return true;
  }
  if (a.is(ObjKind::Dict) && b.is(ObjKind::Dict)) {
    if (a.same(b)) return true;
    const auto p = a.as<Dict>()->items();
    const Dict* q = b.as<Dict>();
    if (p.size() != q->size()) return false;
    NestingGuard guard(" in comparison");
    // Two OrderedDicts are equal only with their keys in the same order.
    if (a.as<Dict>()->ordered && q->ordered) {
      const auto order = q->items();
      for (size_t i = 0; i < p.size(); ++i)
        if (!equal(p[i].first, order[i].first)) return false;
    }
    for (const auto& [k, v] : p) {
      const Value* w = q->find(k);
      if (!w) return false;
      const Value other = *w;
      if (!v.same(other) && !vm.truth(vm.compare(CompareKind::Eq, v, other))) return false;
    }
    return true;
  }
  return equal(a, b);
}

}  // namespace

Value VM::compare(CompareKind op, const Value& a, const Value& b) {
  switch (op) {
    case CompareKind::Is: return Value(a.same(b));
    case CompareKind::IsNot: return Value(!a.same(b));
    case CompareKind::In: return Value(contains(b, a));
    case CompareKind::NotIn: return Value(!contains(b, a));
    default: break;
  }
  Value out;
  if (tensor_compare(*this, op, a, b, out)) return out;
  // A program's classes: the operator's method, then the reflected one of the
  // right operand (`a < b` asks b.__gt__), either answering NotImplemented to pass.
  if (a.is(ObjKind::Instance) || b.is(ObjKind::Instance)) {
    static const char* const method[] = {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"};
    static const char* const swapped[] = {"__gt__", "__ge__", "__eq__", "__ne__", "__lt__", "__le__"};
    const int k = int(op) - int(CompareKind::Lt);
    auto try_method = [&](const Value& self, const Value& other, const char* name, Value& result) {
      if (!self.is(ObjKind::Instance)) return false;
      const Value* fn = self.as<Instance>()->cls->lookup(name);
      if (!fn) return false;
      result = call(*fn, ValueVec{self, other});
      return !is_not_implemented(result);
    };
    Value r;
    if (try_method(a, b, method[k], r) || try_method(b, a, swapped[k], r)) return r;
    if (op == CompareKind::Ne && (try_method(a, b, "__eq__", r) || try_method(b, a, "__eq__", r))) return Value(!truth(r));
    if (op != CompareKind::Eq && op != CompareKind::Ne)
      throw_type_error(std::string("'") + compare_symbol(op) + "' not supported between instances of '" + type_name(a) +
                       "' and '" + type_name(b) + "'");
  }
  if (op == CompareKind::Eq || op == CompareKind::Ne) {
    bool eq = container_equal(*this, a, b);
    return Value(op == CompareKind::Eq ? eq : !eq);
  }
  int c = three_way(*this, a, b, op);
  if (c == 2) return Value(false);
  switch (op) {
    case CompareKind::Lt: return Value(c < 0);
    case CompareKind::Le: return Value(c <= 0);
    case CompareKind::Gt: return Value(c > 0);
    case CompareKind::Ge: return Value(c >= 0);
    default: return Value(false);
  }
}

// ---- iteration and containers ----

Value VM::iter(const Value& v) {
  if (v.is(ObjKind::Iterator)) return v;
  if (v.is(ObjKind::List) || v.is(ObjKind::Tuple)) {
    // Index-based, as CPython's list iterator: appends during the loop are seen.
    Value keep = v;
    size_t i = 0;
    return Value(make<IteratorObj>([keep, i](Value& out) mutable {
      const ValueVec& items = keep.is(ObjKind::List) ? keep.as<List>()->items : keep.as<Tuple>()->items;
      if (i >= items.size()) return false;
      out = items[i++];
      return true;
    }));
  }
  if (v.is(ObjKind::Range)) {
    auto* r = v.as<RangeObj>();
    int64_t cur = r->start, stop = r->stop, step = r->step;
    return Value(make<IteratorObj>([cur, stop, step](Value& out) mutable {
      if (step > 0 ? cur >= stop : cur <= stop) return false;
      out = Value(cur);
      cur += step;
      return true;
    }));
  }
  if (v.is(ObjKind::Dict)) {
    ValueVec keys;
    v.as<Dict>()->for_each([&](const Value& k, const Value&) { keys.push_back(k); });
    return iter(list_value(std::move(keys)));
  }
  if (v.is(ObjKind::DictView)) return iter(list_value(dict_view_items(*v.as<DictView>())));
  if (v.is(ObjKind::Str)) {
    const StrChars text(v);
    ValueVec chars;
    chars.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) chars.push_back(str_value(std::string(text.at(i))));
    return iter(list_value(std::move(chars)));
  }
  if (v.is(ObjKind::Tensor)) return tensor_iter(*this, v);
  if (v.is(ObjKind::Instance)) {
    if (const Value* fn = v.as<Instance>()->cls->lookup("__iter__")) {
      Value it = call(*fn, ValueVec{v});
      // An iterator of the program's own: __next__ until it raises StopIteration.
      if (it.is(ObjKind::Instance) && it.as<Instance>()->cls->lookup("__next__")) return instance_iterator(it);
      return iter(it);
    }
    // The old sequence protocol: __getitem__(0), (1), ... until IndexError.
    if (const Value* fn = v.as<Instance>()->cls->lookup("__getitem__")) {
      Value getitem_fn = *fn, self = v;
      int64_t i = 0;
      return Value(make<IteratorObj>([this, getitem_fn, self, i](Value& out) mutable {
        try {
          out = call(getitem_fn, ValueVec{self, Value(i)});
        } catch (PyError& e) {
          if (e.uncatchable()) throw;
          const Value* index_error = builtins_->find_str("IndexError");
          const Value* stop = builtins_->find_str("StopIteration");
          Value ev = exception_value(e);
          if (!(index_error && is_instance(ev, *index_error)) && !(stop && is_instance(ev, *stop))) throw;
          return false;
        }
        ++i;
        return true;
      }));
    }
  }
  // The subset has no metaclasses: a class iterates (`for m in Color`, enum's
  // EnumType.__iter__) through its own __class_iter__, called with the class.
  if (v.is(ObjKind::Class) && v.as<Class>()->builtin < 0)
    if (const Value* fn = v.as<Class>()->lookup("__class_iter__")) return iter(call(*fn, ValueVec{v}));
  throw_type_error(quoted_type(v, "object is not iterable"));
}

bool VM::next(const Value& iterator, Value& out) {
  // Every loop over an iterable comes through here, the builtins' own (sum,
  // list(), str.join...) too: each item is a unit of the step budget. (A
  // `for` loop's ForIter takes next_item: the instruction is its unit.)
  charge_step();
  return next_item(iterator, out);
}

Value VM::instance_iterator(const Value& it) {
  return Value(make<IteratorObj>([this, it](Value& out) {
    const Value* next = it.as<Instance>()->cls->lookup("__next__");
    if (!next) throw_type_error(quoted_type(it, "object is not an iterator"));
    try {
      out = call(*next, ValueVec{it});
    } catch (PyError& e) {
      if (e.uncatchable()) throw;
      const Value* stop = builtins_->find_str("StopIteration");
      if (!stop || !is_instance(exception_value(e), *stop)) throw;
      return false;
    }
    return true;
  }));
}

bool VM::next_item(const Value& iterator, Value& out) {
  if (tracer) tracer->note_iteration(*this, iterator);
  if (iterator.is(ObjKind::Instance) && iterator.as<Instance>()->cls->lookup("__next__"))
    return instance_iterator(iterator).as<IteratorObj>()->next(out);
  if (!iterator.is(ObjKind::Iterator)) throw_type_error(quoted_type(iterator, "object is not an iterator"));
  return iterator.as<IteratorObj>()->next(out);
}

ValueVec VM::to_vector(const Value& iterable) {
  if (iterable.is(ObjKind::List)) return iterable.as<List>()->items;
  if (iterable.is(ObjKind::Tuple)) return iterable.as<Tuple>()->items;
  ValueVec out;
  Value it = iter(iterable);
  Value v;
  while (next(it, v)) out.push_back(v);
  return out;
}

bool VM::contains(const Value& container, const Value& item) {
  if (container.is(ObjKind::Dict)) return container.as<Dict>()->find(item) != nullptr;
  if (container.is(ObjKind::DictView) && container.as<DictView>()->which != DictView::Which::Values)
    return dict_view_contains(*container.as<DictView>(), item);
  if (container.is(ObjKind::Str)) {
    if (!item.is(ObjKind::Str)) throw_type_error("'in <string>' requires string as left operand, not " + type_name(item));
    return container.as<Str>()->s.find(item.as<Str>()->s) != std::string::npos;
  }
  if (container.is(ObjKind::Range) && (item.is_int() || item.is_bool())) {
    auto* r = container.as<RangeObj>();
    int64_t x = int_of(item);
    if (r->step > 0 ? (x < r->start || x >= r->stop) : (x > r->start || x <= r->stop)) return false;
    return (x - r->start) % r->step == 0;
  }
  if (container.is(ObjKind::Instance))
    if (const Value* fn = container.as<Instance>()->cls->lookup("__contains__"))
      return truth(call(*fn, ValueVec{container, item}));
  Value it = iter(container);
  Value v;
  while (next(it, v))
    if (v.same(item) || truth(compare(CompareKind::Eq, v, item))) return true;
  return false;
}

int64_t VM::len(const Value& v) {
  if (v.is(ObjKind::Str)) return int64_t(StrChars(v).size());
  if (v.is(ObjKind::List)) return int64_t(v.as<List>()->items.size());
  if (v.is(ObjKind::Tuple)) return int64_t(v.as<Tuple>()->items.size());
  if (v.is(ObjKind::Dict)) return int64_t(v.as<Dict>()->size());
  if (v.is(ObjKind::DictView)) return int64_t(v.as<DictView>()->dict->size());
  if (v.is(ObjKind::Range)) return v.as<RangeObj>()->length();
  if (v.is(ObjKind::Tensor)) return tensor_len(*this, v);
  if (v.is(ObjKind::Instance))
    if (const Value* fn = v.as<Instance>()->cls->lookup("__len__")) return to_index(call(*fn, ValueVec{v}), "__len__()");
  if (v.is(ObjKind::Class) && v.as<Class>()->builtin < 0)  // a metaclass's __len__, as __class_iter__ above
    if (const Value* fn = v.as<Class>()->lookup("__class_len__")) return to_index(call(*fn, ValueVec{v}), "__len__()");
  throw_type_error("object of type '" + type_name(v) + "' has no len()");
}

bool VM::truth(const Value& v) {
  if (v.is(ObjKind::Tensor)) return tensor_truth(*this, v);
  if (v.is(ObjKind::Instance)) {
    auto* cls = v.as<Instance>()->cls.get();
    if (const Value* fn = cls->lookup("__bool__")) return truthy(call(*fn, ValueVec{v}));
    if (cls->lookup("__len__")) return len(v) != 0;
    return true;
  }
  return truthy(v);
}

std::string VM::repr_of(const Value& v) {
  if (v.is(ObjKind::Instance)) {
    if (const Value* fn = v.as<Instance>()->cls->lookup("__repr__")) return as_str(call(*fn, ValueVec{v}));
    // Python's default repr; the object number stands where CPython prints the
    // address (Kiln's programs cannot read addresses), as for grad_fn objects.
    const Class& cls = *v.as<Instance>()->cls;
    return "<" + cls.module + "." + (cls.qualname.empty() ? cls.name : cls.qualname) + " object at " +
           object_address(*v.obj()) + ">";
  }
  return repr_with(v, [this](const Value& x) { return repr_of(x); });
}

std::string VM::str_of(const Value& v) {
  if (v.is(ObjKind::Str)) return v.as<Str>()->s;
  if (v.is(ObjKind::Instance)) {
    if (const Value* fn = v.as<Instance>()->cls->lookup("__str__")) return as_str(call(*fn, ValueVec{v}));
  }
  if (v.is_float()) return py_float_repr(v.as_float());
  if (v.is(ObjKind::Device)) return v.as<DeviceObj>()->str();  // str(torch.device("cpu")) is "cpu"
  return repr_of(v);
}

Ref<Class> VM::type_of(const Value& v) {
  if (v.is(ObjKind::Instance)) return v.as<Instance>()->cls;
  const char* name = nullptr;
  switch (v.tag()) {
    case Value::Tag::None: name = "NoneType"; break;
    case Value::Tag::Bool: name = "bool"; break;
    case Value::Tag::Int: name = "int"; break;
    case Value::Tag::Float: name = "float"; break;
    case Value::Tag::Obj:
      switch (v.obj()->kind) {
        case ObjKind::BigInt: name = "int"; break;
        case ObjKind::Str: name = "str"; break;
        case ObjKind::Tuple: name = v.as<Tuple>()->is_size ? "Size" : "tuple"; break;
        case ObjKind::List: name = "list"; break;
        case ObjKind::Dict: name = v.as<Dict>()->ordered ? "OrderedDict" : "dict"; break;
        case ObjKind::DictView: return builtin_type(dict_view_type_name(*v.as<DictView>()));
        case ObjKind::Tensor: name = v.as<TensorObj>()->is_parameter ? "Parameter" : "Tensor"; break;
        case ObjKind::DType: name = "dtype"; break;
        case ObjKind::Device: name = "device"; break;
        case ObjKind::Range: name = "range"; break;
        case ObjKind::Function: name = "function"; break;
        case ObjKind::BoundMethod: name = "method"; break;
        case ObjKind::Builtin: name = "builtin_function_or_method"; break;
        case ObjKind::Class: name = "type"; break;
        case ObjKind::Module: name = "module"; break;
        case ObjKind::NoGrad: name = "no_grad"; break;
        case ObjKind::Slice: name = "slice"; break;
        case ObjKind::Ellipsis: name = "ellipsis"; break;
        case ObjKind::Iterator:
          if (std::string_view(v.as<IteratorObj>()->type_name) == "generator") name = "generator";
          else name = "object";
          break;
        default: name = "object"; break;
      }
  }
  return builtin_type(name);
}

bool VM::is_instance(const Value& v, const Value& cls_or_tuple) {
  if (cls_or_tuple.is(ObjKind::Tuple)) {
    for (const Value& c : cls_or_tuple.as<Tuple>()->items)
      if (is_instance(v, c)) return true;
    return false;
  }
  if (!cls_or_tuple.is(ObjKind::Class)) {
    // typing's aliases (typing.Sequence, typing.List[int]) answer through
    // their own __instancecheck__, as CPython's do.
    if (cls_or_tuple.is(ObjKind::Instance))
      if (const Value* check = cls_or_tuple.as<Instance>()->cls->lookup("__instancecheck__"))
        return truth(call(*check, ValueVec{cls_or_tuple, v}));
    throw_type_error("isinstance() arg 2 must be a type or tuple of types");
  }
  const Class* target = cls_or_tuple.as<Class>();
  Ref<Class> t = type_of(v);
  if (!t) return false;
  if (t->is_subclass_of(target)) return true;
  // The subset has no metaclasses: an ABC (collections.abc) recognises
  // builtins and structural matches through its own __class_instancecheck__,
  // where CPython's ABCMeta.__instancecheck__ consults registrations and
  // __subclasshook__.
  if (target->builtin < 0)
    if (const Value* hook = target->lookup("__class_instancecheck__"))
      return truth(call(*hook, ValueVec{cls_or_tuple, v}));
  // bool is an int, as in Python; NumPy's float64 is a float.
  if (target->builtin >= 0 && target->name == "float") return is_numpy_float64(v);
  return v.is_bool() && target->name == "int" && target->builtin >= 0;
}

}  // namespace kiln::py
