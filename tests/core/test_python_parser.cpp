// The Python-subset lexer and parser: tokens, AST shapes (in ast::dump's
// notation), node positions, every error with its file:line:col message,
// nesting limits, and the reference programs.
#include "test_support.h"

#include <QDir>

#include "core/python/compiler.h"
#include "core/python/lexer.h"
#include "core/python/parser.h"

using namespace kiln;
using namespace kiln::py;

namespace {

// "def f ( x ) : NL IN return x NL DE END": kinds that have no text are named.
QString tokens(std::string_view src) {
  Lexer lexer(src, "t.py");
  QStringList out;
  for (;;) {
    Token t = lexer.next();
    switch (t.kind) {
      case TokKind::Newline: out << "NL"; break;
      case TokKind::Indent: out << "IN"; break;
      case TokKind::Dedent: out << "DE"; break;
      case TokKind::End: out << "END"; return out.join(' ');
      case TokKind::String: out << QString::fromStdString("str:" + (t.is_fstring ? "f:" + std::string(t.body) : t.value)); break;
      default: out << QString::fromUtf8(t.text.data(), int(t.text.size()));
    }
  }
}

std::unique_ptr<ast::Module> parse_ok(std::string_view src) {
  auto m = parse_module(src, "t.py");
  if (!m.ok()) qFatal("parse failed: %s", m.status().to_string().c_str());
  return std::move(m).value();
}

QString dump_of(std::string_view src) { return QString::fromStdString(ast::dump(*parse_ok(src))); }

// The first expression statement's value (or the first assignment's value).
const ast::Expr& first_value(const ast::Module& m) {
  const ast::Stmt& s = *m.body.at(0);
  if (const auto* e = s.as<ast::ExprStmt>()) return *e->value;
  if (const auto* a = s.as<ast::Assign>()) return *a->value;
  qFatal("first statement is neither an expression nor an assignment");
}

QString pos(const ast::Expr& e) { return QString("%1:%2").arg(e.pos.line).arg(e.pos.col); }

}  // namespace

class TestPythonParser : public QObject {
  Q_OBJECT
 private slots:
  void tokens_layout() {
    QCOMPARE(tokens("def f(x):\n    return x  # comment\n"), QString("def f ( x ) : NL IN return x NL DE END"));
    // Blank and comment-only lines produce nothing; a missing final newline still ends the line.
    QCOMPARE(tokens("a = 1\n\n   # note\n\nb"), QString("a = 1 NL b NL END"));
    QCOMPARE(tokens("if a:\r\n\tb\r\nc\r\n"), QString("if a : NL IN b NL DE c NL END"));
    QCOMPARE(tokens("if a:\r\tb\rc"), QString("if a : NL IN b NL DE c NL END"));
    // A backslash and open brackets join physical lines into one logical line.
    QCOMPARE(tokens("x = 1 + \\\n  2\ny = (3,\n       4)\nz = [\n]\n"),
             QString("x = 1 + 2 NL y = ( 3 , 4 ) NL z = [ ] NL END"));
    // Several levels close at once, and at the end of the file.
    QCOMPARE(tokens("if a:\n  if b:\n    c\nd\nif e:\n  f"),
             QString("if a : NL IN if b : NL IN c NL DE DE d NL if e : NL IN f NL DE END"));
    // A tab reaches the next multiple of 8; consistent mixes are accepted.
    QCOMPARE(tokens("if a:\n\tb\n\tif c:\n\t    d\n"), QString("if a : NL IN b NL if c : NL IN d NL DE DE END"));
    QCOMPARE(tokens("a; b;\n"), QString("a ; b ; NL END"));
    QCOMPARE(tokens("a **= b // c -> ... := != <<= @ ~x"), QString("a **= b // c -> ... := != <<= @ ~ x NL END"));
    QCOMPARE(tokens("x = 'a' \"b\" f'{c}'"), QString("x = str:a str:b str:f:{c} NL END"));
    QCOMPARE(tokens("match = 1\nif not x in y: pass"), QString("match = 1 NL if not x in y : pass NL END"));
    QCOMPARE(tokens(""), QString("END"));
    QCOMPARE(tokens("\n\n# only a comment"), QString("END"));
    QCOMPARE(tokens("\xEF\xBB\xBFx"), QString("x NL END"));  // a UTF-8 byte order mark is skipped
  }

  // Columns are 1-based code points; positions survive multi-line strings.
  void token_positions() {
    Lexer lexer("s = 'é' + y\nt = '''a\nbc''' + z\nu = \\\n  w", "t.py");
    QStringList out;
    for (Token t = lexer.next(); t.kind != TokKind::End; t = lexer.next())
      if (t.kind != TokKind::Newline) out << QString("%1:%2").arg(t.pos.line).arg(t.pos.col);
    QCOMPARE(out.join(' '), QString("1:1 1:3 1:5 1:9 1:11 2:1 2:3 2:5 3:7 3:9 4:1 4:3 5:3"));
  }

