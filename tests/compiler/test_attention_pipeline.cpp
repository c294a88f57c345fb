// The scaled-dot-product-attention ops through Kiln's pipeline: graph text as
// PyTorch 2.11's AOT dumps print it (forward with
// _scaled_dot_product_flash_attention_for_cpu, backward with its _backward)
// parses, lowers (the ops are fallback extern kernels), compiles for the CPU
// and gives the ATen interpreter's numbers; autodiff of each forward op builds
// a joint graph that calls the op's backward kernel, and the joint graph
// compiles and runs with the interpreter's numbers too. The cuDNN pair
// (PyTorch 2.11's choice for 16-bit attention on an H200) the same way, in a
// graph of our own with the constructs its AOT dumps have: q, k, v as
// [B, H, L, E] views of one split projection, an additive bias, causal, the
// philox scalars passed to the backward, None for cum_seq_q / cum_seq_k.
#include <random>

#include "compiler/aot/joint.h"
#include "compiler/decomp/decompose.h"
#include "compiler/pipeline/emitter.h"
#include "compiler/runtime/compiled_graph.h"
#include "core/graph/parser.h"
#include "core/util/status.h"
#include "loopir_test_util.h"
#include "test_support.h"

using namespace kiln;
using runtime::CompiledGraph;
using runtime::CompileOptions;
using test::random_f32;

namespace {

std::string check_compiled(const Graph& g, const std::vector<Tensor>& inputs, double tol = 1e-5) {
  CompileOptions o;
  o.use_cache = false;
  auto c = CompiledGraph::compile(g, o);
  if (!c) return "compile failed: " + c.status().message();
  auto got = (*c)->run(inputs);
  if (!got) return "run failed: " + got.status().message();
  // A joint graph returns None for an input without a gradient (the mask): compared as such.
  std::vector<Value> in(inputs.begin(), inputs.end());
  auto want = pipeline::run_aten_graph(g, in);
  if (!want) return "interpreter failed: " + want.status().message();
  if (want->size() != got->size()) return "output counts differ";
  std::vector<Tensor> a, b;
  for (size_t i = 0; i < got->size(); ++i) {
    if ((*want)[i].is_none() != !(*got)[i].defined()) return "output " + std::to_string(i) + ": None on one side";
    if ((*want)[i].is_none()) continue;
    a.push_back((*got)[i]);
    b.push_back((*want)[i].to_tensor());
  }
  return test::compare_outputs(a, b, tol);
}

bool has_target(const Graph& g, const std::string& target) {
  for (const Node& n : g.nodes)
    if (n.target == target) return true;
  return false;
}

// A causal self-attention step as nanoGPT's forward prints it after AOT
// tracing on the CPU: q, k, v as [B, T, H, E] permuted to [B, H, T, E].
const char* const kForward = R"(class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu", primals_2: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu", primals_3: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu"):
        permute: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = torch.ops.aten.permute.default(primals_1, [0, 2, 1, 3]);  primals_1 = None
        permute_1: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = torch.ops.aten.permute.default(primals_2, [0, 2, 1, 3]);  primals_2 = None
        permute_2: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = torch.ops.aten.permute.default(primals_3, [0, 2, 1, 3]);  primals_3 = None
        _scaled_dot_product_flash_attention_for_cpu = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(permute, permute_1, permute_2, 0.0, True, scale = 0.5)
        getitem: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = _scaled_dot_product_flash_attention_for_cpu[0]
        getitem_1: "f32[2, 3, 5][15, 1, 3]cpu" = _scaled_dot_product_flash_attention_for_cpu[1];  _scaled_dot_product_flash_attention_for_cpu = None
        permute_3: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.permute.default(getitem, [0, 2, 1, 3])
        mul: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.mul.Scalar(permute_3, 2.0);  permute_3 = None
        return (mul, permute, permute_1, permute_2, getitem, getitem_1)
)";

