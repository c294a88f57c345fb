// The graph IR itself: building, uses, node removal, the visitor and mutator
// bases, the structural hash and the verifier.
#include "core/graph/hash.h"
#include "core/graph/parser.h"
#include "core/graph/verify.h"
#include "core/graph/visitor.h"
#include "core/ops/registry.h"
#include "test_support.h"

using namespace kiln;

namespace {

Node make(OpKind op, std::string name, std::string target, std::vector<Arg> args = {},
          std::vector<std::pair<std::string, Arg>> kwargs = {}) {
  Node n;
  n.op = op;
  n.name = std::move(name);
  n.target = std::move(target);
  n.args = std::move(args);
  n.kwargs = std::move(kwargs);
  return n;
}

TensorMeta f32(std::vector<int64_t> sizes) {
  TensorMeta t;
  t.dtype = "float32";
  for (int64_t s : sizes) t.sizes.push_back(SymInt::of(s));
  return t;
}

// x, y -> add(x, y) -> mul(add, 2) -> output (mul, add)
Graph sample() {
  Graph g;
  NodeId x = g.add(make(OpKind::Placeholder, "x", "x"));
  NodeId y = g.add(make(OpKind::Placeholder, "y", "y"));
  g[x].meta.val = Val::of_tensor(f32({4}));
  g[y].meta.val = Val::of_tensor(f32({4}));
  NodeId add = g.add(make(OpKind::CallFunction, "add", "aten::add.Tensor", {Arg::node(x), Arg::node(y)}));
  g[add].meta.val = Val::of_tensor(f32({4}));
  NodeId mul = g.add(make(OpKind::CallFunction, "mul", "aten::mul.Tensor", {Arg::node(add), Arg::integer(2)}));
  g[mul].meta.val = Val::of_tensor(f32({4}));
  g.add(make(OpKind::Output, "output", "output", {Arg::tuple({Arg::node(mul), Arg::node(add)})}));
  return g;
}

OpFn nothing() {
  return [](const OpArgs&) { return ValueList{}; };
}

// A registry of its own, so the arity checks do not depend on which ops the
// kernel families have registered so far.
const OpRegistry& test_ops() {
  static const OpRegistry ops = [] {
    OpRegistry r;
    r.add("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", nothing(), nothing());
    r.add("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", nothing(), nothing());
    return r;
  }();
  return ops;
}

std::vector<std::string> messages(const Graph& g) {
  std::vector<std::string> out;
  for (const Diagnostic& d : verify(g, test_ops())) out.push_back(d.to_string());
  return out;
}

class CountingVisitor : public GraphVisitor {
 public:
  int placeholders = 0, calls = 0, outputs = 0;

 protected:
  void visit_placeholder(const Graph&, NodeId) override { ++placeholders; }
  void visit_call_function(const Graph&, NodeId) override { ++calls; }
  void visit_output(const Graph&, NodeId) override { ++outputs; }
};

// Replaces integer constants by floats.
class IntToFloat : public GraphMutator {
 protected:
  std::optional<Arg> mutate_arg(const Arg& a) override {
    if (a.kind == Arg::Kind::Int) return Arg::real(double(a.i));
    return GraphMutator::mutate_arg(a);
  }
};

}  // namespace

class TestGraph : public QObject {
  Q_OBJECT
 private slots:
  void build_and_query() {
    Graph g = sample();
    QCOMPARE(g.size(), size_t(5));
    QCOMPARE(g.find("mul"), NodeId(3));
    QCOMPARE(g.find("nope"), kNoNode);
    QCOMPARE(g.output()->name, std::string("output"));
    QCOMPARE(op_kind_name(OpKind::CallFunction), std::string_view("call_function"));
    QCOMPARE(op_kind_from_name("get_attr"), std::optional<OpKind>(OpKind::GetAttr));
    QCOMPARE(count_nodes(g, OpKind::Placeholder), size_t(2));
    std::vector<NodeId> refs;
    for_each_node_ref(g[4].args[0], [&](NodeId id) { refs.push_back(id); });
    QCOMPARE(refs, (std::vector<NodeId>{3, 2}));
  }

