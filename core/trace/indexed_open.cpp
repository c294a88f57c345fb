#include "core/trace/indexed_open.h"

#include <filesystem>

#include "core/trace/index_codec.h"
#include "core/trace/reader.h"

namespace kiln::trace {
namespace {

std::string_view kind_key(TraceKind k) {
  switch (k) {
    case TraceKind::TraceLog: return "torch_trace";
    case TraceKind::CompileDebug: return "compile_debug";
    case TraceKind::Minifier: return "minifier";
  }
  return "";
}

}  // namespace

Expected<Trace> open_trace_cached(const std::string& path, Workspace* ws, bool* from_store) {
  if (from_store) *from_store = false;
  if (!ws) return open_trace(path);
  std::error_code ec;
  // Keyed by absolute path so "./x.log" and "/abs/x.log" share one index.
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) absolute = path;
  std::string key = absolute.lexically_normal().string();
  auto stamp = stamp_of(path);
  if (!stamp) return open_trace(path);  // let the reader word the error
  if (auto stored = ws->find_index(key, *stamp); stored && *stored) {
    auto t = decode_index((*stored)->blob);
    if (t) {
      t->path = path;
      if (from_store) *from_store = true;
      return t;
    }
  }
  // Read through an absolute path (spelled as given when it already is one),
  // so the stored file paths still lead to the payloads when the index is
  // reopened from another working directory.
  auto t = open_trace(absolute.string());
  if (!t) return t;
  StoredIndex index{key, *stamp, std::string(kind_key(t->kind)), encode_index(*t)};
  (void)ws->transaction([&] { return ws->put_index(index); });
  t->path = path;
  return t;
}

}  // namespace kiln::trace
