// Reading back the repro.py that write_torch_repro writes: its load_args is
// Kiln's own (a table of inputs and a safetensors file beside the script),
// not PyTorch's InputReader form, so it has a reader of its own. The graph is
// the Repro module's forward as for PyTorch's files; the check, tolerance and
// seed come from the script's settings.
#include <filesystem>
#include <optional>
#include <regex>

#include <nlohmann/json.hpp>

#include "core/graph/parser.h"
#include "core/io/safetensors.h"
#include "minifier/predicate.h"
#include "minifier/repro.h"
#include "minifier/repro_internal.h"

namespace kiln::minify {

namespace fs = std::filesystem;

namespace {

struct Setting {
  std::string value;  // the text after `NAME = `, comment dropped
  int line = 0;
};

std::optional<Setting> setting(const std::string& source, const std::string& name) {
  const std::regex re("^" + name + R"( = ([^#\n]*))", std::regex::multiline);
  std::smatch m;
  if (!std::regex_search(source, m, re)) return std::nullopt;
  std::string v = m[1].str();
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return Setting{v, 1 + int(std::count(source.begin(), source.begin() + m.position(0), '\n'))};
}

// A Python string literal as the writer prints it ('x' or "x", no escapes needed for names).
std::optional<std::string> string_value(const std::string& v) {
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) return v.substr(1, v.size() - 2);
  return std::nullopt;
}

Shape int_tuple(const std::string& text, const std::string& file, int line) {
  Shape out;
  std::string item;
  auto flush = [&] {
    size_t b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos) return item.clear();
    std::string s = item.substr(b, e - b + 1);
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18)
      throw Error("'" + s + "' is not a size or stride", {file, line});
    out.push_back(std::stoll(s));
    item.clear();
  };
  for (char ch : text) {
    if (ch == ',') flush();
    else item += ch;
  }
  flush();
  return out;
}

struct InputSpec {
  std::string name;
  Shape sizes, strides;
  DType dtype = DType::Float32;
  int line = 0;
};

std::vector<InputSpec> input_table(const std::string& source, const std::string& file) {
  std::optional<Setting> start = setting(source, "INPUTS");
  if (!start || start->value != "[") throw Error("no `INPUTS = [` table of the inputs", {file, 0});
  static const std::regex row(R"(^\s*\((['"])(\w+)\1, \(([^)]*)\), \(([^)]*)\), torch\.(\w+)\),\s*$)");
  std::vector<InputSpec> out;
  size_t pos = 0;
  for (int l = 1; l < start->line; ++l) pos = source.find('\n', pos) + 1;
  pos = source.find('\n', pos);
  for (int line = start->line + 1; pos != std::string::npos; ++line) {
    size_t next = source.find('\n', pos + 1);
    std::string text = source.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    pos = next;
    if (text.starts_with("]")) return out;
    if (text.find_first_not_of(' ') == std::string::npos || text.find_first_not_of(' ') == text.find('#')) continue;
    std::smatch m;
    if (!std::regex_match(text, m, row))
      throw Error("cannot read this INPUTS row (expected ('name', (sizes), (strides), torch.dtype),): " + text,
                  {file, line});
    InputSpec in;
    in.name = m[2].str();
    in.sizes = int_tuple(m[3].str(), file, line);
    in.strides = int_tuple(m[4].str(), file, line);
    std::optional<DType> d = dtype_from_name(m[5].str());
    if (!d) throw Error("dtype torch." + m[5].str() + " is not one Kiln knows", {file, line});
    if (in.sizes.size() != in.strides.size())
      throw Error("input '" + in.name + "' has " + std::to_string(in.sizes.size()) + " sizes but " +
                      std::to_string(in.strides.size()) + " strides",
                  {file, line});
    in.dtype = *d;
    in.line = line;
    out.push_back(std::move(in));
  }
  throw Error("the INPUTS table is never closed with ]", {file, start->line});
}

std::vector<std::string> stored_origins(const SafetensorsFile& f, size_t count, const std::string& name) {
  auto it = f.metadata.find(std::string(kOriginsKey));
  if (it == f.metadata.end()) return std::vector<std::string>(count, "stored");
  nlohmann::json j = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array() || j.size() != count)
    throw Error("metadata '" + std::string(kOriginsKey) + "' must be an array of " + std::to_string(count) + " strings",
                {name, 0});
  std::vector<std::string> out;
  for (const nlohmann::json& o : j) out.push_back(o.is_string() ? o.get<std::string>() : "stored");
  return out;
}

}  // namespace

bool is_kiln_torch_repro(const std::string& source) {
  return source.find("\ndef load_args():") != std::string::npos && source.find("\nINPUTS = [") != std::string::npos;
}

