// The fuse-attention pass (compiler/passes/fuse_attention.h) on graphs as
// Kiln's lowering prints them for the attention real models write: nanoGPT's
// (q, k, v as strided views of one projection, a tril buffer masked to -inf),
// F.scaled_dot_product_attention(is_causal=True) traced to its math (ones,
// tril, logical_not), llama's (div, an additive mask, softmax over a float
// cast) and a plain one (permute, mul.Tensor by a number). Each is rewritten
// into _scaled_dot_product_efficient_attention with the right scale, bias and
// is_causal, and its joint graph (forward and gradients, through the op's own
// backward kernel) gives the unfused joint graph's numbers on random inputs.
// What must stay unfused stays: a finite fill, attention weights read twice,
// dropout on the probabilities, 3-D tensors, a mask of another dtype.
#include <random>

#include "compiler/aot/joint.h"
#include "compiler/passes/fuse_attention.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

bool has_target(const Graph& g, const std::string& target) {
  for (const Node& n : g.nodes)
    if (n.target == target) return true;
  return false;
}

const Node* find_target(const Graph& g, const std::string& target) {
  for (const Node& n : g.nodes)
    if (n.target == target) return &n;
  return nullptr;
}

const char* kEfficient = "aten::_scaled_dot_product_efficient_attention.default";

// The joint graphs of `before` and `after` give the same forward outputs and
// gradients (None where the other has None) on the same random inputs.
std::string compare_joints(const Graph& before, const Graph& after, double tol) {
  Expected<aot::JointGraph> a = aot::build_joint(before), b = aot::build_joint(after);
  if (!a) return "joint of the input: " + a.status().message();
  if (!b) return "joint after the pass: " + b.status().message();
  if (!has_target(b->graph, "aten::_scaled_dot_product_efficient_attention_backward.default"))
    return "the joint graph does not call the fused backward";
  std::mt19937 rng(7);
  std::vector<Value> in = random_inputs(a->graph, rng);
  auto want = pipeline::run_aten_graph(a->graph, in);
  auto got = pipeline::run_aten_graph(b->graph, in);
  if (!want || !got) return "run failed: " + (want ? got.status() : want.status()).message();
  if (want->size() != got->size()) return "output count differs";
  for (size_t i = 0; i < want->size(); ++i) {
    const std::string where = "output " + std::to_string(i) + ": ";
    if ((*want)[i].is_tensor() != (*got)[i].is_tensor()) return where + "a tensor on one side only";
    if (!(*want)[i].is_tensor()) continue;
    const Tensor x = (*want)[i].to_tensor();
    const Tensor y = (*got)[i].to_tensor();
    if (x.sizes() != y.sizes() || x.dtype() != y.dtype()) return where + "sizes or dtype differ";
    std::vector<double> xv = values(x), yv = values(y);
    double scale = 0;
    for (double v : xv) scale = std::max(scale, std::fabs(v));
    for (size_t k = 0; k < xv.size(); ++k)
      if (std::fabs(xv[k] - yv[k]) > tol * std::max(1.0, scale))
        return where + "element " + std::to_string(k) + ": " + std::to_string(yv[k]) + " vs " + std::to_string(xv[k]);
  }
  return "";
}

// grad_input_mask[3] of the backward call in the joint graph of `g` (every floating input requiring grad).
bool bias_gradient_asked(const Graph& g) {
  Expected<aot::JointGraph> j = aot::build_joint(g);
  if (!j) qFatal("%s", j.status().message().c_str());
  const Node* b = find_target(j->graph, "aten::_scaled_dot_product_efficient_attention_backward.default");
  if (!b || b->args.size() < 11 || b->args[10].items.size() != 4) qFatal("no backward call with a grad_input_mask");
  return b->args[10].items[3].b;
}

// nanoGPT's CausalSelfAttention between its two linears.
const char* kNanoParams =
    "qkv: \"f32[2, 16, 96][1536, 96, 1]cpu\", bias: \"f32[1, 1, 16, 16][256, 256, 16, 1]cpu\"";
