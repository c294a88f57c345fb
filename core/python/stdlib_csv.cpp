// csv: CPython 3.11's reader and writer (Modules/_csv.c's state machine and
// quoting rules, Lib/csv.py's DictReader/DictWriter) over iterables of lines
// and objects with write(): lists of str, io.StringIO, a program's own file
// stand-ins. Files themselves stay refused by open().
#include "core/python/compiler.h"
#include "core/python/stdlib.h"

namespace kiln::py {

namespace {

const char* const kCsvSource = R"PY(# csv in Kiln's Python subset (CPython 3.11's semantics).
import _kiln_std

QUOTE_MINIMAL, QUOTE_ALL, QUOTE_NONNUMERIC, QUOTE_NONE = 0, 1, 2, 3
__version__ = "1.0"
_field_limit = 131072


class Error(Exception):
    pass


class Dialect:
    delimiter = None
    quotechar = None
    escapechar = None
    doublequote = None
    skipinitialspace = None
    lineterminator = None
    quoting = None
    strict = False


class excel(Dialect):
    delimiter = ','
    quotechar = '"'
    doublequote = True
    skipinitialspace = False
    lineterminator = '\r\n'
    quoting = QUOTE_MINIMAL


class excel_tab(excel):
    delimiter = '\t'


class unix_dialect(Dialect):
    delimiter = ','
    quotechar = '"'
    doublequote = True
    skipinitialspace = False
    lineterminator = '\n'
    quoting = QUOTE_ALL


_dialects = {"excel": excel, "excel-tab": excel_tab, "unix": unix_dialect}


def register_dialect(name, dialect=None, **fmtparams):
    if not isinstance(name, str):
        raise TypeError("dialect name must be a string")
    _dialects[name] = _Params(dialect or excel, fmtparams)


def unregister_dialect(name):
    if name not in _dialects:
        raise Error("unknown dialect")
    del _dialects[name]


def get_dialect(name):
    if name not in _dialects:
        raise Error("unknown dialect")
    return _dialects[name]


def list_dialects():
    return list(_dialects)


def field_size_limit(*args):
    global _field_limit
    old = _field_limit
    if args:
        if not isinstance(args[0], int):
            raise TypeError("limit must be an integer")
        _field_limit = args[0]
    return old


def _char(name, value, allow_none):
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise TypeError('"%s" must be a unicode character or None, not %s' % (name, type(value).__name__)
                        if allow_none else '"%s" must be a unicode character, not %s' % (name, type(value).__name__))
    if len(value) != 1:
        raise TypeError('"%s" must be a unicode character or None, not a string of length %d' % (name, len(value))
                        if allow_none else '"%s" must be a unicode character, not a string of length %d' % (name, len(value)))
    return value


class _Params:
    # A dialect with keyword overrides, checked as _csv.Dialect checks them.
    def __init__(self, dialect, fmtparams):
        if isinstance(dialect, str):
            dialect = get_dialect(dialect)
        def pick(name, default):
            if name in fmtparams:
                return fmtparams[name]
            value = getattr(dialect, name, None)
            return default if value is None else value
        for key in fmtparams:
            if key not in ("delimiter", "quotechar", "escapechar", "doublequote", "skipinitialspace",
                           "lineterminator", "quoting", "strict"):
                raise TypeError("'%s' is an invalid keyword argument for this function" % key)
        self.delimiter = _char("delimiter", pick("delimiter", ','), False)
        self.quoting = pick("quoting", QUOTE_MINIMAL)
        if self.quoting not in (0, 1, 2, 3):
            raise TypeError("bad \"quoting\" value")
        self.quotechar = _char("quotechar", pick("quotechar", '"'), True)
        if self.quotechar is None and self.quoting != QUOTE_NONE:
            raise TypeError("quotechar must be set if quoting enabled")
        self.escapechar = _char("escapechar", fmtparams.get("escapechar", getattr(dialect, "escapechar", None)), True)
        self.doublequote = bool(pick("doublequote", True))
        self.skipinitialspace = bool(pick("skipinitialspace", False))
        self.lineterminator = pick("lineterminator", '\r\n')
        if not isinstance(self.lineterminator, str):
            raise TypeError('"lineterminator" must be a string')
        self.strict = bool(pick("strict", False))


_START_RECORD, _START_FIELD, _ESCAPED_CHAR, _IN_FIELD, _IN_QUOTED_FIELD = 0, 1, 2, 3, 4
_ESCAPE_IN_QUOTED_FIELD, _QUOTE_IN_QUOTED_FIELD, _EAT_CRNL, _AFTER_ESCAPED_CRNL = 5, 6, 7, 8
_EOL = None


class _reader:
    def __init__(self, lines, dialect, fmtparams):
        self.dialect = _Params(dialect, fmtparams)
        self.line_num = 0
        self._lines = iter(lines)

