// Functionalization: in-place chains, writes through slices, selects and
// other views (with view replay for views made before the write), written
// placeholders (copied back at the end), out= calls, graphs with nothing to
// do, and 200 random graphs of writes through views. Every case runs the
// graph before the pass eagerly (the interpreter's in-place semantics: writes
// go through shared storage) and after it, and wants the same outputs and the
// same final input values, bit for bit.
#include "compiler/passes/functionalize.h"
#include "compiler/passes/op_properties.h"
#include "compiler/pipeline/aten_interpreter.h"
#include "compiler/pipeline/pipeline.h"
#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::pipeline;
using namespace kiln::test;

namespace {

bool same_values(const Tensor& a, const Tensor& b, const std::string& what, std::string& why) {
  if (a.sizes() != b.sizes()) return why = what + ": sizes " + shape_str(b.sizes()) + " vs " + shape_str(a.sizes()), false;
  if (a.dtype() != b.dtype()) return why = what + ": dtypes differ", false;
  std::vector<double> x = values(a), y = values(b);
  for (size_t k = 0; k < x.size(); ++k)
    if (!(x[k] == y[k] || (std::isnan(x[k]) && std::isnan(y[k]))))
      return why = what + " element " + std::to_string(k) + ": " + std::to_string(y[k]) + " vs " + std::to_string(x[k]), false;
  return true;
}

// Runs `before` and `after` on copies of the same random inputs; "" when the
// outputs and the inputs' final values are identical.
std::string compare_eager(const Graph& before, const Graph& after, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::vector<Value> inputs = random_inputs(before, rng), a, b;
  for (const Value& v : inputs) a.emplace_back(v.to_tensor().clone()), b.emplace_back(v.to_tensor().clone());
  auto want = run_aten_graph(before, a);
  if (!want) return "eager run of the original failed: " + want.status().message();
  auto got = run_aten_graph(after, b);
  if (!got) return "run of the functional graph failed: " + got.status().message();
  if (want->size() != got->size()) return "output count differs";
  std::string why;
  for (size_t i = 0; i < want->size(); ++i)
    if (!same_values((*want)[i].to_tensor(), (*got)[i].to_tensor(), "output " + std::to_string(i), why)) return why;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_values(a[i].to_tensor(), b[i].to_tensor(), "input " + std::to_string(i) + " after the run", why)) return why;
  return "";
}

// The functional form: the only write left is a trailing copy_ into an input.
std::string only_trailing_input_copies(const Graph& g) {
  bool in_epilogue = false;
  for (const Node& n : g.nodes) {
    if (n.op == OpKind::Output) break;
    if (!writes_an_input(n)) {
      if (in_epilogue) return "node " + n.name + " follows the input copies";
      continue;
    }
    if (n.target != "aten::copy_.default") return "node " + n.name + " (" + n.target + ") still writes";
    const Node& dst = g[n.args.at(0).node_id()];
    if (dst.op != OpKind::Placeholder && dst.op != OpKind::GetAttr) return "node " + n.name + " copies into " + dst.name;
    in_epilogue = true;
  }
  return "";
}

size_t count_target(const Graph& g, std::string_view target) {
  return size_t(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.target == target; }));
}

// Functionalizes a copy of `g` with verification on; checks the functional
// form and the numerics; returns the run.
#define FUNCTIONALIZE_AND_CHECK(g, r)                          \
  Graph before_ = g;                                           \
  PassRun r = run_pass("functionalize", g);                    \
  QVERIFY2(r.status.ok(), r.status.message().c_str());         \
  QVERIFY(r.stage.changed);                                    \
  KILN_VERIFY_EMPTY(only_trailing_input_copies(g));            \
  KILN_VERIFY_EMPTY(compare_eager(before_, g));

// ---- random graphs of writes through views ----

struct RValue {
  std::string name;
  Shape shape;
};

class RandomMutationGraph {
 public:
  explicit RandomMutationGraph(uint32_t seed) : rng_(seed) {}

  std::string build() {
    Shape s{pick(2, 4), pick(2, 4)};
    std::string params;
    for (int i = 0, n = pick(1, 2); i < n; ++i) {
      std::string name = "x";
      name += std::to_string(i);
      if (i) params += ", ";
      params += name + ": \"" + type(s) + "\"";
      values_.push_back({name, s});
    }
    if (chance(0.6)) line("clone", "aten.clone.default", values_[0].name, s);
    for (int k = 0, n = pick(4, 14); k < n; ++k) step();
    std::string ret = values_.back().name;
    for (int k = pick(0, 3); k > 0; --k) ret += ", " + any().name;
    body_ += "        return (" + ret + ",)\n";
    return "class GraphModule(torch.nn.Module):\n    def forward(self, " + params + "):\n" + body_;
  }