Repro read_kiln_torch_repro(const std::string& path, const std::string& source) {
  Expected<Graph> g = parse_graph_module(source, path);
  if (!g) throw Error(g.status().message(), g.status().where());
  Repro r;
  r.path = path;
  r.graph = std::move(*g);
  r.graph_file = path;
  r.node_lines = node_lines_of(source);
  check_aten_graph(r);

  std::vector<InputSpec> specs = input_table(source, path);
  std::vector<const Node*> placeholders;
  for (const Node& n : r.graph.nodes)
    if (n.op == OpKind::Placeholder) placeholders.push_back(&n);
  if (specs.size() != placeholders.size())
    throw Error("forward() takes " + std::to_string(placeholders.size()) + " inputs but INPUTS lists " +
                    std::to_string(specs.size()),
                {path, setting(source, "INPUTS")->line});
  for (size_t k = 0; k < specs.size(); ++k)
    if (specs[k].name != placeholders[k]->name)
      throw Error("INPUTS row " + std::to_string(k) + " is '" + specs[k].name + "' but forward()'s argument is '" +
                      placeholders[k]->name + "'",
                  {path, specs[k].line});

  uint64_t seed = kDefaultInputSeed;
  if (std::optional<Setting> s = setting(source, "SEED")) {
    if (s->value.empty() || s->value.find_first_not_of("0123456789") != std::string::npos || s->value.size() > 18)
      throw Error("SEED must be a non-negative integer, not '" + s->value + "'", {path, s->line});
    seed = std::stoull(s->value);
  }
  std::string inputs_name = fs::path(path).stem().string() + ".safetensors";
  if (std::optional<Setting> s = setting(source, "INPUTS_FILE")) {
    std::optional<std::string> v = string_value(s->value);
    if (!v || v->empty() || v->find('/') != std::string::npos)
      throw Error("INPUTS_FILE must name a file beside the script, not " + s->value, {path, s->line});
    inputs_name = *v;
  }
  const fs::path inputs_path = fs::path(path).parent_path() / inputs_name;
  std::error_code ec;
  if (fs::exists(inputs_path, ec)) {
    const std::string bytes = read_text_file(inputs_path.string());
    Expected<SafetensorsFile> file =
        parse_safetensors(std::as_bytes(std::span<const char>(bytes.data(), bytes.size())), inputs_path.string());
    if (!file) throw Error(file.status().message(), file.status().where());
    r.input_origins = stored_origins(*file, specs.size(), inputs_path.string());
    for (const InputSpec& in : specs) {
      const Tensor* t = file->find(in.name);
      if (!t) throw Error("no tensor '" + in.name + "' (" + path + ":" + std::to_string(in.line) + ")", {inputs_path.string(), 0});
      if (t->dtype() != in.dtype || t->sizes() != in.sizes)
        throw Error("tensor '" + in.name + "' is " + t->type_str() + " but INPUTS (" + path + ":" +
                        std::to_string(in.line) + ") says " + std::string(dtype_name(in.dtype)) + " " + shape_str(in.sizes),
                    {inputs_path.string(), 0});
      r.inputs.push_back(plain_copy(*t, in.strides));
    }
  } else {
    // As the script regenerates them: torch.manual_seed(SEED), then rand_strided in order.
    CpuGenerator gen(seed);
    for (const InputSpec& in : specs) {
      r.inputs.push_back(rand_strided(in.sizes, in.strides, in.dtype, gen));
      r.input_origins.push_back(random_origin(seed));
    }
  }

  if (std::optional<Setting> check = setting(source, "CHECK")) {
    std::optional<std::string> name = string_value(check->value);
    Expected<CheckKind> kind = name ? check_from_name(*name) : Expected<CheckKind>(Status::error(""));
    // An oracle's repro.py names no oracle command: `repro run` then needs --check.
    if (kind && *kind != CheckKind::Oracle) {
      PredicateOptions p;
      p.kind = *kind;
      if (std::optional<Setting> tol = setting(source, "TOLERANCE")) {
        char* end = nullptr;
        double v = std::strtod(tol->value.c_str(), &end);
        if (tol->value.empty() || *end != '\0' || !(v >= 0))
          throw Error("TOLERANCE must be a number >= 0, not '" + tol->value + "'", {path, tol->line});
        p.tolerance = v;
      }
      if (std::optional<Setting> nf = setting(source, "CHECK_NON_FLOAT")) p.check_non_float = nf->value == "True";
      r.predicate_json = predicate_to_json(p);
    }
  }
  propagate_meta_vals(r.graph, r.inputs);
  return r;
}

}  // namespace kiln::minify
