#pragma once
// Guards: the assumptions a captured graph was built on, checked before each
// reuse. Failure texts follow TorchDynamo's so recompile reasons read the same.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/capture/source.h"
#include "core/graph/graph.h"
#include "core/python/torch_api.h"
#include "core/tensor/dtype.h"

namespace kiln::capture {

struct Guard {
  enum class Kind { TensorMatch, EqualsMatch, TypeMatch, IdMatch, LengthCheck, GradMode, DictContains };
  Kind kind = Kind::EqualsMatch;
  SourcePtr source;
  // TensorMatch
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes, strides;
  std::vector<bool> dynamic;  // per dim: size and stride not checked (automatic dynamic)
  bool requires_grad = false;
  std::string device = "cpu";  // "cuda:0": the dispatch keys differ, as Dynamo's check_tensor sees it
  // EqualsMatch: the value; IdMatch: the object; TypeMatch: the class.
  py::Value expected;
  int64_t length = 0;  // LengthCheck
  bool contains = true;  // DictContains: whether the key (in `expected`) must be there
  // A dynamic int or float that Python code pinned: Dynamo reports it as a
  // symbolic-shape guard, without the user stack block.
  bool from_symbol = false;
  int rank = 0;        // position after order_guards, the tie-break when failures reorder checks
  bool grad_mode = true;
  // GradMode stands for Dynamo's whole global state: autocast's too.
  torchapi::AutocastState autocast;
  // The user line that made the guard, for messages ("# for _ in range(n):  # f.py:3 in g").
  std::string user_code, user_file, user_function;
  int user_line = 0;
  // The user frames (outermost first) that read the guarded value: the "User stack
  // trace" lines of a recompile reason.
  std::vector<StackFrame> user_stack;

  std::string kind_name() const;  // TENSOR_MATCH, EQUALS_MATCH, ...
  // The guard as Dynamo writes it: "L['n'] == 2", "check_tensor(L['x'], ...)".
  std::string text() const;
  // Passes, or sets `why` to Dynamo's failure text ("tensor 'x' size mismatch at index 0. expected 4, actual 6").
  bool check(py::VM& vm, const py::Frame& frame, std::string* why) const;
  // A stride is free when a later dimension's size is: contiguous strides are products of later sizes.
  bool stride_is_dynamic(size_t dim) const;
};

// Checks the guards in order and reports the first failure. A failure text may
// have several lines (the guard, then its user stack trace).
bool check_guards(py::VM& vm, const py::Frame& frame, const std::vector<Guard>& guards, std::string* why,
                  const Guard** failed = nullptr);

// Puts guards in the order Dynamo reports failures: global state (grad mode)
// first, then tensor guards, then the rest by source name (Dynamo sorts guards
// by Guard.sort_key), keeping the order they were made in for one source.
void order_guards(std::vector<Guard>& guards);

// The frame local (or global) a guard's source starts from, "L['self']"; empty for global state.
std::string guard_root(const Guard& g);

// After a failure, Dynamo's guard manager checks the accessors that failed most
// often first. `fail_counts` maps guard_root() to failures so far; the guards
// are reordered (grad mode first, then by failures, then by rank).
void reorder_after_failure(std::vector<Guard>& guards, std::map<std::string, int>& fail_counts, const Guard& failed);

// c10's scalar type names used in guard messages: Float, Double, Long, Half, BFloat16, Bool.
std::string scalar_type_name(DType d);

}  // namespace kiln::capture
