#pragma once
// Runs an ATen-level graph (call_function nodes whose targets are registered
// overloads, "aten::mul.Tensor", plus operator.getitem) on the CPU kernels:
// the aot_eager / decomp_eager backends, and the reference every pass's output
// is checked against in tests.
//
// Mutating ATen calls run too, with eager semantics, although the op registry
// holds only functional overloads: an in-place overload ("aten::add_.Tensor")
// runs its functional twin and copies the result into `self`, an out=
// overload ("aten::add.out") the functional overload its arguments fit and
// copies into `out`. The write goes through shared storage, so it reaches
// every view of the written tensor and the caller's input tensors, as eager
// PyTorch does; the node's value is the written tensor.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <atomic>

#include "core/graph/graph.h"
#include "core/ops/schema.h"
#include "core/ops/value.h"
#include "core/util/status.h"

namespace kiln::pipeline {

// One value per placeholder, in graph order; returns the output tuple's
// elements. An unknown target or a kernel error is a Status naming the node.
// `cancel` (optional) is checked before each node: a cancelled run is the
// Status "cancelled".
Expected<std::vector<Value>> run_aten_graph(const Graph& g, const std::vector<Value>& inputs,
                                            const std::atomic<bool>* cancel = nullptr);

// The registered functional overload an in-place target writes the result of:
// "aten::add_.Tensor" -> "aten::add.Tensor", "aten::__iand__.Tensor" ->
// "aten::__and__.Tensor"; nullopt when the target is not in-place or its twin
// is not registered.
std::optional<std::string> inplace_functional_twin(std::string_view target);
// A dump's graph as the eager kernels run it on the CPU, computing the same:
// devices become the CPU, and a `.Tensor` overload given a Python number
// (`aten.add.Tensor(num_batches_tracked, 1)`, which PyTorch wraps into a 0-d
// tensor and the registry does not) runs its `.Scalar` overload.
void make_runnable_on_cpu(Graph& g);
// A registered op whose result may alias its first argument without writing
// it (the schema's `Tensor(a) self`): a view.
bool is_view_op(std::string_view target);
// "aten::add.out", "aten::max.dim_max"-style "..._out" overloads: the op writes its out= kwarg.
bool is_out_overload(std::string_view target);
// The registered overload of an out= target's op that accepts these arguments
// (meta or real tensors; the out= kwarg already taken away): ".default" and
// ".Tensor" are tried first, then the others in name order, the first whose
// meta function accepts them wins. A Status when none does.
Expected<std::string> out_functional_overload(std::string_view target, const ValueList& args, const KwargList& kwargs);

// A constant argument of a graph node as the op registry takes it (dtype names
// become DTypes, lists become lists); a node reference is an error here.
Expected<Value> constant_value(const Arg& a);

// Any argument of a graph node as the op registry takes it: node references
// (also inside lists) are read through `node_value`, which returns nullopt for
// a value not known (an error naming the node); the rest as constant_value.
Expected<Value> arg_value(const Arg& a, const std::function<std::optional<Value>(NodeId)>& node_value);

}  // namespace kiln::pipeline
