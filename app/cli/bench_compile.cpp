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
// seed_cpu_cold / seed_cpu_cached: capture-to-runnable of the seed program
// (../shared/reference/programs/s01_sin_cos.py: foo(x, y) = sin(x) + cos(x) on
// 10x10 tensors): trace_region of foo's frame, lower_to_aten, decomp::decompose
// and CompiledGraph::compile, timed in a fresh kiln-cli process (this binary
// run as a child with the hidden --seed-child cpu), so LLVM's and the JIT's
// one-time set-up count. Cold: the child gets an empty KILN_CACHE_DIR; cached:
// a second child with the same folder, so the compile cache the first one
// filled answers. Targets: cold < 50 ms, cached < 5 ms.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "app/cli/bench_util.h"
#include "app/cli/commands.h"
#include "compiler/capture/capture.h"
#include "compiler/capture/guard.h"
#include "compiler/capture/region_tracer.h"
#include "compiler/codegen/cuda/cuda_api.h"
#include "compiler/decomp/decompose.h"
#include "compiler/pipeline/to_aten.h"
#include "compiler/runtime/compiled_graph.h"
#include "compiler/runtime/cuda_graph.h"
#include "core/python/vm.h"
#include "core/util/status.h"
#include "core/util/output_text.h"

namespace kiln::cli {
namespace {

constexpr double kGuardTargetUs = 2.0;
constexpr double kCaptureTargetMs = 5.0;
constexpr int kCaptureOps = 100;
constexpr double kSeedColdTargetMs = 50.0;
constexpr double kSeedCachedTargetMs = 5.0;
constexpr double kSeedCudaColdTargetMs = 300.0;  // issue 7: capture to first launch (Inductor: 2.0 s)
constexpr double kSeedCudaCachedTargetMs = 5.0;

// The seed program, as in ../shared/reference/programs/s01_sin_cos.py (y unused there too).
const char* const kSeedProgram = R"(import torch
def foo(x, y):
    a = torch.sin(x)
    b = torch.cos(x)
    return a + b
x, y = torch.randn(10, 10), torch.randn(10, 10)
)";

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


using Json = nlohmann::json;

// The CUDA half of a seed child: compile (NVRTC or the cache), load, allocate,
// launch once and wait for it.
Json seed_cuda_figures(const Graph& decomposed, Clock::time_point t0, double setup_ms, double capture_ms,
                       double to_aten_ms, double decomp_ms) {
  auto tc = Clock::now();
  if (Status st = codegen::cuda::cuda_init(); !st.ok()) throw Error("bench compile: no GPU: " + st.message());
  const double context_ms = elapsed_us(tc) / 1000;
  auto t3 = Clock::now();
  runtime::CudaCompileOptions o;
  o.inject_bug = "none";
  auto compiled = runtime::CudaCompiledGraph::compile(decomposed, o);
  if (!compiled) throw Error("bench compile: compile: " + compiled.status().message());
  const double compile_ms = elapsed_us(t3) / 1000;
  auto t4 = Clock::now();
  auto exec = runtime::CudaExecution::create(*compiled);
  if (!exec) throw Error("bench compile: " + exec.status().message());
  Expected<codegen::cuda::Stream> stream = codegen::cuda::Stream::create();
  if (!stream) throw Error("bench compile: " + stream.status().message());
  if (Status st = (*exec)->launch(&*stream); !st.ok()) throw Error("bench compile: launch: " + st.message());
  if (Status st = stream->synchronize(); !st.ok()) throw Error("bench compile: " + st.message());
  const double launch_ms = elapsed_us(t4) / 1000;
  const double total_ms = elapsed_us(t0) / 1000 - context_ms;
  const runtime::CudaCompileStats& s = (*compiled)->stats();
  return {{"ms", total_ms},        {"capture_ms", capture_ms}, {"to_aten_ms", to_aten_ms}, {"decompose_ms", decomp_ms},
          {"compile_ms", compile_ms}, {"first_launch_ms", launch_ms}, {"cuda_context_ms", context_ms},
          {"setup_ms", setup_ms},  {"cache_hit", s.cache_hit},
          {"stats", {{"lower_ms", s.lower_ms}, {"schedule_ms", s.schedule_ms}, {"emit_ms", s.emit_ms},
                     {"nvrtc_ms", s.nvrtc_ms}, {"load_ms", s.load_ms}, {"total_ms", s.total_ms}, {"kernels", s.kernels}}}};
}

// One child run: capture-to-runnable of the seed, its parts and the CompileStats.
// On the GPU ("cuda"): capture to the first launch finished, the CUDA
// context's creation counted apart (it is the driver's, paid once per process
// by any CUDA program, Inductor's included).
Json seed_child_figures(bool cuda) {
  auto start = Clock::now();
  py::VMOptions options;
  options.out = [](std::string_view) {};
  py::VM vm(options);
  capture::install_capture(vm);
  Status st = vm.run_source(kSeedProgram, "<seed>");
  if (!st.ok()) throw Error("bench compile: seed program failed: " + st.to_string());
  const double setup_ms = elapsed_us(start) / 1000;
  py::Frame frame;
  bind(vm, frame, global(vm, "foo"), {global(vm, "x"), global(vm, "y")});
  auto t0 = Clock::now();
  capture::RegionResult region = capture::trace_region(vm, frame, {});
  if (!region.returned) throw Error("bench compile: the seed did not trace into one graph");
  const double capture_ms = elapsed_us(t0) / 1000;
  auto t1 = Clock::now();
  Expected<Graph> aten = pipeline::lower_to_aten(vm, region);
  if (!aten) throw Error("bench compile: lower_to_aten: " + aten.status().message());
  const double to_aten_ms = elapsed_us(t1) / 1000;
  auto t2 = Clock::now();
  Expected<Graph> decomposed = decomp::decompose(*aten);
  if (!decomposed) throw Error("bench compile: decompose: " + decomposed.status().message());
  const double decomp_ms = elapsed_us(t2) / 1000;
  if (cuda) return seed_cuda_figures(*decomposed, t0, setup_ms, capture_ms, to_aten_ms, decomp_ms);
  auto t3 = Clock::now();
  runtime::CompileOptions o;
  o.inject_bug = "none";
  auto compiled = runtime::CompiledGraph::compile(*decomposed, o);
  if (!compiled) throw Error("bench compile: compile: " + compiled.status().message());
  const double compile_ms = elapsed_us(t3) / 1000;
  const double total_ms = elapsed_us(t0) / 1000;
  const runtime::CompileStats& s = (*compiled)->stats();
  const double staged_ms = s.lower_ms + s.schedule_ms + s.emit_ms + s.optimize_ms + s.codegen_ms + s.link_ms;
  return {{"ms", total_ms},       {"capture_ms", capture_ms}, {"to_aten_ms", to_aten_ms}, {"decompose_ms", decomp_ms},
          {"compile_ms", compile_ms}, {"setup_ms", setup_ms},  {"cache_hit", s.cache_hit},
          {"outside_stages_ms", compile_ms - staged_ms},
          {"stats", {{"lower_ms", s.lower_ms}, {"schedule_ms", s.schedule_ms}, {"emit_ms", s.emit_ms},
                     {"optimize_ms", s.optimize_ms}, {"codegen_ms", s.codegen_ms}, {"link_ms", s.link_ms},
                     {"total_ms", s.total_ms}, {"kernels", s.kernels}, {"groups", s.groups}}}};
}

// Runs `kiln-cli bench compile --seed-child DEVICE` with KILN_CACHE_DIR=cache_dir; its JSON line.
Json spawn_seed_child(const std::string& exe, const std::string& cache_dir, const std::string& device) {
  return run_child_json("KILN_CACHE_DIR='" + cache_dir + "' KILN_COMPILE_CACHE=1 '" + exe + "' bench compile --seed-child " + device,
                        "bench compile: the seed child");
}

struct SeedFigures {
  Json cold, cached;  // the median runs (by ms)
  int runs = 0;
};

// Cold and cached in pairs of fresh processes, each pair with its own empty cache folder.
SeedFigures measure_seed(int runs, const std::string& device) {
  const std::string exe = self_exe();
  std::vector<Json> cold, cached;
  for (int i = 0; i < runs; ++i) {
    auto dir = std::filesystem::temp_directory_path() / ("kiln-bench-seed-" + std::to_string(::getpid()) + "-" + std::to_string(i));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    try {
      cold.push_back(spawn_seed_child(exe, dir.string(), device));
      cached.push_back(spawn_seed_child(exe, dir.string(), device));
    } catch (...) {
      std::filesystem::remove_all(dir);
      throw;
    }
    std::filesystem::remove_all(dir);
  }
  auto by_ms = [](std::vector<Json> v) {
    std::sort(v.begin(), v.end(), [](const Json& a, const Json& b) { return a["ms"].get<double>() < b["ms"].get<double>(); });
    return v[v.size() / 2];
  };
  return {by_ms(cold), by_ms(cached), runs};
}

Json seed_row(const char* name, const Json& r, double target) {
  Json row = r;
  row["name"] = name;
  row["target_ms"] = target;
  row["meets_target"] = r["ms"].get<double>() < target;
  row["ratio_to_target"] = r["ms"].get<double>() / target;
  return row;
}

void print_seed_row(const char* name, const Json& r, double target) {
  const double ms = r["ms"].get<double>();
  const Json& s = r["stats"];
  std::printf("%-16s %8.3fms %8.1fms %10s %6.2fx  (of the target; capture %.2f, to_aten %.2f, decompose %.2f, compile %.2f ms%s)%s\n",
              name, ms, target, "-", ms / target, r["capture_ms"].get<double>(), r["to_aten_ms"].get<double>(),
              r["decompose_ms"].get<double>(), r["compile_ms"].get<double>(), r["cache_hit"].get<bool>() ? ", cache hit" : "",
              ms < target ? "" : "  (over target)");
  std::printf("%-16s   compile: lower %.2f, schedule %.2f, emit %.2f, optimize %.2f, codegen %.2f, link %.2f ms; "
              "outside the stages (JIT and cache set-up) %.2f ms\n", "",
              s["lower_ms"].get<double>(), s["schedule_ms"].get<double>(), s["emit_ms"].get<double>(),
              s["optimize_ms"].get<double>(), s["codegen_ms"].get<double>(), s["link_ms"].get<double>(),
              r["outside_stages_ms"].get<double>());
}

}  // namespace

