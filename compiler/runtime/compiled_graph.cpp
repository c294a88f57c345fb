#include "compiler/runtime/compiled_graph.h"

#include <algorithm>
#include <chrono>

#include "compiler/codegen/cpu/cpu_codegen.h"
#include "compiler/loopir/extern_call.h"
#include "compiler/loopir/lower.h"
#include "compiler/runtime/compile_cache.h"
#include "compiler/runtime/program_binding.h"
#include "core/graph/hash.h"
#include "compiler/loopir/print_ir.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/sched/schedule.h"
#include "core/tensor/parallel.h"
#include "core/util/md5.h"

namespace kiln::runtime {

using loopir::Buffer;
using loopir::BufferRole;
using loopir::KernelKind;

struct CompiledGraph::Impl {
  sched::ScheduledProgram scheduled;
  std::unique_ptr<codegen::cpu::Module> code;
  std::vector<CodegenStage> stages;
  CompileStats stats;
  ProgramBinding binding;
};

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Every kernel its own group, nothing inlined: each node's value stays in
// its own buffer, for the per-node numerics.
sched::ScheduledProgram unfused(const loopir::Program& p) {
  sched::ScheduledProgram s;
  s.program = p;
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const loopir::Kernel& K = p.kernels[k];
    sched::FusedGroup g;
    g.name = K.output;
    g.kernels = {k};
    g.has_reduction = K.kind == KernelKind::Reduction;
    g.outer_numel = 1;
    for (int64_t r : K.ranges) g.outer_numel *= r;
    s.groups.push_back(std::move(g));
    s.allocations.push_back({K.output, K.output, false, "fresh: unfused for intermediates"});
  }
  return s;
}

// What the structural hash leaves out and the generated code depends on:
// every tensor's strides.
void append_strides(const Val& v, std::string& text) {
  if (v.is_tensor() && v.tensor.strides)
    for (const SymInt& s : *v.tensor.strides) text += s.to_string() + ",";
  for (const Val& item : v.items) append_strides(item, text);
  text += ';';
}

std::string layout_text(const Graph& g) {
  std::string text;
  for (const Node& n : g.nodes) append_strides(n.meta.val, text);
  return text;
}

CacheKey cache_key(const Graph& g, const codegen::cpu::Options& o, bool fuse) {
  CacheKey key;
  key.graph_hash = structural_hash(g);
  key.layout = layout_text(g);
  key.options = std::string("O");
  key.options += std::to_string(o.opt_level);
  key.options += ";fuse=" + std::to_string(int(fuse)) + ";inject=" + std::to_string(int(o.inject_bug));
  key.target = codegen::cpu::target_description();
  return key;
}

// The program lowered and scheduled, with the two loop IR stages.
Status lower_and_schedule(const Graph& g, const CompileOptions& options, sched::ScheduledProgram& scheduled,
                          LoopStages& out) {
  loopir::Program program;
  try {
    auto t0 = Clock::now();
    program = loopir::lower_to_loops(g);
    out.stats.lower_ms = ms_since(t0);
    out.stages.push_back({"ir_pre_fusion", options.keep_text ? loopir::print_loop_ir(program) : "", out.stats.lower_ms});
    t0 = Clock::now();
    scheduled = options.fuse ? sched::schedule(std::move(program)) : unfused(program);
    out.stats.schedule_ms = ms_since(t0);
  } catch (const Error& e) {
    return Status::error(e.what());
  }
  out.stats.kernels = scheduled.program.kernels.size();
  out.stats.groups = scheduled.groups.size();
  out.stages.push_back({"ir_post_fusion", options.keep_text ? sched::print_scheduled(scheduled) : "", out.stats.schedule_ms});
  return {};
}

}  // namespace

Expected<LoopStages> schedule_loops(const Graph& source, const CompileOptions& options,
                                    const std::map<std::string, Tensor>& constants) {
  sched::ScheduledProgram scheduled;
  LoopStages out;
  // Without get_attr nodes there is nothing to bind: no copy of the graph.
  const bool binds = std::any_of(source.nodes.begin(), source.nodes.end(), [](const Node& n) { return n.op == OpKind::GetAttr; });
  if (!binds) {
    if (Status st = lower_and_schedule(source, options, scheduled, out); !st.ok()) return st;
    return out;
  }
  std::vector<Tensor> bound_inputs;
  Expected<Graph> bound = bind_constants(source, constants, bound_inputs);
  if (!bound) return bound.status();
  if (Status st = lower_and_schedule(*bound, options, scheduled, out); !st.ok()) return st;
  return out;
}

CompiledGraph::CompiledGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledGraph::~CompiledGraph() = default;

const std::vector<CodegenStage>& CompiledGraph::stages() const { return impl_->stages; }
const CompileStats& CompiledGraph::stats() const { return impl_->stats; }

