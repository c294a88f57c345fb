#pragma once
// One way to write a computation over ATen ops that serves both an ahead-of-time
// graph and eager execution. Derivative formulas and decompositions are written
// once against Emitter: GraphEmitter appends call_function nodes to an ATen-level
// Graph (what AOT tracing and the decompose pass need), EagerEmitter runs the
// kernels at once (what eager autograd and the numeric checks of each
// decomposition need).
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/graph/graph.h"
#include "core/ops/value.h"

namespace kiln::pipeline {

// A value an emitter made or was given: one tensor.
struct Var {
  int32_t id = -1;
  bool valid() const { return id >= 0; }
  friend bool operator==(Var a, Var b) { return a.id == b.id; }
};

// One argument of an emitted call: a tensor Var, a list of them (Tensor[]), or
// a constant in the op registry's Value form (None, bool, int, float, str,
// dtype, int list).
struct EArg {
  enum class Kind { Var, VarList, Const };
  Kind kind = Kind::Const;
  Var var;
  std::vector<Var> vars;
  Value value;

  EArg() = default;
  EArg(Var v) : kind(Kind::Var), var(v) {}                // NOLINT
  EArg(Value v) : value(std::move(v)) {}                  // NOLINT
  EArg(int64_t v) : value(v) {}                           // NOLINT
  EArg(int v) : value(int64_t{v}) {}                      // NOLINT
  EArg(double v) : value(v) {}                            // NOLINT
  EArg(bool v) : value(v) {}                              // NOLINT
  EArg(DType v) : value(v) {}                             // NOLINT
  EArg(const char* v) : value(std::string(v)) {}          // NOLINT
  EArg(const std::vector<int64_t>& v) : value(Value::int_list(v)) {}  // NOLINT
  static EArg none() { return EArg(); }
  static EArg list(std::vector<Var> vs) {
    EArg a;
    a.kind = Kind::VarList;
    a.vars = std::move(vs);
    return a;
  }
};

using EKwargs = std::vector<std::pair<std::string, EArg>>;

class Emitter {
 public:
  virtual ~Emitter() = default;
  // Calls the registered ATen overload `op` ("aten::mul.Tensor"); one Var per
  // tensor output (a Tensor[] output gives one Var per element; an output the
  // op leaves None, as convolution_backward's masked ones, is an invalid Var).
  // A bad call (unknown op, arguments the schema rejects) throws kiln::Error naming the op.
  virtual std::vector<Var> call(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs = {}) = 0;
  // The tensor a Var stands for: real data for EagerEmitter, a meta tensor
  // (sizes, strides, dtype; no data) for GraphEmitter. Formulas read shapes here.
  // The reference is only good until the next call(): copy what you keep.
  virtual const Tensor& tensor(Var v) const = 0;

  // The single output of `op`.
  Var call1(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs = {});
  Shape sizes(Var v) const { return tensor(v).sizes(); }
  DType dtype(Var v) const { return tensor(v).dtype(); }
  int64_t dim(Var v) const { return int64_t(tensor(v).sizes().size()); }
};

// Runs each call on the CPU kernels as it is made.
class EagerEmitter : public Emitter {
 public:
  Var input(Tensor t);
  std::vector<Var> call(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs = {}) override;
  const Tensor& tensor(Var v) const override { return values_.at(size_t(v.id)); }
  const std::vector<Tensor>& values() const { return values_; }  // by Var id

 private:
  std::vector<Tensor> values_;
};

// Appends ATen call_function nodes (target "aten::mul.Tensor") to a Graph, with
// meta['val'] from the ops' meta functions, as AOT tracing with fake tensors does.
// Names follow FX: the op's base name, then _1, _2, ... on repeats.
class GraphEmitter : public Emitter {
 public:
  explicit GraphEmitter(Graph& g);
  // A placeholder standing for `example` (only its sizes, strides and dtype are used).
  Var placeholder(const std::string& name, const Tensor& example);
  // An existing node of the graph (a placeholder or an earlier call) as a Var.
  Var adopt(NodeId node, const Tensor& meta);
  std::vector<Var> call(std::string_view op, const std::vector<EArg>& args, const EKwargs& kwargs = {}) override;
  const Tensor& tensor(Var v) const override { return metas_.at(size_t(v.id)); }
  NodeId node(Var v) const { return nodes_.at(size_t(v.id)); }
  Graph& graph() { return g_; }
  // Appends a node made elsewhere (a placeholder that is not a tensor), keeping its name unique.
  NodeId add_node(Node n);
  // Appends the output node returning `vars` (a tuple, as AOT graphs return; an invalid Var is None).
  void output(const std::vector<Var>& vars);
  // The stack and scope stamped on every node made from now on (provenance for the stage views).
  void set_origin(std::vector<StackFrame> stack, std::vector<std::string> from);

 private:
  Var add_var(NodeId node, Tensor meta);
  std::string fresh_name(std::string_view base);

  Graph& g_;
  std::set<std::string> used_;             // node names, so each new one is unique
  std::map<std::string, int> next_suffix_;  // per base name: the last suffix given
  std::vector<NodeId> nodes_;
  std::vector<Tensor> metas_;
  std::vector<StackFrame> stack_;
  std::vector<std::string> from_;
};

// The short FX name of an ATen overload: "aten::add.Tensor" -> "add".
std::string aten_base_name(std::string_view op);

// TensorMeta for meta['val'] from a (meta or real) tensor.
TensorMeta tensor_meta_of(const Tensor& t);

// An op's results flattened to tensors, as Emitter::call gives Vars: Tensor[]
// outputs one per element, a None output an undefined tensor (an invalid Var).
std::vector<Tensor> result_tensors(const ValueList& results, std::string_view op);

// A tensor's identity while a program runs, for observers that map the
// bindings' tensors to Vars: the same storage seen through the same geometry
// is the same value (views of one storage differ in offset, sizes or strides).
using TensorKey = std::tuple<const void*, int64_t, Shape, Shape, DType>;
TensorKey key_of(const Tensor& t);

// An argument the bindings passed to an ATen op as an emitter argument:
// tensors, and lists holding tensors (None elements kept), through `var_of`.
EArg earg_of(const Value& a, const std::function<Var(const Tensor&)>& var_of);

}  // namespace kiln::pipeline
