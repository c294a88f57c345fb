// The interpreter's budgets and its behaviour at the edges the fuzzer
// (tests/fuzz/fuzz_python.cpp) drives it to: endless loops, deep recursion
// (also through a frame hook, as torch.compile's capture runs frames), failed
// allocations, tensors too large to count, and the cycles reference counting
// alone would leak, containers that contain themselves or nest deeper than
// the C++ stack allows. Each case is a program that once crashed, hung or
// leaked, or the limit that stops it.
#include "test_support.h"

#include <new>

#include "core/python/vm.h"

using kiln::Error;
using kiln::Status;
using namespace kiln::py;

namespace {

struct Ran {
  Status status;
  int exit = -1;
};

// Runs every Python frame itself, one instruction at a time, as capture's
// engine does (compiler/capture/engine.cpp): such frames never pass through
// VM::run_frame.
struct SteppingHook : FrameHook {
  bool run_frame(VM& vm, Frame& frame, Value& result) override {
    Frame* saved = vm.current_frame;
    frame.parent = saved;
    vm.current_frame = &frame;
    try {
      while (!vm.step(frame, result)) {
      }
    } catch (...) {
      vm.current_frame = saved;
      throw;
    }
    vm.current_frame = saved;
    return true;
  }
};

Ran run(const std::string& source, VMOptions options = {}, FrameHook* hook = nullptr) {
  options.out = [](std::string_view) {};
  options.err = [](std::string_view) {};
  VM vm(options);
  vm.frame_hook = hook;
  Ran r;
  r.status = vm.run_source(source, "prog.py", &r.exit);
  return r;
}

// What the program printed; it must succeed.
std::string output_of(const std::string& source) {
  std::string out;
  VMOptions options;
  options.out = [&out](std::string_view s) { out += s; };
  options.err = [](std::string_view) {};
  VM vm(options);
  Status s = vm.run_source(source, "prog.py");
  if (!s.ok()) QTest::qFail(s.to_string().c_str(), __FILE__, __LINE__);
  return out;
}

// The program failed with `message` (e.g. "RecursionError: maximum recursion
// depth exceeded") at prog.py:`line`.
void expect_error(const Ran& r, const std::string& message, int line, int exit = 1) {
  QVERIFY2(!r.status.ok(), "the program was expected to fail");
  QVERIFY2(r.status.message().find(message) != std::string::npos, r.status.to_string().c_str());
  QCOMPARE(r.status.where().file, std::string("prog.py"));
  QCOMPARE(r.status.where().line, line);
  QCOMPARE(r.exit, exit);
}

}  // namespace

class TestPythonVmLimits : public QObject {
  Q_OBJECT
 private slots:
  void step_budget_stops_an_endless_loop() {
    VMOptions o;
    o.max_steps = 10'000;
    // Outside the language's own errors: exit code 3, as for the subset's limits.
    expect_error(run("x = 0\nwhile True:\n    x += 1\n", o), "RuntimeError: step budget exhausted", 3, 3);
  }

  void step_budget_counts_every_frame() {
    VMOptions o;
    o.max_steps = 10'000;
    // The budget is the program's alone (the preludes' steps are not charged),
    // so where it runs out is fixed: the loop's call line.
    expect_error(run("def f(n):\n    return n + 1\nfor i in range(10**6):\n    f(i)\n", o), "step budget exhausted", 4, 3);
  }

  // No except clause sees the limits or what lies outside the subset: a
  // program that catches everything still stops, with the limit's exit code.
  void limits_and_refusals_are_not_catchable() {
    VMOptions o;
    o.max_steps = 10'000;
    expect_error(run("while True:\n    try:\n        pass\n    except BaseException:\n        pass\n", o),
                 "step budget exhausted", 2, 3);
    VMOptions t;
    t.time_limit_s = 0.2;
    // The line the limit fires on depends on timing: only the error and code are fixed.
    Ran timed = run("n = 0\nwhile True:\n    try:\n        n += 1\n    except:\n        pass\n", t);
    QVERIFY2(timed.status.message().find("TimeoutError") != std::string::npos, timed.status.to_string().c_str());
    QCOMPARE(timed.exit, 1);
    expect_error(run("try:\n    import scipy\nexcept ImportError:\n    scipy = None\n"), "No module named 'scipy'", 2, 3);
  }

