// re: Python's regular expressions over RE2, which matches in linear time
// and bounded memory whatever the pattern or text. re_translate.h rewrites
// the pattern and refuses what RE2 cannot match exactly; this file runs one
// match at a time, in code-point positions, and the module's Python source
// (CPython's re semantics: iteration over empty matches, templates, split,
// findall's shapes) is built on that.
#include <re2/re2.h>

#include <memory>

#include "core/python/compiler.h"
#include "core/python/re_translate.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"
#include "core/util/utf8.h"

namespace kiln::py {

namespace {

// RE2's program-size budget per pattern: far above any real pattern, and a
// pattern that needs more is refused instead of growing.
constexpr int64_t kRe2MaxMemory = 64 << 20;

struct CompiledPattern {
  re::Translation translation;
  std::unique_ptr<RE2> first;  // Python's preference order (leftmost, then first alternative)
  std::unique_ptr<RE2> longest;  // made when an empty match must be stepped over
  Value last_checked;  // the last non-ASCII text found fit for this pattern (str is immutable)
};

RE2::Options re2_options(bool longest) {
  RE2::Options o;
  o.set_log_errors(false);
  o.set_max_mem(kRe2MaxMemory);
  o.set_longest_match(longest);
  return o;
}

// Kiln keeps lone surrogates (and surrogateescape'd bytes) in its UTF-8; RE2
// reads only well-formed text.
bool well_formed_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char lead = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_char_length(s, i);
    if (lead >= 0x80 && n == 1) return false;
    const char32_t cp = utf8_decode_at(s, i);
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;
    i += n;
  }
  return true;
}

void check_text(CompiledPattern& p, const Value& subject, const StrChars& chars) {
  // Iteration matches the same text again and again: checked once.
  if (chars.ascii() || p.last_checked.same(subject)) return;
  const std::string& text = as_str(subject);
  const re::Translation& t = p.translation;
  if (!well_formed_utf8(text)) throw_unsupported("re on a str holding lone surrogates");
  if (t.unicode_word_boundary)
    throw_unsupported("re's \\b or \\B on non-ASCII text (Kiln's regular-expression engine, RE2, finds word "
                      "boundaries by ASCII rules; Python by Unicode rules); re.ASCII makes them ASCII in both");
  if (t.ascii_ignore_case)
    throw_unsupported("re.IGNORECASE with re.ASCII on non-ASCII text (RE2 would also fold non-ASCII letters)");
  p.last_checked = subject;
}

// One match of `p` in chars[pos, endpos): spans of every group as code-point
// offsets (-1 when a group did not take part), or None. Mode 0 searches, 1
// matches at pos, 2 matches all of [pos, endpos). `must_advance` (after an
// empty match at pos) wants no empty match at pos, as CPython's iteration.
Value run_match(CompiledPattern& p, const Value& subject, int64_t pos, int64_t endpos, int64_t mode, bool must_advance) {
  StrChars chars(subject);
  const std::string& s = as_str(subject);
  const int64_t length = int64_t(chars.size());
  pos = std::clamp<int64_t>(pos, 0, length);
  endpos = std::clamp<int64_t>(endpos, 0, length);
  if (endpos < pos) return Value();
  // Python's endpos makes the text end there, for `$` and \b too.
  const re2::StringPiece text(s.data(), chars.begin(size_t(endpos)));
  check_text(p, subject, chars);
  if (p.translation.end_dollar && text.size() > 0 && text[text.size() - 1] == '\n')
    throw_unsupported("re's `$` on text ending in a newline (Python's `$` also matches just before that newline, "
                      "which RE2 cannot express); use \\Z, re.MULTILINE, or strip the newline");
  const int groups = p.translation.groups + 1;
  std::vector<re2::StringPiece> found(static_cast<size_t>(groups));
  const RE2::Anchor anchor = mode == 0 ? RE2::UNANCHORED : mode == 1 ? RE2::ANCHOR_START : RE2::ANCHOR_BOTH;
  size_t start = chars.begin(size_t(pos));
  bool ok = p.first->Match(text, start, text.size(), anchor, found.data(), groups);
  if (ok && must_advance && found[0].empty() && size_t(found[0].data() - s.data()) == start) {
    // CPython backtracks into the other ways of matching at pos for a
    // non-empty one; RE2 gives only its preferred match. If any non-empty
    // match starts here, which one Python takes is not knowable: refuse.
    if (!p.longest) p.longest = std::make_unique<RE2>(p.translation.re2, re2_options(true));
    re2::StringPiece longest;
    if (p.longest->Match(text, start, text.size(), RE2::ANCHOR_START, &longest, 1) && !longest.empty())
      throw_unsupported("re iteration past an empty match where the pattern could also match a non-empty text at the "
                        "same place (which one Python takes depends on its backtracking order)");
    if (anchor != RE2::UNANCHORED || start >= text.size()) return Value();
    start += utf8_char_length(s, start);
    ok = p.first->Match(text, start, text.size(), anchor, found.data(), groups);
  }
  if (!ok) return Value();
  ValueVec spans;
  for (const re2::StringPiece& g : found) {
    if (!g.data()) {
      spans.push_back(Value(int64_t(-1)));
      spans.push_back(Value(int64_t(-1)));
      continue;
    }
    const size_t b = size_t(g.data() - s.data());
    spans.push_back(Value(int64_t(chars.index_of(b))));
    spans.push_back(Value(int64_t(chars.index_of(b + g.size()))));
  }
  return tuple_value(std::move(spans));
}

