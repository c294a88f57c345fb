#pragma once
// The loop-level IR (Inductor's ComputedBuffer with a Pointwise or Reduction
// body): each kernel writes one buffer, and its body is a tree of value
// expressions over loads whose indices are IndexExprs of the loop variables.
// Plain structs; lowering from ATen graphs is in lower.h, printing in
// print_ir.h, and run_loops (the slow reference evaluator) below.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compiler/loopir/extern_call.h"
#include "compiler/loopir/index_expr.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"

namespace kiln::loopir {

enum class BufferRole { Input, Computed };

// A strided region of memory; loads and stores address it by a flat element
// index (offset included), as Inductor's FixedLayout does.
struct Buffer {
  std::string name;  // a graph input keeps its placeholder's name; computed ones are buf0, buf1, ...
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  BufferRole role = BufferRole::Input;
  bool is_output = false;  // returned by the program
};

// The operations of a body, named as the ATen pointwise ops (Inductor's ops.*).
// relu is Maximum with 0, as Inductor lowers it.
enum class ExprOp {
  Load, Constant,
  // unary
  Neg, Exp, Log, Sin, Cos, Tanh, Sqrt, Rsqrt, Abs, Sigmoid, ToDtype,
  // binary
  Add, Sub, Mul, Div, Maximum, Minimum, Eq, Ne, Lt, Le, Gt, Ge,
  // ternary: where(cond, a, b)
  Where,
};
std::string_view expr_op_name(ExprOp op);  // "add", "to_dtype", "load"
int expr_op_arity(ExprOp op);               // 0 for Load and Constant

struct Expr;
// Immutable and shared, like IndexRef: a mutator that changes nothing returns the same pointer.
using ExprRef = std::shared_ptr<const Expr>;

struct Expr {
  ExprOp op = ExprOp::Constant;
  DType dtype = DType::Float32;  // the result's dtype (ToDtype: the target)
  std::vector<ExprRef> operands;
  std::string buffer;  // Load
  IndexRef index;      // Load: flat element index into `buffer`
  double value = 0;    // Constant (integers up to 2^53 are exact)
};

ExprRef expr_load(std::string buffer, IndexRef index, DType dtype);
ExprRef expr_constant(double value, DType dtype);
ExprRef expr_unary(ExprOp op, ExprRef a, DType dtype);
ExprRef expr_binary(ExprOp op, ExprRef a, ExprRef b, DType dtype);
ExprRef expr_where(ExprRef cond, ExprRef a, ExprRef b, DType dtype);
// A cast; `a` itself when it already has that dtype.
ExprRef expr_cast(ExprRef a, DType dtype);
// relu as the lowering writes it (Maximum with a constant 0): where the
// code generators inject KILN_INJECT_BUG's relu bugs.
bool is_relu(const Expr& e);

enum class ReductionType { Sum, Max, Min, Prod, Argmax, Any };
std::string_view reduction_type_name(ReductionType t);  // "sum"

// Extern: a library call on whole buffers (Inductor's ExternKernel /
// FallbackKernel), see extern_call.h; it has no body and may write several buffers.
enum class KernelKind { Pointwise, Reduction, Extern };

// One loop nest writing one buffer. Loop variables x0 .. x<n-1> run over
// `ranges` (the output's iteration space) and, for a reduction, x<n> ..
// x<n+m-1> over `reduction_ranges`; the body is evaluated at every point, a
// reduction combines the values over its reduction variables and stores once
// per point of `ranges`.
struct Kernel {
  KernelKind kind = KernelKind::Pointwise;
  std::string output;   // the buffer written
  std::string origin;   // the graph node it comes from
  std::vector<int64_t> ranges, reduction_ranges;
  ReductionType reduction = ReductionType::Sum;
  ExprRef body;
  IndexRef store_index;  // over x0 .. x<n-1> only
  // Extern only (body and store_index null; ranges the first output's sizes, may be empty).
  std::shared_ptr<const ExternCall> call;
};

// Program::buffer_index's name -> place map. Passes edit `buffers` freely, so
// the map is checked on every hit and rebuilt when it is stale; a copy starts
// empty rather than sharing what describes another vector.
class BufferNameIndex {
 public:
  BufferNameIndex() = default;
  BufferNameIndex(const BufferNameIndex&) {}
  BufferNameIndex& operator=(const BufferNameIndex&) {
    std::lock_guard lock(mu_);
    places_.clear();
    indexed_ = 0;
    return *this;
  }
  std::optional<size_t> find(const std::vector<Buffer>& buffers, std::string_view name) const;

 private:
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, size_t> places_;
  mutable size_t indexed_ = 0;  // buffers[0, indexed_) were in `buffers` when the map was last extended
};

struct Program {
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<std::string> inputs;   // buffer names, in placeholder order
  std::vector<std::string> outputs;  // buffer names, in the graph's output order (may repeat)
  // The functionalized epilogue, copy_(input, final): per written input, its
  // position in `inputs` and the buffer holding its final value, which the
  // runtime copies into the caller's tensor after the run.
  std::vector<std::pair<size_t, std::string>> input_writes;

  const Buffer& buffer(std::string_view name) const;  // KILN_CHECK when absent
  size_t buffer_index(std::string_view name) const;   // its place in `buffers`; KILN_CHECK when absent

  BufferNameIndex name_index;  // buffer_index's map, not part of the program
};

// Walks every expression node, children first, then the node; shared nodes once per use.
class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  void visit(const ExprRef& e);

 protected:
  virtual void visit_node(const ExprRef&) {}
};

// Rebuilds bottom-up; a node is rebuilt only when a child changed.
class ExprMutator {
 public:
  virtual ~ExprMutator() = default;
  ExprRef mutate(const ExprRef& e);

 protected:
  virtual ExprRef mutate_node(const ExprRef& rebuilt, const ExprRef& original) {
    (void)original;
    return rebuilt;
  }
};

// Elements from a buffer's flat index 0 to one past its last element (0 when empty).
int64_t storage_span(const Buffer& b);

// The slow reference interpreter: runs every kernel point by point, computing
// in double and rounding each result to its expression's dtype (so float32
// arithmetic matches ATen's to an ulp or so; reductions accumulate in double).
// `inputs` follow Program::inputs; a tensor whose sizes differ from the
// buffer's is a kiln::Error, one with other strides is copied to the buffer's
// layout first. Returns Program::outputs.
std::vector<Tensor> run_loops(const Program& program, const std::vector<Tensor>& inputs);

namespace detail {
// run_loops where each buffer named in `storage_of` lives in the storage of the
// buffer it maps to (the scheduler's buffer plan): writes to one are seen
// through the other, whatever their sizes. For run_scheduled.
std::vector<Tensor> run_loops_sharing(const Program& program, const std::vector<Tensor>& inputs,
                                      const std::map<std::string, std::string>& storage_of);
}  // namespace detail

}  // namespace kiln::loopir
