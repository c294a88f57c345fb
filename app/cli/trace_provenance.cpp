// `kiln-cli trace provenance TRACE --compile-id ID [--json]`: where each
// kernel of a compile's output code lies (its definition and launches, lines
// of the payload as `trace graph --stage inductor_output_code --raw` prints
// it) and which post-grad and pre-grad nodes it was made from, from the
// provenance Inductor logs (core/trace/provenance.h).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <set>

#include "app/cli/commands.h"
#include "core/trace/provenance.h"
#include "core/util/output_text.h"

namespace kiln::cli {
namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "-" : out;
}

// "3-40, 58": runs of consecutive lines folded.
std::string line_ranges(const std::vector<int>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size();) {
    size_t j = i;
    while (j + 1 < lines.size() && lines[j + 1] == lines[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(lines[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(lines[j]);
    }
    i = j + 1;
  }
  return out.empty() ? "-" : out;
}

// The pre-grad nodes of a set of post-grad nodes, each once, in order.
std::vector<std::string> pre_of(const trace::NodeMappings& m, const std::vector<std::string>& post) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& p : post)
    if (auto it = m.post_to_pre.find(p); it != m.post_to_pre.end())
      for (const std::string& pre : it->second)
        if (seen.insert(pre).second) out.push_back(pre);
  return out;
}

}  // namespace

int run_trace_provenance(const trace::Trace& t, const std::string& compile_id, bool json) {
  const trace::CompileEntry* e = t.find(compile_id);
  if (!e) {
    std::fprintf(stderr, "kiln-cli: %s: no compile id '%s'\n", t.path.c_str(), compile_id.c_str());
    return kExitBadInput;
  }
  auto mappings = trace::node_mappings(t, *e);
  if (!mappings) {
    std::fprintf(stderr, "kiln-cli: %s\n", mappings.status().to_string().c_str());
    return kExitBadInput;
  }
  if (mappings->empty()) {
    std::fprintf(stderr,
                 "kiln-cli: %s: [%s] logs no provenance (inductor_provenance_tracking_node_mappings, or the older "
                 "inductor_triton_kernel_to_post_grad_nodes); PyTorch logs it with TORCH_LOGS=+inductor_provenance or "
                 "config.trace.provenance_tracking_level=1\n",
                 t.path.c_str(), e->label.c_str());
    return kExitBadInput;
  }
  nlohmann::json groups = nlohmann::json::array();
  for (const trace::NodeMappings& m : *mappings) {
    std::vector<std::string> kernels;
    for (const auto& [k, nodes] : m.kernel_to_post) kernels.push_back(k);
    std::map<std::string, trace::KernelSpan> spans, defs;
    std::string code_note;
    if (!m.output_code.empty()) {
      if (auto code = t.payload_text(*e, m.output_code)) spans = trace::kernel_spans(*code, kernels);
      else code_note = code.status().to_string();
    }
    // AOTInductor writes the kernels apart from the wrapper that launches them.
    if (!m.kernel_code.empty()) {
      if (auto code = t.payload_text(*e, m.kernel_code)) defs = trace::kernel_spans(*code, kernels);
      else code_note = code.status().to_string();
    }
    if (!json) {
      std::printf("[%s] %s (log line %d): code %s%s%s, post-grad graph %s, pre-grad graph %s\n", e->label.c_str(), m.source.c_str(), m.line,
                  m.output_code.empty() ? "none logged" : m.output_code.c_str(), m.kernel_code.empty() ? "" : " and ", m.kernel_code.c_str(),
                  m.post_grad_graph.empty() ? "none" : m.post_grad_graph.c_str(),
                  m.pre_grad_graph.empty() ? "none" : m.pre_grad_graph.c_str());
      if (!code_note.empty()) std::printf("  the output code cannot be read: %s\n", code_note.c_str());
    }
    nlohmann::json jk = nlohmann::json::array();
    for (const std::string& k : kernels) {
      const std::vector<std::string>& post = m.kernel_to_post.at(k);
      const std::vector<std::string> pre = pre_of(m, post);
      const trace::KernelSpan* span = spans.count(k) ? &spans.at(k) : nullptr;
      const trace::KernelSpan* def = defs.count(k) && defs.at(k).def_first ? &defs.at(k) : nullptr;
      if (json) {
        nlohmann::json row = {{"kernel", k}, {"post_grad_nodes", post}, {"pre_grad_nodes", pre}};
        if (span) row.update({{"definition", span->def_first ? nlohmann::json({span->def_first, span->def_last}) : nlohmann::json(nullptr)},
                              {"launches", span->launches}});
        if (def) row["kernel_code_definition"] = {def->def_first, def->def_last};
        jk.push_back(std::move(row));
        continue;
      }
      std::string where = "-";
      if (span) {
        std::vector<int> def_lines;
        for (int l = span->def_first; span->def_first > 0 && l <= span->def_last; ++l) def_lines.push_back(l);
        where = def_lines.empty() ? std::string("no definition in it") : "definition " + line_ranges(def_lines);
        where += "; launches ";
        where += line_ranges(span->launches);
      }
      if (def) {
        where += "; defined in ";
        where += m.kernel_code;
        where += " at ";
        where += std::to_string(def->def_first);
        where += '-';
        where += std::to_string(def->def_last);
      }
      std::printf("  %s: %s\n    post-grad: %s\n    pre-grad: %s\n", k.c_str(), where.c_str(), joined(post).c_str(), joined(pre).c_str());
    }
    // Post-grad nodes in no kernel: views, inputs, or ops fused away.
    std::vector<std::string> unplaced;
    for (const auto& [post, pre] : m.post_to_pre)
      if (!m.post_to_kernel.count(post)) unplaced.push_back(post);
    if (json) {
      groups.push_back({{"source", m.source}, {"log_line", m.line}, {"output_code", m.output_code}, {"post_grad_graph", m.post_grad_graph},
                        {"pre_grad_graph", m.pre_grad_graph}, {"kernels", std::move(jk)}, {"post_grad_nodes_in_no_kernel", unplaced}});
    } else if (!unplaced.empty()) {
      std::printf("  post-grad nodes in no kernel: %s\n", joined(unplaced).c_str());
    }
  }
  if (json) std::cout << kiln::json_text(nlohmann::json{{"compile_id", e->label}, {"mappings", std::move(groups)}}, 1) << "\n";
  return kExitOk;
}

}  // namespace kiln::cli
