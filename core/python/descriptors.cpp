// staticmethod, classmethod and property: Python source run when a VM starts;
// the VM's attribute lookup (vm_ops.cpp) recognises their instances in a
// class's namespace and binds them as CPython's descriptors do, as it does
// instances of user classes defining __get__ (functools.cached_property,
// torch.distributions' lazy_property).
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kDescriptorsSource = R"PY(
class staticmethod:
    def __init__(self, function):
        self.__func__ = function
        self.__wrapped__ = function


class classmethod:
    def __init__(self, function):
        self.__func__ = function
        self.__wrapped__ = function


class property:
    def __init__(self, fget=None, fset=None, fdel=None, doc=None):
        self.fget = fget
        self.fset = fset
        self.fdel = fdel
        self.__doc__ = doc

    def getter(self, fget):
        return property(fget, self.fset, self.fdel, self.__doc__)

    def setter(self, fset):
        return property(self.fget, fset, self.fdel, self.__doc__)

    def deleter(self, fdel):
        return property(self.fget, self.fset, fdel, self.__doc__)
)PY";

}  // namespace

void install_descriptors(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kDescriptorsSource, "<builtins>");
  Ref<Dict> ns = run_prelude(vm, code, "builtins", "descriptors");
  if (!ns) return;
  ns->for_each([&](const Value& k, const Value& v) {
    if (!v.is(ObjKind::Class)) return;
    v.as<Class>()->module = "builtins";
    vm.builtins()->set(k, v);
  });
}

VM::Descriptor VM::descriptor_kind(const Value& v) const {
  if (!v.is(ObjKind::Instance)) return Descriptor::None;
  const Class* c = v.as<Instance>()->cls.get();
  const Value* found = nullptr;
  for (auto [name, kind] : {std::pair{"staticmethod", Descriptor::Static}, {"classmethod", Descriptor::ClassMethod},
                            {"property", Descriptor::Property}}) {
    found = builtins_->find_str(name);
    if (found && found->is(ObjKind::Class) && c->is_subclass_of(found->as<Class>())) return kind;
  }
  if (c->builtin < 0 && c->lookup("__get__"))
    return c->lookup("__set__") || c->lookup("__delete__") ? Descriptor::DataGet : Descriptor::Get;
  return Descriptor::None;
}

Value VM::bind_class_attr(const Value& self, Class* cls, const Value& attr) {
  switch (descriptor_kind(attr)) {
    case Descriptor::Static: return *attr.as<Instance>()->dict->find_str("__func__");
    case Descriptor::ClassMethod:
      return Value(make<BoundMethod>(Value(Ref<Class>(cls)), *attr.as<Instance>()->dict->find_str("__func__")));
    case Descriptor::Property: {
      // On the class itself (Cls.prop) the property object; on any instance, a builtin one too, its value.
      if (self.is_none() || self.is(ObjKind::Class)) return attr;
      Value fget;
      try_getattr(attr, "fget", fget);
      if (fget.is_none()) throw PyError("AttributeError", "property of '" + cls->name + "' object has no getter");
      return call(fget, ValueVec{self});
    }
    case Descriptor::Get:
    case Descriptor::DataGet:
      return call(*attr.as<Instance>()->cls->lookup("__get__"), ValueVec{attr, self, Value(Ref<Class>(cls))});
    case Descriptor::None: break;
  }
  return self.is_none() ? attr : bind_if_function(self, attr);
}

}  // namespace kiln::py
