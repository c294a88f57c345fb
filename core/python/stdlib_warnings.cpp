// warnings, after CPython 3.12's: warn() prints `FILE:LINE: Category: msg`
// and the source line to stderr, once per location under the default
// action; filters, simplefilter and catch_warnings as CPython's. Message and
// module patterns are matched as literal prefixes (the subset has no re).
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kWarningsSource = R"PY(# warnings in the subset.
import _kiln_std
import sys


def _category(name, base):
    # The builtin class when the interpreter has one, else a plain class
    # made here and published as a builtin (programs name them bare).
    existing = _kiln_std.builtin(name)
    if existing is not None:
        return existing
    if base is None:
        class Warning:
            pass
        cls = Warning
    else:
        class _Category(base):
            pass
        cls = _Category
    _kiln_std.set_class_name(cls, name, "builtins")
    _kiln_std.set_builtin(name, cls)
    return cls


Warning = _category("Warning", None)
UserWarning = _category("UserWarning", Warning)
DeprecationWarning = _category("DeprecationWarning", Warning)
PendingDeprecationWarning = _category("PendingDeprecationWarning", Warning)
SyntaxWarning = _category("SyntaxWarning", Warning)
RuntimeWarning = _category("RuntimeWarning", Warning)
FutureWarning = _category("FutureWarning", Warning)
ImportWarning = _category("ImportWarning", Warning)
UnicodeWarning = _category("UnicodeWarning", Warning)
BytesWarning = _category("BytesWarning", Warning)
ResourceWarning = _category("ResourceWarning", Warning)
EncodingWarning = _category("EncodingWarning", Warning)

# (action, message, category, module, lineno), first match wins, as CPython's.
filters = []
_defaults = [("default", "", DeprecationWarning, "__main__", 0),
             ("ignore", "", DeprecationWarning, "", 0),
             ("ignore", "", PendingDeprecationWarning, "", 0),
             ("ignore", "", ImportWarning, "", 0),
             ("ignore", "", ResourceWarning, "", 0)]
_shown = {}
_record = None
_ACTIONS = ["error", "ignore", "always", "default", "module", "once"]


def _issubclass(cls, base):
    c = cls
    while c is not None:
        if c is base:
            return True
        c = _kiln_std.base_of(c)
    return False


def _check_action(action):
    if action not in _ACTIONS:
        _kiln_std.raise_error("ValueError", "invalid action: " + repr(action))


def filterwarnings(action, message="", category=Warning, module="", lineno=0, append=False):
    _check_action(action)
    item = (action, message, category, module, lineno)
    if item in filters:
        filters.remove(item)
    if append:
        filters.append(item)
    else:
        filters.insert(0, item)


def simplefilter(action, category=Warning, lineno=0, append=False):
    filterwarnings(action, "", category, "", lineno, append)


def resetwarnings():
    filters.clear()


def _matches(pattern, text):
    return pattern == "" or text.lower().startswith(pattern.lower())


def _action_for(text, category, module, lineno):
    for action, msg, cat, mod, ln in filters + _defaults:
        if _matches(msg, text) and _issubclass(category, cat) and (mod == "" or mod == module) and (ln == 0 or ln == lineno):
            return action
    return "default"


def formatwarning(message, category, filename, lineno, line=None):
    s = filename + ":" + str(lineno) + ": " + category.__name__ + ": " + str(message) + "\n"
    if line:
        s += "  " + line.strip() + "\n"
    return s


def _showwarning(message, category, filename, lineno, file=None, line=None):
    text = formatwarning(message, category, filename, lineno, line)
    if file is None:
        sys.stderr.write(text)
    else:
        file.write(text)


showwarning = _showwarning


class WarningMessage:
    def __init__(self, message, category, filename, lineno, file=None, line=None):
        self.message = message
        self.category = category
        self.filename = filename
        self.lineno = lineno
        self.file = file
        self.line = line

    def __str__(self):
        return ("{message : " + repr(self.message) + ", category : " + repr(self.category.__name__) +
                ", filename : " + repr(self.filename) + ", lineno : " + str(self.lineno) + ", line : " + repr(self.line) + "}")


def warn(message, category=None, stacklevel=1, source=None, *, skip_file_prefixes=()):
    if _kiln_std.is_instance_object(message) and _issubclass(type(message), Warning):
        category = type(message)
    if category is None:
        category = UserWarning
    if not (_kiln_std.is_class(category) and _issubclass(category, Warning)):
        _kiln_std.raise_error("TypeError", "category must be a Warning subclass, not '" + type(category).__name__ + "'")
    filename, lineno, line, func = _kiln_std.caller(stacklevel)
    warn_explicit(message, category, filename, lineno, "__main__", None, None, None, line)


def warn_explicit(message, category, filename, lineno, module=None, registry=None, module_globals=None, source=None,
                  _line=None):
    text = str(message)
    action = _action_for(text, category, module if module is not None else "__main__", lineno)
    if action == "ignore":
        return
    if action == "error":
        if _kiln_std.is_instance_object(message):
            raise message
        raise category(text)
    if action == "once":
        key = (text, category.__name__)
    elif action == "module":
        key = (text, category.__name__, filename)
    elif action == "default":
        key = (text, category.__name__, filename, lineno)
    else:
        key = None
    if key is not None and not _kiln_std.mark_once(_shown, key):
        return
    if _record is not None:
        _record.append(WarningMessage(message, category, filename, lineno, None, _line))
        return
    showwarning(message, category, filename, lineno, None, _line)


class catch_warnings:
    def __init__(self, *, record=False, action=None, category=Warning, lineno=0, append=False):
        self._recording = record
        self._filter = action
        self._category = category
        self._lineno = lineno
        self._append = append

    def __enter__(self):
        global _record
        self._saved_filters = list(filters)
        self._saved_shown = dict(_shown)
        self._saved_record = _record
        self._saved_show = showwarning
        if self._filter is not None:
            simplefilter(self._filter, self._category, self._lineno, self._append)
        if self._recording:
            _record = []
            return _record
        return None

    def __exit__(self, *exc):
        global _record
        global showwarning
        filters.clear()
        filters.extend(self._saved_filters)
        _shown.clear()
        _shown.update(self._saved_shown)
        _record = self._saved_record
        showwarning = self._saved_show
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_warnings, kWarningsSource, "warnings.py")

}  // namespace kiln::py
