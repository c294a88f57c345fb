// read_repro: telling the formats apart, Kiln's own repro (folder or zip) and
// plain graph text files. PyTorch's minifier files are repro_read_torch.cpp.
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compiler/capture/graph_region.h"
#include "compiler/passes/graph_editor.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/to_aten.h"
#include "core/ops/registry.h"
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

}  // namespace

std::map<std::string, int> node_lines_of(std::string_view text, int first_line) {
  std::map<std::string, int> out;
  int line = first_line;
  for (size_t pos = 0; pos < text.size(); ++line) {
    size_t nl = text.find('\n', pos);
    std::string_view l = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    size_t b = l.find_first_not_of(' ');
    if (b == std::string_view::npos || !(std::isalpha(uint8_t(l[b])) || l[b] == '_')) continue;
    size_t e = b;
    while (e < l.size() && (std::isalnum(uint8_t(l[e])) || l[e] == '_')) ++e;
    std::string_view rest = l.substr(e);
    if (rest.starts_with(": ") || rest.starts_with(" = ")) out.emplace(std::string(l.substr(b, e - b)), line);
  }
  return out;
}

namespace {

constexpr const char* kWhatMinifies =
    ": the minifier replays ATen graphs (torch.ops.aten.* calls), such as a trace's aot_forward_graph or "
    "inductor_post_grad_graph, or PyTorch's repro.py; this looks like a Dynamo graph (dynamo_output_graph)";

}  // namespace

void check_aten_graph(const Repro& r) {
  for (const Node& n : r.graph.nodes) {
    std::string what;
    switch (n.op) {
      case OpKind::CallMethod: what = "calls the method ." + n.target + "()"; break;
      case OpKind::CallModule: what = "calls the module '" + n.target + "'"; break;
      case OpKind::GetAttr: what = "reads the attribute '" + n.target + "'"; break;
      case OpKind::CallFunction:
        if (n.target != "operator.getitem" && n.target.find("::") == std::string::npos) what = "calls " + n.target;
        break;
      default: break;
    }
    if (what.empty()) continue;
    auto it = r.node_lines.find(n.name);
    throw Error("node '" + n.name + "' " + what + ", not an ATen op" + kWhatMinifies,
                {r.graph_file.empty() ? r.path : r.graph_file, it == r.node_lines.end() ? 0 : it->second});
  }
}

Status check_runs_in_kiln(const Graph& g, const Repro& source) {
  for (const Node& n : g.nodes) {
    if (n.op != OpKind::CallFunction || n.target == "operator.getitem" || op_registry().find(n.target) ||
        pipeline::inplace_functional_twin(n.target) || pipeline::is_out_overload(n.target))
      continue;
    auto it = source.node_lines.find(n.name);
    return Status::error("node '" + n.name + "' calls " + n.target +
                             ", an op Kiln's registry does not have, so Kiln cannot run the graph for a reference "
                             "(only --check oracle, which runs real PyTorch, can minify it)",
                         {source.graph_file.empty() ? source.path : source.graph_file,
                          it == source.node_lines.end() ? 0 : it->second});
  }
  return Status();
}

Status annotate_read(Candidate& c, const Repro& source) {
  std::string node;
  Status s = annotate(c, &node);
  if (s) return s;
  auto it = source.node_lines.find(node);
  return Status::error(s.message(), {source.graph_file.empty() ? source.path : source.graph_file,
                                     it == source.node_lines.end() ? 0 : it->second});
}

Expected<Candidate> candidate_of(const Repro& r, bool runs_in_kiln) {
  Candidate c{r.graph, r.inputs};
  if (Status s = annotate_read(c, r); !s) return s;
  if (runs_in_kiln)
    if (Status s = check_runs_in_kiln(c.graph, r); !s) return s;
  return c;
}

