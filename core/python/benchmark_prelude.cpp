// torch.utils.benchmark: Timer and Measurement, after PyTorch 2.11. A Timer's
// statement is a string of the program's own code: it is compiled once per
// timing call and run in a copy of the globals the program passed, so it
// sees the program's names and its assignments do not leak back, as with
// timeit. The statement runs as often as PyTorch runs it (timeit's warm-up
// included), because its side effects (random draws, optimizer steps) are
// part of what the program prints; the times themselves are this machine's.
#include <chrono>

#include "core/python/compiler.h"
#include "core/python/object_address.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kBenchmarkSource = R"PY(import math
import torch
import torch._kiln as _kiln


def _raise(kind, message):
    _kiln.raise_error(kind, message)


def _dedent(text):
    lines = text.split("\n")
    margin = None
    for line in lines:
        if not line.strip():
            continue
        indent = line[:len(line) - len(line.lstrip())]
        if margin is None:
            margin = indent
        else:
            n = 0
            while n < len(margin) and n < len(indent) and margin[n] == indent[n]:
                n += 1
            margin = margin[:n]
    margin = margin or ""
    return "\n".join("" if not line.strip() else line[len(margin):] for line in lines)


def _indent(text, prefix):
    return "".join(prefix + line if line.strip() else line for line in text.splitlines(True))


class TaskSpec:
    def __init__(self, stmt, setup, global_setup="", label=None, sub_label=None, description=None, env=None, num_threads=1):
        self.stmt = stmt
        self.setup = setup
        self.global_setup = global_setup
        self.label = label
        self.sub_label = sub_label
        self.description = description
        self.env = env
        self.num_threads = num_threads

    @property
    def title(self):
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        elif "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n" + _indent(self.stmt, "  ")

    def setup_str(self):
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return "setup:\n" + _indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self):
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join([f"{i}\n" if "\n" in i else i for i in sections if i])


def _percentile(sorted_times, q):
    # NumPy's default (linear) interpolation.
    if len(sorted_times) == 1:
        return sorted_times[0]
    at = (len(sorted_times) - 1) * q / 100.0
    lo = int(math.floor(at))
    hi = min(lo + 1, len(sorted_times) - 1)
    return sorted_times[lo] + (sorted_times[hi] - sorted_times[lo]) * (at - lo)


def select_unit(t):
    time_unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3), "s")
    time_scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[time_unit]
    return time_unit, time_scale