const char* const kBackward = R"(class GraphModule(torch.nn.Module):
    def forward(self, permute: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu", permute_1: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu", permute_2: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu", getitem: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu", getitem_1: "f32[2, 3, 5][15, 1, 3]cpu", tangents_1: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu"):
        mul_1: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.mul.Scalar(tangents_1, 2.0);  tangents_1 = None
        permute_4: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = torch.ops.aten.permute.default(mul_1, [0, 2, 1, 3]);  mul_1 = None
        _scaled_dot_product_flash_attention_for_cpu_backward = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default(permute_4, permute, permute_1, permute_2, getitem, getitem_1, 0.0, True, scale = 0.5);  permute_4 = permute = permute_1 = permute_2 = getitem = getitem_1 = None
        getitem_2: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = _scaled_dot_product_flash_attention_for_cpu_backward[0]
        getitem_3: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = _scaled_dot_product_flash_attention_for_cpu_backward[1]
        getitem_4: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = _scaled_dot_product_flash_attention_for_cpu_backward[2];  _scaled_dot_product_flash_attention_for_cpu_backward = None
        permute_5: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.permute.default(getitem_4, [0, 2, 1, 3]);  getitem_4 = None
        permute_6: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.permute.default(getitem_3, [0, 2, 1, 3]);  getitem_3 = None
        permute_7: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.permute.default(getitem_2, [0, 2, 1, 3]);  getitem_2 = None
        return (permute_7, permute_6, permute_5)
)";

// q, k, v: [B, L, H, E] views of one [B, L, 3 * H * E] projection, transposed
// to [B, H, L, E] (non-dense: strides [180, 4, 36, 1]); the cuDNN forward with
// a [L, S] bias and causal; its output dense in the query's dim order.
const char* const kCudnnForward = R"(class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[2, 5, 36][180, 36, 1]cpu", primals_2: "f32[5, 5][5, 1]cpu"):
        split = torch.ops.aten.split.Tensor(primals_1, 12, 2);  primals_1 = None
        getitem: "f32[2, 5, 12][180, 36, 1]cpu" = split[0]
        getitem_1: "f32[2, 5, 12][180, 36, 1]cpu" = split[1]
        getitem_2: "f32[2, 5, 12][180, 36, 1]cpu" = split[2];  split = None
        view: "f32[2, 5, 3, 4][180, 36, 4, 1]cpu" = torch.ops.aten.view.default(getitem, [2, 5, 3, 4]);  getitem = None
        transpose: "f32[2, 3, 5, 4][180, 4, 36, 1]cpu" = torch.ops.aten.transpose.int(view, 1, 2);  view = None
        view_1: "f32[2, 5, 3, 4][180, 36, 4, 1]cpu" = torch.ops.aten.view.default(getitem_1, [2, 5, 3, 4]);  getitem_1 = None
        transpose_1: "f32[2, 3, 5, 4][180, 4, 36, 1]cpu" = torch.ops.aten.transpose.int(view_1, 1, 2);  view_1 = None
        view_2: "f32[2, 5, 3, 4][180, 36, 4, 1]cpu" = torch.ops.aten.view.default(getitem_2, [2, 5, 3, 4]);  getitem_2 = None
        transpose_2: "f32[2, 3, 5, 4][180, 4, 36, 1]cpu" = torch.ops.aten.transpose.int(view_2, 1, 2);  view_2 = None
        _scaled_dot_product_cudnn_attention = torch.ops.aten._scaled_dot_product_cudnn_attention.default(transpose, transpose_1, transpose_2, primals_2, True, 0.0, True, scale = 0.5)
        getitem_3: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = _scaled_dot_product_cudnn_attention[0]
        getitem_4: "f32[2, 3, 5, 1][15, 5, 1, 1]cpu" = _scaled_dot_product_cudnn_attention[1]
        getitem_9: "i64[][]cpu" = _scaled_dot_product_cudnn_attention[6]
        getitem_10: "i64[][]cpu" = _scaled_dot_product_cudnn_attention[7];  _scaled_dot_product_cudnn_attention = None
        transpose_3: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.transpose.int(getitem_3, 1, 2)
        view_3: "f32[2, 5, 12][60, 12, 1]cpu" = torch.ops.aten.view.default(transpose_3, [2, 5, 12]);  transpose_3 = None
        mul: "f32[2, 5, 12][60, 12, 1]cpu" = torch.ops.aten.mul.Scalar(view_3, 2.0);  view_3 = None
        return (mul, primals_2, transpose, transpose_1, transpose_2, getitem_3, getitem_4, getitem_9, getitem_10)
)";