const char* kNanoBody = R"(        split = torch.ops.aten.split.Tensor(qkv, 32, 2)
        getitem: "f32[2, 16, 32][1536, 96, 1]cpu" = split[0]
        getitem_1: "f32[2, 16, 32][1536, 96, 1]cpu" = split[1]
        getitem_2: "f32[2, 16, 32][1536, 96, 1]cpu" = split[2]
        view: "f32[2, 16, 4, 8][1536, 96, 8, 1]cpu" = torch.ops.aten.view.default(getitem_1, [2, 16, 4, 8])
        transpose: "f32[2, 4, 16, 8][1536, 8, 96, 1]cpu" = torch.ops.aten.transpose.int(view, 1, 2)
        view_1: "f32[2, 16, 4, 8][1536, 96, 8, 1]cpu" = torch.ops.aten.view.default(getitem, [2, 16, 4, 8])
        transpose_1: "f32[2, 4, 16, 8][1536, 8, 96, 1]cpu" = torch.ops.aten.transpose.int(view_1, 1, 2)
        view_2: "f32[2, 16, 4, 8][1536, 96, 8, 1]cpu" = torch.ops.aten.view.default(getitem_2, [2, 16, 4, 8])
        transpose_2: "f32[2, 4, 16, 8][1536, 8, 96, 1]cpu" = torch.ops.aten.transpose.int(view_2, 1, 2)
        transpose_3: "f32[2, 4, 8, 16][1536, 8, 1, 96]cpu" = torch.ops.aten.transpose.int(transpose, -2, -1)
        matmul: "f32[2, 4, 16, 16][1024, 256, 16, 1]cpu" = torch.ops.aten.matmul.default(transpose_1, transpose_3)
        mul: "f32[2, 4, 16, 16][1024, 256, 16, 1]cpu" = torch.ops.aten.mul.Scalar(matmul, 0.35355339059327373)
        slice_1: "f32[1, 1, 16, 16][256, 256, 16, 1]cpu" = torch.ops.aten.slice.Tensor(bias, 2, None, 16, 1)
        eq: "b8[1, 1, 16, 16][256, 256, 16, 1]cpu" = torch.ops.aten.eq.Scalar(slice_1, 0)
        masked_fill: "f32[2, 4, 16, 16][1024, 256, 16, 1]cpu" = torch.ops.aten.masked_fill.Scalar(mul, eq, FILL)
        softmax: "f32[2, 4, 16, 16][1024, 256, 16, 1]cpu" = torch.ops.aten.softmax.int(masked_fill, -1, None)
        matmul_1: "f32[2, 4, 16, 8][512, 128, 8, 1]cpu" = torch.ops.aten.matmul.default(softmax, transpose_2)
        transpose_4: "f32[2, 16, 4, 8][512, 8, 128, 1]cpu" = torch.ops.aten.transpose.int(matmul_1, 1, 2)
        contiguous: "f32[2, 16, 4, 8][512, 32, 8, 1]cpu" = torch.ops.aten.contiguous.default(transpose_4, memory_format = torch.contiguous_format)
        view_3: "f32[2, 16, 32][512, 32, 1]cpu" = torch.ops.aten.view.default(contiguous, [2, 16, 32])
        return (view_3,)
)";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

Graph nano(const std::string& fill) { return graph_of(kNanoParams, replace_all(kNanoBody, "FILL", fill)); }

// F.scaled_dot_product_attention(q, k, v, is_causal=True) as Kiln traces its math.
const char* kCausalParams =
    "q: \"f32[2, 4, 12, 8][384, 96, 8, 1]cpu\", k: \"f32[2, 4, 12, 8][384, 96, 8, 1]cpu\", v: \"f32[2, 4, 12, 6][288, 72, 6, 1]cpu\"";
const char* kCausalBody = R"(        transpose: "f32[2, 4, 8, 12][384, 96, 1, 8]cpu" = torch.ops.aten.transpose.int(k, -2, -1)
        matmul: "f32[2, 4, 12, 12][576, 144, 12, 1]cpu" = torch.ops.aten.matmul.default(q, transpose)
        mul: "f32[2, 4, 12, 12][576, 144, 12, 1]cpu" = torch.ops.aten.mul.Scalar(matmul, 0.35355339059327373)
        ones: "b8[12, 12][12, 1]cpu" = torch.ops.aten.ones.default([12, 12], dtype = torch.bool)
        tril: "b8[12, 12][12, 1]cpu" = torch.ops.aten.tril.default(ones)
        logical_not: "b8[12, 12][12, 1]cpu" = torch.ops.aten.logical_not.default(tril)
        masked_fill: "f32[2, 4, 12, 12][576, 144, 12, 1]cpu" = torch.ops.aten.masked_fill.Scalar(mul, logical_not, -inf)
        softmax: "f32[2, 4, 12, 12][576, 144, 12, 1]cpu" = torch.ops.aten.softmax.int(masked_fill, -1)
        matmul_1: "f32[2, 4, 12, 6][288, 72, 6, 1]cpu" = torch.ops.aten.matmul.default(softmax, v)
        return (matmul_1,)
)";