int run_seed_child(const std::string& device) {
  if (device != "cpu" && device != "cuda") throw Error("bench compile: --seed-child takes cpu or cuda");
  std::cout << kiln::json_text(seed_child_figures(device == "cuda")) << "\n";
  return kExitOk;
}

int run_compile_bench(int reps, bool json) {
  if (reps == 0) reps = 21;
  const Figures m = measure(reps);
  // Each pair of fresh processes costs LLVM's start-up twice; a few pairs give a stable median.
  const SeedFigures seed = measure_seed(std::max(3, std::min(reps, 7)), "cpu");
  // The GPU rows need a GPU; elsewhere they say why they were not measured.
  std::optional<SeedFigures> seed_cuda;
  std::string no_cuda;
  if (Status st = codegen::cuda::cuda_init(); st.ok()) seed_cuda = measure_seed(std::max(3, std::min(reps, 7)), "cuda");
  else no_cuda = st.message();
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
    rows.push_back(seed_row("seed_cpu_cold", seed.cold, kSeedColdTargetMs));
    rows.push_back(seed_row("seed_cpu_cached", seed.cached, kSeedCachedTargetMs));
    if (seed_cuda) {
      rows.push_back(seed_row("seed_cuda_cold", seed_cuda->cold, kSeedCudaColdTargetMs));
      rows.push_back(seed_row("seed_cuda_cached", seed_cuda->cached, kSeedCudaCachedTargetMs));
    } else {
      for (const char* name : {"seed_cuda_cold", "seed_cuda_cached"})
        rows.push_back({{"name", name}, {"ms", nullptr}, {"skipped", "no GPU: " + no_cuda}});
    }
    nlohmann::json doc = {{"rows", rows},
                          {"ceiling", {{"name", "python_call"}, {"us", m.call_us}, {"ms", m.call_us / 1000}}},
                          {"reps", reps}};
    std::cout << kiln::json_text(doc, 1) << "\n";
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
  std::printf("seed sin+cos, capture to runnable in a fresh process, median of %d\n", seed.runs);
  print_seed_row("seed_cpu_cold", seed.cold, kSeedColdTargetMs);
  print_seed_row("seed_cpu_cached", seed.cached, kSeedCachedTargetMs);
  if (!seed_cuda) {
    std::printf("seed_cuda_cold, seed_cuda_cached: skipped (no GPU: %s)\n", no_cuda.c_str());
    return kExitOk;
  }
  std::printf("seed sin+cos on the GPU, capture to first launch finished, CUDA context apart, median of %d\n",
              seed_cuda->runs);
  for (auto [name, r, target] : {std::tuple{"seed_cuda_cold", &seed_cuda->cold, kSeedCudaColdTargetMs},
                                 std::tuple{"seed_cuda_cached", &seed_cuda->cached, kSeedCudaCachedTargetMs}}) {
    const double ms = (*r)["ms"].get<double>();
    const Json& st = (*r)["stats"];
    std::printf("%-16s %8.3fms %8.1fms %10s %6.2fx  (capture %.2f, to_aten %.2f, decompose %.2f, compile %.2f "
                "[emit %.2f, nvrtc %.2f, load %.2f], first launch %.2f ms%s; CUDA context %.1f ms)%s\n",
                name, ms, target, "-", ms / target, (*r)["capture_ms"].get<double>(), (*r)["to_aten_ms"].get<double>(),
                (*r)["decompose_ms"].get<double>(), (*r)["compile_ms"].get<double>(), st["emit_ms"].get<double>(),
                st["nvrtc_ms"].get<double>(), st["load_ms"].get<double>(), (*r)["first_launch_ms"].get<double>(),
                (*r)["cache_hit"].get<bool>() ? ", cache hit" : "", (*r)["cuda_context_ms"].get<double>(),
                ms < target ? "" : "  (over target)");
  }
  return kExitOk;
}

}  // namespace kiln::cli