// _compile(pattern, flags): ("error", message, position) when Python rejects
// the pattern, else (matcher, groups, {name: index}, flags).
Value compile_pattern(VM& vm, const CallArgs& a) {
  const std::string& pattern = as_str(a[0]);
  const int64_t flags = to_index(a[1], "flags");
  auto p = std::make_shared<CompiledPattern>();
  p->translation = re::translate(pattern, flags);
  const re::Translation& t = p->translation;
  if (!t.unsupported.empty()) throw_unsupported("re: " + t.unsupported + " is outside Kiln's regular expressions");
  if (!t.error.empty())
    return tuple_value({str_value("error"), str_value(t.error), Value(int64_t(t.error_pos))});
  p->first = std::make_unique<RE2>(t.re2, re2_options(false));
  if (!p->first->ok())
    throw_unsupported("re: the pattern " + pattern + " is outside Kiln's regular expressions (RE2: " + p->first->error() + ")");
  KILN_CHECK(p->first->NumberOfCapturingGroups() == t.groups, "re: RE2 counts ", p->first->NumberOfCapturingGroups(),
             " groups where Python counts ", t.groups, " in ", t.re2);
  Ref<Dict> names = make<Dict>();
  for (const auto& [name, index] : t.group_index) names->set(str_value(name), Value(int64_t(index)));
  Value matcher = make_builtin("re._match", [p](VM& vm, const CallArgs& m) -> Value {
    if (!m[0].is(ObjKind::Str)) throw_type_error("expected string or bytes-like object");
    return run_match(*p, m[0], to_index(m[1], "pos"), to_index(m[2], "endpos"), to_index(m[3], "mode"), vm.truth(m[4]));
  });
  (void)vm;
  return tuple_value({matcher, Value(int64_t(t.groups)), Value(names), Value(t.flags)});
}

const char* const kReSource = R"PY(# Python's re (CPython 3.11's semantics) over the native matcher.
import _kiln_std

NOFLAG = 0
I = IGNORECASE = 2
L = LOCALE = 4
M = MULTILINE = 8
S = DOTALL = 16
U = UNICODE = 32
X = VERBOSE = 64
DEBUG = 128
A = ASCII = 256

_FLAG_NAMES = [(2, "re.IGNORECASE"), (4, "re.LOCALE"), (8, "re.MULTILINE"), (16, "re.DOTALL"),
               (64, "re.VERBOSE"), (128, "re.DEBUG"), (256, "re.ASCII")]
_MAXPOS = 1 << 62


