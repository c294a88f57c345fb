#pragma once
// Links between a compile's graph nodes and the lines of its generated code,
// both ways: which lines a node went into, which nodes a line was made from.
// For a dump, from the provenance Inductor logs (core/trace/provenance.h):
// post-grad nodes to kernels, pre-grad nodes through their post-grad ones.
// For Kiln's own pipeline, from the scheduler's fusion groups
// (SessionStage::fusion_groups) and the code generators' kernel names: group N
// is `@kiln_groupN` (and `_body`) in LLVM IR and `kiln_gN_...` in CUDA C++.
//
// Tests: tests/session/test_code_links.cpp.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/trace/provenance.h"
#include "session/session.h"

namespace kiln::session {

// One code stage and the graph its kernels were made from.
struct CodeLinkGroup {
  int code_stage = -1;
  int graph_stage = -1;      // the graph whose node names the kernels list
  int pre_graph_stage = -1;  // a dump's pre-grad graph: reaches kernels through graph_stage's nodes
  trace::NodeMap kernel_nodes, node_kernels, pre_to_post, post_to_pre;
  std::map<std::string, trace::KernelSpan> spans;  // kernel -> its lines in the code stage
};

std::vector<CodeLinkGroup> code_links(const Session& s, const SessionCompile& c);

// The lines node `node` of graph stage `stage` went into: in `preferred_code`
// when that code stage has them, else the first code stage that does.
struct CodeSpot {
  int code_stage = -1;
  std::vector<int> lines;
  std::vector<std::string> kernels;
};
std::optional<CodeSpot> code_of_node(const std::vector<CodeLinkGroup>& links, int stage, const std::string& node, int preferred_code = -1);

// The nodes line `line` of code stage `code_stage` was made from: in
// `shown_graph` when the links reach it (a dump's pre-grad graph too), else in
// the group's own graph stage.
struct NodeSpot {
  int graph_stage = -1;
  std::vector<std::string> nodes;
  std::vector<std::string> kernels;
};
std::optional<NodeSpot> nodes_of_line(const std::vector<CodeLinkGroup>& links, int code_stage, int line, int shown_graph = -1);

}  // namespace kiln::session
