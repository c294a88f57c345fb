#include "core/trace/provenance.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

#include "core/trace/text_util.h"

namespace kiln::trace {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// `name` as a whole identifier in `line` (triton_poi_fused_mul_1 is not in
// triton_poi_fused_mul_10).
bool names(std::string_view line, std::string_view name) {
  for (size_t at = line.find(name); at != std::string_view::npos; at = line.find(name, at + 1)) {
    const bool before = at > 0 && ident_char(line[at - 1]);
    const bool after = at + name.size() < line.size() && ident_char(line[at + name.size()]);
    if (!before && !after) return true;
  }
  return false;
}

bool comment(std::string_view line) {
  line = trim(line);
  return line.starts_with("#") || line.starts_with("//");
}

// {key: [name | {"name": name, ...}]} into `out`; false when it is not that shape.
bool read_map(const nlohmann::json& j, NodeMap& out) {
  if (!j.is_object()) return false;
  for (const auto& [key, targets] : j.items()) {
    if (!targets.is_array()) return false;
    std::vector<std::string>& to = out[key];
    // Logs that carry both the new and the older artifacts name the same pairs twice.
    auto add = [&](std::string name) {
      if (std::find(to.begin(), to.end(), name) == to.end()) to.push_back(std::move(name));
    };
    for (const nlohmann::json& t : targets) {
      if (t.is_string()) add(t.get<std::string>());
      else if (t.is_number_integer()) add(std::to_string(t.get<int64_t>()));  // newer logs name nodes by debug handle
      else if (t.is_object() && t.contains("name") && t["name"].is_string()) add(t["name"].get<std::string>());
    }
  }
  return true;
}

NodeMap inverse(const NodeMap& m) {
  NodeMap out;
  for (const auto& [from, tos] : m)
    for (const std::string& to : tos) {
      auto& v = out[to];
      if (std::find(v.begin(), v.end(), from) == v.end()) v.push_back(from);
    }
  return out;
}

// "triton_poi_fused_mul_1:2" -> "triton_poi_fused_mul_1"; names without a numeric handle unchanged.
std::string_view plain_name(std::string_view kernel) {
  const size_t colon = kernel.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == kernel.size()) return kernel;
  for (size_t i = colon + 1; i < kernel.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(kernel[i]))) return kernel;
  return kernel.substr(0, colon);
}

size_t indent_of(std::string_view line) { return line.find_first_not_of(" \t") == std::string_view::npos ? line.size() : line.find_first_not_of(" \t"); }

// A C++ function defined from line i: through the brace that closes its
// body; nullopt for a declaration (a ';' before any '{').
std::optional<size_t> cpp_body_end(const std::vector<std::string_view>& lines, size_t i) {
  int depth = 0;
  bool opened = false;
  for (size_t k = i; k < lines.size(); ++k) {
    for (char c : lines[k]) {
      if (c == ';' && !opened) return std::nullopt;
      if (c == '{') ++depth, opened = true;
      if (c == '}' && --depth == 0 && opened) return k;
    }
  }
  return opened ? std::optional<size_t>(lines.size() - 1) : std::nullopt;
}

