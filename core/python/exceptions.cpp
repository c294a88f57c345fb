// Exception objects: the built-in hierarchy (Python source run when a VM
// starts, as CPython 3.11 arranges it), the bridge between a PyError unwinding
// through C++ and the exception object a program catches, `raise`, and the
// traceback text with its chained causes.
#include <memory>
#include <string>

#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

// args are set by the VM before __init__ runs (CPython's BaseException.__new__),
// so a subclass whose __init__ does not call super() still has them.
const char* const kExceptionsSource = R"PY(
class BaseException:
    __cause__ = None
    __context__ = None
    __suppress_context__ = False
    __traceback__ = None

    def __init__(self, *args):
        self.args = args

    def __str__(self):
        args = self.args
        if len(args) == 0:
            return ""
        if len(args) == 1:
            return str(args[0])
        return str(args)

    def __repr__(self):
        args = self.args
        if len(args) == 1:
            return type(self).__name__ + "(" + repr(args[0]) + ")"
        return type(self).__name__ + repr(args)

    def with_traceback(self, tb):
        return self

    def add_note(self, note):
        if not isinstance(note, str):
            raise TypeError("note must be a str, not '" + type(note).__name__ + "'")
        if not hasattr(self, "__notes__"):
            self.__notes__ = []
        self.__notes__.append(note)


class GeneratorExit(BaseException):
    pass


class KeyboardInterrupt(BaseException):
    pass


class SystemExit(BaseException):
    def __init__(self, *args):
        self.args = args
        if len(args) == 0:
            self.code = None
        elif len(args) == 1:
            self.code = args[0]
        else:
            self.code = args


class Exception(BaseException):
    pass


class ArithmeticError(Exception):
    pass


class FloatingPointError(ArithmeticError):
    pass


class OverflowError(ArithmeticError):
    pass


class ZeroDivisionError(ArithmeticError):
    pass


class AssertionError(Exception):
    pass


class AttributeError(Exception):
    pass


class BufferError(Exception):
    pass


class EOFError(Exception):
    pass


class ImportError(Exception):
    pass


class ModuleNotFoundError(ImportError):
    pass


class LookupError(Exception):
    pass


class IndexError(LookupError):
    pass


class KeyError(LookupError):
    def __str__(self):
        if len(self.args) == 1:
            return repr(self.args[0])
        return BaseException.__str__(self)


class MemoryError(Exception):
    pass


class NameError(Exception):
    pass


class UnboundLocalError(NameError):
    pass


class OSError(Exception):
    pass


class FileExistsError(OSError):
    pass


class FileNotFoundError(OSError):
    pass


class IsADirectoryError(OSError):
    pass


class NotADirectoryError(OSError):
    pass


class PermissionError(OSError):
    pass


class TimeoutError(OSError):
    pass


class ConnectionError(OSError):
    pass


class ReferenceError(Exception):
    pass


class RuntimeError(Exception):
    pass


class NotImplementedError(RuntimeError):
    pass


class RecursionError(RuntimeError):
    pass


class StopIteration(Exception):
    def __init__(self, *args):
        self.args = args
        self.value = args[0] if len(args) > 0 else None


class StopAsyncIteration(Exception):
    pass


class SyntaxError(Exception):
    pass


class SystemError(Exception):
    pass


class TypeError(Exception):
    pass


class ValueError(Exception):
    pass


class UnicodeError(ValueError):
    pass


class Warning(Exception):
    pass


class UserWarning(Warning):
    pass


class DeprecationWarning(Warning):
    pass


class PendingDeprecationWarning(Warning):
    pass


class FutureWarning(Warning):
    pass


class RuntimeWarning(Warning):
    pass


class SyntaxWarning(Warning):
    pass


class ImportWarning(Warning):
    pass


class UnicodeWarning(Warning):
    pass


class BytesWarning(Warning):
    pass


class ResourceWarning(Warning):
    pass


EnvironmentError = OSError
IOError = OSError


class NotImplementedType:
    def __repr__(self):
        return "NotImplemented"


NotImplemented = NotImplementedType()
)PY";

Value attr_or_none(const Instance* inst, const char* name) {
  if (const Value* v = inst->dict->find_str(name)) return *v;
  if (const Value* v = inst->cls->lookup(name)) return *v;
  return Value();
}

}  // namespace

void install_exceptions(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kExceptionsSource, "<builtins>");
  Ref<Dict> ns = run_prelude(vm, code, "builtins", "exceptions");
  if (!ns) return;
  ns->for_each([&](const Value& k, const Value& v) {
    if (v.is(ObjKind::Class)) v.as<Class>()->module = "builtins";
    if (v.is(ObjKind::Class) || v.is(ObjKind::Instance)) vm.builtins()->set(k, v);
  });
}

bool VM::is_not_implemented(const Value& v) const {
  const Value* ni = builtins_->find_str("NotImplemented");
  return ni && v.same(*ni);
}

bool VM::is_exception_class(const Value& v) const {
  return v.is(ObjKind::Class) && base_exception_ && v.as<Class>()->is_subclass_of(base_exception_.get());
}

bool VM::is_exception(const Value& v) const {
  return v.is(ObjKind::Instance) && base_exception_ && v.as<Instance>()->cls->is_subclass_of(base_exception_.get());
}

