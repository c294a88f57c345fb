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
#include "compiler/capture/capture.h"
#include "compiler/pipeline/run_region.h"
#include "core/graph/parser.h"
#include "core/graph/printer.h"
#include "core/python/vm.h"
#include "core/trace/reader.h"
#include "session/session.h"

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

namespace {

// Code stages (loop IR, LLVM IR, assembly, CUDA source) print their text only
// when asked for by name or with --print-after-all: they are long.
bool asked_for(const StagesOptions& o, const std::string& stage) {
  return o.print_after_all || std::find(o.print_after.begin(), o.print_after.end(), stage) != o.print_after.end();
}

}  // namespace

pipeline::RegionOptions region_options(const StagesOptions& o) {
  pipeline::RegionOptions ro;
  ro.instrumentation.stop_after = o.stop_after;
  using Codegen = pipeline::RegionOptions::Codegen;
  bool machine_text_asked = false;
  for (const char* stage : {"llvm_ir", "llvm_ir_optimized", "assembly"}) machine_text_asked |= asked_for(o, stage);
  ro.codegen = o.codegen == "never" ? Codegen::Loops : o.codegen == "always" || machine_text_asked ? Codegen::Machine : Codegen::Auto;
  ro.auto_kernels = kAutoCodegenKernels;
  for (const char* stage : {"ir_pre_fusion", "ir_post_fusion", "llvm_ir", "llvm_ir_optimized", "assembly"})
    ro.cpu.keep_text |= asked_for(o, stage);
  ro.cuda_source = true;  // as the workbench shows it
  ro.cpu.use_cache = false;   // the times shown are the compiler's, not a cache lookup's
  ro.gpu_training = o.target == "cuda" && pipeline::attention_fusion_for_training_enabled();
  return ro;
}

void StagePrinter::operator()(const pipeline::Stage& s) {
  using Outcome = pipeline::Stage::Outcome;
  const std::string label = s.label();
  const std::string head = "=== " + prefix_ + label;
  if (s.outcome == Outcome::Skipped) {
    if (s.name == "machine code" && o_.codegen == "never")
      std::printf("%s  not generated (--codegen never)\n", head.c_str());
    else if (s.name == "machine code")
      std::printf("%s  not generated: %s: --codegen always generates it\n", head.c_str(), s.summary.c_str());
    else
      std::printf("%s  skipped: %s\n", head.c_str(), s.summary.c_str());
    return;
  }
  if (s.outcome == Outcome::Failed) {
    // Code the dump's graph cannot get (symbolic sizes, ops Kiln lacks) is
    // said, not a failure, unless the input is a program.
    const bool code = s.name == "codegen" || s.name == "cuda_source";
    const bool failure = s.name == "partition" || s.name == "passes" || (s.name == "codegen" && o_.codegen_required);
    std::printf("%s  %s: %s\n", head.c_str(), code && !failure ? "not generated" : "failed", s.summary.c_str());
    if (failure) {
      std::fprintf(stderr, "kiln-cli: stages: %s%s: %s\n", where_.empty() ? "" : (where_ + ": ").c_str(),
                   (s.group.empty() ? s.name : s.group + " " + s.name).c_str(), s.summary.c_str());
      failed_ = true;
    }
    return;
  }
  if (s.kind == pipeline::StageKind::Code) {
    std::string note = s.summary;
    const bool asked = asked_for(o_, s.name);
    if (asked) {
      std::string lines = std::to_string(std::count(s.text.begin(), s.text.end(), '\n')) + " lines";
      note = note.empty() ? lines : lines + ", " + note;
    }
    std::printf("%s  %.3f ms%s%s\n", head.c_str(), s.seconds * 1e3, note.empty() ? "" : "  ", note.c_str());
    if (asked) std::printf("%s\n", s.text.c_str());
    return;
  }
  std::string note;
  if (s.application > 0) {
    note = s.changed ? s.summary : "unchanged";
    for (const std::string& p : s.problems) note += " [problem: " + p + "]";
  } else {
    note = s.graph ? describe_size(*s.graph) : "";
    if (!s.summary.empty()) note += (s.name == "aot_joint_graph" ? ": " : ", ") + s.summary;
  }
  if (extra_note) note += extra_note(s);
  print_stage(o_, prefix_, label, s.name, s.seconds, s.changed ? s.graph.get() : nullptr, note);
  if (s.name == "aot_forward_graph" && wants_graph(o_, s.name) && !s.text.empty()) std::printf("%s\n", s.text.c_str());
}

void StagePrinter::passes_done(const std::string& group, const std::string& input_size, const pipeline::CompileResult& after) {
  const std::string head = "=== " + prefix_ + (group.empty() ? "" : group + " ");
  if (after.stopped) std::printf("%sstopped after %d pass application(s)\n", head.c_str(), o_.stop_after);
  std::printf("%sresult  %s (input %s)\n", head.c_str(), describe_size(after.graph).c_str(), input_size.c_str());
}

bool print_region(const StagesOptions& o, const std::string& prefix, pipeline::RegionInput input, const std::string& where,
                  const std::function<std::string(const pipeline::Stage&)>& extra_note) {
  StagePrinter printer(o, prefix, where);
  printer.extra_note = extra_note;
  pipeline::RegionOptions ro = region_options(o);
  ro.passes_done = [&](const std::string& group, const std::string& input_size, const pipeline::CompileResult& after) {
    printer.passes_done(group, input_size, after);
  };
  pipeline::run_region(std::move(input), ro, [&](const pipeline::Stage& s) { printer(s); });
  return !printer.failed();
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
  const pipeline::Partitioner partitioner = *pipeline::partitioner_named(o.partitioner);
  for (const auto& [id, region] : capture::compiled_regions(vm)) {
    ok &= print_region(o, "[" + id + "] ", pipeline::RegionInput::captured(vm, *region, partitioner), "[" + id + "]");
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
  return print_region(o, "", pipeline::RegionInput::single(std::move(*g))) ? kExitOk : kExitFailures;
}

// A folder is a TORCH_TRACE folder or a TORCH_COMPILE_DEBUG folder; a file is
// a PyTorch minifier file by its `class Repro`, a program by its suffix, a
// TORCH_TRACE log by its name or first line, else a graph file.
int stages(const StagesOptions& o) {
  std::error_code ec;
  bool is_dir = std::filesystem::is_directory(o.input, ec);
  if (!is_dir && !std::filesystem::is_regular_file(o.input, ec)) {
    std::fprintf(stderr, "kiln-cli: %s: no such file\n", o.input.c_str());
    return kExitBadInput;
  }
  // A PyTorch minifier file (repro.py, minifier_launcher.py) is a dump too, as in the workbench.
  bool is_trace = is_dir || session::is_pytorch_repro_file(o.input) || (!o.input.ends_with(".py") && trace::is_trace_log_file(o.input));
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
  sub->add_option("--target", opts->target,
                  "cpu, or cuda: a region that trains does so as on the GPU (with KILN_FUSE_ATTENTION=1, attention "
                  "written out by hand fused before autodiff, stage fuse_attention)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  add_limit_options(sub, opts->limits);
  sub->callback([opts, &exit_code] { exit_code = stages(*opts); });
}

}  // namespace kiln::cli
