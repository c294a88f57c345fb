// Builtins that look at objects and classes: issubclass, vars, dir, hash.
#include <algorithm>
#include <set>

#include "core/python/bigint.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

bool subclass_of(VM& vm, const Value& cls, const Value& of) {
  if (of.is(ObjKind::Tuple)) {
    for (const Value& o : of.as<Tuple>()->items)
      if (subclass_of(vm, cls, o)) return true;
    return false;
  }
  if (!of.is(ObjKind::Class)) {
    if (of.is(ObjKind::Instance))
      if (const Value* check = of.as<Instance>()->cls->lookup("__subclasscheck__"))
        return vm.truth(vm.call(*check, ValueVec{of, cls}));
    throw_type_error("issubclass() arg 2 must be a class, a tuple of classes, or a union");
  }
  if (of.as<Class>()->builtin >= 0 && of.as<Class>()->name == "object") return true;
  // bool is an int, as in Python (the subset's builtin classes have no bases).
  if (of.as<Class>()->builtin >= 0 && of.as<Class>()->name == "int" && cls.as<Class>()->builtin >= 0 &&
      cls.as<Class>()->name == "bool")
    return true;
  if (cls.as<Class>()->is_subclass_of(of.as<Class>())) return true;
  // collections.abc's ABCs (no metaclasses in the subset; see VM::is_instance).
  if (of.as<Class>()->builtin < 0)
    if (const Value* hook = of.as<Class>()->lookup("__class_subclasscheck__"))
      return vm.truth(vm.call(*hook, ValueVec{of, cls}));
  return false;
}

// CPython's hash of an int: its value modulo the Mersenne prime 2**61 - 1,
// with -1 mapped to -2; a float with an integral value hashes as that int.
int64_t hash_int(int64_t v) {
  constexpr uint64_t kModulus = (uint64_t(1) << 61) - 1;
  uint64_t m = (v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v)) % kModulus;
  int64_t h = v < 0 ? -int64_t(m) : int64_t(m);
  return h == -1 ? -2 : h;
}

}  // namespace

void install_object_builtins(VM& vm) {
  Ref<Dict> b = vm.builtins();
  set_attr_builtin(b, "issubclass", "issubclass", [](VM& vm, const CallArgs& a) {
    if (a.npos != 2) throw_type_error("issubclass expected 2 arguments, got " + std::to_string(a.npos));
    if (!a[0].is(ObjKind::Class)) throw_type_error("issubclass() arg 1 must be a class");
    return Value(subclass_of(vm, a[0], a[1]));
  });
  set_attr_builtin(b, "vars", "vars", [](VM& vm, const CallArgs& a) {
    if (a.npos != 1) throw_unsupported("vars() without an argument (the subset has no locals())");
    Value d;
    if (a[0].is(ObjKind::Module)) return Value(a[0].as<Module>()->dict);
    if (a[0].is(ObjKind::Class)) return Value(a[0].as<Class>()->dict);
    if (!vm.try_getattr(a[0], "__dict__", d)) throw_type_error("vars() argument must have __dict__ attribute");
    return d;
  });
  set_attr_builtin(b, "dir", "dir", [](VM&, const CallArgs& a) {
    if (a.npos != 1) throw_unsupported("dir() without an argument (the subset has no locals())");
    std::set<std::string> names;
    auto add_dict = [&](const Dict& d) {
      d.for_each([&](const Value& k, const Value&) {
        if (k.is(ObjKind::Str)) names.insert(k.as<Str>()->s);
      });
    };
    const Class* cls = nullptr;
    if (a[0].is(ObjKind::Instance)) {
      add_dict(*a[0].as<Instance>()->dict);
      cls = a[0].as<Instance>()->cls.get();
    } else if (a[0].is(ObjKind::Class)) {
      cls = a[0].as<Class>();
    } else if (a[0].is(ObjKind::Module)) {
      add_dict(*a[0].as<Module>()->dict);
    } else {
      throw_unsupported("dir() of a " + type_name(a[0]));
    }
    for (const Class* c = cls; c; c = c->base.get()) add_dict(*c->dict);
    ValueVec out;
    for (const std::string& n : names) out.push_back(str_value(n));
    return list_value(std::move(out));
  });
  set_attr_builtin(b, "hash", "hash", [](VM& vm, const CallArgs& a) -> Value {
    if (a.npos != 1) throw_type_error("hash() takes exactly one argument (" + std::to_string(a.npos) + " given)");
    const Value& v = a[0];
    if (v.is_none() || v.is_bool() || v.is_int()) return Value(hash_int(v.is_none() ? 0 : v.as_int()));
    if (v.is_float() && v.as_float() == double(int64_t(v.as_float()))) return Value(hash_int(int64_t(v.as_float())));
    if (v.is(ObjKind::List) || v.is(ObjKind::Dict) || v.is(ObjKind::DictView))
      throw_type_error("unhashable type: '" + type_name(v) + "'");
    if (v.is(ObjKind::Instance))
      if (const Value* fn = v.as<Instance>()->cls->lookup("__hash__")) return vm.call(*fn, ValueVec{v});
    // CPython salts the hashes of str (per process) and derives those of
    // objects from addresses: no value Kiln could give would be CPython's.
    throw_unsupported("hash() of a " + type_name(v) + " (CPython's value depends on its process)");
  });
}

}  // namespace kiln::py
