// read_repro: telling the formats apart, Kiln's own repro (folder or zip) and
// plain graph text files. PyTorch's minifier files are repro_read_torch.cpp.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compiler/passes/graph_editor.h"
#include "core/graph/annotation.h"
#include "core/graph/parser.h"
#include "core/io/safetensors.h"
#include "minifier/repro.h"
#include "minifier/repro_internal.h"
#include "minifier/repro_zip.h"

namespace kiln::minify {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string read_text_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("no such file", {path, 0});
  if (fs::is_directory(path, ec)) throw Error("is a folder, not a file", {path, 0});
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open the file", {path, 0});
  std::ostringstream ss;
  ss << f.rdbuf();
  return std::move(ss).str();
}

int line_containing(std::string_view text, std::string_view needle) {
  size_t at = text.find(needle);
  if (at == std::string_view::npos) return 0;
  return 1 + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n'));
}

namespace {

[[noreturn]] void rethrow(const Status& s) { throw Error(s.message(), s.where()); }

template <class T>
T value_or_throw(Expected<T> e) {
  if (!e) rethrow(e.status());
  return std::move(*e);
}

// The parts of a Kiln repro, from a folder or a zip; names are for messages.
struct KilnParts {
  std::string graph_text, graph_name;
  std::string inputs_bytes, inputs_name;
  std::optional<std::string> predicate_text;
  std::string predicate_name;
};

// The line of a placeholder in graph text: the def line, or with one
// parameter per line (expanded defs), the line that names it.
int placeholder_line(std::string_view text, const std::string& name) {
  int def = line_containing(text, "def forward(");
  if (def == 0) return 0;
  size_t pos = 0;
  for (int l = 1; l < def; ++l) pos = text.find('\n', pos) + 1;
  std::string_view rest = text.substr(pos);
  for (int l = def; !rest.empty() && l < def + 10000; ++l) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    size_t at = line.find(name);
    if (at != std::string_view::npos) {
      size_t after = at + name.size();
      bool ends = after == line.size() || line[after] == ':' || line[after] == ',' || line[after] == ')';
      bool starts = at == 0 || line[at - 1] == ' ' || line[at - 1] == '(';
      if (starts && ends) return l;
    }
    if (line.find("):") != std::string_view::npos) break;
    if (nl == std::string_view::npos) break;
    rest = rest.substr(nl + 1);
  }
  return def;
}

// JSON errors with the line and column of nlohmann's byte position.
json parse_json_located(const std::string& text, const std::string& name) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    size_t byte = e.byte == 0 ? 0 : std::min<size_t>(e.byte - 1, text.size());
    int line = 1 + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(byte), '\n'));
    size_t bol = text.rfind('\n', byte == 0 ? 0 : byte - 1);
    int column = int(byte - (bol == std::string::npos ? 0 : bol + 1)) + 1;
    std::string what = e.what();
    // nlohmann's message repeats its own "[json.exception.parse_error.101] parse error at line 1, column 2:".
    size_t colon = what.find(": ", what.find("parse error"));
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw Error("bad JSON: " + what, {name, line, column});
  }
}

std::vector<std::string> origins_from_metadata(const SafetensorsFile& file, size_t count, const std::string& name) {
  auto it = file.metadata.find(std::string(kOriginsKey));
  if (it == file.metadata.end()) return std::vector<std::string>(count, "stored");
  json j = parse_json_located(it->second, name + " (metadata '" + std::string(kOriginsKey) + "')");
  if (!j.is_array() || j.size() != count)
    throw Error("metadata '" + std::string(kOriginsKey) + "' must be an array of " + std::to_string(count) + " strings",
                {name, 0});
  std::vector<std::string> out;
  for (const json& item : j) {
    if (!item.is_string()) throw Error("metadata '" + std::string(kOriginsKey) + "' holds a non-string", {name, 0});
    out.push_back(item.get<std::string>());
  }
  return out;
}

// The stored tensor for a placeholder, checked against its annotation and
// laid out with the annotated strides (safetensors stores tensors contiguous).
Tensor input_for(const Node& p, const Tensor& stored, const KilnParts& parts) {
  std::optional<Tensor> meta = pipeline::meta_tensor_of(p.meta.val);
  if (!meta) return stored;
  if (meta->dtype() != stored.dtype() || meta->sizes() != stored.sizes())
    throw Error("tensor '" + p.name + "' is " + stored.type_str() + " but placeholder '" + p.name + "' (" +
                    parts.graph_name + ":" + std::to_string(placeholder_line(parts.graph_text, p.name)) + ") is " +
                    format_val(p.meta.val),
                {parts.inputs_name, 0});
  if (meta->strides() == stored.strides()) return stored;
  return plain_copy(stored, meta->strides());
}

