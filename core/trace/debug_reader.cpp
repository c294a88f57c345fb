// TORCH_COMPILE_DEBUG folders: torch_compile_debug/run_<time>-pid_<pid>/
// holds torchdynamo/ and torchinductor/, and torchinductor/ has one folder per
// graph Inductor compiled, named <model>__<aot id>_<inference|forward|backward>_<n>.<m>.
// The forward and backward graphs of one AOT compile share the aot id, and
// AOT ids count compiled Dynamo graphs in order, so one aot id is one entry.
#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

#include "core/trace/file_data.h"
#include "core/trace/reader.h"
#include "core/trace/text_util.h"

namespace kiln::trace {
namespace {

namespace fs = std::filesystem;

bool is_run_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p / "torchinductor", ec) || fs::is_directory(p / "torchdynamo", ec);
}

std::vector<fs::path> sorted_subdirs(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir, ec))
    if (de.is_directory(ec)) out.push_back(de.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The run folders under `path`: itself, its run_* children, or those of its torch_compile_debug child.
std::vector<fs::path> find_runs(const fs::path& path) {
  if (is_run_dir(path)) return {path};
  std::vector<fs::path> runs;
  for (const fs::path& sub : sorted_subdirs(path))
    if (is_run_dir(sub)) runs.push_back(sub);
  std::error_code ec;
  if (runs.empty() && fs::is_directory(path / "torch_compile_debug", ec)) return find_runs(path / "torch_compile_debug");
  return runs;
}

struct GraphDir {
  fs::path path;
  std::string model;
  int64_t aot_id = 0;
  int kind_order = 0;  // inference and forward before backward
  std::string kind;
};

// The files of one graph folder, in pipeline order; the rest follow by name.
constexpr std::string_view kStageFiles[] = {"fx_graph_readable.py", "fx_graph_transformed.py", "ir_pre_fusion.txt",
                                            "ir_post_fusion.txt", "output_code.py"};

int count_lines(std::string_view s) { return int(std::count(s.begin(), s.end(), '\n')) + (!s.empty() && s.back() != '\n'); }

Status add_file_artifact(Trace& t, CompileEntry& e, const fs::path& file, const std::string& kind) {
  auto data = FileData::map(file.string());
  if (!data) return data.status();
  std::string_view text = (*data)->text();
  uint32_t index = uint32_t(t.files.size());
  t.files.push_back({file.string(), uint64_t(text.size()), std::nullopt});
  t.keep_file_data(index, *data);
  t.bytes += text.size();
  std::string base = file.stem().string();
  if (file.filename() == "fx_graph_runnable.py") {
    // The graph is the Repro class; its load_args gives the inputs.
    if (add_repro(t, e, index, text, base)) {
      e.artifacts.back().tag = kind;
      return {};
    }
  }
  int same = 0;
  for (const Artifact& a : e.artifacts) same += a.base == base;
  Artifact a;
  a.base = base;
  a.name = same == 0 ? base : base + "#" + std::to_string(same + 1);
  a.tag = kind;
  a.line = 1;
  a.payload = {index, 0, uint64_t(text.size()), 1, count_lines(text), PayloadEncoding::Plain};
  a.graph = looks_like_fx_graph(text.substr(0, 16384));
  e.artifacts.push_back(std::move(a));
  return {};
}

Status read_graph_dir(Trace& t, CompileEntry& e, const GraphDir& g) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(g.path, ec))
    if (de.is_regular_file(ec) && de.file_size(ec) > 0) files.push_back(de.path());
  auto rank = [](const fs::path& p) {
    for (size_t i = 0; i < std::size(kStageFiles); ++i)
      if (p.filename() == kStageFiles[i]) return int(i);
    return int(std::size(kStageFiles));
  };
  std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    return std::pair(rank(a), a.filename().string()) < std::pair(rank(b), b.filename().string());
  });
  for (const fs::path& f : files) {
    Status s = add_file_artifact(t, e, f, g.kind);
    if (!s.ok()) return s;
  }
  return {};
}

Status read_run(Trace& t, const fs::path& run) {
  static const std::regex kGraphDir(R"(^(.+)__(\d+)_([a-z]+)_\d+\.\d+$)");
  std::vector<GraphDir> dirs;
  for (const fs::path& sub : sorted_subdirs(run / "torchinductor")) {
    std::smatch m;
    std::string name = sub.filename().string();
    if (!std::regex_match(name, m, kGraphDir)) continue;
    GraphDir g{sub, m[1].str(), std::stoll(m[2].str()), m[3].str() == "backward" ? 1 : 0, m[3].str()};
    dirs.push_back(std::move(g));
  }
  std::sort(dirs.begin(), dirs.end(), [](const GraphDir& a, const GraphDir& b) {
    return std::tie(a.model, a.aot_id, a.kind_order, a.path) < std::tie(b.model, b.aot_id, b.kind_order, b.path);
  });
  for (size_t i = 0; i < dirs.size();) {
    CompileEntry e;
    e.label = dirs[i].model + "__" + std::to_string(dirs[i].aot_id);
    e.file = uint32_t(t.files.size());
    e.first_line = 1;
    size_t j = i;
    for (; j < dirs.size() && dirs[j].model == dirs[i].model && dirs[j].aot_id == dirs[i].aot_id; ++j) {
      Status s = read_graph_dir(t, e, dirs[j]);
      if (!s.ok()) return s;
    }
    t.entries.push_back(std::move(e));
    i = j;
  }
  return {};
}

}  // namespace

Expected<Trace> read_compile_debug(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return Status::error("not a folder", {path, 0});
  std::vector<fs::path> runs = find_runs(path);
  if (runs.empty())
    return Status::error("not a TORCH_COMPILE_DEBUG folder: no run folder with torchinductor/ or torchdynamo/ in it", {path, 0});
  Trace t;
  t.kind = TraceKind::CompileDebug;
  t.path = path;
  for (const fs::path& run : runs) {
    Status s = read_run(t, run);
    if (!s.ok()) return s;
  }
  assign_labels(t);
  return t;
}

}  // namespace kiln::trace
