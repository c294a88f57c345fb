// logging, after CPython 3.12's: loggers in a dotted hierarchy, levels,
// handlers writing to sys.stderr / sys.stdout (or any object with write()),
// %- and {-style formatters, basicConfig, and the last-resort handler that
// prints a bare message when nothing is configured. Files are refused.
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kLoggingSource = R"PY(# logging in the subset.
import sys
import time
import _kiln_std

CRITICAL = 50
FATAL = CRITICAL
ERROR = 40
WARNING = 30
WARN = WARNING
INFO = 20
DEBUG = 10
NOTSET = 0

_levelToName = {CRITICAL: "CRITICAL", ERROR: "ERROR", WARNING: "WARNING", INFO: "INFO", DEBUG: "DEBUG", NOTSET: "NOTSET"}
_nameToLevel = {"CRITICAL": CRITICAL, "FATAL": FATAL, "ERROR": ERROR, "WARN": WARNING, "WARNING": WARNING,
                "INFO": INFO, "DEBUG": DEBUG, "NOTSET": NOTSET}
BASIC_FORMAT = "%(levelname)s:%(name)s:%(message)s"
_disable = 0
raiseExceptions = True


def getLevelName(level):
    result = _levelToName.get(level)
    if result is not None:
        return result
    result = _nameToLevel.get(level)
    if result is not None:
        return result
    return "Level %s" % level


def getLevelNamesMapping():
    return dict(_nameToLevel)


def addLevelName(level, levelName):
    _levelToName[level] = levelName
    _nameToLevel[levelName] = level


def _checkLevel(level):
    if isinstance(level, int):
        return level
    if isinstance(level, str):
        if level not in _nameToLevel:
            _kiln_std.raise_error("ValueError", "Unknown level: %r" % level)
        return _nameToLevel[level]
    _kiln_std.raise_error("TypeError", "Level not an integer or a valid string: %r" % (level,))


def _basename(p):
    i = len(p) - 1
    while i >= 0 and p[i] != "/":
        i -= 1
    return p[i + 1:]


_start_time = time.time()


class LogRecord:
    def __init__(self, name, level, pathname, lineno, msg, args, exc_info, func=None, sinfo=None):
        ct = time.time()
        self.name = name
        self.msg = msg
        if args and len(args) == 1 and isinstance(args[0], dict) and args[0]:
            args = args[0]
        self.args = args
        self.levelname = getLevelName(level)
        self.levelno = level
        self.pathname = pathname
        self.filename = _basename(pathname)
        self.module = self.filename[:-3] if self.filename.endswith(".py") else self.filename
        self.exc_info = exc_info
        self.exc_text = None
        self.stack_info = sinfo
        self.lineno = lineno
        self.funcName = func
        self.created = ct
        self.msecs = int((ct - int(ct)) * 1000)
        self.relativeCreated = (ct - _start_time) * 1000
        self.thread = 0
        self.threadName = "MainThread"
        self.processName = "MainProcess"
        self.process = 0
        self.taskName = None

    def getMessage(self):
        msg = str(self.msg)
        if self.args:
            msg = msg % self.args
        return msg

    def __repr__(self):
        return '<LogRecord: %s, %s, %s, %s, "%s">' % (self.name, self.levelno, self.pathname, self.lineno, self.msg)


class Formatter:
    def __init__(self, fmt=None, datefmt=None, style="%", validate=True, *, defaults=None):
        if style != "%" and style != "{":
            _kiln_std.refuse("logging.Formatter(style=" + repr(style) + ") is outside Kiln's subset ('%' and '{' are)")
        if fmt is None:
            fmt = "%(message)s" if style == "%" else "{message}"
        self._fmt = fmt
        self._style = style
        self.datefmt = datefmt
        self.default_time_format = "%Y-%m-%d %H:%M:%S"
        self.default_msec_format = "%s,%03d"

    def usesTime(self):
        if self._style == "{":
            return "{asctime" in self._fmt
        return "%(asctime)" in self._fmt

    def formatTime(self, record, datefmt=None):
        if datefmt:
            return time.strftime(datefmt)
        return self.default_msec_format % (time.strftime(self.default_time_format), record.msecs)

    def formatMessage(self, record):
        values = _kiln_std.instance_dict(record)
        if self._style == "{":
            return self._fmt.format(**values)
        return self._fmt % values

    def format(self, record):
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        return self.formatMessage(record)


_defaultFormatter = Formatter()


class Filter:
    def __init__(self, name=""):
        self.name = name

    def filter(self, record):
        n = self.name
        if not n or n == record.name:
            return True
        return record.name.startswith(n + ".")


