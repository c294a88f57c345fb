// The LLVM side of the CPU backend: the host target machine, the O3 pipeline
// with glibc's vector math library, object and assembly emission, and the
// process-wide ORC LLJIT that links the objects.
#include "compiler/codegen/cpu/cpu_codegen.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/OptBisect.h>
#include <llvm/IR/PassInstrumentation.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include "compiler/codegen/cpu/llvm_emit.h"
#include "compiler/codegen/cpu/loop_plan.h"
#include "compiler/codegen/cpu/reuse_row_values.h"
#include "compiler/codegen/cpu/vector_math.h"

namespace kiln::codegen::cpu {

Expected<InjectedBug> parse_injected_bug(const std::string& text) {
  if (text.empty()) return InjectedBug::None;
  if (text == "relu:accuracy") return InjectedBug::ReluAccuracy;
  if (text == "relu:compile-error") return InjectedBug::ReluCompileError;
  if (text == "relu:crash") return InjectedBug::ReluCrash;
  return Status::error("KILN_INJECT_BUG='" + text +
                       "' is not one of relu:accuracy, relu:compile-error, relu:crash");
}

Expected<InjectedBug> injected_bug_from_env() {
  const char* v = std::getenv("KILN_INJECT_BUG");
  return parse_injected_bug(v ? v : "");
}

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string message_of(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return s;
}

// What every compile shares: LLVM's target set up once, the host machine
// description and the JIT. Made on first use; a process that never compiles
// pays nothing.
struct Session {
  std::string error;  // why the JIT is unusable, "" when it is
  std::unique_ptr<llvm::orc::LLJIT> jit;
  llvm::orc::JITTargetMachineBuilder machine{llvm::Triple()};
  std::string description;
  std::mutex mutex;  // LLVM's target machines are not shared across threads
  int next_dylib = 0;
  std::string vector_bits;  // the loops' preferred vector width, "" for LLVM's choice

  // LLVM tunes every AVX-512 Xeon to prefer 256-bit vectors (to spare the
  // clock on Skylake), so its loop vectorizer stops at 8 floats where the
  // CPU has 16. Kiln's kernels are long unit-stride loops of exp and FMAs,
  // compute-bound once a row sits in L1, and ATen's and Inductor's vector
  // code runs 512 bits wide there, so Kiln asks for the full width.
  // KILN_CPU_VECTOR_BITS=256 gives LLVM's choice back, for comparison.
  static std::string preferred_vector_bits(const std::string& features) {
    const char* forced = std::getenv("KILN_CPU_VECTOR_BITS");
    if (forced && std::string(forced) == "256") return "";
    return ("," + features + ",").find(",+avx512f,") != std::string::npos ? "512" : "";
  }

  Session() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // The vectorized loops call glibc's vector math routines (libmvec); the
    // JIT resolves them from the process once the library is loaded.
    std::string why;
    if (llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1", &why)) {
      error = "cannot load glibc's vector math library libmvec.so.1: " + why;
      return;
    }
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      error = message_of(jtmb.takeError());
      return;
    }
    machine = *jtmb;
    machine.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    auto built = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(machine).create();
    if (!built) {
      error = message_of(built.takeError());
      return;
    }
    jit = std::move(*built);
    vector_bits = preferred_vector_bits(machine.getFeatures().getString());
    description = machine.getTargetTriple().str() + ";" + machine.getCPU() + ";" +
                  machine.getFeatures().getString() + ";llvm " LLVM_VERSION_STRING;
    if (!vector_bits.empty()) description += ";vector " + vector_bits;
  }
};

Session& session() {
  static Session s;
  return s;
}

class JitModule : public Module {
 public:
  ~JitModule() override {
    if (dylib_) llvm::consumeError(session().jit->getExecutionSession().removeJITDylib(*dylib_));
  }
  llvm::orc::JITDylib* dylib_ = nullptr;
};

std::vector<GroupLoops> plan_all(const sched::ScheduledProgram& s) {
  std::vector<GroupLoops> plans;
  for (const sched::FusedGroup& g : s.groups) {
    plans.push_back(plan_group(s.program, g));
    plans.back().notes = reuse_row_values(s.program, plans.back());
  }
  return plans;
}

std::string print_module(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return s;
}

// Cancelling a compile: LLVM's optimization and code generation run for up to
// a second on a large graph and cannot be stopped from outside, but every
// optional pass asks a gate first. Once cancel is set, the gate says no: the
// optimizer skips what is left and instruction selection drops to its fast
// path, so the compile ends within a pass and its result is thrown away.
class CancelGate : public llvm::OptPassGate {
 public:
  explicit CancelGate(const std::atomic<bool>* cancel) : cancel_(cancel) {}
  bool shouldRunPass(llvm::StringRef, llvm::StringRef) override { return !cancelled(); }
  bool isEnabled() const override { return cancel_ != nullptr; }
  bool cancelled() const { return cancel_ && cancel_->load(std::memory_order_relaxed); }

 private:
  const std::atomic<bool>* cancel_;
};