// The definition of `name`: 0-based [first, last], or nullopt. Python:
// `NAME = async_compile...(...)` through the end of its source string, or
// `def NAME(`; C++: a `void NAME(` or AOTInductor's `void call_NAME(`
// launcher, with its body.
std::optional<std::pair<size_t, size_t>> definition(const std::vector<std::string_view>& lines, const std::vector<bool>& commented,
                                                    std::string_view name) {
  const std::string assigned = std::string(name) + " = async_compile.";
  const std::string py_def = "def " + std::string(name) + "(";
  const std::string cpp_def = "void " + std::string(name) + "(";
  const std::string cpp_launcher = "void call_" + std::string(name) + "(";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (commented[i]) continue;
    const std::string_view t = trim(lines[i]);
    if (t.starts_with(assigned)) {
      for (const char* quote : {"'''", "\"\"\""}) {
        const size_t open = lines[i].find(quote);
        if (open == std::string_view::npos) continue;
        if (lines[i].find(quote, open + 3) != std::string_view::npos) return std::pair(i, i);
        for (size_t k = i + 1; k < lines.size(); ++k)
          if (lines[k].find(quote) != std::string_view::npos) return std::pair(i, k);
        return std::pair(i, lines.size() - 1);
      }
      return std::pair(i, i);
    }
    if (t.starts_with(py_def)) {
      // The body: the lines indented deeper than the def.
      const size_t indent = indent_of(lines[i]);
      size_t last = i;
      for (size_t k = i + 1; k < lines.size(); ++k) {
        if (trim(lines[k]).empty()) continue;
        if (indent_of(lines[k]) <= indent) break;
        last = k;
      }
      return std::pair(i, last);
    }
    if (names(t, "void") && (t.find(cpp_def) != std::string_view::npos || t.find(cpp_launcher) != std::string_view::npos))
      if (auto end = cpp_body_end(lines, i)) return std::pair(i, *end);
  }
  return std::nullopt;
}

}  // namespace

