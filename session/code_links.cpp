#include "session/code_links.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/graph/graph.h"
#include "core/trace/trace.h"

namespace kiln::session {
namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = std::min(text.find('\n', pos), text.size());
    out.push_back(text.substr(pos, eol - pos));
    if (eol == text.size()) break;
    pos = eol + 1;
  }
  return out;
}

// Kiln's kernel functions in LLVM IR (`define ... @kiln_group3(` and
// `@kiln_group3_body(`) and CUDA C++ (`__global__ ... kiln_g3_relu(`): name ->
// (fusion group, its lines through the closing brace).
std::map<std::string, std::pair<int, trace::KernelSpan>> kiln_kernels(std::string_view code) {
  std::map<std::string, std::pair<int, trace::KernelSpan>> out;
  const std::vector<std::string_view> lines = lines_of(code);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const bool llvm = line.starts_with("define ");
    const bool cuda = line.find("__global__") != std::string_view::npos;
    if (!llvm && !cuda) continue;
    const std::string_view prefix = llvm ? "@kiln_group" : "kiln_g";
    size_t at = line.find(prefix);
    if (at == std::string_view::npos) continue;
    size_t digits = at + prefix.size(), end = digits;
    while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
    if (end == digits || (cuda && (end >= line.size() || line[end] != '_'))) continue;
    const int group = std::stoi(std::string(line.substr(digits, end - digits)));
    size_t name_end = end;
    while (name_end < line.size() && (std::isalnum(static_cast<unsigned char>(line[name_end])) || line[name_end] == '_')) ++name_end;
    const std::string name(line.substr(llvm ? at + 1 : at, name_end - (llvm ? at + 1 : at)));
    // The body: through the brace that closes it.
    int depth = 0;
    size_t last = i;
    bool opened = false;
    for (size_t k = i; k < lines.size(); ++k) {
      for (char c : lines[k]) {
        if (c == '{') ++depth, opened = true;
        if (c == '}') --depth;
      }
      last = k;
      if (opened && depth <= 0) break;
    }
    trace::KernelSpan span;
    span.def_first = int(i) + 1;
    span.def_last = int(last) + 1;
    out[name] = {group, span};
    i = last;
  }
  return out;
}

// The graph stage of `group` ("forward", "kiln backward") that the code
// generator read: the one with fusion groups.
int scheduled_stage(const SessionCompile& c, const std::string& group) {
  int found = -1;
  for (int i = 0; i < int(c.stages.size()); ++i) {
    const SessionStage& st = c.stages[size_t(i)];
    if (st.kind == StageKind::Graph && st.group == group && !st.fusion_groups.empty() && st.graph) found = i;
  }
  return found;
}

void kiln_links(const SessionCompile& c, std::vector<CodeLinkGroup>& out) {
  for (int i = 0; i < int(c.stages.size()); ++i) {
    const SessionStage& st = c.stages[size_t(i)];
    if (st.kind != StageKind::Code || (st.language != "llvm" && st.language != "cuda")) continue;
    const int graph_stage = scheduled_stage(c, st.group);
    if (graph_stage < 0) continue;
    const SessionStage& gs = c.stages[size_t(graph_stage)];
    CodeLinkGroup g;
    g.code_stage = i;
    g.graph_stage = graph_stage;
    for (auto& [name, found] : kiln_kernels(st.text)) {
      const auto& [group, span] = found;
      std::vector<std::string>& nodes = g.kernel_nodes[name];
      for (size_t n = 0; n < gs.fusion_groups.size() && n < gs.graph->size(); ++n)
        if (gs.fusion_groups[n] == group && (*gs.graph)[NodeId(n)].op == OpKind::CallFunction) nodes.push_back((*gs.graph)[NodeId(n)].name);
      for (const std::string& node : nodes) g.node_kernels[node].push_back(name);
      g.spans[name] = span;
    }
    if (!g.spans.empty()) out.push_back(std::move(g));
  }
}

