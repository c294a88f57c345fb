#pragma once
// Provenance from graph nodes to generated code, as Inductor logs it: which
// post-grad nodes each pre-grad node became, and which kernel each post-grad
// node went into. With the output code this answers "where did my op go" and
// "what is this kernel made of" (`kiln-cli trace provenance`, the workbench's
// node <-> code links).
//
// Sources, newest first: the artifact inductor_provenance_tracking_node_mappings
// ({"preToPost", "postToPre", "cppCodeToPost", "postToCppCode", "version"});
// older logs' inductor_triton_kernel_to_post_grad_nodes ({kernel: [node]}) and
// inductor_post_to_pre_grad_nodes ({node: [{"name": pre, ...}]}). Kernel names
// may carry a debug handle ("triton_poi_fused_mul_1:2"): one launch of a
// kernel that runs more than once.
//
// Tests: tests/core/test_trace_provenance.cpp.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/trace/trace.h"
#include "core/util/status.h"

namespace kiln::trace {

using NodeMap = std::map<std::string, std::vector<std::string>>;

// One Inductor compile's mappings. A training compile id holds two (the
// forward's, then the backward's), each with its own output code and
// post-grad graph: the k-th mappings go with the k-th of each.
struct NodeMappings {
  NodeMap pre_to_post, post_to_pre, kernel_to_post, post_to_kernel;
  std::string source;            // the artifact(s) it was read from
  int line = 0;                  // the log line of the first of them
  std::string output_code;       // the paired inductor_output_code (AOTInductor: inductor_aot_wrapper_code), "" when none
  std::string kernel_code;       // AOTInductor's inductor_aot_kernel_code: the kernels' definitions, "" when none
  std::string post_grad_graph;   // the paired post-grad graph stage, "" when none
  std::string pre_grad_graph;    // the compile's pre-grad graph stage, "" when none
};

// The entry's mappings, in log order (empty when it logs none); an error
// naming the log line when a mapping payload is not the JSON it should be.
Expected<std::vector<NodeMappings>> node_mappings(const Trace& trace, const CompileEntry& entry);

// Where each kernel lies in Inductor's output code (1-based lines): its
// definition (`NAME = async_compile...` through the end of its source string,
// or a `def NAME(` / `static inline void NAME` body) and the wrapper lines
// that launch it. A kernel with a debug handle is the launch after the line
// that names the handle; without one found, every launch of the plain name.
struct KernelSpan {
  int def_first = 0, def_last = 0;  // 0: no definition in the code (extern kernels)
  std::vector<int> launches;
  std::vector<int> lines() const;  // the definition's lines and the launches, sorted
};
std::map<std::string, KernelSpan> kernel_spans(std::string_view code, const std::vector<std::string>& kernels);

// The kernels whose definition or launch is line `line`.
std::vector<std::string> kernels_at(const std::map<std::string, KernelSpan>& spans, int line);

}  // namespace kiln::trace
