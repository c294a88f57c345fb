#pragma once
// Synthetic TORCH_TRACE logs for the trace tests: glog lines with JSON
// envelopes and tab-indented payloads whose md5 matches, written as PyTorch
// writes them, with our own content.
#include <string>
#include <vector>

#include "core/util/md5.h"

namespace kiln::test {

inline const std::string kLogPrefix = "V1122 00:25:49.640000 785 torch/_dynamo/x.py:12] ";
inline const std::string kLogIds = "\"frame_id\": 0, \"frame_compile_id\": 0, \"attempt\": 0";

inline std::string log_record(const std::string& envelope) { return kLogPrefix + envelope + "\n"; }

inline std::string payload_lines(const std::string& payload) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    size_t eol = payload.find('\n', pos);
    out += '\t';
    out.append(payload, pos, eol == std::string::npos ? std::string::npos : eol - pos);
    out += '\n';
    if (eol == std::string::npos) break;
    pos = eol + 1;
  }
  return out;
}

// `{"<tag>": <meta>, <ids>, "has_payload": "<md5>"}` and the payload lines.
inline std::string log_record_with_payload(const std::string& tag, const std::string& meta, const std::string& payload,
                                           const std::string& ids = kLogIds) {
  return log_record("{\"" + tag + "\": " + meta + ", " + ids + ", \"has_payload\": \"" + md5_hex(payload) + "\"}") +
         payload_lines(payload);
}

// A rank's log of a distributed run: per compile a Dynamo graph on its
// device, a cache outcome, a collective schedule and output code that calls
// (and, with `waits`, waits on) one all_reduce.
inline std::string compile_ids(int frame, int compile) {
  return "\"frame_id\": " + std::to_string(frame) + ", \"frame_compile_id\": " + std::to_string(compile) + ", \"attempt\": 0";
}

inline std::string artifact_record(const std::string& name, const std::string& encoding, const std::string& payload, const std::string& at) {
  return log_record_with_payload("artifact", "{\"name\": \"" + name + "\", \"encoding\": \"" + encoding + "\"}", payload, at);
}

inline std::string graph_on(int device) {
  const std::string d = "cuda:" + std::to_string(device);
  return "class GraphModule(torch.nn.Module):\n"
         "    def forward(self, L_x_: \"f32[8][1]" + d + "\"):\n"
         "        l_x_ = L_x_\n"
         "        all_reduce: \"f32[8][1]" + d + "\" = torch.ops._c10d_functional.all_reduce.default(l_x_, 'sum', '0');  l_x_ = None\n"
         "        wait: \"f32[8][1]" + d + "\" = torch.ops._c10d_functional.wait_tensor.default(all_reduce);  all_reduce = None\n"
         "        return (wait,)\n";
}

// Generated code for one all_reduce; `wait` says whether it waits on it.
// The comment names a collective too: only calls count.
inline std::string output_code(bool wait) {
  return "# AOT ID: ['0_inference']\n"
         "def call(args):\n"
         "    # Topologically Sorted Source Nodes: [all_reduce], Original ATen: [_c10d_functional.all_reduce]\n"
         "    torch.ops._c10d_functional.all_reduce_.default(buf0, 'sum', '0')\n" +
         std::string(wait ? "    torch.ops._c10d_functional.wait_tensor.default(buf0)\n" : "") + "    return (buf0, )\n";
}

struct RankLog {
  int device = 0;
  std::vector<std::string> cache = {"hit"};  // one compile per entry, frame 0
  std::string schedule = "[\"torch.ops._c10d_functional.all_reduce_.default\", \"torch.ops._c10d_functional.wait_tensor.default\"]";
  bool waits = true;
  std::string execution;  // graph_execution payload, "" for none
  bool chromium = false;  // a "dynamo" phase per compile
};

inline std::string rank_log(const RankLog& r) {
  std::string out;
  for (size_t k = 0; k < r.cache.size(); ++k) {
    const std::string at = compile_ids(0, int(k));
    out += log_record("{\"dynamo_start\": {\"stack\": []}, " + at + "}");
    if (r.chromium)
      out += log_record_with_payload("chromium_event", "{}",
                                           "{\"name\": \"dynamo\", \"ph\": \"X\", \"ts\": " + std::to_string(100 * (k + 1)) +
                                               ", \"dur\": 50, \"args\": {\"compile_id\": \"0/" + std::to_string(k) + "\"}}",
                                           at);
    out += log_record_with_payload("dynamo_output_graph", "{}", graph_on(r.device), at);
    out += artifact_record("fx_graph_cache_" + r.cache[k], "json", "{\"key\": \"k\"}", at);
    out += artifact_record("inductor_collective_schedule", "json", r.schedule, at);
    out += log_record_with_payload("inductor_output_code", "{\"filename\": \"/tmp/x.py\"}", output_code(r.waits), at);
    out += log_record("{\"compilation_metrics\": {\"co_name\": \"f\", \"restart_reasons\": []}, " + at + "}");
  }
  if (!r.execution.empty()) out += artifact_record("graph_execution", "json", r.execution, "\"frame_id\": null");
  return out;
}