std::string VM::exception_type_name(const Class& cls) {
  const std::string& name = cls.qualname.empty() ? cls.name : cls.qualname;
  if (cls.module == "builtins" || cls.module == "__main__") return name;
  return cls.module + "." + name;
}

// An error raised by the interpreter or a binding names its type: a builtin
// exception class, or a dotted one of a library ("torch._dynamo.exc.Unsupported"),
// made once per VM as a subclass of RuntimeError, as torch's exceptions are.
Ref<Class> VM::exception_class(const std::string& type) {
  if (const Value* v = builtins_->find_str(type); v && is_exception_class(*v)) return Ref<Class>(v->as<Class>());
  auto it = foreign_exceptions_.find(type);
  if (it != foreign_exceptions_.end()) return it->second;
  const size_t dot = type.rfind('.');
  const Value* base = builtins_->find_str(type.starts_with("torch.") ? "RuntimeError" : "Exception");
  auto cls = make<Class>(dot == std::string::npos ? type : type.substr(dot + 1),
                         base && base->is(ObjKind::Class) ? Ref<Class>(base->as<Class>()) : base_exception_);
  cls->qualname = cls->name;
  cls->module = dot == std::string::npos ? "builtins" : type.substr(0, dot);
  foreign_exceptions_.emplace(type, cls);
  return cls;
}

Value VM::exception_value(PyError& e) {
  if (!e.value.is_none()) return e.value;
  Ref<Class> cls = exception_class(e.type());
  ValueVec args;
  if (!e.message().empty()) args.push_back(str_value(e.message()));
  Value exc = call(Value(cls), std::move(args));
  // A KeyError's message is the key's repr already (VM::key_error keeps the key itself).
  if (e.type() == "KeyError") exc.as<Instance>()->dict->set(str_value("__kiln_str__"), str_value(e.message()));
  e.value = exc;
  return exc;
}

PyError VM::key_error(const Value& key) {
  PyError e("KeyError", repr_of(key));
  if (base_exception_) e.value = call(Value(exception_class("KeyError")), ValueVec{key});
  return e;
}

PyError VM::error_for(const Value& exc) {
  if (!is_exception(exc)) throw_type_error("exceptions must derive from BaseException");
  Instance* inst = exc.as<Instance>();
  const Value* own_str = inst->dict->find_str("__kiln_str__");
  PyError e(exception_type_name(*inst->cls), own_str ? own_str->as<Str>()->s : str_of(exc));
  e.value = exc;
  if (inst->raised) {
    e.traceback = inst->raised->traceback;
    e.where = inst->raised->where;
  }
  return e;
}

void VM::raise_value(const Value& raised, const Value* cause) {
  Value exc = raised;
  if (exc.is(ObjKind::Class) && is_exception_class(exc)) exc = call(exc, ValueVec{});
  if (!is_exception(exc)) throw_type_error("exceptions must derive from BaseException");
  if (cause) {
    Value c = *cause;
    if (c.is(ObjKind::Class) && is_exception_class(c)) c = call(c, ValueVec{});
    if (!c.is_none() && !is_exception(c)) throw_type_error("exception causes must derive from BaseException");
    exc.as<Instance>()->dict->set(str_value("__cause__"), c);
    exc.as<Instance>()->dict->set(str_value("__suppress_context__"), Value(true));
  }
  throw error_for(exc);
}

// The frames' handled ranges say which exception each frame is handling; the
// innermost frame that handles one has it.
Value VM::handled_exception(const Frame** in_frame) const {
  for (const Frame* f = current_frame; f; f = f->parent) {
    if (!f->code || f->code->handled_ranges.empty()) continue;
    const ExceptEntry* e = Code::innermost(f->code->handled_ranges, f->pc);
    if (e && size_t(e->depth) < f->stack.size()) {
      if (in_frame) *in_frame = f;
      return f->stack[size_t(e->depth)];
    }
  }
  return Value();
}

void VM::note_context(const Value& exc) {
  Value handled = handled_exception();
  if (handled.is_none() || handled.same(exc) || !is_exception(exc)) return;
  Instance* inst = exc.as<Instance>();
  if (const Value* ctx = inst->dict->find_str("__context__"); ctx && !ctx->is_none()) return;
  inst->dict->set(str_value("__context__"), handled);
}

std::string VM::format_exception(const PyError& e, int chain_depth) {
  std::string text;
  if (is_exception(e.value) && chain_depth < 16) {
    const Instance* inst = e.value.as<Instance>();
    Value cause = attr_or_none(inst, "__cause__"), context = attr_or_none(inst, "__context__");
    auto caught_text = [&](const Value& other) {
      PyError inner = error_for(other);
      return format_exception(inner, chain_depth + 1);
    };
    if (is_exception(cause)) {
      text = caught_text(cause) + "\nThe above exception was the direct cause of the following exception:\n\n";
    } else if (is_exception(context) && !truth(attr_or_none(inst, "__suppress_context__"))) {
      text = caught_text(context) + "\nDuring handling of the above exception, another exception occurred:\n\n";
    }
  }
  if (!e.traceback.empty()) {
    text += "Traceback (most recent call last):\n";
    for (const std::string& line : e.traceback) text += line;
  }
  text += e.message().empty() ? e.type() + "\n" : e.type() + ": " + e.message() + "\n";
  return text;
}

}  // namespace kiln::py