// Its backward: the gradients come back dense in [B, L, H, E] order, so the
// transposes back view into [B, L, H * E] and cat rebuilds the projection's.
const char* const kCudnnBackward = R"(class GraphModule(torch.nn.Module):
    def forward(self, primals_2: "f32[5, 5][5, 1]cpu", transpose: "f32[2, 3, 5, 4][180, 4, 36, 1]cpu", transpose_1: "f32[2, 3, 5, 4][180, 4, 36, 1]cpu", transpose_2: "f32[2, 3, 5, 4][180, 4, 36, 1]cpu", getitem_3: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu", getitem_4: "f32[2, 3, 5, 1][15, 5, 1, 1]cpu", getitem_9: "i64[][]cpu", getitem_10: "i64[][]cpu", tangents_1: "f32[2, 5, 12][60, 12, 1]cpu"):
        mul_1: "f32[2, 5, 12][60, 12, 1]cpu" = torch.ops.aten.mul.Scalar(tangents_1, 2.0);  tangents_1 = None
        view_4: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.view.default(mul_1, [2, 5, 3, 4]);  mul_1 = None
        transpose_4: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = torch.ops.aten.transpose.int(view_4, 1, 2);  view_4 = None
        _scaled_dot_product_cudnn_attention_backward = torch.ops.aten._scaled_dot_product_cudnn_attention_backward.default(transpose_4, transpose, transpose_1, transpose_2, getitem_3, getitem_4, getitem_9, getitem_10, primals_2, None, None, 5, 5, 0.0, True, scale = 0.5);  transpose_4 = transpose = transpose_1 = transpose_2 = getitem_3 = getitem_4 = getitem_9 = getitem_10 = primals_2 = None
        getitem_12: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = _scaled_dot_product_cudnn_attention_backward[0]
        getitem_13: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = _scaled_dot_product_cudnn_attention_backward[1]
        getitem_14: "f32[2, 3, 5, 4][60, 4, 12, 1]cpu" = _scaled_dot_product_cudnn_attention_backward[2];  _scaled_dot_product_cudnn_attention_backward = None
        transpose_5: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.transpose.int(getitem_14, 1, 2);  getitem_14 = None
        view_5: "f32[2, 5, 12][60, 12, 1]cpu" = torch.ops.aten.view.default(transpose_5, [2, 5, 12]);  transpose_5 = None
        transpose_6: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.transpose.int(getitem_13, 1, 2);  getitem_13 = None
        view_6: "f32[2, 5, 12][60, 12, 1]cpu" = torch.ops.aten.view.default(transpose_6, [2, 5, 12]);  transpose_6 = None
        transpose_7: "f32[2, 5, 3, 4][60, 12, 4, 1]cpu" = torch.ops.aten.transpose.int(getitem_12, 1, 2);  getitem_12 = None
        view_7: "f32[2, 5, 12][60, 12, 1]cpu" = torch.ops.aten.view.default(transpose_7, [2, 5, 12]);  transpose_7 = None
        cat: "f32[2, 5, 36][180, 36, 1]cpu" = torch.ops.aten.cat.default([view_7, view_6, view_5], 2);  view_7 = view_6 = view_5 = None
        return (cat, None)
)";

// A small forward graph around one attention op, for autodiff: sin of its output.
Graph forward_graph(const std::string& op, const std::vector<Shape>& shapes, std::vector<pipeline::EArg> consts,
                    pipeline::EKwargs kwargs, bool fourth_is_kwarg) {
  Graph g;
  pipeline::GraphEmitter e(g);
  std::vector<pipeline::EArg> args;
  for (size_t i = 0; i < shapes.size(); ++i) {
    pipeline::Var x = e.placeholder("x" + std::to_string(i), Tensor::meta(shapes[i], DType::Float32));
    if (i == 3 && fourth_is_kwarg) kwargs.emplace_back("attn_mask", x);
    else args.push_back(x);
  }
  args.insert(args.end(), consts.begin(), consts.end());
  std::vector<pipeline::Var> out = e.call(op, args, kwargs);
  e.output({e.call1("aten::sin.default", {out[0]})});
  return g;
}

}  // namespace