class error(Exception):
    def __init__(self, msg, pattern=None, pos=None):
        self.msg = msg
        self.pattern = pattern
        self.pos = pos
        if pattern is not None and pos is not None:
            msg = '%s at position %d' % (msg, pos)
            self.lineno = pattern.count('\n', 0, pos) + 1
            self.colno = pos - pattern.rfind('\n', 0, pos)
            if '\n' in pattern:
                msg = '%s (line %d, column %d)' % (msg, self.lineno, self.colno)
        else:
            self.lineno = self.colno = None
        Exception.__init__(self, msg)


def _check_str(string):
    if not isinstance(string, str):
        if type(string).__name__ in ('bytes', 'bytearray'):
            _kiln_std.refuse("re on bytes is outside Kiln's regular expressions (they match str)")
        raise TypeError("expected string or bytes-like object, got '%s'" % type(string).__name__)


class Match:
    def __init__(self, pattern, string, spans, pos, endpos):
        self.re = pattern
        self.string = string
        self.pos = pos
        self.endpos = endpos
        self._spans = spans
        last = None
        last_end = -1
        for g in range(1, pattern.groups + 1):
            s, e = spans[2 * g], spans[2 * g + 1]
            if s < 0:
                continue
            # the group that closed last: the furthest end, the outer one of nested groups ending together
            if e > last_end or (e == last_end and not (s >= spans[2 * last] and e <= spans[2 * last + 1])):
                last, last_end = g, e
        self.lastindex = last
        self.lastgroup = None
        if last is not None:
            for name, index in pattern.groupindex.items():
                if index == last:
                    self.lastgroup = name

    def _index(self, g):
        if isinstance(g, str):
            if g in self.re.groupindex:
                return self.re.groupindex[g]
        elif isinstance(g, int) and 0 <= g <= self.re.groups:
            return g
        raise IndexError("no such group")

    def _group(self, g, default=None):
        i = self._index(g)
        s = self._spans[2 * i]
        if s < 0:
            return default
        return self.string[s:self._spans[2 * i + 1]]

    def group(self, *groups):
        if not groups:
            return self._group(0)
        if len(groups) == 1:
            return self._group(groups[0])
        return tuple(self._group(g) for g in groups)

    def __getitem__(self, g):
        return self._group(g)

    def groups(self, default=None):
        return tuple(self._group(g, default) for g in range(1, self.re.groups + 1))

    def groupdict(self, default=None):
        return {name: self._group(index, default) for name, index in self.re.groupindex.items()}

    def start(self, group=0):
        return self._spans[2 * self._index(group)]

    def end(self, group=0):
        return self._spans[2 * self._index(group) + 1]

    def span(self, group=0):
        i = self._index(group)
        return (self._spans[2 * i], self._spans[2 * i + 1])

    def expand(self, template):
        return _expand(self.re, template)(self)

    def __bool__(self):
        return True

    def __repr__(self):
        return "<re.Match object; span=(%d, %d), match=%r>" % (self._spans[0], self._spans[1], self.group(0))


def _flags_text(flags):
    names = [name for value, name in _FLAG_NAMES if flags & value]
    rest = flags & ~(2 | 4 | 8 | 16 | 32 | 64 | 128 | 256)
    if rest:
        names.append(hex(rest))
    return "|".join(names)