void optimize(llvm::Module& m, llvm::TargetMachine& tm, int opt_level, const CancelGate& gate) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = opt_level >= 2;
  tuning.SLPVectorization = opt_level >= 2;
  llvm::PassInstrumentationCallbacks callbacks;
  callbacks.registerShouldRunOptionalPassCallback([&gate](llvm::StringRef, llvm::Any) { return !gate.cancelled(); });
  llvm::PassBuilder pb(&tm, tuning, std::nullopt, &callbacks);
  llvm::TargetLibraryInfoImpl tli(tm.getTargetTriple());
  add_vector_math(tli, tm.getTargetTriple(), tm.getTargetFeatureString().str());
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tli); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opt_level >= 3   ? llvm::OptimizationLevel::O3
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                  : opt_level == 1 ? llvm::OptimizationLevel::O1
                                                   : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0 ? pb.buildO0DefaultPipeline(level)
                                                                      : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(m, mam);
}

std::string emit_file(llvm::Module& m, llvm::TargetMachine& tm, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  KILN_CHECK(!tm.addPassesToEmitFile(pm, os, nullptr, type), "cpu codegen: the target cannot emit this file type");
  pm.run(m);
  return std::string(buffer.begin(), buffer.end());
}

// The LLVM half of a compile (optimization, assembly, object code) with all
// it works on. A single kernel's instruction selection can take a second and
// no pass can be interrupted, so a compile that may be cancelled runs this on
// a thread of its own: on cancel the caller returns at once and the job
// finishes alone, its passes skipped from then on, its results thrown away.
struct LlvmJob {
  llvm::LLVMContext ctx;  // first: the module lives in it
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> tm;
  std::atomic<bool> cancel{false};
  CancelGate gate{&cancel};
  int opt_level = 3;
  bool keep_text = false;
  std::atomic<int> step{0};  // 0 none yet, then kOptimize, kAssembly, kObject
  std::function<void(const char*)> on_step;  // run on the caller's thread only
  std::string optimized_ir, assembly, object, error;
  double optimize_ms = 0, codegen_ms = 0;
  bool done = false;
  std::mutex mutex;
  std::condition_variable finished;

  static constexpr int kOptimize = 1, kAssembly = 2, kObject = 3;
  static constexpr const char* kStepNames[] = {nullptr, "optimize", "assembly", "object"};

  void begin(int next) {
    step = next;
    if (on_step) on_step(kStepNames[next]);
  }

  void run() {
    try {
      auto t0 = Clock::now();
      begin(kOptimize);
      optimize(*module, *tm, opt_level, gate);
      if (gate.cancelled()) return;
      if (keep_text) optimized_ir = print_module(*module);
      optimize_ms = ms_since(t0);
      t0 = Clock::now();
      // Code generation rewrites the IR it runs on: the assembly comes from a
      // copy, so it shows exactly the code the object holds.
      if (keep_text) {
        begin(kAssembly);
        std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*module);
        assembly = emit_file(*copy, *tm, llvm::CodeGenFileType::AssemblyFile);
        if (gate.cancelled()) return;
      }
      begin(kObject);
      object = emit_file(*module, *tm, llvm::CodeGenFileType::ObjectFile);
      codegen_ms = ms_since(t0);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
};

// Jobs left running by cancelled compiles. The process waits for them as it
// exits, before the statics they may use are destroyed: a handler registered
// with atexit when a job is abandoned runs before every destructor registered
// earlier (all of LLVM's that the compile had touched by then). The registry
// itself is never destroyed.
struct AbandonedJobs {
  std::mutex mutex;
  std::condition_variable none_left;
  int running = 0;
};
AbandonedJobs& abandoned_jobs() {
  static AbandonedJobs* jobs = new AbandonedJobs;
  return *jobs;
}
void wait_for_abandoned_jobs() {
  AbandonedJobs& jobs = abandoned_jobs();
  std::unique_lock<std::mutex> lock(jobs.mutex);
  jobs.none_left.wait(lock, [&] { return jobs.running == 0; });
}

// Runs `job` on a thread and waits for it, polling `cancel`; false when
// cancelled (the job then finishes alone). Steps are reported from this thread.
bool run_cancellable(const std::shared_ptr<LlvmJob>& job, const std::atomic<bool>& cancel,
                     const std::function<void(const char*)>& step) {
  AbandonedJobs& jobs = abandoned_jobs();
  {
    std::lock_guard<std::mutex> lock(jobs.mutex);
    ++jobs.running;
  }
  std::thread([job, &jobs] {
    job->run();
    {
      std::lock_guard<std::mutex> lock(job->mutex);
      job->done = true;
    }
    job->finished.notify_all();
    std::lock_guard<std::mutex> lock(jobs.mutex);
    if (--jobs.running == 0) jobs.none_left.notify_all();
  }).detach();
  int reported = 0;
  std::unique_lock<std::mutex> lock(job->mutex);
  for (;;) {
    const bool done = job->finished.wait_for(lock, std::chrono::milliseconds(5), [&] { return job->done; });
    for (int now = job->step.load(); reported < now;)
      if (++reported != LlvmJob::kAssembly || job->keep_text)
        if (step) step(LlvmJob::kStepNames[reported]);
    if (done) return true;
    if (cancel.load(std::memory_order_relaxed)) {
      job->cancel = true;
      std::atexit(wait_for_abandoned_jobs);
      return false;
    }
  }
}

// Links `object` into a fresh JITDylib and looks up each group's function.
Expected<std::unique_ptr<Module>> link(const sched::ScheduledProgram& s, const std::vector<GroupLoops>& plans,
                                       std::unique_ptr<JitModule> module, std::string object) {
  Session& ss = session();
  auto t0 = Clock::now();
  std::string name;
  {
    std::lock_guard<std::mutex> lock(ss.mutex);
    name = "kiln_graph" + std::to_string(ss.next_dylib++);
  }
  auto jd = ss.jit->createJITDylib(name);
  if (!jd) return Status::error("cpu codegen: " + message_of(jd.takeError()));
  module->dylib_ = &*jd;
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object, name);
  if (llvm::Error e = ss.jit->addObjectFile(*jd, std::move(buffer)))
    return Status::error("cpu codegen: linking the object: " + message_of(std::move(e)));
  for (size_t g = 0; g < s.groups.size(); ++g) {
    GroupCode code;
    code.outer_numel = plans[g].outer_numel;
    code.work_per_outer = plans[g].work_per_outer;
    code.is_extern = plans[g].is_extern;
    if (plans[g].has_function()) {
      code.symbol = group_symbol(g);
      auto address = ss.jit->lookup(*jd, code.symbol);
      if (!address) return Status::error("cpu codegen: " + message_of(address.takeError()));
      code.fn = address->toPtr<GroupFn>();
    }
    module->groups.push_back(std::move(code));
  }
  module->object = std::move(object);
  module->times.link_ms = ms_since(t0);
  return std::unique_ptr<Module>(std::move(module));
}

}  // namespace