 private:
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  const RValue& any() { return values_[size_t(pick(0, int64_t(values_.size()) - 1))]; }
  static std::string type(const Shape& s) {
    std::string t = "f32[";
    for (size_t i = 0; i < s.size(); ++i) {
      if (i) t += ", ";
      t += std::to_string(s[i]);
    }
    return t + "]";
  }
  const RValue& line(const std::string& base, const std::string& op, const std::string& args, const Shape& s) {
    std::string name = base + "_" + std::to_string(++counter_);
    body_ += "        " + name + ": \"" + type(s) + "\" = torch.ops." + op + "(" + args + ")\n";
    values_.push_back({name, s});
    return values_.back();
  }
  // A value of exactly this shape, if there is one.
  const RValue* same_shape(const Shape& s) {
    std::vector<const RValue*> c;
    for (const RValue& v : values_)
      if (v.shape == s) c.push_back(&v);
    return c.empty() ? nullptr : c[size_t(pick(0, int64_t(c.size()) - 1))];
  }

  void step() {
    // Recent values are often views: writing them is what the pass is for.
    RValue v = chance(0.5) ? values_[size_t(pick(std::max<int64_t>(0, int64_t(values_.size()) - 3), int64_t(values_.size()) - 1))] : any();
    int64_t nd = int64_t(v.shape.size());
    switch (pick(0, 9)) {
      case 0: {  // a pointwise read
        line("sin", "aten.sin.default", v.name, v.shape);
        break;
      }
      case 1: {
        if (nd == 0) break;
        int64_t d = pick(0, nd - 1), size = v.shape[size_t(d)];
        int64_t start = pick(0, size - 1), end = pick(start + 1, size);
        Shape s = v.shape;
        s[size_t(d)] = end - start;
        line("slice", "aten.slice.Tensor", v.name + ", " + std::to_string(d) + ", " + std::to_string(start) + ", " + std::to_string(end), s);
        break;
      }
      case 2: {
        if (nd == 0) break;
        int64_t d = pick(0, nd - 1);
        Shape s = v.shape;
        s.erase(s.begin() + d);
        line("select", "aten.select.int", v.name + ", " + std::to_string(d) + ", " + std::to_string(pick(0, v.shape[size_t(d)] - 1)), s);
        break;
      }
      case 3: {
        if (nd != 2) break;
        line("transpose", "aten.transpose.int", v.name + ", 0, 1", {v.shape[1], v.shape[0]});
        break;
      }
      case 4: line("mul_", "aten.mul_.Scalar", v.name + ", " + std::to_string(pick(-3, 3)), v.shape); break;
      case 5: line("add_", "aten.add_.Scalar", v.name + ", " + std::to_string(pick(1, 5)), v.shape); break;
      case 6: {
        if (const RValue* src = same_shape(v.shape)) line("copy_", "aten.copy_.default", v.name + ", " + src->name, v.shape);
        break;
      }
      case 7: {
        if (const RValue* other = same_shape(v.shape)) line("add_", "aten.add_.Tensor", v.name + ", " + other->name, v.shape);
        break;
      }
      case 8: line(chance(0.5) ? "relu_" : "neg_", chance(0.5) ? "aten.relu_.default" : "aten.neg_.default", v.name, v.shape); break;
      case 9: {
        if (nd == 0) break;
        line("unsqueeze", "aten.unsqueeze.default", v.name + ", 0", [&] { Shape s = v.shape; s.insert(s.begin(), 1); return s; }());
        break;
      }
    }
  }

  std::mt19937 rng_;
  std::vector<RValue> values_;
  std::string body_;
  int counter_ = 0;
};

}  // namespace