class Pattern:
    def __init__(self, pattern, flags, matcher, groups, groupindex):
        self.pattern = pattern
        self.flags = flags
        self.groups = groups
        self.groupindex = groupindex
        self._matcher = matcher

    def _one(self, string, pos, endpos, mode):
        _check_str(string)
        if endpos is None:
            endpos = _MAXPOS
        spans = self._matcher(string, pos, endpos, mode, False)
        if spans is None:
            return None
        n = len(string)
        return Match(self, string, spans, min(max(pos, 0), n), min(max(endpos, 0), n))

    def search(self, string, pos=0, endpos=None):
        return self._one(string, pos, endpos, 0)

    def match(self, string, pos=0, endpos=None):
        return self._one(string, pos, endpos, 1)

    def fullmatch(self, string, pos=0, endpos=None):
        return self._one(string, pos, endpos, 2)

    def _spans(self, string, pos=0, endpos=None, limit=0):
        # CPython's scanner: after an empty match the next must not be empty at the same place.
        _check_str(string)
        if endpos is None:
            endpos = _MAXPOS
        n = 0
        must_advance = False
        while not limit or n < limit:
            spans = self._matcher(string, pos, endpos, 0, must_advance)
            if spans is None:
                return
            yield spans
            n += 1
            must_advance = spans[0] == spans[1]
            pos = spans[1]

    def finditer(self, string, pos=0, endpos=None):
        n = len(string) if isinstance(string, str) else 0
        for spans in self._spans(string, pos, endpos):
            yield Match(self, string, spans, min(max(pos, 0), n), min(max(_MAXPOS if endpos is None else endpos, 0), n))

    def findall(self, string, pos=0, endpos=None):
        out = []
        for spans in self._spans(string, pos, endpos):
            if self.groups == 0:
                out.append(string[spans[0]:spans[1]])
                continue
            parts = tuple('' if spans[2 * g] < 0 else string[spans[2 * g]:spans[2 * g + 1]]
                          for g in range(1, self.groups + 1))
            out.append(parts[0] if self.groups == 1 else parts)
        return out

    def split(self, string, maxsplit=0):
        out = []
        last = 0
        for spans in self._spans(string, 0, None, maxsplit if maxsplit > 0 else 0):
            if maxsplit < 0:
                break
            out.append(string[last:spans[0]])
            for g in range(1, self.groups + 1):
                out.append(None if spans[2 * g] < 0 else string[spans[2 * g]:spans[2 * g + 1]])
            last = spans[1]
        out.append(string[last:])
        return out

    def subn(self, repl, string, count=0):
        if callable(repl):
            make = repl
        else:
            _check_str(repl)
            make = _expand(self, repl)
        pieces = []
        last = 0
        n = 0
        for spans in self._spans(string, 0, None, count if count > 0 else 0):
            if count < 0:
                break
            pieces.append(string[last:spans[0]])
            piece = make(Match(self, string, spans, 0, len(string)))
            if piece is not None:
                _check_str(piece)
                pieces.append(piece)
            last = spans[1]
            n += 1
        pieces.append(string[last:])
        return ''.join(pieces), n

    def sub(self, repl, string, count=0):
        return self.subn(repl, string, count)[0]

    def __repr__(self):
        text = repr(self.pattern)
        if len(text) > 200:
            text = text[:200]
        flags = self.flags & ~32
        if flags:
            return "re.compile(%s, %s)" % (text, _flags_text(flags))
        return "re.compile(%s)" % text

    def __eq__(self, other):
        return isinstance(other, Pattern) and self.pattern == other.pattern and self.flags == other.flags

    def __hash__(self):
        return hash((self.pattern, self.flags))


