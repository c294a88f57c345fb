// View canonicalization: one permute for any t/transpose/permute chain,
// one view for a view/reshape chain, no-op views gone; strides decide
// view versus reshape; symbolic shapes and mutating graphs are left alone.
#include "compiler/passes/canonicalize_views.h"
#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// Runs the pass; checks the printed graph, that it runs the same, and that
// the rewritten graph is a fixed point (a second run changes nothing).
std::string canonicalize(Graph& g, const std::vector<std::string>& lines, const std::string& summary = "") {
  Graph before = g;
  PassRun r = run_pass("canonicalize-views", g);
  if (!r.status.ok()) return r.status.message();
  if (!r.stage.changed) return "unchanged";
  if (!summary.empty() && r.stage.summary != summary) return "summary: " + r.stage.summary;
  if (std::string why = check_lines(r.printed, lines); !why.empty()) return why;
  if (std::string why = compare_random_runs(before, g); !why.empty()) return why;
  Graph again = g;
  if (run_pass("canonicalize-views", again).stage.changed) return "not a fixed point:\n" + print_graph_module(g);
  return "";
}

}  // namespace

class TestPassCanonicalizeViews : public QObject {
  Q_OBJECT
 private slots:
  void t_and_transpose_become_permute() {
    Graph g = graph_of("x: \"f32[2, 3]\", y: \"f32[2, 3, 4]\", z: \"f32[5]\"",
                       "        t: \"f32[3, 2]\" = torch.ops.aten.t.default(x)\n"
                       "        transpose: \"f32[4, 3, 2]\" = torch.ops.aten.transpose.int(y, -1, 0)\n"
                       "        t_1: \"f32[5]\" = torch.ops.aten.t.default(z)\n"
                       "        return (t, transpose, t_1)\n");
    KILN_VERIFY_EMPTY(canonicalize(g, {"permute: \"f32[3, 2][1, 3]cpu\" = torch.ops.aten.permute.default(x, [1, 0])",
                                       "permute_1: \"f32[4, 3, 2][1, 4, 12]cpu\" = torch.ops.aten.permute.default(y, [2, 1, 0])",
                                       "return (permute, permute_1, z)"},
                                   "rewrote 3 views"));
    QCOMPARE(g[g.find("permute_1")].meta.from, (std::vector<std::string>{"transpose"}));
  }

  void permute_chains_compose() {
    Graph g = graph_of("x: \"f32[2, 3, 4]\"",
                       "        permute: \"f32[3, 4, 2]\" = torch.ops.aten.permute.default(x, [1, 2, 0])\n"
                       "        transpose: \"f32[2, 4, 3]\" = torch.ops.aten.transpose.int(permute, 0, 2)\n"
                       "        permute_1: \"f32[4, 2, 3]\" = torch.ops.aten.permute.default(transpose, [1, 0, 2])\n"
                       "        return (permute_1, permute)\n");
    // x.permute(1, 2, 0).transpose(0, 2) = x.permute(0, 2, 1); then .permute(1, 0, 2) = x.permute(2, 0, 1).
    // The intermediate permute made for `transpose` is read by nothing once
    // permute_1 is composed, so it is gone.
    KILN_VERIFY_EMPTY(canonicalize(g, {"permute: ", "permute_3: \"f32[4, 2, 3][1, 12, 4]cpu\" = torch.ops.aten.permute.default(x, [2, 0, 1])",
                                       "return (permute_3, permute)"}));
    QCOMPARE(g.size(), size_t(4));
    QCOMPARE(g[g.find("permute_3")].meta.from, (std::vector<std::string>{"permute_1", "transpose", "permute"}));
  }

  void inverse_permutes_cancel() {
    Graph g = graph_of("x: \"f32[2, 3, 4]\", y: \"f32[2, 3]\"",
                       "        permute: \"f32[4, 2, 3]\" = torch.ops.aten.permute.default(x, [2, 0, 1])\n"
                       "        permute_1: \"f32[2, 3, 4]\" = torch.ops.aten.permute.default(permute, [1, 2, 0])\n"
                       "        t: \"f32[3, 2]\" = torch.ops.aten.t.default(y)\n"
                       "        t_1: \"f32[2, 3]\" = torch.ops.aten.t.default(t)\n"
                       "        permute_2: \"f32[2, 3, 4]\" = torch.ops.aten.permute.default(x, [0, 1, 2])\n"
                       "        add: \"f32[2, 3, 4]\" = torch.ops.aten.add.Tensor(permute_1, permute_2)\n"
                       "        return (add, t_1)\n");
    KILN_VERIFY_EMPTY(canonicalize(g, {"add: \"f32[2, 3, 4]\" = torch.ops.aten.add.Tensor(x, x)", "return (add, y)"}));
    QCOMPARE(g.size(), size_t(4));
  }

