// traceback: the text Python prints for an exception, for programs that catch
// one and print it themselves (traceback.print_exc() in an except clause).
// Tracebacks are not objects in the subset: an exception carries the lines of
// its traceback, which the interpreter formats as it does for an uncaught one.
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kTracebackSource = R"PY(import sys


def _text(exc):
    return "NoneType: None\n" if exc is None else _format(exc)


def _exception_of(exc, value):
    # format_exception(etype, value, tb), the form before Python 3.10, names the exception second.
    if value is not None:
        return value
    if isinstance(exc, BaseException) or exc is None:
        return exc
    raise TypeError("format_exception() expects an exception, not " + type(exc).__name__)


def _lines(text):
    return [line + "\n" for line in text.split("\n")[:-1]]


def _write(text, file):
    (sys.stderr if file is None else file).write(text)


def format_exc(limit=None, chain=True):
    return _text(sys.exception())


def print_exc(limit=None, file=None, chain=True):
    _write(format_exc(limit, chain), file)


def format_exception(exc, value=None, tb=None, limit=None, chain=True):
    return _lines(_text(_exception_of(exc, value)))


def print_exception(exc, value=None, tb=None, limit=None, file=None, chain=True):
    _write("".join(format_exception(exc, value, tb, limit, chain)), file)


def format_exception_only(exc, value=None):
    e = _exception_of(exc, value)
    message = str(e)
    return [type(e).__name__ + (": " + message if message else "") + "\n"]
)PY";

}  // namespace

void load_traceback(VM& vm, const Ref<Module>& m) {
  def_native(m, "_format", [](VM& vm, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("_format(exc)");
    return str_value(vm.format_exception(vm.error_for(a[0])));
  });
  static const Expected<CodePtr> code = compile_module(kTracebackSource, "traceback.py");
  run_module_source(vm, m, code);
}

}  // namespace kiln::py