  void unlimited_by_default() {
    Ran r = run("s = 0\nfor i in range(200000):\n    s += i\nassert s == 19999900000\n");
    QVERIFY2(r.status.ok(), r.status.to_string().c_str());
  }

  void recursion_limit() {
    expect_error(run("def f(n):\n    return f(n + 1)\nf(0)\n"), "RecursionError: maximum recursion depth exceeded", 2);
    // CPython's limit of 1000 frames: a recursive walk 990 deep (micrograd's
    // topological sort over a few hundred nodes) runs, through dunder calls too.
    Ran deep = run(
        "import sys\nassert sys.getrecursionlimit() == 1000\n"
        "class V:\n    def __init__(self, d):\n        self.d = d\n    def __add__(self, o):\n        return V(self.d + o.d)\n"
        "def f(n, v):\n    return v if n == 0 else f(n - 1, v + V(1))\nassert f(990, V(0)).d == 990\n");
    QVERIFY2(deep.status.ok(), deep.status.to_string().c_str());
  }

  void recursion_through_a_frame_hook_is_bounded() {
    // A compiled function calling itself: capture's hook runs each level by
    // stepping it, never reaching VM::run_frame, whose depth check was the only
    // one; the fuzzer's `@torch.compile def f(x): return f(x)` overflowed the
    // C++ stack.
    SteppingHook hook;
    // The stepped frames add no traceback lines (capture's own frames do): the
    // location is the call in the module.
    expect_error(run("def f(n):\n    return f(n + 1)\nf(0)\n", {}, &hook),
                 "RecursionError: maximum recursion depth exceeded", 3);
  }

  void failed_allocation_is_a_memory_error() {
    // std::bad_alloc (or the fuzzer's heap budget) out of any builtin becomes
    // Python's MemoryError at the user's line, not a crash.
    VMOptions o;
    o.out = [](std::string_view) {};
    o.err = [](std::string_view) {};
    VM vm(o);
    vm.builtins()->set(str_value("allocate"), make_builtin("allocate", [](VM&, const CallArgs&) -> Value {
      throw std::bad_alloc();
    }));
    vm.builtins()->set(str_value("fail"), make_builtin("fail", [](VM&, const CallArgs&) -> Value {
      throw Error("a tensor-library error no binding converted");
    }));
    int exit = 0;
    Status s = vm.run_source("x = 1\nallocate()\n", "prog.py", &exit);
    QVERIFY(!s.ok());
    QCOMPARE(s.message(), std::string("MemoryError: out of memory"));
    QCOMPARE(s.where().line, 2);
    QCOMPARE(exit, 1);
    s = vm.run_source("def g():\n    return fail()\ng()\n", "prog.py", &exit);
    QCOMPARE(s.message(), std::string("RuntimeError: a tensor-library error no binding converted"));
    QCOMPARE(s.where().line, 2);
  }

  void programs_run_one_after_another_on_one_vm() {
    // The constants cache was keyed by code object address only: the next
    // program's code, allocated where a freed one was, found the old constants
    // (wrong values, or a crash when their count differed).
    std::string out;
    VMOptions o;
    o.out = [&out](std::string_view text) { out += text; };
    VM vm(o);
    for (int i = 0; i < 20; ++i) {
      out.clear();
      std::string n = std::to_string(i);
      std::string extra = i % 2 ? ", 'odd', 1.5" : "";
      Status s = vm.run_source("def g():\n    return " + n + "\nprint(g(), 'run'" + extra + ")\n", "prog.py");
      QVERIFY2(s.ok(), s.to_string().c_str());
      QCOMPARE(out, n + " run" + (i % 2 ? " odd 1.5" : "") + "\n");
    }
  }