  void numbers_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("is_float");
    QTest::addColumn<double>("value");
    QTest::newRow("decimal") << "42" << false << 42.0;
    QTest::newRow("zero") << "0" << false << 0.0;
    QTest::newRow("zeros") << "000" << false << 0.0;
    QTest::newRow("underscores") << "1_000_000" << false << 1e6;
    QTest::newRow("hex") << "0x1F" << false << 31.0;
    QTest::newRow("hex underscore") << "0X_ff_ff" << false << 65535.0;
    QTest::newRow("octal") << "0o17" << false << 15.0;
    QTest::newRow("binary") << "0b1010" << false << 10.0;
    QTest::newRow("int64 max") << "9223372036854775807" << false << 9223372036854775807.0;
    QTest::newRow("past int64") << "9223372036854775808" << false << 0.0;  // big_int_text, below
    QTest::newRow("float") << "1.5" << true << 1.5;
    QTest::newRow("leading dot") << ".5" << true << 0.5;
    QTest::newRow("trailing dot") << "5." << true << 5.0;
    QTest::newRow("exponent") << "1e-3" << true << 1e-3;
    QTest::newRow("exponent plus") << "2E+2" << true << 200.0;
    QTest::newRow("float underscores") << "1_000.0_1" << true << 1000.01;
    QTest::newRow("overflow is inf") << "1e999" << true << std::numeric_limits<double>::infinity();
  }
  void numbers() {
    QFETCH(QString, text);
    QFETCH(bool, is_float);
    QFETCH(double, value);
    std::string src = text.toStdString();
    Lexer lexer(src, "t.py");
    Token t = lexer.next();
    QCOMPARE(t.kind, is_float ? TokKind::Float : TokKind::Int);
    QCOMPARE(is_float ? t.float_value : double(t.int_value), value);
    QCOMPARE(t.big_int_text.empty(), text != "9223372036854775808");
    QCOMPARE(lexer.next().kind, TokKind::Newline);
  }

  void strings_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("value");
    QTest::newRow("single") << "'a b'" << "a b";
    QTest::newRow("double with single inside") << "\"it's\"" << "it's";
    QTest::newRow("escapes") << R"('\n\t\\\'\"\a\b\f\v\r')" << "\n\t\\'\"\a\b\f\v\r";
    QTest::newRow("hex and unicode") << R"('\x41\u00e9\U0001F600\101\0')" << QString::fromUtf8("A\xc3\xa9\xf0\x9f\x98\x80" "A") + QChar(0);
    QTest::newRow("unknown escape kept") << R"('\d\q')" << "\\d\\q";
    QTest::newRow("raw") << R"(r'\n\'')" << "\\n\\'";
    QTest::newRow("raw upper") << R"(R"\t")" << "\\t";
    QTest::newRow("u prefix") << "u'x'" << "x";
    QTest::newRow("triple") << "'''a\n'b'\n\"c\"'''" << "a\n'b'\n\"c\"";
    QTest::newRow("triple double") << "\"\"\"x\"y\"\"\"" << "x\"y";
    QTest::newRow("line continuation inside") << "'ab\\\ncd'" << "abcd";
    QTest::newRow("crlf inside triple") << "'''a\r\nb'''" << "a\nb";
    QTest::newRow("utf-8 text") << QString::fromUtf8("'\xce\xbb = \xe2\x88\x9a'") << QString::fromUtf8("\xce\xbb = \xe2\x88\x9a");
  }
  void strings() {
    QFETCH(QString, source);
    QFETCH(QString, value);
    QByteArray src = source.toUtf8();
    Lexer lexer(std::string_view(src.constData(), size_t(src.size())), "t.py");
    Token t = lexer.next();
    QCOMPARE(t.kind, TokKind::String);
    QCOMPARE(QString::fromUtf8(t.value.data(), int(t.value.size())), value);
    QCOMPARE(lexer.next().kind, TokKind::Newline);
  }

  // Expected dumps: CPython 3.11's ast.parse() of the same source, printed in
  // ast::dump's notation by a converter script (elif chains flattened, generator
  // expressions in parentheses).
  void ast_shapes_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("dump");
    QTest::newRow("imports")
        << QString("import torch\n"
                   "import torch.nn as nn\n"
                   "import torch.nn.functional as F\n"
                   "import torch, torch._dynamo\n"
                   "from X import a, b as c\n"
                   "from a.b import (d,\n"
                   "  e,)\n")
        << QString("import torch\n"
                   "import torch.nn as nn\n"
                   "import torch.nn.functional as F\n"
                   "import torch, torch._dynamo\n"
                   "from X import a, b as c\n"
                   "from a.b import d, e\n");
    QTest::newRow("def defaults kwonly varargs")
        << QString("def f(a, b=1, *args, c, d=2, **kw):\n"
                   "    return a\n")
        << QString("def f(a, b=1, *args, c, d=2, **kw):\n"
                   "  return a\n");
    QTest::newRow("def bare star")
        << QString("def f(a, *, k=3):\n"
                   "    pass\n")
        << QString("def f(a, *, k=3):\n"
                   "  pass\n");
    QTest::newRow("annotations")
        << QString("def g(x, scale: float, n: int) -> torch.Tensor:\n"
                   "    x: int = 3\n"
                   "    self.y: float\n")
        << QString("def g(x, scale: float, n: int) -> torch.Tensor:\n"
                   "  x: int = 3\n"
                   "  self.y: float\n");
    QTest::newRow("decorators")
        << QString("@torch.compile\n"
                   "@torch.compile(fullgraph=True)\n"
                   "def f(x):\n"
                   "    return x\n")
        << QString("@torch.compile\n"
                   "@torch.compile(fullgraph=True)\n"
                   "def f(x):\n"
                   "  return x\n");
    QTest::newRow("class")
        << QString("class Net(nn.Module):\n"
                   "    '''doc'''\n"
                   "    scale = 2\n"
                   "    def forward(self, x):\n"
                   "        return self.l1(x)\n"
                   "class Empty:\n"
                   "    pass\n")
        << QString("class Net(nn.Module):\n"
                   "  'doc'\n"
                   "  scale = 2\n"
                   "  def forward(self, x):\n"
                   "    return self.l1(x)\n"
                   "class Empty:\n"
                   "  pass\n");
    QTest::newRow("if elif else")
        << QString("if a:\n"
                   "    x = 1\n"
                   "elif b:\n"
                   "    x = 2\n"
                   "elif c:\n"
                   "    pass\n"
                   "else:\n"
                   "    x = 3\n")
        << QString("if a:\n"
                   "  x = 1\n"
                   "elif b:\n"
                   "  x = 2\n"
                   "elif c:\n"
                   "  pass\n"
                   "else:\n"
                   "  x = 3\n");
    QTest::newRow("else holding an if")
        << QString("if a:\n"
                   "    pass\n"
                   "else:\n"
                   "    if b:\n"
                   "        pass\n")
        << QString("if a:\n"
                   "  pass\n"
                   "else:\n"
                   "  if b:\n"
                   "    pass\n");
    QTest::newRow("for nested targets")
        << QString("for i, (a, b) in enumerate(zip(x, y)):\n"
                   "    break\n"
                   "else:\n"
                   "    continue\n")
        << QString("for (i, (a, b)) in enumerate(zip(x, y)):\n"
                   "  break\n"
                   "else:\n"
                   "  continue\n");
    QTest::newRow("while else")
        << QString("while n > 0:\n"
                   "    n -= 1\n"
                   "else:\n"
                   "    pass\n")
        << QString("while (n > 0):\n"
                   "  n -= 1\n"
                   "else:\n"
                   "  pass\n");
    QTest::newRow("with")
        << QString("with torch.no_grad():\n"
                   "    pass\n"
                   "with a() as b, c() as (d, e):\n"
                   "    pass\n"
                   "with (a() as b, c()):\n"
                   "    pass\n")
        << QString("with torch.no_grad():\n"
                   "  pass\n"
                   "with a() as b, c() as (d, e):\n"
                   "  pass\n"
                   "with a() as b, c():\n"
                   "  pass\n");
    QTest::newRow("assert del")
        << QString("assert x\n"
                   "assert x > 0, 'msg'\n"
                   "del a, b[0], c[1:2]\n")
        << QString("assert x\n"
                   "assert (x > 0), 'msg'\n"
                   "del a, b[0], c[1:2]\n");
    QTest::newRow("assignments")
        << QString("a = b = 1\n"
                   "a, *b, c = x\n"
                   "[a, b] = 1, 2\n"
                   "x.y = z[0] = 3\n"
                   "x.attr += 1\n"
                   "x[i] **= 2\n"
                   "x @= m\n")
        << QString("a = b = 1\n"
                   "(a, *b, c) = x\n"
                   "[a, b] = (1, 2)\n"
                   "x.y = z[0] = 3\n"
                   "x.attr += 1\n"
                   "x[i] **= 2\n"
                   "x @= m\n");
    QTest::newRow("numbers")
        << QString("x = (0x1F, 0o17, 0b101, 1_000_000, 1.5, .5, 5., 1e-3, 1_000.0, 1E+2)\n"
                   "y = (1_0000_0000_0000_0000_0000, 0xffff_ffff_ffff_ffff_f, -9223372036854775808)\n")
        << QString("x = (31, 15, 5, 1000000, 1.5, 0.5, 5.0, 0.001, 1000.0, 100.0)\n"
                   "y = (100000000000000000000, 0xfffffffffffffffff, (-9223372036854775808))\n");
    QTest::newRow("constants")
        << QString("x = (True, False, None, ..., 'a', \"b\", '''c''', r'\\n', 'a' 'b', 'x\\ty')\n")
        << QString("x = (True, False, None, ..., 'a', 'b', 'c', '\\\\n', 'ab', 'x\\ty')\n");
    QTest::newRow("fstrings")
        << QString("f'{x}'\n"
                   "f'a{x!r}b{y!s:>{w}}c'\n"
                   "f'{x!a:>5}'\n"
                   "f\"{x:.{p}f}\"\n"
                   "f'{x=}'\n"
                   "f'{{}}{x}'\n"
                   "f'{a:}' 'tail'\n"
                   "'head' f'{b}'\n")
        << QString("f<{x}>\n"
                   "f<'a', {x!r}, 'b', {y!s:f<'>', {w}>}, 'c'>\n"
                   "f<{x!a:f<'>5'>}>\n"
                   "f<{x:f<'.', {p}, 'f'>}>\n"
                   "f<'x=', {x!r}>\n"
                   "f<'{}', {x}>\n"
                   "f<{a:f<>}, 'tail'>\n"
                   "f<'head', {b}>\n");
    QTest::newRow("containers")
        << QString("x = [1, 2,]\n"
                   "y = (1,)\n"
                   "z = ()\n"
                   "d = {'a': 1, **e}\n"
                   "e = {}\n"
                   "l = [*a, b]\n"
                   "t = (*a, *b)\n")
        << QString("x = [1, 2]\n"
                   "y = (1,)\n"
                   "z = ()\n"
                   "d = {'a': 1, **e}\n"
                   "e = {}\n"
                   "l = [*a, b]\n"
                   "t = (*a, *b)\n");
    QTest::newRow("comprehensions")
        << QString("[x for x in y]\n"
                   "[x * y for x in a if x for y in b if y if x > y]\n"
                   "{k: v for k, v in items}\n"
                   "(x for x in y)\n"
                   "sum(x for x in y)\n")
        << QString("[x for x in y]\n"
                   "[(x * y) for x in a if x for y in b if y if (x > y)]\n"
                   "{k: v for (k, v) in items}\n"
                   "(x for x in y)\n"
                   "sum((x for x in y))\n");
    QTest::newRow("lambda")
        << QString("f = lambda: 0\n"
                   "g = lambda x, y=2, *a, k=1, **kw: x + y\n")
        << QString("f = (lambda: 0)\n"
                   "g = (lambda x, y=2, *a, k=1, **kw: (x + y))\n");
    QTest::newRow("conditional")
        << QString("x = a if b else c if d else e\n")
        << QString("x = (a if b else (c if d else e))\n");
    QTest::newRow("precedence")
        << QString("x = -x ** 2\n"
                   "y = a + b * c - d / e // f % g @ h\n"
                   "z = a | b ^ c & d << e >> f\n"
                   "w = 2 ** -1\n"
                   "v = a ** b ** c\n"
                   "u = ~a + +b\n")
        << QString("x = (-(x ** 2))\n"
                   "y = ((a + (b * c)) - ((((d / e) // f) % g) @ h))\n"
                   "z = (a | (b ^ (c & ((d << e) >> f))))\n"
                   "w = (2 ** (-1))\n"
                   "v = (a ** (b ** c))\n"
                   "u = ((~a) + (+b))\n");
    QTest::newRow("comparisons")
        << QString("x = a < b <= c == d != e > f >= g\n"
                   "y = a in b\n"
                   "z = a not in b\n"
                   "w = a is b\n"
                   "v = a is not b\n"
                   "u = not a == b\n")
        << QString("x = (a < b <= c == d != e > f >= g)\n"
                   "y = (a in b)\n"
                   "z = (a not in b)\n"
                   "w = (a is b)\n"
                   "v = (a is not b)\n"
                   "u = (not (a == b))\n");
    QTest::newRow("boolean")
        << QString("x = a and b and c or d\n"
                   "y = not a or not b\n")
        << QString("x = ((a and b and c) or d)\n"
                   "y = ((not a) or (not b))\n");
    QTest::newRow("calls")
        << QString("f(a, b, *c, k=1, **d)\n"
                   "f(*a, *b)\n"
                   "f(**a, k=2)\n"
                   "f()\n"
                   "x.y.z(1)(2)\n")
        << QString("f(a, b, *c, k=1, **d)\n"
                   "f(*a, *b)\n"
                   "f(**a, k=2)\n"
                   "f()\n"
                   "x.y.z(1)(2)\n");
    QTest::newRow("subscripts")
        << QString("a[1:2]\n"
                   "a[::2]\n"
                   "a[:, None]\n"
                   "a[..., 0]\n"
                   "a[i, j]\n"
                   "a[1:2, ::3]\n"
                   "a[:]\n"
                   "a[x][y]\n"
                   "a[*b]\n")
        << QString("a[1:2]\n"
                   "a[::2]\n"
                   "a[(:, None)]\n"
                   "a[(..., 0)]\n"
                   "a[(i, j)]\n"
                   "a[(1:2, ::3)]\n"
                   "a[:]\n"
                   "a[x][y]\n"
                   "a[(*b,)]\n");
    QTest::newRow("semicolons and continuation")
        << QString("a = 1; b = 2;\n"
                   "c = 1 + \\\n"
                   "    2\n"
                   "d = (1 +\n"
                   "     2)\n")
        << QString("a = 1\n"
                   "b = 2\n"
                   "c = (1 + 2)\n"
                   "d = (1 + 2)\n");
    QTest::newRow("return forms")
        << QString("def f():\n"
                   "    return\n"
                   "def g():\n"
                   "    return 1, 2\n"
                   "def h():\n"
                   "    return *a, b\n")
        << QString("def f():\n"
                   "  return\n"
                   "def g():\n"
                   "  return (1, 2)\n"
                   "def h():\n"
                   "  return (*a, b)\n");
    QTest::newRow("try is parsed")
        << QString("try:\n"
                   "    pass\n"
                   "except Exception as e:\n"
                   "    raise\n"
                   "except:\n"
                   "    raise X from e\n"
                   "else:\n"
                   "    pass\n"
                   "finally:\n"
                   "    pass\n")
        << QString("try:\n"
                   "  pass\n"
                   "except Exception as e:\n"
                   "  raise\n"
                   "except:\n"
                   "  raise X from e\n"
                   "else:\n"
                   "  pass\n"
                   "finally:\n"
                   "  pass\n");
  }
  void ast_shapes() {
    QFETCH(QString, source);
    QFETCH(QString, dump);
    QCOMPARE(dump_of(source.toStdString()), dump);
  }

  void implicit_concatenation_and_fstring_parts() {
    auto m = parse_ok("x = 'a' f'{b!r:>{w}}c' 'd'\n");
    const auto* j = first_value(*m).as<ast::JoinedStr>();
    QVERIFY(j);
    QCOMPARE(int(j->values.size()), 3);
    QCOMPARE(QString::fromStdString(j->values[0]->as<ast::Constant>()->value.s), QString("a"));
    const auto* f = j->values[1]->as<ast::FormattedValue>();
    QVERIFY(f);
    QCOMPARE(f->conversion, 'r');
    QCOMPARE(QString::fromStdString(ast::dump(*f->format_spec)), QString("f<'>', {w}>"));
    QCOMPARE(QString::fromStdString(j->values[2]->as<ast::Constant>()->value.s), QString("cd"));
    // An f-string without fields is a plain constant.
    auto plain = parse_ok("x = f'a{{b}}' 'c'\n");
    QCOMPARE(QString::fromStdString(ast::dump(first_value(*plain))), QString("'a{b}c'"));
  }

  // Node positions follow CPython's: an expression starts at its first token,
  // parentheses included; f-string fields keep their place in the file.
  void positions() {
    auto m = parse_ok("y = (a + b).sum(dim=-1)\n");
    const auto& call = *first_value(*m).as<ast::Call>();
    QCOMPARE(pos(call), QString("1:5"));
    const auto& attr = *call.func->as<ast::Attribute>();
    QCOMPARE(pos(attr), QString("1:5"));
    QCOMPARE(pos(*attr.value), QString("1:6"));  // a + b, inside the parentheses
    QCOMPARE(call.keywords[0].pos.col, 17);
    QCOMPARE(pos(*call.keywords[0].value), QString("1:21"));

    auto f = parse_ok("z = f'{x}  {y!r:>{w}}'\n");
    const auto& j = *first_value(*f).as<ast::JoinedStr>();
    QCOMPARE(pos(j), QString("1:5"));
    QCOMPARE(pos(*j.values[0]->as<ast::FormattedValue>()->value), QString("1:8"));
    const auto& y = *j.values[2]->as<ast::FormattedValue>();
    QCOMPARE(pos(*y.value), QString("1:13"));
    QCOMPARE(pos(*y.format_spec->as<ast::JoinedStr>()->values[1]->as<ast::FormattedValue>()->value), QString("1:19"));

    auto multi = parse_ok("s = f'''a\n  {q +\n r}'''\n");
    const auto& q = *first_value(*multi).as<ast::JoinedStr>()->values[1]->as<ast::FormattedValue>()->value;
    QCOMPARE(pos(q), QString("2:4"));
    QCOMPARE(pos(*q.as<ast::BinOp>()->right), QString("3:2"));

    auto unicode = parse_ok("s = 'é'; t = x\n");
    QCOMPARE(unicode->body[1]->pos.col, 10);

    auto decorated = parse_ok("@d\n@e(1)\ndef f(x, y=2):\n    return [v for v in x]\n");
    const auto& fn = *decorated->body[0]->as<ast::FunctionDef>();
    QCOMPARE(fn.pos.line, 3);
    QCOMPARE(pos(*fn.decorators[1]), QString("2:2"));
    QCOMPARE(fn.args.args[1].pos.col, 10);
    const auto& comp = *fn.body[0]->as<ast::Return>()->value->as<ast::ListComp>();
    QCOMPARE(pos(comp), QString("4:12"));
    QCOMPARE(comp.generators[0].pos.col, 15);

    auto branches = parse_ok("if a:\n  pass\nelif b:\n  pass\n");
    const auto& s = *branches->body[0]->as<ast::If>();
    QCOMPARE(s.branches[1].pos.line, 3);
    QCOMPARE(pos(*s.branches[1].test), QString("3:6"));

    auto genarg = parse_ok("f(x for x in y)\n");
    QCOMPARE(pos(*first_value(*genarg).as<ast::Call>()->args[0]), QString("1:2"));  // CPython: the call's '('
  }

  void source_lines() {
    auto m = parse_ok("a = 1\r\nb = 2\n\nc");
    QCOMPARE(int(m->source_lines->size()), 4);
    QCOMPARE(QString::fromStdString((*m->source_lines)[1]), QString("b = 2"));
    QCOMPARE(QString::fromStdString((*m->source_lines)[3]), QString("c"));
  }

  // compile_module's messages, as Status::to_string() prints them. Lexical and
  // syntax errors come from the parser, the rest from the compiler.
  void errors_data() {
    QTest::addColumn<QByteArray>("source");
    QTest::addColumn<QString>("message");
    QTest::newRow("unterminated string") << QByteArray("x = 'abc\n", 9) << QString("t.py:1:5: SyntaxError: unterminated string literal (detected at line 1)");
    QTest::newRow("unterminated triple-quoted string") << QByteArray("x = '''abc\n\n", 12) << QString("t.py:1:5: SyntaxError: unterminated triple-quoted string literal (detected at line 3)");
    QTest::newRow("unexpected indent") << QByteArray("if x:\n  a = 1\n    b = 2\n", 24) << QString("t.py:3:5: SyntaxError: unexpected indent");
    QTest::newRow("indented first line") << QByteArray("  x = 1\n", 8) << QString("t.py:1:3: SyntaxError: unexpected indent");
    QTest::newRow("bad dedent") << QByteArray("if x:\n    a = 1\n  b = 2\n", 24) << QString("t.py:3:3: SyntaxError: unindent does not match any outer indentation level");
    QTest::newRow("missing block") << QByteArray("if x:\na = 1\n", 12) << QString("t.py:2:1: SyntaxError: expected an indented block after 'if' statement on line 1");
    QTest::newRow("tabs and spaces") << QByteArray("if x:\n\ta = 1\n        b = 2\n", 27) << QString("t.py:3:9: SyntaxError: inconsistent use of tabs and spaces in indentation");
    QTest::newRow("never closed") << QByteArray("x = (1 +\n", 9) << QString("t.py:1:5: SyntaxError: '(' was never closed");
    QTest::newRow("unmatched") << QByteArray("x = 1)\n", 7) << QString("t.py:1:6: SyntaxError: unmatched ')'");
    QTest::newRow("mismatched bracket") << QByteArray("x = [1, 2)\n", 11) << QString("t.py:1:10: SyntaxError: closing parenthesis ')' does not match opening parenthesis '['");
    QTest::newRow("dangling operator") << QByteArray("x = 1 +\n", 8) << QString("t.py:1:8: SyntaxError: unexpected end of line");
    QTest::newRow("missing colon") << QByteArray("if x\n  pass\n", 12) << QString("t.py:1:5: SyntaxError: expected ':'");
    QTest::newRow("expected else") << QByteArray("x = 1 if y\n", 11) << QString("t.py:1:11: SyntaxError: expected 'else'");
    QTest::newRow("python 2 print") << QByteArray("print 'x'\n", 10) << QString("t.py:1:7: SyntaxError: unexpected string literal");
    QTest::newRow("invalid character") << QByteArray("x = $\n", 6) << QString("t.py:1:5: SyntaxError: invalid character '$' (U+0024)");
    QTest::newRow("non-printable character") << QByteArray("x = \xc2\xa0"" 1\n", 9) << QString("t.py:1:5: SyntaxError: invalid non-printable character U+00A0");
    QTest::newRow("null byte") << QByteArray("x = 1\0\n", 7) << QString("t.py:1:6: SyntaxError: source code cannot contain null bytes");
    QTest::newRow("leading zeros") << QByteArray("x = 09\n", 7) << QString("t.py:1:5: SyntaxError: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers");
    QTest::newRow("invalid decimal literal") << QByteArray("x = 1abc\n", 9) << QString("t.py:1:6: SyntaxError: invalid decimal literal");
    QTest::newRow("truncated escape") << QByteArray("x = '\\x4'\n", 10) << QString("t.py:1:6: SyntaxError: truncated \\xXX escape");
    QTest::newRow("continuation character") << QByteArray("x = 'a' \\ \n", 11) << QString("t.py:1:9: SyntaxError: unexpected character after line continuation character");
    QTest::newRow("empty f-string field") << QByteArray("x = f'{}'\n", 10) << QString("t.py:1:8: SyntaxError: f-string: empty expression not allowed");
    QTest::newRow("f-string missing brace") << QByteArray("x = f'{x'\n", 10) << QString("t.py:1:7: SyntaxError: f-string: expecting '}'");
    QTest::newRow("f-string single brace") << QByteArray("x = f'}'\n", 9) << QString("t.py:1:7: SyntaxError: f-string: single '}' is not allowed");
    QTest::newRow("error inside f-string field") << QByteArray("x = f'{a b}'\n", 13) << QString("t.py:1:10: SyntaxError: unexpected name 'b'");
    QTest::newRow("return outside function") << QByteArray("return 1\n", 9) << QString("t.py:1:1: SyntaxError: 'return' outside function");
    QTest::newRow("return in class body") << QByteArray("class A:\n  return 1\n", 20) << QString("t.py:2:3: SyntaxError: 'return' outside function");
    QTest::newRow("break outside loop") << QByteArray("break\n", 6) << QString("t.py:1:1: SyntaxError: 'break' outside loop");
    QTest::newRow("continue in nested def") << QByteArray("for x in y:\n  def f():\n    continue\n", 36) << QString("t.py:3:5: SyntaxError: 'continue' not properly in loop");
    QTest::newRow("unparenthesised generator") << QByteArray("f(x for x in y, 1)\n", 19) << QString("t.py:1:3: SyntaxError: Generator expression must be parenthesized");
    QTest::newRow("positional after keyword") << QByteArray("f(a=1, 2)\n", 10) << QString("t.py:1:8: SyntaxError: positional argument follows keyword argument");
    QTest::newRow("star after double star") << QByteArray("f(**a, *b)\n", 11) << QString("t.py:1:8: SyntaxError: iterable argument unpacking follows keyword argument unpacking");
    QTest::newRow("repeated keyword") << QByteArray("f(a=1, a=2)\n", 12) << QString("t.py:1:8: SyntaxError: keyword argument repeated: a");
    QTest::newRow("non-default after default") << QByteArray("def f(a=1, b): pass\n", 20) << QString("t.py:1:12: SyntaxError: non-default argument follows default argument");
    QTest::newRow("duplicate parameter") << QByteArray("def f(a, a): pass\n", 18) << QString("t.py:1:10: SyntaxError: duplicate argument 'a' in function definition");
    QTest::newRow("bare star") << QByteArray("def f(*): pass\n", 15) << QString("t.py:1:8: SyntaxError: named arguments must follow bare *");
    QTest::newRow("parameter after kwargs") << QByteArray("def f(**k, a): pass\n", 20) << QString("t.py:1:12: SyntaxError: arguments cannot follow var-keyword argument");
    QTest::newRow("two starred targets") << QByteArray("a, *b, *c = x\n", 14) << QString("t.py:1:8: SyntaxError: multiple starred expressions in assignment");
    QTest::newRow("lone starred target") << QByteArray("*a = x\n", 7) << QString("t.py:1:1: SyntaxError: starred assignment target must be in a list or tuple");
    QTest::newRow("assign to call") << QByteArray("f() = 1\n", 8) << QString("t.py:1:1: SyntaxError: cannot assign to function call");
    QTest::newRow("assign to literal") << QByteArray("1 = x\n", 6) << QString("t.py:1:1: SyntaxError: cannot assign to literal");
    QTest::newRow("augmented tuple") << QByteArray("(a, b) += 1\n", 12) << QString("t.py:1:1: SyntaxError: 'tuple' is an illegal expression for augmented assignment");
    QTest::newRow("delete call") << QByteArray("del f()\n", 8) << QString("t.py:1:5: SyntaxError: cannot delete function call");
    QTest::newRow("starred expression") << QByteArray("x = *a\n", 7) << QString("t.py:1:5: SyntaxError: can't use starred expression here");
    QTest::newRow("unsupported yield in an expression") << QByteArray("def g():\n  f((yield 1))\n", 24) << QString("t.py:2:6: unsupported construct: yield inside an expression (write it as a statement or an assignment's value)");
    QTest::newRow("assign to set display") << QByteArray("{a, b} = 1\n", 11) << QString("t.py:1:1: SyntaxError: cannot assign to set display");
    QTest::newRow("unsupported async") << QByteArray("async def f(): pass\n", 20) << QString("t.py:1:1: unsupported construct: async (the subset has no coroutines)");
    QTest::newRow("unsupported await") << QByteArray("def f():\n  await x\n", 19) << QString("t.py:2:3: unsupported construct: await (the subset has no coroutines)");
    QTest::newRow("global without a name") << QByteArray("global\n", 7) << QString("t.py:1:7: SyntaxError: unexpected end of line");
    QTest::newRow("unsupported walrus") << QByteArray("if (y := 3): pass\n", 18) << QString("t.py:1:7: unsupported construct: walrus operator ':=' (assign in a separate statement)");
    QTest::newRow("unsupported complex") << QByteArray("c = 1j\n", 7) << QString("t.py:1:5: unsupported construct: complex number literal (the subset has no complex numbers)");
    QTest::newRow("unsupported bytes") << QByteArray("b = b'x'\n", 9) << QString("t.py:1:5: unsupported construct: bytes literal (the subset has no bytes type)");
    QTest::newRow("decimal literal past 4300 digits")
        << QByteArray("x = ") + QByteArray(4301, '9') + QByteArray("\n")
        << QString("t.py:1:5: SyntaxError: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 "
                   "digits; use sys.set_int_max_str_digits() to increase the limit - Consider hexadecimal for huge "
                   "integer literals to avoid decimal conversion limits.");
    QTest::newRow("hex literal past 2**20 bits") << QByteArray("x = 0x") + QByteArray(262145, 'f') + QByteArray("\n")
                                                 << QString("t.py:1:5: unsupported construct: integer literal of 262145 digits (Kiln's ints have at most 2**20 bits)");
    QTest::newRow("unsupported match") << QByteArray("match x:\n  case 1: pass\n", 24) << QString("t.py:1:1: unsupported construct: match statement (use if/elif chains)");
    QTest::newRow("unsupported positional-only") << QByteArray("def f(a, /, b): pass\n", 21) << QString("t.py:1:10: unsupported construct: positional-only parameters (remove the '/')");
    QTest::newRow("unsupported relative import") << QByteArray("from . import x\n", 16) << QString("t.py:1:6: unsupported construct: relative import (a program is a single file; import modules by name)");
    QTest::newRow("unsupported star import") << QByteArray("from x import *\n", 16) << QString("t.py:1:15: unsupported construct: from ... import * (import the names you use)");
    QTest::newRow("unsupported multiple bases") << QByteArray("class A(B, C): pass\n", 20) << QString("t.py:1:12: unsupported construct: multiple inheritance (a class has at most one base)");
    QTest::newRow("unsupported metaclass") << QByteArray("class A(metaclass=M): pass\n", 27) << QString("t.py:1:9: unsupported construct: metaclass= (the subset has no metaclasses)");
    QTest::newRow("unsupported module-level del") << QByteArray("del x\n", 6) << QString("t.py:1:5: unsupported construct: del of a module-level or class-level name (only local variables can be deleted)");
    QTest::newRow("unsupported del of a cell") << QByteArray("def f():\n  x = 1\n  def g(): return x\n  del x\n", 45) << QString("t.py:4:7: unsupported construct: del of a variable used by a nested function (assign None to it instead)");
    QTest::newRow("unsupported walrus in a comprehension") << QByteArray("print([y for x in r if (y := x) > 1])\n", 38) << QString("t.py:1:27: unsupported construct: walrus operator ':=' (assign in a separate statement)");
    QTest::newRow("unsupported except star") << QByteArray("try:\n  pass\nexcept* E:\n  pass\n", 30) << QString("t.py:3:7: unsupported construct: except* (the subset has no exception groups)");
    QTest::newRow("unsupported def type parameters") << QByteArray("def f[T](x): return x\n", 22) << QString("t.py:1:6: unsupported construct: type parameters (def f[T]) (leave them out; annotations are not checked)");
    QTest::newRow("unsupported class type parameters") << QByteArray("class C[T]: pass\n", 17) << QString("t.py:1:8: unsupported construct: type parameters (class C[T]) (leave them out; annotations are not checked)");
    QTest::newRow("unsupported type statement") << QByteArray("type X = int\n", 13) << QString("t.py:1:1: unsupported construct: type statement (assign the alias: X = int)");
  }
  void errors() {
    QFETCH(QByteArray, source);
    QFETCH(QString, message);
    auto code = compile_module(std::string_view(source.constData(), size_t(source.size())), "t.py");
    QVERIFY(!code.ok());
    QCOMPARE(QString::fromStdString(code.status().to_string()), message);
  }

  // Deep input is an error, never a stack overflow.
  void nesting_limits() {
    auto nested = [](int n) { return "x = " + std::string(size_t(n), '(') + "1" + std::string(size_t(n), ')') + "\n"; };
    QVERIFY(parse_module(nested(kMaxSyntaxNesting), "t.py").ok());
    QCOMPARE(QString::fromStdString(parse_module(nested(kMaxSyntaxNesting + 1), "t.py").status().to_string()),
             QString("t.py:1:205: SyntaxError: too many nested parentheses, brackets or blocks (more than 200)"));
    auto blocks = [](int n) {
      std::string s;
      for (int i = 0; i < n; ++i) s += std::string(size_t(i), ' ') + "if x:\n";
      return s + std::string(size_t(n), ' ') + "pass\n";
    };
    QVERIFY(parse_module(blocks(kMaxSyntaxNesting), "t.py").ok());
    QCOMPARE(QString::fromStdString(parse_module(blocks(kMaxSyntaxNesting + 1), "t.py").status().message()),
             QString("SyntaxError: too many nested parentheses, brackets or blocks (more than 200)"));
    auto unary = parse_module("x = " + std::string(100000, '-') + "1\n", "t.py");
    QVERIFY(!unary.ok());
    auto lambdas = parse_module("f = " + [] { std::string s; for (int i = 0; i < 5000; ++i) s += "lambda: "; return s; }() + "0\n", "t.py");
    QVERIFY(!lambdas.ok());
    // Left-deep chains grow the tree without nesting: bounded by height.
    auto chain = [](int n) {
      std::string s = "x = a";
      for (int i = 1; i < n; ++i) s += " + a";
      return s + "\n";
    };
    QVERIFY(compile_module(chain(kMaxExpressionHeight - 1), "t.py").ok());
    QCOMPARE(QString::fromStdString(compile_module(chain(kMaxExpressionHeight + 1), "t.py").status().to_string()),
             QString("t.py:1:5: SyntaxError: expression too deeply nested (more than 1000 levels)"));
    QVERIFY(!parse_module("x = a" + [] { std::string s; for (int i = 0; i < 100000; ++i) s += ".b"; return s; }() + "\n", "t.py").ok());
    // Wide is fine: long lists, many statements, many with-items.
    std::string wide = "x = [";
    for (int i = 0; i < 100000; ++i) wide += "1, ";
    wide += "]\nwith " + [] { std::string s; for (int i = 0; i < 10000; ++i) s += "a(), "; return s; }() + "b():\n  pass\n";
    QVERIFY(compile_module(wide, "t.py").ok());
  }

  void reference_programs_parse() {
    QDir dir(QString::fromStdString(test::reference_dir() + "/programs"));
    QStringList files = dir.entryList({"*.py"}, QDir::Files, QDir::Name);
    QVERIFY(files.size() >= 8);
    for (const QString& name : files) {
      QFile f(dir.filePath(name));
      QVERIFY(f.open(QIODevice::ReadOnly));
      QByteArray text = f.readAll();
      auto m = parse_module(std::string_view(text.constData(), size_t(text.size())), name.toStdString());
      QVERIFY2(m.ok(), qPrintable(QString::fromStdString(m.status().to_string())));
      QVERIFY((*m)->body.size() >= 5);
    }
  }
};

QTEST_APPLESS_MAIN(TestPythonParser)
#include "test_python_parser.moc"
