# Kiln's `re` against CPython 3.11: every line below prints what CPython prints
# (expected.txt is CPython's output for this file).
import re

print("-- substitution, as text normalisers use it")
print(re.sub(r"([.!?])", r" \1", "Where is it? Over there!"))
print(re.sub(r"[^a-zA-Z.!?]+", r" ", "we're 2 late, sorry."))
print(re.sub(r"\s+", " ", "tabs\tand   spaces\u2003too"))
print(re.sub("x*", "-", "abxd"), re.sub("", "-", "abc"))
print(re.subn("o", "0", "foo boo", count=3))
print(re.sub(r"(\w+)@(\w+)", r"\2 at \g<1> (\g<0>)", "ann@home bob@work"))
print(re.sub(r"(?P<word>\w+)", r"<\g<word>>", "two words"), re.sub("(x)", r"\g<1>0", "x"))
print(re.sub(r"(a)(b)?", r"[\2|\1]", "a ab"), re.sub("a", r"\n\t\\", "a") == "\n\t\\", re.sub("a", r"\.", "a"))
print(re.sub(r"\d", lambda m: str(int(m.group()) * 3), "a1b2c3"))
print(re.compile(r"(\w+) (\w+)").sub(r"\2 \1", "hello world foo bar", count=1))

print("-- findall, finditer and their shapes")
print(re.findall(r"\d+", "x1 y22 z333"), re.findall(r"(\w)(\d)", "a1 b2 c"), re.findall(r"(\w)=?", "ab=c"))
print(re.findall(r"[\w.-]+", "model.pt run-3 ok"), re.findall(r"[^\W\d]+", "ab12cd_3"), re.findall(r"[\W_]+", "a_b!c d"))
print(re.findall(r"a{2,3}", "aaaaaaa"), re.findall(r"a{,2}", "aaa"), re.findall("a{x", "a{x"), re.findall(r"\d{2}(?:[-/]\d{2}){2}", "01-02-03 and 04/05/06"))
print(re.findall(r"(a|ab)(c|bcd)(d*)", "abcd"), re.findall(r"(?:a*)*", "b"))
print(re.findall(r"[\]\[]", "[a]"), re.findall(r"[]a]", "]a"), re.findall("[-a]", "-a"), re.findall(r"[.^$*+?{}()|]", "a.^$"))
print([(m.start(), m.group()) for m in re.compile(r"\w+").finditer("one two three", 2, 9)])
for m in re.finditer(r"(\d+)-(\d+)", "1-2 33-44"):
    print(m.group(2, 1), m.span(1), m.expand(r"\2:\1"))
print(re.findall(r"\b", "ab cd"), [m.span() for m in re.finditer(r"\b\w", "hi there you")])

print("-- split")
print(re.split(r"\s+", "  a b   c "), re.split(r"(,)", "a,b,,c"), re.split(r"x*", "axbxxc"), re.split("", "abc"))
print(re.split(r"\W+", "Words, words, words."), re.split(r"(\W+)", "Words, words."), re.split(r"\W+", "Words, words, words.", 1))
print(re.split(r"[,;]\s*", "a, b;c,  d", maxsplit=2), re.split(r"(?:,)|(;)", "a,b;c"))

print("-- match objects")
m = re.search(r"(?P<first>\w+) (?P<last>\w+)", "Jane Doe jr")
print(m, m.group(0), m.group(1, 2), m["last"], m.groupdict(), m.span(2), m.start(), m.end(1), m.lastindex, m.lastgroup)
print(re.match(r"(a)|(b)", "b").groups(), re.match(r"(a)|(b)", "b").groups("-"), re.match(r"((a)b)", "ab").lastindex)
m = re.match(r"(a)(b)?", "a")
print(m.lastindex, m.groups(), m.re.pattern, m.string, m.pos, m.endpos)
print(re.match("b", "ab"), re.fullmatch("a.", "ab"), re.search("^b", "ab"), bool(re.match("", "x")))
print(re.fullmatch(r"\d+\.\d*", "3.14").group(), re.match(r"\s*(\w+)\s*=\s*(.*)", "  lr = 0.1  ").groups())
print(re.compile("x").search("axbx", 2), re.compile("x").search("axbx", 1, 1), re.compile("b$").search("ab c", 0, 2))
print(re.compile(r"o").findall("foo boo", 3), re.compile("^f").match("xf", 1), re.compile("f").match("xf", 1))