// A torch-level graph (an after-dynamo repro's forward, a trace's Dynamo
// graph: torch functions, methods, operators) is lowered as Kiln lowers a
// graph it captured itself, running once on the inputs while the torch
// bindings report their ATen ops. Each ATen node keeps the line of the
// torch-level node it came from.
void lower_torch_level(Repro& r) {
  Expected<Graph> aten = pipeline::lower_torch_graph(r.graph, r.inputs);
  if (!aten) {
    const std::string& message = aten.status().message();
    int line = 0;
    if (message.starts_with("node '")) {
      auto it = r.node_lines.find(message.substr(6, message.find('\'', 6) - 6));
      if (it != r.node_lines.end()) line = it->second;
    }
    throw Error("a torch-level graph that Kiln cannot lower to ATen: " + message, {r.graph_file, line});
  }
  r.node_lines = lowered_node_lines(*aten, r.node_lines);
  r.graph = std::move(*aten);
  r.lowered_from_torch = true;
}

std::map<std::string, int> lowered_node_lines(const Graph& aten, const std::map<std::string, int>& torch_lines) {
  std::map<std::string, int> lines;
  for (const Node& n : aten.nodes) {
    auto it = n.meta.from.empty() ? torch_lines.end() : torch_lines.find(n.meta.from.front());
    if (it == torch_lines.end()) it = torch_lines.find(n.name);
    if (it != torch_lines.end()) lines.emplace(n.name, it->second);
  }
  return lines;
}

Repro repro_of_graph(Graph g, std::string_view text, const std::string& file, int first_line) {
  Repro r;
  r.path = file;
  r.graph = std::move(g);
  r.graph_file = file;
  r.node_lines = node_lines_of(text, first_line);
  if (!capture::is_torch_level(r.graph)) check_aten_graph(r);  // else lowered once it has inputs
  return r;
}

Repro repro_from_graph_text(Graph g, std::string_view text, const std::string& file, int first_line) {
  Repro r = repro_of_graph(std::move(g), text, file, first_line);
  for (const Node& n : r.graph.nodes) {
    if (n.op != OpKind::Placeholder || pipeline::meta_tensor_of(n.meta.val)) continue;
    const int line = first_line - 1 + placeholder_line(text, n.name);
    if (n.meta.val.kind == Val::Kind::Sym || n.meta.val.kind == Val::Kind::Scalar)
      throw Error("placeholder '" + n.name + "' is a number (" + format_val(n.meta.val) +
                      "), not a tensor: Kiln replays graphs with concrete shapes and tensor inputs only "
                      "(this one was captured with dynamic shapes)",
                  {file, line});
    if (n.meta.val.is_tensor())
      throw Error("placeholder '" + n.name + "' is " + format_val(n.meta.val) +
                      ": symbolic sizes or a dtype Kiln does not know; Kiln replays concrete shapes only, so no "
                      "input can be made for it",
                  {file, line});
    throw Error("placeholder '" + n.name +
                    "' has no tensor annotation with concrete sizes and a dtype Kiln knows (such as "
                    "\"f32[8, 64]\"), so no input can be made for it",
                {file, line});
  }
  r.inputs = value_or_throw(random_inputs(r.graph, kDefaultInputSeed, file));
  r.input_origins.assign(r.inputs.size(), random_origin(kDefaultInputSeed));
  if (capture::is_torch_level(r.graph)) {
    lower_torch_level(r);
    check_aten_graph(r);
  }
  propagate_meta_vals(r.graph, r.inputs);
  return r;
}

namespace {

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
  r.graph_file = parts.graph_name;
  r.node_lines = node_lines_of(parts.graph_text);
  check_aten_graph(r);
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

Repro read_any(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("no such file or folder", {path, 0});
  if (fs::is_directory(path, ec)) return read_kiln_folder(path);
  if (path.ends_with(".zip") || looks_like_zip(path)) return read_kiln_zip(path);
  std::string text = read_text_file(path);
  if (text.find("\nclass Repro(") != std::string::npos || text.starts_with("class Repro(")) {
    if (is_kiln_torch_repro(text)) return read_kiln_torch_repro(path, text);
    return read_torch_minifier_file(path);
  }
  // AOTInductor's minifier files hold no graph: they load an exported program.
  if (const int load = line_containing(text, "torch.export.load("); load > 0)
    throw Error("an AOTInductor repro: its graph is the exported program torch.export.load reads (a .pt2 archive, not "
                "in this file); Kiln reads the TORCH_TRACE log of the run that exported it instead",
                {path, load});
  Repro r = repro_from_graph_text(value_or_throw(parse_graph_module(text, path)), text, path);
  r.path = path;
  return r;
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
