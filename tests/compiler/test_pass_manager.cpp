// The pass manager's instrumentation: snapshots only after changes,
// "unchanged" records, printing, stop-after N (exactly N applications, for
// several N), verification catching broken passes, provenance, the registry
// and compile().
#include <set>

#include "compiler/pipeline/pipeline.h"
#include "compiler/pipeline/provenance.h"
#include "pass_test_util.h"

using namespace kiln;
using namespace kiln::pipeline;
using namespace kiln::test;

namespace {

// Appends neg(<first output>) and returns it in its place: a change every time.
PassResult append_neg(Graph& g, const PassContext&) {
  Node out = g.nodes.back();
  g.nodes.pop_back();
  Arg& first = out.args[0].items[0];
  Node neg;
  neg.name = "neg_" + std::to_string(g.size());
  neg.target = "aten::neg.default";
  neg.args = {first};
  neg.meta.val = g[first.node_id()].meta.val;
  neg.meta.from = g[first.node_id()].meta.from;
  first = Arg::node(g.add(std::move(neg)));
  g.add(std::move(out));
  return {true, "appended a neg"};
}
PassResult nothing(Graph&, const PassContext&) { return {}; }
PassResult reads_a_later_node(Graph& g, const PassContext&) {
  g.nodes[1].args[0] = Arg::node(NodeId(g.size() - 2));
  return {true, ""};
}
PassResult changes_but_says_not(Graph& g, const PassContext& ctx) {
  append_neg(g, ctx);
  return {};
}
PassResult says_changed_but_not(Graph&, const PassContext&) { return {true, ""}; }
PassResult throws(Graph&, const PassContext&) { KILN_FAIL("boom"); }
PassResult invents_provenance(Graph& g, const PassContext& ctx) {
  append_neg(g, ctx);
  g.nodes[g.size() - 2].meta.from = {"no_such_node"};
  return {true, ""};
}
PassResult forgets_provenance(Graph& g, const PassContext& ctx) {
  append_neg(g, ctx);
  g.nodes[g.size() - 2].meta.from.clear();
  return {true, ""};
}

const Pass kAppend{"append-neg", &append_neg, "test: appends a neg"};
const Pass kNothing{"nothing", &nothing, "test: changes nothing"};

Graph small_graph() {
  return graph_of("x: \"f32[3]\"",
                  "        sin: \"f32[3]\" = torch.ops.aten.sin.default(x)\n"
                  "        return (sin,)\n");
}

size_t count_target(const Graph& g, const std::string& target) {
  size_t n = 0;
  for (const Node& node : g.nodes) n += node.target == target;
  return n;
}

PassManagerOptions verifying() {
  PassManagerOptions o;
  o.verify_each = true;
  return o;
}

// A graph on which every pass of the pipeline changes something.
Graph busy_graph() {
  return graph_of("x: \"f32[2, 3]\"",
                  "        t: \"f32[3, 2]\" = torch.ops.aten.t.default(x)\n"
                  "        t_1: \"f32[2, 3]\" = torch.ops.aten.t.default(t)\n"
                  "        mul: \"f32[2, 3]\" = torch.ops.aten.mul.Scalar(t_1, 1)\n"
                  "        full: \"f32[3]\" = torch.ops.aten.full.default([3], 2.0)\n"
                  "        add: \"f32[3]\" = torch.ops.aten.add.Scalar(full, 1)\n"
                  "        mul_: \"f32[3]\" = torch.ops.aten.mul_.Scalar(add, 1)\n"
                  "        sin: \"f32[2, 3]\" = torch.ops.aten.sin.default(mul)\n"
                  "        sin_1: \"f32[2, 3]\" = torch.ops.aten.sin.default(mul)\n"
                  "        cos: \"f32[2, 3]\" = torch.ops.aten.cos.default(x)\n"
                  "        add_1: \"f32[2, 3]\" = torch.ops.aten.add.Tensor(sin, add)\n"
                  "        add_2: \"f32[2, 3]\" = torch.ops.aten.add.Tensor(add_1, sin_1)\n"
                  "        return (add_2,)\n");
}

}  // namespace

class TestPassManager : public QObject {
  Q_OBJECT
 private slots:
  void snapshots_only_after_changes() {
    PassManager pm(verifying());
    for (const Pass& p : {kAppend, kNothing, kAppend}) pm.add(p);
    Graph g = small_graph();
    QVERIFY(pm.run(g).ok());
    const auto& st = pm.stages();
    QCOMPARE(st.size(), size_t(3));
    QVERIFY(st[0].changed && st[0].graph);
    QVERIFY(!st[1].changed && !st[1].graph);
    QVERIFY(st[2].changed && st[2].graph);
    QCOMPARE(st[0].summary, std::string("appended a neg"));
    for (size_t i = 0; i < st.size(); ++i) {
      QCOMPARE(st[i].application, int(i + 1));
      QVERIFY(st[i].seconds >= 0 && st[i].seconds < 10);
    }
    // Each snapshot is the graph after its pass, kept apart from later edits.
    QCOMPARE(count_target(*st[0].graph, "aten::neg.default"), size_t(1));
    QCOMPARE(count_target(*st[2].graph, "aten::neg.default"), size_t(2));
    QCOMPARE(structural_hash(*st[2].graph), structural_hash(g));
  }

