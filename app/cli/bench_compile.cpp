// `kiln-cli bench compile`: the costs capture adds on top of the interpreter.
//
// guard_check: checking the guards of a cached entry of
//   def f(x, y, z): return (x * y + z).relu()
// against a fresh call frame, which every call of a compiled function pays
// before it can run its graph. The ceiling is one plain interpreted call of the
// same f on the same (small) tensors, measured in the same run: the guard check
// should be a small fraction of it.
//
// capture_100_ops: tracing a function of 100 torch ops into a graph (one
// trace_region on a fresh frame, graph run included), beside the eager
// interpreted run of the same function.
//
// The seed_* rows of CLI.md come with the code generators.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "compiler/capture/capture.h"
#include "compiler/capture/guard.h"
#include "compiler/capture/region_tracer.h"
#include "core/python/vm.h"
#include "core/util/status.h"

namespace kiln::cli {
namespace {

constexpr double kGuardTargetUs = 2.0;
constexpr double kCaptureTargetMs = 5.0;
constexpr int kCaptureOps = 100;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using Clock = std::chrono::steady_clock;

double elapsed_us(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

// A function of `n` torch ops, each on the previous result (a chain of
// pointwise ops and method calls, as a small model's forward has).
std::string chain_function(int n) {
  static const char* const kOps[] = {"y = y + 1.0", "y = y * 0.5", "y = torch.sin(y)", "y = y.relu()",
                                     "y = y - x",   "y = torch.cos(y)", "y = y.neg()", "y = torch.tanh(y)"};
  std::string src = "def chain(x):\n    y = x\n";
  for (int i = 0; i < n; ++i) src += std::string("    ") + kOps[i % std::size(kOps)] + "\n";
  return src + "    return y\n";
}

const char* const kProgram = R"(import torch
torch.manual_seed(0)
x = torch.randn(4, 4)
y = torch.randn(4, 4)
z = torch.randn(4, 4)

def f(x, y, z):
    return (x * y + z).relu()
)";

py::Value global(py::VM& vm, const char* name) {
  const py::Value* v = vm.module("__main__")->dict->find_str(name);
  if (!v) throw Error(std::string("bench compile: the setup program has no '") + name + "'");
  return *v;
}

// A frame for a call of `fn`, as the VM sets one up before running it.
void bind(py::VM& vm, py::Frame& frame, const py::Value& fn, const py::ValueVec& args) {
  vm.bind_frame(frame, fn.as<py::Function>(), py::CallArgs{args.data(), args.size(), nullptr});
}

struct Figures {
  double guard_us = 0, call_us = 0;  // per check, per call
  size_t guards = 0;
  double capture_ms = 0, eager_ms = 0;
  int captured_ops = 0;
};

Figures measure(int reps) {
  py::VMOptions options;
  options.out = [](std::string_view) {};
  py::VM vm(options);
  capture::install_capture(vm);
  Status st = vm.run_source(std::string(kProgram) + chain_function(kCaptureOps), "<bench compile>");
  if (!st.ok()) throw Error("bench compile: setup program failed: " + st.to_string());
  const py::Value f = global(vm, "f"), chain = global(vm, "chain");
  const py::ValueVec args = {global(vm, "x"), global(vm, "y"), global(vm, "z")};
  Figures out;

  // The cached entry: f traced once, as the first call of the compiled f does.
  py::Frame first;
  bind(vm, first, f, args);
  capture::RegionResult entry = capture::trace_region(vm, first, {});
  if (!entry.returned || entry.op_count != 3) throw Error("bench compile: f did not trace into one graph of 3 ops");
  out.guards = entry.guards.size();
  std::string why;
  {
    py::Frame fresh;
    bind(vm, fresh, f, args);
    if (!capture::check_guards(vm, fresh, entry.guards, &why)) throw Error("bench compile: guards fail on an identical call: " + why);
  }

  // Batches long enough for the clock's resolution; the median batch is reported.
  constexpr int kChecksPerBatch = 2000, kCallsPerBatch = 200;
  std::vector<double> guard_us, call_us, capture_ms, eager_ms;
  for (int rep = -1; rep < reps; ++rep) {  // rep -1 warms up: caches, allocator, branch predictors
    py::Frame fresh;
    bind(vm, fresh, f, args);
    bool ok = true;
    auto t0 = Clock::now();
    for (int i = 0; i < kChecksPerBatch; ++i) ok &= capture::check_guards(vm, fresh, entry.guards, nullptr);
    guard_us.push_back(elapsed_us(t0) / kChecksPerBatch);
    if (!ok) throw Error("bench compile: a guard check failed");

    t0 = Clock::now();
    for (int i = 0; i < kCallsPerBatch; ++i) vm.call(f, args);
    call_us.push_back(elapsed_us(t0) / kCallsPerBatch);

    py::Frame frame;
    bind(vm, frame, chain, {args[0]});
    t0 = Clock::now();
    capture::RegionResult region = capture::trace_region(vm, frame, {});
    capture_ms.push_back(elapsed_us(t0) / 1000);
    out.captured_ops = region.op_count;
    if (!region.returned || region.op_count != kCaptureOps)
      throw Error("bench compile: the 100-op function traced into " + std::to_string(region.op_count) + " ops");

    t0 = Clock::now();
    vm.call(chain, py::ValueVec{args[0]});
    eager_ms.push_back(elapsed_us(t0) / 1000);
  }
  for (auto* v : {&guard_us, &call_us, &capture_ms, &eager_ms}) v->erase(v->begin());
  out.guard_us = median(guard_us);
  out.call_us = median(call_us);
  out.capture_ms = median(capture_ms);
  out.eager_ms = median(eager_ms);
  return out;
}

}  // namespace

int run_compile_bench(int reps, bool json) {
  if (reps == 0) reps = 21;
  const Figures m = measure(reps);
  const double guard_ratio = m.guard_us / m.call_us;
  if (json) {
    nlohmann::json rows = nlohmann::json::array();
    rows.push_back({{"name", "guard_check"},
                    {"ms", m.guard_us / 1000},
                    {"us", m.guard_us},
                    {"guards", m.guards},
                    {"target_us", kGuardTargetUs},
                    {"meets_target", m.guard_us < kGuardTargetUs},
                    {"ratio_to_ceiling", guard_ratio}});
    rows.push_back({{"name", "capture_100_ops"},
                    {"ms", m.capture_ms},
                    {"ops", m.captured_ops},
                    {"eager_ms", m.eager_ms},
                    {"target_ms", kCaptureTargetMs},
                    {"meets_target", m.capture_ms < kCaptureTargetMs}});
    nlohmann::json doc = {{"rows", rows},
                          {"ceiling", {{"name", "python_call"}, {"us", m.call_us}, {"ms", m.call_us / 1000}}},
                          {"reps", reps}};
    std::cout << doc.dump(1) << "\n";
    return kExitOk;
  }
  std::printf("compile overheads, median of %d\n%-16s %10s %10s %10s  %s\n", reps, "name", "value", "target", "ceiling",
              "ratio");
  std::printf("%-16s %8.3fus %8.1fus %8.2fus %6.1f%%  (%zu guards vs one interpreted call of f)%s\n", "guard_check",
              m.guard_us, kGuardTargetUs, m.call_us, 100 * guard_ratio, m.guards,
              m.guard_us < kGuardTargetUs ? "" : "  (over target)");
  std::printf("%-16s %8.3fms %8.1fms %8.3fms %6.1fx  (trace of %d ops vs its eager run)%s\n", "capture_100_ops",
              m.capture_ms, kCaptureTargetMs, m.eager_ms, m.capture_ms / m.eager_ms, m.captured_ops,
              m.capture_ms < kCaptureTargetMs ? "" : "  (over target)");
  return kExitOk;
}

}  // namespace kiln::cli