class Measurement:
    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run = number_per_run
        self.raw_times = raw_times
        self.task_spec = task_spec
        self.metadata = metadata
        self._sorted_times = ()
        self._warnings = ()
        self._median = -1.0
        self._mean = -1.0
        self._p25 = -1.0
        self._p75 = -1.0

    def __getattr__(self, name):
        if name in ("stmt", "setup", "global_setup", "label", "sub_label", "description", "env", "num_threads"):
            return getattr(self.task_spec, name)
        _raise("AttributeError", f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self):
        self._lazy_init()
        return self._median

    @property
    def mean(self):
        self._lazy_init()
        return self._mean

    @property
    def iqr(self):
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def has_warnings(self):
        self._lazy_init()
        return bool(self._warnings)

    @property
    def title(self):
        return self.task_spec.title

    def meets_confidence(self, threshold=0.1):
        return self.iqr / self.median < threshold

    def _lazy_init(self):
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            self._median = float(_percentile(self._sorted_times, 50))
            self._mean = float(sum(self._sorted_times) / len(self._sorted_times))
            self._p25 = float(_percentile(self._sorted_times, 25))
            self._p75 = float(_percentile(self._sorted_times, 75))
            if not self.meets_confidence(0.25):
                self._add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(0.1):
                self._add_warning("This could indicate system fluctuation.")

    def _add_warning(self, msg):
        rel_iqr = self.iqr / self.median * 100
        self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% of the median measurement.\n           {msg}",)

    def __repr__(self):
        self._lazy_init()
        n = len(self._sorted_times)
        time_unit, time_scale = select_unit(self._median)
        lines = ["<torch.utils.benchmark.utils.common.Measurement object at " + _kiln.object_address(self) + ">", self.task_spec.summarize()]
        lines.append(f"  {'Median: ' if n > 1 else ''}{self._median / time_scale:.2f} {time_unit}")
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / time_scale:.2f} {time_unit} ({self._p25 / time_scale:.2f} to {self._p75 / time_scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs {'per measurement,' if n > 1 else ','} {self.num_threads} thread{'s' if self.num_threads > 1 else ''}")
        text = "\n".join(lines) + "\n" + "\n".join(self._warnings)
        return "\n".join(text.strip().splitlines())

    def __str__(self):
        return self.__repr__()


def _clean(code):
    code = _dedent(code)
    return (code[1:] if code and code[0] == "\n" else code).rstrip()


class Timer:
    def __init__(self, stmt="pass", setup="pass", global_setup=None, timer=None, globals=None, label=None, sub_label=None,
                 description=None, env=None, num_threads=1, language="python"):
        if not isinstance(stmt, str):
            _raise("ValueError", "Currently only a `str` stmt is supported.")
        if language not in ("python", "py"):
            _kiln.raise_unsupported("torch.utils.benchmark.Timer(language=" + repr(language) + "): only Python statements are supported by Kiln")
        if global_setup is not None:
            _raise("ValueError", f"global_setup is C++ only, got `{global_setup}`")
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", torch)
        stmt = _clean(stmt)
        setup = _clean(setup)
        self._stmt = stmt
        self._setup = setup
        self._task_spec = TaskSpec(stmt, setup, None, label, sub_label, description, env, num_threads)

    def _timeit(self, number):
        return max(_kiln.time_statement(self._stmt, self._setup, self._globals, number), 1e-9)

    def timeit(self, number=1000000):
        self._timeit(max(int(number // 100), 2))
        return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat=-1, number=-1):
        _raise("NotImplementedError", "See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        _raise("NotImplementedError", "See `Timer.blocked_autorange.`")

    def _estimate_block_size(self, min_run_time):
        overhead = sorted([self._timeit(0) for _ in range(5)])[2]
        number = 1
        while True:
            time_taken = self._timeit(number)
            if overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000:
                break
            if time_taken > min_run_time:
                break
            number *= 10
        return number

    def _loop(self, number, stop_hook, min_run_time, max_run_time=None, callback=None):
        total_time = 0.0
        can_stop = False
        times = []
        while total_time < min_run_time or not can_stop:
            spent = self._timeit(number)
            times.append(spent)
            total_time += spent
            if callback:
                callback(number, spent)
            can_stop = stop_hook(times)
            if max_run_time and total_time > max_run_time:
                break
        return times

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        number = self._estimate_block_size(min_run_time)
        times = self._loop(number, lambda times: True, min_run_time, None, callback)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        number = self._estimate_block_size(0.05)

        def stop_hook(times):
            if len(times) > 3:
                return Measurement(number, times, self._task_spec).meets_confidence(threshold)
            return False
        times = self._loop(number, stop_hook, min_run_time, max_run_time, callback)
        return Measurement(number, times, self._task_spec)
)PY";

// _kiln.time_statement(stmt, setup, globals, number): timeit's inner loop.
// Seconds spent running `stmt` `number` times after `setup` once.
Value time_statement(VM& vm, const CallArgs& a) {
  const std::string& stmt = as_str(a[0]);
  const std::string& setup = as_str(a[1]);
  if (!a[2].is(ObjKind::Dict)) throw PyError("TypeError", "globals must be a dict");
  Ref<Dict> globals(a[2].as<Dict>());
  const int64_t number = to_index(a[3], "number");
  auto compile = [&](const std::string& source) {
    Expected<CodePtr> code = compile_module(source, "<timeit-src>");
    if (!code.ok()) throw PyError("SyntaxError", code.status().message());
    return code.value();
  };
  CodePtr setup_code = compile(setup);
  CodePtr stmt_code = compile(stmt);
  auto run = [&](const CodePtr& code) {
    Frame frame;
    frame.code = code.get();
    frame.consts = vm.consts_of(code).get();
    frame.globals = globals;
    frame.ns = globals;
    vm.run_frame(frame);
  };
  run(setup_code);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < number; ++i) run(stmt_code);
  const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
  return Value(spent.count());
}

void install_benchmark(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kBenchmarkSource, "torch/utils/benchmark/utils/timer.py");
  auto m = make<Module>("torch.utils.benchmark");
  auto common = make<Module>("torch.utils.benchmark.utils.common");
  auto timer = make<Module>("torch.utils.benchmark.utils.timer");
  vm.add_module(m);
  vm.add_module(common);
  vm.add_module(timer);
  Ref<Dict> globals = run_prelude(vm, code, timer->name, "torch.utils.benchmark");
  if (!globals) return;
  for (const char* name : {"TaskSpec", "Measurement", "select_unit"}) {
    const Value* v = globals->find_str(name);
    if (!v) continue;
    if (v->is(ObjKind::Class)) v->as<Class>()->module = common->name;
    common->dict->set(str_value(name), *v);
    m->dict->set(str_value(name), *v);
  }
  if (const Value* v = globals->find_str("Timer")) {
    timer->dict->set(str_value("Timer"), *v);
    m->dict->set(str_value("Timer"), *v);
  }
}

}  // namespace

void install_benchmark_prelude(VM& vm) {
  if (Ref<Module> k = vm.module("torch._kiln"))
  {
    set_attr_builtin(k->dict, "torch._kiln.time_statement", "time_statement", time_statement);
    // Where PyTorch prints an object's address Kiln prints its object number, as for grad_fn.
    set_attr_builtin(k->dict, "torch._kiln.object_address", "object_address", [](VM&, const CallArgs& a) -> Value {
      if (!a[0].is_obj()) throw_type_error("object_address() expects an object");
      return str_value(object_address(*a[0].obj()));
    });
  }
  for (const char* name : {"torch.utils.benchmark", "torch.utils.benchmark.utils.common", "torch.utils.benchmark.utils.timer"})
    vm.add_lazy_module(name, install_benchmark);
}

}  // namespace kiln::py