class Filterer:
    def __init__(self):
        self.filters = []

    def addFilter(self, filter):
        if filter not in self.filters:
            self.filters.append(filter)

    def removeFilter(self, filter):
        if filter in self.filters:
            self.filters.remove(filter)

    def filter(self, record):
        for f in self.filters:
            if hasattr(f, "filter"):
                result = f.filter(record)
            else:
                result = f(record)
            if not result:
                return False
        return True


class Handler(Filterer):
    def __init__(self, level=NOTSET):
        Filterer.__init__(self)
        self.name = None
        self.level = _checkLevel(level)
        self.formatter = None

    def setLevel(self, level):
        self.level = _checkLevel(level)

    def setFormatter(self, fmt):
        self.formatter = fmt

    def format(self, record):
        fmt = self.formatter if self.formatter is not None else _defaultFormatter
        return fmt.format(record)

    def handle(self, record):
        if self.filter(record):
            self.emit(record)
            return True
        return False

    def emit(self, record):
        _kiln_std.raise_error("NotImplementedError", "emit must be implemented by Handler subclasses")

    def flush(self):
        pass

    def close(self):
        pass


class StreamHandler(Handler):
    terminator = "\n"

    def __init__(self, stream=None):
        Handler.__init__(self)
        self.stream = stream

    def emit(self, record):
        stream = self.stream if self.stream is not None else sys.stderr
        stream.write(self.format(record) + self.terminator)

    def flush(self):
        pass

    def setStream(self, stream):
        old = self.stream
        self.stream = stream
        return old

    def __repr__(self):
        return "<StreamHandler <stderr> (%s)>" % getLevelName(self.level)


class NullHandler(Handler):
    def emit(self, record):
        pass


class FileHandler(StreamHandler):
    def __init__(self, filename, mode="a", encoding=None, delay=False, errors=None):
        _kiln_std.refuse("logging.FileHandler is outside Kiln's Python subset (programs cannot write files)")


class _StderrHandler(StreamHandler):
    def __init__(self, level):
        StreamHandler.__init__(self)
        self.level = level


lastResort = _StderrHandler(WARNING)


class Logger(Filterer):
    def __init__(self, name, level=NOTSET):
        Filterer.__init__(self)
        self.name = name
        self.level = _checkLevel(level)
        self.parent = None
        self.propagate = True
        self.handlers = []
        self.disabled = False

    def setLevel(self, level):
        self.level = _checkLevel(level)

    def getEffectiveLevel(self):
        logger = self
        while logger is not None:
            if logger.level:
                return logger.level
            logger = logger.parent
        return NOTSET

    def isEnabledFor(self, level):
        if _disable >= level:
            return False
        return level >= self.getEffectiveLevel()

    def debug(self, msg, *args, **kwargs):
        if self.isEnabledFor(DEBUG):
            self._log(DEBUG, msg, args, 2, **kwargs)

    def info(self, msg, *args, **kwargs):
        if self.isEnabledFor(INFO):
            self._log(INFO, msg, args, 2, **kwargs)

    def warning(self, msg, *args, **kwargs):
        if self.isEnabledFor(WARNING):
            self._log(WARNING, msg, args, 2, **kwargs)

    def warn(self, msg, *args, **kwargs):
        if self.isEnabledFor(WARNING):
            self._log(WARNING, msg, args, 2, **kwargs)

    def error(self, msg, *args, **kwargs):
        if self.isEnabledFor(ERROR):
            self._log(ERROR, msg, args, 2, **kwargs)

    def exception(self, msg, *args, exc_info=True, **kwargs):
        if self.isEnabledFor(ERROR):
            self._log(ERROR, msg, args, 2, **kwargs)

    def critical(self, msg, *args, **kwargs):
        if self.isEnabledFor(CRITICAL):
            self._log(CRITICAL, msg, args, 2, **kwargs)

    fatal = critical

    def log(self, level, msg, *args, **kwargs):
        if not isinstance(level, int):
            _kiln_std.raise_error("TypeError", "level must be an integer")
        if self.isEnabledFor(level):
            self._log(level, msg, args, 2, **kwargs)

    def _log(self, level, msg, args, depth, exc_info=None, extra=None, stack_info=False, stacklevel=1):
        # depth: frames from here up to the one that logged (2 from a level
        # method, 3 through a module-level function).
        pathname, lineno, line, func = _kiln_std.caller(depth - 1 + stacklevel)
        record = LogRecord(self.name, level, pathname, lineno, msg, args, None, func)
        if extra is not None:
            for key, value in extra.items():
                if key in ["message", "asctime"] or key in _kiln_std.instance_dict(record):
                    _kiln_std.raise_error("KeyError", "\"Attempt to overwrite %r in LogRecord\"" % key)
                setattr(record, key, value)
        self.handle(record)

    def handle(self, record):
        if self.disabled:
            return
        if not self.filter(record):
            return
        self.callHandlers(record)

    def callHandlers(self, record):
        c = self
        found = 0
        while c is not None:
            for hdlr in c.handlers:
                found = found + 1
                if record.levelno >= hdlr.level:
                    hdlr.handle(record)
            if not c.propagate:
                c = None
            else:
                c = c.parent
        if found == 0 and lastResort is not None:
            if record.levelno >= lastResort.level:
                lastResort.handle(record)

    def addHandler(self, hdlr):
        if hdlr not in self.handlers:
            self.handlers.append(hdlr)

    def removeHandler(self, hdlr):
        if hdlr in self.handlers:
            self.handlers.remove(hdlr)

    def hasHandlers(self):
        c = self
        while c is not None:
            if c.handlers:
                return True
            if not c.propagate:
                return False
            c = c.parent
        return False

    def getChild(self, suffix):
        if self is root:
            return getLogger(suffix)
        return getLogger(self.name + "." + suffix)

    def __repr__(self):
        return "<%s %s (%s)>" % (type(self).__name__, self.name, getLevelName(self.getEffectiveLevel()))