class TestPassFunctionalize : public QObject {
  Q_OBJECT
 private slots:
  void a_chain_of_in_place_ops_becomes_functional() {
    Graph g = graph_of("x: \"f32[2, 3]\", y: \"f64[3]\"",
                       "        add: \"f32[2, 3]\" = torch.ops.aten.add.Tensor(x, x)\n"
                       "        mul_: \"f32[2, 3]\" = torch.ops.aten.mul_.Scalar(add, 2)\n"
                       "        relu_: \"f32[2, 3]\" = torch.ops.aten.relu_.default(add)\n"
                       "        sub_: \"f32[2, 3]\" = torch.ops.aten.sub_.Tensor(relu_, y)\n"
                       "        sin: \"f32[2, 3]\" = torch.ops.aten.sin.default(add)\n"
                       "        return (sin, mul_, sub_)\n");
    FUNCTIONALIZE_AND_CHECK(g, r);
    QCOMPARE(r.stage.summary, std::string("3 writes made functional"));
    // sub with a float64 tensor promotes; the write keeps add's float32.
    KILN_CHECK_LINES(r.printed, {"= torch.ops.aten.mul.Scalar(add, 2)",
                                 "= torch.ops.aten.relu.default(mul)",
                                 "sub: \"f64[2, 3][3, 1]\" = torch.ops.aten.sub.Tensor(relu, y)",
                                 "_to_copy: \"f32[2, 3][3, 1]\" = torch.ops.aten._to_copy.default(sub, dtype = torch.float32)",
                                 "= torch.ops.aten.sin.default(_to_copy)",
                                 "return (sin, _to_copy, _to_copy)"});
    // Each new node names the write it stands for.
    QCOMPARE(g[g.find("relu")].meta.from, (std::vector<std::string>{"relu_"}));
    QCOMPARE(g[g.find("_to_copy")].meta.from, (std::vector<std::string>{"sub_"}));
  }

  // unsqueeze_ and t_ change self's sizes, not its values: self is that view
  // from there on (as a 2022 make_fx repro's unsqueeze_ of its input); the
  // interpreter and the pass agree, and nothing is copied back.
  void an_in_place_view_makes_self_that_view() {
    Graph g = graph_of("x: \"f32[2, 3]\"",
                       "        add: \"f32[2, 3]\" = torch.ops.aten.add.Tensor(x, x)\n"
                       "        unsqueeze_: \"f32[1, 2, 3]\" = torch.ops.aten.unsqueeze_.default(add, 0)\n"
                       "        mul: \"f32[1, 2, 3]\" = torch.ops.aten.mul.Scalar(add, 2)\n"
                       "        sin: \"f32[2, 3]\" = torch.ops.aten.sin.default(x)\n"
                       "        t_: \"f32[3, 2]\" = torch.ops.aten.t_.default(sin)\n"
                       "        neg: \"f32[3, 2]\" = torch.ops.aten.neg.default(sin)\n"
                       "        unsqueeze__1: \"f32[1, 2, 3]\" = torch.ops.aten.unsqueeze_.default(x, 0)\n"
                       "        return (mul, unsqueeze_, neg, t_, x)\n");
    std::mt19937 rng(3);
    std::vector<Value> in = random_inputs(g, rng);
    auto eager = run_aten_graph(g, in);
    QVERIFY2(eager.ok(), eager.status().message().c_str());
    QCOMPARE((*eager)[0].to_tensor().sizes(), (Shape{1, 2, 3}));
    QCOMPARE((*eager)[2].to_tensor().sizes(), (Shape{3, 2}));
    QCOMPARE((*eager)[4].to_tensor().sizes(), (Shape{1, 2, 3}));
    FUNCTIONALIZE_AND_CHECK(g, r);
    QCOMPARE(count_target(g, "aten::copy_.default"), size_t(0));
    QCOMPARE(count_target(g, "aten::t.default"), size_t(1));
  }

  void a_copy_into_a_slice_scatters_into_the_intermediate() {
    Graph g = graph_of("x: \"f32[4, 3]\", y: \"f32[2, 3]\"",
                       "        clone: \"f32[4, 3]\" = torch.ops.aten.clone.default(x)\n"
                       "        slice_1: \"f32[2, 3]\" = torch.ops.aten.slice.Tensor(clone, 0, 1, 3)\n"
                       "        copy_: \"f32[2, 3]\" = torch.ops.aten.copy_.default(slice_1, y)\n"
                       "        mul: \"f32[4, 3]\" = torch.ops.aten.mul.Tensor(clone, clone)\n"
                       "        return (mul, slice_1)\n");
    FUNCTIONALIZE_AND_CHECK(g, r);
    KILN_CHECK_LINES(r.printed, {"= torch.ops.aten.copy.default(slice_1, y)",
                                 "= torch.ops.aten.slice_scatter.default(clone, copy, 0, 1, 3)",
                                 "= torch.ops.aten.mul.Tensor(slice_scatter, slice_scatter)",
                                 "return (mul, copy)"});
    QCOMPARE(g[g.find("slice_scatter")].meta.from, (std::vector<std::string>{"copy_"}));
  }

