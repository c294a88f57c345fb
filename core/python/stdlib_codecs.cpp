// codecs: what programs call on str without bytes (the subset has no bytes
// type): decode(s, 'unicode_escape') as CPython reads a str's UTF-8 through
// that codec, and rot13. Files (codecs.open) and the byte codecs are refused.
#include "core/python/compiler.h"
#include "core/python/stdlib.h"

namespace kiln::py {

namespace {

const char* const kCodecsSource = R"PY(# codecs in Kiln's Python subset.
import _kiln_std


def _refuse(what):
    _kiln_std.refuse(what + " is outside Kiln's codecs (the subset has no bytes type; it decodes unicode_escape "
                     "and rot13 on str)")


def _norm(encoding):
    return encoding.lower().replace("-", "_").replace(" ", "_")


def _utf8(s):
    # The UTF-8 bytes of s as ints: what the codec reads a str as.
    out = []
    for ch in s:
        cp = ord(ch)
        if cp < 0x80:
            out.append(cp)
        elif cp < 0x800:
            out += [0xC0 | (cp >> 6), 0x80 | (cp & 0x3F)]
        elif cp < 0x10000:
            out += [0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F)]
        else:
            out += [0xF0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3F), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F)]
    return out


_SIMPLE = {ord("\\"): "\\", ord("'"): "'", ord('"'): '"', ord("a"): "\a", ord("b"): "\b", ord("f"): "\f",
           ord("n"): "\n", ord("r"): "\r", ord("t"): "\t", ord("v"): "\v"}
_HEX = "0123456789abcdefABCDEF"


def _unicode_escape(s):
    b = _utf8(s)
    out = []
    i = 0
    n = len(b)
    while i < n:
        c = b[i]
        if c != 0x5C:
            out.append(chr(c))
            i += 1
            continue
        if i + 1 >= n:
            _refuse("a unicode_escape text ending in a lone backslash (CPython's UnicodeDecodeError)")
        e = b[i + 1]
        i += 2
        if e in _SIMPLE:
            out.append(_SIMPLE[e])
        elif e == 0x0A:
            pass
        elif 0x30 <= e <= 0x37:
            v = e - 0x30
            for _ in range(2):
                if i < n and 0x30 <= b[i] <= 0x37:
                    v = v * 8 + b[i] - 0x30
                    i += 1
            out.append(chr(v))
        elif e in (ord("x"), ord("u"), ord("U")):
            width = 2 if e == ord("x") else 4 if e == ord("u") else 8
            digits = "".join(chr(d) for d in b[i:i + width])
            if len(digits) != width or any(d not in _HEX for d in digits):
                _refuse("a truncated \\\\" + chr(e) + " escape in unicode_escape text (CPython's UnicodeDecodeError)")
            v = int(digits, 16)
            if v > 0x10FFFF:
                _refuse("an escape past U+10FFFF in unicode_escape text (CPython's UnicodeDecodeError)")
            out.append(chr(v))
            i += width
        elif e == ord("N"):
            close = -1
            if i < n and b[i] == ord("{"):
                for j in range(i + 1, n):
                    if b[j] == ord("}"):
                        close = j
                        break
            if close < 0:
                _refuse("a malformed \\\\N{...} escape in unicode_escape text (CPython's UnicodeDecodeError)")
            import unicodedata
            name = "".join(chr(d) for d in b[i + 1:close])
            try:
                out.append(unicodedata.lookup(name))
            except KeyError:
                _refuse("an unknown character name in unicode_escape text (CPython's UnicodeDecodeError)")
            i = close + 1
        else:
            import warnings
            warnings.warn("invalid escape sequence '\\" + chr(e) + "'", DeprecationWarning, stacklevel=3)
            out.append("\\")
            out.append(chr(e))
    return "".join(out)


def _rot13(s):
    out = []
    for ch in s:
        o = ord(ch)
        if 0x61 <= o <= 0x7A:
            out.append(chr((o - 0x61 + 13) % 26 + 0x61))
        elif 0x41 <= o <= 0x5A:
            out.append(chr((o - 0x41 + 13) % 26 + 0x41))
        else:
            out.append(ch)
    return "".join(out)


def decode(obj, encoding="utf-8", errors="strict"):
    e = _norm(encoding)
    if isinstance(obj, str) and e == "unicode_escape":
        return _unicode_escape(obj)
    if isinstance(obj, str) and e in ("rot13", "rot_13"):
        return _rot13(obj)
    _refuse("codecs.decode(..., '" + encoding + "')")


def encode(obj, encoding="utf-8", errors="strict"):
    if isinstance(obj, str) and _norm(encoding) in ("rot13", "rot_13"):
        return _rot13(obj)
    _refuse("codecs.encode(..., '" + encoding + "')")


def open(filename, mode="r", encoding=None, errors="strict", buffering=-1):
    _kiln_std.refuse("codecs.open() is outside Kiln's Python subset (programs cannot open files)")


def lookup(encoding):
    _refuse("codecs.lookup")
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_codecs, kCodecsSource, "codecs.py")

}  // namespace kiln::py
