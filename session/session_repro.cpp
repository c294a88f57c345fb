// Kiln repros in the workbench: the minifier's result opens like a program's
// region, so its graph can be stepped through Kiln's passes, measured and
// minified again.
#include <chrono>
#include <filesystem>

#include "minifier/repro.h"
#include "session/session.h"
#include "session/session_internal.h"

#include "compiler/pipeline/run_region.h"

namespace kiln::session {

bool is_kiln_repro(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return std::filesystem::exists(std::filesystem::path(path) / "graph.txt", ec);
  return path.ends_with(".zip") && std::filesystem::is_regular_file(path, ec);
}

Expected<std::shared_ptr<Session>> load_kiln_repro(const std::string& path, const LoadOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  if (o.progress) o.progress(0.05, "reading " + path);
  Expected<minify::Repro> repro = minify::read_repro(path);
  if (!repro) return repro.status();
  std::shared_ptr<Session> s = new_session(Session::Kind::Program, path);
  // The repro is its own source: graph.txt, when the repro is a folder.
  const std::filesystem::path graph_file = std::filesystem::path(path) / "graph.txt";
  std::error_code ec;
  if (std::filesystem::is_regular_file(graph_file, ec)) {
    s->source_file = graph_file.string();
    s->source_text = read_text(s->source_file);
  }
  SessionCompile c;
  c.id = "repro";
  c.frame = "repro";
  c.function = "Repro.forward";
  c.file = s->source_file;
  if (!repro->predicate_json.empty()) c.status_note = "predicate: " + repro->predicate_json;
  SessionStage st;
  st.name = st.pass = "repro";
  st.graph = std::make_shared<const Graph>(repro->graph);
  st.summary = std::to_string(repro->inputs.size()) + " input(s)";
  st.nodes = int(repro->graph.size());
  st.ops = 0;
  for (const Node& n : repro->graph.nodes) st.ops += n.op == OpKind::CallFunction;
  c.stages.push_back(std::move(st));
  if (o.progress) o.progress(0.3, "compiling " + s->title);
  add_region_stages(c, pipeline::RegionInput::single(repro->graph), 0, o, {}, [&](double f, const std::string& what) {
    if (o.progress) o.progress(0.3 + 0.7 * f, "compiling " + s->title + ": " + what);
  });
  c.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s->compiles.push_back(std::move(c));
  s->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.progress) o.progress(1, "done");
  return s;
}

}  // namespace kiln::session