void trace_links(const Session& s, const SessionCompile& c, std::vector<CodeLinkGroup>& out) {
  if (!s.trace) return;
  const trace::CompileEntry* e = s.trace->find(c.id);
  if (!e) return;
  auto mappings = trace::node_mappings(*s.trace, *e);
  if (!mappings) return;  // `kiln-cli trace provenance` says why; the links are an aid, not a verdict
  for (const trace::NodeMappings& m : *mappings) {
    std::vector<std::string> kernels;
    for (const auto& [k, nodes] : m.kernel_to_post) kernels.push_back(k);
    for (const std::string& code : {m.output_code, m.kernel_code}) {
      const int code_stage = code.empty() ? -1 : c.stage_index(code);
      if (code_stage < 0) continue;
      CodeLinkGroup g;
      g.code_stage = code_stage;
      g.graph_stage = m.post_grad_graph.empty() ? -1 : c.stage_index(m.post_grad_graph);
      g.pre_graph_stage = m.pre_grad_graph.empty() ? -1 : c.stage_index(m.pre_grad_graph);
      g.kernel_nodes = m.kernel_to_post;
      g.node_kernels = m.post_to_kernel;
      g.pre_to_post = m.pre_to_post;
      g.post_to_pre = m.post_to_pre;
      g.spans = trace::kernel_spans(c.stages[size_t(code_stage)].text, kernels);
      out.push_back(std::move(g));
    }
  }
}

void add_unique(std::vector<std::string>& to, const std::vector<std::string>& from) {
  for (const std::string& s : from)
    if (std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
}

}  // namespace

std::vector<CodeLinkGroup> code_links(const Session& s, const SessionCompile& c) {
  std::vector<CodeLinkGroup> out;
  trace_links(s, c, out);
  kiln_links(c, out);
  return out;
}

std::optional<CodeSpot> code_of_node(const std::vector<CodeLinkGroup>& links, int stage, const std::string& node, int preferred_code) {
  std::optional<CodeSpot> best;
  for (const CodeLinkGroup& g : links) {
    // The node's kernels: directly, or through the post-grad nodes a pre-grad node became.
    std::vector<std::string> kernels;
    if (stage == g.graph_stage) {
      if (auto it = g.node_kernels.find(node); it != g.node_kernels.end()) kernels = it->second;
    } else if (stage == g.pre_graph_stage) {
      if (auto post = g.pre_to_post.find(node); post != g.pre_to_post.end())
        for (const std::string& p : post->second)
          if (auto it = g.node_kernels.find(p); it != g.node_kernels.end()) add_unique(kernels, it->second);
    }
    CodeSpot spot;
    spot.code_stage = g.code_stage;
    for (const std::string& k : kernels) {
      auto span = g.spans.find(k);
      if (span == g.spans.end()) continue;
      const std::vector<int> lines = span->second.lines();
      if (lines.empty()) continue;
      spot.kernels.push_back(k);
      spot.lines.insert(spot.lines.end(), lines.begin(), lines.end());
    }
    if (spot.lines.empty()) continue;
    std::sort(spot.lines.begin(), spot.lines.end());
    spot.lines.erase(std::unique(spot.lines.begin(), spot.lines.end()), spot.lines.end());
    if (g.code_stage == preferred_code) return spot;
    if (!best) best = std::move(spot);
  }
  return best;
}

std::optional<NodeSpot> nodes_of_line(const std::vector<CodeLinkGroup>& links, int code_stage, int line, int shown_graph) {
  for (const CodeLinkGroup& g : links) {
    if (g.code_stage != code_stage) continue;
    const std::vector<std::string> kernels = trace::kernels_at(g.spans, line);
    if (kernels.empty()) continue;
    NodeSpot spot;
    spot.kernels = kernels;
    std::vector<std::string> post;
    for (const std::string& k : kernels)
      if (auto it = g.kernel_nodes.find(k); it != g.kernel_nodes.end()) add_unique(post, it->second);
    if (shown_graph >= 0 && shown_graph == g.pre_graph_stage) {
      spot.graph_stage = g.pre_graph_stage;
      for (const std::string& p : post)
        if (auto it = g.post_to_pre.find(p); it != g.post_to_pre.end()) add_unique(spot.nodes, it->second);
    } else {
      spot.graph_stage = g.graph_stage;
      spot.nodes = post;
    }
    return spot;
  }
  return std::nullopt;
}

}  // namespace kiln::session
