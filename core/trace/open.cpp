// open_trace: one entry point that tells the kinds of dump apart.
#include <filesystem>
#include <fstream>

#include "core/trace/reader.h"
#include "core/trace/text_util.h"

namespace kiln::trace {
namespace {

namespace fs = std::filesystem;

bool has_trace_logs(const fs::path& dir) {
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir, ec))
    if (de.path().extension() == ".log" && de.is_regular_file(ec) && is_trace_log_file(de.path().string())) return true;
  return false;
}

bool looks_like_debug_folder(const fs::path& dir) {
  std::error_code ec;
  auto is_run = [&](const fs::path& p) { return fs::is_directory(p / "torchinductor", ec) || fs::is_directory(p / "torchdynamo", ec); };
  if (is_run(dir) || fs::is_directory(dir / "torch_compile_debug", ec)) return true;
  for (const auto& de : fs::directory_iterator(dir, ec))
    if (de.is_directory(ec) && is_run(de.path())) return true;
  return false;
}

// The first 64 KiB say whether a file is Python source with a Repro class.
bool has_repro_class(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  return head.find("\nclass Repro(") != std::string::npos;
}

}  // namespace

Expected<Trace> open_trace(const std::string& path, const ReadOptions& options) {
  std::error_code ec;
  fs::path p(path);
  if (!fs::exists(p, ec)) return Status::error("no such file or folder", {path, 0});
  if (fs::is_directory(p, ec)) {
    if (has_trace_logs(p)) return read_trace_log(path, options);
    if (looks_like_debug_folder(p)) return read_compile_debug(path);
    for (const char* name : {"repro.py", "minifier_launcher.py"})
      if (fs::is_regular_file(p / name, ec)) return read_minifier_file((p / name).string());
    return Status::error(
        "cannot tell what this folder is: expected *.log files (TORCH_TRACE), a TORCH_COMPILE_DEBUG folder or a repro.py",
        {path, 0});
  }
  if (p.extension() == ".py" || has_repro_class(path)) return read_minifier_file(path);
  auto t = read_trace_log(path, options);
  if (!t) return t;
  // A file in which not one line is a record is something else altogether.
  if (t->records == 0 && !t->diagnostics.empty())
    return Status::error("not a TORCH_TRACE log: " + t->diagnostics.front().message, {path, t->diagnostics.front().line});
  return t;
}

}  // namespace kiln::trace