  void users_on_demand() {
    Graph g = sample();
    auto users = compute_users(g);
    QCOMPARE(users[0], (std::vector<NodeId>{2}));
    QCOMPARE(users[2], (std::vector<NodeId>{3, 4}));
    QCOMPARE(users[3], (std::vector<NodeId>{4}));
    QVERIFY(users[4].empty());
  }

  void remove_nodes_renumbers() {
    Graph g = sample();
    // Drop mul and return add alone.
    g[4].args[0] = Arg::tuple({Arg::node(2)});
    remove_nodes(g, {false, false, false, true, false});
    QCOMPARE(g.size(), size_t(4));
    QCOMPARE(g[3].op, OpKind::Output);
    QCOMPARE(g[3].args[0], Arg::tuple({Arg::node(2)}));
    QVERIFY(messages(g).empty());
  }

  void visitor_dispatches_on_kind() {
    CountingVisitor v;
    v.visit(sample());
    QCOMPARE(v.placeholders, 2);
    QCOMPARE(v.calls, 2);
    QCOMPARE(v.outputs, 1);
  }

  void mutator_returns_same_graph_when_unchanged() {
    Graph g;
    g.add(make(OpKind::Placeholder, "x", "x"));
    g.add(make(OpKind::Output, "output", "output", {Arg::node(0)}));
    auto shared = std::make_shared<const Graph>(g);
    IntToFloat pass;
    QCOMPARE(pass.mutate(shared).get(), shared.get());

    auto with_ints = std::make_shared<const Graph>(sample());
    auto changed = pass.mutate(with_ints);
    QVERIFY(changed.get() != with_ints.get());
    QCOMPARE((*changed)[3].args[1], Arg::real(2.0));
    QCOMPARE((*with_ints)[3].args[1], Arg::integer(2));  // the input is untouched
    Graph local = sample();
    QVERIFY(pass.mutate_in_place(local));
    QVERIFY(!pass.mutate_in_place(local));
  }

  void hash_ignores_names() {
    Graph g = sample();
    Graph renamed = g;
    for (Node& n : renamed.nodes) n.name = "n_" + n.name;
    renamed[0].target = "L_x_";  // placeholder targets are names too
    renamed[2].meta.stack = {{"/a.py", 1, "f", "x + y"}};
    renamed[2].meta.scope = "layer1";
    renamed.class_name = "Other";
    QCOMPARE(structural_hash(renamed), structural_hash(g));
  }

  void hash_sees_structure() {
    const uint64_t base = structural_hash(sample());
    auto differs = [&](auto edit) {
      Graph g = sample();
      edit(g);
      return structural_hash(g) != base;
    };
    QVERIFY(differs([](Graph& g) { g[3].args[1] = Arg::integer(3); }));                  // constant
    QVERIFY(differs([](Graph& g) { g[3].args[1] = Arg::real(2.0); }));                   // int vs float
    QVERIFY(differs([](Graph& g) { g[3].target = "aten::div.Tensor"; }));                // target
    QVERIFY(differs([](Graph& g) { std::swap(g[2].args[0], g[2].args[1]); }));           // use-def
    QVERIFY(differs([](Graph& g) { g[4].args[0] = Arg::list(g[4].args[0].items); }));    // output structure
    QVERIFY(differs([](Graph& g) { g[3].meta.val.tensor.dtype = "float16"; }));          // val dtype
    QVERIFY(differs([](Graph& g) { g[3].meta.val.tensor.sizes[0] = SymInt::symbol("s0"); }));  // val shape
    QVERIFY(differs([](Graph& g) { g[3].kwargs.emplace_back("alpha", Arg::integer(1)); }));
    QVERIFY(differs([](Graph& g) { g[2].op = OpKind::CallMethod; }));
    // Not part of it: strides, device, kwarg order.
    QVERIFY(!differs([](Graph& g) { g[3].meta.val.tensor.strides = std::vector<SymInt>{SymInt::of(1)}; }));
    QVERIFY(!differs([](Graph& g) { g[3].meta.val.tensor.device = "cuda:0"; }));
    Graph a = sample(), b = sample();
    a[2].kwargs = {{"alpha", Arg::integer(1)}, {"beta", Arg::real(0.5)}};
    b[2].kwargs = {{"beta", Arg::real(0.5)}, {"alpha", Arg::integer(1)}};
    QCOMPARE(structural_hash(a), structural_hash(b));
    // nan is one value.
    a[3].args[1] = Arg::real(std::nan("1"));
    b[3].args[1] = Arg::real(-std::nan("2"));
    QCOMPARE(structural_hash(a), structural_hash(b));
  }

