#include "app/cli/bench_gpu_train.h"

#include <map>
#include <string>

#include "compiler/aot/graph_replay.h"
#include "compiler/aot/joint.h"
#include "compiler/decomp/decompose.h"
#include "compiler/pipeline/emitter.h"

namespace kiln::cli {

namespace {

using pipeline::EArg;
using pipeline::GraphEmitter;
using pipeline::Var;

std::vector<NodeId> placeholders_of(const Graph& g) {
  std::vector<NodeId> ids;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.nodes[i].op == OpKind::Placeholder) ids.push_back(NodeId(i));
  return ids;
}

// The model's graph with F.cross_entropy(logits, labels) as its first output
// (the labels a new last placeholder); the written inputs follow as before.
Graph with_loss(const Graph& model, const Tensor& labels) {
  Graph g;
  GraphEmitter em(g);
  std::vector<Var> inputs;
  for (NodeId id : placeholders_of(model))
    inputs.push_back(em.placeholder(model[id].name, aot::meta_tensor(model[id].meta.val, model[id].name)));
  Var target = em.placeholder("labels", labels);
  aot::Replay r = aot::replay_graph(em, model, inputs);
  KILN_USER_CHECK(!r.outputs.empty() && r.outputs[0].valid() && em.dim(r.outputs[0]) == 2,
                  "the model's first output is not a [batch, classes] tensor");
  Var log_probs = em.call1("aten::_log_softmax.default", {r.outputs[0], int64_t(1), false});
  Var loss = em.call("aten::nll_loss_forward.default", {log_probs, target, EArg::none(), int64_t(1), int64_t(-100)})[0];
  std::vector<Var> outs = r.outputs;
  outs[0] = loss;
  em.output(outs);
  return g;
}

}  // namespace

Expected<TrainingStep> training_step(const ModelGraph& model, const Tensor& labels, const SgdOptions& sgd) {
  try {
    const std::vector<NodeId> model_inputs = placeholders_of(model.aten);
    KILN_USER_CHECK(model_inputs.size() == model.inputs.size() && model.is_parameter.size() == model.inputs.size(),
                    "the model graph has ", model_inputs.size(), " placeholders for ", model.inputs.size(), " inputs");
    // Outputs after the first: inputs the forward writes, by placeholder name.
    std::map<std::string, size_t> input_named;
    for (size_t k = 0; k < model_inputs.size(); ++k) input_named[model.aten[model_inputs[k]].name] = k;
    const Node* model_out = model.aten.output();
    std::vector<size_t> written;
    for (size_t i = 1; i < model_out->meta.output_descs.size(); ++i) {
      const std::string& desc = model_out->meta.output_descs[i];
      auto it = desc.starts_with("mutated input ") ? input_named.find(desc.substr(14)) : input_named.end();
      KILN_USER_CHECK(it != input_named.end(), "model output ", i, " is '", desc, "', not a written input");
      written.push_back(it->second);
    }

    Graph loss_graph = with_loss(model.aten, labels);
    aot::JointOptions jo;
    jo.requires_grad = model.is_parameter;
    jo.requires_grad.push_back(false);  // the labels
    Expected<aot::JointGraph> joint = aot::build_joint(loss_graph, jo);
    if (!joint) return joint.status();
    KILN_USER_CHECK(joint->num_tangents == 1 && joint->tangent_of_output[0] == 0,
                    "the joint graph wants a gradient for other outputs than the loss");

    TrainingStep step;
    GraphEmitter em(step.graph);
    std::vector<Var> primals;
    for (size_t k = 0; k < model.inputs.size(); ++k) {
      primals.push_back(em.placeholder(model.aten[model_inputs[k]].name, model.inputs[k]));
      step.inputs.push_back(model.inputs[k]);
      step.per_call.push_back(model.per_call[k]);
    }
    primals.push_back(em.placeholder("labels", labels));
    step.inputs.push_back(labels);
    step.per_call.push_back(true);
    const Tensor one = Tensor::scalar_tensor(Scalar(1.0), DType::Float32);
    Var loss_grad = em.placeholder("loss_grad", one);
    step.inputs.push_back(one);
    step.per_call.push_back(false);
    std::vector<Var> joint_inputs = primals;
    joint_inputs.push_back(loss_grad);
    aot::Replay r = aot::replay_graph(em, joint->graph, joint_inputs);

    // torch.optim.SGD (foreach, no dampening, not Nesterov): d = g + wd * p;
    // buf = momentum * buf + d (a zero buffer makes the first step's buf = d,
    // as PyTorch's clone does); p -= lr * buf.
    std::vector<Var> outs = {r.outputs[0]};
    for (size_t i = 0; i < written.size(); ++i) {
      outs.push_back(r.outputs[1 + i]);
      step.carried.emplace_back(outs.size() - 1, written[i]);
    }
    const size_t first_grad = joint->num_forward_outputs;
    std::vector<std::pair<Var, size_t>> buffers;  // momentum buffer placeholder, parameter index
    for (size_t k = 0; k < model.inputs.size(); ++k) {
      if (!model.is_parameter[k]) continue;
      const Tensor zeros = Tensor::zeros(model.inputs[k].sizes(), model.inputs[k].dtype());
      buffers.emplace_back(em.placeholder(model.aten[model_inputs[k]].name + "_momentum", zeros), k);
      step.inputs.push_back(zeros);
      step.per_call.push_back(false);
    }
    std::vector<Var> new_buffers;
    for (const auto& [buf, k] : buffers) {
      Var grad = r.outputs.at(first_grad + k);
      KILN_USER_CHECK(grad.valid(), "parameter ", model.aten[model_inputs[k]].name, " gets no gradient");
      Var d = em.call1("aten::add.Tensor", {grad, primals[k]}, {{"alpha", sgd.weight_decay}});
      Var b = em.call1("aten::add.Tensor", {em.call1("aten::mul.Scalar", {buf, sgd.momentum}), d});
      outs.push_back(em.call1("aten::add.Tensor", {primals[k], b}, {{"alpha", -sgd.lr}}));
      step.carried.emplace_back(outs.size() - 1, k);
      new_buffers.push_back(b);
    }
    const size_t first_buffer_input = model.inputs.size() + 2;
    for (size_t i = 0; i < new_buffers.size(); ++i) {
      outs.push_back(new_buffers[i]);
      step.carried.emplace_back(outs.size() - 1, first_buffer_input + i);
    }
    em.output(outs);
    Expected<Graph> decomposed = decomp::decompose(step.graph);
    if (!decomposed) return decomposed.status();
    step.aten = std::move(step.graph);
    step.graph = std::move(*decomposed);
    return step;
  } catch (const Error& e) {
    return Status::error(std::string("training step: ") + e.what());
  }
}

}  // namespace kiln::cli