  void view_and_reshape_chains_collapse() {
    Graph g = graph_of("x: \"f32[2, 3, 4]\"",
                       "        view: \"f32[6, 4]\" = torch.ops.aten.view.default(x, [6, 4])\n"
                       "        reshape: \"f32[24]\" = torch.ops.aten.reshape.default(view, [-1])\n"
                       "        _unsafe_view: \"f32[4, 6]\" = torch.ops.aten._unsafe_view.default(reshape, [4, 6])\n"
                       "        view_1: \"f32[2, 3, 4]\" = torch.ops.aten.view.default(view, [2, 3, 4])\n"
                       "        sin: \"f32[2, 3, 4]\" = torch.ops.aten.sin.default(view_1)\n"
                       "        return (_unsafe_view, sin)\n");
    KILN_VERIFY_EMPTY(canonicalize(g, {"view_3: \"f32[4, 6][6, 1]cpu\" = torch.ops.aten.view.default(x, [4, 6])",
                                       "sin: \"f32[2, 3, 4]\" = torch.ops.aten.sin.default(x)", "return (view_3, sin)"}));
    QCOMPARE(g.size(), size_t(4));
    QVERIFY(g.find("view") == kNoNode && g.find("reshape") == kNoNode);
  }

  void strides_decide_between_view_and_reshape() {
    // A reshape of a contiguous tensor is a view; of a transposed one it copies and stays a reshape.
    Graph g = graph_of("x: \"f32[2, 3]\"",
                       "        reshape: \"f32[6]\" = torch.ops.aten.reshape.default(x, [6])\n"
                       "        permute: \"f32[3, 2]\" = torch.ops.aten.permute.default(x, [1, 0])\n"
                       "        reshape_1: \"f32[6]\" = torch.ops.aten.reshape.default(permute, [6])\n"
                       "        view: \"f32[2, 3]\" = torch.ops.aten.view.default(reshape_1, [2, 3])\n"
                       "        return (reshape, view)\n");
    // reshape_1 stays (no view of a transposed tensor); view of it collapses into one reshape of the permute.
    KILN_VERIFY_EMPTY(canonicalize(g, {"view_1: \"f32[6][1]cpu\" = torch.ops.aten.view.default(x, [6])",
                                       "reshape_2: \"f32[2, 3][3, 1]cpu\" = torch.ops.aten.reshape.default(permute, [2, 3])",
                                       "return (view_1, reshape_2)"}));
  }

  void no_op_views_expands_and_aliases_go() {
    Graph g = graph_of("x: \"f32[2, 3]\"",
                       "        view: \"f32[2, 3]\" = torch.ops.aten.view.default(x, [2, -1])\n"
                       "        expand: \"f32[2, 3]\" = torch.ops.aten.expand.default(view, [-1, 3])\n"
                       "        alias: \"f32[2, 3]\" = torch.ops.aten.alias.default(expand)\n"
                       "        reshape: \"f32[2, 3]\" = torch.ops.aten.reshape.default(alias, [2, 3])\n"
                       "        expand_1: \"f32[4, 2, 3]\" = torch.ops.aten.expand.default(reshape, [4, 2, 3])\n"
                       "        return (expand_1,)\n");
    KILN_VERIFY_EMPTY(canonicalize(g, {"expand_1: \"f32[4, 2, 3]\" = torch.ops.aten.expand.default(x, [4, 2, 3])"},
                                   "rewrote 4 views"));
  }

  void symbolic_shapes_and_mutation_are_left_alone() {
    Graph sym = graph_of("s0: \"Sym(s0)\", x: \"f32[s0, 3]\"",
                         "        t: \"f32[3, s0]\" = torch.ops.aten.t.default(x)\n"
                         "        return (t,)\n");
    PassRun r = run_pass("canonicalize-views", sym);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QVERIFY(!r.stage.changed);
    Graph mutating = graph_of("x: \"f32[2, 3]\"",
                              "        t: \"f32[3, 2]\" = torch.ops.aten.t.default(x)\n"
                              "        add_: \"f32[3, 2]\" = torch.ops.aten.add_.Tensor(t, 1)\n"
                              "        return (x,)\n");
    QVERIFY(!run_pass("canonicalize-views", mutating).stage.changed);
  }
};

QTEST_GUILESS_MAIN(TestPassCanonicalizeViews)
#include "test_pass_canonicalize_views.moc"
