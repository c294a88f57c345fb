// `re` over RE2 (core/python/stdlib_re.cpp, re_translate.cpp). The program in
// tests/data/re/ prints what CPython 3.11 printed for it (expected.txt, made
// with python3 3.11.7): substitution with templates and callables, findall's
// shapes, split, match objects, flags, Unicode classes, re.error's messages
// and positions. What RE2 cannot match exactly is refused with exit 3, and
// what depends on the text is refused only on such text.
#include "test_support.h"

#include "compiler/pytorch_output_compare.h"
#include "core/python/re_translate.h"
#include "core/python/vm.h"
#include "python_run_util.h"

using kiln::Status;
using kiln::test::read_text;
using namespace kiln::py;

namespace {

using kiln::test::last_error_line;
using kiln::test::Ran;

Ran run(const std::string& source) { return kiln::test::run_python(source); }

QString data_path(const char* name) { return QStringLiteral(KILN_SOURCE_DIR "/tests/data/re/") + name; }

}  // namespace

class TestPythonRe : public QObject {
  Q_OBJECT
 private slots:
  void prints_what_cpython_printed() {
    Ran r = run(read_text(data_path("program.py")));
    QVERIFY2(r.exit == 0, r.err.c_str());
    QCOMPARE(r.out, read_text(data_path("expected.txt")));
  }

  // Python accepts these patterns; RE2 has no exact equivalent, so Kiln refuses
  // them by name rather than matching something else.
  void refuses_what_re2_cannot_match_exactly() {
    const std::pair<const char*, const char*> programs[] = {
        {"import re\nre.search(r'(a)\\1', 'aa')\n", "backreferences"},
        {"import re\nre.search(r'(?P<x>a)(?P=x)', 'aa')\n", "backreferences"},
        {"import re\nre.sub(r'(?<=a)b', 'x', 'ab')\n", "lookbehind"},
        {"import re\nre.findall(r'\\w+(?=,)', 'a,b')\n", "lookahead"},
        {"import re\nre.match(r'(?>a+)b', 'aab')\n", "atomic groups"},
        {"import re\nre.match(r'a++', 'aa')\n", "possessive"},
        {"import re\nre.match(r'a{1001}', 'a')\n", "a repetition count above 1000"},
        {"import re\nre.findall(r'(a|)+', 'aa')\n", "a repeated group that can match the empty text"},
        {"import re\nre.findall(r'(a*)*', 'b')\n", "a repeated group that can match the empty text"},
        // Text-dependent: fine on ASCII text, refused on the text where RE2 and Python differ.
        {"import re\nprint(re.findall(r'\\bw', 'a word'))\nre.findall(r'\\bw', 'ä word')\n", "re's \\b or \\B on non-ASCII"},
        {"import re\nprint(re.search('a$', 'a'))\nre.search('a$', 'a\\n')\n", "re's `$` on text ending in a newline"},
        {"import re\nre.findall(r'(?ai)k', 'k\\u212a')\n", "re.IGNORECASE with re.ASCII on non-ASCII"},
        // An empty match where a non-empty one starts at the same place: which one Python's
        // backtracking takes after stepping over the empty one is not RE2's to say.
        {"import re\nre.sub(r'x*|a', '-', 'ab')\n", "re iteration past an empty match"},
    };
    for (const auto& [source, what] : programs) {
      Ran r = run(source);
      QCOMPARE(r.exit, 3);
      const std::string line = last_error_line(r.err);
      QVERIFY2(line.find(what) != std::string::npos, (std::string(source) + " -> " + line).c_str());
      QVERIFY2(line.starts_with("NotImplementedError: re"), line.c_str());
    }
  }

  // The rewritten patterns themselves: Python's classes become explicit, anchors
  // stop depending on RE2's flags, and the flags Pattern.flags shows are Python's.
  void translation() {
    re::Translation t = re::translate(R"(^\d{,3}$)", 0);
    QCOMPARE(t.re2, std::string(R"(\A\p{Nd}{0,3}\z)"));
    QVERIFY(t.end_dollar);
    QCOMPARE(t.flags, int64_t(re::kUnicode));
    t = re::translate(R"((?m)^a$)", re::kIgnoreCase);
    QCOMPARE(t.re2, std::string("(?i)(?m:^)a(?m:$)"));
    QCOMPARE(t.flags, int64_t(re::kIgnoreCase | re::kMultiline | re::kUnicode));
    t = re::translate(R"((?a)\w[\s])", 0);
    QCOMPARE(t.re2, std::string(R"([0-9A-Za-z_][\t\n\x{b}\x{c}\r ])"));
    QCOMPARE(t.flags, int64_t(re::kAscii));
    t = re::translate("(?P<year>[0-9]{4})-(x)", 0);
    QCOMPARE(t.groups, 2);
    QCOMPARE(t.group_index.at("year"), 1);
    t = re::translate("[[:alpha:]]", 0);  // Python: a class of '[', ':', 'a', ... then ']'
    QCOMPARE(t.re2, std::string(R"([\[\:alpha\:]\])"));
    t = re::translate("a{", 0);  // not a quantifier: literal braces
    QCOMPARE(t.re2, std::string(R"(a\{)"));
    t = re::translate("(?x) a b # c\n c", 0);
    QCOMPARE(t.re2, std::string("abc"));
    t = re::translate("a)", 0);
    QCOMPARE(t.error, std::string("unbalanced parenthesis"));
    QCOMPARE(t.error_pos, size_t(1));
  }

  // RE2 runs in time linear in the text: a pattern that takes a backtracking
  // engine exponential time answers at once.
  void nested_repetition_is_linear() {
    Ran r = run("import re\nprint(re.findall(r'(x+x+)+y', 'x' * 5000), re.search(r'(a|aa)+$', 'a' * 5000 + 'b'))\n");
    QCOMPARE(r.exit, 0);
    QCOMPARE(r.out, std::string("[] None\n"));
  }
};

QTEST_GUILESS_MAIN(TestPythonRe)
#include "test_python_re.moc"
