#pragma once
// What the CPU and CUDA runtimes share about a scheduled program's buffers:
// which storage each buffer uses, where the caller's inputs and the outputs
// sit, the constants bound at compile time, and host tensors laid out as a
// buffer is.
#include <cstddef>
#include <vector>

#include "compiler/loopir/loop_ir.h"
#include "core/graph/graph.h"
#include "compiler/sched/schedule.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::runtime {

struct ProgramBinding {
  // Per buffer of the program: the buffer whose storage it uses (itself when fresh).
  std::vector<size_t> storage_of;
  // Buffer indices of Program::inputs and Program::outputs, found once rather than by name on every run.
  std::vector<size_t> input_slots, output_slots;
  // Per Program::input_writes entry: the input's position and its final value's buffer index.
  std::vector<std::pair<size_t, size_t>> write_slots;
  // Per program input: the constant bound to it, or undefined for the caller's next input.
  std::vector<Tensor> bound_inputs;
  size_t given_inputs = 0;  // the inputs run() takes: those bound_inputs leaves undefined
  // Per item the graph returns, in order: true where it returns None (a
  // backward graph's gradient of an input that needs none). The program has
  // buffers for the tensors only.
  std::vector<bool> none_outputs;

  // Notes where `g`'s output returns None.
  void note_none_outputs(const Graph& g);
  // The program's output tensors with an undefined tensor at each None the
  // graph returns, so outputs line up with the graph's as eager gives them.
  std::vector<Tensor> place_outputs(std::vector<Tensor> tensors) const;

  // Fills everything but bound_inputs (bind_constants fills those) from the schedule.
  void index(const sched::ScheduledProgram& s);
  // The caller's inputs with the bound constants put back, in placeholder order;
  // a Status when the count is wrong.
  Expected<std::vector<Tensor>> all_inputs(const std::vector<Tensor>& given) const;
  // Copies the final values of written inputs (the copy_ epilogue) from a
  // run's buffers into the caller's tensors (or the bound constants).
  void write_inputs(const std::vector<Tensor>& given, const std::vector<Tensor>& buffers) const;
};

// A host tensor over fresh storage, with the buffer's sizes, strides and offset.
Tensor buffer_tensor(const loopir::Buffer& b);
// Input `i` as the compiled code reads it: `t` itself when it already has the
// buffer's layout, else a copy in that layout. Other sizes or dtype are a Status.
Expected<Tensor> input_in_buffer_layout(size_t i, const loopir::Buffer& b, const Tensor& t);
// The address of flat element 0 of the tensor's storage, where buffer indices count from.
char* storage_base(const Tensor& t);

}  // namespace kiln::runtime
