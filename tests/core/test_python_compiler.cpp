// The bytecode compiler of the Python subset, checked on disassembly text and
// code object fields (no interpreter involved). The expected listings were
// reviewed against CPython 3.10's code generator, the instruction set's model;
// programs using every construct here, run by a throwaway Python interpreter of
// this bytecode (not in the repository), printed what CPython prints.
#include "test_support.h"

#include <QDir>
#include <functional>

#include "core/python/code.h"
#include "core/python/compiler.h"

using namespace kiln;
using namespace kiln::py;

namespace {

CodePtr compile_ok(const std::string& src, const std::string& file = "t.py") {
  auto code = compile_module(src, file);
  if (!code.ok()) qFatal("compile failed: %s", code.status().to_string().c_str());
  return *code;
}

// The code object with `qualname` among `root` and its nested code constants.
const Code* find_code(const Code& root, const std::string& qualname) {
  if (root.qualname == qualname) return &root;
  for (const Const& c : root.consts)
    if (c.kind == Const::Kind::Code)
      if (const Code* found = find_code(*c.code, qualname)) return found;
  return nullptr;
}

void for_each_code(const Code& root, const std::function<void(const Code&)>& f) {
  f(root);
  for (const Const& c : root.consts)
    if (c.kind == Const::Kind::Code) for_each_code(*c.code, f);
}

bool is_jump(Op op) {
  return op == Op::Jump || op == Op::PopJumpIfFalse || op == Op::PopJumpIfTrue || op == Op::JumpIfFalseOrPop ||
         op == Op::JumpIfTrueOrPop || op == Op::ForIter || op == Op::WithExceptExit;
}

QByteArray read_file(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(path));
  return f.readAll();
}

}  // namespace