// llama's attention: div by sqrt(d), an additive mask, softmax of a float cast, type_as.
const char* kLlamaParams =
    "xq: \"f32[2, 4, 10, 8][320, 80, 8, 1]cpu\", keys: \"f32[2, 4, 14, 8][448, 112, 8, 1]cpu\", "
    "values: \"f32[2, 4, 14, 8][448, 112, 8, 1]cpu\", mask: \"f32[10, 14][14, 1]cpu\"";
const char* kLlamaBody = R"(        transpose: "f32[2, 4, 8, 14][448, 112, 1, 8]cpu" = torch.ops.aten.transpose.int(keys, 2, 3)
        matmul: "f32[2, 4, 10, 14][560, 140, 14, 1]cpu" = torch.ops.aten.matmul.default(xq, transpose)
        div: "f32[2, 4, 10, 14][560, 140, 14, 1]cpu" = torch.ops.aten.div.Scalar(matmul, 2.8284271247461903)
        add: "f32[2, 4, 10, 14][560, 140, 14, 1]cpu" = torch.ops.aten.add.Tensor(div, mask)
        to: "f32[2, 4, 10, 14][560, 140, 14, 1]cpu" = torch.ops.aten.to.dtype(add, torch.float32, False, False, 'preserve_format')
        softmax: "f32[2, 4, 10, 14][560, 140, 14, 1]cpu" = torch.ops.aten.softmax.int(to, -1, None)
        to_1: "f32[2, 4, 10, 14][560, 140, 14, 1]cpu" = torch.ops.aten.to.dtype(softmax, torch.float32, False, False, None)
        matmul_1: "f32[2, 4, 10, 8][320, 80, 8, 1]cpu" = torch.ops.aten.matmul.default(to_1, values)
        return (matmul_1,)
)";

// No mask; k^T as a permute, softmax over dim 3.
const char* kPlainParams =
    "q: \"f32[1, 3, 9, 16][432, 144, 16, 1]cpu\", k: \"f32[1, 3, 7, 16][336, 112, 16, 1]cpu\", v: \"f32[1, 3, 7, 4][84, 28, 4, 1]cpu\"";
const char* kPlainBody = R"(        permute: "f32[1, 3, 16, 7][336, 112, 1, 16]cpu" = torch.ops.aten.permute.default(k, [0, 1, 3, 2])
        matmul: "f32[1, 3, 9, 7][189, 63, 7, 1]cpu" = torch.ops.aten.matmul.default(q, permute)
        mul: "f32[1, 3, 9, 7][189, 63, 7, 1]cpu" = torch.ops.aten.mul.Scalar(matmul, 0.25)
        softmax: "f32[1, 3, 9, 7][189, 63, 7, 1]cpu" = torch.ops.aten.softmax.int(mul, 3)
        matmul_1: "f32[1, 3, 9, 4][108, 36, 4, 1]cpu" = torch.ops.aten.matmul.default(softmax, v)
        return (matmul_1,)
)";

struct Fused {
  Graph before, after;
  PassRun run;
  const Node* op = nullptr;
};

Fused fuse(Graph g) {
  Fused f;
  f.before = g;
  f.after = std::move(g);
  f.run = run_pass("fuse-attention", f.after);
  f.op = find_target(f.after, kEfficient);
  return f;
}

}  // namespace

class TestPassFuseAttention : public QObject {
  Q_OBJECT
 private slots:
  void nanogpt_tril_buffer_becomes_an_additive_bias() {
    Fused f = fuse(nano("-inf"));
    QVERIFY2(f.run.status.ok(), f.run.status.message().c_str());
    QVERIFY(f.run.stage.changed);
    QVERIFY(f.op);
    QVERIFY(!has_target(f.after, "aten::softmax.int"));
    QVERIFY(f.op->args.size() == 7 && f.op->args[3].is_node());  // the bias
    QCOMPARE(f.op->args[6].b, false);                             // not causal: the buffer's value is unknown
    KILN_VERIFY_EMPTY(compare_joints(f.before, f.after, 1e-5));
    // The bias comes from a comparison, so no gradient reaches it: the backward kernel is not asked for one.
    QCOMPARE(bias_gradient_asked(f.after), false);
  }