class RootLogger(Logger):
    def __init__(self, level):
        Logger.__init__(self, "root", level)


root = RootLogger(WARNING)
_loggers = {}


def getLogger(name=None):
    if not name or name == root.name:
        return root
    if not isinstance(name, str):
        _kiln_std.raise_error("TypeError", "A logger name must be a string")
    if name in _loggers:
        return _loggers[name]
    logger = Logger(name)
    parts = name.split(".")
    parent = root
    i = len(parts) - 1
    while i > 0:
        prefix = ".".join(parts[:i])
        if prefix in _loggers:
            parent = _loggers[prefix]
            break
        i -= 1
    logger.parent = parent
    for other in _loggers.values():
        if other.name.startswith(name + ".") and not other.parent.name.startswith(name + "."):
            other.parent = logger
    _loggers[name] = logger
    return logger


def getLoggerClass():
    return Logger


def basicConfig(**kwargs):
    force = kwargs.pop("force", False)
    if force:
        for h in list(root.handlers):
            root.removeHandler(h)
    if len(root.handlers) == 0:
        handlers = kwargs.pop("handlers", None)
        if "filename" in kwargs:
            _kiln_std.refuse("logging.basicConfig(filename=) is outside Kiln's Python subset (programs cannot write files)")
        stream = kwargs.pop("stream", None)
        if handlers is None:
            handlers = [StreamHandler(stream)]
        dfs = kwargs.pop("datefmt", None)
        style = kwargs.pop("style", "%")
        fmt = kwargs.pop("format", BASIC_FORMAT if style == "%" else "{levelname}:{name}:{message}")
        fs = Formatter(fmt, dfs, style)
        for h in handlers:
            if h.formatter is None:
                h.setFormatter(fs)
            root.addHandler(h)
        level = kwargs.pop("level", None)
        if level is not None:
            root.setLevel(level)
        kwargs.pop("encoding", None)
        kwargs.pop("errors", None)
        if kwargs:
            keys = ", ".join(kwargs.keys())
            _kiln_std.raise_error("ValueError", "Unrecognised argument(s): %s" % keys)


def _root_log(level, msg, args, kwargs):
    if len(root.handlers) == 0:
        basicConfig()
    if root.isEnabledFor(level):
        root._log(level, msg, args, 3, **kwargs)


def critical(msg, *args, **kwargs):
    _root_log(CRITICAL, msg, args, kwargs)


fatal = critical


def error(msg, *args, **kwargs):
    _root_log(ERROR, msg, args, kwargs)


def exception(msg, *args, exc_info=True, **kwargs):
    _root_log(ERROR, msg, args, kwargs)


def warning(msg, *args, **kwargs):
    _root_log(WARNING, msg, args, kwargs)


def warn(msg, *args, **kwargs):
    _root_log(WARNING, msg, args, kwargs)


def info(msg, *args, **kwargs):
    _root_log(INFO, msg, args, kwargs)


def debug(msg, *args, **kwargs):
    _root_log(DEBUG, msg, args, kwargs)


def log(level, msg, *args, **kwargs):
    _root_log(level, msg, args, kwargs)


def disable(level=CRITICAL):
    global _disable
    _disable = level


def captureWarnings(capture):
    pass


def shutdown():
    pass
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_logging, kLoggingSource, "logging/__init__.py")

}  // namespace kiln::py