class TestAttentionPipeline : public QObject {
  Q_OBJECT
 private slots:
  void aot_dump_graphs_replay_on_the_cpu_backend() {
    Expected<Graph> fwd = parse_graph_module(kForward, "fw.py");
    QVERIFY2(fwd.ok(), fwd.ok() ? "" : fwd.status().to_string().c_str());
    Expected<Graph> bwd = parse_graph_module(kBackward, "bw.py");
    QVERIFY2(bwd.ok(), bwd.ok() ? "" : bwd.status().to_string().c_str());
    std::mt19937 rng(3);
    std::vector<Tensor> in{random_f32({2, 5, 3, 4}, rng), random_f32({2, 5, 3, 4}, rng), random_f32({2, 5, 3, 4}, rng)};
    std::string diff = check_compiled(*fwd, in);
    QVERIFY2(diff.empty(), diff.c_str());
    // The backward reads the forward's saved tensors, as the interpreter computes them.
    std::vector<Tensor> saved = test::aten_outputs(*fwd, in);
    std::vector<Tensor> bin{saved[1], saved[2], saved[3], saved[4], saved[5], random_f32({2, 5, 3, 4}, rng)};
    diff = check_compiled(*bwd, bin);
    QVERIFY2(diff.empty(), diff.c_str());
  }

  // The decompose pass rewrites the CPU flash forward into core ops (bmm,
  // softmax's pieces) with the kernel's output layouts; the decomposed graph
  // compiles and gives the original graph's numbers; the backward kernel stays.
  void decomposed_forward_keeps_layouts_and_numbers() {
    Expected<Graph> fwd = parse_graph_module(kForward, "fw.py");
    QVERIFY(fwd.ok());
    Expected<Graph> d = decomp::decompose(*fwd);
    QVERIFY2(d.ok(), d.ok() ? "" : d.status().message().c_str());
    QVERIFY(!has_target(*d, "aten::_scaled_dot_product_flash_attention_for_cpu.default"));
    QVERIFY(has_target(*d, "aten::bmm.default"));
    // Every output keeps the annotation the original graph gives it (strides included).
    const Node& out_orig = fwd->nodes.back();
    const Node& out_dec = d->nodes.back();
    QCOMPARE(out_dec.args[0].items.size(), out_orig.args[0].items.size());
    for (size_t i = 0; i < out_orig.args[0].items.size(); ++i) {
      const Val& a = (*fwd)[out_orig.args[0].items[i].node_id()].meta.val;
      const Val& b = (*d)[out_dec.args[0].items[i].node_id()].meta.val;
      QVERIFY(a.is_tensor() && b.is_tensor());
      QCOMPARE(b.tensor.dtype, a.tensor.dtype);
      QVERIFY2(b.tensor.strides && a.tensor.strides && *b.tensor.strides == *a.tensor.strides,
               qPrintable(QString("output %1 strides differ").arg(i)));
    }
    std::mt19937 rng(5);
    std::vector<Tensor> in{random_f32({2, 5, 3, 4}, rng), random_f32({2, 5, 3, 4}, rng), random_f32({2, 5, 3, 4}, rng)};
    std::vector<Tensor> want = test::aten_outputs(*fwd, in);
    CompileOptions o;
    o.use_cache = false;
    auto c = CompiledGraph::compile(*d, o);
    QVERIFY2(c.ok(), c.ok() ? "" : c.status().message().c_str());
    auto got = (*c)->run(in);
    QVERIFY2(got.ok(), got.ok() ? "" : got.status().message().c_str());
    std::string diff = test::compare_outputs(*got, want, 1e-5);
    QVERIFY2(diff.empty(), diff.c_str());
    Expected<Graph> bwd = parse_graph_module(kBackward, "bw.py");
    QVERIFY(bwd.ok());
    Expected<Graph> db = decomp::decompose(*bwd);
    QVERIFY(db.ok());
    QVERIFY(has_target(*db, "aten::_scaled_dot_product_flash_attention_for_cpu_backward.default"));
  }