std::string target_description() {
  Session& ss = session();
  return ss.error.empty() ? ss.description : "unavailable: " + ss.error;
}

Expected<std::unique_ptr<Module>> compile(const sched::ScheduledProgram& s, const Options& options) {
  Session& ss = session();
  if (!ss.error.empty()) return Status::error("cpu codegen unavailable: " + ss.error);
  std::vector<GroupLoops> plans;
  auto module = std::make_unique<JitModule>();
  std::string object;
  auto step = [&](const char* name) {
    if (options.on_step) options.on_step(name);
  };
  auto job = std::make_shared<LlvmJob>();
  job->opt_level = options.opt_level;
  job->keep_text = options.keep_text;
  try {
    step("llvm_ir");
    auto t0 = Clock::now();
    plans = plan_all(s);
    // One context per compile: contexts are not thread-safe, and the module
    // is gone once its object code exists.
    job->ctx.setOptPassGate(job->gate);
    job->module = emit_module(job->ctx, s, plans, options.inject_bug);
    auto tm_or = ss.machine.createTargetMachine();
    if (!tm_or) return Status::error("cpu codegen: " + message_of(tm_or.takeError()));
    job->tm = std::move(*tm_or);
    llvm::Module& m = *job->module;
    llvm::TargetMachine& tm = *job->tm;
    m.setDataLayout(tm.createDataLayout());
    m.setTargetTriple(tm.getTargetTriple().str());
    for (llvm::Function& f : m) {
      if (f.isDeclaration()) continue;
      f.addFnAttr("target-cpu", tm.getTargetCPU());
      f.addFnAttr("target-features", tm.getTargetFeatureString());
      if (!ss.vector_bits.empty()) f.addFnAttr("prefer-vector-width", ss.vector_bits);
    }
    if (options.keep_text) {
      for (size_t g = 0; g < plans.size(); ++g)
        for (const std::string& note : plans[g].notes) module->llvm_ir += "; " + group_symbol(g) + ": " + note + "\n";
      module->llvm_ir += print_module(m);
    }
    module->times.emit_ms = ms_since(t0);
  } catch (const Error& e) {
    return Status::error(e.what());
  }
  const Status cancelled = Status::error("cancelled");
  if (options.cancel) {
    if (options.cancel->load() || !run_cancellable(job, *options.cancel, options.on_step)) return cancelled;
  } else {
    job->on_step = options.on_step;  // nothing can cancel it: no thread
    job->run();
  }
  if (!job->error.empty()) return Status::error(job->error);
  module->llvm_ir_optimized = std::move(job->optimized_ir);
  module->assembly = std::move(job->assembly);
  object = std::move(job->object);
  module->times.optimize_ms = job->optimize_ms;
  module->times.codegen_ms = job->codegen_ms;
  step("link");
  return link(s, plans, std::move(module), std::move(object));
}

Expected<std::unique_ptr<Module>> load_object(const sched::ScheduledProgram& s, std::string object) {
  Session& ss = session();
  if (!ss.error.empty()) return Status::error("cpu codegen unavailable: " + ss.error);
  return link(s, plan_all(s), std::make_unique<JitModule>(), std::move(object));
}

}  // namespace kiln::codegen::cpu