  void tensor_element_limit() {
    VMOptions o;
    o.max_tensor_numel = 1000;
    expect_error(run("import torch\nx = torch.ones(10, 10)\ny = torch.ones(100, 100)\n", o),
                 "RuntimeError: ones() made a tensor of 10000 elements, over this interpreter's limit of 1000", 3);
    // A view is counted too: an expanded tensor costs every later op its full size.
    expect_error(run("import torch\nx = torch.ones(1).expand(10**6)\n", o), "over this interpreter's limit", 2);
  }

  void tensor_sizes_past_64_bits_are_errors() {
    // Each wrapped to a small count and made a tensor whose storage was smaller
    // than its shape: reads past the end of the heap block.
    expect_error(run("import torch\nx = torch.zeros(2**62, 4)\nprint(x[1])\n"),
                 "RuntimeError: Storage size calculation overflowed with sizes=[4611686018427387904, 4]", 2);
    expect_error(run("import torch\ny = torch.ones(4).as_strided((2**62,), (4,))\nprint(y[2**61])\n"),
                 "is out of bounds for storage of 4 elements", 2);
    expect_error(run("import torch\nx = torch.ones(1).expand(2**40, 2**40)\n"),
                 "numel: integer multiplication overflow", 2);
  }

  void teardown_frees_cycles() {
    // Reference counting never frees a cycle: without the VM's teardown every
    // program with a def (function -> globals -> function) leaked its objects.
    Value list, fn, instance;
    {
      VMOptions quiet;
      quiet.out = [](std::string_view) {};
      VM vm(quiet);
      Status s = vm.run_source(
          "a = []\na.append(a)\ndef f():\n    return f\nclass C:\n    pass\nc = C()\nc.me = c\n", "prog.py");
      QVERIFY2(s.ok(), s.to_string().c_str());
      Ref<Dict> globals = vm.module("__main__")->dict;
      list = *globals->find_str("a");
      fn = *globals->find_str("f");
      instance = *globals->find_str("c");
      QCOMPARE(list.as<List>()->items.size(), size_t(1));
    }
    // Only this test's references are left: each object would be freed with them.
    QVERIFY(list.as<List>()->items.empty());
    QCOMPARE(list.obj()->refs, int64_t(1));
    QVERIFY(!fn.as<Function>()->globals);
    QCOMPARE(fn.obj()->refs, int64_t(1));
    QCOMPARE(instance.as<Instance>()->dict->size(), size_t(0));
    QCOMPARE(instance.obj()->refs, int64_t(1));
  }

  void step_budget_counts_the_items_builtins_loop_over() {
    // sum(range(10**15)) ran inside one instruction, so the budget never saw
    // it: VM::next charges each item, whoever loops.
    VMOptions o;
    o.max_steps = 10'000;
    for (const char* call : {"sum(range(10**15))", "list(range(10**15))", "max(range(10**15))", "min(range(10**15))",
                             "sorted(range(10**15))", "all(range(1, 10**15))", "any([0] * 10**6)",
                             "list(map(abs, [0] * 10**6))", "list(filter(None, [0] * 10**6))",
                             "''.join(map(str, range(10**15)))", "dict(zip(range(10**15), range(10**15)))",
                             "list(enumerate(range(10**15)))", "[1, 2] in [[0]] * 10**6",
                             "([0] * 10**6).count(1)", "([0] * 10**6).index(1)"})
      expect_error(run(std::string("x = 1\ny = ") + call + "\n", o), "RuntimeError: step budget exhausted", 2, 3);
    // Sorting charges each comparison too.
    expect_error(run("x = [3, 1, 2] * 10**5\nx.sort()\n", o), "step budget exhausted", 2, 3);
  }