  void traced_causal_sdpa_becomes_is_causal() {
    Fused f = fuse(graph_of(kCausalParams, kCausalBody));
    QVERIFY(f.op);
    QVERIFY(f.op->args[3].is_none());
    QCOMPARE(f.op->args[6].b, true);
    QVERIFY(!has_target(f.after, "aten::tril.default"));  // the mask's nodes are gone with it
    QCOMPARE(f.run.stage.summary, std::string("fused 1 attention(s) into _scaled_dot_product_efficient_attention (1 causal)"));
    KILN_VERIFY_EMPTY(compare_joints(f.before, f.after, 1e-5));
  }

  void llama_div_additive_mask_and_casts() {
    Fused f = fuse(graph_of(kLlamaParams, kLlamaBody));
    QVERIFY(f.op);
    QVERIFY(f.op->args[3].is_node());
    QCOMPARE(f.op->kwargs.at(0).second.f, 1.0 / 2.8284271247461903);
    QVERIFY(!has_target(f.after, "aten::to.dtype"));
    KILN_VERIFY_EMPTY(compare_joints(f.before, f.after, 1e-5));  // the mask's gradient included
    QCOMPARE(bias_gradient_asked(f.after), true);
  }

  // A scaled mask on the add's left (as BERT's (1 - mask) * -1e4 + scores): the scores side is the one reaching the matmul.
  void scaled_mask_on_the_left_of_the_add() {
    Fused f = fuse(graph_of(
        "q: \"f32[1, 2, 4, 8][64, 32, 8, 1]cpu\", k: \"f32[1, 2, 4, 8][64, 32, 8, 1]cpu\", v: \"f32[1, 2, 4, 8][64, 32, 8, 1]cpu\", "
        "mask: \"f32[4, 4][4, 1]cpu\"",
        R"(        transpose: "f32[1, 2, 8, 4][64, 32, 1, 8]cpu" = torch.ops.aten.transpose.int(k, -2, -1)
        matmul: "f32[1, 2, 4, 4][32, 16, 4, 1]cpu" = torch.ops.aten.matmul.default(q, transpose)
        mul: "f32[4, 4][4, 1]cpu" = torch.ops.aten.mul.Scalar(mask, -3.0)
        add: "f32[1, 2, 4, 4][32, 16, 4, 1]cpu" = torch.ops.aten.add.Tensor(mul, matmul)
        softmax: "f32[1, 2, 4, 4][32, 16, 4, 1]cpu" = torch.ops.aten.softmax.int(add, -1)
        matmul_1: "f32[1, 2, 4, 8][64, 32, 8, 1]cpu" = torch.ops.aten.matmul.default(softmax, v)
        return (matmul_1,)
)"));
    QVERIFY(f.op);
    QCOMPARE(f.op->kwargs.at(0).second.f, 1.0);  // no scale: -3 is the mask's
    QVERIFY(f.op->args[3].is_node());
    KILN_VERIFY_EMPTY(compare_joints(f.before, f.after, 1e-5));
  }

  void plain_permute_and_no_mask() {
    Fused f = fuse(graph_of(kPlainParams, kPlainBody));
    QVERIFY(f.op);
    QVERIFY(f.op->args[3].is_none());
    QCOMPARE(f.op->args[6].b, false);
    QCOMPARE(f.op->kwargs.at(0).second.f, 0.25);
    // The output keeps the matmul's contiguous layout for its readers.
    KILN_VERIFY_EMPTY(check_lines(f.run.printed, {"_scaled_dot_product_efficient_attention", "clone"}));
    KILN_VERIFY_EMPTY(compare_joints(f.before, f.after, 1e-5));
  }

  void what_must_stay_unfused_stays() {
    // A finite fill differs from a bias on a fully masked row.
    Fused finite = fuse(nano("-1000000000.0"));
    QVERIFY(!finite.op);
    QVERIFY(!finite.run.stage.changed);
    // The probabilities are returned too.
    Fused weights = fuse(graph_of(kCausalParams, replace_all(kCausalBody, "return (matmul_1,)", "return (matmul_1, softmax)")));
    QVERIFY(!weights.op);
    // Dropout between softmax and the second matmul: its random numbers are the graph's.
    Fused dropout = fuse(graph_of(
        kPlainParams,
        replace_all(kPlainBody, "matmul_1: \"f32[1, 3, 9, 4][108, 36, 4, 1]cpu\" = torch.ops.aten.matmul.default(softmax, v)",
                                "dropout: \"f32[1, 3, 9, 7][189, 63, 7, 1]cpu\" = torch.ops.aten.dropout.default(softmax, 0.1, True)\n"
                                "        matmul_1: \"f32[1, 3, 9, 4][108, 36, 4, 1]cpu\" = torch.ops.aten.matmul.default(dropout, v)")));
    QVERIFY(!dropout.op);
    // 3-D (heads folded into the batch): not the op's layout.
    Fused flat = fuse(graph_of(
        "q: \"f32[6, 9, 16][144, 16, 1]cpu\", k: \"f32[6, 7, 16][112, 16, 1]cpu\", v: \"f32[6, 7, 4][28, 4, 1]cpu\"",
        R"(        transpose: "f32[6, 16, 7][112, 1, 16]cpu" = torch.ops.aten.transpose.int(k, 1, 2)
        matmul: "f32[6, 9, 7][63, 7, 1]cpu" = torch.ops.aten.matmul.default(q, transpose)
        softmax: "f32[6, 9, 7][63, 7, 1]cpu" = torch.ops.aten.softmax.int(matmul, -1)
        matmul_1: "f32[6, 9, 4][36, 4, 1]cpu" = torch.ops.aten.matmul.default(softmax, v)
        return (matmul_1,)
)"));
    QVERIFY(!flat.op);
    // Softmax over another dim is not attention.
    Fused other_dim = fuse(graph_of(kPlainParams, replace_all(kPlainBody, "softmax.int(mul, 3)", "softmax.int(mul, 2)")));
    QVERIFY(!other_dim.op);
    // An additive mask of another dtype promotes the scores: left alone.
    Fused promoted = fuse(graph_of(
        "xq: \"f16[2, 4, 10, 8][320, 80, 8, 1]cpu\", keys: \"f16[2, 4, 14, 8][448, 112, 8, 1]cpu\", "
        "values: \"f16[2, 4, 14, 8][448, 112, 8, 1]cpu\", mask: \"f32[10, 14][14, 1]cpu\"",
        R"(        transpose: "f16[2, 4, 8, 14][448, 112, 1, 8]cpu" = torch.ops.aten.transpose.int(keys, 2, 3)
        matmul: "f16[2, 4, 10, 14][560, 140, 14, 1]cpu" = torch.ops.aten.matmul.default(xq, transpose)
        add: "f32[2, 4, 10, 14][560, 140, 14, 1]cpu" = torch.ops.aten.add.Tensor(matmul, mask)
        softmax: "f32[2, 4, 10, 14][560, 140, 14, 1]cpu" = torch.ops.aten.softmax.int(add, -1, None)
        to_1: "f16[2, 4, 10, 14][560, 140, 14, 1]cpu" = torch.ops.aten.to.dtype(softmax, torch.float16, False, False, None)
        matmul_1: "f16[2, 4, 10, 8][320, 80, 8, 1]cpu" = torch.ops.aten.matmul.default(to_1, values)
        return (matmul_1,)
)"));
    QVERIFY(!promoted.op);
  }

  void float16_matches_with_casts() {
    std::string params = replace_all(kLlamaParams, "f32", "f16");
    params = replace_all(params, "mask: \"f16", "mask: \"f16");
    std::string body = replace_all(kLlamaBody, "\"f32[2, 4", "\"f16[2, 4");
    body = replace_all(body, "to: \"f16", "to: \"f32");
    body = replace_all(body, "softmax: \"f16", "softmax: \"f32");
    body = replace_all(body, "to.dtype(softmax, torch.float32", "to.dtype(softmax, torch.float16");
    Fused f = fuse(graph_of(params, body));
    QVERIFY2(f.op, f.run.printed.c_str());
    // The fused kernel rounds once where the graph rounds the scores to float16 first.
    KILN_VERIFY_EMPTY(compare_joints(f.before, f.after, 2e-2));
  }
};

QTEST_MAIN(TestPassFuseAttention)
#include "test_pass_fuse_attention.moc"