Repro assemble_kiln(const KilnParts& parts, const std::string& path) {
  Repro r;
  r.path = path;
  r.graph = value_or_throw(parse_graph_module(parts.graph_text, parts.graph_name));
  auto bytes = std::as_bytes(std::span<const char>(parts.inputs_bytes.data(), parts.inputs_bytes.size()));
  SafetensorsFile file = value_or_throw(parse_safetensors(bytes, parts.inputs_name));
  size_t placeholders = count_nodes(r.graph, OpKind::Placeholder);
  std::vector<std::string> origins = origins_from_metadata(file, placeholders, parts.inputs_name);
  size_t k = 0;
  for (const Node& n : r.graph.nodes) {
    if (n.op != OpKind::Placeholder) continue;
    const Tensor* stored = file.find(n.name);
    if (!stored)
      throw Error("no tensor '" + n.name + "' for placeholder '" + n.name + "' (" + parts.graph_name + ":" +
                      std::to_string(placeholder_line(parts.graph_text, n.name)) + ")",
                  {parts.inputs_name, 0});
    r.inputs.push_back(input_for(n, *stored, parts));
    r.input_origins.push_back(origins[k++]);
  }
  if (file.tensors.size() != placeholders)
    throw Error("holds " + std::to_string(file.tensors.size()) + " tensors but the graph has " +
                    std::to_string(placeholders) + " placeholders",
                {parts.inputs_name, 0});
  if (parts.predicate_text) {
    json j = parse_json_located(*parts.predicate_text, parts.predicate_name);
    if (!j.is_object()) throw Error("must hold a JSON object ({\"check\": ...})", {parts.predicate_name, 1});
    // The text as written, less the newline the writer adds (round trips compare it).
    std::string text = *parts.predicate_text;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
    r.predicate_json = text;
  }
  propagate_meta_vals(r.graph, r.inputs);
  return r;
}

std::string read_binary_part(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec)) throw Error("missing: a Kiln repro folder holds " + p.filename().string(), {p.string(), 0});
  return read_text_file(p.string());
}

Repro read_kiln_folder(const std::string& dir) {
  fs::path d(dir);
  std::error_code ec;
  if (!fs::exists(d / kGraphFile, ec))
    throw Error("not a Kiln repro folder: no " + std::string(kGraphFile) + " in it", {dir, 0});
  KilnParts parts;
  parts.graph_name = (d / kGraphFile).string();
  parts.graph_text = read_binary_part(d / kGraphFile);
  parts.inputs_name = (d / kInputsFile).string();
  parts.inputs_bytes = read_binary_part(d / kInputsFile);
  parts.predicate_name = (d / kPredicateFile).string();
  if (fs::exists(d / kPredicateFile, ec)) parts.predicate_text = read_text_file(parts.predicate_name);
  return assemble_kiln(parts, dir);
}

// A zipped repro holds the files at its top or inside one folder (what
// `zip -r repro.zip repro/` makes).
Repro read_kiln_zip(const std::string& path) {
  ZipArchive zip = value_or_throw(ZipArchive::open(path));
  const ZipEntry* graph = nullptr;
  for (const ZipEntry& e : zip.entries()) {
    std::string_view name = e.name;
    bool match = name == kGraphFile || (name.size() > kGraphFile.size() && name.ends_with(kGraphFile) &&
                                        name[name.size() - kGraphFile.size() - 1] == '/');
    if (match && (!graph || e.name.size() < graph->name.size())) graph = &e;
  }
  if (!graph) throw Error("not a Kiln repro: the zip holds no " + std::string(kGraphFile), {path, 0});
  std::string prefix = graph->name.substr(0, graph->name.size() - kGraphFile.size());
  auto part = [&](std::string_view file, bool required) -> std::optional<std::string> {
    const ZipEntry* e = zip.find(prefix + std::string(file));
    if (!e) {
      if (required) throw Error("missing: the zip holds no " + prefix + std::string(file), {path, 0});
      return std::nullopt;
    }
    return value_or_throw(zip.read(*e));
  };
  KilnParts parts;
  parts.graph_name = path + "/" + prefix + std::string(kGraphFile);
  parts.graph_text = *part(kGraphFile, true);
  parts.inputs_name = path + "/" + prefix + std::string(kInputsFile);
  parts.inputs_bytes = *part(kInputsFile, true);
  parts.predicate_name = path + "/" + prefix + std::string(kPredicateFile);
  parts.predicate_text = part(kPredicateFile, false);
  return assemble_kiln(parts, path);
}

Repro read_graph_text(const std::string& path, const std::string& text) {
  Repro r;
  r.path = path;
  r.graph = value_or_throw(parse_graph_module(text, path));
  for (const Node& n : r.graph.nodes)
    if (n.op == OpKind::Placeholder && !pipeline::meta_tensor_of(n.meta.val))
      throw Error("placeholder '" + n.name +
                      "' has no tensor annotation with concrete sizes and a dtype Kiln knows (such as "
                      "\"f32[8, 64]\"), so no input can be made for it",
                  {path, placeholder_line(text, n.name)});
  r.inputs = value_or_throw(random_inputs(r.graph, kDefaultInputSeed, path));
  r.input_origins.assign(r.inputs.size(), random_origin(kDefaultInputSeed));
  propagate_meta_vals(r.graph, r.inputs);
  return r;
}

Repro read_any(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("no such file or folder", {path, 0});
  if (fs::is_directory(path, ec)) return read_kiln_folder(path);
  if (path.ends_with(".zip") || looks_like_zip(path)) return read_kiln_zip(path);
  std::string text = read_text_file(path);
  if (text.find("\nclass Repro(") != std::string::npos || text.starts_with("class Repro(")) return read_torch_minifier_file(path);
  return read_graph_text(path, text);
}

}  // namespace

Expected<Repro> read_repro(const std::string& path) {
  try {
    return read_any(path);
  } catch (const Error& e) {
    return e.to_status();
  }
}

}  // namespace kiln::minify