_OCTAL = "01234567"
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _expand(pattern, template):
    # CPython's template parser: literal pieces and group references, then a function of a match.
    if "\\" not in template:
        return lambda m: template
    parts = []  # str or int (a group)
    literal = []
    i = 0
    n = len(template)

    def add_group(index, pos):
        if index > pattern.groups:
            raise error("invalid group reference %d" % index, template, pos)
        parts.append("".join(literal))
        literal.clear()
        parts.append(index)

    while i < n:
        c = template[i]
        if c != "\\":
            literal.append(c)
            i += 1
            continue
        if i + 1 >= n:
            raise error("bad escape (end of pattern)", template, i)
        c = template[i + 1]
        start = i
        i += 2
        if c == "g":
            if i >= n or template[i] != "<":
                raise error("missing <", template, i)
            close = template.find(">", i + 1)
            if close < 0:
                raise error("missing >, unterminated name", template, i + 1)
            name = template[i + 1:close]
            if not name:
                raise error("missing group name", template, i + 1)
            if name.isidentifier():
                if name not in pattern.groupindex:
                    raise IndexError("unknown group name '%s'" % name)
                index = pattern.groupindex[name]
            else:
                if not (name.isdigit() and name.isascii()):
                    raise error("bad character in group name '%s'" % name, template, i + 1)
                index = int(name)
            add_group(index, i + 1)
            i = close + 1
        elif c == "0":
            digits = c
            while len(digits) < 3 and i < n and template[i] in _OCTAL:
                digits += template[i]
                i += 1
            literal.append(chr(int(digits, 8) & 0xff))
        elif c in "0123456789":
            digits = c
            if i < n and template[i] in "0123456789":
                digits += template[i]
                i += 1
                if c in _OCTAL and digits[1] in _OCTAL and i < n and template[i] in _OCTAL:
                    digits += template[i]
                    i += 1
                    value = int(digits, 8)
                    if value > 0o377:
                        raise error("octal escape value \\%s outside of range 0-0o377" % digits, template, start)
                    literal.append(chr(value))
                    continue
            add_group(int(digits), start + 1)
        elif c in _ESCAPES:
            literal.append(_ESCAPES[c])
        elif c.isascii() and c.isalpha():
            raise error("bad escape \\%s" % c, template, start)
        else:
            literal.append("\\" + c)
    parts.append("".join(literal))

    def expand(m):
        out = []
        for part in parts:
            if isinstance(part, int):
                out.append(m._group(part, ""))
            else:
                out.append(part)
        return "".join(out)
    return expand


_cache = {}


def compile(pattern, flags=0):
    if isinstance(pattern, Pattern):
        if flags:
            raise ValueError("cannot process flags argument with a compiled pattern")
        return pattern
    if not isinstance(pattern, str):
        if type(pattern).__name__ in ('bytes', 'bytearray'):
            _kiln_std.refuse("re on bytes is outside Kiln's regular expressions (they match str)")
        raise TypeError("first argument must be string or compiled pattern")
    key = (pattern, flags)
    if key in _cache:
        return _cache[key]
    if flags & ASCII and flags & UNICODE:
        raise ValueError("ASCII and UNICODE flags are incompatible")
    if flags & LOCALE:
        raise ValueError("cannot use LOCALE flag with a str pattern")
    if flags & DEBUG:
        _kiln_std.refuse("re.DEBUG is outside Kiln's regular expressions")
    compiled = _compile(pattern, flags)
    if compiled[0] == "error":
        raise error(compiled[1], pattern, compiled[2])
    matcher, groups, groupindex, all_flags = compiled
    p = Pattern(pattern, all_flags, matcher, groups, groupindex)
    if len(_cache) >= 512:
        _cache.clear()
    _cache[key] = p
    return p


def search(pattern, string, flags=0):
    return compile(pattern, flags).search(string)


def match(pattern, string, flags=0):
    return compile(pattern, flags).match(string)


def fullmatch(pattern, string, flags=0):
    return compile(pattern, flags).fullmatch(string)


def findall(pattern, string, flags=0):
    return compile(pattern, flags).findall(string)


def finditer(pattern, string, flags=0):
    return compile(pattern, flags).finditer(string)


def sub(pattern, repl, string, count=0, flags=0):
    return compile(pattern, flags).sub(repl, string, count)


def subn(pattern, repl, string, count=0, flags=0):
    return compile(pattern, flags).subn(repl, string, count)


def split(pattern, string, maxsplit=0, flags=0):
    return compile(pattern, flags).split(string, maxsplit)


def purge():
    _cache.clear()


_SPECIAL = "()[]{}?*+-|^$\\.&~# \t\n\r\v\f"


def escape(pattern):
    if not isinstance(pattern, str):
        _kiln_std.refuse("re.escape of bytes is outside Kiln's regular expressions")
    return "".join("\\" + c if c in _SPECIAL else c for c in pattern)
)PY";

}  // namespace

void load_re(VM& vm, const Ref<Module>& m) {
  def_native(m, "_compile", compile_pattern);
  static const Expected<CodePtr> code = compile_module(kReSource, "re.py");
  run_module_source(vm, m, code);
}

}  // namespace kiln::py