  void a_select_write_shows_in_an_overlapping_view_made_before_it() {
    Graph g = graph_of("x: \"f32[3, 4]\"",
                       "        clone: \"f32[3, 4]\" = torch.ops.aten.clone.default(x)\n"
                       "        t: \"f32[4, 3]\" = torch.ops.aten.t.default(clone)\n"
                       "        slice_1: \"f32[4, 2]\" = torch.ops.aten.slice.Tensor(t, 1, 0, 2)\n"
                       "        select: \"f32[4]\" = torch.ops.aten.select.int(clone, 0, 1)\n"
                       "        mul_: \"f32[4]\" = torch.ops.aten.mul_.Scalar(select, 10)\n"
                       "        add: \"f32[4, 2]\" = torch.ops.aten.add.Scalar(slice_1, 1)\n"
                       "        diagonal: \"f32[3]\" = torch.ops.aten.diagonal.default(clone)\n"
                       "        return (add, diagonal, clone)\n");
    FUNCTIONALIZE_AND_CHECK(g, r);
    // slice_1 (of t, of clone) was made before the write: both are made again from the new base.
    KILN_CHECK_LINES(r.printed, {"= torch.ops.aten.select_scatter.default(clone, mul, 0, 1)",
                                 "= torch.ops.aten.t.default(select_scatter)",
                                 "= torch.ops.aten.slice.Tensor(t_1, 1, 0, 2)",
                                 "= torch.ops.aten.add.Scalar(slice_2, 1)",
                                 "= torch.ops.aten.diagonal.default(select_scatter)",
                                 "return (add, diagonal, select_scatter)"});
    QCOMPARE(r.stage.summary, std::string("1 write made functional, 1 scattered into a base, 2 views replayed"));
    QCOMPARE(g[g.find("t_1")].meta.from, (std::vector<std::string>{"t"}));
  }

  void a_write_through_a_view_chain_scatters_up_every_step() {
    Graph g = graph_of("x: \"f32[2, 3, 4]\"",
                       "        clone: \"f32[2, 3, 4]\" = torch.ops.aten.clone.default(x)\n"
                       "        view: \"f32[6, 4]\" = torch.ops.aten.view.default(clone, [6, 4])\n"
                       "        transpose: \"f32[4, 6]\" = torch.ops.aten.transpose.int(view, 0, 1)\n"
                       "        slice_1: \"f32[4, 3]\" = torch.ops.aten.slice.Tensor(transpose, 1, 1, 6, 2)\n"
                       "        unsqueeze: \"f32[1, 4, 3]\" = torch.ops.aten.unsqueeze.default(slice_1, 0)\n"
                       "        fill_: \"f32[1, 4, 3]\" = torch.ops.aten.fill_.Scalar(unsqueeze, 7)\n"
                       "        split = torch.ops.aten.split.Tensor(clone, 1, 1)\n"
                       "        getitem: \"f32[2, 1, 4]\" = split[2]\n"
                       "        zero_: \"f32[2, 1, 4]\" = torch.ops.aten.zero_.default(getitem)\n"
                       "        permute: \"f32[4, 2, 3]\" = torch.ops.aten.permute.default(clone, [2, 0, 1])\n"
                       "        return (permute, view, fill_)\n");
    FUNCTIONALIZE_AND_CHECK(g, r);
    QCOMPARE(count_target(g, "aten::reshape.default"), size_t(2));  // unsqueeze and view, undone
    QCOMPARE(count_target(g, "aten::slice_scatter.default"), size_t(2));  // slice_1 and the split item
  }

