// Module scopes inferred for PyTorch's dumps (core/trace/module_scopes.h):
// from the Dynamo graph's parameter names and each node's "# File:" line.
#include "test_support.h"

#include <map>

#include "core/graph/graph.h"
#include "core/trace/module_scopes.h"
#include "core/trace/reader.h"

using namespace kiln;
using namespace kiln::trace;

namespace {

Node op(std::string name, std::vector<NodeId> inputs, int line, std::string code, std::string function = "forward") {
  Node n;
  n.name = n.target = std::move(name);
  for (NodeId i : inputs) n.args.push_back(Arg::node(i));
  n.meta.stack = {kiln::StackFrame{"resnet.py", line, std::move(function), std::move(code)}};
  return n;
}

Node placeholder(std::string name) {
  Node n;
  n.op = OpKind::Placeholder;
  n.name = n.target = std::move(name);
  return n;
}

const Graph& reference(const std::string& stage) {
  static auto t = open_trace(test::reference_dir() + "/traces/s05_resnet18_train");
  if (!t) qFatal("%s", t.status().to_string().c_str());
  static std::map<std::string, std::shared_ptr<const Graph>> graphs;
  auto& g = graphs[stage];
  if (!g) {
    auto parsed = t->graph(t->entries.at(0), stage);
    if (!parsed) qFatal("%s", parsed.status().to_string().c_str());
    g = *parsed;
  }
  return *g;
}

}  // namespace

class TestModuleScopes : public QObject {
  Q_OBJECT
 private slots:
  void statePaths() {
    QCOMPARE(module_state_path("L_self_modules_layer1_modules_0_modules_conv1_parameters_weight_"),
             std::string("layer1.0.conv1.weight"));
    QCOMPARE(module_state_path("l_self_modules_bn1_buffers_running_mean_"), std::string("bn1.running_mean"));
    QCOMPARE(module_state_path("l_self_modules_layer2_modules_0_modules_downsample_modules_1_buffers_num_batches_tracked_"),
             std::string("layer2.0.downsample.1.num_batches_tracked"));
    QCOMPARE(module_state_path("L_x_"), std::string());
    QCOMPARE(module_state_path("primals_3"), std::string());
  }

  // Two blocks of the same forward: a statement that reads no parameter (relu)
  // takes the block of its neighbours, and the second call starts where the lines turn back.
  void statementsTakeTheirCallsInstance() {
    Graph g;
    NodeId x = g.add(placeholder("x"));
    NodeId w0 = g.add(placeholder("primals_1"));
    NodeId w1 = g.add(placeholder("primals_2"));
    NodeId a = g.add(op("conv_a", {x, w0}, 92, "out = self.conv1(x)"));
    NodeId r = g.add(op("relu_a", {a}, 94, "out = self.relu(out)"));
    NodeId s = g.add(op("add_a", {r, x}, 102, "out += identity"));
    NodeId b = g.add(op("conv_b", {s, w1}, 92, "out = self.conv1(x)"));
    NodeId rb = g.add(op("relu_b", {b}, 94, "out = self.relu(out)"));
    NodeId top = g.add(op("flatten", {rb}, 279, "x = torch.flatten(x, 1)", "_forward_impl"));
    const std::vector<std::string> inputs = {"layer1.0.conv1.weight", "layer1.1.conv1.weight"};
    QVERIFY(infer_module_scopes(g, inputs) > 0);
    QCOMPARE(g[w0].meta.scope, std::string("layer1.0.conv1"));
    QCOMPARE(g[a].meta.scope, std::string("layer1.0.conv1"));
    QCOMPARE(g[r].meta.scope, std::string("layer1.0.relu"));
    QCOMPARE(g[s].meta.scope, std::string("layer1.0"));
    QCOMPARE(g[b].meta.scope, std::string("layer1.1.conv1"));
    QCOMPARE(g[rb].meta.scope, std::string("layer1.1.relu"));
    QCOMPARE(g[top].meta.scope, std::string());  // no parameter anywhere in its call
    QCOMPARE(g[x].meta.scope, std::string());
    // A graph that has scopes keeps them.
    QCOMPARE(infer_module_scopes(g, inputs), size_t(0));
  }

  // The reference ResNet-18 training trace: the Dynamo graph and the AOT
  // graphs (inputs primals_<k>) come with scopes, ops of every block included.
  void resnet18TraceHasScopes() {
    for (const char* stage : {"dynamo_output_graph", "aot_joint_graph", "aot_forward_graph", "aot_backward_graph"}) {
      const Graph& g = reference(stage);
      size_t ops = 0, scoped = 0;
      std::map<std::string, int> top;
      for (const Node& n : g.nodes) {
        if (n.op != OpKind::CallFunction) continue;
        ++ops;
        if (n.meta.scope.empty()) {
          if (qEnvironmentVariableIsSet("KILN_SHOW_UNSCOPED")) qInfo("  unscoped %s %s", n.name.c_str(), n.target.c_str());
          continue;
        }
        ++scoped;
        ++top[n.meta.scope.substr(0, n.meta.scope.find('.'))];
      }
      qInfo("%s: %zu of %zu ops scoped, %zu top-level scopes", stage, scoped, ops, top.size());
      QVERIFY2(scoped * 10 >= ops * 8, stage);  // at least 80%
      for (const char* s : {"conv1", "bn1", "layer1", "layer2", "layer3", "layer4", "fc"})
        QVERIFY2(top.count(s), (std::string(stage) + ": no " + s).c_str());
    }
    const Graph& joint = reference("aot_joint_graph");
    QCOMPARE(joint[joint.find("primals_8")].meta.scope, std::string("layer1.0.conv1"));
    QCOMPARE(joint[joint.find("convolution_1")].meta.scope, std::string("layer1.0.conv1"));
  }
};

QTEST_MAIN(TestModuleScopes)
#include "test_module_scopes.moc"