Expected<Graph> bind_constants(const Graph& source, const std::map<std::string, Tensor>& constants,
                               std::vector<Tensor>& bound) {
  Graph g = source;
  for (Node& n : g.nodes) {
    if (n.op == OpKind::Placeholder) {
      bound.emplace_back();
    } else if (n.op == OpKind::GetAttr) {
      auto it = constants.find(n.target);
      if (it == constants.end())
        return Status::error("compiled graph: get_attr node '" + n.name + "' names " + n.target + ", which no constant holds");
      n.op = OpKind::Placeholder;
      n.target = n.name;
      if (!n.meta.val.is_tensor()) n.meta.val = Val::of_tensor(pipeline::tensor_meta_of(it->second));
      bound.push_back(it->second);
    }
  }
  return g;
}

Expected<std::shared_ptr<CompiledGraph>> CompiledGraph::compile(const Graph& source, const CompileOptions& options,
                                                                const std::map<std::string, Tensor>& constants) {
  auto t_start = Clock::now();
  auto impl = std::make_unique<Impl>();
  Expected<Graph> bound = bind_constants(source, constants, impl->binding.bound_inputs);
  if (!bound) return bound.status();
  const Graph& g = *bound;
  codegen::cpu::Options cg;
  cg.opt_level = options.opt_level;
  cg.keep_text = options.keep_text;
  cg.cancel = options.cancel;
  cg.on_step = options.on_step;
  if (options.inject_bug != "none") {
    Expected<codegen::cpu::InjectedBug> bug = options.inject_bug.empty()
                                                  ? codegen::cpu::injected_bug_from_env()
                                                  : codegen::cpu::parse_injected_bug(options.inject_bug);
    if (!bug) return bug.status();
    cg.inject_bug = *bug;
  }
  LoopStages loops;
  if (options.on_step) options.on_step("lower");
  if (Status st = lower_and_schedule(g, options, impl->scheduled, loops); !st.ok()) return st;
  impl->stats = loops.stats;
  impl->stages = std::move(loops.stages);
  // The compile cache skips LLVM entirely; a compile that keeps the IR
  // texts for the stepper always runs it.
  CompileCache* cache = options.use_cache && !options.keep_text ? default_compile_cache() : nullptr;
  CacheKey key;
  Expected<std::unique_ptr<codegen::cpu::Module>> code = Status::error("not compiled");
  if (cache) {
    key = cache_key(g, cg, options.fuse);
    // The object code's buffers and kernels are the schedule's: code cached
    // under another scheduler (same graph, same build id: a scheduler change
    // without a bump) would write into the wrong buffers. So the schedule is
    // part of the key.
    key.options += ";schedule=" + md5_hex(sched::print_scheduled(impl->scheduled));
    if (std::optional<std::string> object = cache->lookup(key)) {
      code = codegen::cpu::load_object(impl->scheduled, std::move(*object));
      impl->stats.cache_hit = code.ok();
    }
  }
  if (!impl->stats.cache_hit) {
    code = codegen::cpu::compile(impl->scheduled, cg);
    if (code.ok() && cache)
      (void)cache->store(key, (*code)->object,
                         std::to_string(impl->scheduled.program.kernels.size()) + " kernels, " +
                             std::to_string(impl->scheduled.groups.size()) + " groups");
  }
  if (!code) return code.status();
  impl->code = std::move(*code);
  const codegen::cpu::Module& m = *impl->code;
  impl->stages.push_back({"llvm_ir", m.llvm_ir, m.times.emit_ms});
  impl->stages.push_back({"llvm_ir_optimized", m.llvm_ir_optimized, m.times.optimize_ms});
  impl->stages.push_back({"assembly", m.assembly, m.times.codegen_ms});
  const loopir::Program& p = impl->scheduled.program;
  impl->binding.index(impl->scheduled);
  impl->binding.note_none_outputs(g);
  CompileStats& st = impl->stats;
  st.emit_ms = m.times.emit_ms;
  st.optimize_ms = m.times.optimize_ms;
  st.codegen_ms = m.times.codegen_ms;
  st.link_ms = m.times.link_ms;
  st.kernels = p.kernels.size();
  st.groups = impl->scheduled.groups.size();
  st.object_bytes = m.object.size();
  st.total_ms = ms_since(t_start);
  return std::shared_ptr<CompiledGraph>(new CompiledGraph(std::move(impl)));
}