  void verify_accepts_a_good_graph() {
    QVERIFY(messages(sample()).empty());
    QVERIFY(verify(sample()).empty());  // against the real registry too
  }

  void verify_reports_broken_invariants() {
    Graph g = sample();
    g[2].args[1] = Arg::node(3);
    QCOMPARE(messages(g), (std::vector<std::string>{"node 'add' (#2): reads 'mul' before it is defined"}));

    g = sample();
    g[3].name = "add";
    QCOMPARE(messages(g), (std::vector<std::string>{"node 'add' (#3): name 'add' is already used by node #2"}));

    g = sample();
    g.nodes.pop_back();
    QCOMPARE(messages(g), (std::vector<std::string>{"graph: graph has no output node"}));

    g = sample();
    std::swap(g.nodes[3], g.nodes[4]);
    g[4].args[0] = Arg::node(2);
    g[3].args[0] = Arg::integer(0);
    QCOMPARE(messages(g), (std::vector<std::string>{"graph: the output node is not the last node"}));

    g = sample();
    g.add(make(OpKind::Output, "output_1", "output", {Arg::none()}));
    QCOMPARE(messages(g), (std::vector<std::string>{"node 'output_1' (#5): second output node"}));

    g = sample();
    std::swap(g.nodes[1], g.nodes[2]);
    g[1].args[1] = Arg::node(0);
    QCOMPARE(messages(g), (std::vector<std::string>{"node 'y' (#2): placeholder after the first non-placeholder node"}));

    g = sample();
    g[2].name = "my add";
    QCOMPARE(messages(g), (std::vector<std::string>{"node 'my add' (#2): name 'my add' is not a Python identifier"}));

    g = sample();
    g[3].args[0] = Arg::node(42);
    QCOMPARE(messages(g), (std::vector<std::string>{"node 'mul' (#3): reads node #42, which does not exist"}));

    g = sample();
    g[2].op = OpKind::CallMethod;
    g[2].target = "";
    QCOMPARE(messages(g), (std::vector<std::string>{"node 'add' (#2): call_method without a method name"}));
  }

  void verify_checks_arity_of_registered_ops() {
    Graph g = sample();
    g[2].args.push_back(Arg::integer(1));
    QCOMPARE(messages(g),
             (std::vector<std::string>{"node 'add' (#2): aten::add.Tensor takes 2 positional arguments but 3 were given"}));

    g = sample();
    g[2].kwargs = {{"beta", Arg::integer(1)}};
    QCOMPARE(messages(g),
             (std::vector<std::string>{"node 'add' (#2): aten::add.Tensor got an unexpected keyword argument 'beta'"}));

    g = sample();
    g[2].args.pop_back();
    QCOMPARE(messages(g),
             (std::vector<std::string>{"node 'add' (#2): aten::add.Tensor is missing required argument 'other'"}));

    g = sample();
    g[2].kwargs = {{"self", Arg::integer(1)}, {"alpha", Arg::integer(2)}};
    QCOMPARE(messages(g),
             (std::vector<std::string>{"node 'add' (#2): aten::add.Tensor got multiple values for argument 'self'"}));

    g = sample();
    g[2].args = {};
    g[2].kwargs = {{"self", Arg::node(0)}, {"other", Arg::node(1)}};  // all by keyword is fine
    QVERIFY(messages(g).empty());

    g = sample();
    g[2].target = "aten::not_registered.default";
    g[2].args.push_back(Arg::integer(7));
    QVERIFY(messages(g).empty());  // unknown ops are not checked
  }

  void verify_walks_subgraphs() {
    Graph g = sample();
    Graph body = sample();
    body[3].args[0] = Arg::node(4);
    g.subgraphs.push_back({"body_graph_0", body});
    QCOMPARE(messages(g),
             (std::vector<std::string>{"body_graph_0: node 'mul' (#3): reads 'output' before it is defined"}));
  }
};

QTEST_GUILESS_MAIN(TestGraph)
#include "test_graph.moc"