  void printing_after_all_after_one_and_only_on_change() {
    std::ostringstream all, one, changes;
    PassManagerOptions o = verifying();
    o.print_after_all = true;
    o.print_to = &all;
    PassManager pm(o);
    pm.add(kAppend);
    pm.add(kNothing);
    Graph g = small_graph();
    QVERIFY(pm.run(g).ok());
    KILN_CHECK_LINES(all.str(), {"// -----// Graph after append-neg (application 1): appended a neg //----- //",
                                 "class GraphModule", "neg_2: \"f32[3]\" = torch.ops.aten.neg.default(sin)",
                                 "// -----// nothing (application 2): unchanged //----- //"});

    o.print_after_all = false;
    o.print_after = {"nothing"};
    o.print_to = &one;
    PassManager named(o);
    named.add(kAppend);
    named.add(kNothing);
    g = small_graph();
    QVERIFY(named.run(g).ok());
    QCOMPARE(one.str(), std::string("// -----// nothing (application 2): unchanged //----- //\n"));

    o.print_after = {"nothing", "append-neg"};
    o.print_only_on_change = true;
    o.print_to = &changes;
    PassManager changed_only(o);
    changed_only.add(kNothing);
    changed_only.add(kAppend);
    g = small_graph();
    QVERIFY(changed_only.run(g).ok());
    QVERIFY(absent(changes.str(), "unchanged"));
    KILN_CHECK_LINES(changes.str(), {"Graph after append-neg (application 2)"});
  }

  void stop_after_n_runs_exactly_n_applications() {
    const std::vector<Pass> passes = {kAppend, kNothing, kAppend, kAppend, kNothing, kAppend};
    for (int n = 0; n <= 8; ++n) {
      PassManagerOptions o = verifying();
      o.stop_after = n;
      PassManager pm(o);
      for (const Pass& p : passes) pm.add(p);
      Graph g = small_graph();
      QVERIFY(pm.run(g).ok());
      int ran = std::min(n, int(passes.size()));
      QCOMPARE(pm.applications(), ran);
      QCOMPARE(int(pm.stages().size()), ran);
      QCOMPARE(pm.stopped(), n < int(passes.size()));
      size_t appends = 0;
      for (int i = 0; i < ran; ++i) appends += passes[size_t(i)].name == kAppend.name;
      QCOMPARE(count_target(g, "aten::neg.default"), appends);
      if (ran > 0) QCOMPARE(pm.stages().back().name, std::string(passes[size_t(ran - 1)].name));
    }
  }

  void stop_after_counts_across_runs() {
    PassManagerOptions o = verifying();
    o.stop_after = 3;
    PassManager pm(o);
    pm.add(kAppend);
    pm.add(kAppend);
    Graph g = small_graph();
    QVERIFY(pm.run(g).ok());
    QVERIFY(!pm.stopped());
    QVERIFY(pm.run(g).ok());
    QVERIFY(pm.stopped());
    QCOMPARE(pm.applications(), 3);
    QCOMPARE(count_target(g, "aten::neg.default"), size_t(3));
  }

  void stop_after_bisects_the_real_pipeline() {
    // compile() with --stop-after N equals running the first N passes by hand.
    std::vector<std::string> names = graph_pass_pipeline();
    for (int n = 0; n <= int(names.size()) + 1; ++n) {
      Options options;
      options.instrumentation = verifying();
      options.instrumentation.stop_after = n;
      CompileResult r = compile(busy_graph(), options);
      QVERIFY2(r.status.ok(), r.status.message().c_str());
      int ran = std::min(n, int(names.size()));
      QCOMPARE(int(r.stages.size()), ran + 1);  // "input" first
      QCOMPARE(r.stopped, n < int(names.size()));
      Graph by_hand = busy_graph();
      ConstantTable constants;
      PassContext ctx{&constants};
      for (int i = 0; i < ran; ++i) {
        QVERIFY(find_pass(names[size_t(i)])->run(by_hand, ctx).changed);  // busy_graph gives every pass work
        QCOMPARE(r.stages[size_t(i + 1)].name, names[size_t(i)]);
      }
      QCOMPARE(structural_hash(r.graph), structural_hash(by_hand));
      KILN_VERIFY_EMPTY(compare_random_runs(busy_graph(), r.graph, r.constants));
    }
  }