    def __iter__(self):
        return self

    def _save(self):
        field = "".join(self._field)
        if self._numeric:
            self._numeric = False
            field = float(field)
        self._fields.append(field)
        self._field = []

    def _add(self, c):
        if len(self._field) >= _field_limit:
            raise Error("field larger than field limit (%d)" % _field_limit)
        self._field.append(c)

    def _process(self, c):
        d = self.dialect
        s = self._state
        if s == _START_RECORD:
            if c is _EOL:
                return
            if c == '\n' or c == '\r':
                self._state = _EAT_CRNL
                return
            s = self._state = _START_FIELD
        if s == _START_FIELD:
            if c == '\n' or c == '\r' or c is _EOL:
                self._save()
                self._state = _START_RECORD if c is _EOL else _EAT_CRNL
            elif c == d.quotechar and d.quoting != QUOTE_NONE:
                self._state = _IN_QUOTED_FIELD
            elif c == d.escapechar:
                self._state = _ESCAPED_CHAR
            elif c == ' ' and d.skipinitialspace:
                pass
            elif c == d.delimiter:
                self._save()
            else:
                if d.quoting == QUOTE_NONNUMERIC:
                    self._numeric = True
                self._add(c)
                self._state = _IN_FIELD
        elif s == _ESCAPED_CHAR:
            if c == '\n' or c == '\r':
                self._add(c)
                self._state = _AFTER_ESCAPED_CRNL
                return
            self._add('\n' if c is _EOL else c)
            self._state = _IN_FIELD
        elif s == _AFTER_ESCAPED_CRNL:
            if c is _EOL:
                return
            self._state = _IN_FIELD
            self._process(c)
        elif s == _IN_FIELD:
            if c == '\n' or c == '\r' or c is _EOL:
                self._save()
                self._state = _START_RECORD if c is _EOL else _EAT_CRNL
            elif c == d.escapechar:
                self._state = _ESCAPED_CHAR
            elif c == d.delimiter:
                self._save()
                self._state = _START_FIELD
            else:
                self._add(c)
        elif s == _IN_QUOTED_FIELD:
            if c is _EOL:
                pass
            elif c == d.escapechar:
                self._state = _ESCAPE_IN_QUOTED_FIELD
            elif c == d.quotechar and d.quoting != QUOTE_NONE:
                self._state = _QUOTE_IN_QUOTED_FIELD if d.doublequote else _IN_FIELD
            else:
                self._add(c)
        elif s == _ESCAPE_IN_QUOTED_FIELD:
            self._add('\n' if c is _EOL else c)
            self._state = _IN_QUOTED_FIELD
        elif s == _QUOTE_IN_QUOTED_FIELD:
            if d.quoting != QUOTE_NONE and c == d.quotechar:
                self._add(c)
                self._state = _IN_QUOTED_FIELD
            elif c == d.delimiter:
                self._save()
                self._state = _START_FIELD
            elif c == '\n' or c == '\r' or c is _EOL:
                self._save()
                self._state = _START_RECORD if c is _EOL else _EAT_CRNL
            elif not d.strict:
                self._add(c)
                self._state = _IN_FIELD
            else:
                raise Error("'%s' expected after '%s'" % (d.delimiter, d.quotechar))
        elif s == _EAT_CRNL:
            if c == '\n' or c == '\r':
                pass
            elif c is _EOL:
                self._state = _START_RECORD
            else:
                raise Error("new-line character seen in unquoted field - do you need to open the file with newline=''?")

    def __next__(self):
        self._fields = []
        self._field = []
        self._numeric = False
        self._state = _START_RECORD
        while True:
            try:
                line = next(self._lines)
            except StopIteration:
                if self._field or self._state == _IN_QUOTED_FIELD:
                    if self.dialect.strict:
                        raise Error("unexpected end of data")
                    self._save()
                    return self._fields
                raise
            self.line_num += 1
            if not isinstance(line, str):
                raise Error("iterator should return strings, not %s (the file should be opened in text mode)"
                            % type(line).__name__)
            for c in line:
                if c == '\0':
                    raise Error("line contains NUL")
                self._process(c)
            self._process(_EOL)
            if self._state == _START_RECORD:
                return self._fields


def reader(csvfile, dialect="excel", **fmtparams):
    return _reader(csvfile, dialect, fmtparams)


class _writer:
    def __init__(self, f, dialect, fmtparams):
        if not hasattr(f, "write"):
            raise TypeError('argument 1 must have a "write" method')
        self.dialect = _Params(dialect, fmtparams)
        self._write = f.write

