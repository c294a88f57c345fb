// datetime: Python source in the subset after CPython 3.12's Lib/_pydatetime.py
// (the same normalization, ordinal arithmetic and printed text); the local
// clock and its UTC offset are the one native part.
#include <cmath>
#include <ctime>

#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kDatetimeSource = R"PY(# datetime, after CPython 3.12's pure-Python module.
import _kiln_std
import time as _time

MINYEAR = 1
MAXYEAR = 9999

_DAYS_IN_MONTH = [-1, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
_DAYS_BEFORE_MONTH = [-1]
_dbm = 0
for _dim in _DAYS_IN_MONTH[1:]:
    _DAYS_BEFORE_MONTH.append(_dbm)
    _dbm += _dim
_MONTHNAMES = [None, "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_FULLMONTHNAMES = [None, "January", "February", "March", "April", "May", "June", "July", "August",
                   "September", "October", "November", "December"]
_DAYNAMES = [None, "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
_FULLDAYNAMES = [None, "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_DI400Y = 146097
_DI100Y = 36524
_DI4Y = 1461


def _err(kind, msg):
    _kiln_std.raise_error(kind, msg)


def _is_leap(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_before_year(year):
    y = year - 1
    return y * 365 + y // 4 - y // 100 + y // 400


def _days_in_month(year, month):
    if month == 2 and _is_leap(year):
        return 29
    return _DAYS_IN_MONTH[month]


def _days_before_month(year, month):
    return _DAYS_BEFORE_MONTH[month] + (month > 2 and _is_leap(year))


def _ymd2ord(year, month, day):
    return _days_before_year(year) + _days_before_month(year, month) + day


def _ord2ymd(n):
    n -= 1
    n400, n = divmod(n, _DI400Y)
    year = n400 * 400 + 1
    n100, n = divmod(n, _DI100Y)
    n4, n = divmod(n, _DI4Y)
    n1, n = divmod(n, 365)
    year += n100 * 100 + n4 * 4 + n1
    if n1 == 4 or n100 == 4:
        return year - 1, 12, 31
    leapyear = n1 == 3 and (n4 != 24 or n100 == 3)
    month = (n + 50) >> 5
    preceding = _DAYS_BEFORE_MONTH[month] + (month > 2 and leapyear)
    if preceding > n:
        month -= 1
        preceding -= _DAYS_IN_MONTH[month] + (month == 2 and leapyear)
    n -= preceding
    return year, month, n + 1


def _index(value, name):
    if isinstance(value, float):
        _err("TypeError", "'float' object cannot be interpreted as an integer")
    if not isinstance(value, int):
        _err("TypeError", "an integer is required (got type " + type(value).__name__ + ")")
    return int(value)


def _check_date_fields(year, month, day):
    year = _index(year, "year")
    month = _index(month, "month")
    day = _index(day, "day")
    if not MINYEAR <= year <= MAXYEAR:
        _err("ValueError", "year " + str(year) + " is out of range")
    if not 1 <= month <= 12:
        _err("ValueError", "month must be in 1..12")
    if not 1 <= day <= _days_in_month(year, month):
        _err("ValueError", "day is out of range for month")
    return year, month, day


def _check_time_fields(hour, minute, second, microsecond, fold):
    hour = _index(hour, "hour")
    minute = _index(minute, "minute")
    second = _index(second, "second")
    microsecond = _index(microsecond, "microsecond")
    if not 0 <= hour <= 23:
        _err("ValueError", "hour must be in 0..23")
    if not 0 <= minute <= 59:
        _err("ValueError", "minute must be in 0..59")
    if not 0 <= second <= 59:
        _err("ValueError", "second must be in 0..59")
    if not 0 <= microsecond <= 999999:
        _err("ValueError", "microsecond must be in 0..999999")
    if fold not in (0, 1):
        _err("ValueError", "fold must be either 0 or 1")
    return hour, minute, second, microsecond, fold


def _check_tzinfo_arg(tz):
    if tz is not None and not isinstance(tz, tzinfo):
        _err("TypeError", "tzinfo argument must be None or of a tzinfo subclass, not type '" + type(tz).__name__ + "'")


def _cmperror(x, y):
    _err("TypeError", "can't compare " + _tname(x) + " to " + _tname(y))


def _install_order(cls, accepts, compare):
    # <, <=, >, >= of one class: compare(a, b) is negative, zero or positive.
    # A date against a datetime is CPython's "can't compare" TypeError; any
    # other type gets NotImplemented, so Python's own TypeError follows.
    def make(test):
        def op(self, other):
            if not accepts(other):
                if isinstance(self, date) and isinstance(other, date):
                    _cmperror(self, other)
                return NotImplemented
            return test(compare(self, other))
        return op
    cls.__lt__ = make(lambda c: c < 0)
    cls.__le__ = make(lambda c: c <= 0)
    cls.__gt__ = make(lambda c: c > 0)
    cls.__ge__ = make(lambda c: c >= 0)


def _tname(x):
    t = type(x)
    return t.__qualname__ if t.__module__ == "builtins" else t.__module__ + "." + t.__qualname__


def _cmp(x, y):
    return 0 if x == y else (1 if x > y else -1)


def _format_time(hh, mm, ss, us, timespec="auto"):
    if timespec == "auto":
        timespec = "microseconds" if us else "seconds"
    elif timespec == "milliseconds":
        us //= 1000
    if timespec == "hours":
        return "%02d" % hh
    if timespec == "minutes":
        return "%02d:%02d" % (hh, mm)
    if timespec == "seconds":
        return "%02d:%02d:%02d" % (hh, mm, ss)
    if timespec == "milliseconds":
        return "%02d:%02d:%02d.%03d" % (hh, mm, ss, us)
    if timespec == "microseconds":
        return "%02d:%02d:%02d.%06d" % (hh, mm, ss, us)
    _err("ValueError", "Unknown timespec value")


def _format_offset(off, sep=":"):
    if off is None:
        return ""
    sign = "+"
    if off.days < 0:
        sign = "-"
        off = -off
    hh, mm = divmod(off, timedelta(hours=1))
    mm, ss = divmod(mm, timedelta(minutes=1))
    s = "%s%02d%s%02d" % (sign, hh, sep, mm)
    if ss or ss.microseconds:
        s += "%s%02d" % (sep, ss.seconds)
        if ss.microseconds:
            s += ".%06d" % ss.microseconds
    return s


def _wrap_strftime(obj, fmt, timetuple):
    # The C library's strftime in the C locale, over (year, month, day, hour,
    # minute, second, weekday, yday); %f, %z and %Z from the object.
    year, month, day, hh, mm, ss, wday, yday = timetuple
    out = []
    i = 0
    n = len(fmt)
    while i < n:
        ch = fmt[i]
        i += 1
        if ch != "%" or i >= n:
            out.append(ch)
            continue
        ch = fmt[i]
        i += 1
        if ch == "Y":
            out.append(str(year) if year >= 1000 else "%d" % year)
        elif ch == "m":
            out.append("%02d" % month)
        elif ch == "d":
            out.append("%02d" % day)
        elif ch == "e":
            out.append("%2d" % day)
        elif ch == "H":
            out.append("%02d" % hh)
        elif ch == "I":
            out.append("%02d" % ((hh + 11) % 12 + 1))
        elif ch == "M":
            out.append("%02d" % mm)
        elif ch == "S":
            out.append("%02d" % ss)
        elif ch == "f":
            out.append("%06d" % getattr(obj, "microsecond", 0))
        elif ch == "y":
            out.append("%02d" % (year % 100))
        elif ch == "C":
            out.append("%02d" % (year // 100))
        elif ch == "b" or ch == "h":
            out.append(_MONTHNAMES[month])
        elif ch == "B":
            out.append(_FULLMONTHNAMES[month])
        elif ch == "a":
            out.append(_DAYNAMES[wday + 1])
        elif ch == "A":
            out.append(_FULLDAYNAMES[wday + 1])
        elif ch == "p":
            out.append("AM" if hh < 12 else "PM")
        elif ch == "j":
            out.append("%03d" % yday)
        elif ch == "w":
            out.append(str((wday + 1) % 7))
        elif ch == "u":
            out.append(str(wday + 1))
        elif ch == "U":
            out.append("%02d" % ((yday + 6 - (wday + 1) % 7) // 7))
        elif ch == "W":
            out.append("%02d" % ((yday + 6 - wday) // 7))
        elif ch == "z":
            off = obj.utcoffset() if hasattr(obj, "utcoffset") else None
            out.append(_format_offset(off, "") if off is not None else "")
        elif ch == "Z":
            name = obj.tzname() if hasattr(obj, "tzname") else None
            out.append(name if name is not None else "")
        elif ch == "c":
            out.append("%s %s %2d %02d:%02d:%02d %d" % (_DAYNAMES[wday + 1], _MONTHNAMES[month], day, hh, mm, ss, year))
        elif ch == "x":
            out.append("%02d/%02d/%02d" % (month, day, year % 100))
        elif ch == "X" or ch == "T":
            out.append("%02d:%02d:%02d" % (hh, mm, ss))
        elif ch == "D":
            out.append("%02d/%02d/%02d" % (month, day, year % 100))
        elif ch == "F":
            out.append("%d-%02d-%02d" % (year, month, day))
        elif ch == "R":
            out.append("%02d:%02d" % (hh, mm))
        elif ch == "G" or ch == "V":
            iy, iw, _ = _isocalendar(year, month, day)
            out.append(str(iy) if ch == "G" else "%02d" % iw)
        elif ch == "n":
            out.append("\n")
        elif ch == "t":
            out.append("\t")
        elif ch == "%":
            out.append("%")
        else:
            out.append("%" + ch)
    return "".join(out)


def _isoweek1monday(year):
    firstday = _ymd2ord(year, 1, 1)
    firstweekday = (firstday + 6) % 7
    week1monday = firstday - firstweekday
    if firstweekday > 3:
        week1monday += 7
    return week1monday


def _isocalendar(y, m, d):
    year = y
    week1monday = _isoweek1monday(year)
    today = _ymd2ord(y, m, d)
    week, day = divmod(today - week1monday, 7)
    if week < 0:
        year -= 1
        week1monday = _isoweek1monday(year)
        week, day = divmod(today - week1monday, 7)
    elif week >= 52:
        if today >= _isoweek1monday(year + 1):
            year += 1
            week = 0
    return year, week + 1, day + 1


class timedelta:
    def __init__(self, days=0, seconds=0, microseconds=0, milliseconds=0, minutes=0, hours=0, weeks=0):
        for v in (days, seconds, microseconds, milliseconds, minutes, hours, weeks):
            if not isinstance(v, (int, float)):
                _err("TypeError", "unsupported type for timedelta " + "component: " + type(v).__name__)
        if all(isinstance(v, int) for v in (days, seconds, microseconds, milliseconds, minutes, hours, weeks)):
            us = ((((weeks * 7 + days) * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000000 + milliseconds * 1000 + microseconds
        else:
            whole = 0
            frac = 0.0
            for v, scale in ((weeks, 604800000000), (days, 86400000000), (hours, 3600000000), (minutes, 60000000),
                             (seconds, 1000000), (milliseconds, 1000), (microseconds, 1)):
                if isinstance(v, float):
                    ip = int(v)
                    whole += ip * scale
                    frac += (v - ip) * scale
                else:
                    whole += v * scale
            us = whole + round(frac)
        d, us = divmod(us, 86400000000)
        s, us = divmod(us, 1000000)
        if abs(d) > 999999999:
            _err("OverflowError", "days=" + str(d) + "; must have magnitude <= 999999999")
        self._days = d
        self._seconds = s
        self._microseconds = us

    @property
    def days(self):
        return self._days

    @property
    def seconds(self):
        return self._seconds

    @property
    def microseconds(self):
        return self._microseconds

    def _to_us(self):
        return (self._days * 86400 + self._seconds) * 1000000 + self._microseconds

    def total_seconds(self):
        return self._to_us() / 10 ** 6

    def __repr__(self):
        args = []
        if self._days:
            args.append("days=%d" % self._days)
        if self._seconds:
            args.append("seconds=%d" % self._seconds)
        if self._microseconds:
            args.append("microseconds=%d" % self._microseconds)
        if not args:
            args.append("0")
        return "%s.%s(%s)" % (type(self).__module__, type(self).__qualname__, ", ".join(args))

    def __str__(self):
        mm, ss = divmod(self._seconds, 60)
        hh, mm = divmod(mm, 60)
        s = "%d:%02d:%02d" % (hh, mm, ss)
        if self._days:
            plural = "s" if abs(self._days) != 1 else ""
            s = ("%d day%s, " % (self._days, plural)) + s
        if self._microseconds:
            s = s + ".%06d" % self._microseconds
        return s

    def __add__(self, other):
        if isinstance(other, timedelta):
            return timedelta(0, 0, self._to_us() + other._to_us())
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, timedelta):
            return timedelta(0, 0, self._to_us() - other._to_us())
        return NotImplemented

    def __rsub__(self, other):
        if isinstance(other, timedelta):
            return -self + other
        return NotImplemented

    def __neg__(self):
        return timedelta(0, 0, -self._to_us())

    def __pos__(self):
        return self

    def __abs__(self):
        return -self if self._days < 0 else self

    def __mul__(self, other):
        if isinstance(other, bool) or isinstance(other, int):
            return timedelta(0, 0, self._to_us() * other)
        if isinstance(other, float):
            return timedelta(0, 0, round(self._to_us() * other))
        return NotImplemented

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if isinstance(other, timedelta):
            return self._to_us() // other._to_us()
        if isinstance(other, int):
            return timedelta(0, 0, self._to_us() // other)
        return NotImplemented

    def __truediv__(self, other):
        if isinstance(other, timedelta):
            return self._to_us() / other._to_us()
        if isinstance(other, int):
            return timedelta(0, 0, round(self._to_us() / other))
        if isinstance(other, float):
            return timedelta(0, 0, round(self._to_us() / other))
        return NotImplemented

    def __mod__(self, other):
        if isinstance(other, timedelta):
            return timedelta(0, 0, self._to_us() % other._to_us())
        return NotImplemented

    def __divmod__(self, other):
        if isinstance(other, timedelta):
            q, r = divmod(self._to_us(), other._to_us())
            return q, timedelta(0, 0, r)
        return NotImplemented

    def __eq__(self, other):
        if isinstance(other, timedelta):
            return self._to_us() == other._to_us()
        return NotImplemented

    def __hash__(self):
        return hash(self._to_us())

    def __bool__(self):
        return self._days != 0 or self._seconds != 0 or self._microseconds != 0


timedelta.min = timedelta(-999999999)
timedelta.max = timedelta(days=999999999, hours=23, minutes=59, seconds=59, microseconds=999999)
timedelta.resolution = timedelta(microseconds=1)


_install_order(timedelta, lambda o: isinstance(o, timedelta), lambda a, b: _cmp(a._to_us(), b._to_us()))


class tzinfo:
    def tzname(self, dt):
        _err("NotImplementedError", "tzinfo subclass must override tzname()")

    def utcoffset(self, dt):
        _err("NotImplementedError", "tzinfo subclass must override utcoffset()")

    def dst(self, dt):
        _err("NotImplementedError", "tzinfo subclass must override dst()")

    def fromutc(self, dt):
        dtoff = dt.utcoffset()
        dtdst = dt.dst()
        if dtdst is None:
            _err("ValueError", "fromutc() requires a non-None dst() result")
        delta = dtoff - dtdst
        if delta:
            dt += delta
            dtdst = dt.dst()
        return dt + dtdst


class date:
    def __init__(self, year, month=None, day=None):
        if month is None or day is None:
            _err("TypeError", "function missing required argument '" + ("month" if month is None else "day") + "'")
        self._year, self._month, self._day = _check_date_fields(year, month, day)

    @classmethod
    def fromtimestamp(cls, t):
        y, m, d, hh, mm, ss, us, off = _kiln_std.localtime(t)
        return cls(y, m, d)

    @classmethod
    def today(cls):
        return cls.fromtimestamp(_time.time())

    @classmethod
    def fromordinal(cls, n):
        y, m, d = _ord2ymd(n)
        return cls(y, m, d)

    @classmethod
    def fromisoformat(cls, date_string):
        if not isinstance(date_string, str):
            _err("TypeError", "fromisoformat: argument must be str")
        parts = _parse_isoformat_date(date_string)
        if parts is None:
            _err("ValueError", "Invalid isoformat string: " + repr(date_string))
        return cls(*parts)

    @classmethod
    def fromisocalendar(cls, year, week, day):
        if not 0 < week < 53:
            out_of_range = True
            if week == 53:
                first_weekday = _ymd2ord(year, 1, 1) % 7
                if first_weekday == 4 or (first_weekday == 3 and _is_leap(year)):
                    out_of_range = False
            if out_of_range:
                _err("ValueError", "Invalid week: " + str(week))
        if not 0 < day < 8:
            _err("ValueError", "Invalid weekday: " + str(day) + " (range is [1, 7])")
        day_1 = _isoweek1monday(year)
        return cls.fromordinal(day_1 + (week - 1) * 7 + day - 1)

    def __repr__(self):
        return "%s.%s(%d, %d, %d)" % (type(self).__module__, type(self).__qualname__, self._year, self._month, self._day)

    def ctime(self):
        weekday = self.toordinal() % 7 or 7
        return "%s %s %2d 00:00:00 %04d" % (_DAYNAMES[weekday], _MONTHNAMES[self._month], self._day, self._year)

    def _timetuple(self):
        yday = self.toordinal() - _ymd2ord(self._year, 1, 1) + 1
        return (self._year, self._month, self._day, 0, 0, 0, self.weekday(), yday)

    def strftime(self, format):
        if not isinstance(format, str):
            _err("TypeError", "strftime() argument 1 must be str, not " + type(format).__name__)
        return _wrap_strftime(self, format, self._timetuple())

    def __format__(self, fmt):
        if not isinstance(fmt, str):
            _err("TypeError", "must be str, not " + type(fmt).__name__)
        if len(fmt) != 0:
            return self.strftime(fmt)
        return str(self)

    def isoformat(self):
        return "%04d-%02d-%02d" % (self._year, self._month, self._day)

    def __str__(self):
        return self.isoformat()

    @property
    def year(self):
        return self._year

    @property
    def month(self):
        return self._month

    @property
    def day(self):
        return self._day

    def toordinal(self):
        return _ymd2ord(self._year, self._month, self._day)

    def replace(self, year=None, month=None, day=None):
        if year is None:
            year = self._year
        if month is None:
            month = self._month
        if day is None:
            day = self._day
        return type(self)(year, month, day)

    def _cmpkey(self):
        return (self._year, self._month, self._day)

    def __eq__(self, other):
        if isinstance(other, date) and not isinstance(other, datetime) and not isinstance(self, datetime):
            return self._cmpkey() == other._cmpkey()
        return NotImplemented

    def __hash__(self):
        return hash(self.toordinal())

    def __add__(self, other):
        if isinstance(other, timedelta):
            o = self.toordinal() + other.days
            if 0 < o <= 3652059:
                return type(self).fromordinal(o)
            _err("OverflowError", "result out of range")
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, timedelta):
            return self + timedelta(-other.days)
        if isinstance(other, date) and not isinstance(other, datetime):
            return timedelta(self.toordinal() - other.toordinal())
        return NotImplemented

    def weekday(self):
        return (self.toordinal() + 6) % 7

    def isoweekday(self):
        return self.toordinal() % 7 or 7

    def isocalendar(self):
        return IsoCalendarDate(*_isocalendar(self._year, self._month, self._day))


_install_order(date, lambda o: isinstance(o, date) and not isinstance(o, datetime),
               lambda a, b: _cmp(a._cmpkey(), b._cmpkey()))


class IsoCalendarDate:
    # A tuple (year, week, weekday) in CPython; the subset's classes cannot
    # subclass tuple, so it indexes, unpacks and compares as one.
    def __init__(self, year, week, weekday):
        self._t = (year, week, weekday)

    @property
    def year(self):
        return self._t[0]

    @property
    def week(self):
        return self._t[1]

    @property
    def weekday(self):
        return self._t[2]

    def __getitem__(self, i):
        return self._t[i]

    def __iter__(self):
        return iter(self._t)

    def __len__(self):
        return 3

    def __eq__(self, other):
        if isinstance(other, IsoCalendarDate):
            other = other._t
        return self._t == other

    def __hash__(self):
        return hash(self._t[0] * 1000 + self._t[1] * 10 + self._t[2])

    def __repr__(self):
        return "%s.%s(year=%d, week=%d, weekday=%d)" % (type(self).__module__, type(self).__qualname__, self._t[0],
                                                        self._t[1], self._t[2])


date.min = date(1, 1, 1)
date.max = date(9999, 12, 31)
date.resolution = timedelta(days=1)


def _parse_isoformat_date(s):
    if len(s) == 10 and s[4] == "-" and s[7] == "-":
        y, m, d = s[0:4], s[5:7], s[8:10]
    elif len(s) == 8 and s.isdigit():
        y, m, d = s[0:4], s[4:6], s[6:8]
    else:
        return None
    if not (y.isdigit() and m.isdigit() and d.isdigit()):
        return None
    return [int(y), int(m), int(d)]


def _parse_isoformat_time(s):
    # [HH[:MM[:SS[.fff[fff]]]]][+HH:MM[:SS[.ffffff]]|Z]
    tz = None
    for i in range(len(s)):
        if s[i] in "+-Z":
            tzs = s[i:]
            s = s[:i]
            if tzs == "Z":
                tz = timezone.utc
            else:
                sign = -1 if tzs[0] == "-" else 1
                f = _parse_hh_mm_ss_ff(tzs[1:])
                if f is None:
                    return None
                td = timedelta(hours=f[0], minutes=f[1], seconds=f[2], microseconds=f[3])
                tz = timezone.utc if not td else timezone(sign * td)
            break
    f = _parse_hh_mm_ss_ff(s)
    if f is None:
        return None
    return f + [tz]


def _parse_hh_mm_ss_ff(s):
    comps = [0, 0, 0, 0]
    frac = ""
    if "." in s or "," in s:
        cut = s.find(".") if "." in s else s.find(",")
        frac = s[cut + 1:]
        s = s[:cut]
    if ":" in s:
        parts = s.split(":")
    else:
        parts = [s[i:i + 2] for i in range(0, len(s), 2)]
    if not 1 <= len(parts) <= 3:
        return None
    for i in range(len(parts)):
        if len(parts[i]) != 2 or not parts[i].isdigit():
            return None
        comps[i] = int(parts[i])
    if frac:
        if not frac.isdigit() or len(parts) != 3:
            return None
        frac = (frac + "000000")[:6]
        comps[3] = int(frac)
    return comps


class time:
    def __init__(self, hour=0, minute=0, second=0, microsecond=0, tzinfo=None, *, fold=0):
        hour, minute, second, microsecond, fold = _check_time_fields(hour, minute, second, microsecond, fold)
        _check_tzinfo_arg(tzinfo)
        self._hour = hour
        self._minute = minute
        self._second = second
        self._microsecond = microsecond
        self._tzinfo = tzinfo
        self._fold = fold

    @property
    def hour(self):
        return self._hour

    @property
    def minute(self):
        return self._minute

    @property
    def second(self):
        return self._second

    @property
    def microsecond(self):
        return self._microsecond

    @property
    def tzinfo(self):
        return self._tzinfo

    @property
    def fold(self):
        return self._fold

    def utcoffset(self):
        if self._tzinfo is None:
            return None
        return self._tzinfo.utcoffset(None)

    def tzname(self):
        if self._tzinfo is None:
            return None
        return self._tzinfo.tzname(None)

    def _cmpkey(self):
        off = self.utcoffset()
        base = ((self._hour * 60 + self._minute) * 60 + self._second) * 1000000 + self._microsecond
        if off is not None:
            base -= off._to_us()
        return base

    def __eq__(self, other):
        if isinstance(other, time):
            return self._cmpkey() == other._cmpkey()
        return NotImplemented

    def __hash__(self):
        return hash(self._cmpkey())

    def __repr__(self):
        if self._microsecond != 0:
            s = ", %d, %d" % (self._second, self._microsecond)
        elif self._second != 0:
            s = ", %d" % self._second
        else:
            s = ""
        s = "%s.%s(%d, %d%s)" % (type(self).__module__, type(self).__qualname__, self._hour, self._minute, s)
        if self._tzinfo is not None:
            s = s[:-1] + ", tzinfo=%r" % self._tzinfo + ")"
        if self._fold:
            s = s[:-1] + ", fold=1)"
        return s

    def isoformat(self, timespec="auto"):
        s = _format_time(self._hour, self._minute, self._second, self._microsecond, timespec)
        return s + _format_offset(self.utcoffset())

    def __str__(self):
        return self.isoformat()

    @classmethod
    def fromisoformat(cls, time_string):
        if not isinstance(time_string, str):
            _err("TypeError", "fromisoformat: argument must be str")
        s = time_string[1:] if time_string[:1] == "T" else time_string
        parts = _parse_isoformat_time(s)
        if parts is None:
            _err("ValueError", "Invalid isoformat string: " + repr(time_string))
        return cls(*parts)

    def strftime(self, format):
        return _wrap_strftime(self, format, (1900, 1, 1, self._hour, self._minute, self._second, 0, 1))

    def __format__(self, fmt):
        if len(fmt) != 0:
            return self.strftime(fmt)
        return str(self)

    def replace(self, hour=None, minute=None, second=None, microsecond=None, tzinfo=True, *, fold=None):
        if hour is None:
            hour = self._hour
        if minute is None:
            minute = self._minute
        if second is None:
            second = self._second
        if microsecond is None:
            microsecond = self._microsecond
        if tzinfo is True:
            tzinfo = self._tzinfo
        if fold is None:
            fold = self._fold
        return type(self)(hour, minute, second, microsecond, tzinfo, fold=fold)

    def __bool__(self):
        return True


time.min = time(0, 0, 0)
time.max = time(23, 59, 59, 999999)
time.resolution = timedelta(microseconds=1)


_install_order(time, lambda o: isinstance(o, time), lambda a, b: _cmp(a._cmpkey(), b._cmpkey()))


class datetime(date):
    def __init__(self, year, month=None, day=None, hour=0, minute=0, second=0, microsecond=0, tzinfo=None, *, fold=0):
        date.__init__(self, year, month, day)
        hour, minute, second, microsecond, fold = _check_time_fields(hour, minute, second, microsecond, fold)
        _check_tzinfo_arg(tzinfo)
        self._hour = hour
        self._minute = minute
        self._second = second
        self._microsecond = microsecond
        self._tzinfo = tzinfo
        self._fold = fold

    hour = time.hour
    minute = time.minute
    second = time.second
    microsecond = time.microsecond
    tzinfo = time.tzinfo
    fold = time.fold

    @classmethod
    def _fromtimestamp(cls, t, utc, tz):
        frac, t = _math_modf(t)
        us = round(frac * 1e6)
        if us >= 1000000:
            t += 1
            us -= 1000000
        elif us < 0:
            t -= 1
            us += 1000000
        if utc:
            y, m, d, hh, mm, ss = _utc_fields(int(t))
        else:
            y, m, d, hh, mm, ss, _, off = _kiln_std.localtime(int(t))
        return cls(y, m, d, hh, mm, ss, us, tz)

    @classmethod
    def fromtimestamp(cls, timestamp, tz=None):
        _check_tzinfo_arg(tz)
        result = cls._fromtimestamp(timestamp, tz is not None, tz)
        if tz is not None:
            result = tz.fromutc(result)
        return result

    @classmethod
    def utcfromtimestamp(cls, t):
        import warnings
        warnings.warn("datetime.datetime.utcfromtimestamp() is deprecated and scheduled for removal in a future "
                      "version. Use timezone-aware objects to represent datetimes in UTC: "
                      "datetime.datetime.fromtimestamp(timestamp, datetime.UTC).", DeprecationWarning, stacklevel=2)
        return cls._fromtimestamp(t, True, None)

    @classmethod
    def now(cls, tz=None):
        return cls.fromtimestamp(_time.time(), tz)

    @classmethod
    def today(cls):
        return cls.fromtimestamp(_time.time())

    @classmethod
    def utcnow(cls):
        import warnings
        warnings.warn("datetime.datetime.utcnow() is deprecated and scheduled for removal in a future version. "
                      "Use timezone-aware objects to represent datetimes in UTC: datetime.datetime.now(datetime.UTC).",
                      DeprecationWarning, stacklevel=2)
        return cls._fromtimestamp(_time.time(), True, None)

    @classmethod
    def combine(cls, date, time, tzinfo=True):
        if tzinfo is True:
            tzinfo = time.tzinfo
        return cls(date.year, date.month, date.day, time.hour, time.minute, time.second, time.microsecond, tzinfo,
                   fold=time.fold)

    @classmethod
    def fromisoformat(cls, date_string):
        if not isinstance(date_string, str):
            _err("TypeError", "fromisoformat: argument must be str")
        dstr = date_string[0:10]
        tstr = date_string[11:]
        dparts = _parse_isoformat_date(dstr)
        if dparts is None or (len(date_string) > 10 and date_string[10] not in "T "):
            _err("ValueError", "Invalid isoformat string: " + repr(date_string))
        tparts = [0, 0, 0, 0, None]
        if tstr:
            tparts = _parse_isoformat_time(tstr)
            if tparts is None:
                _err("ValueError", "Invalid isoformat string: " + repr(date_string))
        return cls(*(dparts + tparts))

    @classmethod
    def strptime(cls, date_string, format):
        return _strptime(cls, date_string, format)

    def _timetuple(self):
        yday = self.toordinal() - _ymd2ord(self._year, 1, 1) + 1
        return (self._year, self._month, self._day, self._hour, self._minute, self._second, self.weekday(), yday)

    def timestamp(self):
        if self._tzinfo is None:
            u = (self - _EPOCH_NAIVE) // timedelta(seconds=1)
            off1 = _kiln_std.localtime(u)[7]
            t = u - off1
            off2 = _kiln_std.localtime(t)[7]
            if off2 != off1:
                t = u - off2
            return t + self._microsecond / 1e6
        return (self - _EPOCH).total_seconds()

    def date(self):
        return date(self._year, self._month, self._day)

    def time(self):
        return time(self._hour, self._minute, self._second, self._microsecond, fold=self._fold)

    def timetz(self):
        return time(self._hour, self._minute, self._second, self._microsecond, self._tzinfo, fold=self._fold)

    def replace(self, year=None, month=None, day=None, hour=None, minute=None, second=None, microsecond=None,
                tzinfo=True, *, fold=None):
        if year is None:
            year = self._year
        if month is None:
            month = self._month
        if day is None:
            day = self._day
        if hour is None:
            hour = self._hour
        if minute is None:
            minute = self._minute
        if second is None:
            second = self._second
        if microsecond is None:
            microsecond = self._microsecond
        if tzinfo is True:
            tzinfo = self._tzinfo
        if fold is None:
            fold = self._fold
        return type(self)(year, month, day, hour, minute, second, microsecond, tzinfo, fold=fold)

    def astimezone(self, tz=None):
        if tz is None:
            off = _kiln_std.localtime(int(self.timestamp()))[7]
            tz = timezone(timedelta(seconds=off))
        elif not isinstance(tz, tzinfo):
            _err("TypeError", "tz argument must be an instance of tzinfo")
        mytz = self._tzinfo
        if mytz is None:
            myoffset = timedelta(seconds=_kiln_std.localtime(int(self.timestamp()))[7])
        else:
            myoffset = mytz.utcoffset(self)
        if tz is mytz:
            return self
        utc = (self - myoffset).replace(tzinfo=tz)
        return tz.fromutc(utc)

    def ctime(self):
        weekday = self.toordinal() % 7 or 7
        return "%s %s %2d %02d:%02d:%02d %04d" % (_DAYNAMES[weekday], _MONTHNAMES[self._month], self._day,
                                                  self._hour, self._minute, self._second, self._year)

    def isoformat(self, sep="T", timespec="auto"):
        s = "%04d-%02d-%02d%s" % (self._year, self._month, self._day, sep) + \
            _format_time(self._hour, self._minute, self._second, self._microsecond, timespec)
        return s + _format_offset(self.utcoffset())

    def __repr__(self):
        L = [self._year, self._month, self._day, self._hour, self._minute, self._second, self._microsecond]
        if L[-1] == 0:
            del L[-1]
        if L[-1] == 0:
            del L[-1]
        s = "%s.%s(%s)" % (type(self).__module__, type(self).__qualname__, ", ".join(map(str, L)))
        if self._tzinfo is not None:
            s = s[:-1] + ", tzinfo=%r" % self._tzinfo + ")"
        if self._fold:
            s = s[:-1] + ", fold=1)"
        return s

    def __str__(self):
        return self.isoformat(sep=" ")

    def utcoffset(self):
        if self._tzinfo is None:
            return None
        return self._tzinfo.utcoffset(self)

    def tzname(self):
        if self._tzinfo is None:
            return None
        return self._tzinfo.tzname(self)

    def dst(self):
        if self._tzinfo is None:
            return None
        return self._tzinfo.dst(self)

    def _us(self):
        return ((self.toordinal() * 86400 + self._hour * 3600 + self._minute * 60 + self._second) * 1000000 +
                self._microsecond)

    def _cmp(self, other, eq):
        myoff = self.utcoffset()
        otoff = other.utcoffset()
        if (myoff is None) != (otoff is None):
            if eq:
                return 2
            _err("TypeError", "can't compare offset-naive and offset-aware datetimes")
        a = self._us()
        b = other._us()
        if myoff is not None:
            a -= myoff._to_us()
            b -= otoff._to_us()
        return _cmp(a, b)

    def __eq__(self, other):
        if isinstance(other, datetime):
            return self._cmp(other, True) == 0
        if isinstance(other, date):
            return False
        return NotImplemented

    def __hash__(self):
        off = self.utcoffset()
        return hash(self._us() - (off._to_us() if off is not None else 0))

    def __add__(self, other):
        if not isinstance(other, timedelta):
            return NotImplemented
        us = self._us() + other._to_us()
        days, us = divmod(us, 86400000000)
        if not 0 < days <= 3652059:
            _err("OverflowError", "date value out of range")
        y, m, d = _ord2ymd(days)
        s, us = divmod(us, 1000000)
        mm, ss = divmod(s, 60)
        hh, mm = divmod(mm, 60)
        return type(self)(y, m, d, hh, mm, ss, us, self._tzinfo)

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, timedelta):
            return self + -other
        if not isinstance(other, datetime):
            return NotImplemented
        myoff = self.utcoffset()
        otoff = other.utcoffset()
        if (myoff is None) != (otoff is None):
            _err("TypeError", "can't subtract offset-naive and offset-aware datetimes")
        a = self._us()
        b = other._us()
        if myoff is not None and self._tzinfo is not other._tzinfo:
            a -= myoff._to_us()
            b -= otoff._to_us()
        return timedelta(0, 0, a - b)


datetime.min = datetime(1, 1, 1)
datetime.max = datetime(9999, 12, 31, 23, 59, 59, 999999)
datetime.resolution = timedelta(microseconds=1)


def _math_modf(t):
    ip = float(int(t))
    return t - ip, ip


def _utc_fields(t):
    days, s = divmod(t, 86400)
    y, m, d = _ord2ymd(days + 719163)
    hh, s = divmod(s, 3600)
    mm, ss = divmod(s, 60)
    return y, m, d, hh, mm, ss


_install_order(datetime, lambda o: isinstance(o, datetime), lambda a, b: a._cmp(b, False))


class timezone(tzinfo):
    def __init__(self, offset, name=None):
        if not isinstance(offset, timedelta):
            _err("TypeError", "offset must be a timedelta")
        if name is not None and not isinstance(name, str):
            _err("TypeError", "name must be a string")
        if not -timedelta(hours=24) < offset < timedelta(hours=24):
            _err("ValueError", "offset must be a timedelta strictly between -timedelta(hours=24) and "
                               "timedelta(hours=24), not " + repr(offset) + ".")
        self._offset = offset
        self._name = name

    def __eq__(self, other):
        if isinstance(other, timezone):
            return self._offset == other._offset
        return NotImplemented

    def __hash__(self):
        return hash(self._offset)

    def __repr__(self):
        if self is timezone.utc:
            return "datetime.timezone.utc"
        if self._name is None:
            return "%s.%s(%r)" % (type(self).__module__, type(self).__qualname__, self._offset)
        return "%s.%s(%r, %r)" % (type(self).__module__, type(self).__qualname__, self._offset, self._name)

    def __str__(self):
        return self.tzname(None)

    def utcoffset(self, dt):
        return self._offset

    def tzname(self, dt):
        if self._name is None:
            return self._name_from_offset(self._offset)
        return self._name

    def dst(self, dt):
        return None

    def fromutc(self, dt):
        return dt + self._offset

    @staticmethod
    def _name_from_offset(delta):
        if not delta:
            return "UTC"
        if delta < timedelta(0):
            sign = "-"
            delta = -delta
        else:
            sign = "+"
        hours, rest = divmod(delta, timedelta(hours=1))
        minutes, rest = divmod(rest, timedelta(minutes=1))
        seconds = rest.seconds
        microseconds = rest.microseconds
        if microseconds:
            return "UTC%s%02d:%02d:%02d.%06d" % (sign, hours, minutes, seconds, microseconds)
        if seconds:
            return "UTC%s%02d:%02d:%02d" % (sign, hours, minutes, seconds)
        return "UTC%s%02d:%02d" % (sign, hours, minutes)


timezone.utc = timezone(timedelta(0))
timezone.min = timezone(-timedelta(hours=23, minutes=59))
timezone.max = timezone(timedelta(hours=23, minutes=59))
UTC = timezone.utc
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EPOCH_NAIVE = datetime(1970, 1, 1)


def _strptime(cls, data_string, format):
    # CPython's _strptime for the numeric and English-name directives.
    vals = {"Y": 1900, "m": 1, "d": 1, "H": 0, "M": 0, "S": 0, "f": 0}
    pm = None
    tz = None
    i = 0
    j = 0
    n = len(format)
    bad = "time data " + repr(data_string) + " does not match format " + repr(format)
    while i < n:
        ch = format[i]
        if ch != "%":
            if ch.isspace():
                while j < len(data_string) and data_string[j].isspace():
                    j += 1
                i += 1
                continue
            if j >= len(data_string) or data_string[j] != ch:
                _err("ValueError", bad)
            i += 1
            j += 1
            continue
        d = format[i + 1] if i + 1 < n else ""
        i += 2
        if d in ("Y", "m", "d", "H", "M", "S", "f", "y", "I", "j"):
            width = {"Y": 4, "f": 6, "j": 3}.get(d, 2)
            k = j
            while k < len(data_string) and k - j < width and data_string[k].isdigit():
                k += 1
            if k == j:
                _err("ValueError", bad)
            text = data_string[j:k]
            j = k
            if d == "f":
                vals["f"] = int((text + "000000")[:6])
            elif d == "y":
                y = int(text)
                vals["Y"] = y + (2000 if y <= 68 else 1900)
            elif d == "I":
                vals["H"] = int(text) % 12
                pm = pm if pm is not None else False
            elif d == "j":
                vals["j"] = int(text)
            else:
                vals[d] = int(text)
        elif d in ("b", "B", "h"):
            found = False
            for names in (_FULLMONTHNAMES, _MONTHNAMES):
                for mi in range(1, 13):
                    nm = names[mi]
                    if data_string[j:j + len(nm)].lower() == nm.lower():
                        vals["m"] = mi
                        j += len(nm)
                        found = True
                        break
                if found:
                    break
            if not found:
                _err("ValueError", bad)
        elif d in ("a", "A"):
            found = False
            for names in (_FULLDAYNAMES, _DAYNAMES):
                for di in range(1, 8):
                    nm = names[di]
                    if data_string[j:j + len(nm)].lower() == nm.lower():
                        j += len(nm)
                        found = True
                        break
                if found:
                    break
            if not found:
                _err("ValueError", bad)
        elif d == "p":
            word = data_string[j:j + 2].upper()
            if word not in ("AM", "PM"):
                _err("ValueError", bad)
            pm = word == "PM"
            j += 2
        elif d == "z":
            if data_string[j:j + 1] == "Z":
                tz = timezone.utc
                j += 1
            else:
                sign = data_string[j:j + 1]
                body = data_string[j + 1:j + 6].replace(":", "")
                if sign not in ("+", "-") or len(body) < 4 or not body[:4].isdigit():
                    _err("ValueError", bad)
                j += 6 if data_string[j + 3:j + 4] == ":" else 5
                off = timedelta(hours=int(body[0:2]), minutes=int(body[2:4]))
                tz = timezone(-off if sign == "-" else off)
        elif d == "%":
            if data_string[j:j + 1] != "%":
                _err("ValueError", bad)
            j += 1
        else:
            _kiln_std.refuse("datetime.strptime() with the directive %" + d)
    if j != len(data_string):
        _err("ValueError", "unconverted data remains: " + data_string[j:])
    if pm:
        vals["H"] += 12
    if "j" in vals:
        dd = date.fromordinal(_ymd2ord(vals["Y"], 1, 1) + vals["j"] - 1)
        vals["m"] = dd.month
        vals["d"] = dd.day
    return cls(vals["Y"], vals["m"], vals["d"], vals["H"], vals["M"], vals["S"], vals["f"], tz)
)PY";

}  // namespace

void load_datetime(VM& vm, const Ref<Module>& m) {
  static const Expected<CodePtr> code = compile_module(kDatetimeSource, "datetime.py");
  // The local clock: (year, month, day, hour, minute, second, weekday, utc offset in seconds)
  // of a POSIX timestamp, as the C library's localtime gives them.
  Ref<Module> std_module = vm.module("_kiln_std");
  if (std_module && !std_module->dict->find_str("localtime"))
    def_native(std_module, "localtime", [](VM&, const CallArgs& a) {
      std::time_t t = std::time_t(std::floor(to_double(a[0], "localtime()")));
      std::tm tm{};
      localtime_r(&t, &tm);
      return tuple_value({Value(int64_t(tm.tm_year + 1900)), Value(int64_t(tm.tm_mon + 1)), Value(int64_t(tm.tm_mday)),
                          Value(int64_t(tm.tm_hour)), Value(int64_t(tm.tm_min)), Value(int64_t(std::min(tm.tm_sec, 59))),
                          Value(int64_t((tm.tm_wday + 6) % 7)), Value(int64_t(tm.tm_gmtoff))});
    });
  run_module_source(vm, m, code);
}

}  // namespace kiln::py