  // as_strided counts its offset from the storage's start, so a write through
  // an as_strided of a slice scatters into the slice's base.
  void diagonal_and_as_strided_writes_scatter() {
    Graph g = graph_of("x: \"f32[3, 3]\", y: \"f32[3]\"",
                       "        clone: \"f32[3, 3]\" = torch.ops.aten.clone.default(x)\n"
                       "        diagonal: \"f32[3]\" = torch.ops.aten.diagonal.default(clone)\n"
                       "        copy_: \"f32[3]\" = torch.ops.aten.copy_.default(diagonal, y)\n"
                       "        as_strided: \"f32[2, 2]\" = torch.ops.aten.as_strided.default(clone, [2, 2], [1, 3], 1)\n"
                       "        add_: \"f32[2, 2]\" = torch.ops.aten.add_.Scalar(as_strided, 10)\n"
                       "        slice_1: \"f32[2, 3]\" = torch.ops.aten.slice.Tensor(clone, 0, 1, 3)\n"
                       "        as_strided_1: \"f32[2]\" = torch.ops.aten.as_strided.default(slice_1, [2], [4], 3)\n"
                       "        mul_: \"f32[2]\" = torch.ops.aten.mul_.Scalar(as_strided_1, -1)\n"
                       "        diagonal_1: \"f32[2]\" = torch.ops.aten.diagonal.default(x, 1)\n"
                       "        neg_: \"f32[2]\" = torch.ops.aten.neg_.default(diagonal_1)\n"
                       "        return (clone, diagonal)\n");
    FUNCTIONALIZE_AND_CHECK(g, r);
    KILN_CHECK_LINES(r.printed, {"= torch.ops.aten.diagonal_scatter.default(clone, copy)",
                                 "= torch.ops.aten.as_strided_scatter.default(diagonal_scatter, add, [2, 2], [1, 3], 1)",
                                 "= torch.ops.aten.as_strided_scatter.default(as_strided_scatter, mul, [2], [4], 3)",
                                 "= torch.ops.aten.diagonal_scatter.default(x, neg, 1)",
                                 "= torch.ops.aten.copy_.default(x, diagonal_scatter_1)",
                                 "return (as_strided_scatter_1, diagonal_2)"});
  }

  void a_written_placeholder_is_copied_back_at_the_end() {
    Graph g = graph_of("x: \"f32[3, 2]\", y: \"f32[3, 2]\"",
                       "        add_: \"f32[3, 2]\" = torch.ops.aten.add_.Tensor(x, y)\n"
                       "        mul: \"f32[3, 2]\" = torch.ops.aten.mul.Scalar(x, 2)\n"
                       "        select: \"f32[2]\" = torch.ops.aten.select.int(y, 0, 2)\n"
                       "        fill_: \"f32[2]\" = torch.ops.aten.fill_.Scalar(select, 5)\n"
                       "        return (mul,)\n");
    FUNCTIONALIZE_AND_CHECK(g, r);
    KILN_CHECK_LINES(r.printed, {"= torch.ops.aten.add.Tensor(x, y)",
                                 "= torch.ops.aten.mul.Scalar(add, 2)",
                                 "= torch.ops.aten.select_scatter.default(y, fill, 0, 2)",
                                 "= torch.ops.aten.copy_.default(x, add)",
                                 "= torch.ops.aten.copy_.default(y, select_scatter)",
                                 "return (mul,)"});
    QCOMPARE(r.stage.summary, std::string("2 writes made functional, 1 scattered into a base, 2 inputs copied back"));
    QCOMPARE(g[g.find("copy__1")].meta.from, (std::vector<std::string>{"fill_"}));
  }

  void an_out_call_becomes_its_functional_overload() {
    Graph g = graph_of("x: \"f32[3]\", y: \"f32[3]\", buf: \"f32[3]\"",
                       "        empty: \"f32[3]\" = torch.ops.aten.empty.memory_format([3], dtype = torch.float32)\n"
                       "        add: \"f32[3]\" = torch.ops.aten.add.out(x, y, alpha = 2, out = empty)\n"
                       "        mul: \"f32[3]\" = torch.ops.aten.mul.Scalar(empty, 2)\n"
                       "        sin: \"f32[3]\" = torch.ops.aten.sin.out(mul, out = buf)\n"
                       "        return (mul, add)\n");
    FUNCTIONALIZE_AND_CHECK(g, r);
    KILN_CHECK_LINES(r.printed, {"= torch.ops.aten.add.Tensor(x, y, alpha = 2)",
                                 "= torch.ops.aten.mul.Scalar(add_1, 2)",
                                 "= torch.ops.aten.sin.default(mul)",
                                 "= torch.ops.aten.copy_.default(buf, sin_1)",
                                 "return (mul, add_1)"});
    // Nothing reads the buffer's old contents any more; DCE removes it.
    QVERIFY(absent(r.printed, "(empty"));
  }