// Inductor output code and provenance for the provenance tests (ours).
// Lines 1-13: a triton kernel's definition (2-7), an extern mm and two launches
// of the triton kernel, the second after its debug handle.
inline const std::string kPythonCode =
    "# AOT ID: ['0_forward']\n"                                                  // 1
    "triton_poi_fused_relu_0 = async_compile.triton('triton_poi_fused_relu_0', '''\n"  // 2
    "import triton\n"                                                             // 3
    "@triton.jit\n"                                                               // 4
    "def triton_poi_fused_relu_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):\n"  // 5
    "    pass\n"                                                                  // 6
    "''', device_str='cuda')\n"                                                   // 7
    "def call(args):\n"                                                           // 8
    "    extern_kernels.mm(arg0_1, arg1_1, out=buf0)\n"                           // 9
    "    triton_poi_fused_relu_0.run(buf0, buf1, 64, stream=stream0)\n"           // 10
    "    # [Provenance debug handles] triton_poi_fused_relu_0:2\n"               // 11
    "    triton_poi_fused_relu_0.run(buf1, buf2, 64, stream=stream0)\n"           // 12
    "    triton_poi_fused_relu_00.run(buf1, buf2, 64)  # another kernel\n";       // 13

inline std::string provenance_mapping(const std::string& kernel, const std::string& post, const std::string& pre) {
  return "{\"preToPost\": {\"" + pre + "\": [\"" + post + "\"]}, \"postToPre\": {\"" + post + "\": [\"" + pre +
         "\"]}, \"cppCodeToPost\": {\"" + kernel + "\": [\"" + post + "\"]}, \"postToCppCode\": {\"" + post + "\": [\"" + kernel +
         "\"]}, \"version\": 2.0}";
}

inline const std::string kPostGraph =
    "class <lambda>(torch.nn.Module):\n"
    "    def forward(self, arg0_1: \"f32[8]\"):\n"
    "        relu: \"f32[8]\" = torch.ops.aten.relu.default(arg0_1);  arg0_1 = None\n"
    "        return (relu,)\n";

inline const std::string kPreGraph =
    "class GraphModule(torch.nn.Module):\n"
    "    def forward(self, L_x_: \"f32[8]\"):\n"
    "        l_x_ = L_x_\n"
    "        x: \"f32[8]\" = torch.relu(l_x_);  l_x_ = None\n"
    "        return (x,)\n";

inline const std::string kBackwardGraph =
    "class GraphModule(torch.nn.Module):\n"
    "    def forward(self, arg0_1: \"f32[8, 8]\", arg1_1: \"f32[8, 8]\"):\n"
    "        mm: \"f32[8, 8]\" = torch.ops.aten.mm.default(arg0_1, arg1_1);  arg0_1 = arg1_1 = None\n"
    "        return (mm,)\n";

// Provenance of a training compile: the forward's graph, code and mappings, then the backward's.
inline std::string training_log() {
    const std::string at = compile_ids(0, 0);
  return log_record("{\"dynamo_start\": {\"stack\": []}, " + at + "}") +
         artifact_record("before_pre_grad_graph", "string", kPreGraph, at) +
         artifact_record("after_post_grad_graph", "string", kPostGraph, at) +
         log_record_with_payload("inductor_output_code", "{\"filename\": \"/tmp/fw.py\"}", kPythonCode, at) +
         artifact_record("inductor_provenance_tracking_node_mappings", "json", provenance_mapping("triton_poi_fused_relu_0", "relu", "x"), at) +
         artifact_record("after_post_grad_graph", "string", kBackwardGraph, at) +
         log_record_with_payload("inductor_output_code", "{\"filename\": \"/tmp/bw.py\"}", kPythonCode, at) +
         artifact_record("inductor_provenance_tracking_node_mappings", "json", provenance_mapping("extern_kernels.mm", "mm", "linear"), at);
}

}  // namespace kiln::test