class TestPythonCompiler : public QObject {
  Q_OBJECT
 private slots:
  void disassembly_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<QStringList>("qualnames");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("scoping")
        << QString("x = 1\n"
                   "def f(a, b=2, *args, k, m=3, **kw):\n"
                   "    c = a + x\n"
                   "    def g(d):\n"
                   "        return c + d\n"
                   "    return g\n")
        << QStringList{"<module>", "f", "f.<locals>.g"}
        << QStringList{
               QString("code <module> (t.py:1) module\n"
                       "   0 LoadConst 1 (line 1:5)\n"
                       "   1 StoreName x (line 1:1)\n"
                       "   2 LoadConst 2 (line 2:12)\n"
                       "   3 BuildTuple 1 (line 2:1)\n"
                       "   4 LoadConst 'm' (line 2:25)\n"
                       "   5 LoadConst 3 (line 2:27)\n"
                       "   6 BuildMap 1 (line 2:1)\n"
                       "   7 LoadConst <code f> (line 2:1)\n"
                       "   8 MakeFunction defaults|kwdefaults (line 2:1)\n"
                       "   9 StoreName f (line 2:1)\n"
                       "  10 LoadConst None (line 2:1)\n"
                       "  11 ReturnValue (line 2:1)\n"),
               QString("code f (t.py:2) argcount=2 kwonly=2 varargs varkw\n"
                       "  varnames: a, b, k, m, args, kw, g\n"
                       "  cellvars: c\n"
                       "   0 LoadFast a (line 3:9)\n"
                       "   1 LoadGlobal x (line 3:13)\n"
                       "   2 BinaryOp + (line 3:9)\n"
                       "   3 StoreDeref c (line 3:5)\n"
                       "   4 LoadClosure c (line 4:5)\n"
                       "   5 BuildTuple 1 (line 4:5)\n"
                       "   6 LoadConst <code g> (line 4:5)\n"
                       "   7 MakeFunction closure (line 4:5)\n"
                       "   8 StoreFast g (line 4:5)\n"
                       "   9 LoadFast g (line 6:12)\n"
                       "  10 ReturnValue (line 6:5)\n"),
               QString("code f.<locals>.g (t.py:4) argcount=1\n"
                       "  varnames: d\n"
                       "  freevars: c\n"
                       "   0 LoadDeref c (line 5:16)\n"
                       "   1 LoadFast d (line 5:20)\n"
                       "   2 BinaryOp + (line 5:16)\n"
                       "   3 ReturnValue (line 5:9)\n")};
    QTest::newRow("class bodies")
        << QString("class Net(nn.Module):\n"
                   "    \"\"\"doc\"\"\"\n"
                   "    scale = 2\n"
                   "    def forward(self, x):\n"
                   "        return self.l1(x) * scale\n"
                   "def make(n):\n"
                   "    class C:\n"
                   "        k = n\n"
                   "        def m(self):\n"
                   "            return n\n"
                   "    return C\n")
        << QStringList{"<module>", "Net", "Net.forward", "make", "make.<locals>.C", "make.<locals>.C.m"}
        << QStringList{
               QString("code <module> (t.py:1) module\n"
                       "   0 LoadConst <code Net> (line 1:1)\n"
                       "   1 MakeFunction (line 1:1)\n"
                       "   2 LoadConst 'Net' (line 1:1)\n"
                       "   3 LoadName nn (line 1:11)\n"
                       "   4 LoadAttr Module (line 1:11)\n"
                       "   5 BuildClass 1 (line 1:1)\n"
                       "   6 StoreName Net (line 1:1)\n"
                       "   7 LoadConst <code make> (line 6:1)\n"
                       "   8 MakeFunction (line 6:1)\n"
                       "   9 StoreName make (line 6:1)\n"
                       "  10 LoadConst None (line 6:1)\n"
                       "  11 ReturnValue (line 6:1)\n"),
               QString("code Net (t.py:1) class-body\n"
                       "   0 LoadConst 'doc' (line 2:5)\n"
                       "   1 StoreName __doc__ (line 2:5)\n"
                       "   2 LoadConst 2 (line 3:13)\n"
                       "   3 StoreName scale (line 3:5)\n"
                       "   4 LoadConst <code forward> (line 4:5)\n"
                       "   5 MakeFunction (line 4:5)\n"
                       "   6 StoreName forward (line 4:5)\n"
                       "   7 LoadConst None (line 4:5)\n"
                       "   8 ReturnValue (line 4:5)\n"),
               QString("code Net.forward (t.py:4) argcount=2\n"
                       "  varnames: self, x\n"
                       "   0 LoadFast self (line 5:16)\n"
                       "   1 LoadAttr l1 (line 5:16)\n"
                       "   2 LoadFast x (line 5:24)\n"
                       "   3 Call 1 (line 5:16)\n"
                       "   4 LoadGlobal scale (line 5:29)\n"
                       "   5 BinaryOp * (line 5:16)\n"
                       "   6 ReturnValue (line 5:9)\n"),
               QString("code make (t.py:6) argcount=1\n"
                       "  varnames: n, C\n"
                       "  cellvars: n\n"
                       "   0 LoadClosure n (line 7:5)\n"
                       "   1 BuildTuple 1 (line 7:5)\n"
                       "   2 LoadConst <code C> (line 7:5)\n"
                       "   3 MakeFunction closure (line 7:5)\n"
                       "   4 LoadConst 'C' (line 7:5)\n"
                       "   5 BuildClass 0 (line 7:5)\n"
                       "   6 StoreFast C (line 7:5)\n"
                       "   7 LoadFast C (line 11:12)\n"
                       "   8 ReturnValue (line 11:5)\n"),
               QString("code make.<locals>.C (t.py:7) class-body\n"
                       "  freevars: n\n"
                       "   0 LoadDeref n (line 8:13)\n"
                       "   1 StoreName k (line 8:9)\n"
                       "   2 LoadClosure n (line 9:9)\n"
                       "   3 BuildTuple 1 (line 9:9)\n"
                       "   4 LoadConst <code m> (line 9:9)\n"
                       "   5 MakeFunction closure (line 9:9)\n"
                       "   6 StoreName m (line 9:9)\n"
                       "   7 LoadConst None (line 9:9)\n"
                       "   8 ReturnValue (line 9:9)\n"),
               QString("code make.<locals>.C.m (t.py:9) argcount=1\n"
                       "  varnames: self\n"
                       "  freevars: n\n"
                       "   0 LoadDeref n (line 10:20)\n"
                       "   1 ReturnValue (line 10:13)\n")};
    QTest::newRow("comprehensions")
        << QString("def f(xs, m):\n"
                   "    a = [x * 2 for x in xs if x]\n"
                   "    b = {k: v for k, v in m}\n"
                   "    c = [(i, j) for i in xs for j in range(i) if j]\n"
                   "    return sum(x for x in xs)\n")
        << QStringList{"f", "f.<locals>.<genexpr>"}
        << QStringList{
               QString("code f (t.py:1) argcount=2\n"
                       "  varnames: xs, m, <comp>.x.1, a, <comp>.k.2, <comp>.v.2, b, <comp>.i.3, <comp>.j.3, c\n"
                       "   0 BuildList 0 (line 2:9)\n"
                       "   1 LoadFast xs (line 2:25)\n"
                       "   2 GetIter (line 2:25)\n"
                       "   3 ForIter to 12 (line 2:16)\n"
                       "   4 StoreFast <comp>.x.1 (line 2:20)\n"
                       "   5 LoadFast <comp>.x.1 (line 2:31)\n"
                       "   6 PopJumpIfFalse to 3 (line 2:31)\n"
                       "   7 LoadFast <comp>.x.1 (line 2:10)\n"
                       "   8 LoadConst 2 (line 2:14)\n"
                       "   9 BinaryOp * (line 2:10)\n"
                       "  10 ListAppend 2 (line 2:10)\n"
                       "  11 Jump to 3 (line 2:16)\n"
                       "  12 StoreFast a (line 2:5)\n"
                       "  13 BuildMap 0 (line 3:9)\n"
                       "  14 LoadFast m (line 3:27)\n"
                       "  15 GetIter (line 3:27)\n"
                       "  16 ForIter to 24 (line 3:15)\n"
                       "  17 UnpackSequence 2 (line 3:19)\n"
                       "  18 StoreFast <comp>.k.2 (line 3:19)\n"
                       "  19 StoreFast <comp>.v.2 (line 3:22)\n"
                       "  20 LoadFast <comp>.k.2 (line 3:10)\n"
                       "  21 LoadFast <comp>.v.2 (line 3:13)\n"
                       "  22 MapAdd 2 (line 3:10)\n"
                       "  23 Jump to 16 (line 3:15)\n"
                       "  24 StoreFast b (line 3:5)\n"
                       "  25 BuildList 0 (line 4:9)\n"
                       "  26 LoadFast xs (line 4:26)\n"
                       "  27 GetIter (line 4:26)\n"
                       "  28 ForIter to 44 (line 4:17)\n"
                       "  29 StoreFast <comp>.i.3 (line 4:21)\n"
                       "  30 LoadGlobal range (line 4:38)\n"
                       "  31 LoadFast <comp>.i.3 (line 4:44)\n"
                       "  32 Call 1 (line 4:38)\n"
                       "  33 GetIter (line 4:38)\n"
                       "  34 ForIter to 43 (line 4:29)\n"
                       "  35 StoreFast <comp>.j.3 (line 4:33)\n"
                       "  36 LoadFast <comp>.j.3 (line 4:50)\n"
                       "  37 PopJumpIfFalse to 34 (line 4:50)\n"
                       "  38 LoadFast <comp>.i.3 (line 4:11)\n"
                       "  39 LoadFast <comp>.j.3 (line 4:14)\n"
                       "  40 BuildTuple 2 (line 4:10)\n"
                       "  41 ListAppend 3 (line 4:10)\n"
                       "  42 Jump to 34 (line 4:29)\n"
                       "  43 Jump to 28 (line 4:17)\n"
                       "  44 StoreFast c (line 4:5)\n"
                       "  45 LoadGlobal sum (line 5:12)\n"
                       "  46 LoadConst <code <genexpr>> (line 5:15)\n"
                       "  47 MakeFunction (line 5:15)\n"
                       "  48 LoadFast xs (line 5:27)\n"
                       "  49 GetIter (line 5:27)\n"
                       "  50 Call 1 (line 5:15)\n"
                       "  51 Call 1 (line 5:12)\n"
                       "  52 ReturnValue (line 5:5)\n"),
               // A generator expression is a generator function of its own, as CPython's:
               // its first iterable's iterator is the argument ".0".
               QString("code f.<locals>.<genexpr> (t.py:5) argcount=1 generator\n"
                       "  varnames: .0, x\n"
                       "   0 LoadFast .0 (line 5:27)\n"
                       "   1 ForIter to 7 (line 5:18)\n"
                       "   2 StoreFast x (line 5:22)\n"
                       "   3 LoadFast x (line 5:16)\n"
                       "   4 Yield (line 5:16)\n"
                       "   5 PopTop (line 5:16)\n"
                       "   6 Jump to 1 (line 5:18)\n"
                       "   7 LoadConst None (line 5:15)\n"
                       "   8 ReturnValue (line 5:15)\n")};
    QTest::newRow("comprehension closure")
        << QString("def f():\n"
                   "    return [lambda: i for i in range(3)]\n")
        << QStringList{"f", "f.<locals>.<lambda>"}
        << QStringList{
               QString("code f (t.py:1) argcount=0\n"
                       "  cellvars: <comp>.i.1\n"
                       "   0 BuildList 0 (line 2:12)\n"
                       "   1 LoadGlobal range (line 2:32)\n"
                       "   2 LoadConst 3 (line 2:38)\n"
                       "   3 Call 1 (line 2:32)\n"
                       "   4 GetIter (line 2:32)\n"
                       "   5 ForIter to 13 (line 2:23)\n"
                       "   6 StoreDeref <comp>.i.1 (line 2:27)\n"
                       "   7 LoadClosure <comp>.i.1 (line 2:13)\n"
                       "   8 BuildTuple 1 (line 2:13)\n"
                       "   9 LoadConst <code <lambda>> (line 2:13)\n"
                       "  10 MakeFunction closure (line 2:13)\n"
                       "  11 ListAppend 2 (line 2:13)\n"
                       "  12 Jump to 5 (line 2:23)\n"
                       "  13 ReturnValue (line 2:5)\n"),
               QString("code f.<locals>.<lambda> (t.py:2) argcount=0\n"
                       "  freevars: <comp>.i.1\n"
                       "   0 LoadDeref <comp>.i.1 (line 2:21)\n"
                       "   1 ReturnValue (line 2:21)\n")};
    QTest::newRow("chained comparison")
        << QString("def f(a, b, c):\n"
                   "    return a < b < c\n")
        << QStringList{"f"}
        << QStringList{
               QString("code f (t.py:1) argcount=3\n"
                       "  varnames: a, b, c\n"
                       "   0 LoadFast a (line 2:12)\n"
                       "   1 LoadFast b (line 2:16)\n"
                       "   2 DupTop (line 2:12)\n"
                       "   3 RotThree (line 2:12)\n"
                       "   4 CompareOp < (line 2:12)\n"
                       "   5 JumpIfFalseOrPop to 9 (line 2:12)\n"
                       "   6 LoadFast c (line 2:20)\n"
                       "   7 CompareOp < (line 2:12)\n"
                       "   8 Jump to 11 (line 2:12)\n"
                       "   9 RotTwo (line 2:12)\n"
                       "  10 PopTop (line 2:12)\n"
                       "  11 ReturnValue (line 2:5)\n")};
    QTest::newRow("augmented assignment")
        << QString("def f(x, i, v, n):\n"
                   "    x.attr += 1\n"
                   "    x[i] += v\n"
                   "    n //= 2\n")
        << QStringList{"f"}
        << QStringList{
               QString("code f (t.py:1) argcount=4\n"
                       "  varnames: x, i, v, n\n"
                       "   0 LoadFast x (line 2:5)\n"
                       "   1 DupTop (line 2:5)\n"
                       "   2 LoadAttr attr (line 2:5)\n"
                       "   3 LoadConst 1 (line 2:15)\n"
                       "   4 InplaceOp += (line 2:5)\n"
                       "   5 RotTwo (line 2:5)\n"
                       "   6 StoreAttr attr (line 2:5)\n"
                       "   7 LoadFast x (line 3:5)\n"
                       "   8 LoadFast i (line 3:7)\n"
                       "   9 DupTopTwo (line 3:5)\n"
                       "  10 BinarySubscr (line 3:5)\n"
                       "  11 LoadFast v (line 3:13)\n"
                       "  12 InplaceOp += (line 3:5)\n"
                       "  13 RotThree (line 3:5)\n"
                       "  14 StoreSubscr (line 3:5)\n"
                       "  15 LoadFast n (line 4:5)\n"
                       "  16 LoadConst 2 (line 4:11)\n"
                       "  17 InplaceOp //= (line 4:5)\n"
                       "  18 StoreFast n (line 4:5)\n"
                       "  19 LoadConst None (line 4:5)\n"
                       "  20 ReturnValue (line 4:5)\n")};
    QTest::newRow("with and return")
        << QString("def f():\n"
                   "    for k in range(3):\n"
                   "        with torch.no_grad():\n"
                   "            with open(k) as h:\n"
                   "                if k:\n"
                   "                    return h\n"
                   "                break\n"
                   "    return 0\n")
        << QStringList{"f"}
        << QStringList{
               QString("code f (t.py:1) argcount=0\n"
                       "  varnames: k, h, .return_value\n"
                       "   0 LoadGlobal range (line 2:14)\n"
                       "   1 LoadConst 3 (line 2:20)\n"
                       "   2 Call 1 (line 2:14)\n"
                       "   3 GetIter (line 2:14)\n"
                       "   4 ForIter to 36 (line 2:5)\n"
                       "   5 StoreFast k (line 2:9)\n"
                       "   6 LoadGlobal torch (line 3:14)\n"
                       "   7 LoadAttr no_grad (line 3:14)\n"
                       "   8 Call 0 (line 3:14)\n"
                       "   9 WithEnter (line 3:14)\n"
                       "  10 PopTop (line 3:14)\n"
                       "  11 LoadGlobal open (line 4:18)\n"
                       "  12 LoadFast k (line 4:23)\n"
                       "  13 Call 1 (line 4:18)\n"
                       "  14 WithEnter (line 4:18)\n"
                       "  15 StoreFast h (line 4:29)\n"
                       "  16 LoadFast k (line 5:20)\n"
                       "  17 PopJumpIfFalse to 25 (line 5:20)\n"
                       "  18 LoadFast h (line 6:28)\n"
                       "  19 StoreFast .return_value (line 6:21)\n"
                       "  20 WithExit (line 6:21)\n"
                       "  21 WithExit (line 6:21)\n"
                       "  22 PopTop (line 6:21)\n"
                       "  23 LoadFast .return_value (line 6:21)\n"
                       "  24 ReturnValue (line 6:21)\n"
                       "  25 WithExit (line 7:17)\n"
                       "  26 WithExit (line 7:17)\n"
                       "  27 PopTop (line 7:17)\n"
                       "  28 Jump to 36 (line 7:17)\n"
                       "  29 WithExit (line 4:13)\n"
                       "  30 Jump to 32 (line 4:13)\n"
                       "  31 WithExceptExit to 32 (line 4:13)\n"
                       "  32 WithExit (line 3:9)\n"
                       "  33 Jump to 35 (line 3:9)\n"
                       "  34 WithExceptExit to 35 (line 3:9)\n"
                       "  35 Jump to 4 (line 2:5)\n"
                       "  36 LoadConst 0 (line 8:12)\n"
                       "  37 ReturnValue (line 8:5)\n"
                       "  except 15..20 -> 31 depth=3 level=2\n"
                       "  except 11..21 -> 34 depth=2 level=1\n"
                       "  except 25..26 -> 34 depth=2 level=1\n"
                       "  except 29..32 -> 34 depth=2 level=1\n")};
    QTest::newRow("decorators")
        << QString("@torch.compile\n"
                   "@torch.compile(fullgraph=True)\n"
                   "def g(x):\n"
                   "    return x\n")
        << QStringList{"<module>"}
        << QStringList{
               QString("code <module> (t.py:1) module\n"
                       "   0 LoadName torch (line 1:2)\n"
                       "   1 LoadAttr compile (line 1:2)\n"
                       "   2 LoadName torch (line 2:2)\n"
                       "   3 LoadAttr compile (line 2:2)\n"
                       "   4 LoadConst True (line 2:26)\n"
                       "   5 LoadConst ('fullgraph',) (line 2:2)\n"
                       "   6 CallKw 1 (line 2:2)\n"
                       "   7 LoadConst <code g> (line 3:1)\n"
                       "   8 MakeFunction (line 3:1)\n"
                       "   9 Call 1 (line 2:2)\n"
                       "  10 Call 1 (line 1:2)\n"
                       "  11 StoreName g (line 3:1)\n"
                       "  12 LoadConst None (line 3:1)\n"
                       "  13 ReturnValue (line 3:1)\n")};
    QTest::newRow("f-strings")
        << QString("def f(a, b, c, v):\n"
                   "    return f\"{a!r}: {b:.{c}f} {v=}\"\n")
        << QStringList{"f"}
        << QStringList{
               QString("code f (t.py:1) argcount=4\n"
                       "  varnames: a, b, c, v\n"
                       "   0 LoadFast a (line 2:15)\n"
                       "   1 FormatValue repr (line 2:15)\n"
                       "   2 LoadConst ': ' (line 2:19)\n"
                       "   3 LoadFast b (line 2:22)\n"
                       "   4 LoadConst '.' (line 2:24)\n"
                       "   5 LoadFast c (line 2:26)\n"
                       "   6 FormatValue (line 2:26)\n"
                       "   7 LoadConst 'f' (line 2:28)\n"
                       "   8 BuildString 3 (line 2:24)\n"
                       "   9 FormatValue spec (line 2:22)\n"
                       "  10 LoadConst ' v=' (line 2:30)\n"
                       "  11 LoadFast v (line 2:32)\n"
                       "  12 FormatValue repr (line 2:32)\n"
                       "  13 BuildString 5 (line 2:12)\n"
                       "  14 ReturnValue (line 2:5)\n")};
    QTest::newRow("calls subscripts unpacking")
        << QString("def f(a, args, kw):\n"
                   "    g(a, *args, k=1, **kw)\n"
                   "    h(*args)\n"
                   "    t[1:2, ::2, ..., None]\n"
                   "    first, *rest, last = a\n")
        << QStringList{"f"}
        << QStringList{
               QString("code f (t.py:1) argcount=3\n"
                       "  varnames: a, args, kw, first, rest, last\n"
                       "   0 LoadGlobal g (line 2:5)\n"
                       "   1 LoadFast a (line 2:7)\n"
                       "   2 BuildList 1 (line 2:5)\n"
                       "   3 LoadFast args (line 2:11)\n"
                       "   4 ListExtend 1 (line 2:10)\n"
                       "   5 ListToTuple (line 2:5)\n"
                       "   6 LoadConst 'k' (line 2:17)\n"
                       "   7 LoadConst 1 (line 2:19)\n"
                       "   8 BuildMap 1 (line 2:5)\n"
                       "   9 LoadFast kw (line 2:24)\n"
                       "  10 DictUpdate 1 (line 2:22)\n"
                       "  11 CallEx 1 (line 2:5)\n"
                       "  12 PopTop (line 2:5)\n"
                       "  13 LoadGlobal h (line 3:5)\n"
                       "  14 BuildList 0 (line 3:5)\n"
                       "  15 LoadFast args (line 3:8)\n"
                       "  16 ListExtend 1 (line 3:7)\n"
                       "  17 ListToTuple (line 3:5)\n"
                       "  18 CallEx 0 (line 3:5)\n"
                       "  19 PopTop (line 3:5)\n"
                       "  20 LoadGlobal t (line 4:5)\n"
                       "  21 LoadConst 1 (line 4:7)\n"
                       "  22 LoadConst 2 (line 4:9)\n"
                       "  23 BuildSlice 2 (line 4:7)\n"
                       "  24 LoadConst None (line 4:12)\n"
                       "  25 LoadConst None (line 4:12)\n"
                       "  26 LoadConst 2 (line 4:14)\n"
                       "  27 BuildSlice 3 (line 4:12)\n"
                       "  28 LoadConst Ellipsis (line 4:17)\n"
                       "  29 LoadConst None (line 4:22)\n"
                       "  30 BuildTuple 4 (line 4:7)\n"
                       "  31 BinarySubscr (line 4:5)\n"
                       "  32 PopTop (line 4:5)\n"
                       "  33 LoadFast a (line 5:26)\n"
                       "  34 UnpackEx before=1 after=1 (line 5:5)\n"
                       "  35 StoreFast first (line 5:5)\n"
                       "  36 StoreFast rest (line 5:13)\n"
                       "  37 StoreFast last (line 5:19)\n"
                       "  38 LoadConst None (line 5:5)\n"
                       "  39 ReturnValue (line 5:5)\n")};
    QTest::newRow("control flow")
        << QString("def f(n, xs):\n"
                   "    if n > 1:\n"
                   "        n = 1\n"
                   "    elif not n:\n"
                   "        n = 2\n"
                   "    else:\n"
                   "        n = 3\n"
                   "    for x in xs:\n"
                   "        if x:\n"
                   "            continue\n"
                   "        break\n"
                   "    else:\n"
                   "        n = 4\n"
                   "    while n and xs:\n"
                   "        n -= 1\n"
                   "    assert n == 0, 'left'\n"
                   "    del xs[0], n\n")
        << QStringList{"f"}
        << QStringList{
               QString("code f (t.py:1) argcount=2\n"
                       "  varnames: n, xs, x\n"
                       "   0 LoadFast n (line 2:8)\n"
                       "   1 LoadConst 1 (line 2:12)\n"
                       "   2 CompareOp > (line 2:8)\n"
                       "   3 PopJumpIfFalse to 7 (line 2:8)\n"
                       "   4 LoadConst 1 (line 3:13)\n"
                       "   5 StoreFast n (line 3:9)\n"
                       "   6 Jump to 14 (line 2:5)\n"
                       "   7 LoadFast n (line 4:14)\n"
                       "   8 PopJumpIfTrue to 12 (line 4:10)\n"
                       "   9 LoadConst 2 (line 5:13)\n"
                       "  10 StoreFast n (line 5:9)\n"
                       "  11 Jump to 14 (line 4:5)\n"
                       "  12 LoadConst 3 (line 7:13)\n"
                       "  13 StoreFast n (line 7:9)\n"
                       "  14 LoadFast xs (line 8:14)\n"
                       "  15 GetIter (line 8:14)\n"
                       "  16 ForIter to 24 (line 8:5)\n"
                       "  17 StoreFast x (line 8:9)\n"
                       "  18 LoadFast x (line 9:12)\n"
                       "  19 PopJumpIfFalse to 21 (line 9:12)\n"
                       "  20 Jump to 16 (line 10:13)\n"
                       "  21 PopTop (line 11:9)\n"
                       "  22 Jump to 26 (line 11:9)\n"
                       "  23 Jump to 16 (line 8:5)\n"
                       "  24 LoadConst 4 (line 13:13)\n"
                       "  25 StoreFast n (line 13:9)\n"
                       "  26 LoadFast n (line 14:11)\n"
                       "  27 PopJumpIfFalse to 35 (line 14:11)\n"
                       "  28 LoadFast xs (line 14:17)\n"
                       "  29 PopJumpIfFalse to 35 (line 14:17)\n"
                       "  30 LoadFast n (line 15:9)\n"
                       "  31 LoadConst 1 (line 15:14)\n"
                       "  32 InplaceOp -= (line 15:9)\n"
                       "  33 StoreFast n (line 15:9)\n"
                       "  34 Jump to 26 (line 14:5)\n"
                       "  35 LoadFast n (line 16:12)\n"
                       "  36 LoadConst 0 (line 16:17)\n"
                       "  37 CompareOp == (line 16:12)\n"
                       "  38 PopJumpIfTrue to 41 (line 16:12)\n"
                       "  39 LoadConst 'left' (line 16:20)\n"
                       "  40 RaiseAssert 1 (line 16:5)\n"
                       "  41 LoadFast xs (line 17:9)\n"
                       "  42 LoadConst 0 (line 17:12)\n"
                       "  43 DeleteSubscr (line 17:9)\n"
                       "  44 DeleteFast n (line 17:16)\n"
                       "  45 LoadConst None (line 17:5)\n"
                       "  46 ReturnValue (line 17:5)\n")};
    QTest::newRow("imports")
        << QString("import torch\n"
                   "import torch.nn as nn\n"
                   "import torch, torch._dynamo\n"
                   "from X import a, b as c\n")
        << QStringList{"<module>"}
        << QStringList{
               QString("code <module> (t.py:1) module\n"
                       "   0 ImportName torch (line 1:8)\n"
                       "   1 StoreName torch (line 1:8)\n"
                       "   2 ImportModule torch.nn (line 2:8)\n"
                       "   3 StoreName nn (line 2:8)\n"
                       "   4 ImportName torch (line 3:8)\n"
                       "   5 StoreName torch (line 3:8)\n"
                       "   6 ImportName torch._dynamo (line 3:15)\n"
                       "   7 StoreName torch (line 3:15)\n"
                       "   8 ImportModule X (line 4:1)\n"
                       "   9 ImportFrom a (line 4:15)\n"
                       "  10 StoreName a (line 4:15)\n"
                       "  11 ImportFrom b (line 4:18)\n"
                       "  12 StoreName c (line 4:18)\n"
                       "  13 PopTop (line 4:1)\n"
                       "  14 LoadConst None (line 4:1)\n"
                       "  15 ReturnValue (line 4:1)\n")};
  }
  void disassembly() {
    QFETCH(QString, source);
    QFETCH(QStringList, qualnames);
    QFETCH(QStringList, expected);
    CodePtr module = compile_ok(source.toStdString());
    for (int i = 0; i < qualnames.size(); ++i) {
      const Code* code = find_code(*module, qualnames[i].toStdString());
      QVERIFY2(code, qPrintable(qualnames[i]));
      QCOMPARE(QString::fromStdString(disassemble(*code, false)), expected[i]);
    }
  }

  void code_fields() {
    std::string src = "import torch\n@torch.compile\ndef f(a, b=1, *rest, k, **kw):\n    g = lambda: a\n    return g\nclass Net:\n    def forward(self, x):\n        return x\n";
    CodePtr m = compile_ok(src, "prog.py");
    QCOMPARE(QString::fromStdString(m->name), QString("<module>"));
    QCOMPARE(QString::fromStdString(m->qualname), QString("<module>"));
    QVERIFY(m->is_module);
    QVERIFY(!m->is_class_body);
    QCOMPARE(QString::fromStdString(m->filename), QString("prog.py"));
    QCOMPARE(m->firstlineno, 1);
    QCOMPARE(int(m->source_lines->size()), 8);
    QCOMPARE(QString::fromStdString(m->source_lines->at(3)), QString("    g = lambda: a"));

    const Code* f = find_code(*m, "f");
    QVERIFY(f);
    QCOMPARE(f->firstlineno, 3);  // the def line, after the decorator
    QCOMPARE(f->argcount, 2);
    QCOMPARE(f->kwonlyargcount, 1);
    QVERIFY(f->has_varargs);
    QVERIFY(f->has_varkw);
    QVERIFY(!f->is_module);
    // Parameters first: positional, keyword-only, *args, **kwargs; then locals.
    QCOMPARE(f->varnames, (std::vector<std::string>{"a", "b", "k", "rest", "kw", "g"}));
    QCOMPARE(f->cellvars, std::vector<std::string>{"a"});
    QVERIFY(f->source_lines == m->source_lines);  // shared, not copied

    const Code* lambda = find_code(*m, "f.<locals>.<lambda>");
    QVERIFY(lambda);
    QCOMPARE(QString::fromStdString(lambda->name), QString("<lambda>"));
    QCOMPARE(lambda->firstlineno, 4);
    QCOMPARE(lambda->freevars, std::vector<std::string>{"a"});

    const Code* net = find_code(*m, "Net");
    QVERIFY(net && net->is_class_body);
    QCOMPARE(net->firstlineno, 6);
    const Code* forward = find_code(*m, "Net.forward");
    QVERIFY(forward);
    QCOMPARE(QString::fromStdString(forward->name), QString("forward"));
    QVERIFY(forward->source_lines == m->source_lines);
  }

  // Every code object ends in a return; a function whose last statement
  // returns gets no dead `return None`, unless a jump lands after it.
  void implicit_return() {
    CodePtr m = compile_ok("def f(x):\n    return x\ndef g(x):\n    if x:\n        return 1\n");
    const Code* f = find_code(*m, "f");
    QCOMPARE(int(f->code.size()), 2);
    const Code* g = find_code(*m, "g");
    QCOMPARE(g->code.back().op, Op::ReturnValue);
    QCOMPARE(g->code[g->code.size() - 2].op, Op::LoadConst);
    QCOMPARE(g->code[1].arg, int(g->code.size()) - 2);  // the if's jump lands on the implicit return
    CodePtr empty = compile_ok("");
    QCOMPARE(QString::fromStdString(disassemble(*empty)),
             QString("code <module> (t.py:1) module\n   0 LoadConst None (line 1:1)\n   1 ReturnValue (line 1:1)\n"));
  }

  // Equal constants share a slot; 1, 1.0 and True do not; -1 is folded.
  void constants() {
    CodePtr m = compile_ok("a = 1\nb = 1\nc = 1.0\nd = True\ne = -1\nf = -2.5\ng = 'x'\nh = 'x'\ni = ...\nj = -0.0\nk = 0.0\n");
    QStringList consts;
    for (const Const& c : m->consts) {
      if (c.kind == Const::Kind::Float && c.f == 0 && std::signbit(c.f)) consts << "-0.0";
      else if (c.kind == Const::Kind::Float) consts << QString::number(c.f);
      else if (c.kind == Const::Kind::Int) consts << QString::number(c.i);
      else if (c.kind == Const::Kind::Bool) consts << (c.b ? "True" : "False");
      else if (c.kind == Const::Kind::Str) consts << QString::fromStdString("'" + c.s + "'");
      else if (c.kind == Const::Kind::Ellipsis) consts << "...";
      else consts << "None";
    }
    QCOMPARE(consts.join(' '), QString("1 1 True -1 -2.5 'x' ... -0.0 0 None"));
    QCOMPARE(m->consts[1].kind, Const::Kind::Float);
  }

  // Comprehension variables never leak: hidden names that no program can spell.
  void comprehension_names() {
    CodePtr m = compile_ok("x = 'outer'\ny = [x for x in range(3)]\nclass C:\n    z = [x * 2 for x in range(2)]\n");
    QVERIFY(std::find(m->names.begin(), m->names.end(), "<comp>.x.1") != m->names.end());
    int stores_of_x = 0;
    for (const Instr& i : m->code)
      if (i.op == Op::StoreName && m->names[size_t(i.arg)] == "x") ++stores_of_x;
    QCOMPARE(stores_of_x, 1);
    const Code* c = find_code(*m, "C");
    QVERIFY(std::find(c->names.begin(), c->names.end(), "<comp>.x.2") != c->names.end());
    // The first iterable is read in the enclosing scope: the outer x here.
    CodePtr f = compile_ok("def f(x):\n    return [x for x in x]\n");
    const Code* fn = find_code(*f, "f");
    QCOMPARE(fn->code[1].op, Op::LoadFast);
    QCOMPARE(QString::fromStdString(fn->varnames[size_t(fn->code[1].arg)]), QString("x"));
    // A lambda in a class-level comprehension cannot see the class namespace.
    auto bad = compile_module("class C:\n    fs = [lambda: i for i in range(3)]\n", "t.py");
    QCOMPARE(QString::fromStdString(bad.status().to_string()),
             QString("t.py:2:19: unsupported construct: closure over a comprehension variable in a class body "
                     "(move the comprehension into a method)"));
  }

  // Functions in a class body do not see class-level names; a method reading
  // a local of the enclosing function gets it through the class body's freevars.
  void class_scoping() {
    CodePtr m = compile_ok("def outer(v):\n    class A:\n        v2 = 1\n        def m(self):\n            return v + v2\n    return A\n");
    const Code* a = find_code(*m, "outer.<locals>.A");
    QCOMPARE(a->freevars, std::vector<std::string>{"v"});
    const Code* meth = find_code(*m, "outer.<locals>.A.m");
    QCOMPARE(meth->freevars, std::vector<std::string>{"v"});
    QCOMPARE(meth->code[0].op, Op::LoadDeref);
    QCOMPARE(meth->code[1].op, Op::LoadGlobal);  // v2 is a class attribute, not a variable
    const Code* outer = find_code(*m, "outer");
    QCOMPARE(outer->cellvars, std::vector<std::string>{"v"});
  }

  // `global` sends a function's stores to the module; `nonlocal` makes the
  // name a free variable bound by the enclosing function, which keeps it in a cell.
  void global_and_nonlocal() {
    CodePtr m = compile_ok(
        "best = 0\ndef update(v):\n    global best\n    best = v\n"
        "def counter():\n    n = 0\n    def bump():\n        nonlocal n\n        n += 1\n        return n\n    return bump\n");
    const Code* update = find_code(*m, "update");
    QVERIFY(std::find(update->varnames.begin(), update->varnames.end(), "best") == update->varnames.end());
    QCOMPARE(update->code[1].op, Op::StoreGlobal);
    const Code* counter = find_code(*m, "counter");
    QCOMPARE(counter->cellvars, std::vector<std::string>{"n"});
    const Code* bump = find_code(*m, "counter.<locals>.bump");
    QCOMPARE(bump->freevars, std::vector<std::string>{"n"});
    bool stores_deref = false;
    for (const Instr& i : bump->code) stores_deref |= i.op == Op::StoreDeref;
    QVERIFY(stores_deref);
    auto unbound = compile_module("def f():\n    def g():\n        nonlocal q\n        q = 1\n", "t.py");
    QCOMPARE(QString::fromStdString(unbound.status().to_string()), QString("t.py:3:9: SyntaxError: no binding for nonlocal 'q' found"));
    auto at_module = compile_module("nonlocal q\n", "t.py");
    QCOMPARE(QString::fromStdString(at_module.status().to_string()),
             QString("t.py:1:1: SyntaxError: nonlocal declaration not allowed at module level"));
  }

  void op_names() {
    for (int op = 0; op <= int(Op::DeleteAttr); ++op) QVERIFY(std::string(op_name(Op(op))) != "?");
    QCOMPARE(QString(op_name(Op::CallKw)), QString("CallKw"));
    QCOMPARE(QString(binary_op_symbol(BinaryOpKind::FloorDiv)), QString("//"));
    QCOMPARE(QString(binary_op_symbol(BinaryOpKind::MatMul)), QString("@"));
    QCOMPARE(QString(compare_symbol(CompareKind::IsNot)), QString("is not"));
    QCOMPARE(QString(compare_symbol(CompareKind::NotIn)), QString("not in"));
  }

  // Every reference program compiles; every instruction is located inside the
  // file, and every jump and exception-table range lies inside its code.
  void reference_programs() {
    QDir dir(QString::fromStdString(test::reference_dir() + "/programs"));
    QStringList files = dir.entryList({"*.py"}, QDir::Files, QDir::Name);
    QVERIFY(files.size() >= 8);
    int compiled = 0;
    for (const QString& name : files) {
      QByteArray text = read_file(dir.filePath(name));
      auto code = compile_module(std::string_view(text.constData(), size_t(text.size())), name.toStdString());
      QVERIFY2(code.ok(), qPrintable(QString::fromStdString(code.status().to_string())));
      ++compiled;
      int lines = int((*code)->source_lines->size());
      for_each_code(**code, [&](const Code& c) {
        QVERIFY(!c.code.empty());
        QCOMPARE(c.code.back().op, Op::ReturnValue);
        for (const Instr& i : c.code) {
          QVERIFY2(i.line >= 1 && i.line <= lines && i.col >= 1, qPrintable(name));
          if (is_jump(i.op)) QVERIFY(i.arg >= 0 && i.arg <= int(c.code.size()));
        }
        for (const ExceptEntry& e : c.exception_table) {
          QVERIFY(e.start >= 0 && e.start < e.end && e.end <= int(c.code.size()));
          QVERIFY(e.target >= e.end && e.target < int(c.code.size()));
        }
      });
    }
    QCOMPARE(compiled, int(files.size()));
  }

  // A call instruction sits at the start of the call expression, the loop's
  // ForIter at the `for`, an if's jump at the test.
  void instruction_positions() {
    CodePtr m = compile_ok("def f(x):\n    for i in range(3):\n        if x.sum() > 0:\n            x = torch.relu(x)\n    return x\n");
    const Code* f = find_code(*m, "f");
    auto find = [&](Op op, int nth = 0) -> const Instr& {
      for (const Instr& i : f->code)
        if (i.op == op && nth-- == 0) return i;
      qFatal("instruction not found");
    };
    QCOMPARE(find(Op::ForIter).line, 2);
    QCOMPARE(find(Op::ForIter).col, 5);
    QCOMPARE(find(Op::Call, 1).line, 3);   // x.sum()
    QCOMPARE(find(Op::Call, 1).col, 12);
    QCOMPARE(find(Op::PopJumpIfFalse).col, 12);
    QCOMPARE(find(Op::Call, 2).line, 4);   // torch.relu(x)
    QCOMPARE(find(Op::Call, 2).col, 17);
    QCOMPARE(find(Op::StoreFast, 1).col, 13);
  }
};

QTEST_APPLESS_MAIN(TestPythonCompiler)
#include "test_python_compiler.moc"
