// `kiln-cli stages INPUT`: runs Kiln's pipeline and prints every stage (name,
// time, then the graph). INPUT is a program (each compiled region: the
// captured torch-level graph, its ATen lowering, the joint graph and its
// forward/backward partition with the saved tensors, then the graph passes on
// each), a graph file in print_readable form (the passes only) or a trace
// (stages_trace.cpp: each compile id's best ATen graph through the same steps).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "app/cli/program_limits.h"
#include "app/cli/commands.h"
#include "app/cli/stages.h"
#include "compiler/aot/joint.h"
#include "compiler/aot/partition.h"
#include "compiler/capture/capture.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/pipeline/to_aten.h"
#include "compiler/pipeline/training_split.h"
#include "compiler/runtime/compiled_graph.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/python/vm.h"
#include "core/trace/reader.h"

namespace kiln::cli {

bool wants_graph(const StagesOptions& o, const std::string& stage) {
  if (o.print_after_all || o.print_after.empty()) return true;
  return std::find(o.print_after.begin(), o.print_after.end(), stage) != o.print_after.end();
}

void print_stage(const StagesOptions& o, const std::string& prefix, const std::string& label, const std::string& name,
                 double seconds, const Graph* g, const std::string& note) {
  std::printf("=== %s%s  %.3f ms%s%s\n", prefix.c_str(), label.c_str(), seconds * 1e3, note.empty() ? "" : "  ", note.c_str());
  if (g && wants_graph(o, name)) std::printf("%s\n", print_graph_module(*g).c_str());
}

std::string describe_size(const Graph& g) {
  size_t ops = 0;
  for (const Node& n : g.nodes)
    ops += n.op == OpKind::CallFunction || n.op == OpKind::CallMethod || n.op == OpKind::CallModule;
  return std::to_string(g.size()) + " nodes, " + std::to_string(ops) + " ops";
}

// The code generator's stages (backend kiln): the loop IR before and after
// fusion, LLVM IR before and after optimization, the assembly. Their texts are
// long, so they print (and are kept) only when asked for by name or with
// --print-after-all; a program past kAutoCodegenKernels kernels gets its loop
// IR only unless --codegen always asks for the rest.
namespace {

bool asked_for(const StagesOptions& o, const std::string& stage) {
  return o.print_after_all || std::find(o.print_after.begin(), o.print_after.end(), stage) != o.print_after.end();
}

void print_codegen_stage(const StagesOptions& o, const std::string& prefix, const runtime::CodegenStage& s,
                         const runtime::CompileStats& st) {
  std::string note;
  if (s.name == "ir_post_fusion") note = std::to_string(st.kernels) + " kernels in " + std::to_string(st.groups) + " groups";
  if (s.name == "assembly") note = "object " + std::to_string(st.object_bytes) + " bytes";
  const bool asked = asked_for(o, s.name);
  if (asked) {
    std::string lines = std::to_string(std::count(s.text.begin(), s.text.end(), '\n')) + " lines";
    note = note.empty() ? lines : lines + ", " + note;
  }
  std::printf("=== %s%s  %.3f ms%s%s\n", prefix.c_str(), s.name.c_str(), s.ms, note.empty() ? "" : "  ", note.c_str());
  if (asked) std::printf("%s\n", s.text.c_str());
}

}  // namespace

bool print_codegen(const StagesOptions& o, const std::string& prefix, const pipeline::CompileResult& r) {
  auto failed = [&](const Status& st) {
    std::printf("=== %scodegen  %s: %s\n", prefix.c_str(), o.codegen_required ? "failed" : "not generated",
                st.message().c_str());
    return !o.codegen_required;
  };
  runtime::CompileOptions co;
  co.keep_text = false;
  for (const char* stage : {"ir_pre_fusion", "ir_post_fusion", "llvm_ir", "llvm_ir_optimized", "assembly"})
    co.keep_text |= asked_for(o, stage);
  co.use_cache = false;  // the times shown are the compiler's, not a cache lookup's
  bool machine_text_asked = false;
  for (const char* stage : {"llvm_ir", "llvm_ir_optimized", "assembly"}) machine_text_asked |= asked_for(o, stage);
  if (o.codegen != "always") {
    // Loop IR first: with auto, its kernel count decides; past it, machine
    // code is left out with the reason. (A program that gets machine code is
    // lowered and scheduled again by the compile below: under 500 kernels
    // that is small beside LLVM.)
    auto loops = runtime::schedule_loops(r.graph, co, r.constants.all());
    if (!loops) return failed(loops.status());
    const bool machine = o.codegen == "auto" && (machine_text_asked || loops->stats.kernels <= kAutoCodegenKernels);
    if (!machine) {
      for (const runtime::CodegenStage& s : loops->stages) print_codegen_stage(o, prefix, s, loops->stats);
      if (o.codegen == "never")
        std::printf("=== %smachine code  not generated (--codegen never)\n", prefix.c_str());
      else
        std::printf("=== %smachine code  not generated: %zu kernels (over %zu; LLVM takes about 10 ms a kernel): "
                    "--codegen always generates it\n",
                    prefix.c_str(), loops->stats.kernels, kAutoCodegenKernels);
      return true;
    }
  }
  auto code = runtime::CompiledGraph::compile(r.graph, co, r.constants.all());
  if (!code) return failed(code.status());
  for (const runtime::CodegenStage& s : (*code)->stages()) print_codegen_stage(o, prefix, s, (*code)->stats());
  return true;
}

bool run_passes(const StagesOptions& o, const std::string& prefix, Graph g, const std::string& where) {
  std::string before = describe_size(g);
  pipeline::Options options;
  options.instrumentation.stop_after = o.stop_after;
  pipeline::CompileResult r;
  // A graph from outside (a trace) may hold what the passes do not expect;
  // that is a failure of this graph, not of the whole command.
  try {
    r = pipeline::compile(std::move(g), options);
  } catch (const std::exception& e) {
    r.status = Status::error(e.what());
  }
  for (const pipeline::Stage& s : r.stages) {
    if (s.name == "input") continue;
    std::string note = s.changed ? s.summary : "unchanged";
    for (const std::string& p : s.problems) note += " [problem: " + p + "]";
    print_stage(o, prefix, s.name + " #" + std::to_string(s.application), s.name, s.seconds, s.changed ? s.graph.get() : nullptr, note);
  }
  if (r.stopped) std::printf("=== %sstopped after %d pass application(s)\n", prefix.c_str(), o.stop_after);
  if (!r.status.ok()) {
    std::printf("=== %spasses  failed: %s\n", prefix.c_str(), r.status.to_string().c_str());
    std::fprintf(stderr, "kiln-cli: stages: %s%s\n", where.empty() ? "" : (where + ": ").c_str(), r.status.to_string().c_str());
    return false;
  }
  std::printf("=== %sresult  %s (input %s)\n", prefix.c_str(), describe_size(r.graph).c_str(), before.c_str());
  return print_codegen(o, prefix, r);
}

namespace {

int stages_of_program(const StagesOptions& given) {
  StagesOptions o = given;
  o.codegen_required = true;
  py::VMOptions vo;
  vo.out = [](std::string_view) {};  // the program's own output is not a stage
  apply_limits(o.limits, o.input, false, vo);
  py::VM vm(vo);
  capture::install_capture(vm);
  int code = 0;
  Status st = vm.run_file(o.input, &code);
  if (code == kExitBadInput) {
    std::fprintf(stderr, "kiln-cli: %s\n", st.to_string().c_str());
    return kExitBadInput;
  }
  if (code != 0) std::fprintf(stderr, "kiln-cli: stages: the program stopped early (%s); showing what it compiled\n", st.to_string().c_str());
  bool ok = true;
  for (const auto& [id, region] : capture::compiled_regions(vm)) {
    if (region->op_count == 0) continue;
    std::string prefix = "[" + id + "] ";
    print_stage(o, prefix, "dynamo_output_graph", "dynamo_output_graph", 0, &region->graph, describe_size(region->graph));
    double secs = 0;
    Expected<Graph> aten = timed(secs, [&] { return pipeline::lower_to_aten(vm, *region); });
    if (!aten.ok()) {
      std::printf("=== %sto_aten  failed: %s\n", prefix.c_str(), aten.status().message().c_str());
      continue;
    }
    print_stage(o, prefix, "to_aten", "to_aten", secs, &*aten, describe_size(*aten));
    // Training: the joint graph, split into forward and backward; each then
    // goes through the graph passes. A region autodiff cannot take (inputs
    // that are not tensors, an op without a formula) goes on as inference.
    pipeline::TrainingSplit split = pipeline::split_for_training(
        *aten, pipeline::training_options_of(*region, *pipeline::partitioner_named(o.partitioner)));
    if (!split.inference_because.empty()) {
      std::printf("=== %saot_joint_graph  skipped: %s\n", prefix.c_str(), split.inference_because.c_str());
      ok &= run_passes(o, prefix, std::move(*aten));
      continue;
    }
    const aot::JointGraph& joint = split.joint;
    print_stage(o, prefix, "aot_joint_graph", "aot_joint_graph", split.joint_seconds, &joint.graph,
                describe_size(joint.graph) + ": " + std::to_string(joint.num_primals) + " primals, " +
                    std::to_string(joint.num_tangents) + " tangents");
    if (!split.partition_status.ok()) {
      std::printf("=== %spartition  failed: %s\n", prefix.c_str(), split.partition_status.message().c_str());
      std::fprintf(stderr, "kiln-cli: stages: [%s] partition: %s\n", id.c_str(), split.partition_status.message().c_str());
      ok = false;
      continue;
    }
    aot::Partition& part = split.partition;
    secs = split.partition_seconds;
    print_stage(o, prefix, "aot_forward_graph", "aot_forward_graph", secs, &part.forward,
                describe_size(part.forward) + ", " + o.partitioner + " partition, saves " + std::to_string(part.saved.size()) + " tensor(s), " +
                    std::to_string(part.saved_bytes) + " bytes");
    if (wants_graph(o, "aot_forward_graph")) std::printf("%s\n", aot::describe_saved(part).c_str());
    print_stage(o, prefix, "aot_backward_graph", "aot_backward_graph", 0, &part.backward,
                describe_size(part.backward) +
                    (part.recomputed.empty() ? "" : ", " + std::to_string(part.recomputed.size()) + " op(s) recomputed"));
    ok &= run_passes(o, prefix + "forward ", std::move(part.forward));
    ok &= run_passes(o, prefix + "backward ", std::move(part.backward));
  }
  return ok ? kExitOk : kExitFailures;
}

int stages_of_graph_file(const StagesOptions& o) {
  std::ifstream in(o.input);
  std::stringstream text;
  text << in.rdbuf();
  Expected<Graph> g = parse_graph_module(text.str(), o.input);
  if (!g.ok()) {
    std::fprintf(stderr, "kiln-cli: %s\n", g.status().to_string().c_str());
    return kExitBadInput;
  }
  print_stage(o, "", "input", "input", 0, &*g, "");
  return run_passes(o, "", std::move(*g)) ? kExitOk : kExitFailures;
}

// A folder is a TORCH_TRACE folder or a TORCH_COMPILE_DEBUG folder; a file is
// a program by its suffix, a TORCH_TRACE log by its name or first line, else
// a graph file.
int stages(const StagesOptions& o) {
  std::error_code ec;
  bool is_dir = std::filesystem::is_directory(o.input, ec);
  if (!is_dir && !std::filesystem::is_regular_file(o.input, ec)) {
    std::fprintf(stderr, "kiln-cli: %s: no such file\n", o.input.c_str());
    return kExitBadInput;
  }
  bool is_trace = is_dir || (!o.input.ends_with(".py") && trace::is_trace_log_file(o.input));
  if (!is_trace && (!o.compile_id.empty() || !o.stage.empty())) {
    std::fprintf(stderr, "kiln-cli: stages: --compile-id and --stage apply to a trace, and %s is not one\n", o.input.c_str());
    return kExitUsage;
  }
  int code = is_trace ? stages_of_trace(o) : o.input.ends_with(".py") ? stages_of_program(o) : stages_of_graph_file(o);
  std::fflush(stdout);
  return code;
}

}  // namespace

void add_stages_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<StagesOptions>();
  CLI::App* sub = app.add_subcommand("stages", "Run Kiln's pipeline and print every stage");
  sub->add_option("input", opts->input,
                  "a program (.py), a graph file (print_readable text), or a TORCH_TRACE log (file or folder) "
                  "or TORCH_COMPILE_DEBUG folder")
      ->required();
  sub->add_flag("--print-after-all", opts->print_after_all, "print the graph after every pass that changed it (the default)");
  sub->add_option("--print-after", opts->print_after, "print graphs only after these passes (repeatable)");
  sub->add_option("--stop-after", opts->stop_after, "run only the first N pass applications");
  sub->add_option("--partitioner", opts->partitioner, "how the joint graph is split: default (save what the backward reads) or min-cut")
      ->check(CLI::IsMember({"default", "min-cut"}));
  sub->add_option("--compile-id", opts->compile_id, "trace: only this compile id (\"0/0\", \"[0/1_1]\", a label \"0/0#2\")");
  sub->add_option("--stage", opts->stage,
                  "trace: start from this stage graph (default: aot_joint_graph, else aot_forward_graph and "
                  "aot_backward_graph, else aot_inference_graph)");
  sub->add_option("--codegen", opts->codegen,
                  "machine code (LLVM IR, assembly): auto (up to " + std::to_string(kAutoCodegenKernels) +
                      " kernels, or when a machine code stage is asked for by --print-after), always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  add_limit_options(sub, opts->limits);
  sub->callback([opts, &exit_code] { exit_code = stages(*opts); });
}

}  // namespace kiln::cli