    def _field(self, value, only):
        d = self.dialect
        if value is None:
            text = ""
        elif isinstance(value, float):
            text = repr(value)
        else:
            text = str(value)
        quoted = d.quoting == QUOTE_ALL or (d.quoting == QUOTE_NONNUMERIC and not isinstance(value, (int, float)))
        if only and text == "":
            # A record of one empty field would read back as no fields.
            if d.quoting == QUOTE_NONE:
                raise Error("single empty field record must be quoted")
            quoted = True
        out = []
        for c in text:
            if c == d.delimiter or c == d.escapechar or c == d.quotechar or c in d.lineterminator:
                want_escape = d.quoting == QUOTE_NONE
                if not want_escape:
                    if c == d.quotechar:
                        if d.doublequote:
                            out.append(d.quotechar)
                        else:
                            want_escape = True
                    elif c == d.escapechar:
                        want_escape = True
                    if not want_escape:
                        quoted = True
                if want_escape:
                    if d.escapechar is None:
                        raise Error("need to escape, but no escapechar set")
                    out.append(d.escapechar)
            out.append(c)
        text = "".join(out)
        if quoted:
            return d.quotechar + text + d.quotechar
        return text

    def writerow(self, row):
        try:
            fields = list(row)
        except TypeError:
            raise Error("iterable expected, not %s" % type(row).__name__)
        line = self.dialect.delimiter.join(self._field(v, len(fields) == 1) for v in fields)
        return self._write(line + self.dialect.lineterminator)

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


def writer(csvfile, dialect="excel", **fmtparams):
    return _writer(csvfile, dialect, fmtparams)


class DictReader:
    def __init__(self, f, fieldnames=None, restkey=None, restval=None, dialect="excel", *args, **kwds):
        if fieldnames is not None and iter(fieldnames) is fieldnames:
            fieldnames = list(fieldnames)
        self._fieldnames = fieldnames
        self.restkey = restkey
        self.restval = restval
        self.reader = reader(f, dialect, *args, **kwds)
        self.dialect = dialect
        self.line_num = 0

    def __iter__(self):
        return self

    @property
    def fieldnames(self):
        if self._fieldnames is None:
            try:
                self._fieldnames = next(self.reader)
            except StopIteration:
                pass
        self.line_num = self.reader.line_num
        return self._fieldnames

    @fieldnames.setter
    def fieldnames(self, value):
        self._fieldnames = value

    def __next__(self):
        if self.line_num == 0:
            self.fieldnames
        row = next(self.reader)
        self.line_num = self.reader.line_num
        while row == []:
            row = next(self.reader)
        d = dict(zip(self.fieldnames, row))
        lf = len(self.fieldnames)
        lr = len(row)
        if lf < lr:
            d[self.restkey] = row[lf:]
        elif lf > lr:
            for key in self.fieldnames[lr:]:
                d[key] = self.restval
        return d


class DictWriter:
    def __init__(self, f, fieldnames, restval="", extrasaction="raise", dialect="excel", *args, **kwds):
        if fieldnames is not None and iter(fieldnames) is fieldnames:
            fieldnames = list(fieldnames)
        self.fieldnames = fieldnames
        self.restval = restval
        if extrasaction.lower() not in ("raise", "ignore"):
            raise ValueError("extrasaction (%s) must be 'raise' or 'ignore'" % extrasaction)
        self.extrasaction = extrasaction
        self.writer = writer(f, dialect, *args, **kwds)

    def writeheader(self):
        header = dict(zip(self.fieldnames, self.fieldnames))
        return self.writerow(header)

    def _dict_to_list(self, rowdict):
        if self.extrasaction == "raise":
            wrong_fields = [k for k in rowdict if k not in self.fieldnames]
            if wrong_fields:
                raise ValueError("dict contains fields not in fieldnames: " + ", ".join([repr(x) for x in wrong_fields]))
        return (rowdict.get(key, self.restval) for key in self.fieldnames)

    def writerow(self, rowdict):
        return self.writer.writerow(self._dict_to_list(rowdict))

    def writerows(self, rowdicts):
        return self.writer.writerows(map(self._dict_to_list, rowdicts))


class Sniffer:
    def __init__(self):
        _kiln_std.refuse("csv.Sniffer is outside Kiln's csv (it guesses dialects by heuristics)")
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_csv, kCsvSource, "csv.py")

}  // namespace kiln::py