  // The cuDNN forward and backward as an AOT dump prints them: both compile
  // (extern kernels) with the interpreter's numbers, the backward reading the
  // forward's saved views and philox scalars.
  void cudnn_aot_graphs_replay_on_the_cpu_backend() {
    Expected<Graph> fwd = parse_graph_module(kCudnnForward, "fw.py");
    QVERIFY2(fwd.ok(), fwd.ok() ? "" : fwd.status().to_string().c_str());
    Expected<Graph> bwd = parse_graph_module(kCudnnBackward, "bw.py");
    QVERIFY2(bwd.ok(), bwd.ok() ? "" : bwd.status().to_string().c_str());
    std::mt19937 rng(13);
    std::vector<Tensor> in{random_f32({2, 5, 36}, rng), random_f32({5, 5}, rng)};
    std::string diff = check_compiled(*fwd, in);
    QVERIFY2(diff.empty(), diff.c_str());
    std::vector<Tensor> saved = test::aten_outputs(*fwd, in);
    QCOMPARE(saved.size(), size_t(9));
    QCOMPARE(saved[5].strides(), (Shape{60, 4, 12, 1}));
    QCOMPARE(saved[6].sizes(), (Shape{2, 3, 5, 1}));
    std::vector<Tensor> bin(saved.begin() + 1, saved.end());
    bin.push_back(random_f32({2, 5, 12}, rng));
    diff = check_compiled(*bwd, bin);
    QVERIFY2(diff.empty(), diff.c_str());
  }

  // The decompose pass rewrites the cuDNN forward into core ops with the
  // kernel's layouts (output dense in the query's dim order, logsumexp
  // [B, H, L, 1]); the decomposed graph compiles with the original's numbers;
  // the backward stays an extern kernel.
  void cudnn_decomposed_forward_keeps_layouts_and_numbers() {
    Expected<Graph> fwd = parse_graph_module(kCudnnForward, "fw.py");
    QVERIFY(fwd.ok());
    Expected<Graph> d = decomp::decompose(*fwd);
    QVERIFY2(d.ok(), d.ok() ? "" : d.status().message().c_str());
    QVERIFY(!has_target(*d, "aten::_scaled_dot_product_cudnn_attention.default"));
    QVERIFY(has_target(*d, "aten::bmm.default"));
    const Node& out_orig = fwd->nodes.back();
    const Node& out_dec = d->nodes.back();
    QCOMPARE(out_dec.args[0].items.size(), out_orig.args[0].items.size());
    for (size_t i = 0; i < out_orig.args[0].items.size(); ++i) {
      const Val& a = (*fwd)[out_orig.args[0].items[i].node_id()].meta.val;
      const Val& b = (*d)[out_dec.args[0].items[i].node_id()].meta.val;
      QVERIFY(a.is_tensor() && b.is_tensor());
      QCOMPARE(b.tensor.dtype, a.tensor.dtype);
      QVERIFY2(b.tensor.strides && a.tensor.strides && *b.tensor.strides == *a.tensor.strides,
               qPrintable(QString("output %1 strides differ").arg(i)));
    }
    std::mt19937 rng(17);
    std::vector<Tensor> in{random_f32({2, 5, 36}, rng), random_f32({5, 5}, rng)};
    std::vector<Tensor> want = test::aten_outputs(*fwd, in);
    CompileOptions o;
    o.use_cache = false;
    auto c = CompiledGraph::compile(*d, o);
    QVERIFY2(c.ok(), c.ok() ? "" : c.status().message().c_str());
    auto got = (*c)->run(in);
    QVERIFY2(got.ok(), got.ok() ? "" : got.status().message().c_str());
    std::string diff = test::compare_outputs(*got, want, 1e-5);
    QVERIFY2(diff.empty(), diff.c_str());
    Expected<Graph> bwd = parse_graph_module(kCudnnBackward, "bw.py");
    QVERIFY(bwd.ok());
    Expected<Graph> db = decomp::decompose(*bwd);
    QVERIFY(db.ok());
    QVERIFY(has_target(*db, "aten::_scaled_dot_product_cudnn_attention_backward.default"));
  }

