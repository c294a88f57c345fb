#pragma once
// A training step as one graph for `kiln-cli bench gpu --graph resnet18_train`:
// the model's forward as the program compiles it (batch norm in training
// mode), cross-entropy against a batch of labels, the backward of both (the
// joint graph, compiler/aot/joint.h, with the loss's gradient 1), and
// torch.optim.SGD's update with momentum and weight decay, decomposed. The
// step returns the loss and every piece of state the next step reads (the
// parameters, the momentum buffers, batch norm's running statistics), which
// the benchmark copies back into the inputs on the device.
#include <cstddef>
#include <utility>
#include <vector>

#include "app/cli/bench_gpu_model.h"

namespace kiln::cli {

struct SgdOptions {
  double lr = 0.01, momentum = 0.9, weight_decay = 1e-4;
};

struct TrainingStep {
  Graph graph;  // decomposed
  Graph aten;   // before decomposition
  std::vector<Tensor> inputs;  // the model's, then the labels, the loss's gradient (1), the momentum buffers (0)
  std::vector<bool> per_call;  // the batch and its labels
  // (output, input): output 0 is the loss; each later one is the next value of that input.
  std::vector<std::pair<size_t, size_t>> carried;
};

// `model`'s first output is the logits [batch, classes]; its others are the
// inputs it writes (output_descs "mutated input NAME"). `labels`: int64 [batch].
Expected<TrainingStep> training_step(const ModelGraph& model, const Tensor& labels, const SgdOptions& sgd = {});

}  // namespace kiln::cli