namespace {

struct Memory {
  std::vector<Tensor> tensors;  // per buffer: a view with the buffer's layout
  std::vector<char*> bases;     // per buffer: element 0 of its flat index space
};

Expected<Memory> allocate(const CompiledGraph::Impl& impl, const std::vector<Tensor>& given, bool fresh_storage) {
  const loopir::Program& p = impl.scheduled.program;
  const ProgramBinding& bind = impl.binding;
  Expected<std::vector<Tensor>> inputs = bind.all_inputs(given);
  if (!inputs) return inputs.status();
  KILN_CHECK(inputs->size() == p.inputs.size(), "compiled graph: ", inputs->size(), " inputs for ", p.inputs.size(), " placeholders");
  Memory mem;
  mem.tensors.resize(p.buffers.size());
  mem.bases.resize(p.buffers.size(), nullptr);
  for (size_t i = 0; i < inputs->size(); ++i) {
    size_t at = bind.input_slots[i];
    Expected<Tensor> laid_out = input_in_buffer_layout(i, p.buffers[at], (*inputs)[i]);
    if (!laid_out) return laid_out.status();
    mem.tensors[at] = *laid_out;
    mem.bases[at] = storage_base(mem.tensors[at]);
  }
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const Buffer& b = p.buffers[i];
    if (b.role == BufferRole::Input) continue;
    size_t owner = fresh_storage ? i : bind.storage_of[i];
    if (owner != i && mem.tensors[owner].defined()) {
      mem.tensors[i] = mem.tensors[owner].as_strided(Shape(b.sizes.begin(), b.sizes.end()),
                                                     Shape(b.strides.begin(), b.strides.end()), b.offset);
    } else {
      mem.tensors[i] = buffer_tensor(b);
    }
    mem.bases[i] = storage_base(mem.tensors[i]);
  }
  return mem;
}

// `whole_epilogues`: a GEMM with a planned epilogue (GemmLtEpilogue) may
// write the epilogue's output itself and skip its kernel; off where every
// intermediate is wanted, since the product is then never written.
Status execute(const CompiledGraph::Impl& impl, Memory& mem, bool whole_epilogues) {
  const sched::ScheduledProgram& s = impl.scheduled;
  const std::vector<codegen::cpu::GroupCode>& groups = impl.code->groups;
  char* const* bases = mem.bases.data();
  size_t skip_group = SIZE_MAX;
  for (size_t g = 0; g < groups.size(); ++g) {
    const codegen::cpu::GroupCode& code = groups[g];
    if (code.is_extern) {
      // Library calls (BLAS, convolution, eager fallbacks) see the buffers as tensors over the same memory.
      const loopir::Program& p = s.program;
      auto tensor = [&](const std::string& name) { return mem.tensors[p.buffer_index(name)]; };
      try {
        for (size_t k : s.groups[g].kernels) {
          if (whole_epilogues && loopir::run_gemm_with_epilogue(p, p.kernels[k], tensor)) {
            skip_group = g + 1;  // the planner put the epilogue's kernel in the next group, alone
            continue;
          }
          loopir::run_extern(p, p.kernels[k], tensor);
        }
      } catch (const Error& e) {
        return Status::error(std::string("extern kernel ") + s.groups[g].name + ": " + e.what());
      }
      continue;
    }
    if (g == skip_group || !code.fn) continue;
    // Enough outer points per task that a task's work outweighs its dispatch.
    int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, code.work_per_outer));
    codegen::cpu::GroupFn fn = code.fn;
    parallel_for(0, code.outer_numel, grain, [fn, bases](int64_t b, int64_t e) { fn(bases, b, e); });
  }
  return {};
}

}  // namespace

Expected<std::vector<Tensor>> CompiledGraph::run(const std::vector<Tensor>& inputs) const {
  Expected<Memory> mem = allocate(*impl_, inputs, false);
  if (!mem) return mem.status();
  if (Status st = execute(*impl_, *mem, true); !st.ok()) return st;
  impl_->binding.write_inputs(inputs, mem->tensors);
  // A graph that returns its input returns that very tensor (when it came in the compiled layout), as eager does.
  std::vector<Tensor> outputs;
  for (size_t slot : impl_->binding.output_slots) outputs.push_back(mem->tensors[slot]);
  return impl_->binding.place_outputs(std::move(outputs));
}

Expected<std::map<std::string, Tensor>> CompiledGraph::run_with_intermediates(const std::vector<Tensor>& inputs) const {
  Expected<Memory> mem = allocate(*impl_, inputs, true);
  if (!mem) return mem.status();
  if (Status st = execute(*impl_, *mem, false); !st.ok()) return st;
  const loopir::Program& p = impl_->scheduled.program;
  std::map<std::string, Tensor> values;
  for (const loopir::Kernel& k : p.kernels) {
    std::string node = k.origin.empty() ? k.output : k.origin;
    values[node] = mem->tensors[p.buffer_index(k.output)];
  }
  return values;
}

}  // namespace kiln::runtime