  void self_containing_containers_print_with_an_ellipsis() {
    // repr recursed into the container it was printing until the C++ stack
    // overflowed. Expected output printed by CPython 3.11.7.
    std::string program =
        "a = []\na.append(a)\nd = {}\nd[0] = d\nh = [1]\nh.append((h,))\nprint(a, d, h)\n"
        "print(str(a), f'{a}', f'{a!r}', ascii(a), repr(d), [d, d])\n"
        "n = {}\nn['k'] = [n, {'x': n}]\nprint(n)\n"
        "print(sorted([a, a]))\n"
        "print(a == a, a != a, a < a, a <= a, a in [a], [a].index(a), [a, a].count(a), max([a, a]))\n"
        "x = []\nfor i in range(900):\n    x = [x]\nprint(len(repr(x)), x == x, x == [x[0]], len(str(x)))\n";
    QCOMPARE(output_of(program),
             std::string("[[...]] {0: {...}} [1, ([...],)]\n"
                         "[[...]] [[...]] [[...]] [[...]] {0: {...}} [{0: {...}}, {0: {...}}]\n"
                         "{'k': [{...}, {'x': {...}}]}\n"
                         "[[[...]], [[...]]]\n"
                         "True False False True True 0 2 [[...]]\n"
                         "1802 True True 1802\n"));
  }

  void comparing_self_containing_containers_is_a_recursion_error() {
    // Two distinct lists that contain themselves compare item by item forever;
    // CPython stops at its recursion limit with this error.
    const char* setup = "a = []\na.append(a)\nb = []\nb.append(b)\nc = {}\nc[0] = c\ne = {}\ne[0] = e\n";
    for (const char* expr : {"a == b", "a != b", "a < b", "a >= b", "a in [b]", "[b].index(a)", "[b].count(a)",
                             "sorted([a, b])", "max([a, b])", "c == e"})
      expect_error(run(std::string(setup) + "x = " + expr + "\n"),
                   "RecursionError: maximum recursion depth exceeded in comparison", 9);
  }

  void deeply_nested_data_is_a_recursion_error() {
    // 10**5 nested lists are printed, compared and hashed by recursion in
    // C++: past kMaxNesting levels that is a RecursionError, as in CPython
    // (which raises it for every one of these but the hash).
    std::string deep =
        "x = []\nw = []\ny = [0]\nt = ()\nfor i in range(100000):\n    x = [x]\n    w = [w]\n    y = [y, 0]\n"
        "    t = (t,)\n";
    expect_error(run(deep + "print(x)\n"), "RecursionError: maximum recursion depth exceeded while getting the repr of an object", 10);
    expect_error(run(deep + "z = x == w\n"), "RecursionError: maximum recursion depth exceeded in comparison", 10);
    // Lists of different lengths are unequal at once: only the ordering recurses.
    expect_error(run(deep + "z = x < y\n"), "RecursionError: maximum recursion depth exceeded in comparison", 10);
    expect_error(run(deep + "z = {t: 1}\n"), "RecursionError: maximum recursion depth exceeded while hashing a tuple", 10);
    expect_error(run(deep + "import torch\nz = torch.tensor(x)\n"),
                 "RecursionError: maximum recursion depth exceeded while converting a list for torch", 11);
    expect_error(run("import torch\na = [1]\na.append(a)\nz = torch.tensor(a)\n"),
                 "RecursionError: maximum recursion depth exceeded while converting a list for torch", 4);
  }

  void deeply_nested_data_is_freed_without_deep_recursion() {
    // 300000 nested lists freed one inside the other would need a C++ frame per
    // level; the teardown empties them one by one instead.
    Ran r = run("x = []\nfor i in range(300000):\n    x = [x]\n");
    QVERIFY2(r.status.ok(), r.status.to_string().c_str());
  }
};

QTEST_GUILESS_MAIN(TestPythonVmLimits)
#include "test_python_vm_limits.moc"