  void a_graph_without_writes_is_unchanged() {
    Graph g = graph_of("x: \"f32[3, 2]\"",
                       "        t: \"f32[2, 3]\" = torch.ops.aten.t.default(x)\n"
                       "        clone: \"f32[2, 3]\" = torch.ops.aten.clone.default(t)\n"
                       "        sin: \"f32[2, 3]\" = torch.ops.aten.sin.default(clone)\n"
                       "        return (sin,)\n");
    uint64_t hash = structural_hash(g);
    PassRun r = run_pass("functionalize", g);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QVERIFY(!r.stage.changed);
    QCOMPARE(structural_hash(g), hash);
  }

  void a_write_through_an_expand_is_an_error_naming_the_node() {
    Graph g = graph_of("x: \"f32[3]\"",
                       "        clone: \"f32[3]\" = torch.ops.aten.clone.default(x)\n"
                       "        expand: \"f32[2, 3]\" = torch.ops.aten.expand.default(clone, [2, 3])\n"
                       "        add_: \"f32[2, 3]\" = torch.ops.aten.add_.Scalar(expand, 1)\n"
                       "        return (add_,)\n");
    PassRun r = run_pass("functionalize", g);
    QVERIFY(!r.status.ok());
    QVERIFY2(r.status.message().find("add_") != std::string::npos &&
                 r.status.message().find("expand") != std::string::npos,
             r.status.message().c_str());
  }

  void the_pipeline_functionalizes_first() {
    QCOMPARE(graph_pass_pipeline().front(), std::string("functionalize"));
    Graph g = graph_of("x: \"f32[4]\"",
                       "        clone: \"f32[4]\" = torch.ops.aten.clone.default(x)\n"
                       "        slice_1: \"f32[2]\" = torch.ops.aten.slice.Tensor(clone, 0, 0, 2)\n"
                       "        mul_: \"f32[2]\" = torch.ops.aten.mul_.Scalar(slice_1, 1)\n"
                       "        gelu: \"f32[4]\" = torch.ops.aten.gelu.default(clone)\n"
                       "        return (gelu,)\n");
    Options options;
    options.instrumentation.verify_each = true;
    CompileResult c = compile(g, options);
    QVERIFY2(c.status.ok(), c.status.message().c_str());
    KILN_VERIFY_EMPTY(only_trailing_input_copies(c.graph));
    KILN_VERIFY_EMPTY(compare_eager(g, c.graph));
  }

  void random_writes_through_views_match_eager() {
    int with_writes = 0, with_scatters = 0, with_replays = 0, with_input_copies = 0;
    for (uint32_t seed = 0; seed < 200; ++seed) {
      std::string text = RandomMutationGraph(seed).build();
      Graph g = parse_graph(text);
      Graph before = g;
      bool writes = graph_has_mutation(g);
      PassRun r = run_pass("functionalize", g);
      QVERIFY2(r.status.ok(), qPrintable(QString::fromStdString("seed " + std::to_string(seed) + ": " + r.status.message() + "\n" + text)));
      QCOMPARE(r.stage.changed, writes);
      with_writes += writes;
      with_scatters += !absent(r.printed, "_scatter.default(");
      with_replays += !absent(r.printed, "replayed");
      with_input_copies += !absent(r.printed, "copied back");
      std::string why = only_trailing_input_copies(g);
      if (why.empty()) why = compare_eager(before, g, seed);
      if (why.empty()) {
        // The whole pipeline too: the passes after functionalize see the functional body.
        Options options;
        options.instrumentation.verify_each = true;
        CompileResult c = compile(before, options);
        why = c.status.ok() ? compare_eager(before, c.graph, seed) : "compile: " + c.status.message();
      }
      if (!why.empty()) fprintf(stderr, "%s\n%s", text.c_str(), r.printed.c_str());
      QVERIFY2(why.empty(), qPrintable(QString::fromStdString("seed " + std::to_string(seed) + ": " + why)));
    }
    qInfo("200 graphs: %d with writes, %d with scatters, %d with replayed views, %d writing inputs", with_writes,
          with_scatters, with_replays, with_input_copies);
    QVERIFY(with_writes > 150 && with_scatters > 60 && with_replays > 60 && with_input_copies > 100);
  }
};

QTEST_GUILESS_MAIN(TestPassFunctionalize)
#include "test_pass_functionalize.moc"
