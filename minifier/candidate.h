#pragma once
// What the minifier reduces: an ATen graph and one input tensor per
// placeholder. Strategies build candidates from the current one; the helpers
// here keep every candidate well formed (placeholders first, one output, meta
// values that match the inputs) so a strategy only says what to drop.
//
// The minifier's parent process forks a child per evaluation, so it must not
// start thread pools of its own: nothing here runs a kernel (copies are plain
// loops) and meta propagation uses the ops' meta functions only.
#include <cstdint>
#include <string>
#include <vector>

#include "core/graph/graph.h"
#include "core/tensor/tensor.h"
#include "core/util/status.h"

namespace kiln::minify {

struct Candidate {
  Graph graph;
  std::vector<Tensor> inputs;  // one per placeholder, in placeholder order
};

// Call nodes: what CLI.md's node counts count (placeholders and the output left out).
size_t op_count(const Graph& g);
std::vector<NodeId> placeholders(const Graph& g);

// How big a candidate is, compared lexicographically: ops first (aten.full
// nodes, which constant-inputs makes, do not count: they replace an input),
// then inputs, input elements, inputs in dtypes other than float32 / int64 /
// bool, outputs. Every accepted step must make it smaller, which rules out
// cycles between strategies that trade one kind of size for another.
struct CandidateSize {
  size_t ops = 0, inputs = 0;
  int64_t elements = 0;
  size_t unusual_dtypes = 0, outputs = 0;
  auto operator<=>(const CandidateSize&) const = default;
};
CandidateSize size_of(const Candidate& c);

// Sets meta['val'] of every placeholder from its input and of every call
// node from the ops' meta functions. A candidate whose ops reject their
// arguments (a shape shrunk below what a view needs) is an error naming the
// node (also in `failed_node`, when given).
//
// Graphs as PyTorch prints them are first made ones Kiln's kernels run, with
// the same meaning: prims.convert_element_type becomes aten._to_copy,
// device arguments the CPU, and a Python number where the schema wants a
// Tensor (`aten.sub.Tensor(1, x)`) an aten.scalar_tensor node, as PyTorch's
// argument parser wraps it (unless another overload of the op takes the
// number: `mul.Tensor(x, 2)` becomes `mul.Scalar`). Ops the registry lacks keep
// their annotated meta (an oracle can still run them).
Status annotate(Candidate& c, std::string* failed_node = nullptr);

// The evaluation cache's key: the graph's structural hash, the inputs'
// dtypes and sizes, and their bytes (accuracy depends on the values).
uint64_t candidate_key(const Candidate& c);

// The output node's result elements (a one-element list when it returns one value).
std::vector<Arg> output_items(const Graph& g);
// Replaces the output's result by a tuple of `items`.
void set_outputs(Graph& g, std::vector<Arg> items);

// Removes call nodes nothing reads (pure ATen ops only, as the DCE pass
// decides) and placeholders nothing reads, with their inputs.
void prune(Candidate& c);

// Rebuilds the graph in canonical order: placeholders (in their order), then
// the other nodes in their relative order, then the output, renumbering
// references. Inputs follow their placeholders.
void reorder_placeholders_first(Candidate& c);

// A contiguous copy with its own storage, made with a plain loop (no thread pool).
Tensor compact_copy(const Tensor& t);

// Element values as doubles in row-major order, and a tensor of `dtype` made
// from such values; plain loops, safe in the parent.
std::vector<double> to_doubles(const Tensor& t);
Tensor from_doubles(const std::vector<double>& values, const Shape& sizes, DType dtype);

// Whether two tensors have the same dtype, sizes and element bytes.
bool same_bytes(const Tensor& a, const Tensor& b);

// A fresh node name not used in `g`, from `base`.
std::string unique_name(const Graph& g, const std::string& base);

// Reads a graph text (print_readable form) back into a candidate with these
// inputs, for the journal and tests.
Expected<Candidate> candidate_from_text(const std::string& text, std::vector<Tensor> inputs, const std::string& where);

}  // namespace kiln::minify
