#include "compiler/pipeline/run_region.h"

#include <algorithm>
#include <chrono>

#include "compiler/capture/region_tracer.h"
#include "compiler/pipeline/to_aten.h"
#include "compiler/runtime/compiled_graph.h"
#include "compiler/runtime/cuda_graph.h"

namespace kiln::pipeline {

std::string describe_size(const Graph& g) {
  const auto ops = std::count_if(g.nodes.begin(), g.nodes.end(), is_call);
  return std::to_string(g.size()) + " nodes, " + std::to_string(ops) + " ops";
}

RegionInput RegionInput::captured(py::VM& vm, const capture::RegionResult& region, Partitioner partitioner) {
  RegionInput in;
  in.from = From::Captured;
  in.vm = &vm;
  in.region = &region;
  in.training = training_options_of(region, partitioner);
  return in;
}

RegionInput RegionInput::aten(Graph g, TrainingOptions training) {
  RegionInput in;
  in.from = From::Aten;
  in.graph = std::move(g);
  in.training = std::move(training);
  return in;
}

RegionInput RegionInput::from_joint(aot::JointGraph j, Partitioner partitioner) {
  RegionInput in;
  in.from = From::Joint;
  in.joint = std::move(j);
  in.training.partitioner = partitioner;
  return in;
}

RegionInput RegionInput::single(Graph g, std::string group) {
  RegionInput in;
  in.from = From::Graph;
  in.graph = std::move(g);
  in.group = std::move(group);
  return in;
}

const RegionPart* RegionRun::part(const std::string& group) const {
  for (const RegionPart& p : parts)
    if (p.group == group) return &p;
  return nullptr;
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string language_of(const std::string& stage) {
  if (stage.starts_with("llvm_ir")) return "llvm";
  if (stage == "assembly") return "asm";
  if (stage.starts_with("ir_") || stage == "cuda_ir_post_fusion") return "loopir";
  if (stage == "cuda_source") return "cuda";
  return "text";
}

// "flash attention: buf9" for each bmm, softmax, bmm the CUDA schedule fused (attention.cpp's reasons).
std::string attention_summary(const std::string& post_fusion) {
  std::string fused;
  const std::string marker = "into flash attention ";
  for (size_t at = post_fusion.find(marker); at != std::string::npos; at = post_fusion.find(marker, at + 1)) {
    const size_t from = at + marker.size(), to = post_fusion.find(':', from);
    fused += (fused.empty() ? "" : ", ") + post_fusion.substr(from, to - from);
  }
  return fused.empty() ? "" : "flash attention: " + fused;
}

// The steps in order; each records its stages through emit().
class RegionRunner {
 public:
  RegionRunner(const RegionOptions& o, const StageObserver& observe, RegionRun& run) : o_(o), observe_(observe), run_(run) {}

  void step(const std::string& group, const std::string& name) const {
    if (o_.on_step) o_.on_step(group, name);
  }

  bool cancelled() {
    if (o_.cancel && o_.cancel->load()) {
      run_.cancelled = true;
      if (run_.status.ok()) run_.status = Status::error("cancelled");
    }
    return run_.cancelled;
  }

  void graph_stage(const std::string& name, const Graph& g, double seconds, std::string summary, std::string text = "") {
    Stage s;
    s.text = std::move(text);
    s.name = name;
    s.changed = true;
    s.graph = std::make_shared<const Graph>(g);
    s.seconds = seconds;
    s.summary = std::move(summary);
    emit(std::move(s));
  }

  void outcome_stage(const std::string& name, const std::string& group, Stage::Outcome outcome, std::string why,
                     double seconds = 0) {
    Stage s;
    s.name = name;
    s.group = group;
    s.outcome = outcome;
    s.summary = std::move(why);
    s.seconds = seconds;
    emit(std::move(s));
  }

  void fail(const std::string& step, const std::string& group, const std::string& why, double seconds = 0) {
    outcome_stage(step, group, Stage::Outcome::Failed, why, seconds);
    if (run_.status.ok()) run_.status = Status::error((group.empty() ? "" : group + ": ") + step + ": " + why);
  }

  // A joint graph from a dump: the partitioner, then the halves.
  void partition(const TrainingOptions& training) {
    step("", "partition");
    double secs = 0;
    Expected<aot::Partition> part = partition_joint(run_.joint, training.partitioner, &secs);
    if (!part) return fail("partition", "", part.status().message(), secs);
    halves(std::move(*part), secs, training.partitioner);
  }

  // The partitioner's forward and backward, each through the rest.
  void halves(aot::Partition part, double partition_seconds, Partitioner partitioner) {
    run_.trained = true;
    run_.partition = std::move(part);
    const aot::Partition& p = run_.partition;
    graph_stage("aot_forward_graph", p.forward, partition_seconds,
                std::string(partitioner_name(partitioner)) + " partition, saves " + std::to_string(p.saved.size()) +
                    " tensor(s), " + std::to_string(p.saved_bytes) + " bytes",
                aot::describe_saved(p));
    // Each half with its passes and code right after it, so the stages read like the pipeline.
    if (!graph_through(p.forward, "forward")) return;
    graph_stage("aot_backward_graph", p.backward, 0,
                p.recomputed.empty() ? "" : std::to_string(p.recomputed.size()) + " op(s) recomputed");
    graph_through(p.backward, "backward");
  }

  // The ATen graph: a joint graph and its partition when the region trains, else inference.
  void aten(Graph g, const TrainingOptions& training) {
    if (o_.gpu_training && training.differentiates()) {
      step("", "fuse_attention");
      auto t0 = Clock::now();
      std::string summary;
      if (std::optional<Graph> fused = fuse_attention_for_gpu_training(g, &summary)) {
        g = std::move(*fused);
        graph_stage("fuse_attention", g, since(t0), summary + ", decomposed with it kept whole");
      }
    }
    step("", "aot_joint_graph");
    TrainingSplit split = split_for_training(g, training);
    if (!split.inference_because.empty()) {
      run_.inference_because = split.inference_because;
      outcome_stage("aot_joint_graph", "", Stage::Outcome::Skipped, run_.inference_because, split.joint_seconds);
      graph_through(std::move(g), "");
      return;
    }
    run_.joint = std::move(split.joint);
    graph_stage("aot_joint_graph", run_.joint.graph, split.joint_seconds,
                std::to_string(run_.joint.num_primals) + " primals, " + std::to_string(run_.joint.num_tangents) + " tangents");
    // split_for_training has partitioned it already.
    if (!split.partition_status.ok()) return fail("partition", "", split.partition_status.message(), split.partition_seconds);
    if (cancelled()) return;
    halves(std::move(split.partition), split.partition_seconds, training.partitioner);
  }

  // One graph through the passes, then code generation. False when the passes failed.
  bool graph_through(Graph g, const std::string& group) {
    if (cancelled()) return false;
    step(group, "passes");
    RegionPart part;
    part.group = group;
    // The input moves into the passes: 200,000 nodes are a tenth of a second to copy and 100 MB.
    const std::string input_size = o_.passes_done ? describe_size(g) : std::string();
    if (!o_.graph_passes) {
      part.passes.graph = std::move(g);
      part.passes.constants = constants_;
      run_.parts.push_back(std::move(part));
      return true;
    }
    Options po;
    po.instrumentation = o_.instrumentation;
    po.instrumentation.cancel = o_.cancel;
    po.instrumentation.on_stage = [&](const Stage& s) {
      if (s.name == "input") return;
      Stage copy = s;
      copy.group = group;
      emit(std::move(copy));
    };
    po.disabled_passes = o_.disabled_passes;
    po.keep_whole = o_.keep_whole;
    if (o_.gpu_training)
      for (const std::string& op : cuda_whole_ops()) po.keep_whole.push_back(op);
    po.constants = constants_;
    // A graph from outside (a dump) may hold what the passes do not expect:
    // a failure of this graph, not of the caller.
    try {
      part.passes = compile(std::move(g), std::move(po));
    } catch (const std::exception& e) {
      part.passes.status = Status::error(e.what());
    }
    part.passes.stages.clear();  // the observer and run_.stages have them
    const bool ok = part.passes.status.ok();
    if (!ok) {
      if (cancelled()) return false;
      fail("passes", group, part.passes.status.to_string());
      run_.parts.push_back(std::move(part));
      return false;
    }
    if (o_.passes_done) o_.passes_done(group, input_size, part.passes);
    codegen(part);
    run_.parts.push_back(std::move(part));
    return true;
  }

  void codegen(RegionPart& part) {
    using Codegen = RegionOptions::Codegen;
    if (o_.codegen == Codegen::None || cancelled()) return;
    runtime::CompileOptions co = o_.cpu;
    if (!co.cancel) co.cancel = o_.cancel;
    if (o_.on_step)
      co.on_step = [this, group = part.group, inner = o_.cpu.on_step](const char* name) {
        if (inner) inner(name);
        step(group, name);
      };
    const Graph& g = part.passes.graph;
    auto code_stage = [&](const runtime::CodegenStage& cs, const runtime::CompileStats& st) {
      std::string summary;
      if (cs.name == "ir_post_fusion") summary = std::to_string(st.kernels) + " kernels in " + std::to_string(st.groups) + " groups";
      if (cs.name == "assembly") summary = "object " + std::to_string(st.object_bytes) + " bytes";
      emit_code(cs, part.group, std::move(summary));
    };
    if (o_.codegen != Codegen::Machine) {
      // Loop IR first: with Auto, its kernel count decides. (A graph that
      // then gets machine code is lowered and scheduled again by the compile
      // below: under the limit that is small beside LLVM.)
      step(part.group, "lower");
      Expected<runtime::LoopStages> loops = [&]() -> Expected<runtime::LoopStages> {
        try {
          return runtime::schedule_loops(g, co, part.passes.constants.all());
        } catch (const std::exception& e) {
          return Status::error(e.what());
        }
      }();
      if (!loops) {
        part.codegen_status = loops.status();
        return outcome_stage("codegen", part.group, Stage::Outcome::Failed, loops.status().message());
      }
      if (o_.codegen == Codegen::Loops || loops->stats.kernels > o_.auto_kernels) {
        for (const runtime::CodegenStage& cs : loops->stages) code_stage(cs, loops->stats);
        part.codegen_status = Status::error(o_.codegen == Codegen::Loops
                                                ? std::string("loop IR only was asked for")
                                                : std::to_string(loops->stats.kernels) + " kernels (over " +
                                                      std::to_string(o_.auto_kernels) + "; LLVM takes about 10 ms a kernel)");
        // The CUDA source is left out with the machine code: it costs another lowering.
        outcome_stage("machine code", part.group, Stage::Outcome::Skipped, part.codegen_status.message());
        return;
      }
      if (cancelled()) return;
    }
    auto code = [&]() -> Expected<std::shared_ptr<runtime::CompiledGraph>> {
      try {
        return runtime::CompiledGraph::compile(g, co, part.passes.constants.all());
      } catch (const std::exception& e) {
        return Status::error(e.what());
      }
    }();
    if (!code) {
      part.codegen_status = code.status();
      if (cancelled()) return;
      return outcome_stage("codegen", part.group, Stage::Outcome::Failed, code.status().message());
    }
    for (const runtime::CodegenStage& cs : (*code)->stages()) code_stage(cs, (*code)->stats());
    part.code = *code;
    cuda(part);
  }

  // The same graph for the GPU: the CUDA source alone, so no GPU is needed.
  void cuda(RegionPart& part) {
    if (!o_.cuda_source || cancelled()) return;
    step(part.group, "cuda_source");
    runtime::CudaCompileOptions cuda;
    cuda.keep_text = true;
    cuda.emit_only = true;
    cuda.inject_bug = "none";
    auto gpu = [&]() -> Expected<std::shared_ptr<runtime::CudaCompiledGraph>> {
      try {
        return runtime::CudaCompiledGraph::compile(part.passes.graph, cuda, part.passes.constants.all());
      } catch (const std::exception& e) {
        return Status::error(e.what());
      }
    }();
    if (!gpu) return outcome_stage("cuda_source", part.group, Stage::Outcome::Failed, gpu.status().message());
    for (const runtime::CodegenStage& cs : (*gpu)->stages()) {
      if (cs.name == "cuda_source") emit_code(cs, part.group, "");
      // The GPU's schedule differs from the CPU's where a fusion is the GPU's
      // alone (attention); its decisions are shown under their own name.
      if (cs.name == "ir_post_fusion") {
        runtime::CodegenStage gpu_stage = cs;
        gpu_stage.name = "cuda_ir_post_fusion";
        emit_code(gpu_stage, part.group, attention_summary(cs.text));
      }
    }
  }

  ConstantTable constants_;

 private:
  void emit_code(const runtime::CodegenStage& cs, const std::string& group, std::string summary) {
    Stage s;
    s.name = cs.name;
    s.group = group;
    s.kind = StageKind::Code;
    s.changed = true;
    s.text = cs.text;
    s.language = language_of(cs.name);
    s.seconds = cs.ms / 1e3;
    s.summary = std::move(summary);
    emit(std::move(s));
  }

  void emit(Stage s) {
    if (observe_) observe_(s);
    run_.stages.push_back(std::move(s));
  }

  const RegionOptions& o_;
  const StageObserver& observe_;
  RegionRun& run_;
};

}  // namespace

RegionRun run_region(RegionInput in, const RegionOptions& options, const StageObserver& observe) {
  RegionRun run;
  RegionRunner r(options, observe, run);
  r.constants_ = std::move(in.constants);
  switch (in.from) {
    case RegionInput::From::Captured: {
      r.graph_stage("dynamo_output_graph", in.region->graph, 0, "");
      // A region with no ops (a frame that only returns its input) has nothing to compile.
      if (in.region->op_count == 0 || r.cancelled()) break;
      r.step("", "to_aten");
      auto t0 = Clock::now();
      Expected<Graph> aten = [&]() -> Expected<Graph> {
        try {
          return lower_to_aten(*in.vm, *in.region);
        } catch (const std::exception& e) {
          return Status::error(e.what());
        }
      }();
      if (!aten) {
        r.fail("to_aten", "", aten.status().message(), since(t0));
        break;
      }
      r.graph_stage("to_aten", *aten, since(t0), "");
      if (r.cancelled()) break;
      r.aten(std::move(*aten), in.training);
      break;
    }
    case RegionInput::From::Aten: r.aten(std::move(in.graph), in.training); break;
    case RegionInput::From::Joint:
      run.joint = std::move(in.joint);
      r.partition(in.training);
      break;
    case RegionInput::From::Graph: r.graph_through(std::move(in.graph), in.group); break;
  }
  return run;
}

}  // namespace kiln::pipeline