  void verification_catches_broken_passes() {
    struct Case {
      Pass pass;
      std::string message;
    };
    const std::vector<Case> cases = {
        {{"reads-later", &reads_a_later_node, ""}, "reads 'neg_2' before it is defined"},
        {{"silent-change", &changes_but_says_not, ""}, "pass 'silent-change' reported no change but changed the graph"},
        {{"false-change", &says_changed_but_not, ""}, "pass 'false-change' reported a change but the graph is the same"},
        {{"throws", &throws, ""}, "pass 'throws' failed: boom"},
        {{"invents", &invents_provenance, ""}, "comes from 'no_such_node', which is no node of the previous stage"},
        {{"forgets", &forgets_provenance, ""}, "no provenance"},
    };
    for (const Case& c : cases) {
      PassManager pm(verifying());
      pm.add(kAppend);
      pm.add(c.pass);
      pm.add(kAppend);
      Graph g = small_graph();
      Status s = pm.run(g);
      QVERIFY2(!s.ok(), c.message.c_str());
      QVERIFY2(s.message().find(c.message) != std::string::npos, s.message().c_str());
      QVERIFY2(s.message().find("(application 2)") != std::string::npos, s.message().c_str());
      // The run stops at the broken stage, which keeps its graph for inspection
      // (when the pass got as far as making one); `g` is the last good stage.
      QCOMPARE(pm.stages().size(), size_t(2));
      QVERIFY(!pm.stages()[1].problems.empty());
      QCOMPARE(count_target(g, "aten::neg.default"), size_t(1));
    }
    // Verification is on request in release builds: off, the broken graph goes through.
    PassManagerOptions off;
    off.verify_each = false;
    PassManager pm(off);
    pm.add({"reads-later", &reads_a_later_node, ""});
    Graph g = small_graph();
    QVERIFY(pm.run(g).ok());
  }

  void provenance_names_the_previous_stage() {
    Options options;
    options.instrumentation = verifying();
    CompileResult r = compile(busy_graph(), options);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    // Each changed stage against the one before it.
    const Graph* previous = r.stages[0].graph.get();
    for (size_t i = 1; i < r.stages.size(); ++i) {
      if (!r.stages[i].graph) continue;
      auto diags = check_provenance(*previous, *r.stages[i].graph);
      QVERIFY2(diags.empty(), diags.empty() ? "" : diags[0].to_string().c_str());
      previous = r.stages[i].graph.get();
    }
    // canonicalize-views: t(t(x)) is x; the permute made for `t` names it.
    const Graph& views = *r.stages[1].graph;
    QCOMPARE(views[views.find("mul")].meta.from, (std::vector<std::string>{"mul"}));
    Graph g = graph_of("x: \"f32[2, 3]\"",
                       "        t: \"f32[3, 2]\" = torch.ops.aten.t.default(x)\n"
                       "        return (t,)\n");
    CompileResult t = compile(g, options);
    QCOMPARE(t.graph[t.graph.find("permute")].meta.from, (std::vector<std::string>{"t"}));
  }

  void registry_names_every_pass_once() {
    std::set<std::string_view> names;
    for (const Pass& p : pass_registry()) {
      QVERIFY(p.run != nullptr);
      QVERIFY(!p.description.empty());
      QVERIFY2(names.insert(p.name).second, std::string(p.name).c_str());
      QCOMPARE(find_pass(p.name), &p);
    }
    QCOMPARE(names, (std::set<std::string_view>{"functionalize", "decompose", "canonicalize-views", "simplify-algebra", "fold-constants", "cse", "dce", "fuse-attention"}));
    for (const std::string& name : graph_pass_pipeline()) QVERIFY(find_pass(name));
    PassManager pm;
    Status s = pm.add("no-such-pass");
    QVERIFY(!s.ok());
    QCOMPARE(s.message(), std::string("unknown pass 'no-such-pass' (known passes: functionalize, decompose, canonicalize-views, simplify-algebra, fold-constants, cse, dce, fuse-attention)"));
  }

  void compile_records_the_input_and_skips_disabled_passes() {
    Options options;
    options.instrumentation = verifying();
    options.disabled_passes = {"cse", "fold-constants"};
    Graph input = busy_graph();
    CompileResult r = compile(input, options);
    QVERIFY2(r.status.ok(), r.status.message().c_str());
    QCOMPARE(r.stages[0].name, std::string("input"));
    QCOMPARE(r.stages[0].application, 0);
    QCOMPARE(structural_hash(*r.stages[0].graph), structural_hash(input));
    std::vector<std::string> ran;
    for (size_t i = 1; i < r.stages.size(); ++i) ran.push_back(r.stages[i].name);
    QCOMPARE(ran, (std::vector<std::string>{"functionalize", "decompose", "canonicalize-views", "simplify-algebra", "dce"}));
    QCOMPARE(count_target(r.graph, "aten::sin.default"), size_t(2));  // no CSE
    KILN_VERIFY_EMPTY(compare_random_runs(input, r.graph, r.constants));
  }
};

QTEST_GUILESS_MAIN(TestPassManager)
#include "test_pass_manager.moc"