print("-- flags, anchors, escapes")
p = re.compile(r"(?i)hello", re.M)
print(p, p.flags, p.groups, p.pattern, re.compile("a", re.I | re.S), re.compile("a").flags)
print(repr(re.compile(r"a\d", re.I | re.M | re.X)), re.compile("a", re.A).flags, re.compile("(?a)a").flags, re.compile("(?i)(?m)a").flags)
print(re.findall(r"(?m)^\w", "ab\ncd\n"), re.findall(r"(?m)^", "a\n"), re.findall(r"(?m)$", "a\nb\n"))
print(re.search("$", "abc").span(), re.search(r"\Z", "abc\n").span(), re.sub(r"\s+$", "", "abc   "))
print(re.findall(r"""(?x) \d+   # digits
    [a-z] """, "12a 3b"), re.findall(r"(?x) [ a ]+ ", "a a"), re.findall(r"(?s)a.b", "a\nb"), re.findall(r"a.b", "a\nb"))
print(re.findall(r"(?i)[a-z]+", "ABC déF"), re.findall(r"(?i:A)b", "ab Ab aB"))
print(re.findall(r"\u00e9|\x41|\101|\0", "éAA\x00"), re.findall(r"[\u00e0-\u00ff]+", "voilà café"))
print(re.escape("a.b*c d-e_f"), re.escape("Ωμέγα (1+1)"))
print(re.search(r"cat|category", "category").group(), re.search(r"a*?b", "aaab").group())
print(re.compile("a") == re.compile("a"), re.purge(), int(re.I | re.M))

print("-- Unicode text")
print(re.findall(r"\w+", "Ślusàrski naïve 123 ٣ 中文"), re.findall(r"(?a)\w+", "héllo wörld"))
print(re.findall(r"\S+", "héllo  wörld\u00a0x"), re.findall(r"[^\s,]+", "a, b ,c"), re.findall(r"[\S]+", "a b"), re.findall(r"[^\S]", "a b\tc"))
print(re.findall(r"\s", "a\tb\x0bc\x1cd\u3000e"), re.findall(r"\d", "٣4"), re.findall(r"(?a)\d", "٣4"), re.findall(r"\D+", "٣4x"))
print(re.findall(r"(?i)straße", "STRASSE Straße"), re.search(r"é+", "caféé!").span(), re.sub(r"(\w)(\w*)", r"\2\1", "Ωμέγα café"))

print("-- errors")
for pattern in ["(", "a)", "*a", "a**", "[a", r"\q", "(?P<1>a)", r"\x4", "a{3,2}", "(?i", "(?<x)", "a(?i)b", "a\n(b"]:
    try:
        re.compile(pattern)
    except re.error as e:
        print("error:", e, "|", e.msg, e.pos, e.lineno, e.colno)
for call in [lambda: re.search("a", 3), lambda: re.match("(a)", "a").group(2), lambda: re.sub("(a)", r"\2", "a"),
             lambda: re.compile(re.compile("a"), re.I)]:
    try:
        call()
    except (TypeError, IndexError, ValueError, re.error) as e:
        print(type(e).__name__, e)
print(isinstance(re.error("x"), Exception), re.error.__name__)

print("-- nested repetitions (exponential for a backtracking engine, linear for RE2)")
print(re.findall(r"(a+)+b", "a" * 18 + "c"), re.fullmatch(r"(x+x+)+y", "x" * 18))