std::vector<int> KernelSpan::lines() const {
  std::vector<int> out;
  for (int l = def_first; def_first > 0 && l <= def_last; ++l) out.push_back(l);
  out.insert(out.end(), launches.begin(), launches.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Expected<std::vector<NodeMappings>> node_mappings(const Trace& t, const CompileEntry& e) {
  // The graphs the mappings name: the post-grad graph the code was made from
  // (a cache hit logs inductor_post_grad_graph, a miss before_ and
  // after_post_grad_graph; older logs after_recompile_post_grad), and the
  // pre-grad graph as Dynamo handed it to Inductor (tlparse's choice too).
  // A TORCH_COMPILE_DEBUG folder names them by file: output_code.py, and
  // fx_graph_transformed.py, the graph after the post-grad passes.
  auto is_post = [](std::string_view b) {
    return b == "inductor_post_grad_graph" || b == "after_post_grad_graph" || b == "after_recompile_post_grad" ||
           b == "fx_graph_transformed";
  };
  const std::string_view pre_order[] = {"before_pre_grad_graph", "inductor_pre_grad_graph", "before_recompile_pre_grad", "after_pre_grad_graph"};
  std::vector<const Artifact*> tracking, kernels, post_to_pre, codes, kernel_codes, post_after;
  std::string pre_graph;
  size_t pre_rank = std::size(pre_order);
  for (const Artifact& a : e.artifacts) {
    if (a.base == "inductor_provenance_tracking_node_mappings") tracking.push_back(&a);
    else if (a.base == "inductor_triton_kernel_to_post_grad_nodes") kernels.push_back(&a);
    else if (a.base == "inductor_post_to_pre_grad_nodes") post_to_pre.push_back(&a);
    else if (a.base == "inductor_output_code" || a.base == "inductor_aot_wrapper_code" || a.base == "output_code") codes.push_back(&a);
    else if (a.base == "inductor_aot_kernel_code") kernel_codes.push_back(&a);
    else if (a.graph && is_post(a.base)) post_after.push_back(&a);
    for (size_t r = 0; a.graph && r < pre_rank; ++r)
      if (a.base == pre_order[r]) {
        pre_rank = r;
        pre_graph = a.name;
      }
  }
  const size_t groups = std::max({tracking.size(), kernels.size(), post_to_pre.size()});
  std::vector<NodeMappings> out;
  for (size_t k = 0; k < groups; ++k) {
    NodeMappings m;
    for (const std::vector<const Artifact*>* list : {&tracking, &kernels, &post_to_pre}) {
      if (k >= list->size()) continue;
      const Artifact& a = *(*list)[k];
      auto text = t.text(a.payload);
      if (!text) return text.status();
      const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
      const SourceLocation where{t.files[a.payload.file].path, a.line};
      bool ok = false;
      if (list == &tracking && j.is_object() && j.contains("preToPost")) {
        ok = read_map(j["preToPost"], m.pre_to_post);
        if (ok && j.contains("postToPre")) ok = read_map(j["postToPre"], m.post_to_pre);
        if (ok && j.contains("cppCodeToPost")) ok = read_map(j["cppCodeToPost"], m.kernel_to_post);
        if (ok && j.contains("postToCppCode")) ok = read_map(j["postToCppCode"], m.post_to_kernel);
      } else if (list == &kernels) {
        ok = read_map(j, m.kernel_to_post);
      } else {
        ok = read_map(j, m.post_to_pre);  // the older form: post-grad node -> its pre-grad nodes
      }
      if (!ok) return Status::error(a.base + " is not a JSON map of node names", where);
      m.source += (m.source.empty() ? "" : ", ") + a.name;
      if (!m.line) m.line = a.line;
    }
    // Each direction from the other where the log gave only one.
    if (m.pre_to_post.empty()) m.pre_to_post = inverse(m.post_to_pre);
    if (m.post_to_pre.empty()) m.post_to_pre = inverse(m.pre_to_post);
    if (m.post_to_kernel.empty()) m.post_to_kernel = inverse(m.kernel_to_post);
    if (m.kernel_to_post.empty()) m.kernel_to_post = inverse(m.post_to_kernel);
    if (k < codes.size()) m.output_code = codes[k]->name;
    if (k < kernel_codes.size()) m.kernel_code = kernel_codes[k]->name;
    if (k < post_after.size()) m.post_grad_graph = post_after[k]->name;
    m.pre_grad_graph = pre_graph;
    out.push_back(std::move(m));
  }
  return out;
}

std::map<std::string, KernelSpan> kernel_spans(std::string_view code, const std::vector<std::string>& kernels) {
  const std::vector<std::string_view> lines = split_lines(code);
  // Lines inside /* ... */: AOTInductor's C++ wrapper quotes each Triton
  // kernel's Python source in a block comment, defs and all.
  std::vector<bool> commented(lines.size(), false);
  bool open = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool starts_open = open;
    for (size_t at = 0; at < lines[i].size(); ++at) {
      if (!open && lines[i].compare(at, 2, "/*") == 0) open = true, ++at;
      else if (open && lines[i].compare(at, 2, "*/") == 0) open = false, ++at;
    }
    commented[i] = starts_open && open;
  }
  // A C++ wrapper declares and loads kernels before it runs them: only the
  // lines of run_impl launch (tlparse counts from there too).
  size_t first_launch = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("::run_impl(") != std::string_view::npos) {
      first_launch = i + 1;
      break;
    }
  std::map<std::string, KernelSpan> out;
  for (const std::string& kernel : kernels) {
    const std::string_view name = plain_name(kernel);
    KernelSpan span;
    const auto def = definition(lines, commented, name);
    if (def) {
      span.def_first = int(def->first) + 1;
      span.def_last = int(def->second) + 1;
    }
    auto launch = [&](size_t i) {
      if (i < first_launch || commented[i] || (def && i >= def->first && i <= def->second)) return false;
      return !comment(lines[i]) && (names(lines[i], name) || names(lines[i], "call_" + std::string(name)));
    };
    if (name.size() != kernel.size()) {
      // One launch of a kernel that runs several times: the one after its handle.
      for (size_t i = 0; i < lines.size() && span.launches.empty(); ++i) {
        if (lines[i].find(kernel) == std::string_view::npos) continue;
        for (size_t k = i + 1; k < lines.size(); ++k)
          if (launch(k)) {
            span.launches.push_back(int(k) + 1);
            break;
          }
      }
    }
    if (span.launches.empty())
      for (size_t i = 0; i < lines.size(); ++i)
        if (launch(i)) span.launches.push_back(int(i) + 1);
    out[kernel] = std::move(span);
  }
  return out;
}

std::vector<std::string> kernels_at(const std::map<std::string, KernelSpan>& spans, int line) {
  std::vector<std::string> out;
  for (const auto& [kernel, span] : spans)
    if ((span.def_first > 0 && line >= span.def_first && line <= span.def_last) ||
        std::find(span.launches.begin(), span.launches.end(), line) != span.launches.end())
      out.push_back(kernel);
  return out;
}

}  // namespace kiln::trace
