#include "compiler/runtime/program_binding.h"

#include "core/python/autograd.h"

#include <algorithm>
#include <functional>
#include <string>

namespace kiln::runtime {

namespace {
Shape shape_of(const std::vector<int64_t>& v) { return Shape(v.begin(), v.end()); }
}  // namespace

void ProgramBinding::index(const sched::ScheduledProgram& s) {
  const loopir::Program& p = s.program;
  storage_of.resize(p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) storage_of[i] = i;
  for (const sched::BufferAllocation& a : s.allocations)
    if (a.reused) storage_of[p.buffer_index(a.buffer)] = p.buffer_index(a.storage);
  for (const std::string& name : p.inputs) input_slots.push_back(p.buffer_index(name));
  for (const std::string& name : p.outputs) output_slots.push_back(p.buffer_index(name));
  for (const auto& [input, name] : p.input_writes) write_slots.emplace_back(input, p.buffer_index(name));
  for (const Tensor& b : bound_inputs) given_inputs += !b.defined();
}

void ProgramBinding::note_none_outputs(const Graph& g) {
  none_outputs.clear();
  const Node* out = g.output();
  if (!out || out->args.empty()) return;
  std::function<void(const Arg&)> walk = [&](const Arg& a) {
    if (a.is_node()) none_outputs.push_back(false);
    else if (a.is_none()) none_outputs.push_back(true);
    for (const Arg& item : a.items) walk(item);
  };
  walk(out->args[0]);
}

std::vector<Tensor> ProgramBinding::place_outputs(std::vector<Tensor> tensors) const {
  if (std::find(none_outputs.begin(), none_outputs.end(), true) == none_outputs.end()) return tensors;
  std::vector<Tensor> out;
  size_t next = 0;
  for (bool none : none_outputs) out.push_back(none || next >= tensors.size() ? Tensor() : std::move(tensors[next++]));
  return out;
}

Expected<std::vector<Tensor>> ProgramBinding::all_inputs(const std::vector<Tensor>& given) const {
  if (given.size() != given_inputs)
    return Status::error("compiled graph: expected " + std::to_string(given_inputs) + " inputs, got " +
                         std::to_string(given.size()));
  std::vector<Tensor> inputs;
  for (size_t i = 0, next = 0; i < bound_inputs.size(); ++i)
    inputs.push_back(bound_inputs[i].defined() ? bound_inputs[i] : given[next++]);
  return inputs;
}

Tensor buffer_tensor(const loopir::Buffer& b) {
  Tensor storage = Tensor::empty({std::max<int64_t>(loopir::storage_span(b), 0)}, b.dtype);
  return storage.as_strided(shape_of(b.sizes), shape_of(b.strides), b.offset);
}

Expected<Tensor> input_in_buffer_layout(size_t i, const loopir::Buffer& b, const Tensor& t) {
  if (t.sizes() != shape_of(b.sizes) || t.dtype() != b.dtype)
    return Status::error("compiled graph: input " + std::to_string(i) + " (" + b.name + ") is " + t.type_str() +
                         ", the graph was compiled for " + std::string(dtype_name(b.dtype)) + shape_str(b.sizes));
  if (t.strides() == shape_of(b.strides) && t.storage_offset() == b.offset && !t.is_meta()) return t;
  Tensor copy = buffer_tensor(b);
  copy.copy_(t);
  return copy;
}

char* storage_base(const Tensor& t) {
  return static_cast<char*>(t.raw_data()) - t.storage_offset() * int64_t(t.itemsize());
}

void ProgramBinding::write_inputs(const std::vector<Tensor>& given, const std::vector<Tensor>& buffers) const {
  if (write_slots.empty()) return;
  Expected<std::vector<Tensor>> inputs = all_inputs(given);
  KILN_CHECK(inputs.ok(), inputs.status().message());
  for (const auto& [input, slot] : write_slots) {
    const Tensor& dst = inputs->at(input);
    dst.copy_(buffers.at(slot));
    // Backward's saved-tensor check and resident GPU copies see the write.
    py::autograd::bump_storage_version(dst.storage().get());
  }
}

}  // namespace kiln::runtime