  // A graph reading one of the cuDNN forward's outputs the decomposition gives
  // no node for (max_q, a SymInt) is refused with the node's name.
  void cudnn_decomposition_refuses_a_getitem_of_a_symint_output() {
    std::string text = kCudnnForward;
    const std::string at = "        transpose_3:";
    text.insert(text.find(at), "        getitem_7 = _scaled_dot_product_cudnn_attention[4]\n");
    Expected<Graph> fwd = parse_graph_module(text, "fw.py");
    QVERIFY2(fwd.ok(), fwd.ok() ? "" : fwd.status().to_string().c_str());
    Expected<Graph> d = decomp::decompose(*fwd);
    QVERIFY(!d.ok());
    QVERIFY2(d.status().message().find("getitem_7") != std::string::npos &&
                 d.status().message().find("SymInt") != std::string::npos,
             d.status().message().c_str());
  }

  // Autodiff of each forward op calls its backward kernel (derivatives.yaml's
  // formulas); the joint graph compiles and matches the interpreter.
  void autodiff_calls_the_backward_kernels() {
    struct Op {
      std::string op, backward;
      std::vector<Shape> shapes;
      std::vector<pipeline::EArg> consts;
      pipeline::EKwargs kwargs;
      bool mask_kwarg;
    };
    const std::vector<Op> ops = {
        {"aten::_scaled_dot_product_flash_attention_for_cpu.default",
         "aten::_scaled_dot_product_flash_attention_for_cpu_backward.default",
         {{1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 6}, {3, 5}}, {0.0, true}, {}, true},
        {"aten::_scaled_dot_product_efficient_attention.default",
         "aten::_scaled_dot_product_efficient_attention_backward.default",
         {{2, 2, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 4}, {2, 1, 3, 5}}, {true, 0.0, false}, {{"scale", 0.3}}, false},
        {"aten::_scaled_dot_product_flash_attention.default", "aten::_scaled_dot_product_flash_attention_backward.default",
         {{1, 2, 4, 4}, {1, 2, 4, 4}, {1, 2, 4, 4}}, {0.0, true}, {}, false},
        {"aten::_scaled_dot_product_cudnn_attention.default",
         "aten::_scaled_dot_product_cudnn_attention_backward.default",
         {{2, 2, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 6}, {3, 5}}, {true, 0.0, false}, {{"scale", 0.3}}, false},
        {"aten::_scaled_dot_product_cudnn_attention.default",
         "aten::_scaled_dot_product_cudnn_attention_backward.default",
         {{1, 4, 4, 4}, {1, 2, 4, 4}, {1, 2, 4, 4}}, {Value(), true, 0.0, true}, {}, false},
    };
    for (const Op& op : ops) {
      Graph g = forward_graph(op.op, op.shapes, op.consts, op.kwargs, op.mask_kwarg);
      Expected<aot::JointGraph> j = aot::build_joint(g);
      QVERIFY2(j.ok(), j.ok() ? "" : j.status().to_string().c_str());
      QVERIFY2(has_target(j->graph, op.backward), op.backward.c_str());
      std::mt19937 rng(9);
      std::vector<Tensor> in;
      for (const Shape& s : op.shapes) in.push_back(random_f32(s, rng));
      // Tangents are shaped like the outputs they stand for.
      std::vector<Tensor> fwd_out = test::aten_outputs(g, in);
      for (size_t t = 0; t < j->num_tangents; ++t)
        in.push_back(random_f32(fwd_out[j->tangent_of_output[t]].sizes(), rng));
      std::string diff = check_compiled(j->graph, in);
      QVERIFY2(diff.empty(), (op.backward + ": " + diff).c_str());
    }
  }
};

QTEST_MAIN(TestAttentionPipeline)
#include "test_attention_pipeline.moc"
