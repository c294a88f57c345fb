// read_trace_stage: one stage graph of a trace as a repro. Traces hold no
// tensors, so inputs are drawn: from the payload's load_args when it has one
// (fx_graph_runnable is a whole repro.py, its forward unannotated), else from
// the placeholders' annotations, as for a graph text file.
#include "core/graph/parser.h"
#include "core/trace/reader.h"
#include "minifier/repro.h"
#include "minifier/repro_internal.h"

namespace kiln::minify {

namespace {

Repro read_stage(const std::string& path, const std::string& compile_id, const std::string& stage) {
  Expected<trace::Trace> t = trace::open_trace(path);
  if (!t) throw Error(t.status().message(), t.status().where());
  const trace::CompileEntry* e = t->find(compile_id);
  if (!e) {
    std::string ids;
    for (const trace::CompileEntry& entry : t->entries) ids += (ids.empty() ? "" : ", ") + entry.label;
    throw Error("no compile id '" + compile_id + "' (it has " + (ids.empty() ? "none" : ids) + ")", {path, 0});
  }
  const trace::Artifact* a = e->artifact(stage);
  if (!a) throw Error("compile id " + compile_id + " has no stage '" + stage + "'", {path, 0});
  // A repro.py or minifier_launcher.py opened as a trace: its one graph is
  // the Repro module, its inputs load_args (with the content store).
  if (t->kind == trace::TraceKind::Minifier) {
    Expected<Repro> r = read_repro(path);
    if (!r) throw Error(r.status().message(), r.status().where());
    return std::move(*r);
  }
  Expected<std::string> text = t->payload_text(*e, stage);
  if (!text) throw Error(text.status().message(), text.status().where());
  const std::string file = a->payload.file < t->files.size() ? t->files[a->payload.file].path : path;
  const int first_line = a->payload.first_line > 0 ? a->payload.first_line : 1;
  Expected<Graph> g = parse_graph_module(*text, file, first_line);
  if (!g) throw Error(g.status().message(), g.status().where());
  Repro r;
  if (text->find("def load_args(") != std::string::npos) {
    std::vector<trace::Diagnostic> diagnostics;
    std::vector<trace::ReproInput> inputs = trace::parse_load_args(*text, file, &diagnostics);
    for (const trace::Diagnostic& d : diagnostics) throw Error(d.message, {file, first_line - 1 + d.line});
    for (trace::ReproInput& in : inputs) in.line += first_line - 1;
    r = repro_from_torch_source(std::move(*g), inputs, *text, file, first_line);
  } else {
    r = repro_from_graph_text(std::move(*g), *text, file, first_line);
  }
  r.path = path;
  return r;
}

}  // namespace

Expected<Repro> read_trace_stage(const std::string& path, const std::string& compile_id, const std::string& stage) {
  try {
    return read_stage(path, compile_id, stage);
  } catch (const Error& e) {
    return e.to_status();
  }
}

}  // namespace kiln::minify
