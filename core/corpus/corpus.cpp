#include "core/corpus/corpus.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/io/safetensors.h"

namespace kiln {
namespace {
using json = nlohmann::json;

// 1-based line of a byte offset, so JSON errors point at the line.
int line_of(const std::string& text, size_t byte) {
  byte = std::min(byte, text.size());
  return 1 + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(byte), '\n'));
}

class CaseReader {
 public:
  CaseReader(const SafetensorsFile& tensors, std::string safetensors_path)
      : tensors_(tensors), safetensors_path_(std::move(safetensors_path)) {}

  Tensor tensor(const json& name) const {
    KILN_USER_CHECK(name.is_string(), "tensor name must be a string, got ", name.dump());
    const Tensor* t = tensors_.find(name.get<std::string>());
    KILN_USER_CHECK(t, "tensor '", name.get<std::string>(), "' is not in ", safetensors_path_);
    return *t;
  }

  Value argument(const json& a) const {
    KILN_USER_CHECK(a.is_object() && a.size() == 1, "an argument must be an object with one key, got ",
                    a.dump());
    const auto& [kind, v] = *a.items().begin();
    if (kind == "tensor") return Value(tensor(v));
    if (kind == "none") return Value();
    if (kind == "int") {
      KILN_USER_CHECK(v.is_number_integer(), "\"int\" argument is not an integer: ", v.dump());
      return Value(v.get<int64_t>());
    }
    if (kind == "float") {
      KILN_USER_CHECK(v.is_number() || v.is_string(), "\"float\" argument is not a number: ", v.dump());
      if (v.is_string()) return Value(special_float(v.get<std::string>()));
      return Value(v.get<double>());
    }
    if (kind == "bool") {
      KILN_USER_CHECK(v.is_boolean(), "\"bool\" argument is not a boolean: ", v.dump());
      return Value(v.get<bool>());
    }
    if (kind == "str") {
      KILN_USER_CHECK(v.is_string(), "\"str\" argument is not a string: ", v.dump());
      return Value(v.get<std::string>());
    }
    if (kind == "dtype") {
      KILN_USER_CHECK(v.is_string(), "\"dtype\" argument is not a string: ", v.dump());
      auto t = dtype_from_name(v.get<std::string>());
      KILN_USER_CHECK(t, "unknown dtype '", v.get<std::string>(), "'");
      return Value(*t);
    }
    if (kind == "list") {
      KILN_USER_CHECK(v.is_array(), "\"list\" argument is not an array: ", v.dump());
      ValueList items;
      for (const auto& e : v) items.push_back(argument(e));
      return Value(std::move(items));
    }
    KILN_FAIL("unknown argument kind '", kind, "'");
  }

  CorpusCase read_case(const json& c) const {
    KILN_USER_CHECK(c.is_object(), "a case must be an object");
    CorpusCase out;
    out.id = field<std::string>(c, "id");
    try {
      out.op = field<std::string>(c, "op");
      if (c.contains("tag") && c["tag"].is_string()) out.tag = c["tag"].get<std::string>();
      for (const auto& a : array(c, "args")) out.args.push_back(argument(a));
      if (c.contains("kwargs")) {
        KILN_USER_CHECK(c["kwargs"].is_object(), "\"kwargs\" must be an object");
        for (const auto& [k, v] : c["kwargs"].items()) out.kwargs.emplace_back(k, argument(v));
      }
      for (const auto& o : array(c, "outputs")) {
        KILN_USER_CHECK(o.is_object() && o.contains("tensor"), "an output must be {\"tensor\": name}");
        out.output_names.push_back(o["tensor"].get<std::string>());
        out.outputs.push_back(tensor(o["tensor"]));
      }
      if (c.contains("grad_outputs") && c["grad_outputs"].is_array())
        for (const auto& g : c["grad_outputs"]) out.grad_outputs.push_back(tensor(g));
      if (c.contains("grad_inputs") && c["grad_inputs"].is_object())
        for (const auto& [k, v] : c["grad_inputs"].items()) out.grad_inputs.emplace_back(k, tensor(v));
    } catch (const Error& e) {
      throw Error("case " + out.id + ": " + e.what());
    } catch (const json::exception& e) {
      throw Error("case " + out.id + ": " + e.what());
    }
    return out;
  }

 private:
  static double special_float(const std::string& s) {
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    KILN_FAIL("\"float\" argument is not a number: \"", s, "\"");
  }
  template <class T>
  static T field(const json& c, const char* key) {
    KILN_USER_CHECK(c.contains(key), "missing \"", key, "\"");
    try {
      return c[key].get<T>();
    } catch (const json::exception&) {
      KILN_FAIL("\"", key, "\" has the wrong type: ", c[key].dump());
    }
  }
  static const json& array(const json& c, const char* key) {
    KILN_USER_CHECK(c.contains(key) && c[key].is_array(), "missing or non-array \"", key, "\"");
    return c[key];
  }

  const SafetensorsFile& tensors_;
  std::string safetensors_path_;
};

// Lines where each case object starts: `{"id"` occurrences in order. Only a
// pointer for messages, so a heuristic scan is enough.
std::vector<int> case_lines(const std::string& text) {
  std::vector<int> lines;
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') ++line;
    if (text.compare(i, 5, "\"id\":") == 0) lines.push_back(line);
  }
  return lines;
}
}  // namespace

Expected<Corpus> load_corpus(const std::string& dir) {
  namespace fs = std::filesystem;
  std::string json_path = (fs::path(dir) / "ops.json").string();
  std::string st_path = (fs::path(dir) / "ops.safetensors").string();
  if (!fs::is_directory(dir)) return Status::error("corpus folder not found", {dir, 0});
  std::ifstream in(json_path, std::ios::binary);
  if (!in) return Status::error("cannot open ops.json", {json_path, 0});
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();

  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return Status::error(std::string("invalid JSON: ") + e.what(), {json_path, line_of(text, e.byte)});
  } catch (const json::exception& e) {  // out_of_range: a number too large for a double
    return Status::error(std::string("invalid JSON: ") + e.what(), {json_path, 0});
  }
  if (!doc.is_object() || !doc.contains("cases") || !doc["cases"].is_array())
    return Status::error("expected an object with a \"cases\" array", {json_path, 1});

  auto tensors = read_safetensors(st_path);
  if (!tensors) return tensors.status();

  Corpus corpus;
  corpus.dir = dir;
  if (doc.contains("torch_version") && doc["torch_version"].is_string())
    corpus.torch_version = doc["torch_version"].get<std::string>();
  std::vector<int> lines = case_lines(text);
  CaseReader reader(*tensors, st_path);
  size_t index = 0;
  for (const auto& c : doc["cases"]) {
    int line = index < lines.size() ? lines[index] : 0;
    try {
      corpus.cases.push_back(reader.read_case(c));
      corpus.cases.back().line = line;
    } catch (const Error& e) {
      return Status::error(e.what(), {json_path, line});
    }
    ++index;
  }
  return corpus;
}

}  // namespace kiln
