// joint_from_dump (compiler/aot/joint_from_dump.h): a dumped aot_joint_graph in
// the shape the partitioners take, its buffer writes turned into outputs, and
// clear errors for graphs that are not joint graphs.
#include <QtTest>

#include "compiler/aot/joint_from_dump.h"
#include "compiler/aot/partition.h"
#include "core/graph/parser.h"

using namespace kiln;

namespace {

// A scale-and-shift layer that also keeps a running mean of its output (a
// buffer written in place, as batch norm's statistics are), written the way
// PyTorch prints a joint graph: primals, then tangents, the forward, the
// backward, and one output list of forward outputs then one gradient per primal.
const char* kJoint = R"(class inner_f(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[6][1]cpu"
        primals_2: "f32[6][1]cpu"
        primals_3: "f32[4, 6][6, 1]cpu"
        tangents_1: "f32[4, 6][6, 1]cpu"
        primals_1, primals_2, primals_3, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        mul: "f32[4, 6][6, 1]cpu" = torch.ops.aten.mul.Tensor(primals_3, primals_1)
        tanh: "f32[4, 6][6, 1]cpu" = torch.ops.aten.tanh.default(mul);  mul = None
        mean: "f32[6][1]cpu" = torch.ops.aten.mean.dim(tanh, [0])
        mul_1: "f32[6][1]cpu" = torch.ops.aten.mul.Tensor(primals_2, 0.9)
        add: "f32[6][1]cpu" = torch.ops.aten.add.Tensor(mul_1, mean);  mul_1 = mean = None
        copy_: "f32[6][1]cpu" = torch.ops.aten.copy_.default(primals_2, add);  primals_2 = add = None
        mul_2: "f32[4, 6][6, 1]cpu" = torch.ops.aten.mul.Tensor(tanh, tanh)
        rsub: "f32[4, 6][6, 1]cpu" = torch.ops.aten.rsub.Scalar(mul_2, 1);  mul_2 = None
        mul_3: "f32[4, 6][6, 1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, rsub);  tangents_1 = rsub = None
        mul_4: "f32[4, 6][6, 1]cpu" = torch.ops.aten.mul.Tensor(mul_3, primals_3);  primals_3 = None
        sum_1: "f32[6][1]cpu" = torch.ops.aten.sum.dim_IntList(mul_4, [0]);  mul_4 = None
        return pytree.tree_unflatten([tanh, sum_1, None, None], self._out_spec)
)";

Graph parsed(const std::string& text) {
  Expected<Graph> g = parse_graph_module(text, "joint.txt");
  if (!g) qFatal("%s", g.status().to_string().c_str());
  return std::move(*g);
}

}  // namespace

class TestJointFromDump : public QObject {
  Q_OBJECT
 private slots:
  void shape_of_a_dumped_joint_graph() {
    size_t writes = 99;
    Expected<aot::JointGraph> j = aot::joint_from_dump(parsed(kJoint), &writes);
    QVERIFY2(j.ok(), j.status().to_string().c_str());
    QCOMPARE(j->num_primals, size_t(3));
    QCOMPARE(j->num_tangents, size_t(1));
    QCOMPARE(writes, size_t(1));
    // tanh, then the buffer's new value, then the three gradients.
    QCOMPARE(j->num_forward_outputs, size_t(2));
    QCOMPARE(j->requires_grad, (std::vector<bool>{true, false, false}));
    const Node& out = j->graph.nodes.back();
    QCOMPARE(out.args[0].items.size(), size_t(5));
    QVERIFY(out.args[0].items[1].is_node());
    QCOMPARE(j->graph[out.args[0].items[1].node_id()].name, std::string("add"));
    QCOMPARE(out.meta.output_descs.at(1), std::string("InputMutationAOTOutput(mutated_input=primals_2)"));
    for (const Node& n : j->graph.nodes) QVERIFY2(n.target != "aten::copy_.default", n.name.c_str());
    // The backward starts at the first node that reads the tangent.
    QCOMPARE(j->graph[j->first_backward_node].name, std::string("mul_3"));
  }

  void partitioner_keeps_the_buffer_write() {
    Expected<aot::JointGraph> j = aot::joint_from_dump(parsed(kJoint));
    QVERIFY(j.ok());
    aot::Partition p = aot::default_partition(*j);
    // The forward returns tanh and the running mean's new value, then what the backward saves.
    QCOMPARE(p.num_forward_outputs, size_t(2));
    bool has_add = false;
    for (const Node& n : p.forward.nodes) has_add |= n.name == "add";
    QVERIFY(has_add);
  }

  void a_graph_that_is_not_a_joint_graph_is_refused() {
    Expected<aot::JointGraph> a = aot::joint_from_dump(parsed(
        "class f(torch.nn.Module):\n    def forward(self, x_1):\n        x_1: \"f32[4][1]cpu\"\n"
        "        sin: \"f32[4][1]cpu\" = torch.ops.aten.sin.default(x_1)\n        return (sin,)\n"));
    QVERIFY(!a.ok());
    QVERIFY2(a.status().message().find("'x_1' is neither primals_N nor tangents_N") != std::string::npos, a.status().message().c_str());
    Expected<aot::JointGraph> b = aot::joint_from_dump(parsed(
        "class f(torch.nn.Module):\n    def forward(self, primals_1, primals_2):\n        primals_1: \"f32[4][1]cpu\"\n"
        "        primals_2: \"f32[4][1]cpu\"\n"
        "        sin: \"f32[4][1]cpu\" = torch.ops.aten.sin.default(primals_1)\n        return [sin]\n"));
    QVERIFY(!b.ok());
    QVERIFY2(b.status().message().find("fewer than the 2 primals' gradients") != std::string::npos, b.status().message().c_str());
  }
};

QTEST_GUILESS_MAIN(TestJointFromDump)
#include "test_joint_from_dump.moc"
